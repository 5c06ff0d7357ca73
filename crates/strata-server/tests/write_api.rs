//! `/write` and `/api/v2/write` against an in-process server over a
//! MemStore: success, partial writes, every limit and status code.

mod common;

use std::io::Write;

use common::{gzip, raw, stored, TestServer};
use strata_series::reference::MemStore;
use strata_series::FieldValue;
use strata_series::SeriesStore;
use strata_server::ServerConfig;

fn small_limits() -> ServerConfig {
    ServerConfig { max_body_bytes: 1000, max_line_bytes: 64, max_fields_per_line: 3, ..Default::default() }
}

#[test]
fn write_then_query_round_trip() {
    let server = TestServer::start(ServerConfig::default());
    let body = b"cpu,host=a value=1.5 1700000000000\ncpu,host=b value=2.5 1700000001000\n";
    let response = server.post("/write?db=db&precision=ms", &[], body);
    assert_eq!(response.status, 204, "{}", response.text());
    assert!(response.body.is_empty());

    let result = server.query("SELECT value FROM cpu WHERE host = 'a'");
    let series = &result["results"][0]["series"][0];
    assert_eq!(series["name"], "cpu", "{result}");
    assert_eq!(series["values"][0][0], 1_700_000_000_000_000_000i64, "{result}");
    assert_eq!(series["values"][0][1], 1.5, "{result}");

    let all = stored(&server.store, "cpu");
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[1].1, vec![(1_700_000_001_000_000_000, FieldValue::Float(2.5))]);
}

#[test]
fn gzip_body_is_decompressed() {
    let server = TestServer::start(ServerConfig::default());
    let body = gzip(b"mem,host=a used=10i 1\nmem,host=a used=11i 2\n");
    let response = server.post("/write?db=db", &[("Content-Encoding", "gzip")], &body);
    assert_eq!(response.status, 204, "{}", response.text());
    let all = stored(&server.store, "mem");
    assert_eq!(
        all,
        vec![("host=a#used".to_string(), vec![(1, FieldValue::Integer(10)), (2, FieldValue::Integer(11))])]
    );
}

#[test]
fn partial_write_names_bad_lines_and_writes_the_good_ones() {
    let server = TestServer::start(ServerConfig::default());
    let body = b"cpu value=1 1\ncpu value= 2\ncpu value=3 3\ncpu value=\"text\" 4\ncpu value=5 5\n";
    let response = server.post("/write?db=db", &[], body);
    assert_eq!(response.status, 400, "{}", response.text());
    let error = response.error();
    assert!(error.starts_with("partial write: unable to parse 'cpu value= 2': "), "{error}");
    assert!(
        error.contains("(line 2)\nfield type conflict: input field \"value\" on measurement \"cpu\""),
        "{error}"
    );
    assert!(error.ends_with("(line 4) dropped=2"), "{error}");
    assert_eq!(response.header("X-Influxdb-Error").map(|h| h.starts_with("partial write:")), Some(true));
    // The good lines were committed in one transaction and are queryable.
    let points = &stored(&server.store, "cpu")[0].1;
    let times: Vec<i64> = points.iter().map(|(t, _)| *t).collect();
    assert_eq!(times, vec![1, 3, 5]);
    let result = server.query("SELECT value FROM cpu");
    assert_eq!(result["results"][0]["series"][0]["values"].as_array().map(Vec::len), Some(3), "{result}");
}

#[test]
fn only_bad_lines_is_400_without_the_partial_prefix() {
    let server = TestServer::start(ServerConfig::default());
    let response = server.post("/write?db=db", &[], b"\n# comment\nno_fields\n");
    assert_eq!(response.status, 400);
    let error = response.error();
    assert!(error.starts_with("unable to parse 'no_fields': "), "{error}");
    assert!(error.ends_with("(line 3) dropped=1"), "{error}");
    assert!(server.store.measurements("db").unwrap().is_empty());
}

