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
//! The series engine does not use this module yet; it will compute an LSN
//! per request with [`acquire`], write the log entry, apply it, then
//! [`LsnGuard::commit`], and call [`ControlTable::reset`] from its
//! checkpoint with update transactions blocked.

pub mod control_table;
pub mod ext_ts;
pub mod lsn;

#[cfg(test)]
mod tests;

pub use control_table::{ControlTable, PointRef, ResetRefused};
pub use ext_ts::{ExtTimestamp, ExtTimestampError, UTS_MAX};
pub use lsn::{acquire, DataLsn, LsnError, LsnGuard, TxnAccess};
