//! [`Db`]: one data directory opened with one configuration. Opens the PMem
//! pool (when the protocol logs to PMem), the commit log, and the series
//! engine with recovery; creates the default database; runs the background
//! checkpointer (by log size and by time).
//!
//! Data directory layout:
//! - `pmem.pool`: the PMem pool (`docs/format/pmem-pool.md`);
//! - `wal/`: SSD log segments (`docs/format/ssd-log.md`);
//! - `series/`: the manifest and block files (`docs/format/manifest.md`,
//!   `docs/format/block-file.md`).
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
use strata_log::ssd_log::SsdLogOptions;
use strata_log::{CommitLog, LogRecord, Lsn, NoLog, SerialLog};
use strata_media::fs::{FileSystem, RealFs};
use strata_pmem::{Region, RegionOptions};
use strata_series::manifest::{read_manifest, Manifest};
use strata_series::{EngineError, EngineOptions, RecoveryPhase, RecoveryReport, SeriesEngine, SeriesStore};
use thiserror::Error;

use crate::config::{Config, ConfigError, Protocol};
use crate::pool::open_pool_log;

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
        };
        let mut opts = EngineOptions::new(series_dir);
        opts.fs = fs;
        opts.max_series_per_database =
            (config.storage.max_series_per_database > 0).then_some(config.storage.max_series_per_database);
        opts.checkpoint_log_bytes = match protocol {
            // Leave room in the ring for the commits that arrive while a checkpoint runs.
            Protocol::SerialPmem => config.storage.checkpoint_log_bytes.min(config.pmem.log_bytes / 2),
            _ => config.storage.checkpoint_log_bytes,
        };
        opts.checkpoint_interval = (config.storage.checkpoint_interval_s > 0)
            .then(|| Duration::from_secs(config.storage.checkpoint_interval_s));
        let (engine, recovery) = SeriesEngine::open(opts, log, replay, progress)?;
        if !config.storage.default_database.is_empty() {
            engine.create_database(&config.storage.default_database)?;
        }
        let db = Db {
            _lock: lock,
            config: config.clone(),
            engine,
            region,
            recovery,
            stop: Arc::new(AtomicBool::new(false)),
            checkpointer: Mutex::new(None),
        };
        Ok(db)
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
        Ok(())
    }

    /// Starts the background checkpointer: checks every 100 ms whether the
    /// log passed its size threshold or the interval passed with new writes.
    pub fn start_background_checkpoints(&self) {
        let engine = self.engine.clone();
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
}
