//! Request size limits: reading a body with `max_body_bytes` (413 from the
//! `Content-Length` header before reading anything, or as soon as a streamed
//! body passes the limit), undoing `Content-Encoding` with the same limit on
//! the decompressed size, and the per-line limits handed to the parser.

use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, StatusCode};
use http_body_util::BodyExt;
use strata_influx::line_protocol::LineLimits;

use crate::config::ServerConfig;
use crate::errors::ApiError;
use crate::gzip::{self, GzipError};

/// How the body was encoded on the wire.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ContentEncoding {
    Identity,
    Gzip,
}

/// 413 in InfluxDB's words plus which limit was hit.
pub fn too_large(what: &str, max_bytes: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("Request Entity Too Large: {what} is larger than max_body_bytes ({max_bytes} bytes)"),
    )
}

/// The `Content-Encoding` of a request: absent or `identity` is plain, `gzip`
/// is decompressed, anything else is 415.
pub fn content_encoding(headers: &HeaderMap) -> Result<ContentEncoding, ApiError> {
    let Some(value) = headers.get(header::CONTENT_ENCODING) else {
        return Ok(ContentEncoding::Identity);
    };
    let text = value.to_str().unwrap_or("").trim();
    if text.is_empty() || text.eq_ignore_ascii_case("identity") {
        Ok(ContentEncoding::Identity)
    } else if text.eq_ignore_ascii_case("gzip") || text.eq_ignore_ascii_case("x-gzip") {
        Ok(ContentEncoding::Gzip)
    } else {
        Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("unsupported Content-Encoding {text:?} (use gzip or none)"),
        ))
    }
}

/// What reading a body may take: its size, and its time (a stalled or
/// trickling body is cut: issue 15 item 2).
#[derive(Copy, Clone, Debug)]
pub struct BodyLimits {
    pub max_bytes: usize,
    /// Longest wait for the next bytes of the body; also the grace period
    /// before the minimum rate applies.
    pub read_timeout: Duration,
    /// Slowest average rate accepted once `read_timeout` has passed.
    pub min_bytes_per_sec: u64,
}

/// The body limits of the configuration.
pub fn body_limits(config: &ServerConfig) -> BodyLimits {
    BodyLimits {
        max_bytes: config.max_body_bytes,
        read_timeout: config.body_read_timeout,
        min_bytes_per_sec: config.body_min_bytes_per_sec,
    }
}

fn too_slow(what: String) -> ApiError {
    ApiError::new(StatusCode::REQUEST_TIMEOUT, format!("request body too slow: {what}"))
}

/// Reads the whole body, refusing (413) a declared `Content-Length` above
/// `max_bytes` without reading it, and a streamed body as soon as it passes
/// `max_bytes`; 408 when no bytes come for `read_timeout`, or when, after
/// it, the body averages less than `min_bytes_per_sec`. A body that ends
/// early (client gone) is 400.
pub async fn read_body(headers: &HeaderMap, body: Body, limits: &BodyLimits) -> Result<Bytes, ApiError> {
    let max_bytes = limits.max_bytes;
    let mut declared_bytes = 0;
    if let Some(declared) = headers.get(header::CONTENT_LENGTH) {
        let declared: u64 = declared
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| ApiError::bad_request("invalid Content-Length header"))?;
        if declared > max_bytes as u64 {
            return Err(too_large("body", max_bytes));
        }
        declared_bytes = declared as usize;
    }
    let mut body = body;
    // A body that arrives in one frame is kept without a copy; one in
    // several is gathered into a buffer of its declared length (grown by
    // doubling, a megabyte body faults in fresh pages at every step).
    let mut first: Option<Bytes> = None;
    let mut collected: Vec<u8> = Vec::new();
    let mut total_bytes = 0usize;
    let started = Instant::now();
    loop {
        let frame = match tokio::time::timeout(limits.read_timeout, body.frame()).await {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(_) => {
                return Err(too_slow(format!("no bytes for {:?} (body_read_timeout)", limits.read_timeout)))
            }
        };
        let frame = frame.map_err(|e| ApiError::bad_request(format!("error reading request body: {e}")))?;
        let Ok(data) = frame.into_data() else { continue };
        total_bytes += data.len();
        if total_bytes > max_bytes {
            return Err(too_large("body", max_bytes));
        }
        let elapsed = started.elapsed();
        if elapsed > limits.read_timeout
            && (total_bytes as f64) < limits.min_bytes_per_sec as f64 * elapsed.as_secs_f64()
        {
            return Err(too_slow(format!(
                "{total_bytes} bytes in {elapsed:?}, below body_min_bytes_per_sec ({})",
                limits.min_bytes_per_sec
            )));
        }
        match first.take() {
            None if collected.is_empty() => first = Some(data),
            None => collected.extend_from_slice(&data),
            Some(earlier) => {
                collected.reserve_exact(declared_bytes.max(earlier.len() + data.len()));
                collected.extend_from_slice(&earlier);
                collected.extend_from_slice(&data);
            }
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(collected)))
}

