//! QuestDB's own Python client (`questdb` on PyPI, `.ci/run` installs it)
//! writes into a real `strata serve`: its ILP-over-HTTP sender posts to
//! `/write?precision=n` naming no database (after a `GET /settings` probe,
//! answered 404), so the rows land in the default database `strata`
//! (docs/http-api.md, `/write`). The script is `questdb_sender.py` beside
//! this file.

use std::process::Command;

mod common;
use common::{free_port, query_rows, start};

const ROWS: i64 = 5;
const BASE_NS: i64 = 1_700_000_000_000_000_000;

#[test]
fn questdbs_python_sender_writes_into_the_default_database() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let port = free_port();
    let mut child = start(&data, "", "", port);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/questdb_sender.py");
    let sent = Command::new("python3")
        .args([script, &port.to_string(), &ROWS.to_string()])
        .output()
        .expect("run python3 (the questdb package: `python3 -m pip install questdb`, as .ci/run does)");
    let stderr = String::from_utf8_lossy(&sent.stderr);
    assert!(sent.status.success(), "the questdb sender failed ({}): {stderr}", sent.status);

    let rows = query_rows(port, "strata", "SELECT price, n, ok, note, symbol, side FROM trades");
    let expected: Vec<serde_json::Value> = (0..ROWS)
        .map(|i| {
            let symbol = if i % 2 == 0 { "ETH-USD" } else { "BTC-USD" };
            serde_json::json!([
                BASE_NS + i * 1_000_000_000,
                2615.5 + i as f64,
                i,
                i % 3 == 0,
                format!("row {i}"),
                symbol,
                "sell"
            ])
        })
        .collect();
    assert_eq!(rows, expected);

    child.kill().unwrap();
    child.wait().unwrap();
}
