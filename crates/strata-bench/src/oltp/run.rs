//! One measured run of one variant: a fresh database over fresh logs, the
//! table loaded (unlogged: the base state), `workers` threads running YCSB
//! transactions for the window with asynchronous commit (a worker goes on
//! while its earlier transactions wait for their LVs, taurus.txt 3.2, and
//! collects them as they commit), then a clean close and a timed recovery
//! of the same logs over the same base.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use strata_txn::recovery::parallelism;
use strata_txn::{CommitTicket, LogDeviceKind, TxnDb, TxnDbOptions, TxnError, WorkerId};

use super::ycsb::{self, YcsbShape};
use super::{Device, OltpOptions, Variant};
use crate::settle::{cpu_times, idle_fraction};
use crate::ycsb_ts::zipf::ZipfianGenerator;

/// Transactions a worker may have waiting for their commit.
const MAX_IN_FLIGHT: usize = 4096;

/// What one run measured.
#[derive(Clone, Debug, Default)]
pub struct RunFigures {
    pub committed: u64,
    pub aborts: u64,
    pub throughput_txn_per_s: f64,
    pub latency_us_p50: f64,
    pub latency_us_p99: f64,
    pub log_bytes_per_txn: f64,
    pub cpu_busy_pct: f64,
    pub recovery_s: f64,
    pub recovered_txns: u64,
    pub recovery_txn_per_s: f64,
    pub recovery_parallelism: f64,
    pub recovery_parallelism_true: Option<f64>,
    /// Threads the replay used (1: the serial fallback).
    pub recovery_threads: usize,
}

