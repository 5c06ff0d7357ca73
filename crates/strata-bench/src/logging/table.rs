//! The human-readable table of `bench logging`: one row per variant with
//! system, medium, threads, commits/s, p50/p99 commit latency (µs), the ratio
//! to Strata's SSD log, group commit and what a commit survives; the machine
//! line above and the notes below, as every benchmark prints them.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::report::{format_number, BenchReport};

const HEADER: [&str; 9] = [
    "system",
    "medium",
    "threads",
    "commits/s",
    "p50 us",
    "p99 us",
    "vs strata-ssd",
    "group commit",
    "survives",
];

fn cell(row: &Map<String, Value>, key: &str) -> String {
    match row.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => if *b { "yes" } else { "no" }.to_string(),
        Some(Value::Number(n)) if key == "threads" => n.to_string(),
        Some(Value::Number(n)) => n.as_f64().map(format_number).unwrap_or_default(),
        _ => String::new(),
    }
}

/// The table as text.
pub fn render(report: &BenchReport) -> String {
    let keys = &super::COLUMNS[..HEADER.len()];
    let mut rows: Vec<Vec<String>> = vec![HEADER.iter().map(|h| h.to_string()).collect()];
    for r in &report.results {
        rows.push(keys.iter().map(|k| cell(r, k)).collect());
    }
    let widths: Vec<usize> =
        (0..HEADER.len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    let _ = writeln!(out, "benchmark {}: {}", report.benchmark, report.machine.describe());
    for (i, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (c, text) in row.iter().enumerate() {
            // Text columns left, figures right.
            if !(2..7).contains(&c) {
                let _ = write!(line, "{text:<w$}  ", w = widths[c]);
            } else {
                let _ = write!(line, "{text:>w$}  ", w = widths[c]);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
        if i == 0 {
            let _ = writeln!(out, "{}", "-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
        }
    }
    for note in &report.notes {
        let _ = writeln!(out, "  * {note}");
    }
    out
}
