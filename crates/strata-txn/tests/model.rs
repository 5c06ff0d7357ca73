//! Property tests of the table API against a reference model: two
//! `BTreeMap`s (one per table) of the committed rows.
//!
//! Random sequences of steps run on a [`TxnDb`] whose logs are files of a
//! [`FaultFs`], for serial logging and for Taurus with 2 and 3 logs. A step
//! is a transaction (up to 5 gets, puts, inserts and deletes over 4 keys of
//! 2 tables, sometimes on a table that does not exist or with a row of the
//! wrong size, then a commit, an abort or a drop), a crash or a clean close.
//! Most writes are chosen by what the transaction sees (a put of a row it
//! sees, else an insert), so most transactions get to their end; the rest
//! are blind, to reach `NotFound` and `Duplicate`.
//! Transactions run one at a time, so no lock ever conflicts, on workers
//! `0, 1, 2, 3, 0, ...` in turn, so with Taurus they alternate between the
//! logs (4 workers: Taurus with 3 logs has two workers on log 0).
//!
//! Checked:
//! - every operation returns what the model says: a get the row the
//!   transaction sees (its own writes over the committed rows), and exactly
//!   the error the model predicts (`UnknownTable`, `RowSize`, `NotFound`,
//!   `Duplicate`), with no other;
//! - what an error does to the transaction, as `src/txn.rs` does it: a
//!   `NotFound` or `Duplicate` aborts it (its locks are released and its
//!   buffered writes dropped; ending it afterwards, by a drop, `abort` or
//!   even `commit`, applies nothing: `commit` then returns a ticket without
//!   a record). `UnknownTable` and `RowSize` are refused before the row is
//!   locked and leave the transaction as it was: it goes on, and its commit
//!   applies its other writes;
//! - a commit (`commit_durably`) writes a record exactly when the
//!   transaction wrote something, and installs its writes; an abort or a
//!   drop installs nothing;
//! - after every transaction the rows equal the model and no lock is left
//!   (each key can be locked exclusively by a new transaction);
//! - a crash (`FaultFs::crash(Tear::None)`: only what was synced) and a
//!   clean close (drop, reopen on the same files), each reopened with
//!   `TxnDb::open`: the rows equal the model exactly (every commit was
//!   durable before the next step), recovery replays every record ever
//!   committed and drops none.
//!
//! The Taurus runs with three logs evict every tuple's LVs after each
//! commit (tuple LV compression at δ = 0, taurus.txt 4.1), so the rows
//! they check were written by transactions whose LVs came from the floor.
//!
//! The runs are deterministic: proptest uses a fixed seed ([`SEED`],
//! printed in every assertion message) and no failure persistence.
//!
//! Regression ([`a_write_after_a_recovery_survives_the_next_one`]): rows
//! recovered at open carried no LVs, so a transaction committed after a
//! recovery did not depend on the records that wrote the rows it
//! overwrote; every transaction now starts from the logs' kept ends.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use strata_media::fs::{FaultFs, Tear};
use strata_media::FileSystem;
use strata_txn::db::RecoveryReport;
use strata_txn::{
    CcKind, LogDeviceKind, LoggingKind, RowKey, TableId, TableSchema, Txn, TxnDb, TxnDbOptions, TxnError,
    WorkerId,
};

const SEED: u64 = 0x7a_0de1_5eed;

/// Row bytes of tables 0 and 1; table 2 does not exist.
const ROW_BYTES: [usize; 2] = [8, 3];
const KEYS: u64 = 4;
const WORKERS: usize = 4;

fn schemas() -> Vec<TableSchema> {
    vec![
        TableSchema { name: "wide".into(), row_bytes: ROW_BYTES[0] },
        TableSchema { name: "narrow".into(), row_bytes: ROW_BYTES[1] },
    ]
}

