//! Crash test of the real server process: concurrent writers send line
//! protocol over HTTP while the test SIGKILLs `strata serve` at a random
//! moment, restarts it on the same data directory, and checks that every
//! acknowledged request is queryable with its values and that no
//! unacknowledged request is partly visible. Checkpoints run every 32 KiB of
//! log, so kills also interrupt checkpoints. 50 kills by default (half on
//! serial-pmem, half on serial-ssd); `STRATA_KILL_ITERATIONS` sets the count
//! and `STRATA_KILL_SEED` the seed.
//!
//! The big-write variant (issue 15, item 1) makes every third request of
//! one writer 70,000 lines (140,000 values, several MB: more than one DecLog
//! transaction's entries in one piece), which must be all there or not at
//! all, and sends now and then a request whose only line is refused (a
//! field type conflict), which must leave no series behind.

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
/// Lines of a big request of the big-write variant.
const BIG_LINES: u64 = 70_000;

/// The requests writers send.
#[derive(Clone, Copy)]
struct Shape {
    /// Every `big_every`-th request of writer 0 is `BIG_LINES` lines (0: never).
    big_every: u64,
    /// Writer 1 sends a refused one-line request before every
    /// `refused_every`-th request (0: never).
    refused_every: u64,
    /// Range of the time from a restart to the next kill, ms.
    kill_after_ms: (u64, u64),
}

const SMALL: Shape = Shape { big_every: 0, refused_every: 0, kill_after_ms: (5, 250) };
const BIG: Shape = Shape { big_every: 3, refused_every: 4, kill_after_ms: (300, 3000) };

impl Shape {
    fn lines(&self, w: u64, seq: u64) -> u64 {
        if w == 0 && self.big_every > 0 && seq % self.big_every == self.big_every - 1 {
            BIG_LINES
        } else {
            LINES_PER_REQUEST
        }
    }
}

/// Small checkpoint thresholds, so kills also land in the middle of
/// checkpoints (sealing, block file and manifest writes, log truncation).
const CONFIG: &str = "[storage]\ncheckpoint_log_bytes = 32768\ncheckpoint_interval_s = 1\n";

