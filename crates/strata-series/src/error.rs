//! Errors of the series engine. `Corruption` (bad bytes on media) is kept
//! apart from `Io` (the device failed) and from caller mistakes.
//! [`FormatError`] is what the decoders of its on-media formats return.

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
    /// A part of the store is out of service (an event stream that failed
    /// to recover); the rest is served. HTTP 503.
    #[error("{0}")]
    Unavailable(String),
    /// A retention policy statement refused (InfluxDB's message).
    #[error("{0}")]
    Retention(crate::retention::RetentionError),
}

/// Why bytes do not decode as (or a value does not fit) one of the series
/// engine's formats: block files, the manifest, series WAL records, DecLog
/// entry keys and payloads. Decoders say what is wrong; callers add the file
/// or record and decide whether it is `Corruption` (read back from a medium)
/// or a caller's mistake (`InvalidArgument`).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum FormatError {
    #[error("{have} bytes, shorter than the {need}-byte {what}")]
    TooShort { what: &'static str, need: u64, have: u64 },
    #[error("truncated: {need} bytes needed at {place} {at}")]
    Truncated { need: usize, place: &'static str, at: usize },
    #[error("{left} trailing bytes after the {what}")]
    TrailingBytes { left: usize, what: &'static str },
    #[error("{what} at {place} {at} is not UTF-8")]
    NotUtf8 { what: &'static str, place: &'static str, at: usize },
    #[error("{count} {what} cannot fit in the {left} bytes left (count at {place} {at})")]
    BadCount { count: usize, what: &'static str, left: usize, place: &'static str, at: usize },
    /// The whole message, e.g. "bad magic (not a manifest)".
    #[error("{0}")]
    BadMagic(&'static str),
    #[error("unknown {what} format version {version}")]
    UnsupportedVersion { what: &'static str, version: u32 },
    #[error("{what} CRC mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    BadChecksum { what: String, stored: u32, computed: u32 },
    #[error("unknown {what} {code}")]
    UnknownCode { what: &'static str, code: u64 },
    #[error(transparent)]
    PointPayload(#[from] strata_declog::DecodeError),
    #[error("{0}")]
    Invalid(String),
}

impl FormatError {
    /// Checks a stored CRC against the computed one.
    pub(crate) fn check_crc(what: impl Into<String>, stored: u32, computed: u32) -> Result<(), FormatError> {
        if stored == computed {
            Ok(())
        } else {
            Err(FormatError::BadChecksum { what: what.into(), stored, computed })
        }
    }
}

impl EngineError {
    pub fn corruption(file: impl Into<String>, what: impl Into<String>) -> Self {
        EngineError::Corruption { file: file.into(), what: what.into() }
    }
}
