//! The time-series storage structure (declog.txt sections 2.1 and 5.1, a
//! Beringei/Gorilla-style store): a persistent series index, per-series open
//! blocks in DRAM compressed with Gorilla, sealed blocks in immutable block
//! files on SSD, and durability through a commit log from `strata-log`.
//!
//! The crash tests of the engine live in `strata-crashtest`; the bugs they
//! plant to show they catch them are [`crashtest_hooks`] (only for this
//! crate's tests and the `crashtest` feature).

#![forbid(unsafe_code)]

pub mod block_file;
mod bytes;
pub mod core;
#[cfg(any(test, feature = "crashtest"))]
pub mod crashtest_hooks;
pub mod declog;
pub mod engine;
pub mod error;
mod framed_file;
pub mod gorilla;
pub mod index;
pub mod last_point;
pub mod manifest;
pub mod model;
pub mod options;
pub mod protocol;
pub mod recovery;
pub mod reference;
pub mod retention;
pub mod retention_file;
pub mod series_data;
pub mod storage_full;
pub mod store;
pub mod tag_index;
pub mod txn;
pub mod wal;
pub mod window_agg;

pub use crate::core::checkpoint::CheckpointReport;
pub use crate::core::compact::{CompactMode, CompactionReport, CompactionSkip};
pub use crate::core::EngineCounters;
pub use declog::{DeclogEngineOptions, DeclogOpener, DeclogProtocol, DeclogSide};
pub use engine::{EngineStats, SeriesEngine};
pub use error::{EngineError, FormatError};
pub use model::{FieldType, FieldValue, Point, SeriesId, SeriesKey, TimeRange, TimestampNs};
pub use options::EngineOptions;
pub use protocol::wal::WalOpener;
pub use protocol::{ProtocolOpener, SeriesProtocol};
pub use recovery::{RecoveryPhase, RecoveryReport};
pub use store::{LineRejection, SeriesInfo, SeriesStore, WriteOutcome};
pub use txn::{TxnOp, TxnOutcome, ValueRef};
pub use window_agg::{PartialAggregate, WindowSpec};
