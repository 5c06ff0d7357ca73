//! `/query`, `/ping`, `/health`, `/metrics`, authentication on every
//! endpoint, fallbacks and graceful shutdown, against an in-process server.

mod common;

use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

use base64::Engine as _;
use common::{encode, TestServer};
use strata_series::SeriesStore;
use strata_server::ServerConfig;

const TOKEN: &str = "s3cret-token";

fn with_token() -> ServerConfig {
    ServerConfig { auth_token: Some(TOKEN.to_string()), ..Default::default() }
}

#[test]
fn ping_answers_204_with_influx_headers() {
    let server = TestServer::start(ServerConfig::default());
    let response = server.get("/ping", &[]);
    assert_eq!(response.status, 204);
    assert_eq!(response.header("X-Influxdb-Version"), Some(ServerConfig::default().version.as_str()));
    assert_eq!(response.header("X-Influxdb-Build"), Some("OSS"));
    assert!(response.header("Request-Id").is_some());
    assert_eq!(response.header("X-Request-Id"), response.header("Request-Id"));
    let head = common::request(server.addr, "HEAD", "/ping", &[], b"");
    assert_eq!(head.status, 204);
    assert!(head.header("X-Influxdb-Version").is_some());
    let verbose = server.get("/ping?verbose=true", &[("X-Request-Id", "trace-7")]);
    assert_eq!(verbose.status, 200);
    assert_eq!(verbose.json()["version"], ServerConfig::default().version);
    assert_eq!(verbose.header("X-Request-Id"), Some("trace-7"));
}

#[test]
fn version_headers_are_on_error_responses_too() {
    let server = TestServer::start(ServerConfig { version: "1.8.10-test".into(), ..Default::default() });
    for response in [server.get("/nowhere", &[]), server.get("/write", &[]), server.post("/write", &[], b"")]
    {
        assert_eq!(response.header("X-Influxdb-Version"), Some("1.8.10-test"), "{response:?}");
    }
    let missing = server.get("/nowhere", &[]);
    assert_eq!(missing.status, 404);
    assert_eq!(missing.error(), "404 page not found");
    let wrong_method = server.get("/write", &[]);
    assert_eq!(wrong_method.status, 405);
    assert_eq!(wrong_method.error(), "method GET not allowed on /write");
}

#[test]
fn health_passes_then_fails_with_the_engine() {
    let server = TestServer::start(ServerConfig::default());
    let response = server.get("/health", &[]);
    assert_eq!(response.status, 200);
    let body = response.json();
    assert_eq!(body["name"], "strata");
    assert_eq!(body["message"], "ready for queries and writes");
    assert_eq!(body["status"], "pass");
    assert_eq!(body["checks"], serde_json::json!([]));
    assert_eq!(body["version"], ServerConfig::default().version);
    *server.hooks.unhealthy.lock() = Some("commit log device failed".to_string());
    let response = server.get("/health", &[]);
    assert_eq!(response.status, 503);
    assert_eq!(response.json()["status"], "fail");
    assert_eq!(response.json()["message"], "commit log device failed");
}

