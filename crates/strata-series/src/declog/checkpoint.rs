//! DecLog's checkpoint (declog.txt 4.5), which does not block inserts, and
//! the barrier that makes rare whole-database operations durable under
//! DecLog.
//!
//! Checkpoint, in the paper's four steps:
//! 1. take the cut lock exclusively: it waits for the transactions in
//!    flight to be applied and holds new ones back for the (short) cut;
//! 2. [`strata_declog::DecLog::cut`] persists what is queued and returns
//!    each stream's end (the paper's "offsets of log blocks"), and, with
//!    compression, copies the key hash table to its checkpoint area and
//!    clears it (the paper's step 4, done at the cut); freeze the series'
//!    DRAM points (the "dirty data" at `t1`);
//! 3. reset every extended timestamp (`ControlTable::reset`) and start a
//!    new LSN era (our `t_LSN`, see `super::side`); release the cut lock:
//!    inserts *and* updates go on from here;
//! 4. seal the frozen points into a block file, write the manifest naming
//!    the cut (`declog_cut`), then purge the log before the cut
//!    (`truncate_to`).
//!
//! A crash before the manifest leaves the previous checkpoint and a log
//! that still holds everything since it; a crash after it leaves entries
//! before the cut, which recovery skips (`super::replay`).
//!
//! Block-file compaction is not part of it: a full stream waits for this
//! procedure (a writer may run it inline), so it frees the log as soon as
//! the manifest is written. The engine's background checkpointer compacts
//! afterwards (`crate::core::compact`), under the same checkpoint-running
//! lock (`SeriesCore::checkpoint_running`) but without the cut lock.
//!
//! The barrier: `CREATE DATABASE`, `DELETE` and the drops (`DROP MEASUREMENT`,
//! `DROP SERIES`, `DROP DATABASE`) are not
//! DecLog operations (they are not per point). They run with the cut lock
//! held exclusively for a whole checkpoint: the change is applied to the
//! state and made durable by the manifest, and no transaction runs until
//! the manifest is written. They are rare; their cost is one checkpoint.

use std::time::Instant;

use super::protocol::DeclogProtocol;
use super::side::MAX_ERA;
use crate::core::checkpoint::{CheckpointReport, LogPosition};
use crate::core::SeriesCore;
use crate::error::EngineError;
use crate::wal::WalRecord;

impl DeclogProtocol {
    /// A DecLog checkpoint (see the module comment).
    pub(crate) fn checkpoint_declog(&self, core: &SeriesCore) -> Result<CheckpointReport, EngineError> {
        self.declog_checkpoint_with(core, None)
    }

    /// Applies `rec` and makes it durable by a checkpoint, with every
    /// transaction held back meanwhile.
    pub(crate) fn declog_barrier(&self, core: &SeriesCore, rec: &WalRecord) -> Result<(), EngineError> {
        core.health().check()?;
        self.declog_checkpoint_with(core, Some(rec)).map(|_| ())
    }

    fn declog_checkpoint_with(
        &self,
        core: &SeriesCore,
        barrier: Option<&WalRecord>,
    ) -> Result<CheckpointReport, EngineError> {
        let dl = &self.side;
        let _running = core.checkpoint_running().lock();
        dl.checkpoint_wanted.store(false, std::sync::atomic::Ordering::Release);
        let started = Instant::now();
        let mut report = CheckpointReport::default();
        let before = dl.log_bytes();

        // 1.-3. The cut, with nothing in flight.
        let cut_lock = dl.cut.write();
        if let Some(rec) = barrier {
            core.apply_record(rec, false);
            core.count_commit(0, 0, 0);
        }
        let cut = dl.log.cut().map_err(|e| cut_failed(core, e))?;
        core.data().freeze_all();
        dl.control.reset().map_err(EngineError::CheckpointRefused)?;
        let era = dl.era();
        if era >= MAX_ERA {
            return Err(EngineError::LsnEraExhausted { era });
        }
        dl.era.store(era + 1, std::sync::atomic::Ordering::Relaxed);
        let cut_lock = if barrier.is_some() { Some(cut_lock) } else { None };

        // 4. Seal, manifest, purge.
        core.seal_frozen(&mut report)?;
        let position = LogPosition {
            protocol: self.side.options.name.to_string(),
            checkpoint_lsn: 0,
            declog_cut: cut.ends.clone(),
        };
        let checkpoint_seq = core.write_checkpoint_manifest(position)?;
        dl.log.truncate_to(&cut.ends).map_err(|e| cut_failed(core, e))?;
        drop(cut_lock);
        report.log_bytes_freed = before.saturating_sub(dl.log_bytes());
        core.finish_checkpoint(&mut report, checkpoint_seq, started);
        Ok(report)
    }
}

/// A failed cut or purge leaves the streams in a state no later commit
/// may build on: writes stop until a restart recovers.
fn cut_failed(core: &SeriesCore, e: strata_declog::DeclogError) -> EngineError {
    core.health().poison(format_args!("declog checkpoint: {e}"));
    EngineError::Declog(e)
}
