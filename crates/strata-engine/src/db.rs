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
use strata_series::manifest::read_manifest;
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
        let manifest = read_manifest(fs.as_ref(), &series_dir)?;
        if let Some(m) = &manifest {
            if m.protocol != protocol.name() {
                Self::check_old_log_drained(config, &m.protocol, Lsn(m.checkpoint_lsn))?;
            }
        }
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

    /// The manifest was written under another protocol: its log must hold
    /// nothing past the checkpoint, or those acknowledged writes would be lost.
    fn check_old_log_drained(config: &Config, old: &str, checkpoint_lsn: Lsn) -> Result<(), DbError> {
        let pending = match old.parse::<Protocol>().map_err(DbError::Other)? {
            Protocol::None => 0,
            Protocol::SerialPmem => {
                if !config.pool_path().exists() {
                    0
                } else {
                    let r = Self::open_region(config)?;
                    let (_, records, _) = open_pool_log(r, config.pmem.log_bytes).map_err(|message| {
                        DbError::Pool { path: config.pool_path().display().to_string(), message }
                    })?;
                    records.iter().filter(|r| r.lsn > checkpoint_lsn).count()
                }
            }
            Protocol::SerialSsd => {
                if !config.wal_dir().exists() {
                    0
                } else {
                    let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
                    let (_, records) = SerialLog::open_ssd(fs, &config.wal_dir(), Self::ssd_options(config))
                        .map_err(EngineError::from)?;
                    records.iter().filter(|r| r.lsn > checkpoint_lsn).count()
                }
            }
        };
        if pending > 0 {
            return Err(DbError::Other(format!(
                "the data directory was last written with commit protocol `{old}` and its log still holds {pending} \
                 transactions past the last checkpoint; start once with `--protocol {old}` and stop it gracefully \
                 (Ctrl-C checkpoints), or run `strata recover --protocol {old} --checkpoint`, then switch"
            )));
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
}
