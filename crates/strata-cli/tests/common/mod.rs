//! Helpers of the tests that drive the real `strata serve` process.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One HTTP/1.1 request on a fresh connection; returns (status, body).
pub fn http(port: u16, method: &str, path: &str, body: &[u8]) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut resp = Vec::new();
    s.read_to_end(&mut resp)?;
    let text = String::from_utf8_lossy(&resp).to_string();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status line in {text:?}")))?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text.as_str(), ""));
    let chunked = head.lines().any(|l| l.eq_ignore_ascii_case("transfer-encoding: chunked"));
    let body = if chunked { dechunk(body) } else { body.to_string() };
    Ok((status, body))
}

/// A `Transfer-Encoding: chunked` body's data (a streamed query response).
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || tail.len() < size {
            break;
        }
        out.push_str(&tail[..size]);
        rest = tail[size..].strip_prefix("\r\n").unwrap_or(&tail[size..]);
    }
    out
}

/// A port to start a server on, below the kernel's ephemeral range
/// (32768-60999 here): a port taken from that range (`bind :0`) and given
/// back can be handed out again as the source port of any client
/// connection before the server binds it, which made tests that start
/// servers fail now and then with "Address already in use". Ports are
/// taken in turn from a start spread by the process id, each checked free.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const FIRST: u32 = 20_000;
    const SPAN: u32 = 12_000;
    let base = std::process::id().wrapping_mul(7_919) % SPAN;
    for _ in 0..SPAN {
        let port = (FIRST + (base + NEXT.fetch_add(1, Ordering::Relaxed)) % SPAN) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {FIRST}..{}", FIRST + SPAN)
}

/// A spawned server, killed (SIGKILL) and reaped when dropped: a test that
/// panics leaves no server running.
#[allow(dead_code)] // not every test binary uses it
pub struct KillOnDrop(pub Child);

impl std::ops::Deref for KillOnDrop {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // Already killed and reaped by the test is fine: both fail quietly.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `strata serve` without SQL on `data_dir` (inside a temporary
/// directory, which also gets the configuration file `config` and the
/// server's stderr, `serve-stderr.log`) and waits until it answers `/ping`.
/// The server is killed when the returned guard drops, so a test that
/// fails leaves none running.
/// An empty `protocol` passes no `--protocol`: the configuration's, by
/// default `auto`.
#[allow(dead_code)] // each test binary compiles this module; the SQL tests start with SQL on
pub fn start(data_dir: &Path, config_text: &str, protocol: &str, port: u16) -> KillOnDrop {
    start_with(data_dir, config_text, protocol, port, &["--no-sql"])
}

/// [`start`] with more arguments to `strata serve`.
pub fn start_with(
    data_dir: &Path,
    config_text: &str,
    protocol: &str,
    port: u16,
    extra: &[&str],
) -> KillOnDrop {
    start_limited(data_dir, config_text, protocol, port, extra, None)
}

/// [`start_with`], the server run under `ulimit -n fd_limit` when given.
pub fn start_limited(
    data_dir: &Path,
    config_text: &str,
    protocol: &str,
    port: u16,
    extra: &[&str],
    fd_limit: Option<u32>,
) -> KillOnDrop {
    let config = data_dir.parent().expect("data dir inside a temp dir").join("strata.toml");
    std::fs::write(&config, config_text).expect("write config");
    let stderr_path = data_dir.parent().expect("data dir inside a temp dir").join("serve-stderr.log");
    let stderr = std::fs::File::create(&stderr_path).expect("create stderr log");
    let mut command = match fd_limit {
        None => Command::new(env!("CARGO_BIN_EXE_strata")),
        Some(n) => {
            let mut sh = Command::new("sh");
            sh.args(["-c", &format!("ulimit -n {n} && exec \"$0\" \"$@\""), env!("CARGO_BIN_EXE_strata")]);
            sh
        }
    };
    let child = command
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .arg("--data-dir")
        .arg(data_dir)
        .args(if protocol.is_empty() { vec![] } else { vec!["--protocol", protocol] })
        .args(["--bind", &format!("127.0.0.1:{port}")])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("spawn strata serve");
    let mut child = KillOnDrop(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        // 401: up, with a token configured.
        if let Ok((204 | 401, _)) = http(port, "GET", "/ping", b"") {
            return child;
        }
        if let Some(status) = child.try_wait().expect("poll strata serve") {
            let log = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            panic!("strata serve exited with {status} before answering /ping; its stderr:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("kill");
    child.wait().expect("reap");
    panic!("strata serve did not answer /ping within 60 s");
}

/// The rows (`values`) of the first series InfluxQL `q` answers on `db`,
/// times in epoch nanoseconds; empty when it finds nothing.
#[allow(dead_code)] // not every test binary queries
pub fn query_rows(port: u16, db: &str, q: &str) -> Vec<serde_json::Value> {
    let encoded: String = q
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let (status, body) =
        http(port, "GET", &format!("/query?db={db}&epoch=ns&q={encoded}"), b"").expect("query");
    assert_eq!(status, 200, "{q}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("bad JSON {e}: {body}"));
    assert!(v["results"][0].get("error").is_none(), "{q}: {v}");
    v["results"][0]["series"][0]["values"].as_array().cloned().unwrap_or_default()
}
