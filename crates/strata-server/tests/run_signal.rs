//! `run()` end to end: binds, serves, and on SIGTERM finishes and
//! checkpoints. Its own test binary, because it signals its own process.

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::TestHooks;
use strata_engine::Tables;
use strata_series::reference::MemStore;
use strata_series::SeriesStore;
use strata_server::{run, ServerConfig};

#[test]
fn sigterm_stops_run_after_a_checkpoint() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = free.local_addr().unwrap();
    drop(free);
    let store = Arc::new(MemStore::new());
    store.create_database("db").unwrap();
    let hooks = Arc::new(TestHooks::default());
    let config = ServerConfig { bind: addr, ..Default::default() };
    let (run_store, run_hooks) = (Arc::clone(&store) as Arc<dyn Tables>, Arc::clone(&hooks));
    let server = std::thread::spawn(move || run(run_store, run_hooks, config));

    // Once /ping answers, the signal handlers are installed (they are set up before listening).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if std::net::TcpStream::connect(addr).is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "server never came up on {addr}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(common::request(addr, "GET", "/ping", &[], b"").status, 204);
    assert_eq!(common::request(addr, "POST", "/write?db=db", &[], b"cpu value=1 1").status, 204);

    let status = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    let result = server.join().expect("run panicked");
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(hooks.checkpoints.load(Ordering::SeqCst), 1);
    assert!(std::net::TcpStream::connect(addr).is_err(), "still accepting after shutdown");
}

#[test]
fn run_reports_a_port_in_use() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let config = ServerConfig { bind: taken.local_addr().unwrap(), ..Default::default() };
    let err = run(Arc::new(MemStore::new()), Arc::new(TestHooks::default()), config).unwrap_err();
    assert!(
        err.to_string().starts_with(&format!("cannot listen on {}", taken.local_addr().unwrap())),
        "{err}"
    );
}