#[test]
fn empty_body_is_204() {
    let server = TestServer::start(ServerConfig::default());
    assert_eq!(server.post("/write?db=db", &[], b"").status, 204);
    assert_eq!(server.post("/write?db=db", &[], b"\n\n# only a comment\n").status, 204);
}

#[test]
fn unknown_database_is_404_and_missing_database_400() {
    let server = TestServer::start(ServerConfig::default());
    let response = server.post("/write?db=nope", &[], b"cpu value=1");
    assert_eq!(response.status, 404);
    assert_eq!(response.text(), r#"{"error":"database not found: \"nope\""}"#);
    assert_eq!(response.header("Content-Type"), Some("application/json"));
    let response = server.post("/write", &[], b"cpu value=1");
    assert_eq!(response.status, 400);
    assert_eq!(response.error(), "database is required");
}

/// A write naming a retention policy the database lacks is refused and
/// stores nothing, as InfluxDB refuses it (`retention policy not found: x`;
/// InfluxDB 1.6.7 answers 500, Strata 404 as for a missing database); a
/// policy it has, or none, is written.
#[test]
fn a_write_to_an_unknown_retention_policy_is_404_and_stores_nothing() {
    let server = TestServer::start(ServerConfig::default());
    let response = server.post("/write?db=db&rp=nope", &[], b"cpu value=1 1");
    assert_eq!(response.status, 404, "{}", response.text());
    assert_eq!(response.error(), "retention policy not found: nope");
    let response = server.post("/api/v2/write?bucket=db/nope", &[], b"cpu value=1 1");
    assert_eq!(response.status, 404, "{}", response.text());
    assert!(stored(&server.store, "cpu").is_empty(), "a refused write stores nothing");
    for path in ["/write?db=db&rp=autogen", "/write?db=db&rp=", "/api/v2/write?bucket=db/autogen"] {
        let response = server.post(path, &[], b"cpu value=2 2");
        assert_eq!(response.status, 204, "{path}: {}", response.text());
    }
    assert_eq!(stored(&server.store, "cpu")[0].1, vec![(2, FieldValue::Float(2.0))]);
}

#[test]
fn bad_precision_is_400() {
    let server = TestServer::start(ServerConfig::default());
    let response = server.post("/write?db=db&precision=fortnight", &[], b"cpu value=1 1");
    assert_eq!(response.status, 400);
    assert_eq!(response.error(), "invalid precision \"fortnight\" (use n, u, ms, s, m or h)");
    let response = server.post("/write?db=db&precision=h", &[], b"cpu value=1 1");
    assert_eq!(response.status, 204);
    assert_eq!(stored(&server.store, "cpu")[0].1[0].0, 3_600_000_000_000);
}

#[test]
fn oversized_body_is_413_before_it_is_read() {
    let server = TestServer::start(small_limits());
    // The declared length alone is enough: no body byte is sent.
    let head = format!(
        "POST /write?db=db HTTP/1.1\r\nHost: {}\r\nContent-Length: 100000000\r\nConnection: close\r\n\r\n",
        server.addr
    );
    let mut stream = common::connect(server.addr);
    stream.write_all(head.as_bytes()).unwrap();
    let response = common::read_response(&mut stream);
    assert_eq!(response.status, 413);
    assert_eq!(response.error(), "Request Entity Too Large: body is larger than max_body_bytes (1000 bytes)");
}

#[test]
fn oversized_chunked_body_is_413() {
    let server = TestServer::start(small_limits());
    let line = b"cpu value=1 1\n";
    let mut request = format!(
        "POST /write?db=db HTTP/1.1\r\nHost: {}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        server.addr
    )
    .into_bytes();
    for _ in 0..80 {
        request.extend_from_slice(format!("{:x}\r\n", line.len()).as_bytes());
        request.extend_from_slice(line);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    let response = raw(server.addr, &request);
    assert_eq!(response.status, 413, "{}", response.text());
    assert!(server.store.measurements("db").unwrap().is_empty());
}

#[test]
fn gzip_bomb_is_413() {
    let server = TestServer::start(ServerConfig { max_body_bytes: 10_000, ..Default::default() });
    let bomb = gzip(&b"cpu value=1 1\n".repeat(100_000));
    assert!(bomb.len() < 10_000, "{} compressed bytes", bomb.len());
    let response = server.post("/write?db=db", &[("Content-Encoding", "gzip")], &bomb);
    assert_eq!(response.status, 413);
    assert!(response.error().contains("decompressed body is larger than max_body_bytes (10000 bytes)"));
    assert!(server.store.measurements("db").unwrap().is_empty());
}

#[test]
fn bad_encodings_are_refused() {
    let server = TestServer::start(ServerConfig::default());
    let response = server.post("/write?db=db", &[("Content-Encoding", "br")], b"cpu value=1");
    assert_eq!(response.status, 415);
    assert!(response.error().contains("unsupported Content-Encoding \"br\""));
    let response = server.post("/write?db=db", &[("Content-Encoding", "gzip")], b"cpu value=1");
    assert_eq!(response.status, 400);
    assert!(response.error().starts_with("invalid gzip body"), "{}", response.error());
}

#[test]
fn too_long_line_is_rejected_by_number() {
    let server = TestServer::start(small_limits());
    let long = format!("cpu,host={} value=2 2", "x".repeat(80));
    let body = format!("cpu value=1 1\n{long}\ncpu value=3 3\n");
    let response = server.post("/write?db=db", &[], body.as_bytes());
    assert_eq!(response.status, 400);
    let error = response.error();
    assert!(error.starts_with("partial write: unable to parse 'cpu,host=xxx"), "{error}");
    assert!(error.contains("line too long (99 bytes, at most 64) (line 2) dropped=1"), "{error}");
    assert_eq!(stored(&server.store, "cpu")[0].1.len(), 2);
}

#[test]
fn a_100_kib_line_is_taken_under_the_default_limit_and_a_line_over_1_mib_is_not() {
    // The default max_line_bytes is 1 MiB: room for InfluxDB's 64 KiB
    // string fields, several to a line.
    let server = TestServer::start(ServerConfig::default());
    let text = "x".repeat(50 * 1024);
    let line = format!("log,host=a msg=\"{text}\",more=\"{text}\" 1");
    assert!(line.len() > 100 * 1024);
    let response = server.post("/write?db=db", &[], line.as_bytes());
    assert_eq!(response.status, 204, "{}", response.text());
    let rows = stored(&server.store, "log");
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].1, vec![(1, FieldValue::String(text.clone()))]);

    let huge = format!("log,host=a msg=\"{}\" 2", "y".repeat(1 << 20));
    let response = server.post("/write?db=db", &[], huge.as_bytes());
    assert_eq!(response.status, 400);
    let error = response.error();
    assert!(
        error.contains(&format!("line too long ({} bytes, at most 1048576) (line 1)", huge.len())),
        "{error}"
    );
}

