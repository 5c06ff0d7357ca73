//! [`WalProtocol`]: one WAL record (`crate::wal`) per transaction through a
//! `strata_log::CommitLog`: `none`, serial on PMem, serial on SSD
//! (declog.txt section 3.1, the baselines of section 5).
//!
//! Write path (one request = one transaction = one record):
//! 1. under the *order* mutex: plan the request (type-check, new series
//!    ids), encode the record, submit it to the log (which fixes its place
//!    in the replay order), publish the new series, take a ticket;
//! 2. outside it: wait until the log says the record is durable (group
//!    commit on SSD lets concurrent requests share one fdatasync);
//! 3. apply in ticket order (= log order, so live state equals replayed
//!    state even for two requests overwriting the same point) under the
//!    apply gate, so a request is visible all at once or not at all;
//! 4. acknowledge.
//!
//! Barriers (create database, range delete, drop) drain the applier and
//! commit synchronously under the order mutex. A checkpoint runs under the
//! order mutex too (new commits wait, readers go on) and the core's
//! checkpoint-running lock: drain, freeze, seal, manifest naming the log's
//! end `L`, truncate. A crash before the manifest leaves the old one, which
//! does not list the new block file: recovery deletes it and replays the
//! log; a crash after it leaves records with LSN <= L, which recovery
//! skips. Blocking commits during a checkpoint is the baseline's cost;
//! DecLog (section 4.5) removes it.
//!
//! Block-file compaction (`crate::core::compact`) is not part of the
//! checkpoint: it runs afterwards on the engine's background checkpointer,
//! without the order mutex, so commits go on during it. A writer that
//! checkpoints inline because the log is full never compacts (it may wait
//! for a compaction in progress to finish, as it would for a checkpoint).

use std::any::Any;
use std::time::Instant;

use parking_lot::{Condvar, Mutex, MutexGuard};
use strata_log::{CommitLog, LogError, LogRecord, Lsn};
use strata_media::TxnId;

use super::{ProtocolOpener, Recovered, SeriesProtocol};
use crate::core::checkpoint::{CheckpointReport, LogPosition};
use crate::core::SeriesCore;
use crate::error::EngineError;
use crate::manifest::Manifest;
use crate::model::Point;
use crate::recovery::{RecoveryPhase, RecoveryReport};
use crate::store::WriteOutcome;
use crate::txn::{written_points, TxnOp, TxnOutcome};
use crate::wal::WalRecord;

/// State guarded by the order mutex.
struct OrderState {
    next_txn: u64,
    next_ticket: u64,
}

pub struct WalProtocol {
    log: Box<dyn CommitLog>,
    order: Mutex<OrderState>,
    /// Tickets applied so far (the apply turn).
    applied: Mutex<u64>,
    applied_changed: Condvar,
}

impl WalProtocol {
    fn new(log: Box<dyn CommitLog>) -> WalProtocol {
        WalProtocol {
            log,
            order: Mutex::new(OrderState { next_txn: 1, next_ticket: 0 }),
            applied: Mutex::new(0),
            applied_changed: Condvar::new(),
        }
    }

    /// Waits until every ticket handed out has been applied (or skipped).
    fn drain(&self, order: &OrderState) {
        let mut applied = self.applied.lock();
        while *applied < order.next_ticket {
            self.applied_changed.wait(&mut applied);
        }
    }

    /// Runs `apply` when it is `ticket`'s turn, then passes the turn on.
    fn apply_in_order(&self, ticket: u64, apply: impl FnOnce()) {
        let mut applied = self.applied.lock();
        while *applied != ticket {
            self.applied_changed.wait(&mut applied);
        }
        apply();
        *applied += 1;
        self.applied_changed.notify_all();
    }

    /// A log failure that leaves the log refusing writes stops the engine.
    fn failed(&self, core: &SeriesCore, e: LogError) -> EngineError {
        if matches!(e, LogError::Poisoned(_)) {
            core.health().poison(&e);
        }
        e.into()
    }

