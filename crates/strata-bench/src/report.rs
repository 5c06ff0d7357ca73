//! The report every benchmark produces (DESIGN.md section 6): JSON of the one
//! shared shape `{"benchmark", "machine", "config", "results": [{"variant",
//! METRIC: NUMBER, ...}]}` with metric names ending in their unit, and the
//! same figures as a human-readable table.
//!
//! Rows are `serde_json` maps (sorted by key); the JSON writer puts `variant`
//! first and then the metrics in the report's column order, so a file reads
//! like its table.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::Context;
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::machine::Machine;

/// Results of one benchmark run.
#[derive(Clone, Debug)]
pub struct BenchReport {
    /// Benchmark name (`persist`, ...).
    pub benchmark: String,
    pub machine: Machine,
    /// Everything needed to reproduce the run (sizes, rounds, directories).
    pub config: Value,
    /// One row per variant: `variant` plus metrics whose names end in their unit.
    pub results: Vec<Map<String, Value>>,
    /// Table column (and JSON key) order; metrics not listed follow alphabetically.
    pub columns: Vec<String>,
    /// Lines printed under the table (not in JSON): how to read the figures.
    pub notes: Vec<String>,
}

impl BenchReport {
    pub fn new(benchmark: &str, machine: Machine, config: Value) -> BenchReport {
        BenchReport {
            benchmark: benchmark.to_string(),
            machine,
            config,
            results: Vec::new(),
            columns: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The result row of `variant`.
    pub fn result(&self, variant: &str) -> Option<&Map<String, Value>> {
        self.results.iter().find(|r| r.get("variant").and_then(Value::as_str) == Some(variant))
    }

    /// Metric names of all rows: `columns` first, then the rest alphabetically.
    pub fn metric_order(&self) -> Vec<String> {
        let mut order: Vec<String> = self
            .columns
            .iter()
            .filter(|c| self.results.iter().any(|r| r.contains_key(*c)))
            .cloned()
            .collect();
        let mut rest: Vec<String> = self
            .results
            .iter()
            .flat_map(|r| r.keys())
            .filter(|k| *k != "variant" && !order.contains(k))
            .cloned()
            .collect();
        rest.sort();
        rest.dedup();
        order.extend(rest);
        order
    }

    /// The JSON document (pretty printed).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    /// Checks, before a benchmark runs, that a report can be written to
    /// `path` later: its directory exists (the current one for a bare name).
    pub fn check_json_path(path: Option<&Path>) -> anyhow::Result<()> {
        if let Some(dir) = path.and_then(Path::parent) {
            let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
            anyhow::ensure!(
                dir.is_dir(),
                "cannot write the JSON report: {} is not a directory",
                dir.display()
            );
        }
        Ok(())
    }

    /// Writes the JSON document to `path`.
    pub fn write_json(&self, path: &Path) -> anyhow::Result<()> {
        let mut file = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        file.write_all(self.to_json().as_bytes())
            .and_then(|()| file.write_all(b"\n"))
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }

    /// The human-readable table: machine line, one row per variant, notes.
    pub fn render_table(&self) -> String {
        let metrics = self.metric_order();
        let mut header = vec!["variant".to_string()];
        header.extend(metrics.iter().map(|m| column_label(m)));
        let mut rows = vec![header];
        for r in &self.results {
            let mut row = vec![r.get("variant").and_then(Value::as_str).unwrap_or("?").to_string()];
            row.extend(
                metrics
                    .iter()
                    .map(|m| r.get(m).and_then(Value::as_f64).map(format_number).unwrap_or_default()),
            );
            rows.push(row);
        }
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        let _ = writeln!(out, "benchmark {}: {}", self.benchmark, self.machine.describe());
        for (i, row) in rows.iter().enumerate() {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                if c == 0 {
                    let _ = write!(line, "{cell:<w$}", w = widths[c]);
                } else {
                    let _ = write!(line, "  {cell:>w$}", w = widths[c]);
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
            if i == 0 {
                let _ =
                    writeln!(out, "{}", "-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
            }
        }
        for note in &self.notes {
            let _ = writeln!(out, "  * {note}");
        }
        out
    }

    pub fn print_table(&self) {
        print!("{}", self.render_table());
    }

    /// The end of a run: the table on stdout (if `print`), the JSON to
    /// `json_path` (if any); returns the report.
    pub fn publish(self, print: bool, json_path: Option<&Path>) -> anyhow::Result<BenchReport> {
        if print {
            self.print_table();
        }
        if let Some(p) = json_path {
            self.write_json(p)?;
        }
        Ok(self)
    }
}

impl Serialize for BenchReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let order = self.metric_order();
        let rows: Vec<OrderedRow<'_>> =
            self.results.iter().map(|row| OrderedRow { row, order: &order }).collect();
        let mut st = s.serialize_struct("BenchReport", 4)?;
        st.serialize_field("benchmark", &self.benchmark)?;
        st.serialize_field("machine", &self.machine)?;
        st.serialize_field("config", &self.config)?;
        st.serialize_field("results", &rows)?;
        st.end()
    }
}

/// A result row serialized as `variant` first, then metrics in `order`.
struct OrderedRow<'a> {
    row: &'a Map<String, Value>,
    order: &'a [String],
}

impl Serialize for OrderedRow<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.row.len()))?;
        if let Some(v) = self.row.get("variant") {
            map.serialize_entry("variant", v)?;
        }
        for key in self.order {
            if let Some(v) = self.row.get(key) {
                map.serialize_entry(key, v)?;
            }
        }
        for (key, v) in self.row {
            if key != "variant" && !self.order.contains(key) {
                map.serialize_entry(key, v)?;
            }
        }
        map.end()
    }
}

