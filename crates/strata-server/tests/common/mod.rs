//! Test harness: an in-process server on 127.0.0.1:0 over a `MemStore`,
//! hooks that count checkpoints, and a tiny blocking HTTP/1.1 client over a
//! raw `TcpStream` (so tests control every byte: cut bodies, bad lengths).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use strata_engine::Tables;
use strata_series::reference::MemStore;
use strata_series::SeriesStore;
use strata_server::{serve, EngineHooks, ServerConfig};

/// Engine hooks that count checkpoints and can be made unhealthy.
#[derive(Default)]
pub struct TestHooks {
    pub checkpoints: AtomicUsize,
    pub unhealthy: Mutex<Option<String>>,
}

impl EngineHooks for TestHooks {
    fn checkpoint(&self) -> Result<String, strata_series::EngineError> {
        let n = self.checkpoints.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(format!("test checkpoint #{n}"))
    }

    fn metrics_text(&self, out: &mut String) {
        out.push_str("# HELP strata_log_bytes_total Bytes appended to the commit log.\n");
        out.push_str("# TYPE strata_log_bytes_total counter\n");
        out.push_str("strata_log_bytes_total 4242\n");
    }

    fn unhealthy_because(&self) -> Option<String> {
        self.unhealthy.lock().clone()
    }
}

/// Binds 127.0.0.1:0 and runs [`serve`] over `store` in a thread with its
/// own 2-worker runtime until the returned sender fires (or is dropped).
pub fn spawn_server(
    store: Arc<dyn Tables>,
    hooks: Arc<dyn EngineHooks>,
    config: ServerConfig,
) -> (SocketAddr, tokio::sync::oneshot::Sender<()>, JoinHandle<std::io::Result<()>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener)?;
            let shutdown = async move {
                let _ = rx.await;
            };
            serve(listener, store, hooks, config, shutdown).await
        })
    });
    (addr, tx, thread)
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub store: Arc<MemStore>,
    pub hooks: Arc<TestHooks>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    /// A server with database "db" already created.
    pub fn start(config: ServerConfig) -> TestServer {
        TestServer::start_with_store(config, MemStore::new())
    }

    pub fn start_with_store(config: ServerConfig, store: MemStore) -> TestServer {
        let store = Arc::new(store);
        store.create_database("db").expect("create db");
        let hooks = Arc::new(TestHooks::default());
        let (addr, tx, thread) = spawn_server(store.clone(), hooks.clone(), config);
        TestServer { addr, store, hooks, shutdown: Some(tx), thread: Some(thread) }
    }

    /// Sends the shutdown signal without waiting.
    pub fn signal_shutdown(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }

    /// Signals shutdown and waits for `serve` to return.
    pub fn stop(mut self) -> std::io::Result<()> {
        self.signal_shutdown();
        self.thread.take().expect("running").join().expect("server thread panicked")
    }

    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    pub fn get(&self, path: &str, headers: &[(&str, &str)]) -> Response {
        request(self.addr, "GET", path, headers, b"")
    }

    pub fn post(&self, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
        request(self.addr, "POST", path, headers, body)
    }

    /// SELECT through `/query` with nanosecond epochs.
    pub fn query(&self, q: &str) -> serde_json::Value {
        let path = format!("/query?db=db&epoch=ns&q={}", encode(q));
        let response = self.get(&path, &[]);
        assert_eq!(response.status, 200, "{q}: {}", response.text());
        response.json()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.signal_shutdown();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Percent-encodes a query parameter value.
pub fn encode(value: &str) -> String {
    let mut out = String::new();
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// The v1 `error` text.
    pub fn error(&self) -> String {
        self.json()["error"].as_str().unwrap_or_else(|| panic!("no error field: {}", self.text())).to_string()
    }
}

/// One request with `Content-Length` and `Connection: close`.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-length")) {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    raw(addr, &bytes)
}

/// Sends `bytes` as they are and reads the response.
pub fn raw(addr: SocketAddr, bytes: &[u8]) -> Response {
    let mut stream = connect(addr);
    stream.write_all(bytes).expect("send");
    read_response(&mut stream)
}

/// Sends `bytes`, closes the sending half (the server sees the body end
/// early if it was cut), and reads what comes back, if anything.
pub fn raw_half_closed(addr: SocketAddr, bytes: &[u8]) -> Option<Response> {
    let mut stream = connect(addr);
    stream.write_all(bytes).expect("send");
    stream.shutdown(std::net::Shutdown::Write).expect("half-close");
    let mut received = Vec::new();
    let _ = stream.read_to_end(&mut received);
    (!received.is_empty()).then(|| parse_response(&received))
}

pub fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    stream
}

/// Reads one response until the server closes the connection.
pub fn read_response(stream: &mut TcpStream) -> Response {
    let mut bytes = Vec::new();
    if let Err(e) = stream.read_to_end(&mut bytes) {
        assert!(!bytes.is_empty(), "no response: {e}");
    }
    parse_response(&bytes)
}

pub fn parse_response(bytes: &[u8]) -> Response {
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end: {}", String::from_utf8_lossy(bytes)));
    let head = std::str::from_utf8(&bytes[..split]).expect("ASCII head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line");
    let status: u16 = status_line.split(' ').nth(1).expect("status").parse().expect("numeric status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = bytes[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Response { status, headers, body }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else { return out };
        let size_text = std::str::from_utf8(&data[..eol]).expect("chunk size");
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).expect("hex size");
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[eol + 2..eol + 2 + size]);
        data = &data[eol + 2 + size + 2..];
    }
}

pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(data).expect("gzip");
    encoder.finish().expect("gzip")
}

/// Every point of `measurement` in database "db", by field, as (time, value) pairs.
pub fn stored(store: &MemStore, measurement: &str) -> Vec<(String, Vec<(i64, strata_series::FieldValue)>)> {
    let series = store.series("db", measurement).expect("series");
    let ids: Vec<_> = series.iter().map(|s| s.id).collect();
    let data = store.read("db", &ids, strata_series::TimeRange::ALL).expect("read");
    series
        .iter()
        .zip(data)
        .map(|(info, points)| {
            let tags: Vec<String> = info.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
            (format!("{}#{}", tags.join(","), info.field), points)
        })
        .collect()
}

/// A server over the engine `strata serve` uses ([`strata_engine::Db`]),
/// opened on `config`'s data directory.
pub struct DbServer {
    pub addr: SocketAddr,
    pub db: Arc<strata_engine::Db>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

impl DbServer {
    pub fn start(config: &strata_engine::Config) -> DbServer {
        let db = Arc::new(strata_engine::Db::open(config, &|_, _, _| {}).expect("open the data directory"));
        let (addr, tx, thread) =
            spawn_server(db.tables().clone(), Arc::new(strata_server::NoopHooks), ServerConfig::default());
        DbServer { addr, db, stop: Some(tx), thread: Some(thread) }
    }

    /// Stops the server and checks it released the engine.
    pub fn stop(mut self) {
        let _ = self.stop.take().expect("running").send(());
        self.thread.take().expect("running").join().expect("server thread").expect("serve");
        assert_eq!(Arc::strong_count(&self.db), 1, "the server released the store");
    }

    pub fn call(&self, method: &str, path: &str, body: &[u8]) -> Response {
        request(self.addr, method, path, &[], body)
    }
}
