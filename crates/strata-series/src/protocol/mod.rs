//! The series engine's commit protocols (DESIGN.md section 5): one trait,
//! [`SeriesProtocol`], with sibling implementations:
//! - [`wal::WalProtocol`]: one WAL record per transaction through any
//!   `strata_log::CommitLog`: `none` (no log, the upper bound), `serial`
//!   on PMem (a fence per record, the paper's Beringei-NVM baseline) or on
//!   SSD (group fsync); declog.txt section 3.1;
//! - `crate::declog::DeclogProtocol`: DecLog (declog.txt section 4).
//!
//! A protocol owns its log and everything it needs to order transactions
//! (the serial order mutex and apply tickets; DecLog's extended timestamps,
//! LSN protocol and cut lock), and drives the engine's parts
//! ([`crate::core::SeriesCore`]) through their narrow interfaces: plan,
//! publish, apply, read, seal, manifest.
//!
//! Opening is two steps: the engine facade opens the log device and hands
//! a [`ProtocolOpener`] to `SeriesEngine::open`, which loads the checkpoint
//! and then lets the opener replay its log into the core and become the
//! running protocol.
//!
//! To add a protocol: a module implementing both traits, and one
//! registration line in the facade's protocol registry
//! (`strata-engine/src/protocols/mod.rs`).

pub mod wal;

use std::any::Any;

use strata_pmem::PersistStats;

use crate::core::checkpoint::CheckpointReport;
use crate::core::SeriesCore;
use crate::error::EngineError;
use crate::manifest::Manifest;
use crate::model::Point;
use crate::recovery::{RecoveryPhase, RecoveryReport};
use crate::store::WriteOutcome;
use crate::txn::{TxnOp, TxnOutcome};
use crate::wal::WalRecord;

/// A running commit protocol of a series engine.
pub trait SeriesProtocol: Send + Sync {
    /// The protocol's name, as configured and stored in the manifest.
    fn name(&self) -> &'static str;

    /// Writes one request as one transaction and returns once it is durable
    /// and visible (points that do not type-check are rejected on their own).
    fn write(&self, core: &SeriesCore, db: &str, points: &[Point]) -> Result<WriteOutcome, EngineError>;

    /// Runs `ops` as one transaction.
    fn execute(&self, core: &SeriesCore, db: &str, ops: &[TxnOp]) -> Result<TxnOutcome, EngineError>;

    /// Runs independent transactions submitted together, as concurrent
    /// clients would: each is atomic and acknowledged on its own and sees
    /// every earlier one. By default one after the other.
    fn execute_group(
        &self,
        core: &SeriesCore,
        db: &str,
        txns: &[Vec<TxnOp>],
    ) -> Vec<Result<TxnOutcome, EngineError>> {
        txns.iter().map(|ops| self.execute(core, db, ops)).collect()
    }

    /// Commits a rare whole-database operation (create a database, a range
    /// delete, a drop) synchronously, with no transaction in flight, and
    /// applies it.
    fn commit_barrier(&self, core: &SeriesCore, rec: WalRecord) -> Result<(), EngineError>;

    /// Takes a checkpoint: seals the DRAM points into a block file, writes
    /// the manifest, frees the log it covers.
    fn checkpoint(&self, core: &SeriesCore) -> Result<CheckpointReport, EngineError>;

    /// Bytes of log written since the last checkpoint (the size trigger).
    fn log_bytes_since_checkpoint(&self, core: &SeriesCore) -> u64;

    /// The log device's persist counters, when the protocol owns a PMem
    /// region (the facade reports the shared pool's itself).
    fn persist_stats(&self) -> Option<PersistStats> {
        None
    }

    /// Whether the protocol asks for a checkpoint now (its log is getting
    /// full): the engine's background checkpointer runs one.
    fn checkpoint_wanted(&self) -> bool {
        false
    }

    /// Writers held back for lack of log room since open: how many times,
    /// and for how long in total.
    fn log_throttles(&self) -> (u64, u64) {
        (0, 0)
    }

    /// Bytes written to the log device since open, padding included, when
    /// the protocol counts them itself; `None`: the engine's count of
    /// committed log record bytes is exact.
    fn log_device_bytes(&self) -> Option<u64> {
        None
    }

    /// For callers that need one protocol's own counters (benchmarks,
    /// crash tests): downcast with `as_any().downcast_ref::<P>()`.
    fn as_any(&self) -> &dyn Any;
}

/// An opened log device, not yet recovered.
pub trait ProtocolOpener {
    /// The protocol's name (compared with the manifest's).
    fn name(&self) -> &'static str;

    /// Phase 3 of recovery: replays what the log holds past the checkpoint
    /// (`manifest`) into `core`, filling in the report's log figures, and
    /// returns the running protocol.
    fn recover(
        self: Box<Self>,
        core: &SeriesCore,
        manifest: Option<&Manifest>,
        report: &mut RecoveryReport,
        progress: &dyn Fn(RecoveryPhase, u64, u64),
    ) -> Result<Recovered, EngineError>;
}

/// What [`ProtocolOpener::recover`] returns.
pub struct Recovered {
    pub protocol: Box<dyn SeriesProtocol>,
    /// The manifest names another log: checkpoint right after opening, so
    /// it names this one.
    pub checkpoint_now: bool,
}
