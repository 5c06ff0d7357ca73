//! Recovery for the DecLog crash lines (`crate::series_declog`): opening the
//! log and the engine from a crash image, reading the state back, and the
//! resume check (one more transaction on the recovered engine, then a second
//! restart).
//!
//! Every recovery runs on its own thread under a watchdog: a recovery that
//! does not finish within [`RECOVERY_TIMEOUT`] (a deadlock) or panics is
//! reported as a failed image instead of hanging or aborting the suite. A
//! hung thread is left behind.

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use crate::error::CrashCheckError;
use strata_declog::layout::DECLOG_MAGIC;
use strata_declog::{DecLog, FlushMode, Recovered};
use strata_media::fs::{FaultFs, FileSystem, Tear};
use strata_pmem::{Region, RegionOffset};
use strata_series::{DeclogEngineOptions, EngineOptions, Point, SeriesEngine, TxnOp};

use crate::series_declog_workload::{
    apply, read_model, DeclogPlan, Model, PointKey, Step, Val, FIELDS, HOSTS, MEASUREMENT,
};

pub const LOG_BASE: RegionOffset = RegionOffset(0);
const ENGINE_DIR: &str = "/series";
/// Far above any healthy recovery of these small logs, even in a debug build
/// on a loaded machine.
pub const RECOVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// How the engine is opened over DecLog; owned, so recovery can run on a
/// watchdog thread.
#[derive(Copy, Clone, Debug)]
pub struct Opener {
    pub engine: DeclogEngineOptions,
    pub replay_threads: usize,
}

impl Opener {
    /// Opens the engine over `log` (whose parse is `recovered`), files on `fs`.
    pub fn open_engine(
        &self,
        fs: Arc<dyn FileSystem>,
        log: DecLog,
        recovered: Recovered,
    ) -> Result<Arc<SeriesEngine>, CrashCheckError> {
        // Two files at most, so the compactions after explicit checkpoints
        // merge block files.
        let opts = EngineOptions {
            fs,
            checkpoint_interval: None,
            compact_above_files: 2,
            ..EngineOptions::new(ENGINE_DIR)
        };
        let opener = strata_series::DeclogOpener::boxed(log, recovered, self.engine, self.replay_threads);
        SeriesEngine::open(opts, opener, &|_, _, _| {})
            .map(|(engine, _)| engine)
            .map_err(CrashCheckError::step("open_declog"))
    }

    /// Opens what `region` and `fs` hold: None when no log was ever formatted.
    pub fn recover(
        &self,
        region: &Arc<Region>,
        fs: FaultFs,
    ) -> Result<Option<Arc<SeriesEngine>>, CrashCheckError> {
        let (log, recovered) = match DecLog::open_with_mode(region.clone(), LOG_BASE, FlushMode::Inline) {
            Ok(opened) => opened,
            // Formatting persists the magic last: without it nothing was
            // formatted, let alone acknowledged.
            Err(_) if region.load_u64(LOG_BASE) != DECLOG_MAGIC => return Ok(None),
            Err(e) => return Err(CrashCheckError::inconsistent(format!("DecLog::open: {e}"))),
        };
        self.open_engine(Arc::new(fs), log, recovered).map(Some)
    }

    /// [`Opener::recover`] and a read of every point, under the watchdog.
    pub fn recover_state(
        self,
        region: Arc<Region>,
        fs: FaultFs,
    ) -> Result<Option<(Arc<SeriesEngine>, Model)>, CrashCheckError> {
        watchdog("recovery", move || match self.recover(&region, fs)? {
            Some(engine) => {
                let state = read_model(engine.as_ref())?;
                Ok(Some((engine, state)))
            }
            None => Ok(None),
        })
    }
}

/// Runs `f` on its own thread; a panic or a run past [`RECOVERY_TIMEOUT`] is an error.
pub fn watchdog<T: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> Result<T, CrashCheckError> + Send + 'static,
) -> Result<T, CrashCheckError> {
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name(format!("crashtest-{what}"))
        .spawn(move || {
            let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
        })
        .map_err(CrashCheckError::step("starting the recovery thread"))?;
    match rx.recv_timeout(RECOVERY_TIMEOUT) {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => {
            Err(CrashCheckError::Panicked { what: what.into(), message: panic_message(panic.as_ref()) })
        }
        Err(RecvTimeoutError::Timeout) => {
            Err(CrashCheckError::TimedOut { what: what.into(), secs: RECOVERY_TIMEOUT.as_secs() })
        }
        Err(RecvTimeoutError::Disconnected) => {
            Err(CrashCheckError::inconsistent(format!("the {what} thread vanished")))
        }
    }
}

pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".into())
}

