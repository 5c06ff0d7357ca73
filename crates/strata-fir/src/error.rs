//! FIR's errors.

use strata_txn::{RowKey, TableId};

#[derive(Debug, thiserror::Error)]
pub enum FirError {
    /// MVTO refused the access (a newer reader or writer, or an
    /// uncommitted version in the way): the transaction was aborted; retry it.
    #[error("conflict on table {table:?} key {key:?}: the transaction was aborted")]
    Conflict { table: TableId, key: RowKey },
    #[error("table {table:?} has no row with key {key:?}")]
    NotFound { table: TableId, key: RowKey },
    #[error("table {table:?} already has a row with key {key:?}")]
    Duplicate { table: TableId, key: RowKey },
    #[error("no table {0:?}")]
    NoSuchTable(TableId),
    #[error("a row of {got} bytes for table {table:?}, whose rows have {want}")]
    RowSize { table: TableId, got: usize, want: usize },
    #[error("worker {worker} of {workers}")]
    NoSuchWorker { worker: u32, workers: u32 },
    #[error("the transaction already ended")]
    Ended,
    #[error("the region does not hold FIR tables: {0}")]
    Format(String),
    #[error("the schemas differ from the ones the region was created with: {0}")]
    Schema(String),
    #[error("a checkpoint of {keys} keys does not fit the {room} the region was created with")]
    CheckpointFull { keys: u64, room: u64 },
    #[error(transparent)]
    Pmem(#[from] strata_pmem::PmemError),
}
