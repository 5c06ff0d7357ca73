//! A stream whose files are damaged while the server is down: `strata
//! serve` still starts, serves the series and the other streams, answers the
//! damaged stream's writes and queries with 503, and reports it in `/health`
//! and `/metrics` (issue "Event streams at scale", isolation).

use std::path::Path;

mod common;
use common::{free_port, http, start};

const CONFIG: &str = "[storage]\nprotocol = \"serial-ssd\"\n";

fn post(port: u16, path: &str, body: &str) -> (u16, String) {
    http(port, "POST", path, body.as_bytes()).expect("request")
}

fn stop(mut child: common::KillOnDrop) {
    child.kill().expect("kill");
    child.wait().expect("reap");
}

/// Overwrites `len` bytes at `at` of `file` with a pattern.
fn damage(file: &Path, at: usize, len: usize) {
    let mut bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let end = (at + len).min(bytes.len());
    assert!(end > at, "{} is too short to damage", file.display());
    for b in &mut bytes[at..end] {
        *b ^= 0xA5;
    }
    std::fs::write(file, bytes).unwrap();
}

#[test]
fn a_damaged_stream_is_out_of_service_and_everything_else_is_served() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let port = free_port();
    let child = start(&data, CONFIG, "serial-ssd", port);
    assert_eq!(post(port, "/query?q=CREATE%20DATABASE%20mydb", "").0, 200);
    for name in ["good", "bad_catalog", "bad_files"] {
        let create =
            format!(r#"{{"db":"mydb","name":"{name}","attributes":[{{"name":"price","type":"f64"}}]}}"#);
        let (status, body) = post(port, "/api/v1/streams", &create);
        assert_eq!(status, 201, "create {name}: {body}");
    }
    let mut lines = String::from("cpu value=1 1000000000\n");
    for name in ["good", "bad_catalog", "bad_files"] {
        for i in 1..=50i64 {
            lines.push_str(&format!("{name} price={i}.5 {}\n", i * 1_000_000_000));
        }
    }
    let (status, body) = post(port, "/write?db=mydb", &lines);
    assert_eq!(status, 204, "{body}");
    stop(child);

    let streams = data.join("streams/mydb");
    damage(&streams.join("bad_catalog/stream.catalog"), 16, 8);
    let mut damaged = 0;
    for entry in walk(&streams.join("bad_files")) {
        if entry.file_name().is_some_and(|n| n != "stream.catalog")
            && std::fs::metadata(&entry).unwrap().len() > 0
        {
            damage(&entry, 0, 4096);
            damaged += 1;
        }
    }
    assert!(damaged > 0, "the stream has data files to damage");

    let child = start(&data, CONFIG, "serial-ssd", port);
    let (status, body) = http(port, "GET", "/health", b"").unwrap();
    assert_eq!(status, 200, "the rest is served: {body}");
    for name in ["bad_catalog", "bad_files"] {
        assert!(body.contains(&format!("stream mydb/{name}")) && body.contains("\"fail\""), "{body}");
    }
    assert!(!body.contains("stream mydb/good"), "{body}");
    let (_, metrics) = http(port, "GET", "/metrics", b"").unwrap();
    assert!(metrics.contains("strata_streams_failed 2"), "{metrics}");
    assert!(metrics.contains("strata_stream_failed_info{db=\"mydb\",stream=\"bad_files\"} 1"));

    let count = |name: &str| post(port, &format!("/query?db=mydb&q=SELECT%20count(*)%20FROM%20{name}"), "");
    let (status, body) = count("good");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("50"), "the healthy stream keeps its events: {body}");
    let (status, body) = count("cpu");
    assert!(status == 200 && body.contains("\"count_value\""), "series are served: {body}");
    for name in ["bad_catalog", "bad_files"] {
        let (status, body) = count(name);
        assert_eq!(status, 503, "{name}: {body}");
        assert!(body.contains("failed to recover"), "{body}");
        let (status, body) = post(port, "/write?db=mydb", &format!("{name} price=1 99000000000\n"));
        assert_eq!(status, 503, "{name}: {body}");
        assert!(body.contains("unavailable"), "{body}");
    }
    let (status, body) = post(port, "/write?db=mydb", "good price=7 99000000000\ncpu value=2 2000000000\n");
    assert_eq!(status, 204, "writes to the rest go on: {body}");
    let (status, _) = http(port, "DELETE", "/api/v1/streams/mydb/bad_files", b"").unwrap();
    assert_eq!(status, 204, "a failed stream can be dropped");
    let (status, body) = http(port, "GET", "/metrics", b"").unwrap();
    assert!(status == 200 && body.contains("strata_streams_failed 1"), "{body}");
    stop(child);
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
