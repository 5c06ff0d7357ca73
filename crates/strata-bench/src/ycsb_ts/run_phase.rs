//! The two phases of one YCSB-TS run against an open engine (DecLog
//! section 5.1): the load phase (every worker inserts its keys' first
//! points, in transactions of [`LOAD_TXN_POINTS`] points, not measured) and
//! the measured run (every worker executes its own transaction stream;
//! latency per transaction from the call of `execute` to its return, that
//! is to the acknowledgement of a durable commit).
//!
//! Each worker converts its whole stream to engine operations before the
//! start barrier, so the measured time is the engine's. One optional
//! checkpoint runs on its own thread once a given number of transactions
//! committed (or a given time passed), while the workers go on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::Context;
use strata_series::{Point, SeriesEngine, TxnOp};

use super::job::DB_NAME;
use super::model::Op;
use super::txn_ops::{engine_op, engine_ops};
use super::workload::YcsbTsGenerator;

/// Points per load-phase transaction.
pub const LOAD_TXN_POINTS: usize = 100;

/// When the run's checkpoint is taken.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct CheckpointPlan {
    /// Once this many transactions committed.
    pub after_txns: Option<u64>,
    /// Or once this much time passed, whichever comes first.
    pub after: Option<Duration>,
}

impl CheckpointPlan {
    pub fn is_planned(&self) -> bool {
        self.after_txns.is_some() || self.after.is_some()
    }
}

/// What the measured run did.
#[derive(Clone, Debug, Default)]
pub struct RunOutcome {
    pub committed: u64,
    pub elapsed: Duration,
    pub latencies_ns: Vec<u64>,
    pub retries: u64,
    pub reads: u64,
    pub reads_missing: u64,
    pub checkpoint_s: Option<f64>,
    /// Transactions whose outcome carried an LSN above 0.
    pub txns_with_lsn: u64,
    /// Per worker, the last point it inserted (key, timestamp).
    pub last_inserts: Vec<(u64, i64)>,
}

/// Inserts every worker's load-phase points, the workers in parallel.
pub fn load(
    engine: &Arc<SeriesEngine>,
    generator: &YcsbTsGenerator,
    workers: u64,
) -> anyhow::Result<Duration> {
    let start = Instant::now();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let stream = generator.for_worker(w, workers);
                scope.spawn(move || -> anyhow::Result<()> {
                    let stream = stream.map_err(|e| anyhow::anyhow!("{e}"))?;
                    for batch in stream.load_phase_batched(LOAD_TXN_POINTS) {
                        let points: Vec<Point> = batch
                            .iter()
                            .filter_map(|op| match engine_op(op) {
                                TxnOp::Write(p) => Some(p),
                                _ => None,
                            })
                            .collect();
                        engine.write_points(DB_NAME, &points).context("load phase write")?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| anyhow::anyhow!("a load worker panicked"))??;
        }
        Ok(())
    })?;
    Ok(start.elapsed())
}

/// One worker's transactions as engine operations, with the last insert of each.
#[derive(Default)]
struct Prepared {
    ops: Vec<Vec<TxnOp>>,
    last_insert: Vec<Option<(u64, i64)>>,
}

fn prepare(stream: YcsbTsGenerator) -> Prepared {
    let mut prepared = Prepared::default();
    for txn in stream {
        prepared.last_insert.push(txn.ops.iter().rev().find_map(|op| match *op {
            Op::Insert { key, ts_ns, .. } => Some((key, ts_ns)),
            _ => None,
        }));
        prepared.ops.push(engine_ops(&txn));
    }
    prepared
}

/// What one worker measured.
#[derive(Default)]
struct WorkerOutcome {
    latencies_ns: Vec<u64>,
    retries: u64,
    reads: u64,
    reads_missing: u64,
    txns_with_lsn: u64,
    last_insert: Option<(u64, i64)>,
    end: Option<Instant>,
}