#[test]
fn metrics_lists_server_and_engine_metrics_after_a_write() {
    let server = TestServer::start(ServerConfig::default());
    assert_eq!(server.post("/write?db=db", &[], b"cpu a=1,b=2 1\ncpu a=3 2\nbad\n").status, 400);
    assert_eq!(server.post("/write?db=db", &[], b"cpu a=4 3\n").status, 204);
    server.query("SELECT a FROM cpu");
    let response = server.get("/metrics", &[]);
    assert_eq!(response.status, 200);
    assert_eq!(response.header("Content-Type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    let text = response.text();
    for expected in [
        "# TYPE strata_http_requests_total counter",
        "strata_http_requests_total{endpoint=\"write\",status=\"204\"} 1\n",
        "strata_http_requests_total{endpoint=\"write\",status=\"400\"} 1\n",
        "strata_http_requests_total{endpoint=\"query\",status=\"200\"} 1\n",
        "strata_points_written_total 3\n",
        "strata_field_values_written_total 4\n",
        "strata_lines_rejected_total{reason=\"parse\"} 1\n",
        "# TYPE strata_ingest_points_per_second gauge",
        "strata_ingest_points_per_second 0.3\n",
        "# TYPE strata_write_commit_seconds histogram",
        "strata_write_commit_seconds_count 2\n",
        "strata_write_commit_seconds_bucket{le=\"+Inf\"} 2\n",
        "strata_query_seconds_count 1\n",
        "# HELP strata_log_bytes_total",
        "strata_log_bytes_total 4242\n",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn query_errors_are_400_and_pretty_is_indented() {
    let server = TestServer::start(ServerConfig::default());
    let response = server.get("/query?db=db", &[]);
    assert_eq!(response.status, 400);
    assert_eq!(response.error(), "missing required parameter \"q\"");
    let response = server.get(&format!("/query?db=db&q={}", encode("SELEKT nonsense FROM")), &[]);
    assert_eq!(response.status, 400, "{}", response.text());
    assert!(!response.error().is_empty());
    let response = server.get(&format!("/query?q={}&pretty=true", encode("SHOW DATABASES")), &[]);
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.header("Content-Type"), Some("application/json"));
    assert!(response.text().contains("\n  "), "{}", response.text());
    assert!(response.json()["results"].is_array());
}

#[test]
fn query_accepts_a_form_body() {
    let server = TestServer::start(ServerConfig::default());
    assert_eq!(server.post("/write?db=db", &[], b"cpu value=7 7\n").status, 204);
    let form = format!("db=db&epoch=ns&q={}", encode("SELECT value FROM cpu"));
    let response =
        server.post("/query", &[("Content-Type", "application/x-www-form-urlencoded")], form.as_bytes());
    assert_eq!(response.status, 200, "{}", response.text());
    let values = &response.json()["results"][0]["series"][0]["values"];
    assert_eq!(values, &serde_json::json!([[7, 7.0]]));
}

/// Every endpoint, as (method, path, body).
fn every_endpoint() -> Vec<(&'static str, &'static str, &'static [u8])> {
    vec![
        ("GET", "/ping", b""),
        ("HEAD", "/ping", b""),
        ("GET", "/health", b""),
        ("GET", "/metrics", b""),
        ("GET", "/query?q=SHOW+DATABASES", b""),
        ("POST", "/query?q=SHOW+DATABASES", b""),
        ("POST", "/write?db=db", b"cpu value=1 1"),
        ("POST", "/api/v2/write?bucket=db", b"cpu value=1 1"),
        ("GET", "/no/such/path", b""),
    ]
}

#[test]
fn auth_missing_or_wrong_token_is_401_everywhere() {
    let server = TestServer::start(with_token());
    for (method, path, body) in every_endpoint() {
        let is_v2 = path.starts_with("/api/v2/");
        for (headers, message) in [
            (vec![], "unable to parse authentication credentials"),
            (vec![("Authorization", "Token wrong")], "authorization failed"),
        ] {
            let response = common::request(server.addr, method, path, &headers, body);
            assert_eq!(response.status, 401, "{method} {path} {headers:?}");
            assert_eq!(response.header("WWW-Authenticate"), Some("Basic realm=\"InfluxDB\""));
            assert!(response.header("X-Influxdb-Version").is_some());
            if method == "HEAD" {
                continue;
            }
            let body = response.json();
            if is_v2 {
                assert_eq!(body, serde_json::json!({"code": "unauthorized", "message": message}));
            } else {
                assert_eq!(body, serde_json::json!({"error": message}), "{method} {path}");
            }
        }
    }
    let wrong_p = server.get("/ping?u=me&p=wrong", &[]);
    assert_eq!(wrong_p.status, 401);
    assert!(server.store.measurements("db").unwrap().is_empty(), "a refused write must not write");
}

#[test]
fn auth_accepts_every_credential_form() {
    let server = TestServer::start(with_token());
    let token = format!("Token {TOKEN}");
    let bearer = format!("Bearer {TOKEN}");
    let basic =
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("user:{TOKEN}")));
    let forms: Vec<(Vec<(&str, &str)>, String)> = vec![
        (vec![("Authorization", &token)], String::new()),
        (vec![("Authorization", &bearer)], String::new()),
        (vec![("Authorization", &basic)], String::new()),
        (vec![], format!("&u=user&p={TOKEN}")),
    ];
    for (i, (headers, query_suffix)) in forms.iter().enumerate() {
        let write = format!("/write?db=db{query_suffix}");
        let body = format!("cpu value={i} {i}");
        let response = server.post(&write, headers, body.as_bytes());
        assert_eq!(response.status, 204, "{headers:?} {query_suffix}: {}", response.text());
        let query = format!("/query?db=db&q=SHOW+DATABASES{query_suffix}");
        assert_eq!(server.get(&query, headers).status, 200, "{headers:?} {query_suffix}");
        let ping = format!("/ping?x=1{query_suffix}");
        assert_eq!(server.get(&ping, headers).status, 204, "{headers:?} {query_suffix}");
        assert_eq!(server.get("/metrics", &[("Authorization", &token)]).status, 200);
    }
    let v2 = server.post("/api/v2/write?bucket=db&org=x", &[("Authorization", &token)], b"cpu value=9 9");
    assert_eq!(v2.status, 204, "{}", v2.text());
    assert_eq!(common::stored(&server.store, "cpu")[0].1.len(), 5);
    let metrics = server.get("/metrics", &[("Authorization", &token)]).text();
    assert!(metrics.contains("strata_http_auth_failures_total 0\n"), "{metrics}");
}

#[test]
fn graceful_shutdown_finishes_in_flight_requests_then_checkpoints() {
    let mut server = TestServer::start(ServerConfig::default());
    let body = b"cpu value=1 1\ncpu value=2 2\n";
    let head = format!(
        "POST /write?db=db HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        server.addr,
        body.len()
    );
    let mut stream = common::connect(server.addr);
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&body[..10]).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    server.signal_shutdown();
    std::thread::sleep(Duration::from_millis(300));
    assert!(!server.is_finished(), "serve returned with a request in flight");
    assert_eq!(server.hooks.checkpoints.load(Ordering::SeqCst), 0, "checkpoint before requests finished");
    stream.write_all(&body[10..]).unwrap();
    let response = common::read_response(&mut stream);
    assert_eq!(response.status, 204, "{}", response.text());
    let hooks = std::sync::Arc::clone(&server.hooks);
    let store = std::sync::Arc::clone(&server.store);
    server.stop().expect("serve returns Ok after a clean shutdown");
    assert_eq!(hooks.checkpoints.load(Ordering::SeqCst), 1);
    assert_eq!(common::stored(&store, "cpu")[0].1.len(), 2);
}

