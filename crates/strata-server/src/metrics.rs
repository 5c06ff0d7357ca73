//! The server's own metrics and their Prometheus text exposition (format
//! 0.0.4): request counts by endpoint and status, points/values written,
//! lines rejected by reason, ingest rate over the last 10 s, write-commit and
//! query latency histograms. The engine appends its own through
//! `EngineHooks::metrics_text`; both write with [`crate::prometheus`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use strata_series::LineRejection;

use crate::prometheus::{escape_label, header, metric};

/// Content type of `GET /metrics`.
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// Width of the ingest-rate window.
pub const RATE_WINDOW_SECONDS: u64 = 10;
/// Upper bounds (seconds) of the latency histogram buckets, before `+Inf`.
pub const LATENCY_BUCKETS_SECONDS: [f64; 16] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Why lines of a write were not written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RejectReason {
    /// Line protocol the parser refused (including line length and field count limits).
    Parse,
    /// A field whose type differs from the type established for it.
    TypeConflict,
    /// The database's series limit.
    SeriesLimit,
    /// A point the data model does not allow.
    Malformed,
    /// A line that does not fit its event stream's schema.
    SchemaMismatch,
    /// The event stream is full.
    TableFull,
    /// The event stream was dropped during the write.
    TableDropped,
    /// Not written after an earlier line of its stream failed.
    NotAttempted,
}

impl RejectReason {
    const ALL: [RejectReason; 8] = [
        RejectReason::Parse,
        RejectReason::TypeConflict,
        RejectReason::SeriesLimit,
        RejectReason::Malformed,
        RejectReason::SchemaMismatch,
        RejectReason::TableFull,
        RejectReason::TableDropped,
        RejectReason::NotAttempted,
    ];

    fn label(self) -> &'static str {
        match self {
            RejectReason::Parse => "parse",
            RejectReason::TypeConflict => "type_conflict",
            RejectReason::SeriesLimit => "series_limit",
            RejectReason::Malformed => "malformed",
            RejectReason::SchemaMismatch => "schema_mismatch",
            RejectReason::TableFull => "table_full",
            RejectReason::TableDropped => "table_dropped",
            RejectReason::NotAttempted => "not_attempted",
        }
    }

    /// The counter of one rejected line.
    pub fn of(rejection: &LineRejection) -> RejectReason {
        match rejection {
            LineRejection::Malformed(_) => RejectReason::Malformed,
            LineRejection::FieldTypeConflict { .. } => RejectReason::TypeConflict,
            LineRejection::Unfit(_) => RejectReason::SchemaMismatch,
            LineRejection::TableFull(_) => RejectReason::TableFull,
            LineRejection::TableDropped(_) => RejectReason::TableDropped,
            LineRejection::NotAttempted(_) => RejectReason::NotAttempted,
        }
    }
}

/// The `endpoint` label of a request path (a fixed set, so label cardinality is bounded).
pub fn endpoint_label(path: &str) -> &'static str {
    match path {
        "/write" => "write",
        "/api/v2/write" => "write_v2",
        "/query" => "query",
        "/ping" => "ping",
        "/health" => "health",
        "/metrics" => "metrics",
        _ => "other",
    }
}

/// A Prometheus histogram of durations with [`LATENCY_BUCKETS_SECONDS`].
#[derive(Debug, Default)]
pub struct LatencyHistogram {
    /// Per-bucket (not cumulative) counts; the last slot is `+Inf`.
    buckets: [AtomicU64; LATENCY_BUCKETS_SECONDS.len() + 1],
    sum_ns: AtomicU64,
    count: AtomicU64,
}

impl LatencyHistogram {
    pub fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let slot = LATENCY_BUCKETS_SECONDS
            .iter()
            .position(|&le| seconds <= le)
            .unwrap_or(LATENCY_BUCKETS_SECONDS.len());
        self.buckets[slot].fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        header(out, name, "histogram", help);
        let mut cumulative = 0u64;
        for (i, bucket) in self.buckets.iter().enumerate() {
            cumulative += bucket.load(Ordering::Relaxed);
            match LATENCY_BUCKETS_SECONDS.get(i) {
                Some(le) => writeln!(out, "{name}_bucket{{le=\"{le}\"}} {cumulative}"),
                None => writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {cumulative}"),
            }
            .expect("write to String");
        }
        let sum_seconds = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        writeln!(out, "{name}_sum {sum_seconds}").expect("write to String");
        writeln!(out, "{name}_count {cumulative}").expect("write to String");
    }
}

