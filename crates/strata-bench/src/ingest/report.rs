//! The ingest benchmark's figures and report (DESIGN.md section 6): metric
//! names ending in their unit, the table's column order, the `config`
//! object that makes a run reproducible, and the notes printed under the
//! table.
//!
//! A *point* here is one field value with its timestamp, as in Gorilla
//! (16 raw bytes: 8 for the timestamp, 8 for the value); a *row* is one
//! line of line protocol holding ten points.

use std::time::Duration;

use serde_json::json;
use strata_engine::Protocol;
use strata_pmem::PmemMode;

use super::generator::{CpuSpec, FIELDS_PER_ROW, FIELD_NAMES, MEASUREMENT};
use super::http_loader::WRITE_PRECISION;
use super::load::{count_query, LoadOutcome};
use super::local_server::SERVER_WORKER_THREADS;
use super::peer_ratios::{add_to_fastest_peer, render_to_fastest_peer};
use super::queries::{QueryOutcome, TsbsQuery, RELATIVE_TOLERANCE};
use super::runner::{IngestOptions, StorageFacts, Variant};
use super::scale_report::{add_per_mvalue, is_scale_key, render_scale_tables};
use crate::machine::{fs_type, load_note, Machine};
use crate::measure::Samples;
use crate::peers::PeerKind;
use crate::report::BenchReport;

/// Metric name and value, as one load produced them.
pub(super) type Metrics = Vec<(&'static str, f64)>;

/// Raw size of one point: an 8-byte timestamp and an 8-byte value.
pub const RAW_BYTES_PER_POINT: u64 = 16;

/// Table and JSON column order.
pub const COLUMNS: [&str; 24] = [
    "rows_per_s",
    "values_per_s",
    "ratio_to_none",
    "latency_ms_p50",
    "latency_ms_p99",
    "disk_bytes_per_point",
    "disk_growth_bytes_per_point",
    "quiesce_s",
    "peak_rss_mib",
    "peak_rss_growth_mib",
    "single_groupby_ms",
    "double_groupby_ms",
    "max_all_8_ms",
    "lastpoint_ms",
    "high_cpu_all_ms",
    "bytes_per_point_ssd",
    "compression_ratio",
    "log_bytes_per_point",
    "checkpoints",
    "throttled_ms",
    "bytes_per_point_pmem",
    "fences_per_request",
    "lines_flushed_per_request",
    "media_blocks_per_request",
];

/// What counting the rows back after a load gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Counted {
    Rows(u64),
    /// The count query failed (the message says why).
    Failed(String),
}

impl Counted {
    /// Why this count does not verify a load of `expected` rows (`None`: it does).
    pub fn failure(&self, expected: u64) -> Option<String> {
        match self {
            Counted::Rows(n) if *n == expected => None,
            Counted::Rows(n) => Some(format!("counts {n} rows after the load, expected {expected}")),
            Counted::Failed(e) => Some(e.clone()),
        }
    }
}

/// One load's figures.
pub(super) struct VariantResult {
    pub metrics: Metrics,
    pub checkpoints_during_load: u64,
    pub counted: Counted,
    /// `--queries`: each query's answer and median latency (or error).
    pub queries: Vec<QueryOutcome>,
    /// What the figures of this load do not say by themselves (a peak RSS
    /// since the process started, or none).
    pub notes: Vec<String>,
}

/// Throughput and acknowledgement latency of one load.
pub(super) fn load_metrics(outcome: &LoadOutcome) -> Metrics {
    vec![
        ("rows_per_s", outcome.rows_per_s()),
        ("values_per_s", outcome.values_per_s()),
        ("latency_ms_p50", outcome.latency_ms(0.50)),
        ("latency_ms_p99", outcome.latency_ms(0.99)),
    ]
    .into_iter()
    .chain(outcome.generating.map(|g| ("generating_s", g.as_secs_f64())))
    .collect()
}

