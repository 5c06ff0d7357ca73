//! Tests of the ingest benchmark: the generator is deterministic and every
//! line parses into ten float fields; the HTTP client copes with the
//! responses servers send; tiny runs end to end (in-process, over HTTP to
//! the in-process server, and against a `--target` URL) verify every row
//! and report every metric; the warm-up lands apart from the counted load
//! and its share leaves the disk figures. No figure is compared with a time.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;

use indicatif::ProgressBar;
use serde_json::{json, Value};
use strata_engine::Protocol;
use strata_influx::line_protocol::{parse_lines, LineLimits, Precision};
use strata_series::{FieldValue, SeriesStore};

use super::dataset::Dataset;
use super::generator::{CpuSpec, DEFAULT_START_NS, FIELD_NAMES, INTERVAL_NS};
use super::http_client::{form_encode, HttpConnection, HttpUrl};
use super::http_loader::HttpTarget;
use super::in_process::InProcessTarget;
use super::load::{count_in_influx_response, load, IngestEndpoint};
use super::local_db::{BenchDirs, LocalDb};
use super::local_server::LocalServer;
use super::report::COLUMNS;
use super::runner::{load_order, rows_per_host_for, run_ingest_bench, IngestOptions};

fn concat(d: &Dataset) -> Vec<u8> {
    d.stored().unwrap().iter().flat_map(|b| b.body.iter().copied()).collect()
}

#[test]
fn same_seed_gives_the_same_bytes_however_batched() {
    let spec = CpuSpec::new(42, 7, 13);
    let a = Dataset::generate(&spec, 5).unwrap();
    let b = Dataset::generate(&spec, 5).unwrap();
    let c = Dataset::generate(&spec, 1000).unwrap();
    assert_eq!(a.stored(), b.stored());
    assert_eq!(concat(&a), concat(&c), "batch size must not change the data");
    assert_eq!(a.rows(), 7 * 13);
    assert_eq!(a.stored().unwrap().len(), (7 * 13usize).div_ceil(5));
    assert!(a
        .stored()
        .unwrap()
        .iter()
        .all(|b| b.lines <= 5 && b.body.iter().filter(|&&c| c == b'\n').count() as u64 == b.lines));
    let other = Dataset::generate(&CpuSpec::new(43, 7, 13), 5).unwrap();
    assert_ne!(concat(&a), concat(&other), "another seed gives other data");
}

#[test]
fn every_line_parses_into_ten_float_fields_in_time_then_host_order() {
    let spec = CpuSpec::new(7, 25, 40);
    let data = Dataset::generate(&spec, 333).unwrap();
    let body = concat(&data);
    let parsed = parse_lines(&body, Precision::Nanoseconds, 0, &LineLimits::default());
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors.first());
    assert_eq!(parsed.points.len() as u64, spec.rows());
    for (i, p) in parsed.points.iter().enumerate() {
        let (step, host) = (i as i64 / 25, i % 25);
        assert_eq!(p.measurement, "cpu");
        assert_eq!(p.timestamp_ns, DEFAULT_START_NS + step * INTERVAL_NS, "row {i}");
        assert_eq!(p.tags.len(), 10, "row {i}: {:?}", p.tags);
        assert!(p.tags.contains(&("hostname".to_string(), format!("host_{host}"))), "row {i}");
        let names: Vec<&str> = p.fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, FIELD_NAMES, "row {i}");
        for (k, v) in &p.fields {
            let FieldValue::Float(x) = v else { panic!("row {i}: {k} is {v:?}, not a float") };
            assert!((0.0..=100.0).contains(x), "row {i}: {k}={x} out of [0, 100]");
        }
    }
    // Tags are fixed per host.
    assert_eq!(parsed.points[3].tags, parsed.points[3 + 25].tags);
}

#[test]
fn walks_move_but_stay_close() {
    let data = Dataset::generate(&CpuSpec::new(1, 1, 200), 1000).unwrap();
    let parsed = parse_lines(&concat(&data), Precision::Nanoseconds, 0, &LineLimits::default());
    let user: Vec<f64> = parsed
        .points
        .iter()
        .map(|p| match p.fields[0].1 {
            FieldValue::Float(x) => x,
            _ => unreachable!(),
        })
        .collect();
    assert!(user.windows(2).all(|w| (w[1] - w[0]).abs() <= 1.0 + 1e-9), "steps are at most 1.00");
    assert!(user.windows(2).any(|w| w[1] != w[0]), "the walk moves");
}

