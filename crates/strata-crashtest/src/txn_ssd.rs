//! The SSD crash lines of transactional tables (`txn-*/ssd`, listed in
//! `crate::txn_lines`): the workload of
//! `crate::txn_workload`, driven by `crate::txn_driver`, on log files of the
//! fault-injecting file system, crashed at every mutating file operation by
//! `crate::fs_harness` (acknowledgements stamped with the file system's
//! last mutation, so an image must hold what was acknowledged before it).
//!
//! The log managers' appends of a wave of several transactions (every wave
//! of a Silo-R line) pass the gate of `crate::txn_gate_fs` one log at a
//! time, in a seeded order, so the run, and each crash point, is the same
//! every time; a Silo-R wave's epoch marks follow, appended by the wait
//! itself (on demand), one log after the other.
//!
//! Each session is a fresh database in its own directory `/db/s<n>`
//! (logs grow without checkpoints; short sessions keep an image's recovery
//! short). An image is recovered from the newest session directory it
//! holds, and checked against that session's transactions.
//!
//! Its tests check that anchored sessions reach an LV anchor, and hold the
//! regression test of an acknowledged transaction once lost with an anchor
//! (recovery cut a log before an anchor a committed LV named), which needs
//! the gate.

use crate::error::CrashCheckError;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use strata_media::fs::FileSystem;
use strata_media::TxnId;
use strata_txn::planted::PlantedBug;
use strata_txn::LogDeviceKind;

use crate::error::CheckResult;
use crate::fs_harness::FsCrashProtocol;
use crate::oracle::{AckLog, OracleCounts};
use crate::txn_driver::{db_options, recover_and_check, run_session, WaveMedium};
use crate::txn_gate_fs::{Gate, GateFs};
use crate::txn_lines::TxnLogging;
use crate::txn_workload::SessionPlan;

fn session_dir(session: usize) -> PathBuf {
    PathBuf::from(format!("/db/s{session:03}"))
}

pub struct TxnSsdCrash {
    pub seed: u64,
    pub logging: TxnLogging,
    bug: PlantedBug,
    plans: Vec<SessionPlan>,
    /// Why the run itself failed, reported on every image.
    failure: Mutex<Option<String>>,
    /// The recovered database also goes on writing on the images of crash
    /// points with a multiple of this many acknowledgements before them (a
    /// function of the point, so a failure reproduces).
    pub resume_every: u64,
}

impl TxnSsdCrash {
    /// `sessions` sessions of `txns` transactions each (and the bulk ones
    /// of anchored sessions).
    pub fn new(seed: u64, logging: TxnLogging, sessions: usize, txns: usize) -> Self {
        let plans = SessionPlan::sessions(seed, logging, sessions, txns);
        TxnSsdCrash {
            seed,
            logging,
            bug: PlantedBug::None,
            plans,
            failure: Mutex::new(None),
            resume_every: 8,
        }
    }

    /// Runs and recovers with `bug` planted in `strata-txn`.
    pub fn with_planted_bug(mut self, bug: PlantedBug) -> Self {
        self.bug = bug;
        self
    }
}

struct SsdMedium<'a> {
    gate: Arc<Gate>,
    acks: &'a AckLog,
}

impl WaveMedium for SsdMedium<'_> {
    fn begin_wave(&self, several: bool) {
        if several {
            self.gate.close();
        }
    }

    fn flush(&self, order: &[(usize, u64)]) -> Result<(), CrashCheckError> {
        for &(log, end) in order {
            self.gate.let_through(log, end)?;
        }
        self.gate.open();
        Ok(())
    }

    fn ack(&self, txn: TxnId) {
        self.acks.ack(txn);
    }

    fn quiet(&self) -> Result<(), CrashCheckError> {
        Ok(())
    }

    fn abort(&self) {
        self.gate.open();
    }
}

impl FsCrashProtocol for TxnSsdCrash {
    fn name(&self) -> String {
        self.logging.name()
    }

    fn run(&self, fs: Arc<dyn FileSystem>, acks: &AckLog) {
        let gate = Arc::new(Gate::default());
        let gated: Arc<dyn FileSystem> = Arc::new(GateFs::new(fs, gate.clone()));
        let medium = SsdMedium { gate, acks };
        for plan in &self.plans {
            let device = LogDeviceKind::Ssd { fs: gated.clone(), dir: session_dir(plan.index) };
            let options = db_options(self.logging, device, self.bug);
            if let Err(e) = run_session(plan, &options, &medium, self.seed) {
                *self.failure.lock() = Some(format!("seed {}: session {}: {e}", self.seed, plan.index));
                return;
            }
        }
    }

