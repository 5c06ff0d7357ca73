//! Server configuration: where to listen, the optional token, and every
//! request limit, with the documented defaults (docs/http-api.md, "Limits").

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::ServerError;

/// Default listen address: loopback on InfluxDB's port, so Influx clients work unchanged.
pub const DEFAULT_BIND: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 8086);
/// Default request body limit, on the wire and after gzip decompression
/// (InfluxDB 1.x `max-body-size` default: 25,000,000 bytes).
pub const DEFAULT_MAX_BODY_BYTES: usize = 25_000_000;
/// Default limit on one line of line protocol (1 MiB: room for InfluxDB's
/// 64 KiB string fields with many tags and fields around them).
pub const DEFAULT_MAX_LINE_BYTES: usize = 1 << 20;
/// Default limit on fields in one line (the line protocol parser's default).
pub const DEFAULT_MAX_FIELDS_PER_LINE: usize = 1000;
/// Default time a connection may take to send a whole request head, and
/// may stay idle between requests (nginx's `client_header_timeout` is 60 s;
/// Go's InfluxDB has none, which is the stall this closes).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default longest wait for a request body's next bytes, and the grace
/// period before the minimum body rate applies.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default slowest average body rate accepted after that grace period.
pub const DEFAULT_BODY_MIN_BYTES_PER_SEC: u64 = 1024;
/// Default cap on open connections (below the usual 1,024 file
/// descriptors, leaving room for data files).
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Default per-query memory bound (4 GiB: a few runaway queries cannot
/// exhaust a 24 GB machine, while aggregates over tens of millions of
/// points still run).
pub const DEFAULT_MAX_QUERY_MEMORY_BYTES: u64 = 4 << 30;
/// Reported in `X-Influxdb-Version`, `/ping?verbose=true` and `/health`. It
/// starts with "1." because clients tell an InfluxDB 1.x API by that prefix.
pub const DEFAULT_VERSION: &str = concat!("1.8.10-strata.", env!("CARGO_PKG_VERSION"));

/// HTTPS (InfluxDB's `https-certificate` and `https-private-key`): PEM
/// files, the certificate chain leaf first and the key in PKCS#8, PKCS#1
/// or SEC1 form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub certificate: PathBuf,
    pub private_key: PathBuf,
}

/// Configuration of `strata serve`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// Listen address; default [`DEFAULT_BIND`] (127.0.0.1:8086).
    pub bind: SocketAddr,
    /// When set, every endpoint requires this token (see docs/http-api.md, "Authentication").
    pub auth_token: Option<String>,
    /// Largest request body accepted, compressed and decompressed; larger is 413.
    pub max_body_bytes: usize,
    /// Longest line of line protocol accepted; a longer line is rejected (400, by line number).
    pub max_line_bytes: usize,
    /// Most fields in one line; a line with more is rejected (400, by line number).
    pub max_fields_per_line: usize,
    /// Version string reported to clients.
    pub version: String,
    /// Database of a `/write` that names none (QuestDB's ILP-over-HTTP
    /// senders send no `db`); `None`: such a write is a 400.
    pub default_database: Option<String>,
    /// A connection that has not sent a whole request head this long after
    /// it began waiting for one (also: idle between requests) is closed.
    pub header_read_timeout: Duration,
    /// Most open connections; beyond it the longest-idle one is closed, or
    /// the new one gets 503 when none is idle.
    pub max_connections: usize,
    /// A body whose next bytes take longer than this is cut (408).
    pub body_read_timeout: Duration,
    /// After `body_read_timeout`, a body averaging less than this is cut (408).
    pub body_min_bytes_per_sec: u64,
    /// InfluxDB's `max-row-limit`: most rows a `/query` response returns,
    /// over all its statements and series (0: no limit, the default); the
    /// series cut short carries `"partial": true`.
    pub max_row_limit: usize,
    /// Per-query memory bound in bytes (0: none): a SELECT that would hold
    /// more fails with an error in its result.
    pub max_query_memory_bytes: u64,
    /// When set, every connection speaks HTTPS with these files (InfluxDB's
    /// `https-enabled`); `None` (the default): plain HTTP.
    pub tls: Option<TlsFiles>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: DEFAULT_BIND,
            auth_token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_fields_per_line: DEFAULT_MAX_FIELDS_PER_LINE,
            version: DEFAULT_VERSION.to_string(),
            default_database: None,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            body_min_bytes_per_sec: DEFAULT_BODY_MIN_BYTES_PER_SEC,
            max_row_limit: 0,
            max_query_memory_bytes: DEFAULT_MAX_QUERY_MEMORY_BYTES,
            tls: None,
        }
    }
}

impl ServerConfig {
    /// Rejects limits of zero, an empty token and a version that cannot be an HTTP header.
    pub fn validate(&self) -> Result<(), ServerError> {
        let invalid = |what: &str| Err(ServerError::InvalidConfig(what.to_string()));
        if self.max_body_bytes == 0 {
            return invalid("max_body_bytes must be at least 1");
        }
        if self.max_line_bytes == 0 {
            return invalid("max_line_bytes must be at least 1");
        }
        if self.max_fields_per_line == 0 {
            return invalid("max_fields_per_line must be at least 1");
        }
        if self.header_read_timeout.is_zero() {
            return invalid("header_read_timeout must be above zero");
        }
        if self.body_read_timeout.is_zero() {
            return invalid("body_read_timeout must be above zero");
        }
        if self.max_connections == 0 {
            return invalid("max_connections must be at least 1");
        }
        if matches!(&self.auth_token, Some(t) if t.is_empty()) {
            return invalid("auth_token must not be empty (leave it unset to disable authentication)");
        }
        if self.version.is_empty() || !self.version.bytes().all(|b| b.is_ascii_graphic()) {
            return invalid("version must be non-empty visible ASCII (it is sent as a header)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_documented_values_and_valid() {
        let config = ServerConfig::default();
        assert_eq!(config.bind.to_string(), "127.0.0.1:8086");
        assert_eq!(config.auth_token, None);
        assert_eq!(config.max_body_bytes, 25_000_000);
        assert_eq!(config.max_line_bytes, 1_048_576);
        assert_eq!(config.max_fields_per_line, 1000);
        assert!(config.version.starts_with("1."), "{}", config.version);
        config.validate().unwrap();
    }

    #[test]
    fn validate_rejects_zero_limits_and_empty_token() {
        let bad = [
            ServerConfig { max_body_bytes: 0, ..Default::default() },
            ServerConfig { max_line_bytes: 0, ..Default::default() },
            ServerConfig { max_fields_per_line: 0, ..Default::default() },
            ServerConfig { auth_token: Some(String::new()), ..Default::default() },
            ServerConfig { version: "1.8 beta".into(), ..Default::default() },
        ];
        for config in bad {
            let err = config.validate().unwrap_err();
            assert!(matches!(err, ServerError::InvalidConfig(_)), "{err}");
        }
    }

    #[test]
    fn docs_table_lists_every_default() {
        let doc = include_str!("../../../docs/http-api.md");
        for value in ["127.0.0.1:8086", "25000000", "1048576", "1000"] {
            assert!(doc.contains(value), "docs/http-api.md does not mention {value}");
        }
    }
}
