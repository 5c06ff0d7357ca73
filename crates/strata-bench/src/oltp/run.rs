//! One measured run of one variant, in a child process that is SIGKILLed
//! (issue 16: recovery "after a SIGKILL of a child process"):
//!
//! - the child ([`run_child_from_env`], `strata bench oltp-child`) opens a
//!   fresh database over fresh logs, loads the table (unlogged: the base
//!   state), runs `workers` threads of the workload's transactions (YCSB or
//!   TPC-C, [`super::workload`]) with asynchronous commit (a worker goes on while its earlier transactions wait for their
//!   LVs, taurus.txt 3.2, and collects them as they commit), prints the
//!   window's figures as one JSON line and keeps the workers running;
//! - the parent ([`run_once`]) reads that line, kills the child (SIGKILL)
//!   while transactions are in flight, then opens the same logs over the
//!   same base tables and times decoding and replay.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use strata_pmem::{PmemMode, Region, RegionOptions};
use strata_txn::recovery::parallelism;
use strata_txn::{CcKind, LogDeviceKind, LoggingKind, TxnDb, TxnDbOptions, TxnEngine, TxnError, WorkerId};

use super::tpcc::TpccShape;
use super::workload::{Bench, Workload};
use super::ycsb::YcsbShape;
use super::{parse_variants, Device, OltpOptions, Variant};
use crate::settle::{cpu_times, idle_fraction};

/// Transactions a worker may have waiting for their commit (commits are
/// asynchronous, as in DBx1000; the bound keeps a device-bound log from
/// burying the window under buffered records it never sees commit). It
/// also bounds a scheme whose acknowledgement waits: Silo-R's epochs (5 ms,
/// acknowledged up to a tick after they close) cap it at about 256 x
/// workers / its commit latency.
const MAX_IN_FLIGHT: usize = 256;
/// The child's job, as JSON in this environment variable.
pub const JOB_ENV: &str = "STRATA_OLTP_JOB";
/// How long the child runs on after its figures before the SIGKILL.
const RUN_ON_BEFORE_KILL: Duration = Duration::from_millis(100);
/// A child still alive this long after its figures (its parent died) exits.
const ORPHAN_EXIT: Duration = Duration::from_secs(60);

/// What one run measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunFigures {
    pub committed: u64,
    /// Of those, the ones that left something recovery must find (a log
    /// record, or FIR's versions; read-only ones leave nothing).
    pub logged: u64,
    /// Lock conflicts (each retried).
    pub aborts: u64,
    /// TPC-C New-Orders rolled back on their unused item (not retried, not
    /// counted as committed).
    pub rollbacks: u64,
    /// Of the committed ones, TPC-C New-Orders.
    pub new_orders: u64,
    pub throughput_txn_per_s: f64,
    pub new_order_txn_per_s: f64,
    pub latency_us_p50: f64,
    pub latency_us_p99: f64,
    pub log_bytes_per_txn: f64,
    pub cpu_busy_pct: f64,
    pub recovery_s: f64,
    /// What recovery brought back: transactions (a log's replay), or
    /// versions kept past the checkpoint (FIR's engine: `fir`, `zen`).
    pub recovered_txns: u64,
    pub recovery_txn_per_s: f64,
    pub recovery_parallelism: f64,
    pub recovery_parallelism_true: Option<f64>,
    /// Threads the replay used (1: the serial fallback).
    pub recovery_threads: usize,
    /// FIR: the recovery's phases (fir.txt Fig. 11): the data phase (the
    /// tail past the checkpoint, or the whole heap) and the index rebuild.
    #[serde(default)]
    pub recovery_data_s: f64,
    #[serde(default)]
    pub recovery_index_s: f64,
    /// FIR: versions the recovery scanned.
    #[serde(default)]
    pub recovery_versions_scanned: u64,
    /// FIR: the checkpoints the thread took in the window, and how many
    /// of them were incremental.
    #[serde(default)]
    pub checkpoints: u64,
    #[serde(default)]
    pub incremental_checkpoints: u64,
    /// FIR: the mean time of those checkpoints.
    #[serde(default)]
    pub checkpoint_ms_mean: f64,
}

