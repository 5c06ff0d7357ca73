//! `strata bench logging` (issue 6, item 4): Strata's log devices against
//! the logging of the peers a user would pick instead (DESIGN.md section 6),
//! at the same record size, on a disk file system (ext4) and on tmpfs:
//! durable commits per second and commit latency p50/p99.
//!
//! Systems ([`System`]): Strata's SSD log (group commit, `fdatasync`) on
//! both media; Strata's serial PMem log on an emulated PMem region (a mapped
//! file on tmpfs); RocksDB `db_bench fillrandom --sync=1` with the WAL on the
//! same medium; SQLite in WAL mode with `synchronous=FULL` and `=NORMAL`, one
//! row per transaction. Each runs with every thread count of `threads`.
//!
//! Every round runs every variant once, in the same order (A B C A B C ...):
//! in-process systems for one fixed window, `db_bench` for a fixed number of
//! writes sized from its previous rate to last about a window. Figures are
//! medians over rounds; `ratio_to_strata_ssd` is the median of per-round
//! ratios to Strata's SSD log on the same medium with the same threads.
//! One untimed warm-up round (quarter windows) comes first.

mod media;
pub mod record;
pub mod rocksdb;
pub mod sqlite;
pub mod strata;
pub mod system;
pub mod table;
mod window;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use strata_pmem::{PmemMode, Region};

use crate::machine::{load_average_1m, load_note, Machine};
use crate::measure::Samples;
use crate::persist::default_disk_dir;
use crate::report::BenchReport;
use media::{remove_window_dir, Medium};
use rocksdb::{DbBench, DbBenchRun};
use sqlite::SqliteSync;
pub use system::System;
pub use window::WindowOutcome;

/// Default value bytes: db_bench's default `--value_size`.
pub const DEFAULT_VALUE_BYTES: u64 = 100;
/// Largest `--value-bytes` (a record must stay far below every system's limits).
pub const MAX_VALUE_BYTES: u64 = 1 << 20;

/// Table and JSON column order.
pub const COLUMNS: [&str; 10] = [
    "system",
    "medium",
    "threads",
    "throughput_commits_per_s",
    "latency_us_p50",
    "latency_us_p99",
    "ratio_to_strata_ssd",
    "group_commit_across_threads",
    "survives",
    "durable_on_power_loss",
];

/// How long and how big the benchmark runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggingBudget {
    /// Timed rounds (each runs every variant once).
    pub rounds: u32,
    /// Window of each in-process variant per round (and db_bench's target).
    pub window: Duration,
    /// Data capacity of the serial PMem log's ring (emptied before every window).
    pub pmem_log_capacity_bytes: u64,
    /// Space each SSD log segment reserves up front.
    pub ssd_preallocate_bytes: u64,
    /// db_bench writes per thread in the warm-up (before any rate is known).
    pub rocksdb_first_writes_per_thread: u64,
    /// Bounds of db_bench writes per thread in a round.
    pub rocksdb_min_writes_per_thread: u64,
    pub rocksdb_max_writes_per_thread: u64,
}

impl LoggingBudget {
    /// The default run: 7 rounds of 1 s windows, a few minutes.
    pub fn full() -> LoggingBudget {
        LoggingBudget {
            rounds: 7,
            window: Duration::from_secs(1),
            pmem_log_capacity_bytes: 64 << 20,
            ssd_preallocate_bytes: 64 << 20,
            rocksdb_first_writes_per_thread: 200,
            rocksdb_min_writes_per_thread: 100,
            rocksdb_max_writes_per_thread: 2_000_000,
        }
    }

    /// `--quick`: 5 rounds of 400 ms windows, about a minute.
    pub fn quick() -> LoggingBudget {
        LoggingBudget { rounds: 5, window: Duration::from_millis(400), ..LoggingBudget::full() }
    }