/// `recovery_threads` 1 replays in a fixed order; more, in parallel.
fn options(fs: Arc<FaultFs>, kind: LoggingKind, cc: CcKind, recovery_threads: usize) -> TxnDbOptions {
    let fs: Arc<dyn FileSystem> = fs;
    let mut o = TxnDbOptions::new(kind, LogDeviceKind::Ssd { fs, dir: "/db".into() }, WORKERS);
    o.cc = cc;
    o.logging.buffer_bytes = 1 << 16;
    o.recovery_threads = recovery_threads;
    if kind == EVICTING {
        // Tuple LV compression at δ = 0: after each commit (below) every
        // tuple at or below the committed ends leaves the lock table.
        o.logging.tuple_lv_delta = Some(0);
    }
    o
}

/// The scheme whose runs evict the tuples' LVs after every commit.
const EVICTING: LoggingKind = LoggingKind::Taurus { logs: 3 };

/// A row's size: the table's, or one byte short or long.
#[derive(Copy, Clone, Debug)]
enum Size {
    Right,
    Short,
    Long,
}

#[derive(Clone, Debug)]
enum Op {
    Get(u32, u64),
    Put(u32, u64, u8, Size),
    Insert(u32, u64, u8, Size),
    Delete(u32, u64),
    /// A put if the transaction sees the row, else an insert (so that most
    /// transactions get to their end).
    Write(u32, u64, u8, Size),
    /// A delete if the transaction sees the row, else a get.
    Remove(u32, u64),
}

/// What `op` does on `view`: [`Op::Write`] and [`Op::Remove`]
/// become the one that succeeds.
fn resolve(view: &Rows, op: &Op) -> Op {
    let sees = |t: u32, k: u64| view.get(t as usize).is_some_and(|rows| rows.contains_key(&k));
    match *op {
        Op::Write(t, k, fill, size) if sees(t, k) => Op::Put(t, k, fill, size),
        Op::Write(t, k, fill, size) => Op::Insert(t, k, fill, size),
        Op::Remove(t, k) if sees(t, k) => Op::Delete(t, k),
        Op::Remove(t, k) => Op::Get(t, k),
        ref other => other.clone(),
    }
}

/// How a transaction ends (also one an error aborted).
#[derive(Copy, Clone, Debug)]
enum End {
    Commit,
    Abort,
    Drop,
}

#[derive(Clone, Debug)]
enum Step {
    Txn(Vec<Op>, End),
    /// Reopen on what the files synced (`Tear::None`).
    Crash,
    /// Drop the database and reopen it on the same files.
    CleanClose,
}

fn table() -> impl Strategy<Value = u32> {
    prop_oneof![20 => 0..2u32, 1 => Just(2u32)]
}

fn size() -> impl Strategy<Value = Size> {
    prop_oneof![24 => Just(Size::Right), 1 => Just(Size::Short), 1 => Just(Size::Long)]
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS;
    prop_oneof![
        3 => (table(), key.clone()).prop_map(|(t, k)| Op::Get(t, k)),
        1 => (table(), key.clone(), any::<u8>(), size()).prop_map(|(t, k, f, s)| Op::Put(t, k, f, s)),
        1 => (table(), key.clone(), any::<u8>(), size()).prop_map(|(t, k, f, s)| Op::Insert(t, k, f, s)),
        1 => (table(), key.clone()).prop_map(|(t, k)| Op::Delete(t, k)),
        5 => (table(), key.clone(), any::<u8>(), size()).prop_map(|(t, k, f, s)| Op::Write(t, k, f, s)),
        2 => (table(), key).prop_map(|(t, k)| Op::Remove(t, k)),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let end = prop_oneof![6 => Just(End::Commit), 1 => Just(End::Abort), 1 => Just(End::Drop)];
    prop_oneof![
        16 => (prop::collection::vec(op(), 0..6), end).prop_map(|(ops, end)| Step::Txn(ops, end)),
        1 => Just(Step::Crash),
        1 => Just(Step::CleanClose),
    ]
}

fn config(cases: u32) -> Config {
    Config { cases, rng_seed: RngSeed::Fixed(SEED), failure_persistence: None, ..Config::default() }
}

/// The row an operation writes: `ROW_BYTES` of the table (8 for the
/// missing table), give or take one, from `fill`.
fn row(table: u32, fill: u8, size: Size) -> Vec<u8> {
    let want = ROW_BYTES.get(table as usize).copied().unwrap_or(8);
    let len = match size {
        Size::Right => want,
        Size::Short => want - 1,
        Size::Long => want + 1,
    };
    (0..len).map(|i| fill.wrapping_add((i as u8).wrapping_mul(37))).collect()
}

/// An error, comparable.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Failure {
    UnknownTable(u32),
    RowSize { table: u32, got: usize, want: usize },
    NotFound(u32, u64),
    Duplicate(u32, u64),
}

