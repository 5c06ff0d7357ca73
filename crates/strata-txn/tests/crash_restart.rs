//! Transactions on several workers and logs, then a crash (the
//! fault-injecting file system's image of what was synced) or a clean
//! close, then recovery, checked against the oracle of DESIGN.md section 3
//! for transactions: every acknowledged transaction present, none partial,
//! the recovered set closed under its dependencies.
//!
//! The workload makes all three visible in the rows. Each transaction bumps
//! two counters (read v, write v + 1) and inserts a receipt for each new
//! value naming the other receipt. Recovered counter c at value v must then
//! have receipts for exactly 1..=v (a receipt above v would be a write
//! without the counter update it came with; a gap, a transaction kept
//! without one it read from), every receipt's partner must be there
//! (atomicity), and every acknowledged receipt must be there.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_media::fs::Tear;
use strata_media::{FaultFs, FileSystem};
use strata_txn::db::RecoveryReport;
use strata_txn::{
    LogDeviceKind, LogMode, LoggingKind, ProcId, Procedures, RowAccess, RowKey, TableId, TableSchema, TxnDb,
    TxnDbOptions, TxnError, WorkerId,
};

const COUNTERS: TableId = TableId(0);
const RECEIPTS: TableId = TableId(1);
const N_COUNTERS: u64 = 12;
const VALUE_SPAN: u64 = 1_000_000;

fn schemas() -> Vec<TableSchema> {
    vec![
        TableSchema { name: "counters".into(), row_bytes: 8 },
        TableSchema { name: "receipts".into(), row_bytes: 8 },
    ]
}

fn receipt_key(counter: u64, value: u64) -> u64 {
    counter * VALUE_SPAN + value
}

/// The workload's transaction as a stored procedure (command logging).
const BUMP_TWO: ProcId = ProcId(1);

/// How a line logs: which scheme, data or command records.
#[derive(Copy, Clone, Debug)]
struct Setup {
    kind: LoggingKind,
    mode: LogMode,
    workers: usize,
    /// Tuple LV compression at δ = 0, every worker evicting after each
    /// transaction (taurus.txt 4.1 at its most aggressive).
    evict: bool,
}

fn open(fs: Arc<dyn FileSystem>, setup: Setup) -> (TxnDb, RecoveryReport) {
    let mut o = TxnDbOptions::new(setup.kind, LogDeviceKind::Ssd { fs, dir: "/db".into() }, setup.workers);
    o.logging.buffer_bytes = 1 << 16;
    o.logging.mode = setup.mode;
    // Anchors every 4 KiB, so even a slow run (a busy machine) places some.
    o.logging.anchor_every_bytes = 4 << 10;
    if setup.evict {
        o.logging.tuple_lv_delta = Some(0);
    }
    let mut procedures = Procedures::new();
    procedures.register(BUMP_TWO, |txn, args| {
        let a = u64::from_le_bytes(args[..8].try_into().expect("16 bytes of arguments"));
        let b = u64::from_le_bytes(args[8..16].try_into().expect("16 bytes of arguments"));
        bump_in(txn, a, b).map(|_| ())
    });
    TxnDb::open_with(&o, schemas(), procedures).unwrap()
}

/// One transaction of the workload; the receipts it inserted.
fn bump_two(
    db: &TxnDb,
    worker: WorkerId,
    rng: &mut ChaCha8Rng,
) -> Result<(Vec<u64>, strata_txn::CommitTicket), TxnError> {
    let a = rng.gen_range(0..N_COUNTERS);
    let b = (a + rng.gen_range(1..N_COUNTERS)) % N_COUNTERS;
    let mut txn = db.begin(worker);
    let receipts = bump_in(&mut txn, a, b)?;
    // What it did is what the procedure does with these arguments: in
    // command mode its record is the invocation.
    txn.log_as_command(BUMP_TWO, &[a.to_le_bytes(), b.to_le_bytes()].concat());
    Ok((receipts, txn.commit()?))
}

/// Bumps counters `a` and `b` in `txn` (read v, write v + 1, a receipt
/// for each naming the other); the receipts it inserts.
fn bump_in(txn: &mut dyn RowAccess, a: u64, b: u64) -> Result<Vec<u64>, TxnError> {
    let mut receipts = Vec::new();
    let mut next = Vec::new();
    for c in [a, b] {
        let v = txn.get(COUNTERS, RowKey(c))?.map_or(0, |r| u64::from_le_bytes(r.try_into().unwrap()));
        next.push((c, v + 1));
    }
    for (i, &(c, v)) in next.iter().enumerate() {
        txn.put(COUNTERS, RowKey(c), &v.to_le_bytes())?;
        let (pc, pv) = next[1 - i];
        txn.insert(RECEIPTS, RowKey(receipt_key(c, v)), &receipt_key(pc, pv).to_le_bytes())?;
        receipts.push(receipt_key(c, v));
    }
    Ok(receipts)
}

