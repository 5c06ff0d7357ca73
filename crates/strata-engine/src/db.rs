//! [`Db`]: one data directory opened with one configuration. Opens the PMem
//! pool (when the protocol logs to PMem), the commit log, and the series
//! engine with recovery; creates the default database; runs the background
//! checkpointer (by log size and by time).
//!
//! Data directory layout:
//! - `pmem.pool`: the PMem pool (`docs/format/pmem-pool.md`);
//! - `wal/`: SSD log segments (`docs/format/ssd-log.md`);
//! - `series/`: the manifest and block files (`docs/format/manifest.md`,
//!   `docs/format/block-file.md`);
//! - `streams/<db>/<stream>/`: event streams ([`crate::streams`],
//!   `docs/format/events-catalog.md`), recovered at open after the series
//!   engine; [`Db::store`] routes between the two.
//!
//! Switching protocols between runs is allowed once the old log holds
//! nothing past the last checkpoint (a graceful shutdown checkpoints);
//! otherwise opening fails and says how to drain it.

use std::path::Path;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use strata_declog::{DecLog, FlushMode, Recovered};
use strata_log::ssd_log::SsdLogOptions;
use strata_log::{CommitLog, LogRecord, Lsn, NoLog, SerialLog};
use strata_media::fs::{FileSystem, RealFs};
use strata_pmem::{PmemMode, Region, RegionOffset, RegionOptions};
use strata_series::manifest::{read_manifest, Manifest};
use strata_series::DeclogEngineOptions;
use strata_series::{EngineError, EngineOptions, RecoveryPhase, RecoveryReport, SeriesEngine, SeriesStore};
use thiserror::Error;

use crate::config::{Config, ConfigError, Protocol};
use crate::pool::open_pool_log;
use crate::streams::router::RoutingStore;
use crate::streams::{NewStreamSettings, PmemSettings, Streams, StreamsRecovery};

#[derive(Debug, Error)]
pub enum DbError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("PMem pool {path}: {message}")]
    Pool { path: String, message: String },
    #[error("{0}")]
    Other(String),
}

pub struct Db {
    /// Held while open: a second process on the same directory would
    /// interleave its log writes with ours.
    _lock: std::fs::File,
    config: Config,
    engine: Arc<SeriesEngine>,
    region: Option<Arc<Region>>,
    recovery: RecoveryReport,
    store: Arc<RoutingStore>,
    streams_recovery: StreamsRecovery,
    stop: Arc<AtomicBool>,
    checkpointer: Mutex<Option<JoinHandle<()>>>,
}

impl Db {
    /// Opens (creating if needed) the data directory of `config`.
    pub fn open(config: &Config, progress: &dyn Fn(RecoveryPhase, u64, u64)) -> Result<Db, DbError> {
        config.validate()?;
        let protocol = config.protocol()?;
        let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
        fs.create_dir_all(&config.data_dir).map_err(EngineError::from)?;
        let series_dir = config.series_dir();
        let lock = Self::lock_data_dir(config)?;
        let manifest = read_manifest(fs.as_ref(), &series_dir)?;
        Self::drain_other_logs(config, protocol, manifest.as_ref())?;
        let mut region = None;
        let mut opts = EngineOptions::new(series_dir);
        opts.fs = fs.clone();
        opts.max_series_per_database =
            (config.storage.max_series_per_database > 0).then_some(config.storage.max_series_per_database);
        opts.checkpoint_log_bytes = match protocol {
            // Leave room in the ring for the commits that arrive while a checkpoint runs.
            Protocol::SerialPmem => config.storage.checkpoint_log_bytes.min(config.pmem.log_bytes / 2),
            Protocol::DeclogPmem | Protocol::DeclogSsd => {
                config.storage.checkpoint_log_bytes.min(config.declog.file_bytes / 4)
            }
            _ => config.storage.checkpoint_log_bytes,
        };
        opts.checkpoint_interval = (config.storage.checkpoint_interval_s > 0)
            .then(|| Duration::from_secs(config.storage.checkpoint_interval_s));
        if protocol.is_declog() {
            if !config.declog.checkpoints {
                opts.checkpoint_log_bytes = u64::MAX;
                opts.checkpoint_interval = None;
            }
            let r = Self::open_declog_region(config, protocol)?;
            let (log, recovered) = Self::open_declog(config, protocol, r.clone())?;
            let options = DeclogEngineOptions {
                name: protocol.name(),
                data_driven_lsn: config.declog.data_driven_lsn,
                checkpoints: config.declog.checkpoints,
            };
            let (engine, recovery) = SeriesEngine::open_declog(
                opts,
                log,
                recovered,
                options,
                config.declog.replay_threads,
                progress,
            )?;
            return Self::finish(config, lock, engine, Some(r), recovery);
        }
        let (log, replay): (Box<dyn CommitLog>, Vec<LogRecord>) = match protocol {
            Protocol::None => {
                let start = manifest.as_ref().map_or(0, |m| m.checkpoint_lsn);
                (Box::new(NoLog::starting_at(Lsn(start))), Vec::new())
            }
            Protocol::SerialPmem => {
                let r = Self::open_region(config)?;
                let (log, records, _) =
                    open_pool_log(r.clone(), config.pmem.log_bytes).map_err(|message| DbError::Pool {
                        path: config.pool_path().display().to_string(),
                        message,
                    })?;
                region = Some(r);
                (Box::new(log), records)
            }
            Protocol::SerialSsd => {
                let (log, records) =
                    SerialLog::open_ssd(fs.clone(), &config.wal_dir(), Self::ssd_options(config))
                        .map_err(EngineError::from)?;
                (Box::new(log), records)
            }
            Protocol::DeclogPmem | Protocol::DeclogSsd => unreachable!("opened above"),
        };
        let (engine, recovery) = SeriesEngine::open(opts, log, replay, progress)?;
        Self::finish(config, lock, engine, region, recovery)
    }