#[test]
fn bad_specs_are_errors() {
    assert!(Dataset::generate(&CpuSpec::new(1, 0, 5), 10).is_err());
    assert!(Dataset::generate(&CpuSpec::new(1, 5, 0), 10).is_err());
    assert!(Dataset::generate(&CpuSpec::new(1, 5, 5), 0).is_err());
    let mut far = CpuSpec::new(1, 1, u64::MAX / 2);
    far.start_ns = i64::MAX - 10;
    assert!(far.check().is_err());
}

#[test]
fn durations_become_rows_per_host() {
    assert_eq!(rows_per_host_for("1h").unwrap(), 360);
    assert_eq!(rows_per_host_for("30m").unwrap(), 180);
    assert_eq!(rows_per_host_for("1d").unwrap(), 8640);
    assert_eq!(rows_per_host_for("95s").unwrap(), 9);
    for bad in ["", "5", "h", "5x", "5s", "-1h"] {
        assert!(rows_per_host_for(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn urls_parse_and_queries_encode() {
    let u = HttpUrl::parse("http://127.0.0.1:8086").unwrap();
    assert_eq!((u.host.as_str(), u.port, u.base_path.as_str()), ("127.0.0.1", 8086, ""));
    let u = HttpUrl::parse("localhost:9000/influx/").unwrap();
    assert_eq!((u.host.as_str(), u.port, u.base_path.as_str()), ("localhost", 9000, "/influx"));
    assert_eq!(u.to_string(), "http://localhost:9000/influx");
    let u = HttpUrl::parse("http://[::1]:8428").unwrap();
    assert_eq!((u.host.as_str(), u.port), ("::1", 8428));
    assert_eq!(HttpUrl::parse("http://example.org").unwrap().port, 80);
    for bad in ["https://x:1", "http://", "http://x:port", "http://x:1/?q=1", "http://u@x:1"] {
        assert!(HttpUrl::parse(bad).is_err(), "{bad:?}");
    }
    assert_eq!(form_encode(&[("db", "a b"), ("q", "SELECT \"x\"=1&")]), "db=a%20b&q=SELECT%20%22x%22%3D1%26");
}

#[test]
fn counts_are_read_from_influx_answers() {
    let ok = json!({"results": [{"statement_id": 0, "series": [{"name": "cpu", "columns": ["time", "count"], "values": [[0, 1234]]}]}]});
    assert_eq!(count_in_influx_response(&ok).unwrap(), 1234);
    let float = json!({"results": [{"series": [{"values": [["1970-01-01T00:00:00Z", 5.0]]}]}]});
    assert_eq!(count_in_influx_response(&float).unwrap(), 5);
    assert_eq!(count_in_influx_response(&json!({"results": [{"statement_id": 0}]})).unwrap(), 0);
    let err = json!({"results": [{"statement_id": 0, "error": "database not found: x"}]});
    assert!(count_in_influx_response(&err).unwrap_err().to_string().contains("database not found"));
    assert!(count_in_influx_response(&json!({})).is_err());
}

/// A one-thread HTTP server answering each request with the next canned response.
fn canned_server(
    responses: Vec<&'static str>,
    close_after_each: bool,
) -> (HttpUrl, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let mut request_lines = Vec::new();
        let mut responses = responses.into_iter();
        'accept: for stream in listener.incoming() {
            let mut reader = BufReader::new(stream.unwrap());
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    continue 'accept;
                }
                request_lines.push(line.trim_end().to_string());
                let mut length = 0;
                loop {
                    let mut h = String::new();
                    reader.read_line(&mut h).unwrap();
                    if h.trim_end().is_empty() {
                        break;
                    }
                    if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let Some(r) = responses.next() else { return request_lines };
                reader.get_mut().write_all(r.as_bytes()).unwrap();
                if responses.len() == 0 {
                    return request_lines;
                }
                if close_after_each {
                    continue 'accept;
                }
            }
        }
        request_lines
    });
    (HttpUrl { host: "127.0.0.1".into(), port, base_path: String::new() }, handle)
}

