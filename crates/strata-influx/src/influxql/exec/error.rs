//! Errors of one statement's execution. InfluxDB reports them inside the
//! statement's result (`{"statement_id": 0, "error": "..."}`), not as a
//! failed request; the messages are InfluxDB's where it has one.

use strata_series::EngineError;

use crate::influxql::error::RegexError;

/// Why a statement failed.
#[derive(Debug, thiserror::Error)]
pub enum StatementError {
    /// Neither the statement nor the `db` parameter names a database.
    #[error("database name required")]
    DatabaseRequired,
    /// An earlier statement of the query failed.
    #[error("not executed")]
    NotExecuted,
    #[error("undefined function {0}()")]
    UndefinedFunction(String),
    #[error("invalid number of arguments for {func}, expected {expected}, got {got}")]
    ArgumentCount { func: String, expected: usize, got: usize },
    /// `percentile(field, N)` with N not a number in 0..=100.
    #[error("{0}")]
    BadArgument(String),
    #[error("expected field argument in {0}()")]
    ExpectedField(String),
    /// A function applied to a field of a type it does not take.
    #[error("unsupported {func}() on field \"{field}\" of type {field_type}")]
    TypeMismatch { func: &'static str, field: String, field_type: &'static str },
    /// A construct of the statement that this subset does not run.
    #[error("{0}")]
    Unsupported(String),
    /// A statement that InfluxQL rejects as a whole (e.g. mixing aggregate
    /// and raw fields).
    #[error("{0}")]
    Invalid(&'static str),
    /// A WHERE clause that cannot be evaluated (time comparisons, calls,
    /// wildcards).
    #[error("{0}")]
    Condition(String),
    #[error(transparent)]
    Regex(#[from] RegexError),
    /// More GROUP BY time windows than `aggregate::MAX_SELECT_BUCKETS`.
    #[error("max-select-buckets limit exceeded: ({count}/{max})")]
    TooManyBuckets { count: i128, max: i128 },
    /// A SELECT whose points read would take more memory than the
    /// per-query bound (`max_query_memory_bytes`).
    #[error(
        "query would hold about {estimated_mib} MiB in memory ({points} points read), above \
         max_query_memory_bytes ({max_mib} MiB): narrow the time range or select fewer fields or series"
    )]
    QueryMemory { points: u64, estimated_mib: u64, max_mib: u64 },
    /// The store failed (its own error says whether it is corruption, I/O
    /// or a caller mistake such as an unknown database).
    #[error("{0}")]
    Store(#[from] EngineError),
    /// `SELECT ... INTO`: points of the target refused (e.g. a field type
    /// conflict); the batches before were written.
    #[error("partial write: {reason} dropped={dropped} (written={written})")]
    PartialWrite { reason: String, dropped: u64, written: u64 },
    /// The event stream failed or refused the query.
    #[error("{0}")]
    Stream(#[from] strata_engine::tables::streams::StreamError),
}