    /// Submits a record under the order mutex; a full PMem ring checkpoints
    /// (emptying the log) and retries once.
    fn submit_locked(
        &self,
        core: &SeriesCore,
        order: &mut MutexGuard<'_, OrderState>,
        payload: &[u8],
    ) -> Result<Lsn, EngineError> {
        let txn = TxnId(order.next_txn);
        order.next_txn += 1;
        match self.log.submit(txn, payload) {
            Err(LogError::Full { .. }) => {
                self.checkpoint_locked(core, order)?;
                self.log.submit(txn, payload).map_err(|e| self.failed(core, e))
            }
            other => other.map_err(|e| self.failed(core, e)),
        }
    }

    fn checkpoint_locked(
        &self,
        core: &SeriesCore,
        order: &mut MutexGuard<'_, OrderState>,
    ) -> Result<CheckpointReport, EngineError> {
        let started = Instant::now();
        self.drain(order);
        let _running = core.checkpoint_running().lock();
        let cut = self.log.end();
        let prev_lsn = core.blocks().mark().checkpoint_lsn;
        let mut report = CheckpointReport { checkpoint_lsn: cut.0, ..Default::default() };
        // Freeze: commits are excluded by the order mutex, so this is the
        // DRAM state at `cut`; then seal and install.
        core.data().freeze_all();
        core.seal_frozen(&mut report)?;
        let position =
            LogPosition { protocol: self.name().to_string(), checkpoint_lsn: cut.0, declog_cut: Vec::new() };
        let checkpoint_seq = core.write_checkpoint_manifest(position)?;
        // A failed segment rotation leaves the log refusing appends: stop
        // writes with a clear reason. (Failing to remove the old segment is
        // harmless: the manifest covers it and open removes it.)
        self.log.truncate_all().map_err(|e| self.failed(core, e))?;
        report.log_bytes_freed = cut.0.saturating_sub(prev_lsn.0);
        core.finish_checkpoint(&mut report, checkpoint_seq, started);
        Ok(report)
    }
}

