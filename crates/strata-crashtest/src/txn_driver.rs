//! Runs a session of the transactional-table workload (`crate::txn_workload`)
//! on a `TxnDb` from one thread, wave by wave, so a seed gives the same
//! medium operations every time although each log has its own manager
//! thread; and recovers and checks one crash image (`crate::txn_oracle`).
//!
//! A wave of one transaction commits it, waits for it (`wait_committed`:
//! the client's acknowledgement, which the planted `AckBeforeCommitted`
//! makes early), acknowledges it, and waits until it really committed
//! (`is_committed`). A wave of several (one per log) commits them all
//! (early lock release lets each read the earlier ones' writes, so their
//! records carry cross-log LVs), has the medium make them durable (the SSD
//! lines let the managers' appends through one log at a time in a seeded
//! order; on PMem they run freely and the harness takes every combination
//! of the logs' states), then waits for each and acknowledges it, in
//! order, and waits until all really committed. Between waves every
//! manager is idle, so each log gets at most one device append per wave.
//! The price of that determinism: in a wave of several no acknowledgement
//! races another log's durability (the wave's records are durable before
//! the first wait); the case where that matters most, a record compressed
//! against an LV anchor, has its own test (`txn_ssd`'s tests).
//!
//! Command lines run each transaction as the workload's stored procedure
//! (`crate::txn_workload::WORKLOAD`, its steps in the arguments) instead
//! of its ops; the rows it reads are then not checked live, but what it
//! writes follows from them, and the clean reopen checks every row.
//!
//! Silo-R lines open with the on-demand epoch clock
//! (`EpochClock::OnDemand`): no epoch thread, the epoch advances (every
//! log gets an epoch mark) only when a commit waits or the driver asks
//! (`TxnDb::advance_epoch`). Every wave of a Silo-R line runs as a wave of
//! several, even of one transaction: its records are made durable through
//! the medium first, then the first wait advances the epoch and marks every
//! log (the second device append of the wave), and the acknowledgement
//! follows the marks. Were the records not durable before the wait, the
//! marks' round would write them (on SSD in the same write, at a point the
//! seed does not fix). Waiting until all really committed advances the
//! epoch itself should the waits not have (the planted
//! `AckBeforeCommitted`).
//!
//! After every odd wave the database evicts its tuples' LVs (tuple LV
//! compression at δ = 0, taurus.txt 4.1), so half the waves start from the
//! lock table's floor.
//!
//! Half-way through a session the database is closed and reopened: it must
//! hold every transaction so far, and go on writing after them.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use strata_media::TxnId;
use strata_txn::db::RecoveryReport;
use strata_txn::planted::PlantedBug;
use strata_txn::{
    CommitTicket, EpochClock, LogDeviceKind, LogMode, LoggingKind, RowKey, TxnDb, TxnDbOptions, TxnError,
    WorkerId,
};

use crate::error::{CheckResult, CrashCheckError};
use crate::txn_lines::TxnLogging;
use crate::txn_oracle::check;
use crate::txn_workload::{
    command_args, expected_rows, procedures, schemas, Op, SessionPlan, Step, TxnSpec, COUNTERS, ITEMS,
    TABLES, WORKLOAD,
};

/// Longest wait for a wave to commit or a held-back append to arrive.
pub(crate) const WAIT_LIMIT: Duration = Duration::from_secs(20);

/// What the driver needs from the medium under test.
pub(crate) trait WaveMedium {
    /// A wave is about to run; `several`: more than one transaction.
    fn begin_wave(&self, several: bool);
    /// Makes a wave's records durable, one log after another: (log, record end).
    fn flush(&self, order: &[(usize, u64)]) -> Result<(), CrashCheckError>;
    /// The client acknowledges `txn`.
    fn ack(&self, txn: TxnId);
    /// Every log manager is idle: after opening or a wave.
    fn quiet(&self) -> Result<(), CrashCheckError>;
    /// The run failed: let any held-back append through.
    fn abort(&self);
}

/// A Taurus log of commands places an LV anchor every this many bytes:
/// command records are about a tenth of a KiB, so each log of a session
/// passes a few anchors (the data lines' bulk transactions do that for
/// rows, against the default 64 KiB).
pub(crate) const COMMAND_ANCHOR_EVERY_BYTES: u64 = 1 << 10;

/// The options of every open: small log buffers, two replay threads; the
/// line's concurrency control and record mode; Silo-R's epochs on demand.
pub(crate) fn db_options(logging: TxnLogging, device: LogDeviceKind, bug: PlantedBug) -> TxnDbOptions {
    let mut o = TxnDbOptions::new(logging.kind(), device, logging.workers());
    o.cc = logging.cc();
    o.logging.mode = logging.mode();
    o.logging.buffer_bytes = 1 << 16;
    if logging.mode() == LogMode::Command && matches!(logging.kind(), LoggingKind::Taurus { .. }) {
        o.logging.anchor_every_bytes = COMMAND_ANCHOR_EVERY_BYTES;
    }
    if logging.epochs() {
        o.logging.epoch_clock = EpochClock::OnDemand;
    }
    // Tuple LV compression at δ = 0 (the driver evicts after odd waves).
    o.logging.tuple_lv_delta = Some(0);
    o.recovery_threads = 2;
    o.planted_bug = bug;
    o
}