    fn finish(
        config: &Config,
        lock: std::fs::File,
        engine: Arc<SeriesEngine>,
        region: Option<Arc<Region>>,
        recovery: RecoveryReport,
    ) -> Result<Db, DbError> {
        if !config.storage.default_database.is_empty() {
            engine.create_database(&config.storage.default_database)?;
        }
        let (streams, streams_recovery) = Self::open_streams(config, &engine)?;
        let store = Arc::new(RoutingStore::new(engine.clone(), Arc::new(streams)));
        let db = Db {
            _lock: lock,
            config: config.clone(),
            engine,
            region,
            recovery,
            store,
            streams_recovery,
            stop: Arc::new(AtomicBool::new(false)),
            checkpointer: Mutex::new(None),
        };
        Ok(db)
    }

    /// Recovers every event stream of the data directory (after the series
    /// engine) and makes sure their databases exist in the series engine.
    fn open_streams(config: &Config, engine: &SeriesEngine) -> Result<(Streams, StreamsRecovery), DbError> {
        let st = &config.streams;
        let settings = NewStreamSettings {
            placement: config.stream_placement()?,
            flank_batch_events: st.flank_batch_events,
            max_leaf_nodes: st.max_leaf_nodes,
            max_index_nodes: st.max_index_nodes,
            queue_capacity_bytes: st.queue_capacity_bytes,
        };
        let pmem = PmemSettings {
            mode: config.pmem_mode()?,
            flush_delay_ns_per_line: config.pmem.flush_delay_ns_per_line,
            fence_delay_ns: config.pmem.fence_delay_ns,
        };
        let (streams, report) = Streams::open(&config.streams_dir(), settings, pmem)?;
        for s in streams.all() {
            engine.create_database(&s.catalog.db)?;
        }
        Ok((streams, report))
    }

    /// The DecLog file: emulated PMem (`declog-pmem`, the pool's mode) or an
    /// msync-persisted file on the SSD (`declog-ssd`).
    fn open_declog_region(config: &Config, protocol: Protocol) -> Result<Arc<Region>, DbError> {
        let mode = match protocol {
            Protocol::DeclogSsd => PmemMode::Msync,
            _ => config.pmem_mode()?,
        };
        let mut ro = RegionOptions::new(mode, config.declog.file_bytes);
        ro.flush_delay_ns_per_line = config.pmem.flush_delay_ns_per_line;
        ro.fence_delay_ns = config.pmem.fence_delay_ns;
        let path = config.declog_path(protocol);
        Region::open(&path, &ro)
            .map(Arc::new)
            .map_err(|e| DbError::Pool { path: path.display().to_string(), message: e.to_string() })
    }

