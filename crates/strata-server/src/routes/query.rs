//! `GET|POST /query?q=&db=&epoch=&pretty=&chunked=&chunk_size=`: InfluxQL through
//! `strata_influx::influxql::execute_into` (under the per-query memory
//! bound) on a blocking thread, its results streamed as they are made
//! (`crate::stream_body`): one JSON document cut to `max_row_limit` rows
//! (`crate::document`), or with `chunked=true` InfluxDB's line-per-chunk
//! JSON (`crate::chunked`) (200; errors of single statements stay inside
//! the results, as InfluxDB does), 400 when the query does not parse, or 503
//! when it reads an event stream that failed to recover (before any byte
//! was sent; after, the error is the response's last piece). `pretty=true`
//! builds the whole value and indents it.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use strata_influx::influxql::{execute, execute_into, QueryError, QueryParams};
use tokio::sync::mpsc;

use crate::chunked::ChunkedSink;
use crate::document::DocumentSink;
use crate::stream_body::{ByteOut, ChannelBody, Piece, TextOut, CHANNEL_PIECES};

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
    if pretty && chunk_size.is_none() {
        // Indented output is rare and small: the whole value, then the text.
        let started = Instant::now();
        let outcome =
            tokio::task::spawn_blocking(move || execute(&*task_state.store, &text, &query_params)).await;
        state.metrics.query.observe(started.elapsed());
        let mut value = match outcome {
            Ok(Ok(value)) => value,
            Ok(Err(e)) => return Err(ApiError::new(query_error_status(&e), e.to_string())),
            Err(e) => return Err(task_failed(e)),
        };
        crate::row_limit::apply_row_limit(&mut value, state.config.max_row_limit);
        let text = serde_json::to_string_pretty(&value).map_err(|e| {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("cannot encode result: {e}"))
        })?;
        return Ok(json_response(Body::from(text)));
    }
    let (tx, mut rx) = mpsc::channel(CHANNEL_PIECES);
    let max_rows = state.config.max_row_limit;
    let task = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let mut out = ByteOut::new(tx);
        let outcome = match chunk_size {
            // InfluxDB applies max-row-limit to non-chunked responses only.
            Some(size) => {
                let mut sink = ChunkedSink::new(&mut out, size);
                let outcome = execute_into(&*task_state.store, &text, &query_params, &mut sink);
                if let (Err(e), true) = (&outcome, out.has_sent()) {
                    let _ = out.write(&format!("{}\n", serde_json::json!({ "error": e.to_string() })));
                }
                outcome
            }
            None => match DocumentSink::new(&mut out, max_rows) {
                Ok(mut sink) => {
                    let outcome = execute_into(&*task_state.store, &text, &query_params, &mut sink);
                    let _ = sink.end(outcome.as_ref().err().map(|e| e.to_string()).as_deref());
                    outcome
                }
                Err(_) => Ok(()),
            },
        };
        task_state.metrics.query.observe(started.elapsed());
        out.finish(outcome.err());
    });
    match rx.recv().await {
        Some(Piece::Last(all)) => Ok(json_response(Body::from(all))),
        Some(Piece::Data(first)) => Ok(json_response(Body::new(ChannelBody::new(first, rx)))),
        Some(Piece::Failed(e)) => Err(ApiError::new(query_error_status(&e), e.to_string())),
        None => Err(match task.await {
            Err(e) => task_failed(e),
            Ok(()) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "query task ended without an answer"),
        }),
    }
}

fn task_failed(e: tokio::task::JoinError) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("query task failed: {e}"))
}

fn json_response(body: Body) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
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