fn db_options(o: &OltpOptions, v: &Variant, dir: &Path) -> anyhow::Result<TxnDbOptions> {
    let device = match o.device {
        Device::Ssd => {
            LogDeviceKind::Ssd { fs: Arc::new(strata_media::RealFs::new()), dir: dir.join("logs") }
        }
        Device::Pmem => {
            let regions = (0..v.kind.logs())
                .map(|i| {
                    crate::emulated_region::open_touched(
                        &o.pmem_dir_for(dir).join(format!("log-{i}.pmem")),
                        o.log_capacity_bytes,
                    )
                    .map(Arc::new)
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            LogDeviceKind::Regions(regions)
        }
    };
    let mut opts = TxnDbOptions::new(v.kind, device, o.workers);
    opts.logging.mode = v.mode;
    opts.logging.log_mbps = o.log_mbps;
    opts.logging.capacity_bytes = o.log_capacity_bytes;
    opts.recovery_threads = o.workers.max(v.kind.logs());
    Ok(opts)
}

/// Runs `v` once in `dir` (removed by the caller).
pub fn run_once(o: &OltpOptions, v: &Variant, dir: &Path, round: u64) -> anyhow::Result<RunFigures> {
    let shape = o.shape.clone();
    let options = db_options(o, v, dir)?;
    let (db, _) =
        TxnDb::open_over(&options, ycsb::schemas(), ycsb::procedures(), |db| ycsb::load(db, shape.rows))
            .context("opening the database")?;
    let zipf = ZipfianGenerator::new(shape.rows, shape.theta).context("the Zipf distribution")?;
    let stop = AtomicBool::new(false);
    let latencies = Mutex::new(Histogram::<u64>::new(3).expect("a histogram"));
    let totals = Mutex::new((0u64, 0u64));
    let cpu_before = cpu_times();
    let started = Instant::now();
    std::thread::scope(|s| -> anyhow::Result<()> {
        let handles: Vec<_> = (0..o.workers)
            .map(|w| {
                let (db, zipf, shape, stop, latencies, totals) =
                    (&db, &zipf, &shape, &stop, &latencies, &totals);
                s.spawn(move || worker(db, WorkerId(w as u32), shape, zipf, round, stop, latencies, totals))
            })
            .collect();
        std::thread::sleep(o.window);
        stop.store(true, Ordering::Release);
        for h in handles {
            h.join().expect("a worker panicked")?;
        }
        Ok(())
    })?;
    let elapsed = started.elapsed();
    let cpu_after = cpu_times();
    let (committed, aborts) = *totals.lock();
    let log_bytes = db.log_bytes();
    drop(db);
    let lat = latencies.into_inner();
    let mut f = RunFigures {
        committed,
        aborts,
        throughput_txn_per_s: committed as f64 / elapsed.as_secs_f64(),
        latency_us_p50: lat.value_at_quantile(0.5) as f64 / 1e3,
        latency_us_p99: lat.value_at_quantile(0.99) as f64 / 1e3,
        log_bytes_per_txn: log_bytes as f64 / committed.max(1) as f64,
        cpu_busy_pct: match (cpu_before, cpu_after) {
            (Some(b), Some(a)) => 100.0 * (1.0 - idle_fraction(b, a)),
            _ => f64::NAN,
        },
        ..Default::default()
    };
    if v.kind.logs() > 0 {
        let logs = TxnDb::committed_logs(&options)?;
        let p = parallelism(&logs);
        f.recovery_parallelism = p.lv_ratio();
        f.recovery_parallelism_true = p.true_ratio();
        // The base load stands in for a checkpoint: only decoding and replay count.
        let (db, report) =
            TxnDb::open_over(&options, ycsb::schemas(), ycsb::procedures(), |db| ycsb::load(db, shape.rows))?;
        f.recovery_s = (report.decode_time + report.replay_time).as_secs_f64();
        f.recovered_txns = report.transactions;
        f.recovery_threads = report.replay_threads;
        f.recovery_txn_per_s = report.transactions as f64 / f.recovery_s.max(1e-9);
        drop(db);
    }
    Ok(f)
}

#[allow(clippy::too_many_arguments)]
fn worker(
    db: &TxnDb,
    id: WorkerId,
    shape: &YcsbShape,
    zipf: &ZipfianGenerator,
    round: u64,
    stop: &AtomicBool,
    latencies: &Mutex<Histogram<u64>>,
    totals: &Mutex<(u64, u64)>,
) -> anyhow::Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(0x0_17b0_u64 ^ (round << 16) ^ u64::from(id.0));
    let mut hist = Histogram::<u64>::new(3).expect("a histogram");
    let mut waiting: VecDeque<(CommitTicket, Instant)> = VecDeque::new();
    let (mut committed, mut aborts) = (0u64, 0u64);
    let mut args = Vec::new();
    let mut collect = |waiting: &mut VecDeque<(CommitTicket, Instant)>, block: bool| -> anyhow::Result<u64> {
        let mut n = 0;
        while let Some((ticket, at)) = waiting.front() {
            if block {
                db.wait_committed(ticket)?;
            } else if !db.is_committed(ticket) {
                break;
            }
            hist.record(at.elapsed().as_nanos() as u64).ok();
            waiting.pop_front();
            n += 1;
        }
        Ok(n)
    };
    while !stop.load(Ordering::Acquire) {
        ycsb::next_args(shape, zipf, &mut rng, &mut args);
        let started = Instant::now();
        loop {
            match db.run(id, ycsb::YCSB_TXN, &args) {
                Ok(ticket) => {
                    waiting.push_back((ticket, started));
                    break;
                }
                Err(TxnError::Conflict { .. }) => {
                    aborts += 1;
                    std::thread::yield_now();
                }
                Err(e) => {
                    return Err(e).context(format!(
                        "a YCSB transaction after {committed} committed, {} waiting",
                        waiting.len()
                    ))
                }
            }
        }
        let full = waiting.len() >= MAX_IN_FLIGHT;
        committed += collect(&mut waiting, full)?;
    }
    committed += collect(&mut waiting, true)?;
    latencies.lock().add(&hist).ok();
    let mut t = totals.lock();
    t.0 += committed;
    t.1 += aborts;
    Ok(())
}
