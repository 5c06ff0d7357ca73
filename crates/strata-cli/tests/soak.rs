//! Soak test of the real server (issue 15, item 7): for a while, writers
//! send line protocol, queriers run InfluxQL, idle connections sit open and
//! slow ones trickle their requests, and the server is SIGKILLed and
//! restarted now and then. Throughout, the server's resident memory and
//! open file descriptors are sampled from `/proc`; at the end every
//! acknowledged point must be present with its value.
//!
//! `STRATA_SOAK_SECS` sets the duration (the figure is 1,800 s:
//! `STRATA_SOAK_SECS=1800 cargo test -p strata --test soak -- --nocapture`);
//! without it the test runs a 20-second form. `STRATA_SOAK_SEED` sets the
//! seed. The summary line is what the closing note quotes.

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use common::{free_port, http, query_rows, start, KillOnDrop};

const WRITERS: u64 = 3;
const LINES_PER_REQUEST: u64 = 100;
/// A writer's pause between requests: a steady load, not a flood (the
/// data of a 30-minute soak stays a few GB on disk).
const WRITER_PAUSE: Duration = Duration::from_millis(5);
/// Synthetic time the queries look back over from the newest point (as a
/// dashboard's last hours).
const QUERY_WINDOW_NS: i64 = 6 * 3600 * 1_000_000_000;
const FIRST_TS: i64 = 1_600_000_000_000_000_000;
const IDLE_CONNECTIONS: usize = 40;
/// Checkpoints every 256 KiB of log, so kills also interrupt checkpoints.
const CONFIG: &str = "[storage]\ncheckpoint_log_bytes = 262144\ncheckpoint_interval_s = 5\n\
                      [server]\nheader_read_timeout_ms = 3000\n";
/// Resident memory the server may not exceed at any sample.
const RSS_CEILING_BYTES: u64 = 1 << 30;
/// Open descriptors the server may not exceed at any sample (its files,
/// the idle and slow connections, the writers' and queriers').
const FD_CEILING: u64 = 400;

/// Request `seq` of writer `w`: its points are (ts, value), one second each.
fn request(w: u64, seq: u64) -> (String, Vec<(i64, f64)>) {
    let mut body = String::with_capacity(LINES_PER_REQUEST as usize * 48);
    let mut points = Vec::with_capacity(LINES_PER_REQUEST as usize);
    for l in 0..LINES_PER_REQUEST {
        let ts = FIRST_TS + ((seq * LINES_PER_REQUEST + l) as i64) * 1_000_000_000;
        let v = (seq * 1000 + l) as f64 + 0.5;
        body += &format!("soak,w={w} v={v} {ts}\n");
        points.push((ts, v));
    }
    (body, points)
}

#[derive(Default)]
struct Counts {
    writes_acked: AtomicU64,
    writes_unknown: AtomicU64,
    queries: AtomicU64,
    idle_connections: AtomicU64,
    slow_requests: AtomicU64,
    /// The newest timestamp acknowledged, for the queries' window.
    newest_ts: AtomicU64,
}

/// One server incarnation's samples: (rss bytes, open fds).
fn sample(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kb: u64 =
        status.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some((rss_kb * 1024, fds))
}