#[test]
fn time_keys_and_timestamps_outside_influxdbs_range_drop_only_their_lines() {
    let server = TestServer::start(ServerConfig::default());
    let body = "cpu value=1 1\ncpu time=1 2\ncpu,time=a value=1 3\n\
                cpu value=2 -9223372036854775806\ncpu value=3 9223372036854775806\n\
                cpu value=4 -9223372036854775807\ncpu value=5 9223372036854775807\n";
    let response = server.post("/write?db=db", &[], body.as_bytes());
    assert_eq!(response.status, 400);
    let error = response.error();
    let range = "time outside range -9223372036854775806 - 9223372036854775806";
    for expected in [
        "invalid field name: input field \"time\" on measurement \"cpu\" is invalid (line 2)",
        "invalid tag key: input tag \"time\" on measurement \"cpu\" is invalid (line 3)",
        &format!("{range} (line 6)"),
        &format!("{range} (line 7)"),
    ] {
        assert!(error.contains(expected), "{expected}: {error}");
    }
    assert!(error.starts_with("partial write: ") && error.ends_with("dropped=4"), "{error}");
    let times: Vec<i64> = stored(&server.store, "cpu")[0].1.iter().map(|(t, _)| *t).collect();
    assert_eq!(times, [i64::MIN + 2, 1, i64::MAX - 1]);

    // A precision multiplier that takes a timestamp past the range drops it
    // too; the last unit inside is taken.
    for (path, inside, outside) in [
        ("/write?db=db&precision=s", 9_223_372_036i64, 9_223_372_037i64),
        ("/write?db=db&precision=ms", 9_223_372_036_854, 9_223_372_036_855),
        ("/api/v2/write?bucket=db&precision=us", 9_223_372_036_854_775, 9_223_372_036_854_776),
        ("/write?db=db&precision=h", 2_562_047, 2_562_048),
    ] {
        let body = format!("mul v={inside} {inside}\nmul v={outside} {outside}\nmul v=0 -{outside}\n");
        let response = server.post(path, &[], body.as_bytes());
        assert_eq!(response.status, 400, "{path}");
        let message = if path.starts_with("/api/v2") {
            response.json()["message"].as_str().unwrap_or("").to_string()
        } else {
            response.error()
        };
        assert!(message.contains(&format!("{range} (line 2)")), "{path}: {message}");
        assert!(message.contains(&format!("{range} (line 3)")), "{path}: {message}");
        assert!(message.ends_with("dropped=2"), "{path}: {message}");
    }
    let kept: Vec<FieldValue> = stored(&server.store, "mul")[0].1.iter().map(|(_, v)| v.clone()).collect();
    assert_eq!(kept.len(), 4, "the inside timestamp of each precision: {kept:?}");
}