#[test]
fn invalid_config_is_refused_by_serve() {
    let server = TestServer::start(ServerConfig { max_body_bytes: 0, ..Default::default() });
    let hooks = std::sync::Arc::clone(&server.hooks);
    let err = server.stop().unwrap_err();
    assert!(err.to_string().contains("max_body_bytes must be at least 1"), "{err}");
    assert_eq!(hooks.checkpoints.load(Ordering::SeqCst), 0);
}

#[test]
fn a_flux_query_is_told_to_use_influxql() {
    // The v2 clients send Flux as `application/vnd.flux` or inside JSON;
    // either way the answer is the v2 error shape, not a bare 404.
    let server = TestServer::start(ServerConfig::default());
    let flux = r#"from(bucket:"db") |> range(start: -1h)"#;
    let json = serde_json::json!({"query": flux, "type": "flux"}).to_string();
    for (content_type, body) in [("application/vnd.flux", flux.to_string()), ("application/json", json)] {
        let headers = [("Content-Type", content_type), ("Accept", "application/csv")];
        let response = server.post("/api/v2/query?org=o", &headers, body.as_bytes());
        assert_eq!(response.status, 501, "{content_type}: {response:?}");
        let body = response.json();
        assert_eq!(body["code"], "not implemented", "{content_type}");
        let message = body["message"].as_str().unwrap_or("");
        assert!(message.starts_with("Flux is not supported;") && message.contains("/query"), "{body}");
    }
}