/// A child's job: the options of one variant's run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OltpJob {
    pub workload: Workload,
    pub variant: String,
    pub logs: usize,
    pub workers: usize,
    pub device: String,
    pub log_mbps: Option<f64>,
    pub log_capacity_bytes: u64,
    pub rows: u64,
    pub theta: f64,
    pub accesses: usize,
    pub read_ratio: f64,
    pub tpcc: TpccShape,
    /// OCC instead of 2PL NO_WAIT (Silo-R always).
    pub occ: bool,
    /// Runs before the window opens (its commits are not counted).
    #[serde(default)]
    pub warmup_ms: u64,
    pub window_ms: u64,
    pub dir: PathBuf,
    pub pmem_dir: PathBuf,
    pub round: u64,
    /// FIR's checkpoint thread period (`fir`, `fir-full`).
    #[serde(default)]
    pub fir_checkpoint_ms: u64,
}

impl OltpJob {
    fn new(o: &OltpOptions, v: &Variant, dir: &Path, round: u64) -> OltpJob {
        OltpJob {
            workload: o.workload,
            variant: v.name.clone(),
            logs: o.logs,
            workers: o.workers,
            device: match v.device.unwrap_or(o.device) {
                Device::Pmem => "pmem".into(),
                Device::Ssd => "ssd".into(),
            },
            log_mbps: o.log_mbps,
            log_capacity_bytes: o.log_capacity_bytes,
            rows: o.shape.rows,
            theta: o.shape.theta,
            accesses: o.shape.accesses,
            read_ratio: o.shape.read_ratio,
            tpcc: o.tpcc.clone(),
            occ: o.cc == CcKind::Occ,
            warmup_ms: o.warmup.as_millis() as u64,
            window_ms: o.window.as_millis() as u64,
            dir: dir.to_path_buf(),
            pmem_dir: o.pmem_dir_for(dir),
            round,
            fir_checkpoint_ms: o.fir_checkpoint_every.as_millis() as u64,
        }
    }

    fn shape(&self) -> YcsbShape {
        YcsbShape { rows: self.rows, theta: self.theta, accesses: self.accesses, read_ratio: self.read_ratio }
    }

    pub(crate) fn bench(&self) -> anyhow::Result<Bench> {
        Bench::new(self.workload, &self.shape(), &self.tpcc)
    }

    pub(crate) fn variant(&self) -> anyhow::Result<Variant> {
        parse_variants(&self.variant, self.logs)?.pop().context("one variant")
    }

    /// The database options; `fresh` regions are zeroed and touched first,
    /// otherwise opened as they are (recovery after the kill).
    /// Bytes per log: a scheme with fewer logs than the Taurus variants
    /// (serial: one) takes all their traffic, so its logs are larger.
    fn capacity_bytes(&self, v: &Variant) -> u64 {
        self.log_capacity_bytes * (self.logs / v.kind.logs().max(1)).max(1) as u64
    }