    /// For tests: well under a second per system, figures meaningless.
    pub fn tiny() -> LoggingBudget {
        LoggingBudget {
            rounds: 1,
            window: Duration::from_millis(20),
            pmem_log_capacity_bytes: 16 << 20,
            ssd_preallocate_bytes: 1 << 20,
            rocksdb_first_writes_per_thread: 20,
            rocksdb_min_writes_per_thread: 20,
            rocksdb_max_writes_per_thread: 2_000,
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.rounds >= 1, "at least one round");
        anyhow::ensure!(!self.window.is_zero(), "the window must be longer than zero");
        anyhow::ensure!(
            self.pmem_log_capacity_bytes >= 1 << 20 && self.pmem_log_capacity_bytes.is_multiple_of(256),
            "the PMem log capacity must be a multiple of 256 bytes, at least 1 MiB"
        );
        anyhow::ensure!(
            self.rocksdb_min_writes_per_thread >= 1
                && self.rocksdb_min_writes_per_thread <= self.rocksdb_max_writes_per_thread,
            "db_bench writes per thread: 1 <= min <= max"
        );
        Ok(())
    }
}

/// Options of [`run_logging_bench`].
#[derive(Clone, Debug)]
pub struct LoggingOptions {
    /// Where to write the JSON report, if anywhere.
    pub json_path: Option<PathBuf>,
    /// Use [`LoggingBudget::quick`] (ignored when `budget` is set).
    pub quick: bool,
    /// Explicit budget; `None`: full or quick.
    pub budget: Option<LoggingBudget>,
    /// A tmpfs directory (default `/dev/shm`).
    pub tmpfs_dir: PathBuf,
    /// A directory on a disk file system (default: [`default_disk_dir`]).
    pub ext4_dir: PathBuf,
    /// Value bytes of every record (the key is 16 bytes).
    pub value_bytes: u64,
    /// Committer thread counts, each run for every system.
    pub threads: Vec<usize>,
    /// Systems, in round order.
    pub systems: Vec<System>,
    /// Whether the systems were listed explicitly: then a missing `db_bench`
    /// is an error instead of a skipped peer.
    pub systems_required: bool,
    /// Install `rocksdb-tools` with apt-get when `db_bench` is missing (root).
    pub install: bool,
    /// Print progress (stderr) and the table (stdout).
    pub print: bool,
}

impl Default for LoggingOptions {
    fn default() -> Self {
        LoggingOptions {
            json_path: None,
            quick: false,
            budget: None,
            tmpfs_dir: PathBuf::from("/dev/shm"),
            ext4_dir: default_disk_dir(),
            value_bytes: DEFAULT_VALUE_BYTES,
            threads: vec![1, 2],
            systems: System::ALL.to_vec(),
            systems_required: false,
            install: true,
            print: true,
        }
    }
}

struct Variant {
    system: System,
    medium: usize,
    threads: usize,
    samples: Samples,
    /// db_bench's last commits/s, to size its next run.
    last_rate: Option<f64>,
}

impl Variant {
    fn name(&self, media: &[Medium]) -> String {
        format!("{}/{}/{}t", self.system.name(), media[self.medium].label, self.threads)
    }
}

/// Everything a round needs besides the variants.
struct Context<'a> {
    budget: &'a LoggingBudget,
    value: Vec<u8>,
    db_bench: Option<&'a DbBench>,
    /// db_bench saw "Assertions are enabled" in some run.
    rocksdb_assertions: bool,
}

/// Metrics of one run of one variant: commits/s, p50 and p99 in µs.
fn run_variant(
    v: &mut Variant,
    media: &mut [Medium],
    ctx: &mut Context<'_>,
    scale: u32,
    round: u32,
) -> anyhow::Result<[f64; 3]> {
    let window = ctx.budget.window / scale;
    let m = &mut media[v.medium];
    let outcome = match v.system {
        System::StrataSsd => {
            let dir = m.window_dir("strata-ssd")?;
            let o =
                strata::ssd_window(&dir, v.threads, window, &ctx.value, ctx.budget.ssd_preallocate_bytes)?;
            remove_window_dir(&dir)?;
            o
        }
        System::StrataPmem => {
            let pmem = m.pmem.as_ref().ok_or_else(|| anyhow::anyhow!("no PMem region on {}", m.label))?;
            pmem.window(v.threads, window, &ctx.value)?
        }
        System::SqliteFull | System::SqliteNormal => {
            let sync = if v.system == System::SqliteFull { SqliteSync::Full } else { SqliteSync::Normal };
            let dir = m.window_dir(v.system.name())?;
            let o = sqlite::sqlite_window(&dir.join("bench.db"), sync, v.threads, window, &ctx.value)?;
            remove_window_dir(&dir)?;
            o
        }
        System::RocksDb => {
            let db_bench = ctx.db_bench.ok_or_else(|| anyhow::anyhow!("db_bench is not available"))?;
            let writes_per_thread = match v.last_rate {
                None => ctx.budget.rocksdb_first_writes_per_thread,
                Some(rate) => ((rate * window.as_secs_f64() / v.threads as f64) as u64).clamp(
                    ctx.budget.rocksdb_min_writes_per_thread,
                    ctx.budget.rocksdb_max_writes_per_thread,
                ),
            };
            let dir = m.window_dir("rocksdb")?;
            let run = DbBenchRun {
                dir: &dir.join("db"),
                threads: v.threads,
                writes_per_thread,
                value_bytes: ctx.value.len() as u64,
                seed: 1 + u64::from(round),
            };
            let (f, _wall_s) = rocksdb::run_db_bench(db_bench, &run)?;
            remove_window_dir(&dir)?;
            v.last_rate = Some(f.ops_per_s);
            ctx.rocksdb_assertions |= f.assertions_enabled;
            return Ok([f.ops_per_s, f.latency_us_p50, f.latency_us_p99]);
        }
    };
    Ok([outcome.commits_per_s(), outcome.latency_us(0.50), outcome.latency_us(0.99)])
}