/// Points and values per second over the last [`RATE_WINDOW_SECONDS`]:
/// one slot per second of a ring, reset when its second comes round again.
#[derive(Debug, Default)]
struct RateWindow {
    /// (second since server start, points, values)
    slots: [(u64, u64, u64); RATE_WINDOW_SECONDS as usize],
}

impl RateWindow {
    fn record(&mut self, now_s: u64, points: u64, values: u64) {
        let slot = &mut self.slots[(now_s % RATE_WINDOW_SECONDS) as usize];
        if slot.0 != now_s {
            *slot = (now_s, 0, 0);
        }
        slot.1 += points;
        slot.2 += values;
    }

    /// (points/s, values/s) over the seconds `now_s - 9 ..= now_s`.
    fn rates(&self, now_s: u64) -> (f64, f64) {
        let oldest = now_s.saturating_sub(RATE_WINDOW_SECONDS - 1);
        let (mut points, mut values) = (0u64, 0u64);
        for &(second, p, v) in &self.slots {
            if (oldest..=now_s).contains(&second) {
                points += p;
                values += v;
            }
        }
        let window = RATE_WINDOW_SECONDS as f64;
        (points as f64 / window, values as f64 / window)
    }
}

/// Why the server refused or closed a connection ([`crate::conn`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ConnEvent {
    /// `accept` failed (out of file descriptors, a reset).
    AcceptError,
    /// Beyond `max_connections` with none idle: answered 503 and closed.
    MaxConnections,
    /// Idle, closed to make room for a new connection.
    IdleClosedForRoom,
    /// No whole request head within `header_read_timeout` (idle or slow).
    HeaderReadTimeout,
    /// HTTPS: the TLS handshake failed or took longer than `header_read_timeout`.
    TlsHandshake,
}

impl ConnEvent {
    pub const ALL: [ConnEvent; 5] = [
        ConnEvent::AcceptError,
        ConnEvent::MaxConnections,
        ConnEvent::IdleClosedForRoom,
        ConnEvent::HeaderReadTimeout,
        ConnEvent::TlsHandshake,
    ];

    fn label(self) -> &'static str {
        match self {
            ConnEvent::AcceptError => "accept_error",
            ConnEvent::MaxConnections => "max_connections",
            ConnEvent::IdleClosedForRoom => "idle_closed_for_room",
            ConnEvent::HeaderReadTimeout => "header_read_timeout",
            ConnEvent::TlsHandshake => "tls_handshake",
        }
    }
}