/// Opens (recovers) the database of `options` with the workload's procedure.
pub(crate) fn open_db(options: &TxnDbOptions) -> Result<(TxnDb, RecoveryReport), TxnError> {
    TxnDb::open_with(options, schemas(), procedures())
}

fn open(options: &TxnDbOptions) -> Result<TxnDb, CrashCheckError> {
    open_db(options).map(|(db, _)| db).map_err(CrashCheckError::step("open"))
}

/// Every table's rows.
pub(crate) fn db_rows(db: &TxnDb) -> Vec<BTreeMap<RowKey, Vec<u8>>> {
    TABLES.iter().map(|t| db.rows(*t)).collect()
}

/// Runs one transaction up to its commit; a read must return the model's
/// row. Under command logging: its steps, as the workload's procedure.
fn execute(db: &TxnDb, spec: &TxnSpec, mode: LogMode) -> Result<CommitTicket, CrashCheckError> {
    if mode == LogMode::Command {
        let args = command_args(spec.id, &spec.steps);
        return db.run(WorkerId(spec.worker), WORKLOAD, &args).map_err(CrashCheckError::step("run"));
    }
    let mut txn = db.begin(WorkerId(spec.worker));
    for op in &spec.ops {
        match op {
            Op::Get { key, expect } => {
                let got = txn.get(key.0, RowKey(key.1)).map_err(CrashCheckError::step("get"))?;
                if got != *expect {
                    return Err(CrashCheckError::inconsistent(format!(
                        "T{} read {key:?}: {got:?}, the model says {expect:?}",
                        spec.id
                    )));
                }
            }
            Op::Put { key, row } => {
                txn.put(key.0, RowKey(key.1), row).map_err(CrashCheckError::step("put"))?
            }
            Op::Insert { key, row } => {
                txn.insert(key.0, RowKey(key.1), row).map_err(CrashCheckError::step("insert"))?
            }
            Op::Delete { key } => {
                txn.delete(key.0, RowKey(key.1)).map_err(CrashCheckError::step("delete"))?
            }
        }
    }
    txn.commit().map_err(CrashCheckError::step("commit"))
}

/// Waits until every ticket committed (not `wait_committed`, which a
/// planted bug may cut short), advancing the epoch where commits wait for
/// one (`epochs`: nothing else does, on demand).
fn settle(db: &TxnDb, tickets: &[CommitTicket], epochs: bool) -> Result<(), CrashCheckError> {
    let started = Instant::now();
    while !tickets.iter().all(|t| db.is_committed(t)) {
        if started.elapsed() > WAIT_LIMIT {
            return Err(CrashCheckError::inconsistent(format!(
                "a wave did not commit in {WAIT_LIMIT:?}: {tickets:?}"
            )));
        }
        if epochs {
            db.advance_epoch().map_err(CrashCheckError::step("advance_epoch"))?;
        }
        std::thread::sleep(Duration::from_micros(20));
    }
    Ok(())
}

/// Runs session `plan` on a database opened with `options`.
pub(crate) fn run_session(
    plan: &SessionPlan,
    options: &TxnDbOptions,
    medium: &dyn WaveMedium,
    seed: u64,
) -> Result<(), CrashCheckError> {
    let mut db = Some(open(options)?);
    medium.quiet()?;
    let result = run_waves(plan, options, medium, seed, &mut db);
    if result.is_err() {
        medium.abort();
    }
    drop(db);
    result
}

