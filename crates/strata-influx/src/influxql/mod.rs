//! The InfluxQL subset: scanner ([`lexer`]), syntax tree ([`ast`]),
//! parser ([`parser`]), executor over the facade's table catalog ([`Tables`], [`exec`]) and
//! InfluxDB 1.x-shaped JSON ([`response`]).
//!
//! Supported (docs/influxql.md): `SELECT` (raw fields, `*`,
//! count/sum/mean/median/stddev/spread/min/max/first/last/percentile/top/bottom incl.
//! `f(*)`, transformations of windowed aggregates (derivative,
//! non_negative_derivative, difference, non_negative_difference,
//! moving_average, cumulative_sum), aliases, WHERE on time, tags and fields, GROUP BY
//! time(interval[, offset]) and tags (`"host"::tag` too) or `*`,
//! fill(none|null|previous|linear|n), tz('Area/City'), FROM several
//! measurements, `/regex/` or a subquery,
//! ORDER BY time, LIMIT, OFFSET, SLIMIT, SOFFSET), `SHOW DATABASES | MEASUREMENTS |
//! TAG KEYS | TAG VALUES | FIELD KEYS | SERIES | RETENTION POLICIES`, the
//! `... [EXACT] CARDINALITY` forms,
//! `CREATE DATABASE`, `DROP MEASUREMENT`, `DELETE`. Where InfluxDB's
//! behaviour needed a decision, the module documentation of [`exec`] says
//! what was done.

pub mod ast;
pub mod error;
pub mod exec;
#[cfg(any(test, feature = "fuzz"))]
mod fuzz;
pub mod lexer;
pub mod parser;
pub mod response;
pub mod sink;
pub mod time;
pub mod zone;

#[cfg(test)]
mod exec_clause_tests;
#[cfg(test)]
mod exec_function_tests;
#[cfg(test)]
mod exec_integral_tests;
#[cfg(test)]
mod exec_into_tests;
#[cfg(test)]
mod exec_last_tests;
#[cfg(test)]
mod exec_partial_tests;
#[cfg(test)]
mod exec_selector_tests;
#[cfg(test)]
mod exec_stream_tests;
#[cfg(test)]
mod exec_subquery_tests;
#[cfg(test)]
mod exec_test_support;
#[cfg(test)]
mod exec_tests;
#[cfg(test)]
mod parser_tests;
#[cfg(test)]
mod property_tests;
#[cfg(test)]
mod retention_tests;

use strata_engine::Tables;
use thiserror::Error;

pub use ast::Statement;
#[cfg(any(test, feature = "fuzz"))]
pub use fuzz::fuzz_influxql;
pub use response::Epoch;

/// Parameters of one `/query` request.
#[derive(Clone, Debug, Default)]
pub struct QueryParams {
    /// The `db` parameter: the database of statements that name none.
    pub db: Option<String>,
    /// The `epoch` parameter: `ns`, `u`, `µ`, `ms`, `s`, `m` or `h` for
    /// integer times; absent (or empty) for RFC3339 strings.
    pub epoch: Option<String>,
    /// What `now()` means, nanoseconds since the Unix epoch.
    pub now_ns: i64,
    /// The per-query memory bound in bytes (0: none): a SELECT whose read
    /// would hold more, estimated at [`exec::ESTIMATED_BYTES_PER_POINT_READ`]
    /// per point, fails with [`exec::error::StatementError::QueryMemory`].
    pub max_memory_bytes: u64,
}

/// Errors that fail the whole request (HTTP 400). Errors of one
/// statement's execution are reported inside its result instead.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// The query text does not parse; the message has InfluxDB's form,
    /// e.g. `found EOF, expected FROM at line 1, char 9`.
    #[error("error parsing query: {0}")]
    Parse(#[from] parser::ParseError),
    /// A request parameter is invalid (e.g. an unknown `epoch`).
    #[error("{0}")]
    BadParam(String),
    /// A statement read an event stream that failed to recover at startup
    /// (the rest of the store is served): the request fails as a whole.
    #[error("{0}")]
    Unavailable(String),
}

/// Parses `;`-separated statements.
pub fn parse_query(text: &str) -> Result<Vec<Statement>, QueryError> {
    Ok(parser::parse_statements(text)?)
}

/// Parses and runs `text` against `store` and returns the InfluxDB 1.x
/// response body `{"results":[...]}`.
pub fn execute(
    tables: &dyn Tables,
    text: &str,
    params: &QueryParams,
) -> Result<serde_json::Value, QueryError> {
    let mut sink = sink::CollectSink::default();
    execute_into(tables, text, params, &mut sink)?;
    Ok(sink.into_value())
}

/// Parses and runs `text`, handing the results to `sink` as they are made
/// (the HTTP server's streamed responses). A parse or parameter error comes
/// before any call to `sink`.
pub fn execute_into(
    tables: &dyn Tables,
    text: &str,
    params: &QueryParams,
    sink: &mut dyn sink::ResultSink,
) -> Result<(), QueryError> {
    let epoch = Epoch::parse(params.epoch.as_deref())?;
    let statements = parse_query(text)?;
    exec::execute_statements(tables, &statements, params, epoch, sink)
}