fn check_options(opts: &LoggingOptions) -> anyhow::Result<()> {
    anyhow::ensure!(
        (1..=MAX_VALUE_BYTES).contains(&opts.value_bytes),
        "--value-bytes must be 1..={MAX_VALUE_BYTES}, not {}",
        opts.value_bytes
    );
    anyhow::ensure!(!opts.threads.is_empty(), "at least one thread count");
    anyhow::ensure!(opts.threads.iter().all(|&t| (1..=64).contains(&t)), "thread counts must be 1..=64");
    let mut distinct = opts.threads.clone();
    distinct.sort_unstable();
    distinct.dedup();
    anyhow::ensure!(distinct.len() == opts.threads.len(), "thread counts listed twice: {:?}", opts.threads);
    anyhow::ensure!(!opts.systems.is_empty(), "at least one system");
    BenchReport::check_json_path(opts.json_path.as_deref())?;
    Ok(())
}

/// Runs the logging benchmark, prints its table (if `print`), writes its
/// JSON (if `json_path`) and returns the report.
pub fn run_logging_bench(opts: &LoggingOptions) -> anyhow::Result<BenchReport> {
    check_options(opts)?;
    let load_at_start = load_average_1m();
    let budget = opts.budget.clone().unwrap_or_else(|| {
        if opts.quick {
            LoggingBudget::quick()
        } else {
            LoggingBudget::full()
        }
    });
    budget.check()?;
    let mut systems = opts.systems.clone();
    let mut skipped = Vec::new();
    let db_bench = if systems.contains(&System::RocksDb) {
        match rocksdb::ensure_db_bench(opts.install) {
            Ok(d) => Some(d),
            Err(e) if !opts.systems_required => {
                if opts.print {
                    eprintln!("logging bench: skipping RocksDB: {e:#}");
                }
                skipped.push(format!("rocksdb skipped: {e:#}"));
                systems.retain(|s| *s != System::RocksDb);
                None
            }
            Err(e) => return Err(e),
        }
    } else {
        None
    };

    let pmem_capacity = systems.contains(&System::StrataPmem).then_some(budget.pmem_log_capacity_bytes);
    let mut media = vec![
        Medium::open("ext4", &opts.ext4_dir, None)?,
        Medium::open("tmpfs", &opts.tmpfs_dir, pmem_capacity)?,
    ];
    if media[0].label == media[1].label {
        media[0].label = format!("{}-disk", media[0].label);
        media[1].label = format!("{}-mem", media[1].label);
    }
    for m in &media {
        if opts.print && m.fs_type != m.role {
            eprintln!("logging bench: warning: {} is on {}, not {}", m.dir.display(), m.fs_type, m.role);
        }
    }

    let mut variants = Vec::new();
    for &threads in &opts.threads {
        for (medium, m) in media.iter().enumerate() {
            for &system in &systems {
                // The PMem log lives on the emulated region, on the tmpfs medium only.
                if system == System::StrataPmem && m.pmem.is_none() {
                    continue;
                }
                variants.push(Variant {
                    system,
                    medium,
                    threads,
                    samples: Samples::default(),
                    last_rate: None,
                });
            }
        }
    }

    let mut ctx = Context {
        budget: &budget,
        value: record::value_of(opts.value_bytes as usize),
        db_bench: db_bench.as_ref(),
        rocksdb_assertions: false,
    };
    if opts.print {
        eprintln!("logging bench: warm-up, then {} rounds of {} variants", budget.rounds, variants.len());
    }
    for v in &mut variants {
        run_variant(v, &mut media, &mut ctx, 4, 0)?;
    }
    for round in 0..budget.rounds {
        if opts.print {
            eprintln!("logging bench: round {}/{}", round + 1, budget.rounds);
        }
        let mut rates = Vec::with_capacity(variants.len());
        for v in &mut variants {
            let [rate, p50, p99] = run_variant(v, &mut media, &mut ctx, 1, round + 1)?;
            v.samples.push("throughput_commits_per_s", rate);
            v.samples.push("latency_us_p50", p50);
            v.samples.push("latency_us_p99", p99);
            rates.push(rate);
        }
        for i in 0..variants.len() {
            let (medium, threads) = (variants[i].medium, variants[i].threads);
            let base = variants
                .iter()
                .position(|b| b.system == System::StrataSsd && b.medium == medium && b.threads == threads);
            if let Some(b) = base {
                variants[i].samples.push("ratio_to_strata_ssd", rates[i] / rates[b]);
            }
        }
    }

    let loads = [load_at_start, load_average_1m()];
    let report = build_report(opts, &budget, &media, &variants, &ctx, db_bench.as_ref(), loads, skipped)?;
    if opts.print {
        print!("{}", table::render(&report));
    }
    if let Some(path) = &opts.json_path {
        report.write_json(path)?;
        if opts.print {
            eprintln!("logging bench: wrote {}", path.display());
        }
    }
    Ok(report)
}

