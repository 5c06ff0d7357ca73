//! Which database a statement uses: the one it names, else the request's
//! `db` parameter. Its own file so that the statement executors (`meta`,
//! `plan`, `select`) and the dispatcher (`mod.rs`) depend on it one way.

use super::error::StatementError;
use crate::influxql::QueryParams;

/// The database a statement uses: its own, else the `db` parameter.
pub fn resolve_db(explicit: Option<&str>, params: &QueryParams) -> Result<String, StatementError> {
    match explicit.or(params.db.as_deref()) {
        Some(db) if !db.is_empty() => Ok(db.to_string()),
        _ => Err(StatementError::DatabaseRequired),
    }
}
