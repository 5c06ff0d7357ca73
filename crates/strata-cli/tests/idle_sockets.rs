//! The real `strata serve` under `ulimit -n 256` (issue 15 item 2's
//! acceptance): 1,000 idle connections attempted beside it, and `/ping` on
//! a new connection answers 204 within a second throughout, because idle
//! connections are closed to make room; idle connections are also closed
//! by the header read timeout.

mod common;

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{free_port, http, start_limited};

#[test]
fn ping_answers_within_a_second_beside_a_thousand_idle_connections_under_256_fds() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let port = free_port();
    // The default cap (512) is above the descriptor limit: accept itself
    // fails first, and that too closes idle connections.
    let config = "[server]\nheader_read_timeout_ms = 5000\n";
    let mut child = start_limited(&data, config, "serial-ssd", port, &["--no-sql"], Some(256));
    let mut idle = Vec::new();
    let mut slowest = Duration::ZERO;
    for i in 0..1000 {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            idle.push(s);
        }
        if i % 100 == 99 {
            let started = Instant::now();
            let (status, body) = http(port, "GET", "/ping", b"").expect("ping");
            let took = started.elapsed();
            assert_eq!(status, 204, "after {} idle connections: {body}", i + 1);
            assert!(took < Duration::from_secs(1), "after {} idle connections: {took:?}", i + 1);
            slowest = slowest.max(took);
        }
    }
    println!("1,000 idle connections attempted, {} open on our side; slowest /ping {slowest:?}", idle.len());
    // The header read timeout closes the ones that stayed open.
    std::thread::sleep(Duration::from_secs(6));
    let mut still_open = 0;
    for mut s in idle {
        s.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
        let mut buf = [0u8; 16];
        if let Err(e) = s.read(&mut buf) {
            if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
                still_open += 1;
            }
        }
    }
    assert_eq!(still_open, 0, "every idle connection closed after the timeout");
    let (status, metrics) = http(port, "GET", "/metrics", b"").expect("metrics");
    assert_eq!(status, 200);
    assert!(metrics.contains("strata_http_connections_refused_total{reason=\"idle_closed_for_room\"}"));
    child.kill().unwrap();
    child.wait().unwrap();
}