    /// Opens (formatting a new file) DecLog at the start of `region`.
    fn open_declog(
        config: &Config,
        protocol: Protocol,
        region: Arc<Region>,
    ) -> Result<(DecLog, Recovered), DbError> {
        let path = config.declog_path(protocol).display().to_string();
        let fail =
            |e: strata_declog::DeclogError| DbError::Pool { path: path.clone(), message: e.to_string() };
        if region.load_u64(RegionOffset(0)) == 0 {
            let len = region.len();
            let log = DecLog::format(region, RegionOffset(0), len, config.declog_config()).map_err(fail)?;
            return Ok((log, Recovered::default()));
        }
        DecLog::open_with_mode(region, RegionOffset(0), FlushMode::Threads).map_err(fail)
    }

    fn open_region(config: &Config) -> Result<Arc<Region>, DbError> {
        let mut ro = RegionOptions::new(config.pmem_mode()?, config.pmem.pool_bytes);
        ro.flush_delay_ns_per_line = config.pmem.flush_delay_ns_per_line;
        ro.fence_delay_ns = config.pmem.fence_delay_ns;
        let path = config.pool_path();
        Region::open(&path, &ro)
            .map(Arc::new)
            .map_err(|e| DbError::Pool { path: path.display().to_string(), message: e.to_string() })
    }

    fn ssd_options(config: &Config) -> SsdLogOptions {
        SsdLogOptions {
            max_batch_bytes: config.ssd_log.max_batch_bytes,
            max_wait: Duration::from_micros(config.ssd_log.max_wait_us),
            ..SsdLogOptions::default()
        }
    }

