//! Optional token authentication for every endpoint: the credential forms
//! InfluxDB clients send (`Authorization: Token|Bearer|Basic`, v1 `p=`), a
//! constant-time comparison, and the middleware answering 401 in InfluxDB's
//! words ("unable to parse authentication credentials" / "authorization failed").

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;

use crate::errors::{ApiError, ApiFlavor};
use crate::state::AppState;

/// Message when no credential was presented (InfluxDB 1.x wording).
pub const MISSING_CREDENTIALS: &str = "unable to parse authentication credentials";
/// Message when a credential was presented but is not the token.
pub const WRONG_CREDENTIALS: &str = "authorization failed";

/// What a request presented, checked against the configured token.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AuthVerdict {
    Accepted,
    Missing,
    Wrong,
}

/// Compares two secrets in time that depends only on their lengths, never on
/// where they first differ.
pub fn tokens_equal(presented: &[u8], expected: &[u8]) -> bool {
    let mut diff = (presented.len() ^ expected.len()) as u64;
    for i in 0..presented.len().max(expected.len()) {
        let a = presented.get(i).copied().unwrap_or(0);
        let b = expected.get(i).copied().unwrap_or(0);
        diff |= u64::from(a ^ b);
    }
    std::hint::black_box(diff) == 0
}

/// Every candidate secret the request carries: the v1 `p` query parameter,
/// and the `Authorization` header as `Token <t>` (also `Token <user>:<t>`,
/// InfluxDB 1.8's form), `Bearer <t>` or `Basic base64(<user>:<t>)`.
pub fn presented_secrets(headers: &HeaderMap, query: Option<&str>) -> Vec<Vec<u8>> {
    let mut secrets = Vec::new();
    if let Some(query) = query {
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            if key == "p" && !value.is_empty() {
                secrets.push(value.as_bytes().to_vec());
            }
        }
    }
    for value in headers.get_all(header::AUTHORIZATION) {
        let Ok(text) = value.to_str() else { continue };
        let Some((scheme, rest)) = text.trim().split_once(' ') else { continue };
        let rest = rest.trim();
        if scheme.eq_ignore_ascii_case("token") {
            secrets.push(rest.as_bytes().to_vec());
            if let Some((_user, password)) = rest.split_once(':') {
                secrets.push(password.as_bytes().to_vec());
            }
        } else if scheme.eq_ignore_ascii_case("bearer") {
            secrets.push(rest.as_bytes().to_vec());
        } else if scheme.eq_ignore_ascii_case("basic") {
            let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(rest) else { continue };
            if let Some(colon) = decoded.iter().position(|&b| b == b':') {
                secrets.push(decoded[colon + 1..].to_vec());
            }
        }
    }
    secrets
}

/// Checks the request's credentials against `token`. Every candidate is
/// compared (no early exit), so timing does not tell which form matched.
pub fn check(headers: &HeaderMap, query: Option<&str>, token: &str) -> AuthVerdict {
    let secrets = presented_secrets(headers, query);
    if secrets.is_empty() {
        return AuthVerdict::Missing;
    }
    let mut accepted = false;
    for secret in &secrets {
        accepted |= tokens_equal(secret, token.as_bytes());
    }
    if accepted {
        AuthVerdict::Accepted
    } else {
        AuthVerdict::Wrong
    }
}

/// Middleware: when a token is configured, a request without it ends here with 401.
pub async fn require_token(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let Some(token) = state.config.auth_token.as_deref() else {
        return next.run(request).await;
    };
    let verdict = check(request.headers(), request.uri().query(), token);
    let message = match verdict {
        AuthVerdict::Accepted => return next.run(request).await,
        AuthVerdict::Missing => MISSING_CREDENTIALS,
        AuthVerdict::Wrong => WRONG_CREDENTIALS,
    };
    state.metrics.record_auth_failure();
    let flavor = ApiFlavor::for_path(request.uri().path());
    ApiError::new(StatusCode::UNAUTHORIZED, message).with_flavor(flavor).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_auth(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn tokens_equal_compares_whole_secrets() {
        assert!(tokens_equal(b"secret", b"secret"));
        assert!(!tokens_equal(b"secret", b"secreT"));
        assert!(!tokens_equal(b"secret", b"secret2"));
        assert!(!tokens_equal(b"", b"secret"));
        assert!(tokens_equal(b"", b""));
        // A NUL suffix must not make a shorter secret equal.
        assert!(!tokens_equal(b"secret\0", b"secret"));
    }

    #[test]
    fn every_credential_form_is_accepted() {
        let basic = base64::engine::general_purpose::STANDARD.encode("anyone:s3cret");
        for value in ["Token s3cret", "token s3cret", "Bearer s3cret", "Token admin:s3cret"] {
            assert_eq!(check(&with_auth(value), None, "s3cret"), AuthVerdict::Accepted, "{value}");
        }
        assert_eq!(check(&with_auth(&format!("Basic {basic}")), None, "s3cret"), AuthVerdict::Accepted);
        assert_eq!(check(&HeaderMap::new(), Some("db=x&u=me&p=s3cret"), "s3cret"), AuthVerdict::Accepted);
        assert_eq!(check(&HeaderMap::new(), Some("p=s%33cret"), "s3cret"), AuthVerdict::Accepted);
    }

    #[test]
    fn missing_and_wrong_are_told_apart() {
        assert_eq!(check(&HeaderMap::new(), None, "t"), AuthVerdict::Missing);
        assert_eq!(check(&HeaderMap::new(), Some("db=x&p="), "t"), AuthVerdict::Missing);
        assert_eq!(check(&with_auth("Digest abc"), None, "t"), AuthVerdict::Missing);
        assert_eq!(check(&with_auth("Basic !!notbase64"), None, "t"), AuthVerdict::Missing);
        assert_eq!(check(&with_auth("Token nope"), None, "t"), AuthVerdict::Wrong);
        assert_eq!(check(&with_auth("Bearer"), None, "t"), AuthVerdict::Missing);
        assert_eq!(check(&HeaderMap::new(), Some("p=nope"), "t"), AuthVerdict::Wrong);
        let no_colon = base64::engine::general_purpose::STANDARD.encode("t");
        assert_eq!(check(&with_auth(&format!("Basic {no_colon}")), None, "t"), AuthVerdict::Missing);
    }
}
