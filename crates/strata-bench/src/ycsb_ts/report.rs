//! The YCSB-TS benchmark's figures and report (DESIGN.md section 6): metric
//! names ending in their unit, one row per variant (medians over rounds,
//! `null` where a variant has no such figure), the two printed tables, the
//! acceptance checks of issue 4, and the JSON document: the shared shape
//! plus `latency_cdf_us` (Fig. 11's points per variant) and `acceptance`.

use serde_json::{json, Map, Value};

use super::job::ChildResult;
use super::recovery::CrashRun;
use crate::report::BenchReport;

/// Metric name and value of one round.
pub type Metrics = Vec<(&'static str, f64)>;

/// Throughput and latency table (Fig. 10(a), Fig. 11).
pub const PERFORMANCE_COLUMNS: [&str; 10] = [
    "txns",
    "throughput_txn_per_s",
    "ratio_to_none",
    "ratio_to_serial_pmem",
    "latency_us_mean_fastest95",
    "latency_us_p50",
    "latency_us_p95",
    "latency_us_p99",
    "cpu_us_per_txn",
    "throughput_no_checkpoint_txn_per_s",
];

/// Persist counts and recovery table (Table 2).
pub const PERSIST_COLUMNS: [&str; 10] = [
    "fences_per_txn",
    "lines_flushed_per_txn",
    "bytes_per_txn",
    "media_blocks_per_txn",
    "log_bytes_per_txn",
    "recovery_s",
    "recovery_with_checkpoint_s",
    "recovery_cpu_s",
    "recovery_with_checkpoint_cpu_s",
    "checkpoint_s",
];

/// Metrics every row carries, as `null` when a variant has none.
pub const ALWAYS_PRESENT: [&str; 11] = [
    "throughput_txn_per_s",
    "fences_per_txn",
    "lines_flushed_per_txn",
    "bytes_per_txn",
    "media_blocks_per_txn",
    "latency_us_mean_fastest95",
    "latency_us_p50",
    "latency_us_p95",
    "latency_us_p99",
    "recovery_s",
    "recovery_with_checkpoint_s",
];

/// The figures of the measured run (the one with the checkpoint, if the
/// variant allows checkpoints).
pub fn run_metrics(run: &ChildResult) -> Metrics {
    let txns = run.committed_txns.max(1) as f64;
    let mut m = vec![
        ("throughput_txn_per_s", run.committed_txns as f64 / run.run_s.max(1e-9)),
        ("latency_us_mean_fastest95", run.latency.mean_fastest95_us),
        ("latency_us_p50", run.latency.p50_us),
        ("latency_us_p95", run.latency.p95_us),
        ("latency_us_p99", run.latency.p99_us),
        ("cpu_us_per_txn", run.run_cpu_s * 1e6 / txns),
        ("log_bytes_per_txn", run.log_bytes_written as f64 / txns),
        ("retries_per_txn", run.retries as f64 / txns),
        ("reads_missing", run.reads_missing as f64),
        ("txns", run.committed_txns as f64),
    ];
    if let Some(p) = run.persist {
        m.extend([
            ("fences_per_txn", p.fences as f64 / txns),
            ("lines_flushed_per_txn", p.lines_flushed as f64 / txns),
            ("bytes_per_txn", p.bytes_persisted as f64 / txns),
            ("media_blocks_per_txn", p.media_blocks_written as f64 / txns),
        ]);
    }
    if let Some(d) = run.declog {
        m.extend([
            ("entries_per_txn", d.entries as f64 / txns),
            ("batches_per_txn", d.batches as f64 / txns),
            ("deferred_tails_per_txn", d.deferred_tails as f64 / txns),
            ("batch_bytes_per_txn", d.batch_bytes as f64 / txns),
            ("compression_ratio", d.payload_bytes_submitted as f64 / d.payload_bytes_logged.max(1) as f64),
        ]);
    }
    m.push(("lsn_txn_share", run.txns_with_lsn as f64 / txns));
    if let Some(s) = run.checkpoint_s {
        m.push(("checkpoint_s", s));
    }
    m
}

/// Recovery figures of the run with a checkpoint (`with`) and without.
pub fn recovery_metrics(with: Option<&CrashRun>, without: &CrashRun) -> Metrics {
    let mut m = vec![
        ("recovery_s", without.recovery_s),
        ("recovery_cpu_s", without.recovery_cpu_s),
        (
            "throughput_no_checkpoint_txn_per_s",
            without.result.committed_txns as f64 / without.result.run_s.max(1e-9),
        ),
        ("lost_last_inserts", without.lost_last_inserts as f64),
    ];
    if let Some(w) = with {
        m.extend([
            ("recovery_with_checkpoint_s", w.recovery_s),
            ("recovery_with_checkpoint_cpu_s", w.recovery_cpu_s),
            ("lost_last_inserts_with_checkpoint", w.lost_last_inserts as f64),
        ]);
    }
    m
}

/// Adds `null` for every [`ALWAYS_PRESENT`] metric a row lacks.
pub fn fill_nulls(row: &mut Map<String, Value>) {
    for metric in ALWAYS_PRESENT {
        row.entry(metric.to_string()).or_insert(Value::Null);
    }
}

/// A number of a row, if present and not null.
pub fn metric(report: &BenchReport, variant: &str, metric: &str) -> Option<f64> {
    report.result(variant)?.get(metric)?.as_f64()
}

/// A copy of `report` whose rows hold only `columns` (for one printed table).
pub fn table_subset(report: &BenchReport, title: &str, columns: &[&str]) -> BenchReport {
    let mut sub = report.clone();
    sub.benchmark = format!("{} ({title})", report.benchmark);
    sub.columns = columns.iter().map(|c| c.to_string()).collect();
    sub.results = report
        .results
        .iter()
        .map(|row| {
            row.iter()
                .filter(|(k, _)| *k == "variant" || columns.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .collect();
    sub.notes = Vec::new();
    sub
}

/// One acceptance check of issue 4.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub name: &'static str,
    /// `None`: the variants it needs did not run.
    pub value: Option<f64>,
    pub threshold: f64,
    /// The value must be at most the threshold (else at least).
    pub at_most: bool,
    pub passed: Option<bool>,
}

/// DecLog fences/txn <= 1/5 of serial-pmem's; DecLog throughput >= 0.85x
/// none; recovery with a checkpoint >= 10x faster than without.
pub fn acceptance(report: &BenchReport) -> Vec<Check> {
    let m = |v: &str, k: &str| metric(report, v, k);
    let fence_share =
        m("declog-pmem", "fences_per_txn").zip(m("serial-pmem", "fences_per_txn")).map(|(d, s)| d / s);
    let throughput_share =
        m("declog-pmem", "throughput_txn_per_s").zip(m("none", "throughput_txn_per_s")).map(|(d, n)| d / n);
    let recovery_speedup = m("declog-pmem", "recovery_s")
        .zip(m("declog-pmem", "recovery_with_checkpoint_s"))
        .map(|(without, with)| without / with.max(1e-9));
    vec![
        Check {
            name: "declog-pmem fences/txn over serial-pmem's",
            value: fence_share,
            threshold: 0.2,
            at_most: true,
            passed: fence_share.map(|v| v <= 0.2),
        },
        Check {
            name: "declog-pmem throughput over none's",
            value: throughput_share,
            threshold: 0.85,
            at_most: false,
            passed: throughput_share.map(|v| v >= 0.85),
        },
        Check {
            name: "declog-pmem recovery without / with checkpoint",
            value: recovery_speedup,
            threshold: 10.0,
            at_most: false,
            passed: recovery_speedup.map(|v| v >= 10.0),
        },
    ]
}

pub fn describe_check(c: &Check) -> String {
    let verdict = match c.passed {
        Some(true) => "PASS",
        Some(false) => "FAIL",
        None => "not measured",
    };
    let op = if c.at_most { "<=" } else { ">=" };
    match c.value {
        Some(v) => format!("acceptance: {} = {v:.3} (need {op} {}): {verdict}", c.name, c.threshold),
        None => format!("acceptance: {}: {verdict} (needed variants did not run)", c.name),
    }
}

/// The JSON document: the shared shape, plus the CDF points and the checks.
pub fn to_json(report: &BenchReport, cdfs: &[(String, Vec<(f64, f64)>)]) -> Value {
    let mut doc: Value = serde_json::from_str(&report.to_json()).expect("a report is JSON");
    let cdf: Map<String, Value> = cdfs
        .iter()
        .map(|(v, points)| (v.clone(), json!(points.iter().map(|(x, y)| [*x, *y]).collect::<Vec<_>>())))
        .collect();
    doc["latency_cdf_us"] = Value::Object(cdf);
    doc["acceptance"] = Value::Array(
        acceptance(report)
            .iter()
            .map(|c| json!({"check": c.name, "value": c.value, "threshold": c.threshold, "passed": c.passed}))
            .collect(),
    );
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;
    use crate::ycsb_ts::job::PersistCounts;
    use crate::ycsb_ts::latency::LatencySummary;
    use strata_pmem::{FlushInstruction, PmemMode};

    fn row(variant: &str, metrics: &Metrics) -> Map<String, Value> {
        let mut r = Map::new();
        r.insert("variant".into(), variant.into());
        for (k, v) in metrics {
            r.insert(k.to_string(), (*v).into());
        }
        fill_nulls(&mut r);
        r
    }

    fn report() -> BenchReport {
        let machine = Machine::detect(PmemMode::Emulated, "test", FlushInstruction::Clwb);
        let mut r = BenchReport::new("ycsb-ts", machine, json!({}));
        let declog = ChildResult {
            committed_txns: 100,
            run_s: 0.5,
            latency: LatencySummary::from_ns(vec![1000, 2000, 3000]),
            persist: Some(PersistCounts {
                fences: 20,
                lines_flushed: 300,
                bytes_persisted: 19_200,
                media_blocks_written: 80,
            }),
            ..Default::default()
        };
        let crash = |s: f64| CrashRun {
            result: declog.clone(),
            recovery_s: s,
            recovery_cpu_s: s,
            lost_last_inserts: 0,
        };
        let mut m = run_metrics(&declog);
        m.extend(recovery_metrics(Some(&crash(0.01)), &crash(0.5)));
        let serial = ChildResult {
            committed_txns: 100,
            run_s: 1.0,
            persist: Some(PersistCounts { fences: 200, ..Default::default() }),
            ..Default::default()
        };
        let none = ChildResult { committed_txns: 100, run_s: 0.45, ..Default::default() };
        r.results = vec![
            row("declog-pmem", &m),
            row("serial-pmem", &run_metrics(&serial)),
            row("none", &run_metrics(&none)),
        ];
        r
    }

    #[test]
    fn json_has_the_metric_names_of_the_issue() {
        let doc = to_json(&report(), &[("declog-pmem".into(), vec![(1.0, 0.5), (3.0, 1.0)])]);
        let row = &doc["results"][0];
        for name in [
            "throughput_txn_per_s",
            "fences_per_txn",
            "lines_flushed_per_txn",
            "bytes_per_txn",
            "media_blocks_per_txn",
            "latency_us_p50",
            "latency_us_p95",
            "latency_us_p99",
            "latency_us_mean_fastest95",
            "recovery_s",
            "recovery_with_checkpoint_s",
        ] {
            assert!(row.get(name).is_some_and(Value::is_number), "{name} missing in {row}");
        }
        assert_eq!(row["throughput_txn_per_s"], 200.0);
        assert_eq!(row["fences_per_txn"], 0.2);
        assert_eq!(row["bytes_per_txn"], 192.0);
        // A variant without a PMem region reports null, not a missing key.
        assert!(doc["results"][2]["fences_per_txn"].is_null());
        assert!(doc["results"][2]["recovery_s"].is_null());
        assert_eq!(doc["latency_cdf_us"]["declog-pmem"][1], json!([3.0, 1.0]));
        assert_eq!(doc["benchmark"], "ycsb-ts");
    }

    #[test]
    fn acceptance_checks_use_same_run_ratios() {
        let checks = acceptance(&report());
        assert_eq!(checks[0].value, Some(0.1));
        assert_eq!(checks[0].passed, Some(true));
        let share = checks[1].value.unwrap();
        assert!((share - 0.9).abs() < 1e-9, "{share}");
        assert_eq!(checks[1].passed, Some(true));
        assert_eq!(checks[2].value, Some(50.0));
        assert!(describe_check(&checks[2]).contains("PASS"));
        let empty = BenchReport::new("ycsb-ts", report().machine, json!({}));
        assert!(acceptance(&empty).iter().all(|c| c.passed.is_none()));
    }

    #[test]
    fn tables_split_the_columns() {
        let r = report();
        let t = table_subset(&r, "persist", &PERSIST_COLUMNS).render_table();
        assert!(t.contains("fences/txn") && t.contains("recovery s"), "{t}");
        assert!(!t.contains("p99 us"), "{t}");
        let t = table_subset(&r, "performance", &PERFORMANCE_COLUMNS).render_table();
        assert!(t.contains("txn/s") && t.contains("p99 us") && !t.contains("fences"), "{t}");
    }
}
