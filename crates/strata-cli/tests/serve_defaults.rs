//! A first `strata serve` with nothing configured (an empty configuration
//! file, no `--protocol`): the commit protocol and durability its startup
//! log states are the ones README.md's quick start names, the recovery
//! report counts the default database it just created, a ~100 KiB line is
//! taken under the default `max_line_bytes` (1 MiB), and a write that names
//! no database (as QuestDB's ILP-over-HTTP senders send it) lands in the
//! default database `strata`.

mod common;
use common::{free_port, http, query_rows, start};

#[test]
fn a_first_start_with_defaults_does_what_the_readme_and_http_api_say() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let port = free_port();
    let mut child = start(&data, "", "", port);
    let log = std::fs::read_to_string(tmp.path().join("serve-stderr.log")).unwrap();

    // The protocol: `auto`, resolved to DecLog (README.md, "Quick start").
    let protocol_line =
        log.lines().find(|l| l.starts_with("strata: commit protocol ")).expect("protocol line");
    let on_dax = protocol_line.contains("DAX mount: real PMem");
    let expected = if on_dax { "declog-pmem" } else { "declog-ssd" };
    assert!(protocol_line.starts_with(&format!("strata: commit protocol {expected} (auto: ")), "{log}");
    let readme = include_str!("../../../README.md");
    let quick_start =
        &readme[readme.find("## Quick start").unwrap()..readme.find("## What is here").unwrap()];
    assert!(quick_start.contains(&format!("(`{expected}`)")), "README's quick start names {expected}");
    assert!(quick_start.contains("The default\ncommit protocol, `auto`"), "README names the default");
    // What an acknowledged write survives: a power loss, unless the data
    // directory is in memory (README: "on tmpfs it survives a process crash only").
    let survives = if log.contains("(in memory: gone at a power loss)") {
        "a process crash, not a power loss"
    } else {
        "a process crash and a power loss"
    };
    assert!(log.contains(&format!("strata: an acknowledged write survives {survives}")), "{log}");
    // The report is of the state after the default database exists.
    assert!(log.lines().any(|l| l == "databases           1"), "{log}");

    // A line of ~100 KiB (two string fields of 50 KiB) with no `db`.
    let text = "x".repeat(50 * 1024);
    let line = format!("log,host=a msg=\"{text}\",more=\"{text}\" 1700000000000000000\n");
    let (status, body) = http(port, "POST", "/write", line.as_bytes()).unwrap();
    assert_eq!(status, 204, "{body}");
    let rows = query_rows(port, "strata", "SELECT msg, more FROM log");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!((rows[0][1].as_str(), rows[0][2].as_str()), (Some(text.as_str()), Some(text.as_str())));

    // Exactly what QuestDB's sender posts (its probe of /settings first is
    // answered 404, after which it speaks plain ILP).
    assert_eq!(http(port, "GET", "/settings", b"").unwrap().0, 404);
    let ilp = "trades,symbol=ETH-USD,side=sell price=2615.54,amount=0.00044,n=3i,ok=t,note=\"hi\" 1700000000000000000\n";
    let (status, body) = http(port, "POST", "/write?precision=n", ilp.as_bytes()).unwrap();
    assert_eq!(status, 204, "{body}");
    let rows = query_rows(port, "strata", "SELECT price, n, ok, note, symbol FROM trades");
    assert_eq!(rows, [serde_json::json!([1_700_000_000_000_000_000i64, 2615.54, 3, true, "hi", "ETH-USD"])]);

    child.kill().unwrap();
    child.wait().unwrap();
}
