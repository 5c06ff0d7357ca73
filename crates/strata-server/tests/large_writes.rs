//! Writes of any size up to the body limit, under every commit protocol
//! (issue 15 item 1): 70,000 one-field lines of as many series, and 200
//! lines of 1,000 fields, each answer 204 and are all counted back, also
//! after a restart. A request too large for a small DecLog file gets 413
//! and leaves no series or field types behind, and the server goes on.

mod common;

use common::{encode, DbServer};
use serde_json::Value;
use strata_engine::Config;

fn config(dir: &std::path::Path, protocol: &str) -> Config {
    let mut config = Config { data_dir: dir.to_path_buf(), ..Config::default() };
    config.storage.protocol = protocol.into();
    config
}

fn many_series_body(lines: usize) -> String {
    (0..lines)
        .map(|i| format!("m{},tag=t{i} v={i}i 1700000000000000000", i % 7))
        .collect::<Vec<_>>()
        .join("\n")
}

fn wide_body(lines: usize, fields: usize) -> String {
    (0..lines)
        .map(|i| {
            let fields: Vec<String> = (0..fields).map(|j| format!("f{j}={j}.5")).collect();
            format!("wide,host=h{i} {} 1700000000000000000", fields.join(","))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn query(server: &DbServer, q: &str) -> Value {
    let response = server.call("GET", &format!("/query?db=strata&q={}", encode(q)), b"");
    assert_eq!(response.status, 200, "{q}: {}", response.text());
    response.json()
}

/// The single value of a one-row answer (0 if no series).
fn scalar(server: &DbServer, q: &str) -> i64 {
    let body = query(server, q);
    body["results"][0]["series"][0]["values"][0][1].as_i64().unwrap_or(0)
}

fn series_count(server: &DbServer) -> usize {
    let body = query(server, "SHOW SERIES");
    body["results"][0]["series"]
        .as_array()
        .map_or(0, |s| s.iter().map(|s| s["values"].as_array().unwrap().len()).sum())
}

fn field_keys(server: &DbServer) -> usize {
    let body = query(server, "SHOW FIELD KEYS");
    body["results"][0]["series"]
        .as_array()
        .map_or(0, |s| s.iter().map(|s| s["values"].as_array().unwrap().len()).sum())
}

fn counts(server: &DbServer) -> (i64, i64) {
    let many: i64 = (0..7).map(|m| scalar(server, &format!("SELECT count(v) FROM m{m}"))).sum();
    (many, scalar(server, "SELECT count(f999) FROM wide"))
}

#[test]
fn large_writes_succeed_under_every_protocol_and_survive_a_restart() {
    let many = many_series_body(70_000);
    let wide = wide_body(200, 1000);
    for protocol in ["declog-pmem", "declog-ssd", "serial-pmem", "serial-ssd", "none"] {
        let dir = tempfile::tempdir().unwrap();
        let server = DbServer::start(&config(dir.path(), protocol));
        for (what, body) in [("70,000 lines", &many), ("200 x 1,000 fields", &wide)] {
            let response = server.call("POST", "/write?db=strata", body.as_bytes());
            assert_eq!(response.status, 204, "{protocol}, {what}: {}", response.text());
        }
        assert_eq!(counts(&server), (70_000, 200), "{protocol}");
        server.stop();
        if protocol == "none" {
            continue; // no log: only checkpoints persist
        }
        let server = DbServer::start(&config(dir.path(), protocol));
        assert_eq!(counts(&server), (70_000, 200), "{protocol} after a restart");
        server.stop();
    }
}

#[test]
fn a_request_too_large_for_the_declog_file_gets_413_and_leaves_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), "declog-pmem");
    config.declog.file_bytes = 4 << 20;
    // Key tables of 1,000 slots: under half the file, and the streams as
    // large as with the 1,024 slots this test was written for.
    config.declog.key_slots = 1000;
    let server = DbServer::start(&config);
    let first = server.call("POST", "/write?db=strata", b"cpu,host=a usage=1 1700000000000000000");
    assert_eq!(first.status, 204, "{}", first.text());
    let (series, fields) = (series_count(&server), field_keys(&server));
    assert_eq!((series, fields), (1, 1));
    let response = server.call("POST", "/write?db=strata", wide_body(200, 1000).as_bytes());
    assert_eq!(response.status, 413, "{}", response.text());
    assert!(response.text().contains("split it into smaller requests"), "{}", response.text());
    assert_eq!(
        (series_count(&server), field_keys(&server)),
        (series, fields),
        "no trace of the refused request"
    );
    // The server goes on: the same data in pieces is taken.
    let wide = wide_body(200, 1000);
    for piece in wide.lines().collect::<Vec<_>>().chunks(2) {
        let response = server.call("POST", "/write?db=strata", piece.join("\n").as_bytes());
        assert_eq!(response.status, 204, "{}", response.text());
    }
    assert_eq!(scalar(&server, "SELECT count(f999) FROM wide"), 200);
    server.stop();
}
