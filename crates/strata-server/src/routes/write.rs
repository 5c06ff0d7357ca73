//! `POST /write` (InfluxDB 1.x) and `POST /api/v2/write` (2.x): line
//! protocol in, one store transaction with every good line, 204 or a
//! partial-write 400 naming the dropped lines.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use strata_influx::line_protocol::{parse_lines_into, Precision};
use strata_series::storage_full::FullMedium;
use strata_series::EngineError;

use crate::errors::{ApiError, ApiFlavor};
use crate::limits::{self, ContentEncoding};
use crate::metrics::RejectReason;
use crate::params::Params;
use crate::partial_write::{DroppedLine, WriteReport};
use crate::state::AppState;

/// `POST /write?db=&rp=&precision=&u=&p=`.
pub async fn write_v1(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let params = Params::from_query(query.as_deref());
    let precision_text = params.get("precision").unwrap_or("");
    let Some(precision) = Precision::parse(precision_text) else {
        let message = format!("invalid precision {precision_text:?} (use n, u, ms, s, m or h)");
        return ApiError::bad_request(message).into_response();
    };
    let Some(db) = params.get_nonblank("db").or(state.config.default_database.as_deref()) else {
        return ApiError::bad_request("database is required").into_response();
    };
    let target = WriteTarget { db, rp: params.get_nonblank("rp") };
    respond(write_lines(&state, target, precision, &headers, body, ApiFlavor::V1).await)
}

/// `POST /api/v2/write?bucket=<db>[/<rp>]&org=&precision=`.
pub async fn write_v2(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let v2 = |e: ApiError| e.with_flavor(ApiFlavor::V2).into_response();
    let params = Params::from_query(query.as_deref());
    let precision_text = params.get("precision").unwrap_or("ns");
    let precision = match precision_text {
        "ns" | "us" | "ms" | "s" => Precision::parse(precision_text),
        _ => None,
    };
    let Some(precision) = precision else {
        return v2(ApiError::bad_request(format!(
            "invalid precision {precision_text:?} (use ns, us, ms or s)"
        )));
    };
    let db = match bucket_database(params.get("bucket").unwrap_or("")) {
        Ok(db) => db,
        Err(e) => return v2(e),
    };
    let rp =
        params.get("bucket").and_then(|b| b.split_once('/')).map(|(_, rp)| rp).filter(|rp| !rp.is_empty());
    respond(write_lines(&state, WriteTarget { db, rp }, precision, &headers, body, ApiFlavor::V2).await)
}

/// Where a write goes: its database and the retention policy it names
/// (none: the database's default).
struct WriteTarget<'a> {
    db: &'a str,
    rp: Option<&'a str>,
}

/// The database of a v2 bucket, `db` or `db/rp` (the policy must exist).
pub fn bucket_database(bucket: &str) -> Result<&str, ApiError> {
    let db = bucket.split_once('/').map_or(bucket, |(db, _rp)| db);
    if bucket.is_empty() {
        Err(ApiError::bad_request("bucket is required"))
    } else if db.is_empty() {
        Err(ApiError::bad_request(format!(
            "bucket name {bucket:?} is in db/rp form but has an empty database"
        )))
    } else {
        Ok(db)
    }
}

fn respond(result: Result<(), ApiError>) -> Response {
    match result {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => e.into_response(),
    }
}

fn now_ns() -> i64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since_epoch.as_nanos()).unwrap_or(i64::MAX)
}

/// The shared write path: check the database, read the body within limits,
/// then parse, write and report off the async workers.
async fn write_lines(
    state: &Arc<AppState>,
    target: WriteTarget<'_>,
    precision: Precision,
    headers: &HeaderMap,
    body: Body,
    flavor: ApiFlavor,
) -> Result<(), ApiError> {
    let result = async {
        let encoding = limits::content_encoding(headers)?;
        let db = target.db;
        if !state.store.list_databases().iter().any(|name| name == db) {
            return Err(database_not_found(db, flavor));
        }
        if let Some(rp) = target.rp {
            // One series store holds every policy's points (docs/http-api.md),
            // but a policy the database does not have is refused, as InfluxDB does.
            match state.store.series_store().retention_policies(db) {
                Ok(policies) if policies.policy(rp).is_some() => {}
                Ok(_) => return Err(policy_not_found(rp)),
                Err(_) => return Err(database_not_found(db, flavor)),
            }
        }
        let raw = limits::read_body(headers, body, &limits::body_limits(&state.config)).await?;
        state.metrics.record_write_body(raw.len());
        let task_state = Arc::clone(state);
        let task_db = db.to_string();
        tokio::task::spawn_blocking(move || {
            parse_and_commit(&task_state, &task_db, precision, raw, encoding, flavor)
        })
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("write task failed: {e}")))?
    }
    .await;
    result.map_err(|e| e.with_flavor(flavor))
}

