//! Logging layer (DESIGN.md section 2, "logging / commit protocols").
//!
//! Owns: the log record codec ([`record`], CRC32C and LSN on every record),
//! the PMem log device ([`pmem_log`], a ring in a persistent region), the SSD
//! log device ([`ssd_log`], an append-only file with group commit), and the
//! serial logging baseline ([`serial`], declog.txt section 3.1: one
//! centralized LSN, strict ordering).
//!
//! Formats: `docs/format/log-record.md`, `docs/format/pmem-log.md`,
//! `docs/format/ssd-log.md`.

#![forbid(unsafe_code)]

mod error;
mod lsn;
pub mod pmem_log;
pub mod record;
mod scan;
pub mod serial;
pub mod ssd_log;

pub use error::LogError;
pub use lsn::{Lsn, StreamPos};
pub use record::{LogRecord, RecordError, RecordKind};
pub use serial::{CommitLog, NoLog, SerialLog};
pub use strata_media::TxnId;
