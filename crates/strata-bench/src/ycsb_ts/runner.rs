//! `strata bench ycsb-ts` (DecLog sections 5.2-5.3, issue 4): rounds over
//! the variants (A B C A B C ...). Per variant and round, two crash runs in
//! child processes, each on fresh directories:
//! 1. the *measured* run, in the variant's own configuration, with one
//!    checkpoint after [`YcsbTsOptions::checkpoint_at_fraction`] of the
//!    transactions when the variant allows checkpoints; its figures are the
//!    throughput, latency and persist counts, its recovery is
//!    `recovery_with_checkpoint_s`;
//! 2. the same workload with checkpoints disabled; its recovery is
//!    `recovery_s` (everything since the start is replayed).
//!
//! Reported: medians over rounds, ratios to `none` and `serial-pmem` taken
//! within each round, the latency CDF of the last round.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{json, Map, Value};
use strata_pmem::PmemMode;
use tempfile::TempDir;

use super::job::{mix_name, ChildJob};
use super::model::OPS_PER_TXN;
use super::paper;
use super::recovery::{crash_and_recover, ChildCommand, CrashRun};
use super::report::{self, Metrics};
use super::spec::{MixUnit, Workload};
use super::variants::Variant;
use crate::ingest::BenchDirs;
use crate::machine::{fs_type, load_average_1m, load_note, Machine};
use crate::measure::Samples;
use crate::report::BenchReport;

/// Log bytes budgeted per written value (entry with its key, uncompressed).
pub const LOG_BYTES_PER_VALUE_ESTIMATE: u64 = 192;
/// Log bytes budgeted per transaction (batch header, alignment padding).
pub const LOG_BYTES_PER_TXN_ESTIMATE: u64 = 512;

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct YcsbTsOptions {
    pub workload: Workload,
    /// What Table 1's mix picks: a kind per transaction (the paper's
    /// reading, the default) or per operation.
    pub mix: MixUnit,
    pub workers: u64,
    /// Transactions each worker keeps in flight: it submits that many
    /// together and waits for all (as that many clients per worker thread
    /// would). The paper runs up to 28 synchronous workers on 32 cores;
    /// with 2 cores, depth stands in for them.
    pub txns_in_flight: usize,
    pub logging_threads: usize,
    pub queues_per_thread: usize,
    pub queue_len: usize,
    pub replay_threads: usize,
    pub num_keys: u64,
    pub load_points_per_key: u64,
    pub txns: u64,
    /// Stop each run after this long (at most `txns` transactions).
    pub seconds: Option<f64>,
    pub seed: u64,
    pub rounds: u32,
    /// The measured run checkpoints once this share of transactions
    /// committed (default 0.95: Table 2's 95.5-97.4 % shorter recovery with
    /// a checkpoint means the paper's checkpoint covered about 96 % of the
    /// log; recovery with a checkpoint at fraction f replays about 1 - f of
    /// the run, so the speedup is bounded near 1 / (1 - f)).
    pub checkpoint_at_fraction: f64,
    pub variants: Vec<Variant>,
    pub json_path: Option<PathBuf>,
    pub svg_dir: Option<PathBuf>,
    pub dirs: BenchDirs,
    pub child: ChildCommand,
    pub child_timeout: Duration,
    pub quick: bool,
    pub print: bool,
}

impl YcsbTsOptions {
    /// Workload B, 2 workers, 2 logging threads x 2 queues x 300 entries,
    /// 500 keys x 100 loaded points, 100,000 transactions but at most 60 s
    /// per run (the SSD variants are far slower), 3 rounds.
    pub fn full(child: ChildCommand) -> YcsbTsOptions {
        YcsbTsOptions {
            workload: Workload::B,
            mix: MixUnit::Transaction,
            workers: 2,
            txns_in_flight: 8,
            logging_threads: 2,
            queues_per_thread: 2,
            queue_len: 300,
            replay_threads: 2,
            num_keys: 500,
            load_points_per_key: 100,
            txns: 100_000,
            seconds: Some(60.0),
            seed: 0x5eed,
            rounds: 3,
            checkpoint_at_fraction: 0.95,
            variants: Variant::COMPETITORS.to_vec(),
            json_path: None,
            svg_dir: None,
            dirs: BenchDirs::detect(),
            child,
            child_timeout: Duration::from_secs(1800),
            quick: false,
            print: false,
        }
    }

    /// A run of well under two minutes on 2 cores: 20,000 transactions (at
    /// most 5 s per run) over 500 keys x 40 loaded points, one round.
    pub fn quick(child: ChildCommand) -> YcsbTsOptions {
        YcsbTsOptions {
            load_points_per_key: 40,
            txns: 20_000,
            seconds: Some(5.0),
            rounds: 1,
            child_timeout: Duration::from_secs(300),
            quick: true,
            ..YcsbTsOptions::full(child)
        }
    }

