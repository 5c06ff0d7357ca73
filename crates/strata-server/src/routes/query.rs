//! `GET|POST /query?q=&db=&epoch=&pretty=&chunked=&chunk_size=`: InfluxQL through
//! `strata_influx::influxql::execute` (under the per-query memory bound),
//! answered with its JSON cut to `max_row_limit` rows, or with `chunked=true`
//! as InfluxDB's line-per-chunk JSON (`crate::chunked`) (200; errors of
//! single statements stay inside the results, as InfluxDB does), 400 when
//! the query does not parse, or 503 when it reads an event stream that
//! failed to recover.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use strata_influx::influxql::{execute, QueryError, QueryParams};

use crate::errors::ApiError;
use crate::limits;
use crate::params::Params;
use crate::state::AppState;

/// `GET|POST /query`. A POST body of type `application/x-www-form-urlencoded`
/// is read (within `max_body_bytes`) and its parameters win over the URL's.
pub async fn query(
    State(state): State<Arc<AppState>>,
    method: Method,
    RawQuery(url_query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match run_query(&state, method, url_query, &headers, body).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("application/x-www-form-urlencoded"))
}

async fn run_query(
    state: &Arc<AppState>,
    method: Method,
    url_query: Option<String>,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let mut params = Params::default();
    if method == Method::POST && is_form(headers) {
        let raw = limits::read_body(headers, body, &limits::body_limits(&state.config)).await?;
        params = Params::parse(&raw);
    }
    params.extend(Params::from_query(url_query.as_deref()));
    let Some(text) = params.get_nonblank("q").map(str::to_string) else {
        return Err(ApiError::bad_request("missing required parameter \"q\""));
    };
    let now_ns = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
    let query_params = QueryParams {
        db: params.get_nonblank("db").map(str::to_string),
        epoch: params.get_nonblank("epoch").map(str::to_string),
        now_ns: i64::try_from(now_ns).unwrap_or(i64::MAX),
        max_memory_bytes: state.config.max_query_memory_bytes,
    };
    let pretty = params.flag("pretty");
    let chunk_size = if params.flag("chunked") {
        Some(match params.get_nonblank("chunk_size") {
            None => crate::chunked::DEFAULT_CHUNK_SIZE,
            Some(n) => n.parse::<usize>().map_err(|_| {
                ApiError::bad_request(format!("invalid chunk_size {n:?}: expected a non-negative integer"))
            })?,
        })
    } else {
        None
    };

    let task_state = Arc::clone(state);
    let started = Instant::now();
    let outcome =
        tokio::task::spawn_blocking(move || execute(&*task_state.store, &text, &query_params)).await;
    state.metrics.query.observe(started.elapsed());
    let mut value = match outcome {
        Ok(Ok(value)) => value,
        Ok(Err(e)) => return Err(ApiError::new(query_error_status(&e), e.to_string())),
        Err(e) => {
            return Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("query task failed: {e}")))
        }
    };
    if let Some(size) = chunk_size {
        // InfluxDB applies max-row-limit to non-chunked responses only.
        let mut response =
            (StatusCode::OK, crate::chunked::chunk_lines(&value, size).concat()).into_response();
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        return Ok(response);
    }
    crate::row_limit::apply_row_limit(&mut value, state.config.max_row_limit);
    let text = if pretty { serde_json::to_string_pretty(&value) } else { serde_json::to_string(&value) }
        .map_err(|e| {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("cannot encode result: {e}"))
        })?;
    let mut response = (StatusCode::OK, text).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}

/// Request-level query errors are the client's (400), but for a read of an
/// event stream that failed to recover (503); failures of single statements
/// are inside the 200 results.
fn query_error_status(error: &QueryError) -> StatusCode {
    match error {
        QueryError::Parse(_) | QueryError::BadParam(_) => StatusCode::BAD_REQUEST,
        QueryError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
    }
}
