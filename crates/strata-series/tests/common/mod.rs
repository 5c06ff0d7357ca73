//! Shared scaffolding for the series engine's scenario tests: opening an
//! engine over each commit log and restarting it from a crash image.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use strata_declog::{DecLog, DeclogConfig, FlushMode, Recovered};
use strata_log::ssd_log::SsdLogOptions;
use strata_log::{CommitLog, LogRecord, NoLog, SerialLog};
use strata_media::fs::{FileSystem, RealFs};
use strata_pmem::{Region, RegionOffset};
use strata_series::{
    DeclogEngineOptions, DeclogOpener, EngineOptions, FieldValue, Point, SeriesEngine, SeriesStore,
};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LogKind {
    None,
    SerialPmem,
    SerialSsd,
    DeclogPmem,
}

pub const ALL_LOGS: [LogKind; 4] =
    [LogKind::None, LogKind::SerialPmem, LogKind::SerialSsd, LogKind::DeclogPmem];

/// An engine plus what it needs to be restarted.
pub struct Harness {
    pub kind: LogKind,
    pub dir: tempfile::TempDir,
    pub region: Option<Arc<Region>>,
    pub engine: Option<Arc<SeriesEngine>>,
    /// `EngineOptions::compact_above_files` of every start.
    pub compact_above_files: usize,
    /// `EngineOptions::block_span_ns` of every start.
    pub block_span_ns: Option<i64>,
}

const LOG_BASE: RegionOffset = RegionOffset(0);
pub const PMEM_LOG_BYTES: u64 = 1 << 20;
/// DecLog's area in the tests: two streams of about 1 MiB.
pub const DECLOG_BYTES: u64 = 2 << 20;

fn declog_config() -> DeclogConfig {
    DeclogConfig { queue_len: 16, key_slots: 256, ..DeclogConfig::default() }
}

fn open_log(
    kind: LogKind,
    dir: &Path,
    region: Option<&Arc<Region>>,
    fresh: bool,
) -> (Box<dyn CommitLog>, Vec<LogRecord>) {
    match kind {
        LogKind::None => (Box::new(NoLog::default()), Vec::new()),
        LogKind::SerialPmem => {
            let region = region.expect("pmem region").clone();
            if fresh {
                (Box::new(SerialLog::create_pmem(region, LOG_BASE, PMEM_LOG_BYTES, 8).unwrap()), Vec::new())
            } else {
                let (log, recs) = SerialLog::open_pmem(region, LOG_BASE).unwrap();
                (Box::new(log), recs)
            }
        }
        LogKind::DeclogPmem => unreachable!("DecLog is opened by Harness::start"),
        LogKind::SerialSsd => {
            let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
            let (log, recs) = SerialLog::open_ssd(fs, &dir.join("wal"), SsdLogOptions::default()).unwrap();
            (Box::new(log), recs)
        }
    }
}

impl Harness {
    pub fn new(kind: LogKind) -> Harness {
        Harness::with_compaction(kind, EngineOptions::new("").compact_above_files)
    }

    /// As [`Harness::new`], merging block files past `compact_above_files`.
    pub fn with_compaction(kind: LogKind, compact_above_files: usize) -> Harness {
        Harness::with_options(kind, compact_above_files, EngineOptions::new("").block_span_ns)
    }

    /// As [`Harness::with_compaction`], sealed blocks cut at spans of `block_span_ns`.
    pub fn with_options(kind: LogKind, compact_above_files: usize, block_span_ns: Option<i64>) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let region = match kind {
            LogKind::SerialPmem => Some(Arc::new(Region::sim(PMEM_LOG_BYTES + 64 * 1024))),
            LogKind::DeclogPmem => Some(Arc::new(Region::sim(DECLOG_BYTES))),
            _ => None,
        };
        let mut h = Harness { kind, dir, region, engine: None, compact_above_files, block_span_ns };
        h.start(true);
        h.engine().create_database("db").unwrap();
        h
    }

    fn start(&mut self, fresh: bool) {
        if self.kind == LogKind::DeclogPmem {
            let region = self.region.clone().expect("pmem region");
            let (log, recovered) = if fresh {
                let log = DecLog::format(region, LOG_BASE, DECLOG_BYTES, declog_config()).unwrap();
                (log, Recovered::default())
            } else {
                DecLog::open_with_mode(region, LOG_BASE, FlushMode::Threads).unwrap()
            };
            let opts = self.options();
            let opener = DeclogOpener::boxed(log, recovered, DeclogEngineOptions::default(), 2);
            let (engine, _report) = SeriesEngine::open(opts, opener, &|_, _, _| {}).unwrap();
            self.engine = Some(engine);
            return;
        }
        let (log, recs) = open_log(self.kind, self.dir.path(), self.region.as_ref(), fresh);
        let opts = self.options();
        let (engine, _report) =
            SeriesEngine::open(opts, strata_series::WalOpener::boxed(log, recs), &|_, _, _| {}).unwrap();
        self.engine = Some(engine);
    }

    fn options(&self) -> EngineOptions {
        EngineOptions {
            compact_above_files: self.compact_above_files,
            block_span_ns: self.block_span_ns,
            ..EngineOptions::new(self.dir.path().join("series"))
        }
    }

    pub fn engine(&self) -> &Arc<SeriesEngine> {
        self.engine.as_ref().unwrap()
    }

    /// Restarts as after a crash: DRAM is gone; PMem keeps only what was
    /// persisted (the simulator's persistent image); SSD files keep what
    /// the OS has (the process died, the machine did not).
    pub fn crash_restart(&mut self) {
        self.engine = None;
        if let Some(r) = &self.region {
            let image = r.as_sim().unwrap().persistent_image();
            self.region = Some(Arc::new(Region::sim_from_image(image)));
        }
        self.start(false);
    }
}

pub fn point(m: &str, host: &str, fields: Vec<(&str, FieldValue)>, ts: i64) -> Point {
    Point {
        measurement: m.into(),
        tags: vec![("host".into(), host.into())],
        fields: fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        timestamp_ns: ts,
    }
}

/// All points of `measurement`'s series with field `field`, by host.
pub fn dump(store: &dyn SeriesStore, db: &str, measurement: &str) -> Vec<(String, Vec<(i64, FieldValue)>)> {
    let series = store.series(db, measurement).unwrap();
    let ids: Vec<_> = series.iter().map(|s| s.id).collect();
    let data = store.read(db, &ids, strata_series::TimeRange::ALL).unwrap();
    series.iter().zip(data).map(|(s, d)| (format!("{:?}#{}", s.tags, s.field), d)).collect()
}