#[test]
fn client_reads_lengths_chunks_and_reconnects_after_a_close() {
    let (url, server) = canned_server(
        vec![
            "HTTP/1.1 204 No Content\r\nX-Influxdb-Version: 1.8\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 400 Bad Request\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope",
        ],
        true,
    );
    let mut c = HttpConnection::connect(&url).unwrap();
    let r = c.post("/write?db=x", "text/plain", b"cpu v=1 1\n").unwrap();
    assert_eq!((r.status, r.body.len()), (204, 0));
    // The server closed the connection after each answer: the client reconnects.
    let r = c.get("/a").unwrap();
    assert_eq!((r.status, r.body_text().as_str()), (200, "hello"));
    let r = c.get("/b").unwrap();
    assert_eq!((r.status, r.body_text().as_str()), (200, "abcde"));
    let r = c.post("/c", "text/plain", b"x").unwrap();
    assert_eq!((r.status, r.body_text().as_str()), (400, "nope"));
    drop(c);
    let lines = server.join().unwrap();
    assert_eq!(
        lines,
        ["POST /write?db=x HTTP/1.1", "GET /a HTTP/1.1", "GET /b HTTP/1.1", "POST /c HTTP/1.1"]
    );
}

#[test]
fn a_rejected_write_fails_the_load_with_the_servers_message() {
    let (url, _server) = canned_server(
        vec![
            "HTTP/1.1 204 No Content\r\n\r\n",
            "HTTP/1.1 400 Bad Request\r\nContent-Length: 25\r\n\r\n{\"error\":\"partial write\"}",
        ],
        false,
    );
    let data = Dataset::generate(&CpuSpec::new(1, 2, 10), 5).unwrap();
    let target = HttpTarget::new(url, "db");
    let err = load(&target, &data, 1, &ProgressBar::hidden()).unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("HTTP 400") && text.contains("partial write"), "{text}");
}

pub(super) fn tiny_options(json_path: Option<PathBuf>) -> IngestOptions {
    IngestOptions {
        hosts: 3,
        rows_per_host: 20,
        batch_lines: 7,
        connections: 2,
        rounds: 1,
        seed: 5,
        json_path,
        target: None,
        db: "bench".into(),
        in_process: true,
        protocols: Protocol::ALL.to_vec(),
        dirs: BenchDirs::detect(),
        peers: Vec::new(),
        peers_required: false,
        queries: false,
        query_runs: 1,
        warmup: true,
        scale: None,
        print: false,
    }
}

fn expected_metrics(variant: &str) -> Vec<&'static str> {
    let pmem_only = [
        "bytes_per_point_pmem",
        "fences_per_request",
        "lines_flushed_per_request",
        "media_blocks_per_request",
    ];
    COLUMNS
        .iter()
        .copied()
        .filter(|c| *c != "quiesce_s" && !c.ends_with("_ms"))
        .filter(|c| variant == "serial-pmem" || !pmem_only.contains(c))
        .collect()
}

fn assert_full_rows(json: &Value, variants: &[&str]) {
    assert_eq!(json["benchmark"], "ingest");
    assert_eq!(json["machine"]["cores"].as_u64().map(|c| c >= 1), Some(true));
    assert_eq!(json["config"]["rows"], 60);
    assert_eq!(json["config"]["values"], 600);
    let results = json["results"].as_array().unwrap();
    let names: Vec<&str> = results.iter().map(|r| r["variant"].as_str().unwrap()).collect();
    assert_eq!(names, variants);
    for r in results {
        let variant = r["variant"].as_str().unwrap();
        for metric in expected_metrics(variant) {
            let v = r[metric].as_f64();
            assert!(v.is_some_and(|v| v.is_finite() && v >= 0.0), "{variant}: {metric} = {:?}", r[metric]);
        }
        assert!(r["rows_per_s"].as_f64().unwrap() > 0.0, "{variant}");
        assert!(r["peer_version"].as_str().unwrap().starts_with("strata "), "{variant}: {r}");
        assert!(!r["durability"].as_str().unwrap().is_empty(), "{variant}");
        assert!(r["disk_bytes_per_point"].as_f64().unwrap() > 0.0, "{variant}: {r}");
        let compacted = r["disk_bytes_per_point_compacted"].as_f64().unwrap();
        assert!(compacted > 0.0 && compacted.is_finite(), "{variant}: {r}");
        assert!(r["disk_growth_bytes_per_point"].as_f64().is_some(), "{variant}: {r}");
        assert!(r["compression_ratio"].as_f64().unwrap() > 1.0, "{variant}: Gorilla must beat 16 B/point");
    }
}

