//! Crash test of the real server process: concurrent writers send line
//! protocol over HTTP while the test SIGKILLs `strata serve` at a random
//! moment, restarts it on the same data directory, and checks that every
//! acknowledged request is queryable with its values and that no
//! unacknowledged request is partly visible. Checkpoints run every 32 KiB of
//! log, so kills also interrupt checkpoints. 50 kills by default (half on
//! serial-pmem, half on serial-ssd); `STRATA_KILL_ITERATIONS` sets the count
//! and `STRATA_KILL_SEED` the seed.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{Rng, SeedableRng};

mod common;
use common::{free_port, http, start};

const WRITERS: u64 = 3;
const LINES_PER_REQUEST: u64 = 4;

/// Small checkpoint thresholds, so kills also land in the middle of
/// checkpoints (sealing, block file and manifest writes, log truncation).
const CONFIG: &str = "[storage]\ncheckpoint_log_bytes = 32768\ncheckpoint_interval_s = 1\n";

/// Request `seq` of writer `w`: LINES_PER_REQUEST points at distinct times,
/// each with fields a and b derived from (w, seq, line).
fn request_lines(w: u64, seq: u64) -> (String, Vec<(i64, f64, f64)>) {
    let mut body = String::new();
    let mut points = Vec::new();
    for l in 0..LINES_PER_REQUEST {
        let ts = (seq * LINES_PER_REQUEST + l) as i64 * 1000 + 1_600_000_000_000_000_000;
        let (a, b) = ((seq * 10 + l) as f64 + 0.25, -((seq * 10 + l) as f64) - 0.5);
        body += &format!("k,w={w} a={a},b={b} {ts}\n");
        points.push((ts, a, b));
    }
    (body, points)
}

/// Every point of writer `w` on the server: ts -> (a, b).
fn query_writer(port: u16, w: u64) -> BTreeMap<i64, (Option<f64>, Option<f64>)> {
    let q = format!("SELECT a,b FROM k WHERE w='{w}'");
    let path = format!(
        "/query?db=strata&epoch=ns&q={}",
        q.replace(' ', "%20").replace('\'', "%27").replace('=', "%3D").replace(',', "%2C")
    );
    let (status, body) = http(port, "GET", &path, b"").expect("query");
    assert_eq!(status, 200, "query failed: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("bad JSON {e}: {body}"));
    let mut out = BTreeMap::new();
    if let Some(series) = v["results"][0]["series"].as_array() {
        for s in series {
            for row in s["values"].as_array().expect("values") {
                let ts = row[0].as_i64().expect("epoch=ns time");
                out.insert(ts, (row[1].as_f64(), row[2].as_f64()));
            }
        }
    }
    out
}

#[derive(Default)]
struct Ledger {
    /// (writer, seq) acknowledged with 204.
    acked: BTreeSet<(u64, u64)>,
    /// (writer, seq) sent without a 204 (the kill came first).
    unknown: BTreeSet<(u64, u64)>,
}

fn run_iteration(
    port: u16,
    ledger: &Arc<Mutex<Ledger>>,
    next_seq: &mut [u64],
    kill_after: Duration,
    child: &mut Child,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (stop, ledger) = (stop.clone(), ledger.clone());
            let mut seq = next_seq[w as usize];
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let (body, _) = request_lines(w, seq);
                    match http(port, "POST", "/write?db=strata&precision=ns", body.as_bytes()) {
                        Ok((204, _)) => ledger.lock().unwrap().acked.insert((w, seq)),
                        Ok((status, body)) => panic!("write answered {status}: {body}"),
                        Err(_) => {
                            // The server is gone: this request's outcome is unknown.
                            ledger.lock().unwrap().unknown.insert((w, seq));
                            return seq + 1;
                        }
                    };
                    seq += 1;
                }
                seq
            })
        })
        .collect();
    std::thread::sleep(kill_after);
    child.kill().expect("SIGKILL"); // std's kill is SIGKILL on Unix
    child.wait().expect("reap");
    stop.store(true, Ordering::Relaxed);
    for (w, h) in handles.into_iter().enumerate() {
        next_seq[w] = h.join().expect("writer thread");
    }
}