/// A short column title from a metric name: `throughput_bytes_per_s` ->
/// `bytes/s`, `latency_us_p99` -> `p99 us`, `fences_per_entry` -> `fences/entry`.
pub fn column_label(metric: &str) -> String {
    let m = metric.strip_prefix("throughput_").unwrap_or(metric);
    let m = match m.strip_prefix("latency_us_") {
        Some(p) => format!("{p} us"),
        None => m.to_string(),
    };
    m.replace("_per_", "/").replace('_', " ")
}

/// Three significant digits; SI prefixes (k, M, G, T) from 10 000 up.
pub fn format_number(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let a = v.abs();
    if a == 0.0 {
        return "0".to_string();
    }
    if a >= 1e4 {
        for (scale, prefix) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
            if a >= scale {
                return format!("{}{prefix}", significant(v / scale));
            }
        }
    }
    significant(v)
}

fn significant(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        // 0.0123 -> 4 decimals: three significant digits below 1.
        (2 - a.log10().floor() as i32).clamp(2, 9) as usize
    };
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_pmem::{FlushInstruction, PmemMode};

    fn report() -> BenchReport {
        let machine = Machine::detect(PmemMode::Emulated, "mapped file on tmpfs", FlushInstruction::Clwb);
        let mut r = BenchReport::new("demo", machine, serde_json::json!({"rounds": 3}));
        let mut a = Map::new();
        a.insert("variant".into(), "a/tmpfs".into());
        a.insert("throughput_bytes_per_s".into(), 1.5e9.into());
        a.insert("ratio_to_memcpy".into(), 1.0.into());
        let mut b = Map::new();
        b.insert("variant".into(), "b/tmpfs".into());
        b.insert("throughput_bytes_per_s".into(), 2.5e8.into());
        b.insert("latency_us_p99".into(), 123.4.into());
        b.insert("ratio_to_memcpy".into(), 0.1667.into());
        r.results = vec![a, b];
        r.columns = vec!["throughput_bytes_per_s".into(), "ratio_to_memcpy".into()];
        r
    }

    #[test]
    fn json_has_the_shared_shape_and_key_order() {
        let r = report();
        let text = r.to_json();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["benchmark"], "demo");
        assert_eq!(v["machine"]["pmem_mode"], "emulated");
        assert_eq!(v["config"]["rounds"], 3);
        assert_eq!(v["results"][1]["latency_us_p99"], 123.4);
        let variant_at = text.find("\"variant\"").unwrap();
        let throughput_at = text.find("\"throughput_bytes_per_s\"").unwrap();
        let ratio_at = text.find("\"ratio_to_memcpy\"").unwrap();
        assert!(variant_at < throughput_at && throughput_at < ratio_at, "{text}");
    }

    #[test]
    fn table_lists_every_variant_and_metric() {
        let t = report().render_table();
        for s in
            ["a/tmpfs", "b/tmpfs", "bytes/s", "ratio to memcpy", "p99 us", "1.50G", "250M", "0.167", "123"]
        {
            assert!(t.contains(s), "missing {s} in\n{t}");
        }
    }

    #[test]
    fn labels_and_numbers_are_short() {
        assert_eq!(column_label("throughput_entries_per_s"), "entries/s");
        assert_eq!(column_label("latency_us_p50"), "p50 us");
        assert_eq!(column_label("media_blocks_per_entry"), "media blocks/entry");
        assert_eq!(format_number(12_345.0), "12.3k");
        assert_eq!(format_number(9_876.0), "9876");
        assert_eq!(format_number(1.0), "1.00");
        assert_eq!(format_number(0.012_34), "0.0123");
        assert_eq!(format_number(0.5), "0.500");
    }
}
