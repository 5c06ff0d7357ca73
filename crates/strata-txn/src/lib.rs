//! Transactional tables (issue 16, first part) with the parallel logging of
//! Taurus (taurus.txt section 3) and its baselines.
//!
//! - [`lv`]: the LSN Vector (3.1), element-wise max and `≤` written so the
//!   compiler vectorises them (4.2);
//! - [`store`]: rows of fixed-schema tables by primary key (the hash
//!   index), each with its 2PL NO_WAIT lock and, in the lock's latch, the
//!   tuple's `readLV`/`writeLV` (3.2, "maintained in the lock table");
//! - [`cc`]: the concurrency control behind one trait: 2PL NO_WAIT
//!   (Algorithm 1) and OCC (Algorithm 6);
//! - [`txn`]: a transaction: `get`/`put`/`insert`/`delete`, then `commit`
//!   (Algorithm 1: the log record carries a copy of `T.LV`, then `T.LV[i]`
//!   becomes its LSN, the tuples' LVs are updated and the locks released
//!   before the record is durable: early lock release) or `abort`;
//! - [`log`]: the logging schemes behind [`log::TxnLogging`] (`none`,
//!   `serial`, `taurus`, `silo-r`), the log manager of Algorithm 2 and the log
//!   devices (emulated PMem, SSD file, optional bandwidth limit);
//! - [`access`]: the transactional-table API every engine implements
//!   (procedures' row accesses, base-state loading, running by procedure);
//! - [`procedures`]: stored procedures by id, for command logging;
//! - [`record`]: the log record (format: `docs/format/taurus-log.md`);
//! - [`recovery`]: Algorithms 3 and 4 (and serial replay);
//! - [`db`]: [`TxnDb`], the embeddable database tying them together;
//! - `planted` (feature `crashtest`): the bugs the crash lines plant.

#![forbid(unsafe_code)]

pub mod access;
pub mod cc;
pub mod db;
pub mod error;
#[cfg(any(test, feature = "fuzz"))]
pub mod fuzz;
pub mod ids;
pub mod log;
pub mod lv;
#[cfg(any(test, feature = "crashtest"))]
pub mod planted;
pub mod procedures;
pub mod record;
pub mod recovery;
pub mod store;
pub mod txn;

pub use access::{RowAccess, RowLoader, TxnEngine};
pub use cc::CcKind;
pub use db::{open_redo_log, TableSchema, TxnDb, TxnDbOptions};
pub use error::TxnError;
pub use ids::{LogId, RowKey, TableId, WorkerId};
pub use log::{CommitTicket, EpochClock, LogDeviceKind, LogMode, LoggingKind};
pub use lv::{Lv, MAX_LOGS};
pub use procedures::{ProcId, Procedures};
pub use txn::Txn;