impl Failure {
    /// Whether the error aborted the transaction (`Txn::fail`: locks
    /// released, writes dropped); the others are refused before locking.
    fn aborts(&self) -> bool {
        matches!(self, Failure::NotFound(..) | Failure::Duplicate(..))
    }
}

fn failure(e: TxnError) -> Failure {
    match e {
        TxnError::UnknownTable(t) => Failure::UnknownTable(t.0),
        TxnError::RowSize { table, got, want } => Failure::RowSize { table: table.0, got, want },
        TxnError::NotFound { table, key } => Failure::NotFound(table.0, key.0),
        TxnError::Duplicate { table, key } => Failure::Duplicate(table.0, key.0),
        other => panic!("seed {SEED:#x}: an error the model never expects: {other}"),
    }
}

/// The committed rows of tables 0 and 1.
type Rows = [BTreeMap<u64, Vec<u8>>; 2];

/// What the model says an operation returns on `view` (the rows the
/// transaction sees), applying it to `view` if it succeeds.
fn model_op(view: &mut Rows, op: &Op) -> Result<Option<Vec<u8>>, Failure> {
    let known =
        |t: u32| if (t as usize) < ROW_BYTES.len() { Ok(t as usize) } else { Err(Failure::UnknownTable(t)) };
    let sized = |t: u32, r: &[u8]| {
        let i = known(t)?;
        if r.len() == ROW_BYTES[i] {
            Ok(i)
        } else {
            Err(Failure::RowSize { table: t, got: r.len(), want: ROW_BYTES[i] })
        }
    };
    match *op {
        Op::Get(t, k) => Ok(view[known(t)?].get(&k).cloned()),
        Op::Put(t, k, fill, size) => {
            let r = row(t, fill, size);
            let i = sized(t, &r)?;
            match view[i].get_mut(&k) {
                Some(v) => *v = r,
                None => return Err(Failure::NotFound(t, k)),
            }
            Ok(None)
        }
        Op::Insert(t, k, fill, size) => {
            let r = row(t, fill, size);
            let i = sized(t, &r)?;
            if view[i].contains_key(&k) {
                return Err(Failure::Duplicate(t, k));
            }
            view[i].insert(k, r);
            Ok(None)
        }
        Op::Delete(t, k) => {
            let i = known(t)?;
            view[i].remove(&k).map(|_| None).ok_or(Failure::NotFound(t, k))
        }
        Op::Write(..) | Op::Remove(..) => unreachable!("resolved first"),
    }
}

fn run_op(txn: &mut Txn<'_>, op: &Op) -> Result<Option<Vec<u8>>, Failure> {
    let r = match *op {
        Op::Get(t, k) => return txn.get(TableId(t), RowKey(k)).map_err(failure),
        Op::Put(t, k, fill, size) => txn.put(TableId(t), RowKey(k), &row(t, fill, size)),
        Op::Insert(t, k, fill, size) => txn.insert(TableId(t), RowKey(k), &row(t, fill, size)),
        Op::Delete(t, k) => txn.delete(TableId(t), RowKey(k)),
        Op::Write(..) | Op::Remove(..) => unreachable!("resolved first"),
    };
    r.map(|()| None).map_err(failure)
}

fn db_rows(db: &TxnDb) -> Rows {
    [0, 1].map(|t| db.rows(TableId(t)).into_iter().map(|(k, v)| (k.0, v)).collect())
}