/// Runs every worker's transactions, `in_flight` at a time per worker
/// (submitted together with [`SeriesEngine::execute_group`], as that many
/// concurrent clients per worker would; 1 is one synchronous client);
/// stops early at `deadline` after the start. A transaction's latency runs
/// from its group's submission to its acknowledgement.
pub fn run(
    engine: &Arc<SeriesEngine>,
    generator: &YcsbTsGenerator,
    workers: u64,
    in_flight: usize,
    checkpoint: CheckpointPlan,
    deadline: Option<Duration>,
) -> anyhow::Result<RunOutcome> {
    anyhow::ensure!(in_flight >= 1, "transactions in flight per worker must be at least 1");
    let committed = AtomicU64::new(0);
    // The workers, the checkpoint thread (if any) and this thread start together.
    let barrier = Barrier::new(workers as usize + 1 + usize::from(checkpoint.is_planned()));
    let (trigger, triggered) = mpsc::channel::<()>();
    std::thread::scope(|scope| -> anyhow::Result<RunOutcome> {
        let checkpointer = checkpoint.is_planned().then(|| {
            let barrier = &barrier;
            scope.spawn(move || -> anyhow::Result<Option<f64>> {
                barrier.wait();
                let fired = match checkpoint.after {
                    Some(after) => match triggered.recv_timeout(after) {
                        Ok(()) | Err(RecvTimeoutError::Timeout) => true,
                        Err(RecvTimeoutError::Disconnected) => false,
                    },
                    None => triggered.recv().is_ok(),
                };
                if !fired {
                    return Ok(None);
                }
                let t = Instant::now();
                engine.checkpoint().context("the run's checkpoint")?;
                Ok(Some(t.elapsed().as_secs_f64()))
            })
        });
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let stream = generator.for_worker(w, workers);
                let (committed, barrier, trigger) = (&committed, &barrier, trigger.clone());
                // Named, so profiles tell the measured workers from the rest.
                std::thread::Builder::new().name(format!("ycsb-worker-{w}")).spawn_scoped(
                    scope,
                    move || -> anyhow::Result<WorkerOutcome> {
                        let prepared = stream.map(prepare).map_err(|e| anyhow::anyhow!("{e}"));
                        barrier.wait();
                        let prepared = prepared?;
                        let start = Instant::now();
                        let mut out = WorkerOutcome {
                            latencies_ns: Vec::with_capacity(prepared.ops.len()),
                            ..Default::default()
                        };
                        for (group, last_inserts) in
                            prepared.ops.chunks(in_flight).zip(prepared.last_insert.chunks(in_flight))
                        {
                            if deadline.is_some_and(|d| start.elapsed() >= d) {
                                break;
                            }
                            let t = Instant::now();
                            let outcomes = engine.execute_group(DB_NAME, group);
                            let latency_ns = t.elapsed().as_nanos() as u64;
                            for (outcome, last_insert) in outcomes.into_iter().zip(last_inserts) {
                                let outcome = outcome.context("transaction")?;
                                out.latencies_ns.push(latency_ns);
                                out.retries += u64::from(outcome.retries);
                                out.txns_with_lsn += u64::from(outcome.lsn > 0);
                                out.reads += outcome.reads.len() as u64;
                                out.reads_missing +=
                                    outcome.reads.iter().filter(|r| r.is_none()).count() as u64;
                                out.last_insert = last_insert.or(out.last_insert);
                                let done = committed.fetch_add(1, Ordering::Relaxed) + 1;
                                if checkpoint.after_txns == Some(done) {
                                    let _ = trigger.send(());
                                }
                            }
                        }
                        out.end = Some(Instant::now());
                        Ok(out)
                    },
                )
            })
            .collect::<std::io::Result<Vec<_>>>()
            .context("starting the YCSB-TS workers")?;
        drop(trigger);
        barrier.wait();
        let start = Instant::now();
        let mut total = RunOutcome::default();
        let mut first_error = None;
        let mut end = start;
        for h in handles {
            match h.join().map_err(|_| anyhow::anyhow!("a YCSB-TS worker panicked")).and_then(|r| r) {
                Ok(w) => {
                    end = end.max(w.end.unwrap_or(start));
                    total.latencies_ns.extend(w.latencies_ns);
                    total.retries += w.retries;
                    total.reads += w.reads;
                    total.reads_missing += w.reads_missing;
                    total.txns_with_lsn += w.txns_with_lsn;
                    total.last_inserts.extend(w.last_insert);
                }
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        if let Some(c) = checkpointer {
            match c.join().map_err(|_| anyhow::anyhow!("the checkpoint thread panicked")).and_then(|r| r) {
                Ok(s) => total.checkpoint_s = s,
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        total.committed = committed.load(Ordering::Relaxed);
        total.elapsed = end - start;
        Ok(total)
    })
}