impl SeriesProtocol for WalProtocol {
    fn name(&self) -> &'static str {
        self.log.name()
    }

    fn write(&self, core: &SeriesCore, db: &str, points: &[Point]) -> Result<WriteOutcome, EngineError> {
        let mut order = self.order.lock();
        core.health().check()?;
        let (rec, outcome) = core.plan_write(db, points)?;
        if outcome.points_written == 0 {
            return Ok(outcome);
        }
        let payload = rec.encode();
        let max_bytes = self.log.max_payload_bytes();
        if payload.len() as u64 > max_bytes {
            return Err(EngineError::RequestTooLarge { record_bytes: payload.len() as u64, max_bytes });
        }
        let lsn = self.submit_locked(core, &mut order, &payload)?;
        if let WalRecord::Write { db, new_series, .. } = &rec {
            core.publish_new_series(db, new_series);
        }
        let ticket = order.next_ticket;
        order.next_ticket += 1;
        drop(order);
        let durable = self.log.wait(lsn);
        if let Err(e) = &durable {
            core.health().poison(e);
        }
        self.apply_in_order(ticket, || {
            if durable.is_ok() {
                core.apply_record(&rec, false);
            }
        });
        durable?;
        let log_bytes = strata_log::record::record_len(payload.len() as u64);
        core.count_commit(outcome.points_written, outcome.values_written, log_bytes);
        Ok(outcome)
    }

    /// Writes as one record like a `/write` request, then the reads. Point
    /// deletes need DecLog: the serial WAL has range deletes only (`DELETE`).
    fn execute(&self, core: &SeriesCore, db: &str, ops: &[TxnOp]) -> Result<TxnOutcome, EngineError> {
        if ops.iter().any(|op| matches!(op, TxnOp::Delete { .. })) {
            return Err(EngineError::Unsupported {
                what: "point deletes in transactions",
                protocol: self.name(),
            });
        }
        let points = written_points(ops);
        let mut out = TxnOutcome::default();
        if !points.is_empty() {
            out.write = self.write(core, db, &points)?;
        }
        for op in ops {
            if let TxnOp::Read { value, ts } = op {
                out.reads.push(core.read_value(db, value, *ts)?);
            }
        }
        Ok(out)
    }

    fn commit_barrier(&self, core: &SeriesCore, rec: WalRecord) -> Result<(), EngineError> {
        let mut order = self.order.lock();
        core.health().check()?;
        self.drain(&order);
        let payload = rec.encode();
        let lsn = self.submit_locked(core, &mut order, &payload)?;
        self.log.wait(lsn).map_err(|e| {
            core.health().poison(&e);
            EngineError::from(e)
        })?;
        core.apply_record(&rec, false);
        *self.applied.lock() += 1;
        order.next_ticket += 1;
        core.count_commit(0, 0, strata_log::record::record_len(payload.len() as u64));
        Ok(())
    }

    fn checkpoint(&self, core: &SeriesCore) -> Result<CheckpointReport, EngineError> {
        let mut order = self.order.lock();
        self.checkpoint_locked(core, &mut order)
    }

    fn log_bytes_since_checkpoint(&self, core: &SeriesCore) -> u64 {
        self.log.end().0.saturating_sub(core.blocks().mark().checkpoint_lsn.0)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A `CommitLog` opened by the facade, with its committed records in LSN order.
pub struct WalOpener {
    log: Box<dyn CommitLog>,
    records: Vec<LogRecord>,
}

impl WalOpener {
    pub fn boxed(log: Box<dyn CommitLog>, records: Vec<LogRecord>) -> Box<WalOpener> {
        Box::new(WalOpener { log, records })
    }
}

impl ProtocolOpener for WalOpener {
    fn name(&self) -> &'static str {
        self.log.name()
    }

    /// Records with LSN <= the manifest's checkpoint LSN are skipped when
    /// the log is the one the manifest was written with and has not been
    /// re-created (a re-created log's records are all new). A log of
    /// another protocol than the manifest names is not replayed at all (the
    /// facade erased it when it last switched away from it); then the
    /// engine checkpoints right after opening, so the manifest names this log.
    fn recover(
        self: Box<Self>,
        core: &SeriesCore,
        manifest: Option<&Manifest>,
        report: &mut RecoveryReport,
        progress: &dyn Fn(RecoveryPhase, u64, u64),
    ) -> Result<Recovered, EngineError> {
        let WalOpener { log, records } = *self;
        let name = log.name();
        let same_log = manifest.is_none_or(|m| m.protocol == name && log.end().0 >= m.checkpoint_lsn);
        let foreign = manifest.is_some_and(|m| m.protocol != name);
        let checkpoint_lsn = Lsn(manifest.map_or(0, |m| m.checkpoint_lsn));
        if !same_log {
            let mark = core.blocks().mark();
            core.blocks().set_mark(crate::core::blocks::CheckpointMark { checkpoint_lsn: Lsn(0), ..mark });
        }
        let t = Instant::now();
        report.log_records = records.len();
        let total = records.len() as u64;
        for (i, r) in records.into_iter().enumerate() {
            if i % 1024 == 0 {
                progress(RecoveryPhase::Replay, i as u64, total);
            }
            if foreign || (same_log && manifest.is_some() && r.lsn <= checkpoint_lsn) {
                report.log_records_skipped += 1;
                continue;
            }
            let rec = WalRecord::decode(&r.payload).map_err(|why| {
                EngineError::corruption("commit log", format!("record at LSN {} ({}): {why}", r.lsn.0, r.txn))
            })?;
            report.points_replayed += core.apply_record(&rec, true);
        }
        report.replay_s = t.elapsed().as_secs_f64();
        progress(RecoveryPhase::Replay, total, total);
        Ok(Recovered {
            protocol: Box::new(WalProtocol::new(log)),
            checkpoint_now: manifest.is_some() && !same_log,
        })
    }
}