/// Sizes on SSD and PMem and persist counts of one load into a local Strata.
pub(super) fn storage_metrics(storage: &StorageFacts, outcome: &LoadOutcome) -> Metrics {
    let points = outcome.values().max(1) as f64;
    let requests = outcome.requests.max(1) as f64;
    let block_bytes = storage.block_file_bytes as f64;
    let log_bytes = if storage.protocol == Protocol::None { 0.0 } else { storage.log_bytes as f64 };
    let mut m: Metrics = Vec::new();
    m.extend([
        ("bytes_per_point_ssd", block_bytes / points),
        ("compression_ratio", points * RAW_BYTES_PER_POINT as f64 / block_bytes.max(1.0)),
        ("log_bytes_per_point", log_bytes / points),
        ("checkpoints", storage.checkpoints_during_load as f64),
        ("throttled_ms", storage.log_throttled_ns as f64 / 1e6),
    ]);
    if let Some(p) = storage.persist {
        m.extend([
            ("bytes_per_point_pmem", p.bytes_persisted as f64 / points),
            ("fences_per_request", p.fences as f64 / requests),
            ("lines_flushed_per_request", p.lines_flushed as f64 / requests),
            ("media_blocks_per_request", p.media_blocks_written as f64 / requests),
        ]);
    }
    m
}

/// What the report states besides the medians.
pub(super) struct RunFacts {
    pub opts: IngestOptions,
    /// The warm-up every fresh instance took: its data, database and
    /// measurement (`None`: no warm-up).
    pub warmup: Option<(CpuSpec, String, String)>,
    pub dataset_rows: u64,
    pub dataset_values: u64,
    pub body_bytes: u64,
    pub requests_per_load: u64,
    pub pmem_log_bytes: u64,
    pub declog_file_bytes: u64,
    pub load_average_1m: [Option<f64>; 2],
    /// Loads that started without an idle window before them
    /// ([`crate::settle`]: the machine stayed busy for its time limit).
    pub unsettled_loads: u32,
    pub checkpoints_during_load: u64,
    pub run_time: Duration,
    /// Loads whose rows were not all counted back, or whose query answers
    /// differ from the first system's (variant, round, why).
    pub verification_failures: Vec<String>,
    /// Queries a system could not run (not a failure of the run).
    pub query_errors: Vec<String>,
    /// `--queries`: the statements run.
    pub queries: Vec<TsbsQuery>,
    /// `--queries`: rows in each query's reference answer, and whose it is.
    pub query_answer_rows: Vec<(&'static str, usize, String)>,
    /// What single loads' figures do not say by themselves (a peak RSS not
    /// reset before its load, say).
    pub load_notes: Vec<String>,
}

fn mode(opts: &IngestOptions) -> &'static str {
    match (&opts.target, opts.in_process) {
        (Some(_), _) => "target",
        (None, true) => "in-process",
        (None, false) => "http",
    }
}

/// Names of the run's peers (their result rows' `variant`).
pub(super) fn peer_names(opts: &IngestOptions) -> Vec<&'static str> {
    opts.peers.iter().map(|p| p.name()).collect()
}

/// How `peak_rss_mib` is measured (a note, and `config.peak_rss`).
pub const PEAK_RSS_NOTE: &str = "peak RSS: VmHWM of the server process, reset (echo 5 > /proc/PID/clear_refs) after the warm-up and read after the load, its flush and the row count, before the queries (whose client runs in the benchmark process); peak rss growth: that peak less the resident size (VmRSS) at the reset; Strata's server runs inside the benchmark process, so its figure is that process's (the loader's bodies in flight, under the PMem protocols the touched pages of the mapped emulated PMem pool, and what the allocator kept from earlier loads included: its growth is the load's own share); each peer's is its own process's";

/// Result-row keys that hold text, not numbers (not shown as table columns).
pub const TEXT_KEYS: [&str; 2] = ["peer_version", "durability"];

/// What a 204 from the Strata server means under `protocol`.
pub fn strata_durability(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::None => "not durable: no commit log, only checkpoints persist",
        Protocol::SerialPmem => {
            "log record flushed and fenced on emulated PMem before the 204 (a tmpfs file: survives a process crash, not power loss)"
        }
        Protocol::SerialSsd => "log record fdatasynced (group commit) before the 204",
        Protocol::DeclogPmem => {
            "DecLog entries flushed and fenced on emulated PMem before the 204 (a tmpfs file: survives a process crash, not power loss)"
        }
        Protocol::DeclogSsd => "DecLog entries in a file on the SSD, msynced before the 204",
    }
}