fn load_counters(db: &TxnDb) {
    let mut txn = db.begin(WorkerId(0));
    for c in 0..N_COUNTERS {
        txn.insert(COUNTERS, RowKey(c), &0u64.to_le_bytes()).unwrap();
    }
    txn.commit_durably().unwrap();
}

/// Runs `workers` threads of the workload until `stop`; every receipt
/// acknowledged goes into `acked` once its commit is durable.
fn run(db: &TxnDb, setup: Setup, seed: u64, stop: &AtomicBool, acked: &Mutex<BTreeSet<u64>>) {
    let workers = setup.workers;
    std::thread::scope(|s| {
        for w in 0..workers {
            s.spawn(move || {
                let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (w as u64 * 0x9E37));
                while !stop.load(Ordering::Acquire) {
                    match bump_two(db, WorkerId(w as u32), &mut rng) {
                        Ok((receipts, ticket)) => {
                            if setup.evict {
                                db.evict_tuple_lvs().expect("Taurus evicts tuple LVs");
                            }
                            db.wait_committed(&ticket).unwrap();
                            acked.lock().extend(receipts);
                        }
                        Err(TxnError::Conflict { .. }) => std::thread::yield_now(),
                        Err(e) => panic!("seed {seed}: {e}"),
                    }
                }
            });
        }
    });
}

fn check_oracle(db: &TxnDb, acked: &BTreeSet<u64>, seed: u64) {
    let counters = db.rows(COUNTERS);
    let receipts: BTreeMap<u64, u64> = db
        .rows(RECEIPTS)
        .into_iter()
        .map(|(k, v)| (k.0, u64::from_le_bytes(v.try_into().unwrap())))
        .collect();
    assert_eq!(counters.len() as u64, N_COUNTERS, "seed {seed}: the counters' load was acknowledged");
    for (c, v) in &counters {
        let v = u64::from_le_bytes(v.clone().try_into().unwrap());
        let have: Vec<u64> = receipts
            .range(receipt_key(c.0, 0)..receipt_key(c.0 + 1, 0))
            .map(|(k, _)| k % VALUE_SPAN)
            .collect();
        assert_eq!(have, (1..=v).collect::<Vec<_>>(), "seed {seed}: counter {} at {v}", c.0);
    }
    for (k, partner) in &receipts {
        assert!(receipts.contains_key(partner), "seed {seed}: receipt {k} without its partner {partner}");
    }
    for k in acked {
        assert!(receipts.contains_key(k), "seed {seed}: acknowledged receipt {k} lost");
    }
}

/// Runs the line; the recovery's report.
fn crash_and_recover(setup: Setup, seed: u64, tear: Tear) -> RecoveryReport {
    let fs = Arc::new(FaultFs::with_tear_seed(seed));
    let (db, _) = open(fs.clone(), setup);
    load_counters(&db);
    let stop = AtomicBool::new(false);
    let acked = Mutex::new(BTreeSet::new());
    let image = std::thread::scope(|s| {
        s.spawn(|| run(&db, setup, seed, &stop, &acked));
        std::thread::sleep(std::time::Duration::from_millis(60 + seed % 50));
        // Acknowledged before the crash: durable in the image.
        let before = acked.lock().clone();
        let image = fs.crash(tear);
        stop.store(true, Ordering::Release);
        (image, before)
    });
    drop(db);
    let (image, acked_before) = image;
    assert!(!acked_before.is_empty(), "seed {seed}: the workload acknowledged something before the crash");
    let (recovered, report) = open(Arc::new(image), setup);
    check_oracle(&recovered, &acked_before, seed);
    assert!(report.transactions > 0);
    // It keeps working after recovery, and a clean close keeps everything.
    let stop = AtomicBool::new(false);
    let acked = Mutex::new(acked_before);
    std::thread::scope(|s| {
        s.spawn(|| run(&recovered, setup, seed + 1, &stop, &acked));
        std::thread::sleep(std::time::Duration::from_millis(30));
        stop.store(true, Ordering::Release);
    });
    check_oracle(&recovered, &acked.lock(), seed);
    report
}

#[test]
fn taurus_with_four_logs_recovers_every_acknowledged_transaction_after_a_crash() {
    let mut anchors = 0;
    for seed in 0..6u64 {
        let tear = if seed % 2 == 0 { Tear::None } else { Tear::LastSector { seed } };
        let report = crash_and_recover(
            Setup { kind: LoggingKind::Taurus { logs: 4 }, mode: LogMode::Data, workers: 4, evict: false },
            seed,
            tear,
        );
        assert!(report.transactions > 0, "seed {seed}: recovery replayed the acknowledged transactions");
        anchors += report.anchors;
    }
    assert!(anchors > 0, "the runs placed LV anchors, so compressed LVs were recovered");
}

