//! Crash test of the series engine with serial logging on PMem (the
//! simulator) and checkpoints to block files (on an in-memory file system).
//!
//! The block files and manifest are off PMem, so each image is recovered
//! with the file-system state as of the crash point: a checkpoint's file
//! operations run with no PMem operation in between, so the state is the one
//! after the last checkpoint whose file work began before the crash point.
//! (Crashes in the middle of the file work are the SSD line's subject.)

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::oracle::AckLog;
use crate::pmem_harness::PmemCrashProtocol;
use parking_lot::Mutex;
use strata_log::pmem_log::{PmemLog, PMEM_LOG_MAGIC};
use strata_log::{CommitLog, SerialLog};
use strata_media::fs::{FaultFs, FileSystem, Tear};
use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};
use strata_series::{EngineOptions, SeriesEngine, SeriesStore};

use crate::error::{CheckResult, CrashCheckError};
use crate::series_workload::SeriesPlan;

const LOG_BASE: RegionOffset = RegionOffset(0);

pub struct SeriesPmemCrash {
    pub seed: u64,
    pub txns: u64,
    pub checkpoint_every: u64,
    pub log_capacity_bytes: u64,
    /// (sim ops when a checkpoint began, file system after it), in run order.
    snapshots: Mutex<Vec<(u64, FaultFs)>>,
    plan: SeriesPlan,
}

impl SeriesPmemCrash {
    pub fn new(seed: u64, txns: u64) -> Self {
        SeriesPmemCrash {
            seed,
            txns,
            checkpoint_every: 9,
            log_capacity_bytes: 8192,
            snapshots: Mutex::new(Vec::new()),
            plan: SeriesPlan::new(seed, txns),
        }
    }

    fn options() -> EngineOptions {
        // Two files at most, so the compaction after each checkpoint merges
        // block files.
        EngineOptions { checkpoint_interval: None, compact_above_files: 2, ..EngineOptions::new("/series") }
    }
}

impl PmemCrashProtocol for SeriesPmemCrash {
    fn name(&self) -> String {
        "series-serial".into()
    }

    fn region_len(&self) -> u64 {
        LOG_BASE.0 + PmemLog::footprint_bytes(self.log_capacity_bytes)
    }

    fn run(&self, region: &Arc<Region>, acks: &AckLog) {
        let sim = region.as_sim().expect("sim");
        let fs = FaultFs::new();
        let mut snapshots = vec![(0, fs.crash(Tear::None))];
        let log =
            SerialLog::create_pmem(region.clone(), LOG_BASE, self.log_capacity_bytes, 8).expect("format");
        let mut opts = Self::options();
        opts.fs = Arc::new(fs.clone());
        let (engine, _) = SeriesEngine::open(
            opts,
            strata_series::WalOpener::boxed(Box::new(log), Vec::new()),
            &|_, _, _| {},
        )
        .expect("open");
        self.plan.run(&engine, acks, self.checkpoint_every, || {
            let began = sim.ops();
            engine.checkpoint().expect("checkpoint");
            engine.compact().expect("compaction");
            snapshots.push((began, fs.crash(Tear::None)));
        });
        *self.snapshots.lock() = snapshots;
    }

    fn recover_and_check_at(
        &self,
        region: &Arc<Region>,
        acked: &BTreeSet<TxnId>,
        crash_op: u64,
    ) -> CheckResult {
        let fs = {
            let snaps = self.snapshots.lock();
            let (_, fs) = snaps.iter().rev().find(|(began, _)| *began < crash_op).expect("initial snapshot");
            fs.crash(Tear::None)
        };
        if region.load_u64(LOG_BASE) != PMEM_LOG_MAGIC {
            // The crash came before the log was formatted: nothing was acknowledged.
            return self.plan.check(None, acked);
        }
        let (log, records) = SerialLog::open_pmem(region.clone(), LOG_BASE)
            .map_err(CrashCheckError::step("SerialLog::open_pmem"))?;
        let mut opts = Self::options();
        opts.fs = Arc::new(fs) as Arc<dyn FileSystem>;
        let log: Box<dyn CommitLog> = Box::new(log);
        let (engine, _) =
            SeriesEngine::open(opts, strata_series::WalOpener::boxed(log, records), &|_, _, _| {})
                .map_err(CrashCheckError::step("SeriesEngine::open"))?;
        self.plan.check(Some(engine.as_ref() as &dyn SeriesStore), acked)
    }
}
