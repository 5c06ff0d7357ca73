//! [`DeclogProtocol`]: DecLog as a series commit protocol
//! (`crate::protocol::SeriesProtocol`, declog.txt section 4): the log and
//! its engine-side state ([`DeclogSide`]), plus what each series' planned
//! writes touched, by which a written point is an insert or an update
//! (4.1.2, `touched`).
//! The work is in the sibling files: `write_path` (4.1-4.3), `checkpoint`
//! (4.5 and the barrier), `replay` (4.6, [`super::replay::DeclogOpener`]).

use std::any::Any;

use parking_lot::Mutex;
use strata_pmem::PersistStats;

use super::side::DeclogSide;
use super::touched::TouchedMap;
use super::write_path::GroupTxn;
use crate::core::checkpoint::CheckpointReport;
use crate::core::SeriesCore;
use crate::error::EngineError;
use crate::model::Point;
use crate::protocol::SeriesProtocol;
use crate::store::WriteOutcome;
use crate::txn::{written_points, TxnOp, TxnOutcome};
use crate::wal::WalRecord;

pub struct DeclogProtocol {
    pub(crate) side: DeclogSide,
    /// Held while a transaction is planned (ids handed out, points
    /// classified), so planning is serialized as in the paper's step 1.
    pub(crate) touched: Mutex<TouchedMap>,
    /// Planning's vectors, reused from transaction to transaction.
    pub(crate) run_buffers: super::runs::RunBuffers,
}

impl DeclogProtocol {
    pub(crate) fn new(side: DeclogSide, touched: TouchedMap) -> DeclogProtocol {
        DeclogProtocol { side, touched: Mutex::new(touched), run_buffers: Default::default() }
    }

    /// The log and its engine-side state.
    pub fn side(&self) -> &DeclogSide {
        &self.side
    }
}

impl SeriesProtocol for DeclogProtocol {
    fn name(&self) -> &'static str {
        self.side.options.name
    }

    fn write(&self, core: &SeriesCore, db: &str, points: &[Point]) -> Result<WriteOutcome, EngineError> {
        self.run_declog_txn(core, db, points, &[]).map(|o| o.write)
    }

    fn execute(&self, core: &SeriesCore, db: &str, ops: &[TxnOp]) -> Result<TxnOutcome, EngineError> {
        self.execute_declog(core, db, ops)
    }

    /// Consecutive insert-only transactions are all logged before the first
    /// wait, so the logging threads persist them in one flush round (group
    /// commit across transactions).
    fn execute_group(
        &self,
        core: &SeriesCore,
        db: &str,
        txns: &[Vec<TxnOp>],
    ) -> Vec<Result<TxnOutcome, EngineError>> {
        let group: Vec<GroupTxn<'_>> =
            txns.iter().map(|ops| GroupTxn { points: written_points(ops).into(), others: ops }).collect();
        self.run_declog_group(core, db, &group)
    }

    fn commit_barrier(&self, core: &SeriesCore, rec: WalRecord) -> Result<(), EngineError> {
        self.declog_barrier(core, &rec)
    }

    fn checkpoint(&self, core: &SeriesCore) -> Result<CheckpointReport, EngineError> {
        self.checkpoint_declog(core)
    }

    fn log_bytes_since_checkpoint(&self, _core: &SeriesCore) -> u64 {
        self.side.log_bytes()
    }

    fn persist_stats(&self) -> Option<PersistStats> {
        Some(self.side.log.region().stats())
    }

    fn checkpoint_wanted(&self) -> bool {
        self.side.checkpoint_wanted.load(std::sync::atomic::Ordering::Acquire)
    }

    fn log_throttles(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.side.throttles.load(Relaxed), self.side.throttled_ns.load(Relaxed))
    }

    /// Batches written to the streams (headers and alignment padding
    /// included), not the payloads as submitted.
    fn log_device_bytes(&self) -> Option<u64> {
        Some(self.side.log.stats().batch_bytes)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
