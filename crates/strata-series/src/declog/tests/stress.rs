//! Seeded multi-threaded stress test of the protocol's correctness property
//! (declog.txt section 4.1.2): for every point, the LSNs of the committed
//! transactions that modified it strictly increase in commit order, and
//! replaying all committed transactions in ascending LSN order (ties in any
//! order) rebuilds the final value of every point.
//!
//! Four threads run small random transactions over a few hot points and
//! retry on conflicts. A point's value is the id of the last transaction that
//! wrote it (and whether that write was a delete). Each committed
//! transaction applies its writes and appends its LSN to each point's record
//! while it still holds the points' locks, i.e. in commit order per point.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use parking_lot::Mutex;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::super::lsn::{acquire, DataLsn, TxnAccess};
use super::point;
use crate::declog::control_table::{ControlTable, PointRef};

const SEEDS: [u64; 3] = [0xDEC1_0641, 0x5EED_0002, 0x5EED_0003];
const THREADS: u64 = 4;
/// Max LSN <= committed update transactions (< THREADS * TXNS_PER_THREAD),
/// which stays below UTS_MAX, so no checkpoint is needed.
const TXNS_PER_THREAD: u64 = 200;
const HOT_SERIES: u64 = 2;
const HOT_TIMESTAMPS: i64 = 3;

/// (id of the last writer, whether it deleted the point).
type Value = (u64, bool);

#[derive(Default)]
struct PointRecord {
    /// (transaction id, LSN) of every committed writer, in commit order.
    writers: Vec<(u64, DataLsn)>,
    value: Option<Value>,
}

struct Committed {
    txn_id: u64,
    lsn: DataLsn,
    writes: Vec<(PointRef, bool)>,
}

struct Shared {
    table: ControlTable,
    hot: Vec<PointRef>,
    records: HashMap<PointRef, Mutex<PointRecord>>,
    inserted: Mutex<HashMap<PointRef, Value>>,
    committed: Mutex<Vec<Committed>>,
    conflicts: AtomicU64,
}

/// One random transaction: its access set and its writes (point, delete).
fn random_txn(
    rng: &mut ChaCha8Rng,
    hot: &[PointRef],
    thread: u64,
    txn: u64,
) -> (TxnAccess, Vec<(PointRef, bool)>) {
    let kind = rng.gen_range(0..10);
    if kind == 0 {
        // Insert-only: brand-new points no other transaction touches.
        let count = rng.gen_range(1..=3);
        let fresh: Vec<_> = (0..count).map(|k| point(100 + thread, (txn * 4 + k) as i64)).collect();
        return (
            TxnAccess { inserts: fresh.len(), ..TxnAccess::default() },
            fresh.iter().map(|&p| (p, false)).collect(),
        );
    }
    let mut shuffled = hot.to_vec();
    shuffled.shuffle(rng);
    if kind == 1 {
        let reads = shuffled[..rng.gen_range(1..=2)].to_vec();
        return (TxnAccess { reads, ..TxnAccess::default() }, Vec::new());
    }
    let modified = rng.gen_range(1..=3);
    let read_count = rng.gen_range(0..=2);
    let mut access = TxnAccess::default();
    let mut writes = Vec::new();
    for &p in &shuffled[..modified] {
        let delete = rng.gen_bool(0.25);
        if delete {
            access.deletes.push(p);
        } else {
            access.updates.push(p);
        }
        writes.push((p, delete));
    }
    access.reads = shuffled[modified..modified + read_count].to_vec();
    if rng.gen_bool(0.2) {
        access.inserts = 1; // counted but not modelled: inserts do not take part
    }
    (access, writes)
}

