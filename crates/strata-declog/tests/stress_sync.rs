//! Stress tests of the log queues, thread snapshots, flushing pipeline and
//! tickets (declog.txt sections 4.2-4.3) on real OS threads: DecLog with its
//! logging threads ([`FlushMode::Threads`]) over the PMem simulator, several
//! worker threads hammering `commit`/`submit` with inserts (LSN 0) and
//! updates (LSN > 0) in both streams for a bounded count and time, and a
//! monitor thread taking persistent images (what a crash at that instant
//! leaves) while they run.
//!
//! Checked in every monitor image: each transaction acknowledged before the
//! image is complete in it; every complete transaction has exactly the
//! entries submitted; the dependency order: an update X with 0 < LSN(X) <
//! LSN(Y) whose submit returned before Y's began is complete wherever Y is.
//! At the end: every ticket resolved durable, N/S consistent, and reopening
//! the log recovers every transaction completely.
//!
//! Workers' choices are seeded (ChaCha8, seed in every failure message); the
//! interleaving is the OS's, so a run explores a different one each time.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_declog::compress::{self, point_payload};
use strata_declog::{
    parse, DecLog, DeclogConfig, EntryIn, FlushMode, Recovered, Ticket, TicketStatus, TxnId,
};
use strata_pmem::{Region, RegionOffset};

const BASE: RegionOffset = RegionOffset(0);
/// No ticket resolving for this long while workers wait is a deadlock.
const WATCHDOG: Duration = Duration::from_secs(20);

/// One stress run's shape.
#[derive(Clone, Debug)]
struct Shape {
    seed: u64,
    workers: usize,
    txns_per_worker: u64,
    /// Most tickets a worker keeps unresolved before waiting for the oldest.
    max_in_flight: usize,
    streams: usize,
    queue_len: usize,
    stream_bytes: u64,
    /// Log compression: payloads are point payloads of 32 series.
    compression: bool,
    /// Workers stop early after this long (the count usually ends them first).
    max_run: Duration,
}

/// What happened to one transaction.
#[derive(Clone, Debug)]
struct Record {
    lsn: u32,
    entries: u32,
    /// Logical clock before `submit` began and after it returned.
    start: u64,
    end: u64,
    /// Logical clock right after its ticket said durable.
    acked: Option<u64>,
}

/// The entries of transaction `txn` are a function of it (and the seed), so
/// a parsed entry can be checked without a lookup: (key hash, payload).
/// With compression the payload is a point payload of one of 32 series, its
/// key hash the series key's ([`compress::key_hash`], the engine contract).
fn entry_shape(seed: u64, compression: bool, txn: u64, op: u32) -> (u64, Vec<u8>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ txn.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ op as u64);
    let len = rng.gen_range(1..=48);
    let bytes: Vec<u8> = (0..len).map(|i| (txn as usize * 31 + op as usize * 7 + i) as u8).collect();
    if !compression {
        return (rng.gen_range(0..64u64), bytes);
    }
    let series = format!("cpu,host=h{} usage", rng.gen_range(0..32));
    let timestamp = (txn * 4 + op as u64) as i64 * 1_000;
    let value = rng.gen_range(0..1_000) as f64 / 8.0;
    let payload = point_payload::encode(series.as_bytes(), timestamp, value.to_bits(), &bytes[..len % 7]);
    (compress::key_hash(series.as_bytes()), payload)
}

struct Stress {
    shape: Shape,
    log: DecLog,
    region: Arc<Region>,
    clock: AtomicU64,
    records: Mutex<BTreeMap<TxnId, Record>>,
    /// Tickets that said durable so far (the watchdog's progress measure).
    acked: AtomicU64,
    stop: AtomicBool,
}

/// One image taken by the monitor: the clock before it and its complete transactions.
struct Observed {
    clock: u64,
    complete: BTreeSet<TxnId>,
}