/// Every metric the server keeps. Shared by all handlers; cheap to update.
#[derive(Debug)]
pub struct Metrics {
    started: Instant,
    requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
    in_flight: AtomicI64,
    auth_failures: AtomicU64,
    write_body_bytes: AtomicU64,
    points_written: AtomicU64,
    values_written: AtomicU64,
    lines_rejected: [AtomicU64; RejectReason::ALL.len()],
    connections_closed: [AtomicU64; ConnEvent::ALL.len()],
    ingest: Mutex<RateWindow>,
    pub write_commit: LatencyHistogram,
    pub query: LatencyHistogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        Metrics {
            started: Instant::now(),
            requests: Mutex::new(BTreeMap::new()),
            in_flight: AtomicI64::new(0),
            auth_failures: AtomicU64::new(0),
            write_body_bytes: AtomicU64::new(0),
            points_written: AtomicU64::new(0),
            values_written: AtomicU64::new(0),
            lines_rejected: Default::default(),
            connections_closed: Default::default(),
            ingest: Mutex::new(RateWindow::default()),
            write_commit: LatencyHistogram::default(),
            query: LatencyHistogram::default(),
        }
    }

    fn now_s(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    pub fn request_started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    pub fn request_ended(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    pub fn count_response(&self, endpoint: &'static str, status: u16) {
        *self.requests.lock().entry((endpoint, status)).or_insert(0) += 1;
    }

    pub fn requests(&self, endpoint: &'static str, status: u16) -> u64 {
        self.requests.lock().get(&(endpoint, status)).copied().unwrap_or(0)
    }

    pub fn record_auth_failure(&self) {
        self.auth_failures.fetch_add(1, Ordering::Relaxed);
    }

    pub fn record_write_body(&self, bytes: usize) {
        self.write_body_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub fn record_written(&self, points: usize, values: usize) {
        self.points_written.fetch_add(points as u64, Ordering::Relaxed);
        self.values_written.fetch_add(values as u64, Ordering::Relaxed);
        self.ingest.lock().record(self.now_s(), points as u64, values as u64);
    }

    pub fn record_rejected(&self, reason: RejectReason, lines: usize) {
        let slot = RejectReason::ALL.iter().position(|&r| r == reason).expect("listed");
        self.lines_rejected[slot].fetch_add(lines as u64, Ordering::Relaxed);
    }

    pub fn record_connection(&self, event: ConnEvent) {
        let slot = ConnEvent::ALL.iter().position(|&e| e == event).expect("listed");
        self.connections_closed[slot].fetch_add(1, Ordering::Relaxed);
    }

    pub fn connections(&self, event: ConnEvent) -> u64 {
        let slot = ConnEvent::ALL.iter().position(|&e| e == event).expect("listed");
        self.connections_closed[slot].load(Ordering::Relaxed)
    }

    pub fn points_written(&self) -> u64 {
        self.points_written.load(Ordering::Relaxed)
    }

    /// Appends every server metric in Prometheus text format 0.0.4.
    pub fn render(&self, out: &mut String, version: &str) {
        header(out, "strata_build_info", "gauge", "Always 1; the version reported to clients is a label.");
        writeln!(out, "strata_build_info{{version=\"{}\"}} 1", escape_label(version)).expect("write");
        let uptime = self.started.elapsed().as_secs_f64();
        metric(out, "strata_uptime_seconds", "gauge", "Seconds since the server started.", uptime);

        header(
            out,
            "strata_http_requests_total",
            "counter",
            "HTTP requests answered, by endpoint and status code.",
        );
        for ((endpoint, status), count) in self.requests.lock().iter() {
            writeln!(
                out,
                "strata_http_requests_total{{endpoint=\"{endpoint}\",status=\"{status}\"}} {count}"
            )
            .expect("write");
        }
        let in_flight = self.in_flight.load(Ordering::Relaxed);
        metric(out, "strata_http_requests_in_flight", "gauge", "HTTP requests being served now.", in_flight);
        let auth_failures = self.auth_failures.load(Ordering::Relaxed);
        metric(
            out,
            "strata_http_auth_failures_total",
            "counter",
            "Requests refused with 401.",
            auth_failures,
        );
        let body_bytes = self.write_body_bytes.load(Ordering::Relaxed);
        let help = "Write request body bytes received (as sent).";
        metric(out, "strata_write_body_bytes_total", "counter", help, body_bytes);

        let points = self.points_written.load(Ordering::Relaxed);
        metric(out, "strata_points_written_total", "counter", "Points (lines) committed by writes.", points);
        let values = self.values_written.load(Ordering::Relaxed);
        let help = "Field values committed by writes.";
        metric(out, "strata_field_values_written_total", "counter", help, values);
        header(
            out,
            "strata_lines_rejected_total",
            "counter",
            "Lines of write requests not written, by reason.",
        );
        for (reason, count) in RejectReason::ALL.iter().zip(&self.lines_rejected) {
            let count = count.load(Ordering::Relaxed);
            writeln!(out, "strata_lines_rejected_total{{reason=\"{}\"}} {count}", reason.label())
                .expect("write");
        }

        header(
            out,
            "strata_http_connections_refused_total",
            "counter",
            "Connections refused or closed by the server, by reason.",
        );
        for event in ConnEvent::ALL {
            let count = self.connections(event);
            writeln!(out, "strata_http_connections_refused_total{{reason=\"{}\"}} {count}", event.label())
                .expect("write");
        }

        let (points_per_s, values_per_s) = self.ingest.lock().rates(self.now_s());
        let help = "Points written per second over the last 10 s.";
        metric(out, "strata_ingest_points_per_second", "gauge", help, points_per_s);
        let help = "Field values written per second over the last 10 s.";
        metric(out, "strata_ingest_values_per_second", "gauge", help, values_per_s);

        self.write_commit.render(
            out,
            "strata_write_commit_seconds",
            "Time the store took to commit one write request (durable on return).",
        );
        self.query.render(out, "strata_query_seconds", "Time to execute one /query request.");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative_with_sum_and_count() {
        let h = LatencyHistogram::default();
        h.observe(Duration::from_micros(50)); // <= 0.0001
        h.observe(Duration::from_millis(3)); // <= 0.005
        h.observe(Duration::from_secs(20)); // +Inf
        let mut out = String::new();
        h.render(&mut out, "x_seconds", "help");
        assert!(out.contains("# TYPE x_seconds histogram\n"), "{out}");
        assert!(out.contains("x_seconds_bucket{le=\"0.0001\"} 1\n"), "{out}");
        assert!(out.contains("x_seconds_bucket{le=\"0.0025\"} 1\n"), "{out}");
        assert!(out.contains("x_seconds_bucket{le=\"0.005\"} 2\n"), "{out}");
        assert!(out.contains("x_seconds_bucket{le=\"10\"} 2\n"), "{out}");
        assert!(out.contains("x_seconds_bucket{le=\"+Inf\"} 3\n"), "{out}");
        assert!(out.contains("x_seconds_count 3\n"), "{out}");
        assert!(out.contains("x_seconds_sum 20.00305\n"), "{out}");
    }

    #[test]
    fn rate_window_forgets_seconds_older_than_ten() {
        let mut w = RateWindow::default();
        w.record(0, 100, 200);
        w.record(5, 50, 50);
        assert_eq!(w.rates(5), (15.0, 25.0));
        assert_eq!(w.rates(9), (15.0, 25.0));
        assert_eq!(w.rates(10), (5.0, 5.0));
        w.record(10, 10, 10); // reuses slot 0
        assert_eq!(w.rates(10), (6.0, 6.0));
        assert_eq!(w.rates(100), (0.0, 0.0));
    }

    #[test]
    fn render_has_help_and_type_for_every_metric() {
        let m = Metrics::new();
        m.request_started();
        m.count_response("write", 204);
        m.request_ended();
        m.record_written(3, 6);
        m.record_rejected(RejectReason::TypeConflict, 2);
        let mut out = String::new();
        m.render(&mut out, "1.8.10-strata");
        assert!(out.contains("strata_http_requests_total{endpoint=\"write\",status=\"204\"} 1\n"), "{out}");
        assert!(out.contains("strata_points_written_total 3\n"), "{out}");
        assert!(out.contains("strata_field_values_written_total 6\n"), "{out}");
        assert!(out.contains("strata_lines_rejected_total{reason=\"type_conflict\"} 2\n"), "{out}");
        assert!(out.contains("strata_ingest_points_per_second 0.3\n"), "{out}");
        assert!(out.contains("strata_build_info{version=\"1.8.10-strata\"} 1\n"), "{out}");
        // Every sample's metric family was announced with HELP and TYPE first.
        let mut announced = std::collections::HashSet::new();
        for line in out.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                announced.insert(rest.split(' ').next().unwrap().to_string());
            } else if !line.starts_with('#') {
                let name = line.split(['{', ' ']).next().unwrap();
                let family = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|s| name.strip_suffix(s).filter(|f| announced.contains(*f)))
                    .unwrap_or(name);
                assert!(announced.contains(family), "{name} has no TYPE line before it");
            }
        }
    }

    #[test]
    fn endpoint_labels_are_bounded() {
        assert_eq!(endpoint_label("/write"), "write");
        assert_eq!(endpoint_label("/api/v2/write"), "write_v2");
        assert_eq!(endpoint_label("/anything/else"), "other");
    }
}