fn verify(port: u16, ledger: &Ledger) -> usize {
    let mut checked = 0;
    // (kill_loop asserts the checkpoints really ran; see `block_files`.)
    for w in 0..WRITERS {
        let have = query_writer(port, w);
        let mut expected_ts = BTreeSet::new();
        for &(lw, seq) in ledger.acked.iter().filter(|(lw, _)| *lw == w) {
            for (ts, a, b) in request_lines(lw, seq).1 {
                assert_eq!(
                    have.get(&ts),
                    Some(&(Some(a), Some(b))),
                    "acknowledged W{w} request {seq} lost or wrong at {ts}"
                );
                expected_ts.insert(ts);
                checked += 1;
            }
        }
        for &(lw, seq) in ledger.unknown.iter().filter(|(lw, _)| *lw == w) {
            let points = request_lines(lw, seq).1;
            let present =
                points.iter().filter(|(ts, a, b)| have.get(ts) == Some(&(Some(*a), Some(*b)))).count();
            assert!(
                present == 0 || present == points.len(),
                "unacknowledged W{w} request {seq} is partly visible ({present} of {})",
                points.len()
            );
            if present > 0 {
                expected_ts.extend(points.iter().map(|p| p.0));
            }
        }
        let extra: Vec<_> = have.keys().filter(|t| !expected_ts.contains(t)).take(3).collect();
        assert!(extra.is_empty(), "W{w} has points no request wrote: {extra:?}");
    }
    checked
}

fn kill_loop(protocol: &str, iterations: u64, seed: u64) -> KillSummary {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut next_seq = vec![0u64; WRITERS as usize];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut acked_total = 0;
    for i in 0..iterations {
        let port = free_port();
        let mut child = start(&dir, CONFIG, protocol, port);
        if i > 0 {
            let checked = verify(port, &ledger.lock().unwrap());
            assert!(checked >= acked_total, "seed {seed}: iteration {i}");
        }
        let kill_after = Duration::from_millis(rng.gen_range(5..250));
        run_iteration(port, &ledger, &mut next_seq, kill_after, &mut child);
        acked_total = ledger.lock().unwrap().acked.len() * LINES_PER_REQUEST as usize;
    }
    let port = free_port();
    let mut child = start(&dir, CONFIG, protocol, port);
    let checked = verify(port, &ledger.lock().unwrap());
    let block_files = std::fs::read_dir(dir.join("series"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("blocks-"))
                .count()
        })
        .unwrap_or(0);
    child.kill().unwrap();
    child.wait().unwrap();
    let l = ledger.lock().unwrap();
    println!(
        "{protocol}: seed {seed}, {iterations} kills, {} acknowledged requests ({checked} points) all present, \
         {} unacknowledged never partial, {block_files} block files",
        l.acked.len(),
        l.unknown.len()
    );
    KillSummary { acked_requests: l.acked.len() as u64, points_verified: checked as u64, block_files }
}

/// What a kill loop saw (each restart already verified every acknowledged
/// point and that no unacknowledged request was partly visible).
struct KillSummary {
    acked_requests: u64,
    points_verified: u64,
    block_files: usize,
}

fn check_summary(s: &KillSummary, iterations: u64, seed: u64) {
    assert!(s.acked_requests >= iterations, "seed {seed}: too few acknowledged requests to mean anything");
    assert_eq!(
        s.points_verified,
        s.acked_requests * LINES_PER_REQUEST,
        "seed {seed}: every acknowledged point read back"
    );
    assert!(s.block_files > 0, "seed {seed}: no checkpoint ever completed, so none was interrupted either");
}

fn iterations() -> u64 {
    std::env::var("STRATA_KILL_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(50)
}

fn seed() -> u64 {
    std::env::var("STRATA_KILL_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x6b11)
}

/// `n` SIGKILLs of the server under `protocol`, checked (every acknowledged
/// point present, no request half-visible); the summary, for the caller's
/// own assertions.
fn kill_test(protocol: &str, n: u64, seed: u64) -> KillSummary {
    let summary = kill_loop(protocol, n, seed);
    assert!(summary.acked_requests >= n && summary.block_files > 0, "seed {seed}");
    check_summary(&summary, n, seed);
    summary
}

#[test]
fn sigkill_during_ingest_loses_no_acknowledged_point_serial_pmem() {
    let s = kill_test("serial-pmem", iterations().div_ceil(2), seed());
    assert_eq!(s.points_verified, s.acked_requests * LINES_PER_REQUEST, "every acknowledged point read back");
}

#[test]
fn sigkill_during_ingest_loses_no_acknowledged_point_serial_ssd() {
    let s = kill_test("serial-ssd", iterations() / 2, seed() ^ 1);
    assert_eq!(s.points_verified, s.acked_requests * LINES_PER_REQUEST, "every acknowledged point read back");
}

#[test]
fn sigkill_during_ingest_loses_no_acknowledged_point_declog_pmem() {
    let s = kill_test("declog-pmem", iterations().div_ceil(2), seed() ^ 2);
    assert_eq!(s.points_verified, s.acked_requests * LINES_PER_REQUEST, "every acknowledged point read back");
}

#[test]
fn sigkill_during_ingest_loses_no_acknowledged_point_declog_ssd() {
    let s = kill_test("declog-ssd", iterations().div_ceil(2), seed() ^ 3);
    assert_eq!(s.points_verified, s.acked_requests * LINES_PER_REQUEST, "every acknowledged point read back");
}