/// The transaction run after recovery, in database 0 (None if it does not
/// exist): update the live point with the most writers, re-write the point
/// with the most writers that a delete left absent, delete another live
/// point, append one past every timestamp of the plan.
pub fn continuation(plan: &DeclogPlan, state: &Model) -> Option<Step> {
    if !state.databases.contains(&0) {
        return None;
    }
    let step = plan.steps.len() + 1;
    let writers = |k: &PointKey| plan.histories.get(k).map_or(0, |h| h.len());
    let live: Vec<PointKey> = state.points.keys().filter(|k| k.db == 0).copied().collect();
    let mut effects: Vec<(PointKey, Option<Val>)> = Vec::new();
    let mut ops = Vec::new();
    let write = |k: PointKey, op: usize, ops: &mut Vec<TxnOp>, effects: &mut Vec<(PointKey, Option<Val>)>| {
        let v = Val::unique(step, op, k.field);
        effects.push((k, Some(v)));
        ops.push(TxnOp::Write(Point {
            measurement: MEASUREMENT.into(),
            tags: vec![("host".into(), HOSTS[k.host as usize].into())],
            fields: vec![(FIELDS[k.field as usize].into(), v.field_value())],
            timestamp_ns: k.ts,
        }));
    };
    if let Some(hot) = live.iter().max_by_key(|k| (writers(k), k.ts)).copied() {
        write(hot, 0, &mut ops, &mut effects);
    }
    let deleted = plan
        .histories
        .iter()
        .filter(|(k, h)| k.db == 0 && !state.points.contains_key(k) && h.iter().any(|(_, v)| v.is_none()))
        .max_by_key(|(k, h)| (h.len(), k.ts))
        .map(|(k, _)| *k);
    if let Some(k) = deleted {
        write(k, 1, &mut ops, &mut effects);
    }
    if let Some(k) = live.iter().find(|k| effects.iter().all(|(e, _)| e != *k)).copied() {
        ops.push(TxnOp::Delete { value: k.value_ref(), ts: k.ts });
        effects.push((k, None));
    }
    let appended = PointKey { db: 0, host: 0, field: 0, ts: plan.max_ts() + 1000 };
    write(appended, 2, &mut ops, &mut effects);
    Some(Step::Txn { db: 0, ops, effects, reads: Vec::new() })
}

/// The resume check: runs `next` on the recovered `engine`, restarts from
/// the persistent image and the durable files, and compares with `state`
/// plus `next`. Err describes a mismatch.
pub fn resume(
    opener: Opener,
    engine: Arc<SeriesEngine>,
    fs: FaultFs,
    state: &Model,
    next: Step,
) -> Result<(), CrashCheckError> {
    let mut want = state.clone();
    apply(&mut want, &next);
    let Step::Txn { ops, .. } = next else { return Ok(()) };
    let got = watchdog("resume", move || {
        engine
            .execute(crate::series_declog_workload::DATABASES[0], &ops)
            .map_err(CrashCheckError::step("the transaction after recovery failed"))?;
        let region = engine
            .declog()
            .map(|d| d.log().region().clone())
            .ok_or_else(|| CrashCheckError::inconsistent("no DecLog after recovery"))?;
        drop(engine);
        let image = region
            .as_sim()
            .ok_or_else(|| CrashCheckError::inconsistent("not a simulator"))?
            .persistent_image();
        let region = Arc::new(Region::sim_from_image(image));
        let again = opener
            .recover(&region, fs.crash(Tear::None))?
            .ok_or_else(|| CrashCheckError::inconsistent("the log vanished after the restart"))?;
        read_model(again.as_ref())
    })?;
    if got == want {
        return Ok(());
    }
    let diff: Vec<String> = want
        .points
        .keys()
        .chain(got.points.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|k| want.points.get(k) != got.points.get(k))
        .take(4)
        .map(|k| format!("{k}: {:?}, expected {:?}", got.points.get(k), want.points.get(k)))
        .collect();
    Err(CrashCheckError::inconsistent(format!(
        "after one more transaction and a restart: {}",
        diff.join("; ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series_declog_workload::WorkloadShape;

    #[test]
    fn the_watchdog_reports_hangs_and_panics() {
        let ok = watchdog("quick", || Ok(7));
        assert_eq!(ok.unwrap(), 7);
        let panicked: Result<(), CrashCheckError> = watchdog("boom", || panic!("kaboom"));
        assert!(panicked.unwrap_err().to_string().contains("kaboom"));
    }

    #[test]
    fn the_continuation_updates_rewrites_deletes_and_appends() {
        let plan = DeclogPlan::new(9, WorkloadShape::mixed(120));
        let state = plan.states[120].clone();
        let Some(Step::Txn { ops, effects, .. }) = continuation(&plan, &state) else {
            panic!("no continuation")
        };
        assert_eq!(ops.len(), 4, "{ops:?}");
        let keys: BTreeSet<_> = effects.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys.len(), 4, "four distinct points");
        let rewritten = effects[1].0;
        assert!(!state.points.contains_key(&rewritten), "the re-written point was deleted");
        assert!(continuation(&plan, &plan.states[0]).is_none(), "no database yet");
    }
}