/// The `db_bench` command line of the report, N, T, DIR and ROUND standing for the values of each run.
pub fn db_bench_command_template(value_bytes: u64) -> String {
    let run = DbBenchRun {
        dir: Path::new("<dir on the medium>"),
        threads: 0,
        writes_per_thread: 0,
        value_bytes,
        seed: 0,
    };
    let args = rocksdb::db_bench_args(&run)
        .into_iter()
        .map(|a| match a.split_once('=') {
            Some(("--num", _)) => "--num=<writes per thread>".to_string(),
            Some(("--threads", _)) => "--threads=<T>".to_string(),
            Some(("--seed", _)) => "--seed=<round>".to_string(),
            _ => a,
        })
        .collect::<Vec<_>>();
    format!("db_bench {}", args.join(" "))
}

#[allow(clippy::too_many_arguments)]
fn build_report(
    opts: &LoggingOptions,
    budget: &LoggingBudget,
    media: &[Medium],
    variants: &[Variant],
    ctx: &Context<'_>,
    db_bench: Option<&DbBench>,
    loads: [Option<f64>; 2],
    skipped: Vec<String>,
) -> anyhow::Result<BenchReport> {
    let tmpfs = &media[1];
    let detail = format!("mapped file on {} {}; no real PMem", tmpfs.fs_type, tmpfs.dir.display());
    let flush = match &tmpfs.pmem {
        Some(p) => p.flush_instruction(),
        None => Region::anonymous(4096)?.flush_instruction(),
    };
    let machine = Machine::detect(PmemMode::Emulated, detail, flush);
    let payload_bytes = record::KEY_BYTES as u64 + opts.value_bytes;
    let systems: Vec<Value> = variants
        .iter()
        .map(|v| v.system)
        .fold(Vec::new(), |mut acc: Vec<System>, s| {
            if !acc.contains(&s) {
                acc.push(s);
            }
            acc
        })
        .into_iter()
        .map(|s| {
            json!({
                "system": s.name(),
                "durability": s.durability_setting(),
                "group_commit_across_threads": s.group_commit(),
            })
        })
        .collect();
    let config = json!({
        "rounds": budget.rounds,
        "warmup_rounds": 1,
        "window_ms": budget.window.as_secs_f64() * 1e3,
        "order": "interleaved: every round runs every variant once, in the same order (A B C A B C ...)",
        "statistic": "median over rounds; ratio_to_strata_ssd is the median of per-round ratios to strata-ssd on the same medium with the same threads",
        "key_bytes": record::KEY_BYTES,
        "value_bytes": opts.value_bytes,
        "strata_payload_bytes": payload_bytes,
        "strata_record_bytes": strata_log::record::record_len(payload_bytes),
        "threads": opts.threads,
        "systems": systems,
        "media": media.iter().map(|m| json!({"label": m.label, "dir": m.dir, "fs_type": m.fs_type})).collect::<Vec<_>>(),
        "versions": {
            "strata": env!("CARGO_PKG_VERSION"),
            "rocksdb": db_bench.map(|d| d.version.clone()),
            "sqlite": sqlite::sqlite_version(),
        },
        "strata_ssd": {
            "max_batch_bytes": strata::SSD_MAX_BATCH_BYTES,
            "max_wait_us": 0,
            "preallocate_bytes": budget.ssd_preallocate_bytes,
            "fresh log per window": true,
        },
        "strata_pmem": {
            "region": "emulated: shared mapping of a file on tmpfs; flush = real write-back instruction per line, fence = sfence, no injected delay",
            "align_bytes": strata::PMEM_ALIGN_BYTES,
            "ring_capacity_bytes": budget.pmem_log_capacity_bytes,
            "ring_truncations_when_full": tmpfs.pmem.as_ref().map(|p| p.truncations()),
        },
        "rocksdb": {
            "command": db_bench_command_template(opts.value_bytes),
            "writes_per_thread": "sized from the previous run's rate to last about one window; fresh database per run",
            "assertions_enabled_build": ctx.rocksdb_assertions,
            "timing": "db_bench's own timer and 'Microseconds per write' histogram (open and close not timed)",
        },
        "sqlite": {
            "statements": "BEGIN IMMEDIATE; INSERT INTO kv (key, value) VALUES (?1, ?2); COMMIT",
            "schema": "CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB NOT NULL)",
            "journal_mode": "WAL",
            "wal_autocheckpoint_pages": 1000,
            "connections": "one per thread; busy handler retries at once (yield, then 20 us sleeps)",
            "fresh database per window": true,
        },
        "load_average_1m": {"start": loads[0], "end": loads[1]},
        "skipped": skipped,
    });
    let mut report = BenchReport::new("logging", machine, config);
    report.columns = COLUMNS.iter().map(|c| c.to_string()).collect();
    report.results = variants
        .iter()
        .map(|v| {
            let m = &media[v.medium];
            let mut row = v.samples.median_row(&v.name(media));
            row.insert("system".into(), v.system.name().into());
            row.insert("medium".into(), m.label.clone().into());
            row.insert("threads".into(), (v.threads as u64).into());
            row.insert("group_commit_across_threads".into(), v.system.group_commit().into());
            let survives = v.system.survives(&m.fs_type);
            row.insert("survives".into(), survives.into());
            row.insert("durable_on_power_loss".into(), (survives == "power loss").into());
            row
        })
        .collect();
    report.notes = notes(budget, &report, loads, ctx.rocksdb_assertions);
    Ok(report)
}