#[test]
fn tiny_in_process_run_verifies_rows_and_reports_every_metric() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ingest.json");
    let report = run_ingest_bench(&tiny_options(Some(path.clone()))).unwrap();
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(json["config"]["mode"], "in-process");
    assert_full_rows(&json, &["none", "serial-pmem", "serial-ssd", "declog-pmem", "declog-ssd"]);
    let warmup = &json["config"]["warmup"];
    assert_eq!((warmup["rows"].as_u64(), warmup["db"].as_str()), (Some(60), Some("warmup")), "{warmup}");
    assert_eq!(warmup["measurement"], "cpu_warmup");
    let notes = &report.notes;
    assert!(notes.iter().any(|n| n.contains("every system was warmed")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("less the warm-up's share")), "{notes:?}");
    assert_eq!(report.result("none").unwrap()["ratio_to_none"], 1.0);
    assert_eq!(report.result("none").unwrap()["log_bytes_per_point"], 0.0);
    let pmem = report.result("serial-pmem").unwrap();
    // 9 requests of at most 7 lines: every request fences at least once.
    assert!(pmem["fences_per_request"].as_f64().unwrap() >= 1.0, "{pmem:?}");
    assert!(report.render_table().contains("serial-ssd"));
    let declog = report.result("declog-pmem").unwrap();
    assert!(declog["rows_per_s"].as_f64().unwrap() > 0.0, "{declog:?}");
}

#[test]
fn tiny_http_run_against_the_in_process_server() {
    let mut opts = tiny_options(None);
    opts.in_process = false;
    opts.protocols = vec![Protocol::SerialPmem, Protocol::None];
    opts.rounds = 2;
    let report = run_ingest_bench(&opts).unwrap();
    let json: Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["config"]["mode"], "http");
    assert_eq!(json["config"]["rounds"], 2);
    assert_full_rows(&json, &["serial-pmem", "none"]);
}

#[test]
fn tiny_run_against_a_target_url_loads_and_counts_there() {
    let dirs = BenchDirs::detect();
    let local = LocalDb::open(Protocol::SerialSsd, &dirs, "other", 192 << 20).unwrap();
    let store = local.tables();
    let server = LocalServer::start(store, 1 << 20).unwrap();
    let mut opts = tiny_options(None);
    opts.in_process = false;
    opts.target = Some(server.url().to_string());
    opts.db = "remote".into();
    let report = run_ingest_bench(&opts).unwrap();
    let json: Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["config"]["mode"], "target");
    let row = &json["results"][0];
    assert_eq!(row["variant"], "target");
    for m in ["rows_per_s", "values_per_s", "latency_ms_p50", "latency_ms_p99"] {
        assert!(row[m].as_f64().is_some_and(|v| v > 0.0), "{m}: {row}");
    }
    assert!(row.get("bytes_per_point_ssd").is_none(), "no storage figures of a remote target");
    // The rows landed in the target's database (created by the loader).
    let target = HttpTarget::new(server.url(), "remote");
    assert_eq!(target.count_rows().unwrap(), 60);
    assert!(local.engine().databases().contains(&"remote".to_string()));
    server.stop().unwrap();
}

