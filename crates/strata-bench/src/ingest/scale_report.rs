//! The `--scale large` figures in the report: every large load's figures go
//! into its system's result row under `scale_` (`scale_rows_per_s`,
//! `scale_single_groupby_ms`, `scale_peak_rss_mib`,
//! `scale_disk_bytes_per_point`, `scale_disk_bytes_per_point_compacted`, ...) beside the rounds' medians, with
//! what shows how cost grows with data: `scale_ratio_to_quick` (rows/s at
//! scale over the rounds' rows/s) and each query's time per million values
//! of its scope (`<query>_ms_per_mvalue`, `scale_<query>_ms_per_mvalue`);
//! `config.scale` says what was loaded. Printed as two tables under the
//! main one (which leaves these columns out): ingest, and queries (a row
//! per system and language).

use serde_json::{json, Map, Value};

use super::generator::CpuSpec;
use super::peer_ratios::add_to_fastest_peer;
use super::queries::{per_mvalue_metric, QueryKind, TsbsQuery};
use super::report::{peer_names, RunFacts};
use super::scale::ScaleRun;
use crate::report::BenchReport;

/// Prefix of every figure of a large load.
pub const SCALE_PREFIX: &str = "scale_";

/// Rows/s at scale over the rounds' rows/s.
pub const RATIO_TO_QUICK: &str = "scale_ratio_to_quick";

/// Columns of the printed ingest table: (key in the result row, key shown).
const INGEST_COLUMNS: [(&str, &str); 15] = [
    ("rows_per_s", "quick_rows_per_s"),
    ("scale_rows_per_s", "scale_rows_per_s"),
    (RATIO_TO_QUICK, "scale_ratio_to_quick"),
    ("scale_latency_ms_p50", "scale_latency_ms_p50"),
    ("scale_latency_ms_p99", "scale_latency_ms_p99"),
    ("peak_rss_mib", "quick_peak_rss_mib"),
    ("scale_peak_rss_mib", "scale_peak_rss_mib"),
    ("scale_peak_rss_growth_mib", "scale_peak_rss_growth_mib"),
    ("disk_bytes_per_point", "quick_disk_bytes_per_point"),
    ("scale_disk_bytes_per_point", "scale_disk_bytes_per_point"),
    ("disk_bytes_per_point_compacted", "quick_disk_bytes_per_point_compacted"),
    ("scale_disk_bytes_per_point_compacted", "scale_disk_bytes_per_point_compacted"),
    ("generating_s", "quick_generating_s"),
    ("scale_generating_s", "scale_generating_s"),
    ("scale_checkpoints", "scale_checkpoints"),
];

/// Whether a result-row key stays out of the main table (shown in the
/// scale tables, or only in the JSON).
pub fn is_scale_key(key: &str) -> bool {
    key.starts_with(SCALE_PREFIX) || key.ends_with("_per_mvalue") || key.ends_with("_to_fastest_peer")
}

/// The latency metrics of `q` (InfluxQL, SQL) with their per-million-values
/// metric and that metric's value, where `figure` has the latency.
fn per_mvalue<'a>(
    q: &'a TsbsQuery,
    figure: impl Fn(&str) -> Option<f64> + 'a,
) -> impl Iterator<Item = (String, f64)> + 'a {
    [q.kind.metric(), q.kind.sql_metric()]
        .into_iter()
        .filter_map(move |m| figure(m).map(|ms| (per_mvalue_metric(m), q.ms_per_mvalue(ms))))
}

/// Adds each query's time per million values of its scope to the rounds'
/// rows (from their median latencies).
pub fn add_per_mvalue(report: &mut BenchReport, queries: &[TsbsQuery]) {
    for row in &mut report.results {
        let extra: Vec<(String, f64)> = queries
            .iter()
            .flat_map(|q| per_mvalue(q, |m| row.get(m).and_then(Value::as_f64)).collect::<Vec<_>>())
            .collect();
        for (k, v) in extra {
            row.insert(k, json!(v));
        }
    }
}