/// No transaction left a lock: a new one locks every key exclusively.
fn no_locks_left(db: &TxnDb, model: &Rows, context: &str) -> Result<(), TestCaseError> {
    for (t, rows) in model.iter().enumerate() {
        for k in 0..KEYS {
            let mut probe = db.begin(WorkerId(0));
            let (table, key) = (TableId(t as u32), RowKey(k));
            let locked = match rows.get(&k) {
                Some(r) => probe.put(table, key, r),
                None => probe.insert(table, key, &vec![0; ROW_BYTES[t]]),
            };
            prop_assert!(locked.is_ok(), "{}: table {} key {} is still locked: {:?}", context, t, k, locked);
            probe.abort();
        }
    }
    Ok(())
}

/// A database, its files, and what the test knows of them.
struct Harness {
    kind: LoggingKind,
    cc: CcKind,
    recovery_threads: usize,
    fs: Arc<FaultFs>,
    db: Option<TxnDb>,
    model: Rows,
    /// Records committed since the files were created (each reopen replays them all).
    records: u64,
    txns: u32,
    /// Restarts done (crashes and clean closes of the steps).
    reopens: usize,
}

impl Harness {
    fn new(kind: LoggingKind, cc: CcKind, recovery_threads: usize) -> Self {
        let fs = Arc::new(FaultFs::new());
        let mut h = Harness {
            kind,
            cc,
            recovery_threads,
            fs,
            db: None,
            model: Default::default(),
            records: 0,
            txns: 0,
            reopens: 0,
        };
        let (db, report) = h.open(h.fs.clone());
        assert_eq!(report.transactions, 0);
        h.db = Some(db);
        h
    }

    fn open(&self, fs: Arc<FaultFs>) -> (TxnDb, RecoveryReport) {
        TxnDb::open(&options(fs, self.kind, self.cc, self.recovery_threads), schemas())
            .unwrap_or_else(|e| panic!("seed {SEED:#x}, {:?} {:?}: open: {e}", self.kind, self.cc))
    }

    fn check_reopened(
        &self,
        db: &TxnDb,
        report: &RecoveryReport,
        context: &str,
    ) -> Result<(), TestCaseError> {
        prop_assert_eq!(&db_rows(db), &self.model, "{}: the reopened rows differ from the model", context);
        prop_assert_eq!(report.transactions, self.records, "{}: records replayed", context);
        prop_assert_eq!(report.dropped_records, 0, "{}: records dropped", context);
        no_locks_left(db, &self.model, context)
    }

    fn restart(&mut self, step: &Step, context: &str) -> Result<(), TestCaseError> {
        let crash = matches!(step, Step::Crash);
        if crash {
            let image = self.fs.crash(Tear::None);
            drop(self.db.take());
            self.fs = Arc::new(image);
        } else {
            drop(self.db.take());
        }
        let (db, report) = self.open(self.fs.clone());
        self.check_reopened(&db, &report, context)?;
        self.db = Some(db);
        self.reopens += 1;
        Ok(())
    }

    fn transaction(&mut self, ops: &[Op], end: End, context: &str) -> Result<(), TestCaseError> {
        let worker = WorkerId(self.txns % WORKERS as u32);
        self.txns += 1;
        let db = self.db.as_ref().expect("open");
        let mut txn = db.begin(worker);
        let mut view = self.model.clone();
        let mut aborted = false;
        // Whether a put, insert or delete succeeded: the commit's record.
        let mut buffered = false;
        for (i, op) in ops.iter().enumerate() {
            let op = &resolve(&view, op);
            let want = model_op(&mut view, op);
            let got = run_op(&mut txn, op);
            prop_assert_eq!(&got, &want, "{}: operation {} {:?} on {:?}", context, i, op, worker);
            match want {
                Ok(_) => buffered |= !matches!(op, Op::Get(..)),
                Err(f) if f.aborts() => {
                    aborted = true;
                    break;
                }
                Err(_) => {}
            }
        }
        match end {
            End::Commit if aborted => {
                // An error ended it: a commit is refused, nothing is written.
                let r = txn.commit_durably();
                prop_assert!(
                    matches!(r, Err(TxnError::Ended)),
                    "{}: commit after an abort: {:?}",
                    context,
                    r
                );
            }
            End::Commit => {
                let ticket = txn.commit_durably();
                prop_assert!(ticket.is_ok(), "{}: commit: {:?}", context, ticket.err());
                let ticket = ticket.unwrap();
                prop_assert!(db.is_committed(&ticket), "{}: committed durably but not committed", context);
                prop_assert_eq!(
                    ticket.record.is_some(),
                    buffered,
                    "{}: a record exactly when the transaction wrote",
                    context
                );
                self.records += u64::from(buffered);
                self.model = view;
                if self.kind == EVICTING {
                    let left = db.evict_tuple_lvs();
                    prop_assert_eq!(left, Some(0), "{}: committed durably, so every tuple's LVs go", context);
                }
            }
            End::Abort => txn.abort(),
            End::Drop => drop(txn),
        }
        prop_assert_eq!(&db_rows(db), &self.model, "{}: rows after the transaction ({:?})", context, end);
        no_locks_left(db, &self.model, context)
    }
}

