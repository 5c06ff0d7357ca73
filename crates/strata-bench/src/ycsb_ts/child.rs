//! The child process of `strata bench ycsb-ts` (the hidden
//! `strata bench ycsb-ts-child`): opens the job's database, runs the load
//! phase and the measured run, prints one [`ChildResult`] line and then
//! waits, database open, to be killed with SIGKILL by the parent, so the
//! recovery that follows starts from a crash (no graceful checkpoint).
//!
//! If the parent goes away instead (stdin reaches end of file), the child
//! exits at once, still without closing the database.

use std::io::{Read, Write};
use std::time::Duration;

use anyhow::Context;
use strata_engine::{Db, Protocol};
use strata_series::SeriesEngine;

use super::cpu_time::process_cpu_s;
use super::job::{ChildJob, ChildResult, DeclogCounts, PersistCounts, JOB_ENV};
use super::latency::LatencySummary;
use super::run_phase::{load, run, CheckpointPlan};
use super::workload::YcsbTsGenerator;

/// Reads the job from [`JOB_ENV`] and runs it (never returns on success).
pub fn run_child_from_env() -> anyhow::Result<()> {
    let text = std::env::var(JOB_ENV).with_context(|| format!("${JOB_ENV} is not set"))?;
    run_child(&ChildJob::from_env_value(&text)?)
}

/// Runs `job`, prints its result line, waits to be killed.
pub fn run_child(job: &ChildJob) -> anyhow::Result<()> {
    // Held open until the process dies: dropping it could close gracefully.
    let (result, _db) = measure(job)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", result.to_line()).and_then(|()| out.flush()).context("printing the result")?;
    drop(out);
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    // The parent is gone: leave without closing the database.
    std::process::exit(0)
}

/// Opens, loads, runs; the figures of the run (not of the load), and the
/// still open database.
pub fn measure(job: &ChildJob) -> anyhow::Result<(ChildResult, Db)> {
    let config = job.config()?;
    let db = Db::open(&config, &|_, _, _| {})
        .with_context(|| format!("opening {} in {}", job.variant, config.data_dir.display()))?;
    let engine = db.engine().clone();
    let spec = job.spec()?;
    let generator = YcsbTsGenerator::new(&spec).map_err(|e| anyhow::anyhow!("{e}"))?;
    let load_time = load(&engine, &generator, job.workers)?;

    let plan = CheckpointPlan {
        after_txns: job.checkpoint_at_fraction.map(|f| ((spec.txns as f64 * f).round() as u64).max(1)),
        after: job.checkpoint_at_fraction.zip(job.seconds).map(|(f, s)| Duration::from_secs_f64(s * f)),
    };
    let stats_before = engine.stats();
    let persist_before = db.region().map(|r| r.stats());
    let declog_before = declog_counts(&engine);
    let cpu_before = process_cpu_s();
    let outcome = run(
        &engine,
        &generator,
        job.workers,
        job.txns_in_flight,
        plan,
        job.seconds.map(Duration::from_secs_f64),
    )?;
    let run_cpu_s = process_cpu_s() - cpu_before;
    let stats_after = engine.stats();
    let persist = db.region().map(|r| r.stats()).zip(persist_before).map(|(a, b)| PersistCounts::from(a - b));
    let declog = declog_counts(&engine).zip(declog_before).map(|(a, b)| DeclogCounts {
        entries: a.entries - b.entries,
        batches: a.batches - b.batches,
        deferred_tails: a.deferred_tails - b.deferred_tails,
        batch_bytes: a.batch_bytes - b.batch_bytes,
        payload_bytes_submitted: a.payload_bytes_submitted - b.payload_bytes_submitted,
        payload_bytes_logged: a.payload_bytes_logged - b.payload_bytes_logged,
    });
    let result = ChildResult {
        committed_txns: outcome.committed,
        run_s: outcome.elapsed.as_secs_f64(),
        run_cpu_s,
        load_s: load_time.as_secs_f64(),
        latency: LatencySummary::from_ns(outcome.latencies_ns),
        retries: outcome.retries,
        reads: outcome.reads,
        reads_missing: outcome.reads_missing,
        persist,
        // `none` counts what it would have logged; it writes nothing.
        log_bytes_written: if job.variant()?.protocol == Protocol::None {
            0
        } else {
            stats_after.log_bytes_written - stats_before.log_bytes_written
        },
        declog,
        txns_with_lsn: outcome.txns_with_lsn,
        checkpoint_s: outcome.checkpoint_s,
        checkpoints_during_run: stats_after.checkpoints - stats_before.checkpoints,
        last_inserts: outcome.last_inserts,
    };
    Ok((result, db))
}

/// DecLog's counters so far, for a DecLog engine.
fn declog_counts(engine: &SeriesEngine) -> Option<DeclogCounts> {
    let s = engine.declog()?.log().stats();
    Some(DeclogCounts {
        entries: s.entries,
        batches: s.batches,
        deferred_tails: s.update_tails,
        batch_bytes: s.batch_bytes,
        payload_bytes_submitted: s.payload_bytes_submitted,
        payload_bytes_logged: s.payload_bytes_logged,
    })
}