#[test]
fn too_many_fields_is_rejected_by_number() {
    let server = TestServer::start(small_limits());
    let response = server.post("/write?db=db", &[], b"cpu a=1,b=2,c=3,d=4 1\ncpu a=1,b=2,c=3 2\n");
    assert_eq!(response.status, 400);
    let error = response.error();
    assert!(error.contains("too many fields"), "{error}");
    assert!(error.ends_with("(line 1) dropped=1"), "{error}");
    assert_eq!(stored(&server.store, "cpu").len(), 3);
}

#[test]
fn invalid_utf8_fails_only_its_line() {
    let server = TestServer::start(ServerConfig::default());
    let response = server.post("/write?db=db", &[], b"cpu value=1 1\ncpu,host=\xff\xfe value=2 2\n");
    assert_eq!(response.status, 400);
    let error = response.error();
    assert!(error.contains("invalid UTF-8"), "{error}");
    assert!(error.ends_with("(line 2) dropped=1"), "{error}");
    assert_eq!(stored(&server.store, "cpu")[0].1, vec![(1, FieldValue::Float(1.0))]);
}

#[test]
fn body_cut_mid_line_drops_the_last_line() {
    let server = TestServer::start(ServerConfig::default());
    let response = server.post("/write?db=db", &[], b"cpu value=1 1\ncpu val");
    assert_eq!(response.status, 400);
    assert!(response.error().ends_with("(line 2) dropped=1"), "{}", response.error());
    assert_eq!(stored(&server.store, "cpu")[0].1.len(), 1);
}

#[test]
fn connection_cut_mid_body_writes_nothing() {
    let server = TestServer::start(ServerConfig::default());
    let head = format!("POST /write?db=db HTTP/1.1\r\nHost: {}\r\nContent-Length: 100\r\n\r\n", server.addr);
    let mut request = head.into_bytes();
    request.extend_from_slice(b"cpu value=1 1\ncpu val");
    let response = common::raw_half_closed(server.addr, &request).expect("an answer");
    assert_eq!(response.status, 400, "{}", response.text());
    assert!(response.error().starts_with("error reading request body"), "{}", response.error());
    assert!(server.store.measurements("db").unwrap().is_empty());
}