    /// Log capacity that holds the load and the whole run twice over
    /// (DecLog checkpoints when a stream is 3/4 full; without checkpoints
    /// the log must hold everything).
    pub fn log_bytes(&self) -> u64 {
        let values = self
            .num_keys
            .saturating_mul(self.load_points_per_key)
            .saturating_add(self.txns.saturating_mul(OPS_PER_TXN as u64))
            .saturating_mul(2);
        let txns = self.txns.saturating_add(self.num_keys.saturating_mul(self.load_points_per_key) / 100);
        let bytes = values
            .saturating_mul(LOG_BYTES_PER_VALUE_ESTIMATE)
            .saturating_add(txns.saturating_mul(LOG_BYTES_PER_TXN_ESTIMATE));
        bytes.saturating_mul(2).div_ceil(1 << 20).saturating_mul(1 << 20)
    }

    fn job(&self, variant: Variant, dirs: &RunDirs, checkpoints: bool) -> ChildJob {
        ChildJob {
            variant: variant.name.to_string(),
            data_dir: dirs.data.path().to_path_buf(),
            pmem_dir: dirs.pmem.path().to_path_buf(),
            workload: self.workload.name().to_string(),
            mix: mix_name(self.mix).to_string(),
            num_keys: self.num_keys,
            load_points_per_key: self.load_points_per_key,
            txns: self.txns,
            seed: self.seed,
            workers: self.workers,
            txns_in_flight: self.txns_in_flight,
            logging_threads: self.logging_threads,
            queues_per_thread: self.queues_per_thread,
            queue_len: self.queue_len,
            replay_threads: self.replay_threads,
            log_bytes: self.log_bytes(),
            checkpoints,
            checkpoint_at_fraction: (checkpoints && variant.checkpoints())
                .then_some(self.checkpoint_at_fraction),
            seconds: self.seconds,
        }
    }
}

/// Fresh directories of one crash run, removed when dropped.
struct RunDirs {
    data: TempDir,
    pmem: TempDir,
}

impl RunDirs {
    fn new(dirs: &BenchDirs, variant: Variant) -> anyhow::Result<RunDirs> {
        let prefix = format!("strata-ycsb-{}-", variant.file_stem());
        let data = tempfile::Builder::new()
            .prefix(&prefix)
            .tempdir_in(&dirs.disk_dir)
            .with_context(|| format!("creating a data directory in {}", dirs.disk_dir.display()))?;
        let pmem = tempfile::Builder::new()
            .prefix(&prefix)
            .tempdir_in(&dirs.pmem_dir)
            .with_context(|| format!("creating a PMem directory in {}", dirs.pmem_dir.display()))?;
        Ok(RunDirs { data, pmem })
    }
}

/// The report, the CDF points per variant, and where files went.
pub struct YcsbTsOutcome {
    pub report: BenchReport,
    pub cdfs: Vec<(String, Vec<(f64, f64)>)>,
    pub json: Value,
    pub svg_files: Vec<PathBuf>,
}

/// Runs the benchmark, prints (if asked), writes JSON and SVG (if asked).
pub fn run_ycsb_ts_bench(opts: &YcsbTsOptions) -> anyhow::Result<YcsbTsOutcome> {
    anyhow::ensure!(!opts.variants.is_empty(), "no variant to run");
    anyhow::ensure!(opts.rounds >= 1, "--rounds must be at least 1");
    anyhow::ensure!(opts.txns_in_flight >= 1, "--txns-in-flight must be at least 1");
    anyhow::ensure!(opts.workers >= 1, "--workers must be at least 1");
    anyhow::ensure!(
        opts.checkpoint_at_fraction > 0.0 && opts.checkpoint_at_fraction < 1.0,
        "the checkpoint fraction must be in (0, 1)"
    );
    let started = Instant::now();
    let load_start = load_average_1m();
    let mut samples: Vec<Samples> = vec![Samples::default(); opts.variants.len()];
    let mut cdfs: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut lost = Vec::new();
    for round in 0..opts.rounds {
        let mut throughput = Vec::new();
        for (i, &variant) in opts.variants.iter().enumerate() {
            let (metrics, cdf, lost_here) = run_variant(opts, variant, round)?;
            throughput.push(metric_of(&metrics, "throughput_txn_per_s"));
            for (k, v) in &metrics {
                samples[i].push(k, *v);
            }
            cdfs.retain(|(name, _)| name != variant.name);
            cdfs.push((variant.name.to_string(), cdf));
            lost.extend(lost_here);
        }
        for (base, metric_name) in [("none", "ratio_to_none"), ("serial-pmem", "ratio_to_serial_pmem")] {
            let Some(b) = opts.variants.iter().position(|v| v.name == base) else { continue };
            let base_throughput = throughput[b];
            for (i, t) in throughput.iter().enumerate() {
                if let (Some(t), Some(bt)) = (t, base_throughput) {
                    samples[i].push(metric_name, t / bt);
                }
            }
        }
    }
    let mut report = build_report(opts, &samples, started.elapsed(), [load_start, load_average_1m()]);
    for l in &lost {
        report.notes.push(l.clone());
    }
    let json = report::to_json(&report, &cdfs);
    if opts.print {
        print(&report, opts.workload);
    }
    if let Some(path) = &opts.json_path {
        let text = serde_json::to_string_pretty(&json).expect("JSON values serialize");
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
        if opts.print {
            println!("wrote {}", path.display());
        }
    }
    let mut svg_files = Vec::new();
    if let Some(dir) = &opts.svg_dir {
        let figs = super::figures::figures(&report, &cdfs, opts.workload);
        svg_files = crate::svg::write_files(dir, &figs)?;
        if opts.print {
            for p in &svg_files {
                println!("wrote {}", p.display());
            }
        }
    }
    Ok(YcsbTsOutcome { report, cdfs, json, svg_files })
}