    fn recover_and_check(&self, fs: Arc<dyn FileSystem>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let (mut counts, why) = self.check_image(fs, acked)?;
        // A failed run (stopped at the failure) fails every image; the
        // images it reached are still judged.
        let failure = self.failure.lock().clone().map(|f| format!("the run failed: {f}"));
        if failure.is_some() {
            counts.partial += 1;
        }
        Ok((counts, why.or(failure)))
    }
}

impl TxnSsdCrash {
    fn check_image(&self, fs: Arc<dyn FileSystem>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let Some(plan) = self.plans.iter().rev().find(|p| fs.exists(&session_dir(p.index))) else {
            // Before the first session: nothing was acknowledged.
            let lost = acked.len() as u64;
            return Ok((
                OracleCounts { lost, ..Default::default() },
                (lost > 0).then(|| "no database".into()),
            ));
        };
        let device = LogDeviceKind::Ssd { fs, dir: session_dir(plan.index) };
        let options = db_options(self.logging, device, self.bug);
        let resume = (acked.len() as u64).is_multiple_of(self.resume_every);
        let (counts, why) = recover_and_check(plan, &options, acked, resume)?;
        Ok((counts, why.map(|w| format!("seed {} session {}: {w}", self.seed, plan.index))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_media::FaultFs;
    use strata_txn::TxnDb;

    /// An anchored session takes every log past its first LV anchor (so the
    /// records after it are compressed): `strata-txn` places one every
    /// 64 KiB of a log, which the bulk transactions are sized for.
    #[test]
    fn anchored_sessions_take_every_log_past_an_anchor() {
        let logging = TxnLogging::Taurus { logs: 4 };
        let line = TxnSsdCrash::new(3, logging, 3, 20);
        assert!(SessionPlan::anchored(logging, 2) && !SessionPlan::anchored(logging, 1));
        let fs: Arc<dyn FileSystem> = Arc::new(FaultFs::new());
        line.run(fs.clone(), &AckLog::new(|| 0));
        assert_eq!(*line.failure.lock(), None);
        for (session, want) in [(1, 0), (2, logging.logs() as u64)] {
            let device = LogDeviceKind::Ssd { fs: fs.clone(), dir: session_dir(session) };
            let (_, report) =
                TxnDb::open(&db_options(logging, device, PlantedBug::None), crate::txn_workload::schemas())
                    .unwrap();
            assert!(
                report.anchors >= want && (want > 0 || report.anchors == 0),
                "session {session}: {report:?}"
            );
        }
    }

    /// The command lines' small anchor interval takes every log of every
    /// session past anchors (their records are commands, a tenth of a KiB).
    #[test]
    fn command_sessions_pass_anchors_in_every_log() {
        let logging = TxnLogging::TaurusCommand { logs: 2 };
        let line = TxnSsdCrash::new(3, logging, 2, 60);
        let fs: Arc<dyn FileSystem> = Arc::new(FaultFs::new());
        line.run(fs.clone(), &AckLog::new(|| 0));
        assert_eq!(*line.failure.lock(), None);
        for session in 0..2 {
            let device = LogDeviceKind::Ssd { fs: fs.clone(), dir: session_dir(session) };
            let (_, report) =
                crate::txn_driver::open_db(&db_options(logging, device, PlantedBug::None)).unwrap();
            assert!(report.anchors >= 2 * logging.logs() as u64, "session {session}: {report:?}");
        }
    }

    /// The run is the same every time: the same file-system operations,
    /// crash points and acknowledgements (what reproducing a failure from
    /// its seed needs), for the lines whose waves the driver orders itself:
    /// Silo-R's epochs advance only when its waits ask (on demand).
    #[test]
    fn a_run_is_the_same_every_time() {
        for logging in [TxnLogging::SiloR { logs: 2 }, TxnLogging::TaurusCommand { logs: 2 }] {
            let run = || {
                let line = TxnSsdCrash::new(5, logging, 2, 30);
                let fault = FaultFs::with_tear_seed(5);
                let clock = fault.clone();
                let acks = AckLog::new(move || clock.last_mutation_op());
                fault.capture_crash_points(true);
                line.run(Arc::new(fault.clone()), &acks);
                assert_eq!(*line.failure.lock(), None, "{logging:?}");
                let points: Vec<(u64, u64)> =
                    fault.crash_points().iter().map(|p| (p.op(), p.image_count())).collect();
                let acked: Vec<usize> = points.iter().map(|(op, _)| acks.acked_by(*op).len()).collect();
                (points, acked)
            };
            let (first, again) = (run(), run());
            assert!(first.0.len() > 100, "{logging:?}: {} crash points", first.0.len());
            assert_eq!(first, again, "{logging:?}");
        }
    }

    /// Suspected with the gate, not yet seen on a line: anchors commit as
    /// soon as they are flushed, so a log's committed end can be an
    /// anchor's end while the record appended with it waits for a
    /// dependency. A transaction of another log, compressed against a later
    /// anchor that holds that end, then commits (and is acknowledged)
    /// requiring the first log up to the anchor; if the crash loses the
    /// dependency, recovery cuts the first log before the anchor (its record
    /// goes) and with it drops the acknowledged transaction.
    #[test]
    fn an_acknowledged_transaction_compressed_against_an_uncommitted_anchor_survives() {
        use strata_media::fs::Tear;
        use strata_txn::{RowKey, TableId, TableSchema, TxnDbOptions, WorkerId};

        const ROWS: TableId = TableId(0);
        let fault = FaultFs::new();
        let gate = Arc::new(Gate::default());
        let fs: Arc<dyn FileSystem> = Arc::new(GateFs::new(Arc::new(fault.clone()), gate.clone()));
        let kind = strata_txn::LoggingKind::Taurus { logs: 3 };
        let mut options = TxnDbOptions::new(kind, LogDeviceKind::Ssd { fs, dir: "/db".into() }, 3);
        options.logging.buffer_bytes = 1 << 16;
        let schemas = vec![TableSchema { name: "rows".into(), row_bytes: 4096 }];
        let (db, _) = TxnDb::open(&options, schemas.clone()).unwrap();
        let put = |worker: u32, key: u64| {
            let mut txn = db.begin(WorkerId(worker));
            txn.insert(ROWS, RowKey(key), &[key as u8; 4096]).unwrap();
            txn.commit().unwrap()
        };
        // Logs 1 and 2 just past 64 KiB: their next appends place anchors.
        for worker in [1, 2] {
            let mut key = u64::from(worker) << 32;
            while fault.peek(&PathBuf::from(format!("/db/log-{worker}"))).map_or(0, |b| b.len())
                < strata_txn::log::ANCHOR_EVERY_BYTES as usize
            {
                db.wait_committed(&put(worker, key)).unwrap();
                key += 1;
            }
        }
        gate.close();
        // V (log 0) is held at the gate: never durable.
        let v = put(0, 1);
        // R (log 1) reads V's row; its append is an anchor and R.
        let mut r = db.begin(WorkerId(1));
        r.get(ROWS, RowKey(1)).unwrap();
        r.insert(ROWS, RowKey(2), &[2; 4096]).unwrap();
        let r = r.commit().unwrap();
        let (_, r_end) = r.record.unwrap();
        gate.let_through(1, r_end).unwrap();
        // The anchor committed at once (R waits for V).
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!db.is_committed(&r));
        // T (log 2) touches nothing of the others: its append is an anchor
        // holding log 1's committed end (the first anchor's end), and T.
        let t = put(2, 3);
        gate.let_through(2, t.record.unwrap().1).unwrap();
        db.wait_committed(&t).unwrap();
        assert!(!db.is_committed(&v));
        // The crash: V never written.
        let image = fault.crash(Tear::None);
        gate.open();
        drop(db);
        options.logging.device = LogDeviceKind::Ssd { fs: Arc::new(image), dir: "/db".into() };
        let (db, _) = TxnDb::open(&options, schemas).unwrap();
        let rows = db.rows(ROWS);
        assert!(!rows.contains_key(&RowKey(1)) && !rows.contains_key(&RowKey(2)), "V and R were not durable");
        assert!(rows.contains_key(&RowKey(3)), "T was acknowledged: it must survive");
    }
}