/// `peer_version` and `durability` of one variant.
fn variant_text(v: &Variant) -> (String, String) {
    let strata = || format!("strata {} (this build)", env!("CARGO_PKG_VERSION"));
    match v {
        Variant::Local(p) => (strata(), strata_durability(*p).to_string()),
        Variant::Remote { .. } => ("unknown".into(), "the target server's own setting".into()),
        Variant::Peer(i) => (
            format!(
                "{} {}{}",
                i.kind,
                i.version,
                i.runtime.as_deref().map(|r| format!(" on {r}")).unwrap_or_default()
            ),
            i.kind.durability().to_string(),
        ),
    }
}

/// The quiesce step of each peer, for the report.
pub fn quiesce_text(kind: PeerKind) -> &'static str {
    match kind {
        PeerKind::InfluxDb => "wait until the WAL segments were snapshotted to TSM (cache-snapshot-write-cold-duration 1s), then until the data directory size held still for 1.5 s",
        PeerKind::VictoriaMetrics => "GET /internal/force_flush, then wait until the data directory size held still for 1.5 s",
        PeerKind::QuestDb => "wait until select count() sees every row (WAL applied), then until the data directory size held still for 1.5 s",
    }
}

/// Prints the table without the text columns, then each variant's version and durability.
pub fn print_table(report: &BenchReport) {
    let mut shown = report.clone();
    for row in &mut shown.results {
        for k in TEXT_KEYS {
            row.remove(k);
        }
        row.retain(|k, _| !is_scale_key(k));
    }
    let mut text = shown.render_table();
    for row in &report.results {
        let get = |k: &str| row.get(k).and_then(|v| v.as_str()).unwrap_or("?").to_string();
        text.push_str(&format!(
            "  * {}: {}; durability: {}\n",
            get("variant"),
            get("peer_version"),
            get("durability")
        ));
    }
    text.push_str(&render_scale_tables(report));
    text.push_str(&render_to_fastest_peer(report));
    print!("{text}");
}