#[test]
fn the_warmup_is_the_data_set_up_to_the_quick_size_and_goes_elsewhere() {
    use super::warmup::{warmup_db, warmup_spec};
    let small = CpuSpec::new(9, 3, 20);
    assert_eq!(warmup_spec(&small), small);
    let quick = IngestOptions::quick().spec();
    assert_eq!(warmup_spec(&quick), quick, "--quick warms up with itself");
    let full = IngestOptions::full().spec();
    let w = warmup_spec(&full);
    assert_eq!(
        (w.hosts, w.rows_per_host, w.rows()),
        (100, 360, quick.rows()),
        "large runs: the --quick size"
    );
    assert_eq!((w.seed, w.start_ns, w.interval_ns), (full.seed, full.start_ns, full.interval_ns));
    assert_eq!(warmup_db("benchmark"), "warmup");
    assert_ne!(warmup_db("warmup"), "warmup", "never the counted database");
}

#[test]
fn the_warmup_lands_in_its_own_database_and_measurement() {
    use super::warmup::{warm_up, WARMUP_DB};
    let local = LocalDb::open(Protocol::None, &BenchDirs::detect(), "bench", 192 << 20).unwrap();
    let opts = tiny_options(None);
    let spec = CpuSpec::new(3, 2, 10);
    let warm = Dataset::generate_as(&spec, 7, super::generator::WARMUP_MEASUREMENT).unwrap();
    let target = InProcessTarget::new(local.tables(), WARMUP_DB);
    warm_up(&target, &warm, &opts, "test").unwrap();
    let counted = InProcessTarget::new(local.tables(), "bench");
    counted.prepare().unwrap();
    assert_eq!(counted.count_rows().unwrap(), 0, "the counted database is still empty");
    assert_eq!(target.count_rows().unwrap(), 0, "no `cpu` rows in the warm-up database either");
    let engine = local.engine();
    let series = engine.series(WARMUP_DB, "cpu_warmup").unwrap();
    assert_eq!(series.len(), 2 * 10, "2 hosts x 10 fields in the warm-up's measurement");
    assert!(engine.series("bench", "cpu").unwrap().is_empty(), "the counted load's series are all new");
}

#[test]
fn the_warmups_share_leaves_the_disk_figures() {
    use super::warmup::counted_bytes_at_rest;
    assert_eq!(counted_bytes_at_rest(10_000, Some(3_000), 9_000), 7_000, "measured at rest where kept apart");
    assert_eq!(counted_bytes_at_rest(10_000, None, 4_000), 6_000, "else its growth while running");
    assert_eq!(counted_bytes_at_rest(1_000, None, 4_000), 0, "never below zero");
}

#[test]
fn every_commit_protocol_is_in_the_default_list_with_and_without_peers() {
    use super::runner::default_protocols;
    for peers in [false, true] {
        let list = default_protocols(peers);
        let mut sorted: Vec<&str> = list.iter().map(|p| p.name()).collect();
        sorted.sort_unstable();
        let mut all: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).collect();
        all.sort_unstable();
        assert_eq!(sorted, all, "peers {peers}: declog-ssd included");
    }
    assert_eq!(default_protocols(false)[0], Protocol::None, "the baseline first");
    assert_eq!(default_protocols(true)[..2], [Protocol::DeclogPmem, Protocol::DeclogSsd]);
}

#[test]
fn conflicting_options_are_errors() {
    let mut opts = tiny_options(None);
    opts.target = Some("http://127.0.0.1:1".into());
    assert!(run_ingest_bench(&opts).unwrap_err().to_string().contains("--in-process"));
    let mut opts = tiny_options(None);
    opts.connections = 0;
    assert!(run_ingest_bench(&opts).is_err());
    let mut opts = tiny_options(Some(PathBuf::from("/nonexistent-dir/x.json")));
    opts.protocols = vec![Protocol::None];
    assert!(run_ingest_bench(&opts).unwrap_err().to_string().contains("not a directory"));
}