    pub(crate) fn db_options(&self, fresh: bool) -> anyhow::Result<TxnDbOptions> {
        let v = self.variant()?;
        let device = match self.device.as_str() {
            "ssd" => {
                LogDeviceKind::Ssd { fs: Arc::new(strata_media::RealFs::new()), dir: self.dir.join("logs") }
            }
            _ => {
                let regions = (0..v.kind.logs())
                    .map(|i| {
                        let path = self.pmem_dir.join(format!("log-{i}.pmem"));
                        let region = if fresh {
                            crate::emulated_region::open_touched(&path, self.capacity_bytes(&v))?
                        } else {
                            Region::open(
                                &path,
                                &RegionOptions::new(PmemMode::Emulated, self.capacity_bytes(&v)),
                            )
                            .with_context(|| format!("reopening {}", path.display()))?
                        };
                        Ok(Arc::new(region))
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                LogDeviceKind::Regions(regions)
            }
        };
        let mut opts = TxnDbOptions::new(v.kind, device, self.workers);
        opts.cc = match v.kind {
            LoggingKind::SiloR { .. } => CcKind::Occ,
            _ if self.occ => CcKind::Occ,
            _ => CcKind::TwoPlNoWait,
        };
        opts.logging.mode = v.mode;
        opts.logging.log_mbps = self.log_mbps;
        opts.logging.capacity_bytes = self.capacity_bytes(&v);
        opts.recovery_threads = self.workers.max(v.kind.logs());
        Ok(opts)
    }
}

/// Runs `v` once in `dir` (removed by the caller): the child's window,
/// the SIGKILL, the recovery.
pub fn run_once(o: &OltpOptions, v: &Variant, dir: &Path, round: u64) -> anyhow::Result<RunFigures> {
    let job = OltpJob::new(o, v, dir, round);
    let program = &o.child.program;
    let mut child = Command::new(program)
        .args(&o.child.args)
        .envs(o.child.env.iter().map(|(k, v)| (k, v)))
        .env(JOB_ENV, serde_json::to_string(&job)?)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {} bench oltp-child", program.display()))?;
    // The figures are the first JSON object of the child's output (a test
    // binary standing in for the child prints its harness's text first).
    let mut line = String::new();
    let mut out = BufReader::new(child.stdout.take().context("the child's stdout")?);
    let read = loop {
        line.clear();
        match out.read_line(&mut line) {
            Ok(0) => break Ok(0),
            Ok(n) if line.contains("{\"committed\"") => break Ok(n),
            Ok(_) => continue,
            Err(e) => break Err(e),
        }
    };
    std::thread::sleep(RUN_ON_BEFORE_KILL);
    child.kill().context("SIGKILL of the child")?;
    child.wait()?;
    read.context("reading the child's figures")?;
    let json = line.find("{\"committed\"").map_or("", |at| line[at..].trim());
    let mut f: RunFigures = serde_json::from_str(json)
        .with_context(|| format!("the child's figures line {line:?} (it failed: see its output above)"))?;
    if v.engine.on_fir_engine() {
        super::fir_run::recover(&job, &mut f)?;
    } else if v.kind.logs() > 0 {
        let options = job.db_options(false)?;
        let silo = matches!(v.kind, LoggingKind::SiloR { .. });
        if !silo {
            let logs = TxnDb::committed_logs(&options)?;
            let p = parallelism(&logs);
            f.recovery_parallelism = p.lv_ratio();
            f.recovery_parallelism_true = p.true_ratio();
        }
        // The base load stands in for a checkpoint: only decoding and replay count.
        let bench = job.bench()?;
        let (db, report) =
            TxnDb::open_over(&options, bench.schemas(), bench.procedures(), |db| bench.load(&mut &*db))?;
        f.recovery_s = (report.decode_time + report.replay_time).as_secs_f64();
        f.recovered_txns = report.transactions;
        if silo {
            // Silo-R orders nothing at recovery: every record its own chain.
            f.recovery_parallelism = report.parallelism;
        }
        f.recovery_threads = report.replay_threads;
        f.recovery_txn_per_s = report.transactions as f64 / f.recovery_s.max(1e-9);
        // Every acknowledged read-write transaction is in the logs.
        anyhow::ensure!(
            report.transactions >= f.logged,
            "{}: recovered {} transactions, fewer than the {} acknowledged read-write ones of the window",
            v.name,
            report.transactions,
            f.logged
        );
        drop(db);
    }
    Ok(f)
}

/// `strata bench oltp-child`: runs the job in `$STRATA_OLTP_JOB`, prints the
/// window's figures, runs on until killed.
pub fn run_child_from_env() -> anyhow::Result<()> {
    let text = std::env::var(JOB_ENV).with_context(|| format!("${JOB_ENV} is not set"))?;
    let job: OltpJob = serde_json::from_str(&text).context("the job")?;
    let bench = Arc::new(job.bench()?);
    if job.variant()?.engine.on_fir_engine() {
        return super::fir_run::run_child(&job, bench);
    }
    let options = job.db_options(true)?;
    let (db, _) = TxnDb::open_over(&options, bench.schemas(), bench.procedures(), |db| bench.load(&mut &*db))
        .context("opening the database")?;
    drive(&job, bench, Arc::new(db), |db: &TxnDb| Probe { log_bytes: db.log_bytes(), ..Probe::default() })
}

/// What an engine has done so far (counts since it opened), read at the
/// window's edges.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Probe {
    pub log_bytes: u64,
    pub checkpoints: u64,
    pub incremental_checkpoints: u64,
    pub checkpoint_s: f64,
}

/// Runs the job's workers on `engine`, prints the window's figures (what
/// `probe` counts included), runs on until killed.
pub(crate) fn drive<E: TxnEngine + 'static>(
    job: &OltpJob,
    bench: Arc<Bench>,
    db: Arc<E>,
    mut probe: impl FnMut(&E) -> Probe,
) -> anyhow::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    let counters = Arc::new(Counters::default());
    let handles: Vec<_> = (0..job.workers)
        .map(|w| {
            let (db, bench, stop, counters) = (db.clone(), bench.clone(), stop.clone(), counters.clone());
            let (round, name) = (job.round, job.workload.name());
            std::thread::spawn(move || {
                worker(&*db, WorkerId(w as u32), &bench, name, round, &stop, &counters)
            })
        })
        .collect();
    // The warm-up fills the workers' in-flight queues and, on a slow
    // device, lets the first long flushes pass: the window then sees the
    // steady state, not the start-up burst.
    std::thread::sleep(Duration::from_millis(job.warmup_ms));
    let cpu_before = cpu_times();
    let before = probe(&db);
    let started = Instant::now();
    counters.window_open.store(true, Ordering::Release);
    std::thread::sleep(Duration::from_millis(job.window_ms));
    let elapsed = started.elapsed();
    let cpu_after = cpu_times();
    let after = probe(&db);
    let log_bytes = after.log_bytes - before.log_bytes;
    counters.window_over.store(true, Ordering::Release);
    // Each worker adds its counts at its next transaction (a worker blocked
    // on a full in-flight queue adds them once it moves on).
    while counters.reported.load(Ordering::Acquire) < job.workers as u64 {
        if let Some(h) = handles.iter().position(|h| h.is_finished()) {
            let mut handles = handles;
            let outcome = handles.swap_remove(h).join().expect("a worker panicked");
            anyhow::bail!("a worker stopped before the end of the window: {outcome:?}");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let committed = counters.committed.load(Ordering::Acquire);
    let logged = counters.logged.load(Ordering::Acquire);
    let new_orders = counters.new_orders.load(Ordering::Acquire);
    let lat = counters.latencies.lock().clone();
    let f = RunFigures {
        committed,
        logged,
        aborts: counters.aborts.load(Ordering::Acquire),
        rollbacks: counters.rollbacks.load(Ordering::Acquire),
        new_orders,
        throughput_txn_per_s: committed as f64 / elapsed.as_secs_f64(),
        new_order_txn_per_s: new_orders as f64 / elapsed.as_secs_f64(),
        latency_us_p50: lat.value_at_quantile(0.5) as f64 / 1e3,
        latency_us_p99: lat.value_at_quantile(0.99) as f64 / 1e3,
        log_bytes_per_txn: log_bytes as f64 / committed.max(1) as f64,
        cpu_busy_pct: match (cpu_before, cpu_after) {
            (Some(b), Some(a)) => 100.0 * (1.0 - idle_fraction(b, a)),
            _ => f64::NAN,
        },
        checkpoints: after.checkpoints - before.checkpoints,
        incremental_checkpoints: after.incremental_checkpoints - before.incremental_checkpoints,
        checkpoint_ms_mean: 1e3 * (after.checkpoint_s - before.checkpoint_s)
            / (after.checkpoints - before.checkpoints).max(1) as f64,
        ..Default::default()
    };
    println!("{}", serde_json::to_string(&f)?);
    // Transactions go on until the SIGKILL. A worker's error ends the child
    // (the parent then finds fewer transactions than it was told); a child
    // nobody kills leaves by itself.
    let deadline = Instant::now() + ORPHAN_EXIT;
    while Instant::now() < deadline {
        if let Some(h) = handles.iter().position(|h| h.is_finished()) {
            let mut handles = handles;
            let outcome = handles.swap_remove(h).join().expect("a worker panicked");
            eprintln!("oltp child: a worker stopped: {outcome:?}");
            std::process::exit(1);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("oltp child: not killed within {ORPHAN_EXIT:?} of its figures: leaving");
    std::process::exit(2)
}

/// What the workers counted by the end of the window: each counts on its
/// own (no shared counter on the path of a transaction) and adds its
/// counts here once, when the window ends.
struct Counters {
    /// Set when the warm-up ends and the window opens.
    window_open: AtomicBool,
    /// Set when the window ends.
    window_over: AtomicBool,
    /// Workers that added their counts.
    reported: AtomicU64,
    committed: AtomicU64,
    logged: AtomicU64,
    new_orders: AtomicU64,
    aborts: AtomicU64,
    rollbacks: AtomicU64,
    latencies: Mutex<Histogram<u64>>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            window_open: AtomicBool::new(false),
            window_over: AtomicBool::new(false),
            reported: AtomicU64::new(0),
            committed: AtomicU64::new(0),
            logged: AtomicU64::new(0),
            new_orders: AtomicU64::new(0),
            aborts: AtomicU64::new(0),
            rollbacks: AtomicU64::new(0),
            latencies: Mutex::new(Histogram::new(3).expect("a histogram")),
        }
    }
}

impl Counters {
    /// Whether the window is open (an event now is counted).
    fn in_window(&self) -> bool {
        self.window_open.load(Ordering::Acquire) && !self.window_over.load(Ordering::Acquire)
    }
}

/// One worker's counts of the window.
struct Local {
    committed: u64,
    logged: u64,
    new_orders: u64,
    aborts: u64,
    rollbacks: u64,
    latencies: Histogram<u64>,
}

fn worker<E: TxnEngine>(
    db: &E,
    id: WorkerId,
    bench: &Bench,
    workload: &str,
    round: u64,
    stop: &AtomicBool,
    counters: &Counters,
) -> anyhow::Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(0x0_17b0_u64 ^ (round << 16) ^ u64::from(id.0));
    let inputs = bench.inputs(id);
    // Each transaction waiting for its commit: when it started, whether it is a New-Order.
    let mut waiting: VecDeque<(E::Ticket, Instant, bool)> = VecDeque::new();
    let mut args = Vec::new();
    let mut local = Local {
        committed: 0,
        logged: 0,
        new_orders: 0,
        aborts: 0,
        rollbacks: 0,
        latencies: Histogram::new(3).expect("a histogram"),
    };
    let mut reported = false;
    // Collects the committed transactions at the front (waiting for the
    // first one when `block`); only commits seen while the window is open
    // count (a worker may report a while after it).
    let collect = |waiting: &mut VecDeque<(E::Ticket, Instant, bool)>, local: &mut Local, block: bool| {
        let mut first = true;
        while let Some((ticket, at, new_order)) = waiting.front() {
            if block && first {
                db.wait_committed(ticket)?;
            } else if !db.is_committed(ticket) {
                break;
            }
            first = false;
            if counters.in_window() {
                local.latencies.record(at.elapsed().as_nanos() as u64).ok();
                local.committed += 1;
                local.logged += u64::from(db.wrote(ticket));
                local.new_orders += u64::from(*new_order);
            }
            waiting.pop_front();
        }
        anyhow::Ok(())
    };
    while !stop.load(Ordering::Acquire) {
        if !reported && counters.window_over.load(Ordering::Acquire) {
            counters.committed.fetch_add(local.committed, Ordering::AcqRel);
            counters.logged.fetch_add(local.logged, Ordering::AcqRel);
            counters.new_orders.fetch_add(local.new_orders, Ordering::AcqRel);
            counters.aborts.fetch_add(local.aborts, Ordering::AcqRel);
            counters.rollbacks.fetch_add(local.rollbacks, Ordering::AcqRel);
            counters.latencies.lock().add(&local.latencies).ok();
            counters.reported.fetch_add(1, Ordering::AcqRel);
            reported = true;
        }
        let next = inputs.next(&mut rng, &mut args);
        let started = Instant::now();
        loop {
            match db.run(id, next.proc, &args) {
                Ok(ticket) => {
                    waiting.push_back((ticket, started, next.new_order));
                    break;
                }
                Err(TxnError::Conflict { .. }) => {
                    local.aborts += u64::from(counters.in_window());
                    std::thread::yield_now();
                }
                Err(e) if bench.is_rollback(&e) => {
                    local.rollbacks += u64::from(counters.in_window());
                    break;
                }
                Err(e) => return Err(e).with_context(|| format!("a {workload} transaction")),
            }
        }
        let full = waiting.len() >= MAX_IN_FLIGHT;
        collect(&mut waiting, &mut local, full)?;
    }
    while !waiting.is_empty() {
        collect(&mut waiting, &mut local, true)?;
    }
    Ok(())
}
