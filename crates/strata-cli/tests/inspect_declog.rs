//! `strata inspect` on a data directory of the default protocol (DecLog)
//! left by a SIGKILLed server, so its points are only in the log: the
//! summary counts the log's points, series and time range, `--max-records`
//! caps the records listed, and `--series` lists each series of the log.

use std::process::Command;

mod common;
use common::{free_port, http, start};

fn inspect(tmp: &std::path::Path, extra: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("inspect")
        .arg("--config")
        .arg(tmp.join("strata.toml"))
        .arg("--data-dir")
        .arg(tmp.join("data"))
        .args(extra)
        .output()
        .expect("run strata inspect");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[test]
fn inspect_reads_the_declog_log_of_a_killed_server() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = start(&tmp.path().join("data"), "", "", port);
    let first = "cpu,host=a usage=1 1000\ncpu,host=b usage=2 2000\nmem,host=a used=5i 3000\n";
    let second = "cpu,host=a usage=3 4000\ncpu,host=a usage=4 5000\n";
    for body in [first, second] {
        let (status, text) = http(port, "POST", "/write?db=strata", body.as_bytes()).unwrap();
        assert_eq!(status, 204, "{text}");
    }
    child.kill().unwrap(); // SIGKILL: no checkpoint on the way out
    child.wait().unwrap();

    let out = inspect(tmp.path(), &["--max-records", "2"]);
    let entries = out.lines().find(|l| l.starts_with("  entries: ")).unwrap_or_else(|| panic!("{out}"));
    assert!(out.contains("DecLog log (declog-"), "{out}");
    assert!(entries.contains("5 points, 3 series, time range [1000, 5000]"), "{out}");
    let records: usize = entries["  entries: ".len()..].split(' ').next().unwrap().parse().unwrap();
    assert!(records >= 4, "one entry per series and transaction: {out}");
    let listed = out.lines().filter(|l| l.starts_with("  T") && l.contains(" entry ")).count();
    assert_eq!(listed, 2, "{out}");
    assert!(out.contains(&format!("  ... {} more records (--max-records)", records - 2)), "{out}");
    assert!(!out.contains("series in this log"), "the per-series list only with --series: {out}");

    let out = inspect(tmp.path(), &["--max-records", "0", "--series"]);
    assert_eq!(out.lines().filter(|l| l.starts_with("  T") && l.contains(" entry ")).count(), 0, "{out}");
    for series in [
        "  db \"strata\" cpu,host=a#usage float: 3 points, ts [1000, 5000]",
        "  db \"strata\" cpu,host=b#usage float: 1 points, ts [2000, 2000]",
        "  db \"strata\" mem,host=a#used integer: 1 points, ts [3000, 3000]",
    ] {
        assert!(out.lines().any(|l| l == series), "{series}: {out}");
    }
}