pub(super) fn build_report(facts: &RunFacts, variants: &[Variant], samples: &[Samples]) -> BenchReport {
    let opts = &facts.opts;
    let local = opts.target.is_none();
    let pmem_fs = fs_type(&opts.dirs.pmem_dir);
    let disk_fs = fs_type(&opts.dirs.disk_dir);
    let detail = if local {
        format!(
            "mapped file in {} ({}); no real PMem",
            opts.dirs.pmem_dir.display(),
            pmem_fs.as_deref().unwrap_or("unknown fs")
        )
    } else {
        "not used: remote target".to_string()
    };
    let machine = Machine::detect(PmemMode::Emulated, detail, strata_pmem::detected_flush_instruction());
    let spec = opts.spec();
    let mut config = json!({
        "mode": mode(opts),
        "target": opts.target,
        "db": opts.db,
        "generator": {
            "kind": "tsbs-cpu-only",
            "measurement": MEASUREMENT,
            "seed": spec.seed,
            "hosts": spec.hosts,
            "rows_per_host": spec.rows_per_host,
            "interval_s": spec.interval_ns / 1_000_000_000,
            "start_ns": spec.start_ns,
            "tags_per_row": 10,
            "fields": FIELD_NAMES,
            "value_model": "bounded random walk in [0, 100], steps uniform in [-1, 1], two decimals",
        },
        "rows": facts.dataset_rows,
        "values": facts.dataset_values,
        "line_protocol_bytes": facts.body_bytes,
        "batch_lines": opts.batch_lines,
        "requests_per_load": facts.requests_per_load,
        "connections": opts.connections,
        "rounds": opts.rounds,
        "order": "interleaved: every round loads every variant once, in the same order (A B C A B C ...), each into a fresh database",
        "statistic": "median over rounds; ratio_to_none is the median of per-round ratios of rows/s to the none variant",
        "write_precision": WRITE_PRECISION,
        "verification": format!("`{}` (peers: the same count in their own language, see peers.count) must return every row after each load", count_query()),
        "point": format!("one field value with its timestamp ({RAW_BYTES_PER_POINT} raw bytes); a row holds {FIELDS_PER_ROW}"),
        "load_average_1m": {"start": facts.load_average_1m[0], "end": facts.load_average_1m[1]},
        "run_s": facts.run_time.as_secs_f64(),
    });
    config["warmup"] = match &facts.warmup {
        Some((spec, db, measurement)) => json!({
            "every_system": true,
            "rows": spec.rows(),
            "hosts": spec.hosts,
            "rows_per_host": spec.rows_per_host,
            "db": db,
            "measurement": measurement,
            "what": "before its counted load, every fresh instance (each Strata variant's new engine and server, each peer's new process) loads these rows into another database and measurement, untimed and uncounted; then the counted load goes into a fresh database as new series",
        }),
        None => json!(null),
    };
    if local {
        config["protocols"] = json!(opts.protocols.iter().map(|p| p.name()).collect::<Vec<_>>());
        config["pmem_dir"] = json!(opts.dirs.pmem_dir);
        config["pmem_fs_type"] = json!(pmem_fs);
        config["ssd_dir"] = json!(opts.dirs.disk_dir);
        config["ssd_fs_type"] = json!(disk_fs);
        config["pmem_log_bytes"] = json!(facts.pmem_log_bytes);
        config["declog_file_bytes"] = json!(facts.declog_file_bytes);
        config["checkpoints_during_loads"] = json!(facts.checkpoints_during_load);
        if !opts.in_process {
            config["server_worker_threads"] = json!(SERVER_WORKER_THREADS);
        }
    }
    let peers: Vec<_> = variants
        .iter()
        .filter_map(|v| match v {
            Variant::Peer(i) => Some(json!({
                "name": i.kind.name(),
                "version": i.version,
                "runtime": i.runtime,
                "source": i.kind.source(),
                "durability": i.kind.durability(),
                "quiesce": quiesce_text(i.kind),
            })),
            _ => None,
        })
        .collect();
    if !peers.is_empty() {
        config["peers"] = json!(peers);
        config["peer_dir"] = json!(opts.dirs.disk_dir);
        config["disk_bytes"] = json!(disk_note(facts.warmup.is_some()));
    }
    config["verification_failures"] = json!(facts.verification_failures);
    config["peak_rss"] = json!(PEAK_RSS_NOTE);
    if !facts.queries.is_empty() {
        config["queries"] = json!(facts
            .queries
            .iter()
            .map(|q| {
                json!({
                    "name": q.kind.name(),
                    "metric": q.kind.metric(),
                    "sql_metric": q.kind.sql_metric(),
                    "sql_ratio_metric": q.kind.sql_ratio_metric(),
                    "influxql": q.influxql,
                    "questdb_sql": q.sql,
                    "strata_sql": q.pg_sql,
                    "scope_values": q.scope_values,
                })
            })
            .collect::<Vec<_>>());
        config["query_runs"] = json!(opts.query_runs);
        config["query_latency"] = json!("client wall time of one request (connect excluded), median of query_runs runs after one untimed run, then median over rounds");
        config["query_answers"] = json!(format!(
            "compared with the first system's answer per query, relative tolerance {RELATIVE_TOLERANCE}"
        ));
        config["query_errors"] = json!(facts.query_errors);
        config["query_scope"] = json!("<query>_ms_per_mvalue: median latency / (values in the query's scope / 10^6); scope = hosts the query names x fields it names x rows per host in its time window (lastpoint: every row), what a full scan would read, not what a system actually reads");
        config["query_answer_rows"] = json!(facts
            .query_answer_rows
            .iter()
            .map(|(q, rows, by)| json!({"query": q, "rows": rows, "reference": by}))
            .collect::<Vec<_>>());
    }
    let mut report = BenchReport::new("ingest", machine, config);
    report.results = variants
        .iter()
        .zip(samples)
        .map(|(v, s)| {
            let mut row = s.median_row(&v.name());
            let (version, durability) = variant_text(v);
            row.insert("peer_version".into(), json!(version));
            row.insert("durability".into(), json!(durability));
            row
        })
        .collect();
    report.columns = COLUMNS.iter().map(|c| c.to_string()).collect();
    add_per_mvalue(&mut report, &facts.queries);
    add_to_fastest_peer(&mut report, &peer_names(opts), "");
    report.notes = notes(facts, local);
    report
}

/// How the disk figures are measured (a note, and `config.disk_bytes`).
fn disk_note(warmed: bool) -> String {
    let mut note = String::from(
        "disk bytes/point: allocated bytes (st_blocks x 512, as du counts) of the data directory at rest, after the load, its flush (Strata: a checkpoint; the PMem pool and declog-pmem file are not in the directory; peers: the quiesce step) and a clean close / points",
    );
    if warmed {
        note.push_str(
            ", less the warm-up's share: InfluxDB's warm-up database directories (data/, wal/) and QuestDB's warm-up table directory, measured at rest; for Strata and VictoriaMetrics, which keep every database in shared files, what the directory grew by during the warm-up and its flush (the size measured after it, before the counted load, minus the fresh instance's); growth: while running, after the load's flush minus the size after the warm-up",
        );
    } else {
        note.push_str("; growth: while running, after the flush minus right after start");
    }
    note
}

