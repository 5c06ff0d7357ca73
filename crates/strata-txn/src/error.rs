//! Errors of the transactional layer.

use crate::ids::{RowKey, TableId};

#[derive(Debug, thiserror::Error)]
pub enum TxnError {
    /// NO_WAIT: the row is locked by another transaction; this one aborted.
    #[error("lock conflict on table {table:?} key {key:?}: the transaction aborted")]
    Conflict { table: TableId, key: RowKey },
    /// The transaction ended (an earlier error aborted it, or it committed):
    /// begin a new one.
    #[error("the transaction already ended (an earlier error aborted it)")]
    Ended,
    #[error("no row with key {key:?} in table {table:?}")]
    NotFound { table: TableId, key: RowKey },
    #[error("a row with key {key:?} already exists in table {table:?}")]
    Duplicate { table: TableId, key: RowKey },
    #[error("unknown stored procedure {0}")]
    UnknownProcedure(u32),
    #[error("re-running a logged command failed: {0}")]
    Replay(String),
    #[error("unknown table {0:?}")]
    UnknownTable(TableId),
    #[error("row of {got} bytes for table {table:?}, whose rows have {want}")]
    RowSize { table: TableId, got: usize, want: usize },
    #[error("log {log} is full ({capacity_bytes} bytes)")]
    LogFull { log: u32, capacity_bytes: u64 },
    #[error("log device I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("pmem: {0}")]
    Pmem(#[from] strata_pmem::PmemError),
    #[error("log {log}: a flush failed earlier, the log accepts no more commits")]
    LogFailed { log: u32 },
    #[error("corrupt log record: {0}")]
    Corrupt(#[from] crate::record::DecodeError),
    #[error("bad options: {0}")]
    Options(String),
    #[error("not supported: {0}")]
    Unsupported(&'static str),
    /// Another engine's error with no counterpart here (FIR's region full,
    /// its format), carried whole for its caller to inspect.
    #[error("engine: {0}")]
    Engine(#[source] Box<dyn std::error::Error + Send + Sync>),
}
