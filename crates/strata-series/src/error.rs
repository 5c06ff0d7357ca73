//! Errors of the series engine. `Corruption` (bad bytes on media) is kept
//! apart from `Io` (the device failed) and from caller mistakes.

use strata_log::LogError;
use thiserror::Error;

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
    #[error("{0}")]
    Other(String),
}

impl EngineError {
    pub fn corruption(file: impl Into<String>, what: impl Into<String>) -> Self {
        EngineError::Corruption { file: file.into(), what: what.into() }
    }
}