impl Stress {
    fn new(shape: Shape) -> Stress {
        let cfg = DeclogConfig {
            threads: shape.streams,
            queues_per_thread: 2,
            queue_len: shape.queue_len,
            flush_mode: FlushMode::Threads,
            compression: shape.compression,
            key_slots: 64,
            ..Default::default()
        };
        let bytes = DecLog::footprint_bytes_for(&cfg, shape.stream_bytes);
        let region = Arc::new(Region::sim(bytes));
        let log = DecLog::format(region.clone(), BASE, bytes, cfg).expect("format");
        Stress {
            shape,
            log,
            region,
            clock: AtomicU64::new(0),
            records: Mutex::new(BTreeMap::new()),
            acked: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        }
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }

    fn wait(&self, ticket: Ticket) {
        let seed = self.shape.seed;
        ticket.wait().unwrap_or_else(|e| panic!("seed {seed:#x}: {} failed: {e}", ticket.txn()));
        assert_eq!(ticket.status(), TicketStatus::Durable);
        self.acked.fetch_add(1, Ordering::SeqCst);
        let acked = self.tick();
        self.records.lock().get_mut(&ticket.txn()).expect("registered").acked = Some(acked);
    }

    fn worker(&self, w: usize, deadline: Instant) {
        let seed = self.shape.seed;
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (w as u64 + 1).wrapping_mul(0xA5A5_5A5A_1234_5678));
        let mut in_flight = std::collections::VecDeque::new();
        for i in 0..self.shape.txns_per_worker {
            if Instant::now() > deadline {
                break;
            }
            let txn = i * self.shape.workers as u64 + w as u64 + 1;
            let lsn = if rng.gen_bool(0.5) { 0 } else { rng.gen_range(1..=6) };
            let count = rng.gen_range(1..=3u32);
            let shapes: Vec<(u64, Vec<u8>)> =
                (0..count).map(|op| entry_shape(seed, self.shape.compression, txn, op)).collect();
            let entries: Vec<EntryIn<'_>> = shapes
                .iter()
                .map(|(key_hash, payload)| EntryIn { key_hash: *key_hash, lsn, compressed: false, payload })
                .collect();
            let start = self.tick();
            let ticket = self
                .log
                .submit(TxnId(txn), &entries)
                .unwrap_or_else(|e| panic!("seed {seed:#x}: submit of txn {txn} failed: {e}"));
            {
                let mut records = self.records.lock();
                let end = self.tick();
                records.insert(TxnId(txn), Record { lsn, entries: count, start, end, acked: None });
            }
            in_flight.push_back(ticket);
            let limit = rng.gen_range(0..=self.shape.max_in_flight);
            while in_flight.len() > limit {
                self.wait(in_flight.pop_front().expect("non-empty"));
            }
        }
        for ticket in in_flight {
            self.wait(ticket);
        }
    }

    /// Takes persistent images until told to stop; aborts the process (a
    /// hang would never end the test) when no ticket resolves for
    /// [`WATCHDOG`] while workers still wait.
    fn monitor(&self) -> Vec<Observed> {
        let mut seen = Vec::new();
        let mut last_progress = (self.acked.load(Ordering::SeqCst), Instant::now());
        while !self.stop.load(Ordering::SeqCst) {
            let acked = self.acked.load(Ordering::SeqCst);
            if acked != last_progress.0 {
                last_progress = (acked, Instant::now());
            } else if last_progress.1.elapsed() > WATCHDOG {
                eprintln!(
                    "seed {:#x}: no ticket resolved for {WATCHDOG:?} ({acked} acknowledged): the logging \
                     threads are deadlocked; N, S = {:?}; stats {:?}",
                    self.shape.seed,
                    self.log.snapshot_arrays(),
                    self.log.stats()
                );
                std::process::abort();
            }
            let clock = self.tick();
            let image = self.region.as_sim().expect("sim region").persistent_image();
            let rec = parse(&Region::sim_from_image(image), BASE).unwrap_or_else(|e| {
                panic!("seed {:#x}: image at clock {clock}: parse: {e}", self.shape.seed)
            });
            self.check_contents(&rec, &format!("image at clock {clock}"));
            seen.push(Observed { clock, complete: rec.txns().keys().copied().collect() });
            std::thread::sleep(Duration::from_millis(2));
        }
        seen
    }

    /// Every complete transaction holds exactly the entries submitted.
    fn check_contents(&self, rec: &Recovered, at: &str) {
        let seed = self.shape.seed;
        for (txn, entries) in rec.txns() {
            for (op, e) in entries.iter().enumerate() {
                let (key_hash, payload) = entry_shape(seed, self.shape.compression, txn.0, op as u32);
                assert_eq!(e.op_index, op as u32, "seed {seed:#x}: {at}: {txn} entry order");
                assert!(
                    e.key_hash == key_hash && e.payload == payload,
                    "seed {seed:#x}: {at}: {txn} entry {op} differs from what was submitted"
                );
                assert_eq!(e.stream, (key_hash % self.shape.streams as u64) as usize);
            }
        }
    }

    /// The checks of the module comment on one monitor image.
    fn check_observed(&self, records: &BTreeMap<TxnId, Record>, o: &Observed) {
        let seed = self.shape.seed;
        let at = format!("image at clock {}", o.clock);
        for (txn, r) in records {
            if r.acked.is_some_and(|a| a < o.clock) {
                assert!(
                    o.complete.contains(txn),
                    "seed {seed:#x}: {at}: {txn} acknowledged at {:?} is missing",
                    r.acked
                );
            }
        }
        assert!(
            o.complete.iter().all(|t| records.contains_key(t)),
            "seed {seed:#x}: {at}: a transaction nobody submitted"
        );
        // Dependency order: for each LSN, the earliest `end` of an update
        // transaction of that LSN missing from the image; a complete update Y
        // must not start after any such `end` of a smaller LSN.
        let max_lsn = records.values().map(|r| r.lsn).max().unwrap_or(0) as usize;
        let mut earliest_missing_end = vec![u64::MAX; max_lsn + 2];
        for (txn, r) in records {
            if r.lsn > 0 && !o.complete.contains(txn) {
                let slot = &mut earliest_missing_end[r.lsn as usize];
                *slot = (*slot).min(r.end);
            }
        }
        // below[l] = the earliest missing end among LSNs 1..l (exclusive of l).
        let mut below = vec![u64::MAX; max_lsn + 2];
        for l in 2..=max_lsn + 1 {
            below[l] = below[l - 1].min(earliest_missing_end[l - 1]);
        }
        for txn in &o.complete {
            let y = &records[txn];
            if y.lsn > 0 {
                let missing = below[y.lsn as usize];
                assert!(
                    missing >= y.start,
                    "seed {seed:#x}: {at}: {txn} (LSN {}, submitted from clock {}) is complete, but an update of \
                     smaller LSN whose submit returned at clock {missing} is not",
                    y.lsn,
                    y.start
                );
            }
        }
    }
}

