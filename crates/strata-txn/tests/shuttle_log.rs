//! The log managers under shuttle's randomized and PCT schedulers: workers'
//! slots (`allocatedLSN`/`filledLSN` in one word), the rounds that publish
//! `PLV` and commit into the committed vector (run by the manager threads
//! and, on PMem, by the workers themselves), the committed-vector waits,
//! and Silo-R's epoch thread. Every lock, condition variable and atomic of
//! `log/` is shuttle's (`strata-sync`), and so are the logging threads, so
//! each iteration runs one interleaving of them.
//!
//! Also Algorithm 4's recovery pool ([`recovery_pool_scenario`]).
//!
//! Run: `cargo test -p strata-txn --features shuttle,crashtest --test shuttle_log`.
//! Without the feature this file compiles to nothing.
//!
//! Each iteration: three workers run read-modify-write transactions that
//! add one to a counter row (two of three keys, so they conflict and
//! depend on each other across the two logs), retrying conflicts, and wait
//! for each to commit. When a transaction is acknowledged, the PMem
//! regions' persistent images are taken. Checked: no deadlock (shuttle
//! reports blocked threads); every wait returns; each image, recovered,
//! holds every transaction acknowledged before it (each key's counter at
//! least its acknowledged increments) and no partial transaction (the
//! counters are consistent with whole transactions: their sum is even);
//! the final state survives a clean close exactly.

#![cfg(feature = "shuttle")]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use shuttle::rand::{thread_rng, Rng};
use shuttle::scheduler::{PctScheduler, RandomScheduler, Scheduler};
use shuttle::{Config, Runner};
use strata_pmem::Region;
use strata_txn::{
    CcKind, LogDeviceKind, LoggingKind, Procedures, RowKey, TableId, TableSchema, TxnDb, TxnDbOptions,
    TxnError, WorkerId,
};

const ITERATIONS: usize = 150;
const WORKERS: u32 = 3;
const TXNS_PER_WORKER: usize = 2;
const KEYS: u64 = 3;
const T: TableId = TableId(0);
const REGION_BYTES: u64 = 1 << 16;

fn schemas() -> Vec<TableSchema> {
    vec![TableSchema { name: "counters".into(), row_bytes: 8 }]
}

fn options(kind: LoggingKind, cc: CcKind, regions: Vec<Arc<Region>>) -> TxnDbOptions {
    let mut o = TxnDbOptions::new(kind, LogDeviceKind::Regions(regions), WORKERS as usize);
    o.cc = cc;
    o.logging.capacity_bytes = REGION_BYTES;
    o.recovery_threads = 2;
    #[cfg(feature = "crashtest")]
    {
        o.planted_bug = PLANTED.with(|p| p.get());
    }
    o
}

#[cfg(feature = "crashtest")]
thread_local! {
    /// The bug the live run plants (recovery's opens plant it too: harmless there).
    static PLANTED: std::cell::Cell<strata_txn::planted::PlantedBug> = Default::default();
}

/// The base every run starts from (unlogged, as a checkpoint would hold it).
fn load(db: &TxnDb) -> Result<(), TxnError> {
    (0..KEYS).try_for_each(|k| db.bulk_load(T, RowKey(k), &0u64.to_le_bytes()))
}

fn counter(row: &[u8]) -> u64 {
    u64::from_le_bytes(row.try_into().expect("8 bytes"))
}

/// What the workers acknowledged when an image was taken.
struct Snapshot {
    images: Vec<Vec<u8>>,
    acked_per_key: BTreeMap<u64, u64>,
}

fn images(regions: &[Arc<Region>]) -> Vec<Vec<u8>> {
    regions.iter().map(|r| r.as_sim().expect("a simulated region").persistent_image()).collect()
}