#[test]
fn series_limit_is_a_partial_write_of_nothing() {
    let server = TestServer::start_with_store(ServerConfig::default(), MemStore::with_series_limit(2));
    let response =
        server.post("/write?db=db", &[], b"cpu,host=a v=1 1\ncpu,host=b v=1 1\ncpu,host=c v=1 1\n");
    assert_eq!(response.status, 400);
    let error = response.error();
    assert!(error.starts_with("partial write: max-series-per-database limit exceeded"), "{error}");
    assert!(error.ends_with("dropped=3"), "{error}");
    assert!(server.store.measurements("db").unwrap().is_empty());
    // Within the limit it still works.
    assert_eq!(server.post("/write?db=db", &[], b"cpu,host=a v=1 1\n").status, 204);
}

#[test]
fn v2_write_maps_bucket_to_database() {
    let server = TestServer::start(ServerConfig::default());
    let response = server.post("/api/v2/write?org=o&bucket=db/autogen&precision=s", &[], b"cpu value=1 2");
    assert_eq!(response.status, 204, "{}", response.text());
    assert_eq!(stored(&server.store, "cpu")[0].1, vec![(2_000_000_000, FieldValue::Float(1.0))]);
}

#[test]
fn v2_errors_have_the_v2_shape() {
    let server = TestServer::start(ServerConfig::default());
    let response = server.post("/api/v2/write?bucket=nope", &[], b"cpu value=1");
    assert_eq!(response.status, 404);
    assert_eq!(
        response.json(),
        serde_json::json!({"code": "not found", "message": "bucket \"nope\" not found"})
    );
    let response = server.post("/api/v2/write?bucket=db&precision=h", &[], b"cpu value=1");
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["code"], "invalid");
    assert_eq!(response.json()["message"], "invalid precision \"h\" (use ns, us, ms or s)");
    let response = server.post("/api/v2/write", &[], b"cpu value=1");
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["message"], "bucket is required");
    let response = server.post("/api/v2/write?bucket=db", &[], b"cpu value=1 1\ncpu value=\"s\" 2\n");
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["code"], "invalid");
    let message = response.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with("partial write: field type conflict") && message.ends_with("(line 2) dropped=1")
    );
}

#[test]
fn docs_partial_write_example_is_what_the_server_says() {
    let server = TestServer::start(ServerConfig::default());
    let response = server.post("/write?db=db", &[], b"cpu value=1 1\ncpu value= 2\ncpu value=\"x\" 3\n");
    assert_eq!(response.status, 400);
    let doc = include_str!("../../../docs/http-api.md");
    assert!(doc.contains(&response.text()), "docs/http-api.md should show:\n{}", response.text());
    assert_eq!(stored(&server.store, "cpu")[0].1, vec![(1, FieldValue::Float(1.0))]);
}

#[test]
fn a_write_without_db_lands_in_the_default_database_when_one_is_configured() {
    // QuestDB's ILP-over-HTTP senders post to /write with no `db` parameter.
    let config = ServerConfig { default_database: Some("db".into()), ..Default::default() };
    let server = TestServer::start(config);
    let response = server.post("/write", &[], b"trades,symbol=ETH-USD price=2615.54 1700000000000000000\n");
    assert_eq!(response.status, 204, "{response:?}");
    let rows = stored(&server.store, "trades");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].1, vec![(1_700_000_000_000_000_000, strata_series::FieldValue::Float(2615.54))]);
    let explicit = server.post("/write?db=nope", &[], b"t v=1\n");
    assert_eq!(explicit.status, 404, "an explicit db is never replaced by the default");
}