/// Runs one stress shape and every check; returns (transactions, images checked).
fn stress(shape: Shape) -> (usize, usize) {
    let seed = shape.seed;
    let s = Arc::new(Stress::new(shape.clone()));
    let deadline = Instant::now() + shape.max_run;
    let monitor = {
        let s = s.clone();
        std::thread::spawn(move || s.monitor())
    };
    std::thread::scope(|scope| {
        for w in 0..shape.workers {
            let s = &s;
            scope.spawn(move || s.worker(w, deadline));
        }
    });
    s.stop.store(true, Ordering::SeqCst);
    let observed = monitor.join().expect("monitor");
    let records = s.records.lock().clone();
    assert!(records.values().all(|r| r.acked.is_some()), "seed {seed:#x}: a ticket never resolved");
    for o in &observed {
        s.check_observed(&records, o);
    }

    let (n, s_arr) = s.log.snapshot_arrays();
    let mut updates_per_stream = vec![0u32; shape.streams];
    for (txn, r) in &records {
        if r.lsn > 0 {
            for op in 0..r.entries {
                let (key_hash, _) = entry_shape(seed, shape.compression, txn.0, op);
                updates_per_stream[(key_hash % shape.streams as u64) as usize] += 1;
            }
        }
    }
    for stream in 0..shape.streams {
        assert_eq!(n[stream].iter().sum::<u32>(), updates_per_stream[stream], "seed {seed:#x}: N {n:?}");
        assert!(s_arr[stream].iter().all(|&v| v == 0), "seed {seed:#x}: S {s_arr:?}");
    }
    let stats = s.log.stats();
    assert_eq!(stats.txns_submitted, records.len() as u64);

    // Reopen from what a crash now would leave: everything, completely.
    let image = s.region.as_sim().expect("sim region").persistent_image();
    let (reopened, rec) =
        DecLog::open_with_mode(Arc::new(Region::sim_from_image(image)), BASE, FlushMode::Inline)
            .unwrap_or_else(|e| panic!("seed {seed:#x}: reopen: {e}"));
    drop(reopened);
    assert!(rec.discarded_txns.is_empty(), "seed {seed:#x}: discarded {:?}", rec.discarded_txns);
    assert_eq!(
        rec.txns().keys().copied().collect::<BTreeSet<_>>(),
        records.keys().copied().collect::<BTreeSet<_>>(),
        "seed {seed:#x}: recovered transactions"
    );
    for (txn, entries) in rec.txns() {
        let r = &records[&txn];
        assert!(
            entries.len() as u32 == r.entries && entries.iter().all(|e| e.lsn == r.lsn),
            "seed {seed:#x}: {txn}"
        );
    }
    s.check_contents(&rec, "reopened log");
    eprintln!(
        "seed {seed:#x}: {} transactions, {} images checked, {} snapshot waits, {} update tails, {} batches",
        records.len(),
        observed.len(),
        stats.snapshot_waits,
        stats.update_tails,
        stats.batches
    );
    (records.len(), observed.len())
}