/// One transaction of `worker`: +1 on two distinct keys; retried on conflicts.
fn increment_two(db: &TxnDb, worker: WorkerId, keys: (u64, u64)) -> strata_txn::CommitTicket {
    loop {
        let mut txn = db.begin(worker);
        let attempt = (|| {
            for k in [keys.0, keys.1] {
                let v = counter(&txn.get(T, RowKey(k))?.expect("a loaded key"));
                txn.put(T, RowKey(k), &(v + 1).to_le_bytes())?;
            }
            Ok::<_, TxnError>(())
        })();
        match attempt.and_then(|()| txn.commit()) {
            Ok(ticket) => return ticket,
            Err(TxnError::Conflict { .. }) => shuttle::thread::yield_now(),
            Err(e) => panic!("worker {worker:?}: {e}"),
        }
    }
}

/// Runs one iteration; returns how many recovered images it checked.
fn scenario(kind: LoggingKind, cc: CcKind) -> usize {
    let logs = kind.logs();
    let regions: Vec<Arc<Region>> = (0..logs).map(|_| Arc::new(Region::sim(REGION_BYTES))).collect();
    let o = options(kind, cc, regions.clone());
    let (db, _) = TxnDb::open_over(&o, schemas(), Procedures::new(), load).expect("open");
    let db = Arc::new(db);
    let acked: Arc<Mutex<BTreeMap<u64, u64>>> = Arc::default();
    let snapshots: Arc<Mutex<Vec<Snapshot>>> = Arc::default();
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (db, acked, snapshots, regions) =
                (db.clone(), acked.clone(), snapshots.clone(), regions.clone());
            shuttle::thread::spawn(move || {
                for _ in 0..TXNS_PER_WORKER {
                    let first = thread_rng().gen_range(0..KEYS);
                    let keys = (first, (first + 1 + thread_rng().gen_range(0..KEYS - 1)) % KEYS);
                    let ticket = increment_two(&db, WorkerId(w), keys);
                    db.wait_committed(&ticket).expect("the wait returns committed");
                    assert!(db.is_committed(&ticket), "acknowledged, yet not committed: {ticket:?}");
                    let acked_per_key = {
                        let mut a = acked.lock().unwrap();
                        *a.entry(keys.0).or_default() += 1;
                        *a.entry(keys.1).or_default() += 1;
                        a.clone()
                    };
                    snapshots.lock().unwrap().push(Snapshot { images: images(&regions), acked_per_key });
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker panicked");
    }
    let live = db.rows(T);
    let db = Arc::into_inner(db).expect("the workers are done");
    drop(db);
    let total: u64 = live.values().map(|r| counter(r)).sum();
    assert_eq!(total, 2 * u64::from(WORKERS) * TXNS_PER_WORKER as u64, "every transaction added 2");
    let reopen = |images: Vec<Vec<u8>>| {
        let regions = images.into_iter().map(|i| Arc::new(Region::sim_from_image(i))).collect();
        // Recovery replays over the same unlogged base.
        TxnDb::open_over(&options(kind, cc, regions), schemas(), Procedures::new(), load).expect("recovery").0
    };
    let snapshots = std::mem::take(&mut *snapshots.lock().unwrap());
    let checked = snapshots.len();
    for (n, s) in snapshots.into_iter().enumerate() {
        let db = reopen(s.images);
        let rows = db.rows(T);
        let recovered = |k: u64| rows.get(&RowKey(k)).map_or(0, |r| counter(r));
        let sum: u64 = (0..KEYS).map(recovered).sum();
        assert_eq!(sum % 2, 0, "{kind:?} {cc:?} image {n}: a partial transaction ({rows:?})");
        for (k, acked) in &s.acked_per_key {
            assert!(
                recovered(*k) >= *acked,
                "{kind:?} {cc:?} image {n}: key {k} holds {} increments, {acked} were acknowledged",
                recovered(*k)
            );
        }
    }
    let db = reopen(images(&regions));
    assert_eq!(db.rows(T), live, "{kind:?} {cc:?}: the image after the clean close keeps the final state");
    checked + 1
}

/// Images checked per iteration: one per acknowledged transaction, and
/// the state after the clean close.
const IMAGES_PER_ITERATION: usize = WORKERS as usize * TXNS_PER_WORKER + 1;

/// Runs `iterations` schedules; the images checked across them.
fn run(kind: LoggingKind, cc: CcKind, scheduler: impl Scheduler + 'static) -> usize {
    let checked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut config = Config::new();
    config.max_steps = shuttle::MaxSteps::FailAfter(2_000_000);
    let total = checked.clone();
    Runner::new(scheduler, config).run(move || {
        total.fetch_add(scenario(kind, cc), std::sync::atomic::Ordering::Relaxed);
    });
    checked.load(std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn taurus_two_logs_2pl_random() {
    let images = run(
        LoggingKind::Taurus { logs: 2 },
        CcKind::TwoPlNoWait,
        RandomScheduler::new_from_seed(0x5EED_7001, ITERATIONS),
    );
    assert_eq!(
        images,
        (ITERATIONS) * IMAGES_PER_ITERATION,
        "every schedule recovered and checked each image"
    );
}

#[test]
fn taurus_two_logs_2pl_pct() {
    let images = run(
        LoggingKind::Taurus { logs: 2 },
        CcKind::TwoPlNoWait,
        PctScheduler::new_from_seed(0x5EED_7002, 3, ITERATIONS),
    );
    assert_eq!(
        images,
        (ITERATIONS) * IMAGES_PER_ITERATION,
        "every schedule recovered and checked each image"
    );
}

#[test]
fn taurus_two_logs_occ_random() {
    let images = run(
        LoggingKind::Taurus { logs: 2 },
        CcKind::Occ,
        RandomScheduler::new_from_seed(0x5EED_7003, ITERATIONS),
    );
    assert_eq!(
        images,
        (ITERATIONS) * IMAGES_PER_ITERATION,
        "every schedule recovered and checked each image"
    );
}

#[test]
fn serial_random() {
    let images = run(
        LoggingKind::Serial,
        CcKind::TwoPlNoWait,
        RandomScheduler::new_from_seed(0x5EED_7004, ITERATIONS),
    );
    assert_eq!(
        images,
        (ITERATIONS) * IMAGES_PER_ITERATION,
        "every schedule recovered and checked each image"
    );
}

#[test]
fn silo_r_two_logs_random() {
    let images = run(
        LoggingKind::SiloR { logs: 2 },
        CcKind::Occ,
        RandomScheduler::new_from_seed(0x5EED_7005, ITERATIONS / 3),
    );
    assert_eq!(
        images,
        (ITERATIONS / 3) * IMAGES_PER_ITERATION,
        "every schedule recovered and checked each image"
    );
}

/// Algorithm 4's pool under shuttle: three replay threads over three logs
/// of records whose LVs name random earlier records of the other logs.
/// Checked: no deadlock (the pool's waits are untimed, so a lost wakeup is
/// one), every record applied once, each after every record its LV names.
/// One iteration; the records it checked the order of.
fn recovery_pool_scenario() -> usize {
    use strata_txn::record::{encode, RowWrite, WriteOp};
    use strata_txn::recovery::{decode_log, replay};
    use strata_txn::Lv;
    const LOGS: usize = 3;
    let mut rng = thread_rng();
    let mut logs: Vec<Vec<u8>> = vec![Vec::new(); LOGS];
    // Per record (by key): the (log, end) of each record it depends on.
    let mut ends_by_key: Vec<(usize, u64)> = Vec::new();
    let mut deps: Vec<Lv> = Vec::new();
    for key in 0..12u64 {
        let log = rng.gen_range(0..LOGS);
        let mut lv = Lv::ZERO;
        for j in 0..LOGS {
            // A random earlier record of log j (or none).
            let earlier: Vec<u64> = ends_by_key.iter().filter(|(l, _)| *l == j).map(|(_, e)| *e).collect();
            if !earlier.is_empty() && rng.gen_bool(0.5) {
                lv.set(j, earlier[rng.gen_range(0..earlier.len())]);
            }
        }
        let w = RowWrite { table: T, key: RowKey(key), op: WriteOp::Put(key.to_le_bytes().to_vec()) };
        encode(&lv, LOGS, &[w], &mut logs[log]);
        ends_by_key.push((log, logs[log].len() as u64));
        deps.push(lv);
    }
    let decoded: Vec<_> = logs.iter().map(|l| decode_log(l)).collect();
    let ends: Vec<u64> = decoded.iter().map(|d| d.valid_end).collect();
    let applied: Mutex<Vec<u64>> = Mutex::default();
    let apply = |r: &strata_txn::record::Record| {
        applied.lock().unwrap().push(r.writes[0].key.0);
        Ok(())
    };
    let report = replay(decoded.into_iter().map(|d| d.records).collect(), &ends, 3, &apply).expect("replay");
    let order = applied.into_inner().unwrap();
    assert_eq!(report.transactions, 12);
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..12).collect::<Vec<_>>(), "each record applied once: {order:?}");
    let position = |k: u64| order.iter().position(|x| *x == k).expect("applied");
    for (key, lv) in deps.iter().enumerate() {
        for (dep, (log, end)) in ends_by_key.iter().enumerate() {
            if *end <= lv.get(*log) {
                assert!(
                    position(dep as u64) < position(key as u64),
                    "record {key} (LV {lv:?}) applied before record {dep} it depends on: {order:?}"
                );
            }
        }
    }
    order.len()
}

/// Runs the pool scenario under `scheduler`; the records checked in all.
fn run_pool(scheduler: impl Scheduler + 'static) -> usize {
    let checked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let total = checked.clone();
    Runner::new(scheduler, Config::new()).run(move || {
        total.fetch_add(recovery_pool_scenario(), std::sync::atomic::Ordering::Relaxed);
    });
    checked.load(std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn recovery_pool_random() {
    let records = run_pool(RandomScheduler::new_from_seed(0x5EED_7006, ITERATIONS * 4));
    assert_eq!(records, ITERATIONS * 4 * 12, "every schedule applied and checked all 12 records");
}

#[test]
fn recovery_pool_pct() {
    let records = run_pool(PctScheduler::new_from_seed(0x5EED_7007, 3, ITERATIONS * 4));
    assert_eq!(records, ITERATIONS * 4 * 12, "every schedule applied and checked all 12 records");
}

/// The planted bugs of the crash lines must fail these checks too
/// (`--features shuttle,crashtest`).
#[cfg(feature = "crashtest")]
mod planted {
    use super::*;
    use strata_txn::planted::PlantedBug;

    fn run_planted(bug: PlantedBug) {
        let mut config = Config::new();
        config.max_steps = shuttle::MaxSteps::FailAfter(2_000_000);
        Runner::new(RandomScheduler::new_from_seed(0x5EED_7008, ITERATIONS), config).run(move || {
            PLANTED.with(|p| p.set(bug));
            scenario(LoggingKind::Taurus { logs: 2 }, CcKind::TwoPlNoWait);
        });
    }

    #[test]
    #[should_panic(expected = "acknowledged")]
    fn an_acknowledgement_before_the_commit_is_caught() {
        run_planted(PlantedBug::AckBeforeCommitted);
    }

    /// A lost dependency shows as a partial transaction, as an
    /// acknowledged one missing from a crash image, or as a lost update in
    /// the image after the clean close (which one depends on the schedule).
    #[test]
    #[should_panic(expected = "image")]
    fn a_read_that_skips_the_write_lv_is_caught() {
        run_planted(PlantedBug::ReadSkipsWriteLv);
    }
}