fn run_waves(
    plan: &SessionPlan,
    options: &TxnDbOptions,
    medium: &dyn WaveMedium,
    seed: u64,
    slot: &mut Option<TxnDb>,
) -> Result<(), CrashCheckError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x0a11_0fde ^ plan.index as u64);
    let mode = options.logging.mode;
    let epochs = matches!(options.logging.kind, LoggingKind::SiloR { .. });
    for (w, range) in plan.waves.iter().enumerate() {
        let db = slot.as_ref().expect("open");
        let specs = &plan.txns[range.clone()];
        let several = specs.len() > 1 || epochs;
        medium.begin_wave(several);
        if let (false, [spec]) = (several, specs) {
            let ticket = execute(db, spec, mode)?;
            db.wait_committed(&ticket).map_err(CrashCheckError::step("wait_committed"))?;
            medium.ack(TxnId(spec.id));
            settle(db, &[ticket], epochs)?;
        } else {
            let tickets = specs.iter().map(|s| execute(db, s, mode)).collect::<Result<Vec<_>, _>>()?;
            let mut order = Vec::with_capacity(tickets.len());
            for (s, t) in specs.iter().zip(&tickets) {
                let (log, end) = t
                    .record
                    .ok_or_else(|| CrashCheckError::inconsistent(format!("T{} wrote no log record", s.id)))?;
                order.push((log.index(), end));
            }
            order.shuffle(&mut rng);
            medium.flush(&order)?;
            for (s, t) in specs.iter().zip(&tickets) {
                db.wait_committed(t).map_err(CrashCheckError::step("wait_committed"))?;
                medium.ack(TxnId(s.id));
            }
            settle(db, &tickets, epochs)?;
        }
        medium.quiet()?;
        if w % 2 == 1 {
            // Every tuple at or below the committed ends leaves the lock
            // table: the next wave's LVs come from the floor (None: a
            // scheme without LSN vectors).
            db.evict_tuple_lvs();
        }
        if w == plan.reopen_after_wave {
            *slot = None;
            let db = slot.insert(open(options)?);
            medium.quiet()?;
            let so_far = plan.txns[..range.end].iter().map(|t| t.id).collect();
            if !same_rows(&db_rows(db), &expected_rows(plan, &so_far)) {
                return Err(CrashCheckError::inconsistent(format!(
                    "after a clean close and reopen at T{} the rows differ",
                    range.end
                )));
            }
        }
    }
    Ok(())
}

fn same_rows(got: &[BTreeMap<RowKey, Vec<u8>>], want: &[BTreeMap<u64, Vec<u8>>]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(g, w)| g.iter().map(|(k, v)| (k.0, v)).eq(w.iter().map(|(k, v)| (*k, v))))
}

/// The id of the transaction a recovered database goes on with.
const RESUME_ID: u64 = u64::MAX;

/// The recovered database goes on: one more transaction (a counter bumped,
/// an item inserted; under command logging as a command), a clean close, a
/// reopen: the rows must be the live ones.
fn resume(db: TxnDb, options: &TxnDbOptions) -> Result<(), CrashCheckError> {
    let step = |what: &'static str| CrashCheckError::step::<TxnError>(what);
    if options.logging.mode == LogMode::Command {
        let counter = (COUNTERS, 0);
        let bump =
            if db.rows(COUNTERS).contains_key(&RowKey(0)) { Step::Bump(counter) } else { Step::Get(counter) };
        let args = command_args(RESUME_ID, &[bump, Step::Insert((ITEMS, u64::MAX))]);
        let ticket = db.run(WorkerId(0), WORKLOAD, &args).map_err(step("resume run"))?;
        db.wait_committed(&ticket).map_err(step("resume commit"))?;
        return reopen_same(db, options);
    }
    let mut txn = db.begin(WorkerId(0));
    if let Some(row) = txn.get(COUNTERS, RowKey(0)).map_err(step("resume get"))? {
        let v = u64::from_le_bytes(row[..8].try_into().expect("8 bytes")) + 1;
        txn.put(COUNTERS, RowKey(0), &[v.to_le_bytes(), u64::MAX.to_le_bytes()].concat())
            .map_err(step("resume put"))?;
    }
    txn.insert(ITEMS, RowKey(u64::MAX), &[7; 40]).map_err(step("resume insert"))?;
    txn.commit_durably().map_err(step("resume commit"))?;
    reopen_same(db, options)
}

/// Closes `db` cleanly and opens it again: the rows must be the same.
fn reopen_same(db: TxnDb, options: &TxnDbOptions) -> Result<(), CrashCheckError> {
    let live = db_rows(&db);
    drop(db);
    let (db, _) = open_db(options).map_err(CrashCheckError::step("reopen after resume"))?;
    if db_rows(&db) != live {
        return Err(CrashCheckError::inconsistent(
            "after recovery, one transaction and a clean reopen the rows differ",
        ));
    }
    Ok(())
}

/// Recovers the database of `options` (a crash image), checks it against
/// `plan` and the acknowledged transactions, and with `resume` goes on
/// writing after it. Panics are reported as failures.
pub(crate) fn recover_and_check(
    plan: &SessionPlan,
    options: &TxnDbOptions,
    acked: &std::collections::BTreeSet<TxnId>,
    with_resume: bool,
) -> CheckResult {
    let run = || -> CheckResult {
        let (db, _) = open_db(options).map_err(CrashCheckError::step("TxnDb::open"))?;
        let verdict = check(plan, &db_rows(&db), acked);
        if with_resume && verdict.0.is_clean() {
            resume(db, options)?;
        }
        Ok(verdict)
    };
    catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|p| {
        let message = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(CrashCheckError::Panicked { what: "recovery".into(), message })
    })
}