/// Runs every kind of client until `stop`; returns the writers' threads
/// (each gives back its next sequence number) and the others'.
fn spawn_clients(
    port: u16,
    stop: &Arc<AtomicBool>,
    next_seq: &[u64],
    acked: &Arc<Mutex<BTreeSet<(u64, u64)>>>,
    counts: &Arc<Counts>,
) -> (Vec<std::thread::JoinHandle<u64>>, Vec<std::thread::JoinHandle<()>>) {
    let writers = (0..WRITERS)
        .map(|w| {
            let (stop, acked, counts, mut seq) =
                (stop.clone(), acked.clone(), counts.clone(), next_seq[w as usize]);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let (body, _) = request(w, seq);
                    match http(port, "POST", "/write?db=strata&precision=ns", body.as_bytes()) {
                        Ok((204, _)) => {
                            acked.lock().unwrap().insert((w, seq));
                            counts.writes_acked.fetch_add(1, Ordering::Relaxed);
                            let last = request(w, seq).1.last().expect("a request has points").0;
                            counts.newest_ts.fetch_max(last as u64, Ordering::Relaxed);
                        }
                        Ok((status, body)) => panic!("write answered {status}: {body}"),
                        Err(_) => {
                            counts.writes_unknown.fetch_add(1, Ordering::Relaxed);
                            return seq + 1;
                        }
                    }
                    seq += 1;
                    std::thread::sleep(WRITER_PAUSE);
                }
                seq
            })
        })
        .collect();
    let mut others = Vec::new();
    for q in 0..2u64 {
        let (stop, counts) = (stop.clone(), counts.clone());
        others.push(std::thread::spawn(move || {
            let mut i = q as usize;
            while !stop.load(Ordering::Relaxed) {
                let to = (counts.newest_ts.load(Ordering::Relaxed) as i64).max(FIRST_TS) + 1;
                let range = format!("time >= {} AND time < {to}", to - QUERY_WINDOW_NS);
                let query = match i % 4 {
                    0 => format!("SELECT count(v) FROM soak WHERE {range}"),
                    1 => format!("SELECT mean(v) FROM soak WHERE {range} GROUP BY time(10m), w"),
                    2 => format!("SELECT last(v) FROM soak WHERE {range} GROUP BY w"),
                    _ => "SHOW SERIES".to_string(),
                };
                let path = format!("/query?db=strata&q={}", encode(&query));
                match http(port, "GET", &path, b"") {
                    Ok((200, _)) => {
                        counts.queries.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok((status, body)) => panic!("query answered {status}: {body}"),
                    Err(_) => return,
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
        }));
    }
    // Idle connections: opened, left alone, replaced once the server closes them.
    let (stop_idle, counts_idle) = (stop.clone(), counts.clone());
    others.push(std::thread::spawn(move || {
        let mut idle: Vec<TcpStream> = Vec::new();
        while !stop_idle.load(Ordering::Relaxed) {
            // Those the server closed (read gives end of file) are replaced.
            idle.retain(|s| {
                s.set_nonblocking(true).ok();
                let mut b = [0u8; 1];
                matches!((&*s).read(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            });
            while idle.len() < IDLE_CONNECTIONS {
                match TcpStream::connect(("127.0.0.1", port)) {
                    Ok(s) => {
                        idle.push(s);
                        counts_idle.idle_connections.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => break,
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }));
    // Slow connections: a /ping whose request trickles in a byte at a time.
    let (stop_slow, counts_slow) = (stop.clone(), counts.clone());
    others.push(std::thread::spawn(move || {
        while !stop_slow.load(Ordering::Relaxed) {
            let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return };
            s.set_read_timeout(Some(Duration::from_secs(10))).ok();
            let request = b"GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
            let mut sent_all = true;
            for b in request {
                if stop_slow.load(Ordering::Relaxed) || s.write_all(&[*b]).is_err() {
                    sent_all = false;
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let mut resp = Vec::new();
            if sent_all && s.read_to_end(&mut resp).is_ok() && resp.starts_with(b"HTTP/1.1 204") {
                counts_slow.slow_requests.fetch_add(1, Ordering::Relaxed);
            }
        }
    }));
    (writers, others)
}

fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Requests a verification query covers (their points are contiguous in
/// time), so no answer is large.
const VERIFY_SLICE_REQUESTS: u64 = 1000;

/// Every acknowledged point of the requests from `from_seq[w]` on of each
/// writer `w`, read back with its value, one time slice at a time.
fn verify(port: u16, acked: &BTreeSet<(u64, u64)>, from_seq: &[u64]) -> u64 {
    let mut checked = 0;
    for w in 0..WRITERS {
        let seqs: Vec<u64> =
            acked.range((w, from_seq[w as usize])..(w + 1, 0)).map(|(_, seq)| *seq).collect();
        for slice in seqs.chunk_by(|a, b| a / VERIFY_SLICE_REQUESTS == b / VERIFY_SLICE_REQUESTS) {
            let first = slice[0] / VERIFY_SLICE_REQUESTS * VERIFY_SLICE_REQUESTS;
            let ts_of = |seq: u64| request(w, seq).1[0].0;
            let range =
                format!("time >= {} AND time < {}", ts_of(first), ts_of(first + VERIFY_SLICE_REQUESTS));
            let rows = query_rows(port, "strata", &format!("SELECT v FROM soak WHERE w='{w}' AND {range}"));
            let have: std::collections::BTreeMap<i64, f64> = rows
                .iter()
                .map(|r| (r[0].as_i64().expect("epoch ns"), r[1].as_f64().expect("float")))
                .collect();
            for &seq in slice {
                for (ts, v) in request(w, seq).1 {
                    assert_eq!(have.get(&ts), Some(&v), "acknowledged writer {w} request {seq} lost at {ts}");
                    checked += 1;
                }
            }
        }
    }
    checked
}

fn duration() -> Duration {
    Duration::from_secs(std::env::var("STRATA_SOAK_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(20))
}

/// The server, killed when the guard drops (also when the test panics).
fn start_server(data: &Path, port: u16) -> KillOnDrop {
    start(data, CONFIG, "declog-ssd", port)
}

#[test]
fn mixed_load_with_kills_keeps_memory_and_descriptors_flat_and_loses_nothing() {
    let seed: u64 = std::env::var("STRATA_SOAK_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x50a4);
    let total = duration();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let counts = Arc::new(Counts::default());
    let mut next_seq = vec![0u64; WRITERS as usize];
    let mut verified_from = next_seq.clone();
    let (mut kills, mut peak_rss, mut peak_fds) = (0u64, 0u64, 0u64);
    // Per incarnation that ran long enough: (its rss early, its rss late).
    let mut rss_drift: Vec<(u64, u64)> = Vec::new();
    let started = Instant::now();
    while started.elapsed() < total {
        let port = free_port();
        let mut child = start_server(&data, port);
        // What the last incarnation acknowledged (all of it is checked at the end).
        verify(port, &acked.lock().unwrap(), &verified_from);
        verified_from.clone_from(&next_seq);
        let left = total.saturating_sub(started.elapsed());
        // A kill every 10-60 s (2-8 s in the short form), or the end.
        let life_secs =
            if total >= Duration::from_secs(300) { rng.gen_range(10..60) } else { rng.gen_range(2..8) };
        let life = Duration::from_secs(life_secs).min(left.max(Duration::from_secs(1)));
        let stop = Arc::new(AtomicBool::new(false));
        let (writers, others) = spawn_clients(port, &stop, &next_seq, &acked, &counts);
        let (born, mut samples) = (Instant::now(), Vec::new());
        while born.elapsed() < life {
            std::thread::sleep(Duration::from_millis(500));
            if let Some((rss, fds)) = sample(child.0.id()) {
                assert!(rss < RSS_CEILING_BYTES, "seed {seed}: resident memory {rss} bytes");
                assert!(fds < FD_CEILING, "seed {seed}: {fds} open descriptors");
                (peak_rss, peak_fds) = (peak_rss.max(rss), peak_fds.max(fds));
                samples.push(rss);
            }
        }
        if samples.len() >= 8 {
            let q = samples.len() / 4;
            let mean = |s: &[u64]| s.iter().sum::<u64>() / s.len() as u64;
            rss_drift.push((mean(&samples[q..2 * q]), mean(&samples[samples.len() - q..])));
        }
        child.0.kill().expect("SIGKILL");
        child.0.wait().expect("reap");
        kills += 1;
        stop.store(true, Ordering::Relaxed);
        for (w, h) in writers.into_iter().enumerate() {
            next_seq[w] = h.join().expect("writer");
        }
        for h in others {
            h.join().expect("client");
        }
    }
    let port = free_port();
    let mut child = start_server(&data, port);
    let acked = acked.lock().unwrap();
    let checked = verify(port, &acked, &[0; WRITERS as usize]);
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let expected = acked.len() as u64 * LINES_PER_REQUEST;
    // Flat: within an incarnation, memory late is not far above memory
    // early (the data grows; checkpoints move it out of DRAM).
    for (i, (early, late)) in rss_drift.iter().enumerate() {
        assert!(
            *late <= early + early / 2 + (64 << 20),
            "seed {seed}: incarnation {i}: resident memory grew from {early} to {late} bytes"
        );
    }
    let c = &counts;
    println!(
        "soak: seed {seed}, {:.0} s, {} writes acknowledged ({} points), {} unknown at a kill, {} queries, \
         {} idle connections, {} slow requests, {kills} SIGKILLs, peak RSS {:.1} MiB, peak fds {peak_fds}, \
         points lost {}",
        started.elapsed().as_secs_f64(),
        c.writes_acked.load(Ordering::Relaxed),
        expected,
        c.writes_unknown.load(Ordering::Relaxed),
        c.queries.load(Ordering::Relaxed),
        c.idle_connections.load(Ordering::Relaxed),
        c.slow_requests.load(Ordering::Relaxed),
        peak_rss as f64 / (1 << 20) as f64,
        expected - checked.min(expected),
    );
    assert_eq!(checked, expected, "seed {seed}: every acknowledged point present");
    assert!(kills >= 2 && c.queries.load(Ordering::Relaxed) > 0, "seed {seed}: the soak ran its mix");
    assert!(c.slow_requests.load(Ordering::Relaxed) > 0, "seed {seed}: a slow request was answered");
}