fn metric_of(metrics: &Metrics, name: &str) -> Option<f64> {
    metrics.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
}

type VariantRound = (Metrics, Vec<(f64, f64)>, Vec<String>);

/// The two crash runs of one variant in one round.
fn run_variant(opts: &YcsbTsOptions, variant: Variant, round: u32) -> anyhow::Result<VariantRound> {
    let say = |what: &str| {
        if opts.print {
            eprintln!("ycsb-ts round {}/{} {}: {what}", round + 1, opts.rounds, variant.name);
        }
    };
    say("measured run (checkpoint near the end when the variant has checkpoints), then SIGKILL and recovery");
    let measured = crash_run(opts, variant, true)?;
    say(&format!(
        "{:.0} txn/s, recovery {:.3} s; run without checkpoints, then SIGKILL and recovery",
        measured.result.committed_txns as f64 / measured.result.run_s.max(1e-9),
        measured.recovery_s
    ));
    let without = crash_run(opts, variant, false)?;
    say(&format!("recovery without checkpoint {:.3} s", without.recovery_s));
    let mut metrics = report::run_metrics(&measured.result);
    let with = variant.checkpoints().then_some(&measured);
    metrics.extend(report::recovery_metrics(with, &without));
    let mut problems = Vec::new();
    if variant.protocol != strata_engine::Protocol::None {
        for (run, lost) in [("without", without.lost_last_inserts), ("with", measured.lost_last_inserts)] {
            if lost > 0 {
                problems.push(format!(
                    "DURABILITY VIOLATION: {}: {lost} acknowledged last inserts missing after recovery ({run} checkpoint)",
                    variant.name
                ));
            }
        }
    }
    if measured.result.committed_txns < opts.txns && round + 1 == opts.rounds {
        problems.push(format!(
            "{}: stopped by the {} s limit after {} of {} transactions (so its recovery replays less log than a full run's)",
            variant.name,
            opts.seconds.unwrap_or(0.0),
            measured.result.committed_txns,
            opts.txns
        ));
    }
    for run in [&measured, &without] {
        if run.result.reads_missing > 0 {
            problems.push(format!(
                "{}: {} of {} reads found no point (every read targets an existing point)",
                variant.name, run.result.reads_missing, run.result.reads
            ));
        }
    }
    Ok((metrics, measured.result.latency.cdf.clone(), problems))
}

fn crash_run(opts: &YcsbTsOptions, variant: Variant, checkpoints: bool) -> anyhow::Result<CrashRun> {
    let dirs = RunDirs::new(&opts.dirs, variant)?;
    let job = opts.job(variant, &dirs, checkpoints);
    crash_and_recover(&opts.child, &job, opts.child_timeout)
}