    /// Takes the data directory's `LOCK` file (an exclusive advisory lock,
    /// released when the process exits, however it exits).
    fn lock_data_dir(config: &Config) -> Result<std::fs::File, DbError> {
        let path = config.data_dir.join("LOCK");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| DbError::Other(format!("cannot open {}: {e}", path.display())))?;
        match file.try_lock() {
            Ok(()) => Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => Err(DbError::Other(format!(
                "data directory {} is in use by another strata process (lock {} is held)",
                config.data_dir.display(),
                path.display()
            ))),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(DbError::Other(format!("cannot lock {}: {e}", path.display())))
            }
        }
    }

    /// The logs of the other protocols must hold nothing the manifest does
    /// not cover, or those acknowledged writes would be lost by opening with
    /// this protocol; what they do hold (records a checkpoint covers) is
    /// erased now, so that switching back later never replays it.
    fn drain_other_logs(
        config: &Config,
        protocol: Protocol,
        manifest: Option<&Manifest>,
    ) -> Result<(), DbError> {
        for other in [Protocol::SerialPmem, Protocol::SerialSsd] {
            let exists = match other {
                Protocol::SerialPmem => config.pool_path().exists(),
                _ => config.wal_dir().exists(),
            };
            if other == protocol || !exists {
                continue;
            }
            let covered = manifest.filter(|m| m.protocol == other.name()).map_or(0, |m| m.checkpoint_lsn);
            let (log, records): (Box<dyn CommitLog>, Vec<LogRecord>) = match other {
                Protocol::SerialPmem => {
                    let r = Self::open_region(config)?;
                    let (log, records, _) = open_pool_log(r, config.pmem.log_bytes).map_err(|message| {
                        DbError::Pool { path: config.pool_path().display().to_string(), message }
                    })?;
                    (Box::new(log), records)
                }
                _ => {
                    let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
                    let (log, records) =
                        SerialLog::open_ssd(fs, &config.wal_dir(), Self::ssd_options(config))
                            .map_err(EngineError::from)?;
                    (Box::new(log), records)
                }
            };
            let pending = records.iter().filter(|r| r.lsn.0 > covered).count();
            if pending > 0 {
                let old = other.name();
                return Err(DbError::Other(format!(
                    "the {old} log in {} holds {pending} transactions that no checkpoint covers; start once \
                     with `--protocol {old}` and stop it gracefully (Ctrl-C checkpoints), or run \
                     `strata recover --protocol {old} --checkpoint`, then switch to {}",
                    config.data_dir.display(),
                    protocol.name()
                )));
            }
            if !records.is_empty() {
                log.truncate_all().map_err(EngineError::from)?;
            }
        }
        for other in [Protocol::DeclogPmem, Protocol::DeclogSsd] {
            if other == protocol || !config.declog_path(other).exists() {
                continue;
            }
            let region = Self::open_declog_region(config, other)?;
            if region.load_u64(RegionOffset(0)) == 0 {
                continue;
            }
            let (log, recovered) = Self::open_declog(config, other, region)?;
            let cut = manifest
                .filter(|m| m.protocol == other.name() && m.declog_cut.len() == recovered.streams.len())
                .map(|m| m.declog_cut.clone())
                .unwrap_or_else(|| vec![0; recovered.streams.len()]);
            let all = recovered.inserts.iter().chain(recovered.updates.values().flatten());
            let pending: std::collections::BTreeSet<_> =
                all.filter(|e| e.pos >= cut[e.stream]).map(|e| e.txn).collect();
            if !pending.is_empty() {
                let old = other.name();
                return Err(DbError::Other(format!(
                    "the {old} log in {} holds {} transactions that no checkpoint covers; start once \
                     with `--protocol {old}` and stop it gracefully (Ctrl-C checkpoints), or run \
                     `strata recover --protocol {old} --checkpoint`, then switch to {}",
                    config.data_dir.display(),
                    pending.len(),
                    protocol.name()
                )));
            }
            if recovered.entry_count() > 0 {
                log.truncate_all()
                    .map_err(|e| DbError::Other(format!("erasing the {} log: {e}", other.name())))?;
            }
        }
        Ok(())
    }

    /// Starts the background checkpointer: checks every 100 ms whether the
    /// log passed its size threshold or the interval passed with new writes.
    pub fn start_background_checkpoints(&self) {
        let engine = self.engine.clone();
        let streams = self.streams().clone();
        let stop = self.stop.clone();
        let by_bytes = engine.options().checkpoint_log_bytes;
        let interval = engine.options().checkpoint_interval;
        let handle = std::thread::Builder::new()
            .name("strata-checkpoint".into())
            .spawn(move || {
                let mut last = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    let pending = engine.log_bytes_since_checkpoint();
                    let due_by_time = interval.is_some_and(|i| last.elapsed() >= i) && pending > 0;
                    if pending >= by_bytes || due_by_time {
                        match engine.checkpoint() {
                            Ok(r) => eprintln!("strata: {r}"),
                            Err(e) => eprintln!("strata: background checkpoint failed: {e}"),
                        }
                        if let Err(e) = streams.sync_to_media() {
                            eprintln!("strata: syncing the event streams to media failed: {e}");
                        }
                        last = Instant::now();
                    }
                }
            })
            .expect("spawn checkpoint thread");
        *self.checkpointer.lock() = Some(handle);
    }

    /// Stops the background checkpointer (if running).
    pub fn stop_background_checkpoints(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.checkpointer.lock().take() {
            let _ = h.join();
        }
    }

    pub fn engine(&self) -> &Arc<SeriesEngine> {
        &self.engine
    }

    /// The store `strata serve` uses: series through [`Db::engine`], event
    /// streams through the stream catalog.
    pub fn store(&self) -> &Arc<RoutingStore> {
        &self.store
    }

    /// The stream catalog of the data directory.
    pub fn streams(&self) -> &Arc<Streams> {
        self.store.catalog()
    }

    /// What opening the event streams found (one line per stream, with its time).
    pub fn streams_recovery(&self) -> &StreamsRecovery {
        &self.streams_recovery
    }

    pub fn region(&self) -> Option<&Arc<Region>> {
        self.region.as_ref()
    }

    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn data_dir(&self) -> &Path {
        &self.config.data_dir
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        self.stop_background_checkpoints();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_sized_exactly_by_validate_opens() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Config { data_dir: dir.path().to_path_buf(), ..Config::default() };
        c.pmem.log_bytes = 1 << 20;
        c.pmem.pool_bytes =
            crate::pool::POOL_HEADER_BYTES + strata_log::pmem_log::PmemLog::footprint_bytes(c.pmem.log_bytes);
        let db = Db::open(&c, &|_, _, _| {}).expect("a pool validate accepts must open");
        assert_eq!(db.engine().databases(), vec!["strata".to_string()]);
    }

    fn config(dir: &Path, protocol: Protocol) -> Config {
        let mut c = Config { data_dir: dir.to_path_buf(), ..Config::default() };
        c.storage.protocol = protocol.name().into();
        c.pmem.log_bytes = 1 << 20;
        c.pmem.pool_bytes = 2 << 20;
        c
    }

    fn write(db: &Db, m: &str, v: strata_series::FieldValue, ts: i64) {
        let p = strata_series::Point {
            measurement: m.into(),
            tags: vec![],
            fields: vec![("f".into(), v)],
            timestamp_ns: ts,
        };
        db.engine().write("strata", &[p]).unwrap();
    }

    fn count(db: &Db, m: &str) -> usize {
        let ids: Vec<_> = db.engine().series("strata", m).unwrap().iter().map(|s| s.id).collect();
        db.engine().read("strata", &ids, strata_series::TimeRange::ALL).unwrap().concat().len()
    }

    #[test]
    fn a_second_process_cannot_open_the_same_directory() {
        let dir = tempfile::tempdir().unwrap();
        let _db = Db::open(&config(dir.path(), Protocol::SerialSsd), &|_, _, _| {}).unwrap();
        let err =
            Db::open(&config(dir.path(), Protocol::SerialSsd), &|_, _, _| {}).err().unwrap().to_string();
        assert!(err.contains("in use by another strata process"), "{err}");
    }

    #[test]
    fn switching_protocols_never_loses_or_replays_stale_records() {
        use strata_series::FieldValue::{Float, Integer};
        let dir = tempfile::tempdir().unwrap();
        let (pmem, ssd) = (config(dir.path(), Protocol::SerialPmem), config(dir.path(), Protocol::SerialSsd));
        let db = Db::open(&pmem, &|_, _, _| {}).unwrap();
        for ts in 0..3 {
            write(&db, "k", Float(ts as f64), ts);
        }
        drop(db); // a crash: no checkpoint
        let err =
            Db::open(&ssd, &|_, _, _| {}).err().expect("uncovered PMem records block the switch").to_string();
        assert!(err.contains("transactions that no checkpoint covers"), "{err}");
        let db = Db::open(&pmem, &|_, _, _| {}).unwrap();
        assert_eq!(count(&db, "k"), 3);
        db.engine().checkpoint().unwrap();
        drop(db);
        let db = Db::open(&ssd, &|_, _, _| {}).unwrap();
        assert_eq!(count(&db, "k"), 3, "the checkpoint carried the data across the switch");
        write(&db, "z", Integer(100), 1);
        db.engine().checkpoint().unwrap();
        drop(db);
        let db = Db::open(&pmem, &|_, _, _| {}).unwrap();
        assert_eq!(
            (count(&db, "k"), count(&db, "z")),
            (3, 1),
            "no stale PMem record replayed over newer data"
        );
        write(&db, "z", Integer(7), 2);
        drop(db);
        let db = Db::open(&pmem, &|_, _, _| {}).unwrap();
        assert_eq!(count(&db, "z"), 2);
    }

    #[test]
    fn declog_protocols_recover_and_switch_with_the_serial_ones() {
        use strata_series::FieldValue::Float;
        let dir = tempfile::tempdir().unwrap();
        let mut declog = config(dir.path(), Protocol::DeclogPmem);
        declog.declog.file_bytes = 8 << 20;
        let mut declog_ssd = declog.clone();
        declog_ssd.storage.protocol = Protocol::DeclogSsd.name().into();
        let serial = config(dir.path(), Protocol::SerialPmem);
        let db = Db::open(&declog, &|_, _, _| {}).unwrap();
        assert_eq!(db.engine().protocol(), "declog-pmem");
        for ts in 0..5 {
            write(&db, "k", Float(ts as f64), ts);
        }
        drop(db); // a crash: no checkpoint
        for other in [&serial, &declog_ssd] {
            let err =
                Db::open(other, &|_, _, _| {}).err().expect("uncovered DecLog entries block").to_string();
            assert!(err.contains("transactions that no checkpoint covers"), "{err}");
        }
        let db = Db::open(&declog, &|_, _, _| {}).unwrap();
        assert_eq!(count(&db, "k"), 5, "replayed from the DecLog file");
        assert!(db.recovery().points_replayed >= 5, "{}", db.recovery());
        db.engine().checkpoint().unwrap();
        drop(db);
        let db = Db::open(&declog_ssd, &|_, _, _| {}).unwrap();
        assert_eq!(count(&db, "k"), 5);
        write(&db, "k", Float(9.0), 9);
        drop(db);
        let db = Db::open(&declog_ssd, &|_, _, _| {}).unwrap();
        assert_eq!(count(&db, "k"), 6, "DecLog-SSD replays too");
        db.engine().checkpoint().unwrap();
        drop(db);
        let db = Db::open(&serial, &|_, _, _| {}).unwrap();
        assert_eq!(count(&db, "k"), 6, "no stale DecLog entry lost or replayed");
        db.engine().checkpoint().unwrap();
        drop(db);
        let db = Db::open(&declog, &|_, _, _| {}).unwrap();
        assert_eq!(count(&db, "k"), 6, "switching back erased nothing it should keep");
    }
}