/// Puts the large loads' figures into the report (module doc).
pub(super) fn add_scale_figures(report: &mut BenchReport, scale: &ScaleRun, facts: &RunFacts) {
    for (row, figures) in report.results.iter_mut().zip(&scale.figures) {
        let figure = |m: &str| figures.iter().find(|(k, _)| *k == m).map(|(_, v)| *v);
        for (m, v) in figures {
            row.insert(format!("{SCALE_PREFIX}{m}"), json!(v));
        }
        for q in &scale.queries {
            for (m, v) in per_mvalue(q, figure) {
                row.insert(format!("{SCALE_PREFIX}{m}"), json!(v));
            }
        }
        if let (Some(quick), Some(large)) =
            (row.get("rows_per_s").and_then(Value::as_f64), figure("rows_per_s"))
        {
            row.insert(RATIO_TO_QUICK.into(), json!(large / quick));
        }
    }
    add_to_fastest_peer(report, &peer_names(&facts.opts), SCALE_PREFIX);
    report
        .columns
        .extend(INGEST_COLUMNS.iter().map(|(k, _)| k.to_string()).filter(|k| k.starts_with(SCALE_PREFIX)));
    let spec = &scale.spec;
    report.config["scale"] = json!({
        "hosts": spec.hosts,
        "rows_per_host": spec.rows_per_host,
        "rows": spec.rows(),
        "values": spec.values(),
        "seed": spec.seed,
        "requests_per_load": scale.requests_per_load,
        "batch_lines": facts.opts.batch_lines,
        "loads_per_system": 1,
        "warmup": scale.warmup.as_ref().map(|w| json!({"hosts": w.hosts, "rows_per_host": w.rows_per_host, "rows": w.rows()})),
        "generation": "streamed, the rounds' loads too: one thread generates the bodies while the load runs, at most 2 per connection ahead (generating_s, scale_generating_s: its time spent generating, on the same cores, while the clock ran), so both sides of scale_ratio_to_quick pay for it alike",
        "order": "after the rounds, every variant once in the first round's order, each a fresh instance with the warm-up, then the counted load, flush, count, peak RSS, queries, size at rest",
        "figures": "scale_<metric>: the one large load's figure; scale_ratio_to_quick: scale_rows_per_s / the rounds' median rows_per_s; <query>_ms_per_mvalue: latency per million values of the query's scope (config.query_scope)",
        "queries": scale.queries.iter().map(|q| json!({"name": q.kind.name(), "influxql": q.influxql, "questdb_sql": q.sql, "strata_sql": q.pg_sql, "scope_values": q.scope_values})).collect::<Vec<_>>(),
        "query_answer_rows": scale.answer_rows.iter().map(|(q, rows, by)| json!({"query": q, "rows": rows, "reference": by})).collect::<Vec<_>>(),
        "checkpoints_during_loads": scale.checkpoints_during_load,
        "load_average_1m": {"start": scale.load_average_1m[0], "end": scale.load_average_1m[1]},
        "run_s": scale.run_time.as_secs_f64(),
    });
    report.notes.push(format!(
        "scale: after the rounds, one load per system of {} rows ({} hosts x {} rows every 10 s), streamed, after a warm-up of {} rows; the tables below set its figures beside the rounds' (quick) medians; ms/mvalue = query ms per million values of the query's scope (hosts x fields x rows of its window)",
        spec.rows(),
        spec.hosts,
        spec.rows_per_host,
        scale.warmup.as_ref().map_or(0, CpuSpec::rows),
    ));
    let mut notes = scale.notes.clone();
    notes.sort();
    notes.dedup();
    report.notes.extend(notes);
    if scale.checkpoints_during_load > 0 {
        report.notes.push(format!(
            "scale: {} checkpoints ran during the large loads (a log filled up): those loads include checkpoint time",
            scale.checkpoints_during_load
        ));
    }
}

/// A display-only report of `rows` with `columns`, rendered without notes.
pub(super) fn table(
    report: &BenchReport,
    title: &str,
    rows: Vec<Map<String, Value>>,
    columns: Vec<String>,
) -> String {
    let mut t = BenchReport::new(title, report.machine.clone(), Value::Null);
    t.results = rows;
    t.columns = columns;
    t.render_table()
}

/// Display rows of query figures: one per result row and language
/// (`<variant> influxql`, `<variant> sql`) that has any. `cells` gives, for
/// a row and a query's latency metric in that language, the columns it
/// fills (a value, or none). Columns come in first-seen order.
pub(super) fn rows_per_language(
    report: &BenchReport,
    cells: impl Fn(&Map<String, Value>, QueryKind, &'static str) -> Vec<(String, Option<Value>)>,
) -> (Vec<Map<String, Value>>, Vec<String>) {
    let (mut rows, mut columns) = (Vec::new(), Vec::<String>::new());
    for (language, metric_of) in
        [("influxql", QueryKind::metric as fn(QueryKind) -> &'static str), ("sql", QueryKind::sql_metric)]
    {
        for r in &report.results {
            let mut row = Map::new();
            for kind in QueryKind::ALL {
                for (column, value) in cells(r, kind, metric_of(kind)) {
                    if !columns.contains(&column) {
                        columns.push(column.clone());
                    }
                    if let Some(v) = value {
                        row.insert(column, v);
                    }
                }
            }
            if !row.is_empty() {
                let name = r.get("variant").and_then(Value::as_str).unwrap_or("?");
                row.insert("variant".into(), json!(format!("{name} {language}")));
                rows.push(row);
            }
        }
    }
    (rows, columns)
}

/// The ingest and query tables of a large run (empty otherwise).
pub fn render_scale_tables(report: &BenchReport) -> String {
    if report.config.get("scale").is_none_or(Value::is_null) {
        return String::new();
    }
    let ingest_rows = report
        .results
        .iter()
        .map(|r| {
            let mut row = Map::new();
            row.insert("variant".into(), r.get("variant").cloned().unwrap_or(Value::Null));
            for (from, to) in INGEST_COLUMNS {
                if let Some(v) = r.get(from) {
                    row.insert(to.into(), v.clone());
                }
            }
            row
        })
        .collect();
    let ingest_columns = INGEST_COLUMNS.iter().map(|(_, to)| to.to_string()).collect();
    let mut text = table(report, "ingest at scale", ingest_rows, ingest_columns);
    let (query_rows, query_columns) = rows_per_language(report, |r, kind, m| {
        let pm = per_mvalue_metric(m);
        [
            ("quick_ms", m.to_string()),
            ("scale_ms", format!("{SCALE_PREFIX}{m}")),
            ("quick_ms_per_mvalue", pm.clone()),
            ("scale_ms_per_mvalue", format!("{SCALE_PREFIX}{pm}")),
        ]
        .into_iter()
        .map(|(shown, from)| (format!("{}_{shown}", kind.name()), r.get(&from).cloned()))
        .collect()
    });
    if !query_rows.is_empty() {
        text.push_str(&table(report, "queries at scale", query_rows, query_columns));
    }
    text
}