fn notes(
    budget: &LoggingBudget,
    report: &BenchReport,
    loads: [Option<f64>; 2],
    asserts: bool,
) -> Vec<String> {
    let mut notes = vec![
        load_note(
            loads,
            Some(report.machine.cores),
            "other work was running, so absolute figures (fsync above all) are noise",
        ),
        format!(
            "medians of {} interleaved rounds of {} ms; ratio = commits/s over strata-ssd's, same medium, same threads, same round",
            budget.rounds,
            budget.window.as_millis()
        ),
        "survives: what an acknowledged commit survives. Nothing on tmpfs survives a power loss; sqlite-normal syncs its WAL only at checkpoints; strata-pmem runs on an emulated region (a mapped file on tmpfs), power-safe only on real PMem (dax)".into(),
        "group commit: strata-ssd and rocksdb share one sync among concurrent committers; sqlite writers take turns (one WAL write lock); strata-pmem's serial log has one mutex around its flushes and fences".into(),
        "rocksdb: db_bench's own timer and histogram (p50/p99 interpolated in its buckets); a process per run, open and close not timed".into(),
    ];
    if asserts {
        notes.push(
            "rocksdb: this db_bench build warns \"Assertions are enabled; benchmarks unnecessarily slow\" (Debian's build)"
                .into(),
        );
    }
    notes
}
