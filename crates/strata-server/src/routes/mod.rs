//! The router: endpoints, the layer that stamps InfluxDB's headers on every
//! response and counts it, the auth layer, and the 404/405 fallbacks.

pub mod backup;
pub mod query;
pub mod status;
pub mod streams;
pub mod write;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::Router;

use crate::auth;
use crate::errors::{ApiError, ApiFlavor};
use crate::metrics::endpoint_label;
use crate::state::AppState;

/// `X-Influxdb-Build` on every response. InfluxDB OSS says "OSS"; client
/// libraries use it to tell OSS from Cloud, so Strata answers as OSS.
pub const BUILD_HEADER_VALUE: &str = "OSS";
/// Longest client-supplied `X-Request-Id` echoed back.
pub const MAX_REQUEST_ID_BYTES: usize = 64;

/// Every endpoint, behind the auth and header layers.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/write", post(write::write_v1))
        .route("/api/v2/write", post(write::write_v2))
        .route("/query", get(query::query).post(query::query))
        .route("/ping", get(status::ping))
        .route("/health", get(status::health))
        .route("/metrics", get(status::metrics))
        .route("/api/v1/streams", get(streams::list).post(streams::create))
        .route("/api/v1/streams/{db}/{name}", delete(streams::drop))
        .route("/api/v2/query", post(flux_not_supported))
        .route("/debug/backup", post(backup::backup))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        // The handlers read bodies themselves, with `max_body_bytes`.
        .layer(DefaultBodyLimit::disable())
        .layer(middleware::from_fn_with_state(Arc::clone(&state), auth::require_token))
        .layer(middleware::from_fn_with_state(Arc::clone(&state), common_headers))
        .with_state(state)
}

/// `POST /api/v2/query`: the v2 clients' Flux endpoint. Strata speaks
/// InfluxQL only; say so instead of a bare 404.
async fn flux_not_supported() -> Response {
    ApiError::new(StatusCode::NOT_IMPLEMENTED, FLUX_NOT_SUPPORTED).with_flavor(ApiFlavor::V2).into_response()
}

/// The answer to a Flux query.
pub const FLUX_NOT_SUPPORTED: &str =
    "Flux is not supported; send InfluxQL to /query (GET or POST, q=..., db=...), as InfluxDB 1.x clients do";

async fn not_found(request: Request) -> Response {
    let flavor = ApiFlavor::for_path(request.uri().path());
    ApiError::new(StatusCode::NOT_FOUND, "404 page not found").with_flavor(flavor).into_response()
}

async fn method_not_allowed(request: Request) -> Response {
    let flavor = ApiFlavor::for_path(request.uri().path());
    let message = format!("method {} not allowed on {}", request.method(), request.uri().path());
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, message).with_flavor(flavor).into_response()
}

/// Decrements the in-flight gauge even when the client goes away mid-request.
struct InFlight<'a>(&'a AppState);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.metrics.request_ended();
    }
}

/// Outermost layer: `X-Influxdb-Version`, `X-Influxdb-Build`, `Request-Id`
/// and `X-Request-Id` on every response (401s and 404s included), and the
/// request counted by endpoint and status.
async fn common_headers(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let endpoint = endpoint_label(request.uri().path());
    let request_id = request_id(request.headers());
    state.metrics.request_started();
    let _in_flight = InFlight(&state);
    let mut response = next.run(request).await;
    state.metrics.count_response(endpoint, response.status().as_u16());
    let headers = response.headers_mut();
    if let Ok(version) = HeaderValue::from_str(&state.config.version) {
        headers.insert("X-Influxdb-Version", version);
    }
    headers.insert("X-Influxdb-Build", HeaderValue::from_static(BUILD_HEADER_VALUE));
    headers.insert("Request-Id", request_id.clone());
    headers.insert("X-Request-Id", request_id);
    response
}

/// The client's `X-Request-Id` (or `Request-Id`) when it is short visible
/// ASCII, otherwise a new id unique within this process.
fn request_id(headers: &HeaderMap) -> HeaderValue {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let supplied = headers.get("X-Request-Id").or_else(|| headers.get("Request-Id"));
    if let Some(value) = supplied {
        let bytes = value.as_bytes();
        if !bytes.is_empty() && bytes.len() <= MAX_REQUEST_ID_BYTES && bytes.iter().all(u8::is_ascii_graphic)
        {
            return value.clone();
        }
    }
    let epoch_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
    let sequence = NEXT.fetch_add(1, Ordering::Relaxed);
    HeaderValue::from_str(&format!("{epoch_ms:012x}-{sequence:08x}")).expect("hex is a valid header")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_echoed_or_generated() {
        let mut headers = HeaderMap::new();
        let a = request_id(&headers);
        let b = request_id(&headers);
        assert_ne!(a, b);
        headers.insert("X-Request-Id", HeaderValue::from_static("abc-123"));
        assert_eq!(request_id(&headers), "abc-123");
        headers.insert("X-Request-Id", HeaderValue::from_static("has space"));
        assert_ne!(request_id(&headers), "has space");
    }
}