fn notes(facts: &RunFacts, local: bool) -> Vec<String> {
    let opts = &facts.opts;
    let loads = facts.load_average_1m;
    let mut notes = vec![
        load_note(loads, None, "other work was running, so absolute figures are noise; compare ratios"),
        format!(
            "{} rows ({} hosts x {} rows every 10 s, 10 float fields) in {} requests of {} lines over {} connections; medians of {} interleaved rounds (the first in this order, each later one a seeded shuffle, so no variant always follows the same one)",
            facts.dataset_rows,
            opts.hosts,
            opts.rows_per_host,
            facts.requests_per_load,
            opts.batch_lines,
            opts.connections,
            opts.rounds
        ),
        "latency: one request from send to acknowledgement (204 after the commit is durable)".into(),
        format!(
            "before every load: sync, then a wait for a {} ms window with the CPUs {:.0} % idle (at most {} s){}",
            crate::settle::SETTLE_WINDOW.as_millis(),
            crate::settle::SETTLED_IDLE_FRACTION * 100.0,
            crate::settle::SETTLE_LIMIT.as_secs(),
            match facts.unsettled_loads {
                0 => String::new(),
                n => format!("; {n} loads started without one"),
            }
        ),
    ];
    if local {
        notes.push(format!(
            "{}; every load into a fresh database, every row counted back",
            opts.dirs.describe()
        ));
        notes.push(match &facts.warmup {
            Some((spec, db, measurement)) => format!(
                "warm-up: every system was warmed: each fresh instance (every Strata variant's new engine{}, every peer's new process) first loaded {} uncounted rows ({} hosts x {}) into database `{db}` as measurement `{measurement}` (new series everywhere; a table of its own on QuestDB, new metric names on VictoriaMetrics), then the counted load went into the fresh database `{}`; every figure is of the counted load only",
                if opts.in_process { "" } else { " and server" },
                spec.rows(),
                spec.hosts,
                spec.rows_per_host,
                opts.db
            ),
            None => "no warm-up: every load is a fresh instance's cold start".into(),
        });
        notes.extend([
            "point = one value + timestamp (16 raw bytes); bytes/point ssd = block-file bytes the load's checkpoint wrote / points; compression ratio = 16 / that".into(),
            "log bytes/point: commit-log bytes written (serial-pmem: PMem ring, serial-ssd: WAL file; none writes no log); pmem counts per request are of the emulated PMem pool".into(),
            disk_note(facts.warmup.is_some()),
        ]);
        if opts.queries {
            notes.push(format!(
                "query ms: TSBS cpu-only style queries after each load; <query>_ms is InfluxQL on /query (Strata, InfluxDB), <query>_sql_ms is SQL (Strata: its SQL over the PostgreSQL protocol, a tokio-postgres simple query; QuestDB: its SQL on /exec), <query>_sql_to_influxql is Strata's SQL over InfluxQL latency (median of per-round ratios; the two alternate query by query); VictoriaMetrics: not queried; median of {} runs, client wall time; every answer compared with the first system's (rows per answer: {})",
                opts.query_runs,
                facts.query_answer_rows.iter().map(|(q, n, _)| format!("{q} {n}")).collect::<Vec<_>>().join(", ")
            ));
        }
        notes.push(PEAK_RSS_NOTE.into());
        let mut load_notes = facts.load_notes.clone();
        load_notes.sort();
        load_notes.dedup();
        notes.extend(load_notes);
        if !opts.peers.is_empty() {
            notes.push("peers: a fresh instance per load on 127.0.0.1, same batches, connections and /write?precision=n as Strata; Strata's server runs inside the benchmark process, peers in their own".into());
        }
        if facts.checkpoints_during_load > 0 {
            notes.push(format!(
                "{} checkpoints ran during loads (the PMem ring or DecLog file filled up): those loads include checkpoint time",
                facts.checkpoints_during_load
            ));
        }
    } else {
        notes.push(format!(
            "target {} database {}: its durability setting is the server's own; no warm-up (not a fresh instance of ours)",
            opts.target.as_deref().unwrap_or("?"),
            opts.db
        ));
    }
    notes
}