fn run(
    kind: LoggingKind,
    cc: CcKind,
    recovery_threads: usize,
    steps: &[Step],
) -> Result<Outcome, TestCaseError> {
    let mut h = Harness::new(kind, cc, recovery_threads);
    for (i, step) in steps.iter().enumerate() {
        let context = format!("seed {SEED:#x}, {kind:?} {cc:?}, step {i} ({step:?})");
        match step {
            Step::Txn(ops, end) => h.transaction(ops, *end, &context)?,
            Step::Crash | Step::CleanClose => h.restart(step, &context)?,
        }
    }
    let context = format!("seed {SEED:#x}, {kind:?}, the final crash");
    let image = Arc::new(h.fs.crash(Tear::None));
    let (db, report) = h.open(image);
    h.check_reopened(&db, &report, &context)?;
    drop(db);
    let context = format!("seed {SEED:#x}, {kind:?}, the final clean close");
    drop(h.db.take());
    let (db, report) = h.open(h.fs.clone());
    h.check_reopened(&db, &report, &context)?;
    Ok(Outcome {
        reopens: h.reopens + 2,
        rows: db_rows(&db),
        model: h.model.clone(),
        replayed: report.transactions,
        committed_records: h.records,
    })
}

/// What a run ended with, for the test body to judge.
struct Outcome {
    /// Opens after the first: every crash and clean close of the steps,
    /// then the final crash and the final clean close.
    reopens: usize,
    /// The rows after the final clean close, and the model's.
    rows: Rows,
    model: Rows,
    /// Transactions the final open replayed, and records committed.
    replayed: u64,
    committed_records: u64,
}

/// The restarts `steps` ask for.
fn restarts(steps: &[Step]) -> usize {
    steps.iter().filter(|s| matches!(s, Step::Crash | Step::CleanClose)).count()
}

