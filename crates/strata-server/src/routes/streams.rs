//! Event stream management (`docs/http-api.md`, "Event streams"):
//! - `POST /api/v1/streams` with `{"db":"mydb","name":"stock","attributes":
//!   [{"name":"price","type":"f64"},{"name":"symbol","type":"string","len":8}]}`
//!   creates a stream (201 with the stream as JSON); 400 for a bad name or
//!   schema, 404 if the database does not exist (it is never created on
//!   the fly), 409 if the stream exists;
//! - `GET /api/v1/streams[?db=]` lists streams with schemas and event counts;
//! - `DELETE /api/v1/streams/{db}/{name}` drops one (204; 404 if missing).
//!
//! Events are written with line protocol on `/write` (the measurement names
//! the stream) and queried with InfluxQL on `/query`. A store without event
//! streams answers 501. Errors use the v1 `{"error": ...}` shape.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use strata_engine::tables::streams::{StreamAttr, StreamAttrType, StreamError, StreamInfo};

use crate::errors::ApiError;
use crate::limits;
use crate::params::Params;
use crate::state::AppState;

fn not_enabled() -> ApiError {
    ApiError::new(StatusCode::NOT_IMPLEMENTED, "this server has no event streams")
}

fn api_error(e: StreamError) -> ApiError {
    match e {
        StreamError::Invalid(m) => ApiError::bad_request(m),
        StreamError::AlreadyExists(m) => ApiError::new(StatusCode::CONFLICT, m),
        StreamError::NotFound(m) => ApiError::new(StatusCode::NOT_FOUND, m),
        StreamError::Engine(e) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        StreamError::Unavailable(m) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, m),
    }
}

/// A stream as JSON.
pub fn stream_json(s: &StreamInfo) -> Value {
    let attributes: Vec<Value> = s
        .attributes
        .iter()
        .map(|a| match a.ty {
            StreamAttrType::Str { len_bytes } => json!({"name": a.name, "type": "string", "len": len_bytes}),
            ty => json!({"name": a.name, "type": ty.name()}),
        })
        .collect();
    json!({"db": s.db, "name": s.name, "attributes": attributes, "events": s.events, "placement": s.placement})
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Parses a create request: `(db, name, attributes)`; a 400 naming what is
/// wrong otherwise.
pub fn parse_create(body: &[u8]) -> Result<(String, String, Vec<StreamAttr>), ApiError> {
    let bad = ApiError::bad_request;
    let v: Value = serde_json::from_slice(body).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    let text = |key: &str| -> Result<String, ApiError> {
        v.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| bad(format!("\"{key}\" (a string) is required")))
    };
    let (db, name) = (text("db")?, text("name")?);
    let list = v
        .get("attributes")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("\"attributes\" (an array) is required".to_string()))?;
    let mut attrs = Vec::with_capacity(list.len());
    for (i, a) in list.iter().enumerate() {
        let field = |key: &str| {
            a.get(key)
                .and_then(Value::as_str)
                .ok_or_else(|| bad(format!("attribute {i}: \"{key}\" (a string) is required")))
        };
        let (attr_name, ty_name) = (field("name")?, field("type")?);
        let len = match a.get("len") {
            None | Some(Value::Null) => None,
            Some(l) => Some(
                l.as_u64()
                    .ok_or_else(|| bad(format!("attribute {i}: \"len\" must be a positive integer")))?,
            ),
        };
        let ty = StreamAttrType::parse(ty_name, len)
            .map_err(|e| bad(format!("attribute {i} ({attr_name}): {e}")))?;
        attrs.push(StreamAttr { name: attr_name.to_string(), ty });
    }
    Ok((db, name, attrs))
}

/// `POST /api/v1/streams`.
pub async fn create(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    let result = async {
        if state.store.stream_tables().is_none() {
            return Err(not_enabled());
        }
        let raw = limits::read_body(&headers, body, &limits::body_limits(&state.config)).await?;
        let (db, name, attrs) = parse_create(&raw)?;
        let task_state = Arc::clone(&state);
        tokio::task::spawn_blocking(move || {
            let streams = task_state.store.stream_tables().ok_or_else(not_enabled)?;
            streams.create_stream(&db, &name, &attrs).map_err(api_error)
        })
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("create task failed: {e}")))?
    }
    .await;
    match result {
        Ok(info) => json_response(StatusCode::CREATED, &stream_json(&info)),
        Err(e) => e.into_response(),
    }
}

/// `GET /api/v1/streams[?db=]`.
pub async fn list(State(state): State<Arc<AppState>>, RawQuery(query): RawQuery) -> Response {
    if state.store.stream_tables().is_none() {
        return not_enabled().into_response();
    }
    let params = Params::from_query(query.as_deref());
    let db = params.get_nonblank("db").map(str::to_string);
    // Off the async workers: the event counts take each stream's lock, which a
    // long merge or query may hold.
    let task_state = Arc::clone(&state);
    let listed = tokio::task::spawn_blocking(move || {
        task_state
            .store
            .stream_tables()
            .map(|s| s.list_streams(db.as_deref()).iter().map(stream_json).collect())
    })
    .await;
    match listed {
        Ok(Some(list)) => json_response(StatusCode::OK, &json!({ "streams": Value::Array(list) })),
        Ok(None) => not_enabled().into_response(),
        Err(e) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("listing streams failed: {e}"))
            .into_response(),
    }
}

/// `DELETE /api/v1/streams/{db}/{name}`.
pub async fn drop(State(state): State<Arc<AppState>>, Path((db, name)): Path<(String, String)>) -> Response {
    if state.store.stream_tables().is_none() {
        return not_enabled().into_response();
    }
    let task_state = Arc::clone(&state);
    let dropped = tokio::task::spawn_blocking(move || {
        let streams = task_state.store.stream_tables().ok_or_else(not_enabled)?;
        streams.drop_stream(&db, &name).map_err(api_error)
    })
    .await;
    match dropped {
        Ok(Ok(())) => StatusCode::NO_CONTENT.into_response(),
        Ok(Err(e)) => e.into_response(),
        Err(e) => {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("drop task failed: {e}")).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_bodies_parse_with_clear_errors() {
        let body = br#"{"db":"d","name":"s","attributes":[{"name":"p","type":"f64"},{"name":"sym","type":"string","len":8}]}"#;
        let (db, name, attrs) = parse_create(body).unwrap();
        assert_eq!((db.as_str(), name.as_str()), ("d", "s"));
        assert_eq!(attrs[1].ty, StreamAttrType::Str { len_bytes: 8 });
        assert!(parse_create(b"nope").unwrap_err().message.contains("not JSON"));
        assert!(parse_create(br#"{"db":"d","attributes":[]}"#).unwrap_err().message.contains("\"name\""));
        let bad = br#"{"db":"d","name":"s","attributes":[{"name":"p","type":"u8"}]}"#;
        assert!(parse_create(bad).unwrap_err().message.contains("attribute 0 (p): unknown attribute type"));
        let bad = br#"{"db":"d","name":"s","attributes":[{"name":"p","type":"string","len":-1}]}"#;
        assert!(parse_create(bad).unwrap_err().message.contains("positive integer"));
    }
}