fn base_shape(seed: u64) -> Shape {
    Shape {
        seed,
        workers: 4,
        txns_per_worker: 3_000,
        max_in_flight: 8,
        streams: 2,
        queue_len: 300,
        stream_bytes: 4 << 20,
        compression: false,
        max_run: Duration::from_secs(3),
    }
}

/// The paper's shape (2 queues of 300 per logging thread), two streams.
#[test]
fn stress_two_streams_default_queues() {
    let (txns, images) = stress(base_shape(0xD3C1_0001));
    assert!(txns >= 100 && images >= 1, "ran {txns} transactions, {images} images");
}

/// Queues of two entries: producers keep meeting full queues and wait on
/// the space condition variable while logging threads release queues.
#[test]
fn stress_short_queues_backpressure() {
    let (txns, images) = stress(Shape { queue_len: 2, ..base_shape(0xD3C1_0002) });
    assert!(txns >= 100 && images >= 1, "ran {txns} transactions, {images} images");
}

/// Four streams, so a transaction's entries and an update's dependencies
/// spread over more logging threads.
#[test]
fn stress_four_streams() {
    let (txns, images) = stress(Shape { streams: 4, stream_bytes: 2 << 20, ..base_shape(0xD3C1_0003) });
    assert!(txns >= 100 && images >= 1, "ran {txns} transactions, {images} images");
}

/// With log compression: entries are compressed against their stream's key
/// table under the queue lock while logging threads flush.
#[test]
fn stress_compressed() {
    let (txns, images) = stress(Shape { compression: true, ..base_shape(0xD3C1_0004) });
    assert!(txns >= 100 && images >= 1, "ran {txns} transactions, {images} images");
}