/// InfluxDB 1.x's message; its status there is 500, a 404 here, as for a
/// database that does not exist.
fn policy_not_found(rp: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, format!("retention policy not found: {rp}"))
}

fn database_not_found(db: &str, flavor: ApiFlavor) -> ApiError {
    let message = match flavor {
        ApiFlavor::V1 => format!("database not found: {db:?}"),
        ApiFlavor::V2 => format!("bucket {db:?} not found"),
    };
    ApiError::new(StatusCode::NOT_FOUND, message)
}

/// Decodes, parses and commits one body; runs on a blocking thread because
/// `Tables::write_request` waits until the transaction is durable.
fn parse_and_commit(
    state: &AppState,
    db: &str,
    precision: Precision,
    raw: Bytes,
    encoding: ContentEncoding,
    flavor: ApiFlavor,
) -> Result<(), ApiError> {
    let config = &state.config;
    let body = limits::decode_body(raw, encoding, config.max_body_bytes)?;
    let mut batch = state.batches.lend();
    parse_lines_into(&body, precision, now_ns(), &limits::line_limits(config), &mut batch);
    drop(body);
    let mut report = WriteReport {
        reached_store: !batch.points.is_empty(),
        dropped: batch
            .errors
            .iter()
            .map(|e| DroppedLine { line: e.line, reason: e.message.clone() })
            .collect(),
        ..Default::default()
    };
    state.metrics.record_rejected(RejectReason::Parse, batch.errors.len());
    if !batch.points.is_empty() {
        let started = Instant::now();
        let written = state.store.write_request(db, &batch.points);
        state.metrics.write_commit.observe(started.elapsed());
        match written {
            Ok(outcome) => {
                state.metrics.record_written(outcome.points_written, outcome.values_written);
                report.points_written = outcome.points_written;
                for (index, reason) in outcome.rejected {
                    state.metrics.record_rejected(RejectReason::of(&reason), 1);
                    let line = batch.line_numbers.get(index).copied().unwrap_or(0);
                    report.dropped.push(DroppedLine { line, reason: reason.to_string() });
                }
            }
            Err(e @ EngineError::SeriesLimit { .. }) => {
                state.metrics.record_rejected(RejectReason::SeriesLimit, batch.points.len());
                report.refused_whole = Some((e.to_string(), batch.points.len()));
            }
            Err(EngineError::UnknownDatabase(_)) => {
                return Err(database_not_found(db, flavor));
            }
            Err(e @ EngineError::RequestTooLarge { .. }) => {
                return Err(ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, e.to_string()));
            }
            Err(e @ (EngineError::InvalidArgument(_) | EngineError::InvalidDatabaseName(..))) => {
                return Err(ApiError::bad_request(e.to_string()));
            }
            Err(e @ EngineError::Unavailable(_)) => {
                return Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()));
            }
            Err(e) => {
                if let Some(medium) = e.storage_full() {
                    return Err(ApiError::new(
                        StatusCode::INSUFFICIENT_STORAGE,
                        insufficient_storage(medium, &e),
                    ));
                }
                return Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()));
            }
        }
    }
    match report.message() {
        None => Ok(()),
        Some(message) => Err(ApiError::bad_request(message)),
    }
}

/// The 507 answer to a write refused because `medium` is full.
pub fn insufficient_storage(medium: FullMedium, e: &EngineError) -> String {
    format!(
        "insufficient storage: the {medium} is full ({e}); this write was not stored, earlier acknowledged \
         writes are kept and queries still work; writes succeed again once space is freed"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_map_to_databases() {
        assert_eq!(bucket_database("db").unwrap(), "db");
        assert_eq!(bucket_database("db/autogen").unwrap(), "db");
        assert_eq!(bucket_database("").unwrap_err().message, "bucket is required");
        assert!(bucket_database("/rp").unwrap_err().message.contains("empty database"));
    }
}