/// The restart and replay counts every model test checks on its run's outcome.
fn check_outcome(o: &Outcome, steps: &[Step], kind: LoggingKind) -> Result<(), TestCaseError> {
    prop_assert_eq!(o.reopens, restarts(steps) + 2, "seed {:#x}, {:?}: every restart reopened", SEED, kind);
    prop_assert_eq!(
        o.replayed,
        o.committed_records,
        "seed {:#x}, {:?}: every committed record replayed",
        SEED,
        kind
    );
    Ok(())
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn serial_logging_matches_the_model_across_crashes_and_clean_closes(
        steps in prop::collection::vec(step(), 1..60),
        recovery_threads in 1..4usize,
    ) {
        let outcome = run(LoggingKind::Serial, CcKind::TwoPlNoWait, recovery_threads, &steps)?;
        check_outcome(&outcome, &steps, LoggingKind::Serial)?;
        prop_assert_eq!(&outcome.rows, &outcome.model, "seed {:#x}: the final rows are the model's", SEED);
    }

    #[test]
    fn taurus_with_two_logs_matches_the_model_across_crashes_and_clean_closes(
        steps in prop::collection::vec(step(), 1..60),
        recovery_threads in 1..4usize,
    ) {
        let outcome = run(LoggingKind::Taurus { logs: 2 }, CcKind::TwoPlNoWait, recovery_threads, &steps)?;
        check_outcome(&outcome, &steps, LoggingKind::Taurus { logs: 2 })?;
        prop_assert_eq!(&outcome.rows, &outcome.model, "seed {:#x}: the final rows are the model's", SEED);
    }

    #[test]
    fn taurus_with_three_logs_matches_the_model_across_crashes_and_clean_closes(
        steps in prop::collection::vec(step(), 1..60),
        recovery_threads in 1..4usize,
    ) {
        let outcome = run(LoggingKind::Taurus { logs: 3 }, CcKind::TwoPlNoWait, recovery_threads, &steps)?;
        check_outcome(&outcome, &steps, LoggingKind::Taurus { logs: 3 })?;
        prop_assert_eq!(&outcome.rows, &outcome.model, "seed {:#x}: the final rows are the model's", SEED);
    }

    #[test]
    fn taurus_under_occ_matches_the_model_across_crashes_and_clean_closes(
        steps in prop::collection::vec(step(), 1..60),
        recovery_threads in 1..4usize,
    ) {
        let outcome = run(LoggingKind::Taurus { logs: 2 }, CcKind::Occ, recovery_threads, &steps)?;
        check_outcome(&outcome, &steps, LoggingKind::Taurus { logs: 2 })?;
        prop_assert_eq!(&outcome.rows, &outcome.model, "seed {:#x}: the final rows are the model's", SEED);
    }

    #[test]
    fn silo_r_under_occ_matches_the_model_across_crashes_and_clean_closes(
        steps in prop::collection::vec(step(), 1..60),
        recovery_threads in 1..4usize,
    ) {
        let outcome = run(LoggingKind::SiloR { logs: 2 }, CcKind::Occ, recovery_threads, &steps)?;
        check_outcome(&outcome, &steps, LoggingKind::SiloR { logs: 2 })?;
        prop_assert_eq!(&outcome.rows, &outcome.model, "seed {:#x}: the final rows are the model's", SEED);
    }
}

/// A row written on log 1, recovered, then overwritten on log 0, and
/// recovered again. Were the second write's LV zeros (recovered tuples
/// carry no LVs), recovery could replay it before the first one, which
/// would then win: with one recovery thread looking at log 0 first, it
/// always would.
#[test]
fn a_write_after_a_recovery_survives_the_next_one() {
    let fs = Arc::new(FaultFs::new());
    let o = options(fs, LoggingKind::Taurus { logs: 2 }, CcKind::TwoPlNoWait, 1);
    let (table, key) = (TableId(0), RowKey(0));
    let write = |worker: u32, row: [u8; 8]| {
        let (db, _) = TxnDb::open(&o, schemas()).unwrap();
        let mut txn = db.begin(WorkerId(worker));
        match db.rows(table).contains_key(&key) {
            true => txn.put(table, key, &row).unwrap(),
            false => txn.insert(table, key, &row).unwrap(),
        }
        txn.commit_durably().unwrap();
    };
    write(1, [1; 8]);
    write(0, [2; 8]);
    let (db, _) = TxnDb::open(&o, schemas()).unwrap();
    assert_eq!(db.rows(table).get(&key), Some(&vec![2; 8]), "the later, acknowledged write survives");
}

/// After an error aborted it, a transaction refuses further work (it holds
/// no locks, so it would take ones its drop never releases).
#[test]
fn a_transaction_an_error_aborted_refuses_further_work() {
    let (db, _) = TxnDb::open(
        &options(Arc::new(FaultFs::new()), LoggingKind::Serial, CcKind::TwoPlNoWait, 1),
        schemas(),
    )
    .unwrap();
    let mut txn = db.begin(WorkerId(0));
    assert!(matches!(txn.delete(TableId(0), RowKey(1)), Err(TxnError::NotFound { .. })));
    assert!(matches!(txn.get(TableId(0), RowKey(2)), Err(TxnError::Ended)), "the aborted transaction ended");
    drop(txn);
    let mut next = db.begin(WorkerId(1));
    let insert = next.insert(TableId(0), RowKey(2), &[0; 8]);
    assert!(insert.is_ok(), "the dropped transaction's lock is released: {insert:?}");
}