#[test]
fn taurus_with_tuple_lvs_evicted_at_delta_zero_recovers_after_a_crash() {
    for (seed, mode) in
        [(40u64, LogMode::Data), (41, LogMode::Command), (42, LogMode::Data), (43, LogMode::Command)]
    {
        let setup = Setup { kind: LoggingKind::Taurus { logs: 3 }, mode, workers: 3, evict: true };
        let report = crash_and_recover(setup, seed, Tear::LastSector { seed });
        assert!(report.transactions > 0, "seed {seed}: recovery replayed the acknowledged transactions");
    }
}

#[test]
fn taurus_with_two_logs_and_three_workers_recovers_after_a_crash() {
    for seed in 10..14u64 {
        let setup =
            Setup { kind: LoggingKind::Taurus { logs: 2 }, mode: LogMode::Data, workers: 3, evict: false };
        let report = crash_and_recover(setup, seed, Tear::LastSector { seed });
        assert!(report.transactions > 0, "seed {seed}: recovery replayed the acknowledged transactions");
    }
}

#[test]
fn serial_logging_recovers_every_acknowledged_transaction_after_a_crash() {
    for seed in 20..24u64 {
        let report = crash_and_recover(
            Setup { kind: LoggingKind::Serial, mode: LogMode::Data, workers: 3, evict: false },
            seed,
            Tear::LastSector { seed },
        );
        assert!(report.transactions > 0, "seed {seed}: recovery replayed the acknowledged transactions");
    }
}

#[test]
fn taurus_command_logging_recovers_by_re_running_the_procedures() {
    for seed in 30..34u64 {
        let tear = if seed % 2 == 0 { Tear::None } else { Tear::LastSector { seed } };
        let report = crash_and_recover(
            Setup { kind: LoggingKind::Taurus { logs: 3 }, mode: LogMode::Command, workers: 3, evict: false },
            seed,
            tear,
        );
        assert!(report.transactions > 0, "seed {seed}: recovery replayed the acknowledged transactions");
    }
}

#[test]
fn serial_command_logging_recovers_by_re_running_the_procedures() {
    for seed in 40..42u64 {
        let report = crash_and_recover(
            Setup { kind: LoggingKind::Serial, mode: LogMode::Command, workers: 2, evict: false },
            seed,
            Tear::LastSector { seed },
        );
        assert!(report.transactions > 0, "seed {seed}: recovery replayed the acknowledged transactions");
    }
}

#[test]
fn a_clean_close_keeps_every_committed_transaction() {
    for (kind, mode) in [
        (LoggingKind::Serial, LogMode::Data),
        (LoggingKind::Taurus { logs: 3 }, LogMode::Data),
        (LoggingKind::Taurus { logs: 3 }, LogMode::Command),
    ] {
        let setup = Setup { kind, mode, workers: 3, evict: false };
        let fs: Arc<dyn FileSystem> = Arc::new(FaultFs::new());
        let (db, _) = open(fs.clone(), setup);
        load_counters(&db);
        let stop = AtomicBool::new(false);
        let acked = Mutex::new(BTreeSet::new());
        std::thread::scope(|s| {
            s.spawn(|| run(&db, setup, 99, &stop, &acked));
            std::thread::sleep(std::time::Duration::from_millis(40));
            stop.store(true, Ordering::Release);
        });
        let live = (db.rows(COUNTERS), db.rows(RECEIPTS));
        drop(db);
        let (db, report) = open(fs, setup);
        assert!(
            (db.rows(COUNTERS), db.rows(RECEIPTS)) == live,
            "{kind:?}: the reopened rows differ from the live ones"
        );
        assert_eq!(report.dropped_records, 0);
        check_oracle(&db, &acked.lock(), 99);
    }
}

#[test]
fn eviction_at_delta_zero_empties_the_lock_table_once_everything_committed() {
    let setup = Setup { kind: LoggingKind::Taurus { logs: 3 }, mode: LogMode::Data, workers: 3, evict: true };
    let (db, _) = open(Arc::new(FaultFs::new()), setup);
    load_counters(&db);
    let mut rng = ChaCha8Rng::seed_from_u64(50);
    let mut tickets = Vec::new();
    for i in 0..60u32 {
        let (_, ticket) =
            bump_two(&db, WorkerId(i % 3), &mut rng).expect("one worker at a time: no conflict");
        tickets.push(ticket);
    }
    assert!(db.tuples_with_lvs() > 100, "every counter and receipt written holds LVs before an eviction");
    for t in &tickets {
        db.wait_committed(t).unwrap();
    }
    // Every log's records are committed: each tuple's LVs are at or below
    // the committed ends, δ = 0 below them.
    assert_eq!(db.evict_tuple_lvs(), Some(0), "the lock table is empty");
    assert_eq!(db.tuples_with_lvs(), 0);
    // The evicted rows are still there and go on being written.
    let (receipts, ticket) = bump_two(&db, WorkerId(0), &mut rng).unwrap();
    db.wait_committed(&ticket).unwrap();
    assert_eq!(receipts.len(), 2);
    assert!(db.tuples_with_lvs() >= 4, "the new writes' LVs are back in the lock table");
}
