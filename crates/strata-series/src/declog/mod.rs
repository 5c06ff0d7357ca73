//! DecLog's data-driven LSNs (declog.txt section 4.1, and the reset of
//! extended timestamps at a checkpoint from section 4.5): transactions that
//! touch the same points get strictly increasing LSNs in their commit order,
//! independent transactions may share an LSN, and replaying log entries in
//! ascending LSN order rebuilds the state. No central counter is involved.
//!
//! - [`ext_ts`]: the extended timestamp word (lock, tombstone, 10-bit `uts`,
//!   52-bit timestamp) and why Strata keeps its control bits in a side table;
//! - [`control_table`]: that side table, concurrent and sharded, with the
//!   readers' wait on lock bits and the checkpoint reset (rule 5);
//! - [`lsn`]: the three-step LSN computation protocol and the guard holding
//!   a transaction's locks until its log entry is durable.
//!
//! - [`entry_key`]: what one log entry holds (4.3.1: the key, the point);
//! - [`side`]: the engine's DecLog state (log, side table, cut lock, LSN era);
//! - [`protocol`]: [`DeclogProtocol`], DecLog behind the series engine's
//!   commit-protocol trait;
//! - `write_path`: transactions under DecLog (4.1-4.3), with `runs`
//!   putting a transaction's operations in per-series runs;
//! - `checkpoint`: the non-blocking checkpoint (4.5) and the barrier for
//!   whole-database operations;
//! - `replay`: recovery (4.6): parallel LSN-0 replay, update buckets.

pub mod checkpoint;
pub mod control_table;
pub mod entry_key;
pub mod ext_ts;
mod log_size;
pub mod lsn;
pub mod protocol;
pub mod replay;
mod run_points;
mod runs;
pub mod side;
pub(crate) mod touched;
mod write_path;

#[cfg(test)]
mod tests;

pub use control_table::{ControlTable, PointRef, ResetRefused};
pub use ext_ts::{ExtTimestamp, ExtTimestampError, UTS_MAX};
pub use lsn::{acquire, DataLsn, LsnError, LsnGuard, TxnAccess};
pub use protocol::DeclogProtocol;
pub use replay::DeclogOpener;
pub use side::{DeclogEngineOptions, DeclogSide, ERA_SHIFT};
