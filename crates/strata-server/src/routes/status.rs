//! `GET|HEAD /ping` (204, or 200 with the version when `verbose`), `GET
//! /health` (InfluxDB 1.8's JSON; 503 when the engine reports a problem)
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

fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
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
    let verdict = tokio::task::spawn_blocking(move || hooks.unhealthy_because())
        .await
        .unwrap_or_else(|e| Some(format!("health check failed: {e}")));
    let (status, pass, message) = match verdict {
        None => (StatusCode::OK, "pass", HEALTH_READY.to_string()),
        Some(reason) => (StatusCode::SERVICE_UNAVAILABLE, "fail", reason),
    };
    let body = serde_json::json!({
        "name": HEALTH_NAME,
        "message": message,
        "status": pass,
        "checks": [],
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
