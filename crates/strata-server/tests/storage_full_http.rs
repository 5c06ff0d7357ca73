//! A full disk seen over HTTP (issue 15, item 6): a series engine over the
//! fault-injecting file system with a small serial PMem ring, so the ring
//! fills and the checkpoint that would free it cannot write its block file.
//! `/write` then answers 507 naming the disk, earlier acknowledged points
//! stay queryable, and writes succeed again once space is freed, without a
//! restart.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{request, spawn_server};
use strata_log::SerialLog;
use strata_media::fs::{FaultFs, FileSystem};
use strata_pmem::{Region, RegionOffset};
use strata_series::{EngineOptions, SeriesEngine, SeriesStore, WalOpener};
use strata_server::{NoopHooks, ServerConfig};

const RING_BYTES: u64 = 64 * 1024;

fn count(addr: std::net::SocketAddr) -> u64 {
    let q = common::encode("SELECT count(v) FROM m");
    let r = request(addr, "GET", &format!("/query?db=db&q={q}"), &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let json = r.json();
    json["results"][0]["series"][0]["values"][0][1].as_u64().unwrap_or(0)
}

#[test]
fn a_full_disk_answers_507_keeps_acknowledged_points_queryable_and_recovers_when_freed() {
    let fs = FaultFs::new();
    let region = Arc::new(Region::sim(RING_BYTES + 64 * 1024));
    let log = SerialLog::create_pmem(region, RegionOffset(0), RING_BYTES, 8).expect("ring");
    let shared: Arc<dyn FileSystem> = Arc::new(fs.clone());
    let opts =
        EngineOptions { fs: shared, checkpoint_interval: None, ..EngineOptions::new(Path::new("/series")) };
    let engine =
        SeriesEngine::open(opts, WalOpener::boxed(Box::new(log), Vec::new()), &|_, _, _| {}).expect("open").0;
    engine.create_database("db").expect("create db");
    engine.checkpoint().expect("checkpoint");
    let (addr, stop, thread) = spawn_server(engine.clone(), Arc::new(NoopHooks), ServerConfig::default());

    fs.set_full(true);
    let mut acked = 0u64;
    let mut refusal = None;
    for i in 0..20_000u64 {
        let body: String = (0..10).map(|j| format!("m,h=a v={} {}\n", i, i * 10 + j)).collect();
        let r = request(addr, "POST", "/write?db=db", &[], body.as_bytes());
        match r.status {
            204 => acked += 10,
            _ => {
                refusal = Some(r);
                break;
            }
        }
    }
    let refusal = refusal.expect("the ring fills and the checkpoint cannot free it");
    assert_eq!(refusal.status, 507, "{}", refusal.text());
    let message = refusal.error();
    assert!(message.contains("insufficient storage") && message.contains("disk"), "{message}");
    assert!(acked > 0, "writes were acknowledged before the disk filled");
    assert_eq!(count(addr), acked, "every acknowledged point is queryable while the disk is full");
    // The same request again: still refused, nothing of it stored.
    let body: String = (0..10).map(|j| format!("m,h=a v=1 {}\n", 900_000_000 + j)).collect();
    let again = request(addr, "POST", "/write?db=db", &[], body.as_bytes());
    assert_eq!(again.status, 507, "still full: {}", again.text());
    assert_eq!(count(addr), acked);

    fs.set_full(false);
    let resumed = request(addr, "POST", "/write?db=db", &[], b"m,h=a v=2 1000000000\n");
    assert_eq!(resumed.status, 204, "writes resume once space is freed: {}", resumed.text());
    assert_eq!(count(addr), acked + 1);
    let _ = stop.send(());
    thread.join().expect("server thread").expect("serve");
}
