//! `GET|HEAD /ping` (204, or 200 with the version when `verbose`), `GET
//! /health` (InfluxDB 1.8's JSON; 503 when the engine reports a problem; a
//! part out of service, such as a stream that failed to recover, is a failed
//! entry of `checks` while the rest is served, with 200)
//! and `GET /metrics` (Prometheus text: the server's metrics, then the engine's).

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::errors::ApiError;
use crate::metrics::PROMETHEUS_CONTENT_TYPE;
use crate::params::Params;
use crate::state::AppState;

/// `name` in the `/health` body.
pub const HEALTH_NAME: &str = "strata";
/// `message` in a passing `/health` body (InfluxDB's words).
pub const HEALTH_READY: &str = "ready for queries and writes";

pub(crate) fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json; charset=utf-8"));
    response
}

/// `GET|HEAD /ping[?verbose=true]`.
pub async fn ping(State(state): State<Arc<AppState>>, RawQuery(query): RawQuery) -> Response {
    if Params::from_query(query.as_deref()).flag("verbose") {
        json_response(StatusCode::OK, &serde_json::json!({ "version": state.config.version }))
    } else {
        StatusCode::NO_CONTENT.into_response()
    }
}

/// `GET /health`.
pub async fn health(State(state): State<Arc<AppState>>) -> Response {
    let hooks = Arc::clone(&state.hooks);
    let (verdict, failed) =
        tokio::task::spawn_blocking(move || (hooks.unhealthy_because(), hooks.failed_parts()))
            .await
            .unwrap_or_else(|e| (Some(format!("health check failed: {e}")), Vec::new()));
    let (status, pass, mut message) = match verdict {
        None => (StatusCode::OK, "pass", HEALTH_READY.to_string()),
        Some(reason) => (StatusCode::SERVICE_UNAVAILABLE, "fail", reason),
    };
    if !failed.is_empty() {
        message = format!("{message}; {} part(s) out of service, see checks", failed.len());
    }
    let checks: Vec<serde_json::Value> = failed
        .iter()
        .map(|(name, reason)| serde_json::json!({"name": name, "status": "fail", "message": reason}))
        .collect();
    let body = serde_json::json!({
        "name": HEALTH_NAME,
        "message": message,
        "status": pass,
        "checks": checks,
        "version": state.config.version,
    });
    json_response(status, &body)
}

/// `GET /metrics`.
pub async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let task_state = Arc::clone(&state);
    let text = tokio::task::spawn_blocking(move || {
        let mut out = String::with_capacity(8 * 1024);
        task_state.metrics.render(&mut out, &task_state.config.version);
        task_state.hooks.metrics_text(&mut out);
        out
    })
    .await;
    match text {
        Ok(text) => {
            let mut response = (StatusCode::OK, text).into_response();
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROMETHEUS_CONTENT_TYPE));
            response
        }
        Err(e) => {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("metrics failed: {e}")).into_response()
        }
    }
}
