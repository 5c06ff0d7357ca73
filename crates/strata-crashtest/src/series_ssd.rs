//! Crash test of the series engine with serial logging on SSD and
//! checkpoints, everything on the fault-injecting file system: a crash at
//! every file operation (log appends and fdatasyncs, block file writes, the
//! manifest's write-rename, segment rotation), with torn last sectors.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use crate::fs_harness::FsCrashProtocol;
use crate::oracle::AckLog;
use strata_log::ssd_log::SsdLogOptions;
use strata_log::SerialLog;
use strata_media::fs::FileSystem;
use strata_media::TxnId;
use strata_series::{EngineOptions, SeriesEngine, SeriesStore};

use crate::error::{CheckResult, CrashCheckError};
use crate::series_workload::SeriesPlan;

pub struct SeriesSsdCrash {
    pub seed: u64,
    pub checkpoint_every: u64,
    plan: SeriesPlan,
}

impl SeriesSsdCrash {
    pub fn new(seed: u64, txns: u64) -> Self {
        SeriesSsdCrash { seed, checkpoint_every: 6, plan: SeriesPlan::new(seed, txns) }
    }

    pub(crate) fn open(fs: Arc<dyn FileSystem>) -> Result<Arc<SeriesEngine>, CrashCheckError> {
        let (log, records) = SerialLog::open_ssd(fs.clone(), Path::new("/wal"), SsdLogOptions::default())
            .map_err(CrashCheckError::step("SerialLog::open_ssd"))?;
        // Two files at most: a compaction follows the checkpoint every few
        // transactions, so crashes land inside compactions too.
        let opts = EngineOptions {
            fs,
            checkpoint_interval: None,
            compact_above_files: 2,
            ..EngineOptions::new("/series")
        };
        SeriesEngine::open(opts, strata_series::WalOpener::boxed(Box::new(log), records), &|_, _, _| {})
            .map(|(e, _)| e)
            .map_err(CrashCheckError::step("SeriesEngine::open"))
    }
}

impl FsCrashProtocol for SeriesSsdCrash {
    fn name(&self) -> String {
        "series-serial".into()
    }

    fn run(&self, fs: Arc<dyn FileSystem>, acks: &AckLog) {
        let engine = Self::open(fs).expect("open");
        self.plan.run(&engine, acks, self.checkpoint_every, || {
            engine.checkpoint().expect("checkpoint");
            engine.compact().expect("compaction");
        });
    }

    fn recover_and_check(&self, fs: Arc<dyn FileSystem>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let engine = Self::open(fs)?;
        self.plan.check(Some(engine.as_ref() as &dyn SeriesStore), acked)
    }
}