fn worker(shared: &Shared, seed: u64, thread: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (thread + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    for txn in 0..TXNS_PER_THREAD {
        let txn_id = (thread << 32) | txn;
        let (access, writes) = random_txn(&mut rng, &shared.hot, thread, txn);
        loop {
            match acquire(&shared.table, &access) {
                Ok(guard) => {
                    let lsn = guard.lsn();
                    if access.is_insert_only() {
                        assert_eq!(lsn, DataLsn::ZERO, "seed {seed:#x}: insert-only LSN");
                        let mut inserted = shared.inserted.lock();
                        for &(p, _) in &writes {
                            inserted.insert(p, (txn_id, false));
                        }
                    } else {
                        // Apply under the locks: this is the commit order per point.
                        for &(p, delete) in &writes {
                            let mut record = shared.records[&p].lock();
                            record.writers.push((txn_id, lsn));
                            record.value = Some((txn_id, delete));
                        }
                    }
                    shared.committed.lock().push(Committed { txn_id, lsn, writes });
                    guard.commit();
                    break;
                }
                Err(err) if err.is_conflict() => {
                    shared.conflicts.fetch_add(1, Ordering::Relaxed);
                    thread::yield_now();
                }
                Err(err) => panic!("seed {seed:#x}: thread {thread} txn {txn}: unexpected error: {err}"),
            }
        }
    }
}

/// Runs one seeded stress round (asserting as it goes); returns how many
/// transactions committed.
fn run(seed: u64) -> u64 {
    let hot: Vec<PointRef> =
        (0..HOT_SERIES).flat_map(|s| (0..HOT_TIMESTAMPS).map(move |t| point(s + 1, t * 10))).collect();
    let shared = Shared {
        table: ControlTable::with_shard_count(2),
        records: hot.iter().map(|&p| (p, Mutex::new(PointRecord::default()))).collect(),
        hot,
        inserted: Mutex::new(HashMap::new()),
        committed: Mutex::new(Vec::new()),
        conflicts: AtomicU64::new(0),
    };
    thread::scope(|scope| {
        for thread in 0..THREADS {
            let shared = &shared;
            scope.spawn(move || worker(shared, seed, thread));
        }
    });
    println!("seed {seed:#x}: {} conflicts retried", shared.conflicts.load(Ordering::Relaxed));

    // Strictly increasing LSNs per point in commit order; the control word
    // ends with the last writer's LSN and tombstone, unlocked.
    let mut live: HashMap<PointRef, Value> = shared.inserted.lock().clone();
    for (&p, record) in &shared.records {
        let record = record.lock();
        for pair in record.writers.windows(2) {
            assert!(
                pair[0].1 < pair[1].1,
                "seed {seed:#x}: point {p}: txn {:#x} (lsn {}) committed before txn {:#x} (lsn {})",
                pair[0].0,
                pair[0].1,
                pair[1].0,
                pair[1].1
            );
        }
        let control = shared.table.control(p);
        assert!(!control.is_locked(), "seed {seed:#x}: point {p} left locked");
        let last_lsn = record.writers.last().map_or(0, |&(_, lsn)| lsn.get());
        assert_eq!(control.uts(), last_lsn, "seed {seed:#x}: point {p} uts");
        let last_deleted = record.value.is_some_and(|(_, deleted)| deleted);
        assert_eq!(control.is_tombstone(), last_deleted, "seed {seed:#x}: point {p} tombstone");
        if let Some(value) = record.value {
            live.insert(p, value);
        }
    }
    assert_eq!(shared.table.in_flight_transactions(), 0, "seed {seed:#x}");
    assert!(
        shared.table.touched_points() <= shared.hot.len(),
        "seed {seed:#x}: inserts and reads must not create control entries"
    );

    // Replay in ascending LSN order, ties in a seeded random order.
    let mut log = std::mem::take(&mut *shared.committed.lock());
    assert_eq!(log.len() as u64, THREADS * TXNS_PER_THREAD, "seed {seed:#x}: every transaction committed");
    log.shuffle(&mut ChaCha8Rng::seed_from_u64(seed.rotate_left(17)));
    log.sort_by_key(|entry| entry.lsn);
    let mut replayed: HashMap<PointRef, Value> = HashMap::new();
    for entry in &log {
        for &(p, delete) in &entry.writes {
            replayed.insert(p, (entry.txn_id, delete));
        }
    }
    assert_eq!(replayed, live, "seed {seed:#x}: replay in LSN order differs from the live state");
    log.len() as u64
}

#[test]
fn concurrent_transactions_get_commit_ordered_lsns_and_replay_by_lsn() {
    for seed in SEEDS {
        let committed = run(seed);
        assert_eq!(committed, THREADS * TXNS_PER_THREAD, "seed {seed:#x}: every transaction committed");
    }
}
