//! Errors of the series engine. `Corruption` (bad bytes on media) is kept
//! apart from `Io` (the device failed) and from caller mistakes.

use std::sync::Arc;

use strata_declog::DeclogError;
use strata_log::LogError;
use thiserror::Error;

use crate::declog::{LsnError, ResetRefused};

#[derive(Debug, Error)]
pub enum EngineError {
    #[error("database not found: {0}")]
    UnknownDatabase(String),
    #[error("invalid database name {0:?}: {1}")]
    InvalidDatabaseName(String, String),
    #[error("max-series-per-database limit exceeded: database {db} has {limit} series")]
    SeriesLimit { db: String, limit: u64 },
    #[error("request too large: its log record would be {record_bytes} bytes, the limit is {max_bytes}; split it into smaller requests")]
    RequestTooLarge { record_bytes: u64, max_bytes: u64 },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("corruption in {file}: {what}")]
    Corruption { file: String, what: String },
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("commit log: {0}")]
    Log(#[from] LogError),
    #[error("declog: {0}")]
    Declog(DeclogError),
    #[error("the engine stopped accepting writes after a log failure ({why}); restart to recover")]
    WritesStopped { why: String },
    #[error("{what} need the declog protocol (this engine runs {protocol}); use DELETE")]
    Unsupported { what: &'static str, protocol: &'static str },
    #[error("transaction aborted {retries} times by conflicting updates: {last}")]
    TxnAborted { retries: u32, last: LsnError },
    #[error("LSN protocol: {0}")]
    Lsn(LsnError),
    #[error("checkpoint: {0}")]
    CheckpointRefused(ResetRefused),
    #[error("DecLog LSN era {era} exhausted; restart the engine (recovery continues with a checkpoint)")]
    LsnEraExhausted { era: u32 },
    #[error("{points} points in one series block (at most u32::MAX)")]
    BlockTooLarge { points: usize },
    #[error("encoding a series block: {0}")]
    Encode(crate::gorilla::CodecError),
    #[error("{what}: {source}")]
    Storage { what: String, source: Box<dyn std::error::Error + Send + Sync> },
    #[error("the group this transaction was submitted with failed: {0}")]
    GroupFailed(Arc<EngineError>),
}

impl EngineError {
    pub fn corruption(file: impl Into<String>, what: impl Into<String>) -> Self {
        EngineError::Corruption { file: file.into(), what: what.into() }
    }
}
