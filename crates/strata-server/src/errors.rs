//! Error responses in InfluxDB's shapes: v1 `{"error":"..."}` with an
//! `X-Influxdb-Error` header, v2 `{"code":"invalid","message":"..."}`, and
//! `WWW-Authenticate` on 401. Also the crate's own [`ServerError`].

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// Longest `X-Influxdb-Error` header value (InfluxDB 1.x cuts at 1024 bytes).
pub const MAX_ERROR_HEADER_BYTES: usize = 1024;

/// Errors of starting or stopping the server (request errors are [`ApiError`]).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("invalid server configuration: {0}")]
    InvalidConfig(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: std::net::SocketAddr, source: std::io::Error },
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error("server I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("checkpoint on shutdown failed: {0}")]
    Checkpoint(String),
    /// HTTPS is on and its certificate or key cannot be used.
    #[error("cannot serve HTTPS with {path}: {reason}")]
    Tls { path: std::path::PathBuf, reason: String },
}

/// Which API's error shape a response uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ApiFlavor {
    /// InfluxDB 1.x: `{"error":"..."}`.
    V1,
    /// InfluxDB 2.x: `{"code":"...","message":"..."}`.
    V2,
}

impl ApiFlavor {
    /// `/api/v2/...` paths answer in the v2 shape, everything else in v1's.
    pub fn for_path(path: &str) -> ApiFlavor {
        if path.starts_with("/api/v2/") {
            ApiFlavor::V2
        } else {
            ApiFlavor::V1
        }
    }
}

/// A failed request: status, message, and the shape to render it in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub flavor: ApiFlavor,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into(), flavor: ApiFlavor::V1 }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn with_flavor(mut self, flavor: ApiFlavor) -> ApiError {
        self.flavor = flavor;
        self
    }

    /// The JSON body, in this error's flavor.
    pub fn body_json(&self) -> serde_json::Value {
        match self.flavor {
            ApiFlavor::V1 => serde_json::json!({ "error": self.message }),
            ApiFlavor::V2 => serde_json::json!({ "code": v2_code(self.status), "message": self.message }),
        }
    }
}

/// InfluxDB 2.x error codes by HTTP status.
pub fn v2_code(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "invalid",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not found",
        405 => "method not allowed",
        413 => "request too large",
        415 => "unsupported media type",
        422 => "unprocessable entity",
        429 => "too many requests",
        501 => "not implemented",
        503 => "unavailable",
        _ if status.is_client_error() => "invalid",
        _ => "internal error",
    }
}

/// The message as a header value: control characters become spaces and it
/// is cut to [`MAX_ERROR_HEADER_BYTES`] on a character boundary.
pub fn error_header_value(message: &str) -> Option<HeaderValue> {
    let mut cut = message.len().min(MAX_ERROR_HEADER_BYTES);
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    let cleaned: String = message[..cut].chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    HeaderValue::from_bytes(cleaned.as_bytes()).ok()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.body_json().to_string();
        let mut response = (self.status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"InfluxDB\""));
        } else if let Some(value) = error_header_value(&self.message) {
            headers.insert("X-Influxdb-Error", value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_and_v2_bodies_have_influx_shapes() {
        let err = ApiError::new(StatusCode::NOT_FOUND, "database not found: \"x\"");
        assert_eq!(err.body_json().to_string(), r#"{"error":"database not found: \"x\""}"#);
        let v2 = err.with_flavor(ApiFlavor::V2);
        assert_eq!(v2.body_json()["code"], "not found");
        assert_eq!(v2.body_json()["message"], "database not found: \"x\"");
        assert_eq!(v2_code(StatusCode::BAD_REQUEST), "invalid");
        assert_eq!(v2_code(StatusCode::PAYLOAD_TOO_LARGE), "request too large");
        assert_eq!(v2_code(StatusCode::INTERNAL_SERVER_ERROR), "internal error");
    }

    #[test]
    fn error_header_is_cut_and_cleaned() {
        let long = format!("a\nb{}", "é".repeat(2000));
        let value = error_header_value(&long).unwrap();
        assert!(value.len() <= MAX_ERROR_HEADER_BYTES);
        assert!(value.as_bytes().starts_with(b"a b"));
        assert!(std::str::from_utf8(value.as_bytes()).is_ok());
    }

    #[test]
    fn unauthorized_carries_a_challenge_not_an_error_header() {
        let response = ApiError::new(StatusCode::UNAUTHORIZED, "authorization failed").into_response();
        assert_eq!(response.status(), 401);
        assert_eq!(response.headers()[header::WWW_AUTHENTICATE], "Basic realm=\"InfluxDB\"");
        assert!(response.headers().get("X-Influxdb-Error").is_none());
        let bad = ApiError::bad_request("database is required").into_response();
        assert_eq!(bad.headers()["X-Influxdb-Error"], "database is required");
        assert_eq!(bad.headers()[header::CONTENT_TYPE], "application/json");
    }

    #[test]
    fn flavor_follows_the_path() {
        assert_eq!(ApiFlavor::for_path("/api/v2/write"), ApiFlavor::V2);
        assert_eq!(ApiFlavor::for_path("/write"), ApiFlavor::V1);
        assert_eq!(ApiFlavor::for_path("/api/v2"), ApiFlavor::V1);
    }
}