fn build_report(
    opts: &YcsbTsOptions,
    samples: &[Samples],
    run_time: Duration,
    load_average: [Option<f64>; 2],
) -> BenchReport {
    let pmem_fs = fs_type(&opts.dirs.pmem_dir).unwrap_or_else(|| "unknown fs".into());
    let detail = format!(
        "PMem emulated on a mapped file in {} ({pmem_fs}); no real PMem",
        opts.dirs.pmem_dir.display()
    );
    let machine = Machine::detect(PmemMode::Emulated, detail, strata_pmem::detected_flush_instruction());
    let params = opts.workload.params();
    let config = json!({
        "workload": opts.workload.name(),
        "mix": mix_name(opts.mix),
        "mix_ppm": {"insert": params.insert_ppm, "read": params.read_ppm, "update": params.update_ppm},
        "zipf_theta": params.zipf_theta,
        "ops_per_txn": OPS_PER_TXN,
        "point_bytes": super::model::POINT_BYTES,
        "num_keys": opts.num_keys,
        "load_points_per_key": opts.load_points_per_key,
        "txns": opts.txns,
        "seconds": opts.seconds,
        "seed": opts.seed,
        "workers": opts.workers,
        "txns_in_flight_per_worker": opts.txns_in_flight,
        "logging_threads": opts.logging_threads,
        "queues_per_thread": opts.queues_per_thread,
        "queue_len": opts.queue_len,
        "replay_threads": opts.replay_threads,
        "log_bytes": opts.log_bytes(),
        "checkpoint_at_fraction": opts.checkpoint_at_fraction,
        "rounds": opts.rounds,
        "quick": opts.quick,
        "variants": opts.variants.iter().map(|v| json!({"variant": v.name, "paper": v.paper_name})).collect::<Vec<_>>(),
        "pmem_dir": opts.dirs.pmem_dir,
        "ssd_dir": opts.dirs.disk_dir,
        "ssd_fs_type": fs_type(&opts.dirs.disk_dir),
        "order": "interleaved rounds (A B C A B C ...); per variant and round two child processes on fresh directories, each killed with SIGKILL after its run, then Db::open timed in the parent",
        "statistic": "median over rounds; ratios are medians of per-round ratios",
        "load_average_1m": {"start": load_average[0], "end": load_average[1]},
        "run_s": run_time.as_secs_f64(),
    });
    let mut report = BenchReport::new("ycsb-ts", machine, config);
    report.results = opts
        .variants
        .iter()
        .zip(samples)
        .map(|(v, s)| {
            let mut row: Map<String, Value> = s.median_row(v.name);
            report::fill_nulls(&mut row);
            row
        })
        .collect();
    let mut columns: Vec<String> = report::PERFORMANCE_COLUMNS.iter().map(|c| c.to_string()).collect();
    columns.extend(report::PERSIST_COLUMNS.iter().map(|c| c.to_string()));
    report.columns = columns;
    report.notes = notes(opts, load_average);
    for c in report::acceptance(&report) {
        report.notes.push(report::describe_check(&c));
    }
    report
}

fn notes(opts: &YcsbTsOptions, load_average: [Option<f64>; 2]) -> Vec<String> {
    vec![
        load_note(load_average, None, "other work was running; compare ratios, not absolute figures"),
        format!(
            "workload {} (mix drawn per {}): {} transactions of {OPS_PER_TXN} operations by {} workers with {} in flight each after loading {} keys x {} points; {} round(s), medians",
            opts.workload,
            mix_name(opts.mix),
            opts.txns,
            opts.workers,
            opts.txns_in_flight,
            opts.num_keys,
            opts.load_points_per_key,
            opts.rounds
        ),
        format!("{}; block files and SSD logs on disk", opts.dirs.describe()),
        "latency: one transaction from the call of execute to its acknowledgement (durable commit); mean fastest95 = mean of the fastest 95 % (the paper's)".into(),
        "persist counts per committed txn (read-only ones included) are of the log's region: PMem for *-pmem and the ablation steps, the msync'd file for declog-ssd (a fence there follows an msync); serial-ssd has no region (null) and none has no log; log bytes = commit-log bytes the engine counted".into(),
        format!(
            "recovery: wall time of Db::open after SIGKILL; cpu = process CPU time of it (the paper's measure); with checkpoint = the measured run checkpointed after {:.0} % of its transactions",
            opts.checkpoint_at_fraction * 100.0
        ),
        "ratios are taken within each round: throughput over none's and over serial-pmem's (Beringei-NVM)".into(),
    ]
}

fn print(report: &BenchReport, workload: Workload) {
    let perf = report::table_subset(report, "throughput and commit latency", &report::PERFORMANCE_COLUMNS);
    let persist = report::table_subset(report, "persist per txn and recovery", &report::PERSIST_COLUMNS);
    print!("{}", perf.render_table());
    println!();
    print!("{}", persist.render_table());
    for note in &report.notes {
        println!("  * {note}");
    }
    let declog = report::metric(report, "declog-pmem", "throughput_txn_per_s");
    let serial = report::metric(report, "serial-pmem", "throughput_txn_per_s");
    let none = report::metric(report, "none", "throughput_txn_per_s");
    println!(
        "  * paper, Fig. 10(a) workload {workload}: DecLog {:.1}x Beringei-NVM, {:.3}x No-logging; here: {} and {}",
        paper::declog_over_beringei_nvm(workload),
        paper::declog_over_no_logging(workload),
        declog.zip(serial).map_or("-".into(), |(d, s)| format!("{:.2}x serial-pmem", d / s)),
        declog.zip(none).map_or("-".into(), |(d, n)| format!("{:.3}x none", d / n)),
    );
}
