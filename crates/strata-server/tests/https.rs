//! HTTPS (docs/http-api.md, "HTTPS"): with a certificate and key the server
//! speaks TLS on every connection; a client that trusts the certificate
//! writes and queries as over HTTP, a plain-HTTP client gets nothing served
//! and is counted, and unusable files stop the start with a clear error.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;

use common::{encode, parse_response, Response, TestServer};
use strata_server::{ServerConfig, ServerError, TlsFiles};
use tokio_rustls::rustls::{self, pki_types::CertificateDer, ClientConfig, ClientConnection, RootCertStore};

/// A self-signed certificate for `localhost` and its key, as PEM files in `dir`.
fn certificate(dir: &Path) -> (TlsFiles, CertificateDer<'static>) {
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .expect("params")
        .self_signed(&key)
        .expect("self-signed");
    let files = TlsFiles { certificate: dir.join("cert.pem"), private_key: dir.join("key.pem") };
    std::fs::write(&files.certificate, cert.pem()).unwrap();
    std::fs::write(&files.private_key, key.serialize_pem()).unwrap();
    (files, cert.der().clone())
}

/// One HTTPS request on a new connection that trusts only `root`.
fn https(addr: SocketAddr, root: &CertificateDer<'static>, request: &str) -> Response {
    let mut roots = RootCertStore::empty();
    roots.add(root.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let conn = ClientConnection::new(Arc::new(config), "localhost".try_into().unwrap()).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, TcpStream::connect(addr).unwrap());
    tls.write_all(request.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    // The server closes after `Connection: close`; rustls reports a close
    // without close_notify as an error once the bytes are read.
    let _ = tls.read_to_end(&mut bytes);
    parse_response(&bytes)
}

fn request(method: &str, path: &str, body: &str) -> String {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn a_client_that_trusts_the_certificate_writes_and_queries_over_https() {
    let dir = tempfile::tempdir().unwrap();
    let (files, root) = certificate(dir.path());
    let server = TestServer::start(ServerConfig { tls: Some(files), ..Default::default() });
    assert_eq!(https(server.addr, &root, &request("GET", "/ping", "")).status, 204);
    let wrote = https(server.addr, &root, &request("POST", "/write?db=db", "cpu v=1.5 1\n"));
    assert_eq!(wrote.status, 204, "{}", wrote.text());
    let path = format!("/query?db=db&epoch=ns&q={}", encode("SELECT v FROM cpu"));
    let answer = https(server.addr, &root, &request("GET", &path, ""));
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.json()["results"][0]["series"][0]["values"], serde_json::json!([[1, 1.5]]));

    // Plain HTTP on the HTTPS port is not served; the failed handshake is counted.
    let mut plain = TcpStream::connect(server.addr).unwrap();
    plain.write_all(b"GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"HTTP/"), "plain HTTP was served: {}", String::from_utf8_lossy(&answer));
    // The server may close the socket a moment before it counts the failure.
    let counted =
        |metrics: &str| metrics.lines().any(|l| l.contains("reason=\"tls_handshake\"") && !l.ends_with(" 0"));
    let mut metrics = String::new();
    for _ in 0..100 {
        metrics = https(server.addr, &root, &request("GET", "/metrics", "")).text();
        if counted(&metrics) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(counted(&metrics), "{metrics}");
}

#[test]
fn unusable_certificate_files_stop_the_start_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (mut files, _) = certificate(dir.path());
    files.private_key = dir.path().join("missing.pem");
    let (_addr, _tx, thread) = common::spawn_server(
        Arc::new(strata_series::reference::MemStore::new()),
        Arc::new(strata_server::NoopHooks),
        ServerConfig { tls: Some(files.clone()), ..Default::default() },
    );
    let error = thread.join().unwrap().expect_err("a missing key file fails the start");
    assert!(error.to_string().contains("missing.pem"), "{error}");
    // The typed error, as `strata serve` sees it.
    let typed = ServerError::Tls { path: files.private_key, reason: "x".into() };
    assert!(typed.to_string().starts_with("cannot serve HTTPS with"));
}