#[test]
fn rounds_load_every_variant_once_in_varied_orders() {
    let order = load_order(8, 5);
    assert_eq!(order.len(), 40);
    assert_eq!(&order[..3], [(0, 0), (0, 1), (0, 2)], "the first round in the given order");
    for r in 0..5 {
        let mut round: Vec<usize> = order.iter().filter(|(x, _)| *x == r).map(|(_, v)| *v).collect();
        round.sort();
        assert_eq!(round, (0..8).collect::<Vec<_>>(), "round {r}");
    }
    // The same variant never loads twice in a row, and no variant always
    // follows the same one.
    assert!(order.windows(2).all(|w| w[0].1 != w[1].1));
    for v in 0..8 {
        let followers: std::collections::BTreeSet<usize> =
            order.windows(2).filter(|w| w[0].1 == v).map(|w| w[1].1).collect();
        assert!(followers.len() > 1, "variant {v} is always followed by {followers:?}: {order:?}");
    }
    assert_eq!(load_order(8, 5), order, "seeded: the same order every run");
    assert!(load_order(4, 0).is_empty());
    assert_eq!(load_order(1, 2), [(0, 0), (1, 0)]);
    let two = load_order(2, 4);
    assert!(two.windows(2).all(|w| w[0].1 != w[1].1), "{two:?}");
}

#[test]
fn protocols_come_before_peers_and_a_target_stands_alone() {
    use super::runner::variants_in_order;
    use crate::peers::{Installed, PeerKind};
    let installed = |kind| Installed {
        kind,
        program: PathBuf::from("/bin/true"),
        jar: None,
        version: "1".into(),
        runtime: None,
    };
    let v = variants_in_order(
        &[Protocol::DeclogPmem, Protocol::None],
        vec![installed(PeerKind::InfluxDb), installed(PeerKind::QuestDb)],
        None,
    );
    let names: Vec<String> = v.iter().map(|v| v.name()).collect();
    assert_eq!(names, ["declog-pmem", "none", "influxdb", "questdb"]);
    let url = HttpUrl::parse("http://127.0.0.1:1").unwrap();
    let v = variants_in_order(
        &[Protocol::None],
        vec![installed(PeerKind::InfluxDb)],
        Some(HttpTarget::new(url, "db")),
    );
    assert_eq!(v.iter().map(|v| v.name()).collect::<Vec<_>>(), ["target"]);
}

#[test]
fn a_count_verifies_only_when_it_equals_the_rows_loaded() {
    use super::report::Counted;
    assert_eq!(Counted::Rows(60).failure(60), None);
    let short = Counted::Rows(59).failure(60).unwrap();
    assert!(short.contains("59") && short.contains("60"), "{short}");
    assert_eq!(Counted::Failed("no table".into()).failure(60).as_deref(), Some("no table"));
}

#[test]
fn disk_metrics_divide_by_points_and_never_go_negative() {
    use super::peer_run::disk_metrics;
    let m = disk_metrics(5_000, 10_000, 4_000, 1_000);
    assert_eq!(m, vec![("disk_bytes_per_point", 5.0), ("disk_growth_bytes_per_point", 6.0)]);
    let shrunk = disk_metrics(1_000, 1_000, 4_000, 0);
    assert_eq!(shrunk[1], ("disk_growth_bytes_per_point", 0.0), "a directory that shrank grew by nothing");
    assert_eq!(shrunk[0].1, 1_000.0, "zero points count as one");
}

#[test]
fn peers_conflict_with_target_and_in_process() {
    let mut opts = tiny_options(None);
    opts.peers = vec![crate::peers::PeerKind::InfluxDb];
    assert!(run_ingest_bench(&opts).unwrap_err().to_string().contains("--peers"), "in-process");
    opts.in_process = false;
    opts.target = Some("http://127.0.0.1:1".into());
    assert!(run_ingest_bench(&opts).unwrap_err().to_string().contains("--peers"), "target");
}

#[test]
fn the_table_hides_text_columns_and_lists_durability_below() {
    let mut opts = tiny_options(None);
    opts.protocols = vec![Protocol::None, Protocol::DeclogSsd];
    let report = run_ingest_bench(&opts).unwrap();
    let row = report.result("declog-ssd").unwrap();
    assert!(row["durability"].as_str().unwrap().contains("msync"), "{row:?}");
    let mut shown = report.clone();
    for r in &mut shown.results {
        for k in super::report::TEXT_KEYS {
            r.remove(k);
        }
    }
    let table = shown.render_table();
    assert!(!table.contains("durability") && !table.contains("peer version"), "{table}");
    assert!(table.contains("disk bytes/point"), "{table}");
    let json: Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["config"]["verification_failures"], json!([]));
    assert_eq!(json["results"][0]["durability"], "not durable: no commit log, only checkpoints persist");
}