/// Request `seq` of writer `w`: `shape.lines` points at distinct times
/// (each request its own second), each with fields a and b derived from
/// (w, seq, line).
fn request_lines(shape: Shape, w: u64, seq: u64) -> (String, Vec<(i64, f64, f64)>) {
    let mut body = String::new();
    let mut points = Vec::new();
    for l in 0..shape.lines(w, seq) {
        let ts = (seq * 1_000_000 + l) as i64 * 1000 + 1_600_000_000_000_000_000;
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

/// The refused request before request `seq` of writer `w`: a string where
/// field a is a float, in a series of its own.
fn refused_line(w: u64, seq: u64) -> String {
    format!("k,w=refused{w}x{seq} a=\"text\" 1600000000000000000\n")
}

fn run_iteration(
    shape: Shape,
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
                    if w == 1 && shape.refused_every > 0 && seq.is_multiple_of(shape.refused_every) {
                        let line = refused_line(w, seq);
                        match http(port, "POST", "/write?db=strata&precision=ns", line.as_bytes()) {
                            Ok((400, _)) => {}
                            Ok((status, body)) => panic!("a refused line answered {status}: {body}"),
                            Err(_) => return seq + 1,
                        }
                    }
                    let (body, _) = request_lines(shape, w, seq);
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

/// No series of a refused line exists.
fn verify_no_refused_series(port: u16) {
    let (status, body) =
        http(port, "GET", "/query?db=strata&q=SHOW%20SERIES%20FROM%20k", b"").expect("query");
    assert_eq!(status, 200, "SHOW SERIES failed: {body}");
    assert!(!body.contains("refused"), "a refused line left a series behind: {body}");
}

fn verify(shape: Shape, port: u16, ledger: &Ledger) -> usize {
    verify_no_refused_series(port);
    let mut checked = 0;
    // (kill_loop asserts the checkpoints really ran; see `block_files`.)
    for w in 0..WRITERS {
        let have = query_writer(port, w);
        let mut expected_ts = BTreeSet::new();
        for &(lw, seq) in ledger.acked.iter().filter(|(lw, _)| *lw == w) {
            for (ts, a, b) in request_lines(shape, lw, seq).1 {
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
            let points = request_lines(shape, lw, seq).1;
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

fn kill_loop(shape: Shape, protocol: &str, iterations: u64, seed: u64) -> KillSummary {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut next_seq = vec![0u64; WRITERS as usize];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut acked_total = 0;
    for i in 0..iterations {
        let port = free_port();
        let mut child = start(&dir, CONFIG, protocol, port);
        if i == 0 && shape.refused_every > 0 {
            // Field a is a float from now on, so a string there is refused.
            let first = b"k,w=setup a=0,b=0 1600000000000000000\n";
            let (status, body) = http(port, "POST", "/write?db=strata&precision=ns", first).expect("setup");
            assert_eq!(status, 204, "setup write: {body}");
        }
        if i > 0 {
            let checked = verify(shape, port, &ledger.lock().unwrap());
            assert!(checked >= acked_total, "seed {seed}: iteration {i}");
        }
        let kill_after = Duration::from_millis(rng.gen_range(shape.kill_after_ms.0..shape.kill_after_ms.1));
        run_iteration(shape, port, &ledger, &mut next_seq, kill_after, &mut child);
        acked_total = acked_points(shape, &ledger.lock().unwrap()) as usize;
    }
    let port = free_port();
    let mut child = start(&dir, CONFIG, protocol, port);
    let checked = verify(shape, port, &ledger.lock().unwrap());
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
    let big_acked = l.acked.iter().filter(|(w, seq)| shape.lines(*w, *seq) == BIG_LINES).count() as u64;
    KillSummary {
        acked_requests: l.acked.len() as u64,
        acked_points: acked_points(shape, &l),
        big_acked,
        points_verified: checked as u64,
        block_files,
    }
}

/// Points of the acknowledged requests.
fn acked_points(shape: Shape, ledger: &Ledger) -> u64 {
    ledger.acked.iter().map(|(w, seq)| shape.lines(*w, *seq)).sum()
}

/// What a kill loop saw (each restart already verified every acknowledged
/// point and that no unacknowledged request was partly visible).
struct KillSummary {
    acked_requests: u64,
    acked_points: u64,
    /// Acknowledged big requests (big-write variant).
    big_acked: u64,
    points_verified: u64,
    block_files: usize,
}

fn check_summary(s: &KillSummary, iterations: u64, seed: u64) {
    assert!(s.acked_requests >= iterations, "seed {seed}: too few acknowledged requests to mean anything");
    assert_eq!(s.points_verified, s.acked_points, "seed {seed}: every acknowledged point read back");
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
    let summary = kill_loop(SMALL, protocol, n, seed);
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

/// The big-write variant: `n` kills (at least 4) under `protocol`; the
/// summary, each restart already checked (big requests whole or absent,
/// refused lines without series).
fn big_write_kill_test(protocol: &str, n: u64, seed: u64) -> KillSummary {
    let n = n.max(4);
    let s = kill_loop(BIG, protocol, n, seed);
    check_summary(&s, n, seed);
    s
}

#[test]
fn sigkill_during_big_writes_keeps_them_whole_declog_pmem() {
    let s = big_write_kill_test("declog-pmem", iterations() / 10, seed() ^ 4);
    assert!(s.big_acked > 0, "a 70,000-line request was acknowledged and read back whole");
    assert_eq!(s.points_verified, s.acked_points, "every acknowledged point read back");
}

#[test]
fn sigkill_during_big_writes_keeps_them_whole_declog_ssd() {
    let s = big_write_kill_test("declog-ssd", iterations() / 10, seed() ^ 5);
    assert!(s.big_acked > 0, "a 70,000-line request was acknowledged and read back whole");
    assert_eq!(s.points_verified, s.acked_points, "every acknowledged point read back");
}

#[test]
fn sigkill_during_big_writes_keeps_them_whole_serial_ssd() {
    let s = big_write_kill_test("serial-ssd", iterations() / 10, seed() ^ 6);
    assert!(s.big_acked > 0, "a 70,000-line request was acknowledged and read back whole");
    assert_eq!(s.points_verified, s.acked_points, "every acknowledged point read back");
}