/// Undoes `encoding` with `max_bytes` as the limit on the decoded size.
pub fn decode_body(raw: Bytes, encoding: ContentEncoding, max_bytes: usize) -> Result<Bytes, ApiError> {
    match encoding {
        ContentEncoding::Identity => Ok(raw),
        ContentEncoding::Gzip => match gzip::decompress_limited(&raw, max_bytes) {
            Ok(plain) => Ok(Bytes::from(plain)),
            Err(GzipError::TooLarge { .. }) => Err(too_large("decompressed body", max_bytes)),
            Err(e @ GzipError::Invalid(_)) => Err(ApiError::bad_request(e.to_string())),
        },
    }
}

/// The per-line limits of the configuration, for the line protocol parser.
pub fn line_limits(config: &ServerConfig) -> LineLimits {
    LineLimits { max_line_bytes: config.max_line_bytes, max_fields_per_line: config.max_fields_per_line }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn limits(max_bytes: usize) -> BodyLimits {
        BodyLimits { max_bytes, read_timeout: Duration::from_secs(30), min_bytes_per_sec: 1 }
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[tokio::test]
    async fn declared_length_over_the_limit_is_413_unread() {
        let h = headers(&[(header::CONTENT_LENGTH, "11")]);
        let err = read_body(&h, Body::from("0123456789A"), &limits(10)).await.unwrap_err();
        assert_eq!(err.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(err.message.contains("max_body_bytes (10 bytes)"), "{}", err.message);
        let bad = headers(&[(header::CONTENT_LENGTH, "ten")]);
        assert_eq!(read_body(&bad, Body::empty(), &limits(10)).await.unwrap_err().status, 400);
    }

    #[tokio::test]
    async fn streamed_body_is_cut_at_the_limit() {
        let err = read_body(&HeaderMap::new(), Body::from(vec![b'x'; 11]), &limits(10)).await.unwrap_err();
        assert_eq!(err.status, StatusCode::PAYLOAD_TOO_LARGE);
        let ok = read_body(&HeaderMap::new(), Body::from(vec![b'x'; 10]), &limits(10)).await.unwrap();
        assert_eq!(ok.len(), 10);
    }

    #[test]
    fn encodings() {
        assert_eq!(content_encoding(&HeaderMap::new()).unwrap(), ContentEncoding::Identity);
        let gz = headers(&[(header::CONTENT_ENCODING, "GZIP")]);
        assert_eq!(content_encoding(&gz).unwrap(), ContentEncoding::Gzip);
        let br = headers(&[(header::CONTENT_ENCODING, "br")]);
        assert_eq!(content_encoding(&br).unwrap_err().status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let err = decode_body(Bytes::from_static(b"nope"), ContentEncoding::Gzip, 100).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
    }
}
