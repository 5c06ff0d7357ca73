//! [`Db`]: one data directory opened with one configuration. Resolves the
//! `auto` protocol once (`Config::resolve`: `declog-pmem` on a DAX mount,
//! else `declog-ssd`), opens the PMem pool (when the protocol logs to PMem),
//! the commit log, and the series
//! engine with recovery; creates the default database; runs the background
//! checkpointer (by log size and by time) and retention expiry
//! ([`crate::retention`]).
//!
//! Data directory layout:
//! - `pmem.pool`: the PMem pool (`docs/format/pmem-pool.md`);
//! - `wal/`: SSD log segments (`docs/format/ssd-log.md`);
//! - `series/`: the manifest and block files (`docs/format/manifest.md`,
//!   `docs/format/block-file.md`) and the retention policies
//!   (`docs/format/retention.md`);
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
use strata_media::fs::{FileSystem, RealFs};
use strata_pmem::Region;
use strata_series::manifest::{read_manifest, Manifest};
use strata_series::{EngineError, EngineOptions, RecoveryPhase, RecoveryReport, SeriesEngine, SeriesStore};
use thiserror::Error;

use crate::config::{AutoProtocol, Config, ConfigError, Protocol};
use crate::protocols::{self, Durability, OpenedLog, Survives};
use crate::retention;
use crate::streams::{NewStreamSettings, PmemSettings, Streams, StreamsRecovery};
use crate::tables::catalog::TableCatalog;

#[derive(Debug, Error)]
pub enum DbError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("PMem pool {path}: {message}")]
    Pool { path: String, message: String },
    #[error("data directory {data_dir} is in use by another strata process (lock {lock} is held)")]
    Locked { data_dir: String, lock: String },
    #[error("cannot lock {path}: {source}")]
    Lock { path: String, source: std::io::Error },
    #[error(
        "the {protocol} log in {data_dir} holds {pending} transactions that no checkpoint covers; start once \
         with `--protocol {protocol}` and stop it gracefully (Ctrl-C checkpoints), or run \
         `strata recover --protocol {protocol} --checkpoint`, then switch to {to}"
    )]
    UncoveredLog { data_dir: String, protocol: &'static str, pending: usize, to: &'static str },
}

pub struct Db {
    /// Held while open: a second process on the same directory would
    /// interleave its log writes with ours.
    _lock: std::fs::File,
    /// As opened: `auto` resolved to one protocol.
    config: Config,
    /// What `auto` resolved to (`None`: the protocol was named).
    auto: Option<AutoProtocol>,
    engine: Arc<SeriesEngine>,
    region: Option<Arc<Region>>,
    recovery: RecoveryReport,
    store: Arc<TableCatalog>,
    streams_recovery: StreamsRecovery,
    stop: Arc<AtomicBool>,
    /// The background checkpointer and retention expiry threads.
    background: Mutex<Vec<JoinHandle<()>>>,
}

impl Db {
    /// Opens (creating if needed) the data directory of `config`: the
    /// configured protocol's log (through its factory in
    /// [`crate::protocols`]), the series engine with recovery, the default
    /// database and the event streams.
    pub fn open(config: &Config, progress: &dyn Fn(RecoveryPhase, u64, u64)) -> Result<Db, DbError> {
        config.validate()?;
        let resolved = config.resolve()?;
        let config = &resolved.config;
        let protocol = config.protocol()?;
        let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
        fs.create_dir_all(&config.data_dir).map_err(EngineError::from)?;
        let lock = Self::lock_data_dir(config)?;
        let manifest = read_manifest(fs.as_ref(), &config.series_dir())?;
        Self::drain_other_logs(config, &fs, protocol, manifest.as_ref())?;
        let factory = protocols::factory(protocol);
        let mut opts = EngineOptions::new(config.series_dir());
        opts.fs = fs.clone();
        opts.max_series_per_database =
            (config.storage.max_series_per_database > 0).then_some(config.storage.max_series_per_database);
        opts.checkpoint_log_bytes = factory.checkpoint_log_bytes(config);
        opts.checkpoint_interval = (config.storage.checkpoint_interval_s > 0
            && opts.checkpoint_log_bytes != u64::MAX)
            .then(|| Duration::from_secs(config.storage.checkpoint_interval_s));
        opts.compact_above_files = config.storage.compact_above_files;
        opts.block_span_ns = i64::try_from(config.storage.block_span_s)
            .ok()
            .filter(|s| *s > 0)
            .map(|s| s.saturating_mul(1_000_000_000));
        let OpenedLog { opener, region } = factory.open(config, &fs)?;
        let (engine, mut recovery) = SeriesEngine::open(opts, opener, progress)?;
        if !config.storage.default_database.is_empty() {
            engine.create_database(&config.storage.default_database)?;
            // The report counts the databases the server starts with.
            recovery.databases = engine.databases().len();
        }
        let (streams, streams_recovery) = Self::open_streams(config, &engine)?;
        let store = Arc::new(TableCatalog::new(engine.clone(), Arc::new(streams)));
        Ok(Db {
            _lock: lock,
            config: config.clone(),
            auto: resolved.auto,
            engine,
            region,
            recovery,
            store,
            streams_recovery,
            stop: Arc::new(AtomicBool::new(false)),
            background: Mutex::new(Vec::new()),
        })
    }

    /// The commit protocol as opened (`auto` resolved).
    pub fn protocol(&self) -> Protocol {
        self.config.protocol().expect("Db::open resolved and validated the protocol")
    }

    /// The protocol (and why, if `auto` picked it), its log's medium and
    /// file system, and what an acknowledged write survives: what
    /// `strata serve` states at startup.
    pub fn durability(&self) -> Durability {
        let protocol = self.protocol();
        let factory = protocols::factory(protocol);
        let medium = factory.medium(&self.config);
        let mount = medium.path.as_deref().and_then(crate::medium::mount_of);
        Durability::new(protocol, self.auto.clone(), medium, mount, factory.survives(&self.config))
    }

    /// What an acknowledged write survives under this configuration, on its medium.
    pub fn survives(&self) -> Survives {
        self.durability().survives
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

    /// Takes the data directory's `LOCK` file (an exclusive advisory lock,
    /// released when the process exits, however it exits). `strata restore`
    /// holds it while it writes.
    pub fn lock_data_dir(config: &Config) -> Result<std::fs::File, DbError> {
        let path = config.data_dir.join("LOCK");
        let lock_error = |source| DbError::Lock { path: path.display().to_string(), source };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(lock_error)?;
        match file.try_lock() {
            Ok(()) => Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => Err(DbError::Locked {
                data_dir: config.data_dir.display().to_string(),
                lock: path.display().to_string(),
            }),
            Err(std::fs::TryLockError::Error(e)) => Err(lock_error(e)),
        }
    }

    /// The logs of the other protocols must hold nothing the manifest does
    /// not cover, or those acknowledged writes would be lost by opening with
    /// this protocol; what they do hold (records a checkpoint covers) is
    /// erased now, so that switching back later never replays it.
    fn drain_other_logs(
        config: &Config,
        fs: &Arc<dyn FileSystem>,
        protocol: Protocol,
        manifest: Option<&Manifest>,
    ) -> Result<(), DbError> {
        for other in protocols::all().filter(|f| f.protocol() != protocol) {
            let pending = other.drain_for_switch(config, fs, manifest)?;
            if pending > 0 {
                return Err(protocols::switch_refused(config, other.protocol(), pending, protocol));
            }
        }
        Ok(())
    }

    /// Starts the background checkpointer: checks every 100 ms whether the
    /// log passed its size threshold, the commit protocol asks for one (a
    /// DecLog stream is getting full), or the interval passed with new writes.
    /// After each checkpoint (its manifest written, the log freed) it merges
    /// block files past `compact_above_files` on this thread
    /// (`SeriesEngine::compact`): never on a writer's thread, and without
    /// the protocol's order or cut lock, so commits go on meanwhile.
    pub fn start_background_checkpoints(&self) {
        let engine = self.engine.clone();
        let streams = self.streams().clone();
        let by_bytes = engine.options().checkpoint_log_bytes;
        let interval = engine.options().checkpoint_interval;
        let mut last = Instant::now();
        self.spawn_background("strata-checkpoint", move || {
            let pending = engine.log_bytes_since_checkpoint();
            let due_by_time = interval.is_some_and(|i| last.elapsed() >= i) && pending > 0;
            if pending >= by_bytes || due_by_time || engine.checkpoint_wanted() {
                match engine.checkpoint() {
                    Ok(r) => {
                        eprintln!("strata: {r}");
                        match engine.compact() {
                            Ok(c) if c.files_merged > 0 => eprintln!("strata: {c}"),
                            Ok(_) => {}
                            Err(e) => eprintln!("strata: background compaction failed: {e}"),
                        }
                    }
                    Err(e) => eprintln!("strata: background checkpoint failed: {e}"),
                }
                if let Err(e) = streams.sync_to_media() {
                    eprintln!("strata: syncing the event streams to media failed: {e}");
                }
                last = Instant::now();
            }
        });
        self.start_retention_expiry();
    }

    /// Starts the retention expiry thread (unless
    /// `storage.retention_check_interval_s` is 0): one
    /// [`retention::expire_once`] pass at that interval, the first one an
    /// interval after the start.
    fn start_retention_expiry(&self) {
        let secs = self.config.storage.retention_check_interval_s;
        if secs == 0 {
            return;
        }
        let tables = self.store.clone();
        let mut last = Instant::now();
        self.spawn_background("strata-retention", move || {
            if last.elapsed() < Duration::from_secs(secs) {
                return;
            }
            match retention::expire_once(tables.as_ref(), now_ns()) {
                Ok(r) if r.points_expired > 0 => eprintln!("strata: {r}"),
                Ok(_) => {}
                Err(e) => eprintln!("strata: retention expiry failed: {e}"),
            }
            last = Instant::now();
        });
    }

    /// Runs `tick` every 100 ms on a thread named `name` until
    /// [`Self::stop_background_checkpoints`].
    fn spawn_background(&self, name: &str, mut tick: impl FnMut() + Send + 'static) {
        let stop = self.stop.clone();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    tick();
                }
            })
            .expect("spawn a background thread");
        self.background.lock().push(handle);
    }

    /// One retention expiry pass now, as of `now_ns` (what the background
    /// task runs with the wall clock).
    pub fn expire_retention(&self, now_ns: i64) -> Result<retention::ExpiryReport, EngineError> {
        retention::expire_once(self.store.as_ref(), now_ns)
    }

    /// Stops the background checkpointer and retention expiry (if running).
    pub fn stop_background_checkpoints(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let handles = std::mem::take(&mut *self.background.lock());
        for h in handles {
            let _ = h.join();
        }
    }

    /// A full compaction now: a checkpoint (so DRAM points are in block
    /// files), then every block file merged into one without the points
    /// overwritten or deleted since they were sealed
    /// (`SeriesEngine::compact_all`; `strata recover --compact`, the ingest
    /// bench).
    pub fn compact_all(&self) -> Result<strata_series::CompactionReport, EngineError> {
        self.engine.checkpoint()?;
        self.engine.compact_all()
    }

    pub fn engine(&self) -> &Arc<SeriesEngine> {
        &self.engine
    }

    /// The tables `strata serve` serves: series through [`Db::engine`],
    /// event streams through [`Db::streams`].
    pub fn tables(&self) -> &Arc<TableCatalog> {
        &self.store
    }

    /// The stream catalog of the data directory.
    pub fn streams(&self) -> &Arc<Streams> {
        self.store.stream_set()
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

/// The wall clock in nanoseconds since the epoch.
fn now_ns() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
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
        // The protocol that logs to the pool.
        c.storage.protocol = Protocol::SerialPmem.name().into();
        c.pmem.log_bytes = 1 << 20;
        c.pmem.pool_bytes =
            crate::pool::POOL_HEADER_BYTES + strata_log::pmem_log::PmemLog::footprint_bytes(c.pmem.log_bytes);
        let db = Db::open(&c, &|_, _, _| {}).expect("a pool validate accepts must open");
        assert!(c.pool_path().exists(), "serial-pmem opened the pool");
        assert_eq!(db.engine().databases(), vec!["strata".to_string()]);
        assert_eq!(db.recovery().databases, 1, "the report counts the default database of a first start");
    }

    #[test]
    fn the_default_opens_with_auto_resolved_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let c = Config { data_dir: dir.path().to_path_buf(), ..Config::default() };
        let want = c.resolve().unwrap().config.protocol().unwrap();
        let db = Db::open(&c, &|_, _, _| {}).unwrap();
        assert_eq!(db.protocol(), want);
        assert_eq!(db.engine().protocol(), want.name());
        assert_eq!(db.config().storage.protocol, want.name(), "the Db keeps the resolved configuration");
        let durability = db.durability();
        assert_eq!(durability.auto.as_ref().map(|a| a.protocol), Some(want));
        assert!(
            durability.to_string().contains(&format!("commit protocol {} (auto: ", want.name())),
            "{durability}"
        );
        assert_ne!(durability.survives, Survives::Nothing);
        if want == Protocol::DeclogSsd && durability.mount.as_ref().is_some_and(|m| !m.is_volatile()) {
            assert_eq!(durability.survives, Survives::PowerLoss, "the honest default survives a power loss");
        }
        drop(db);
        let mut named = c.clone();
        named.storage.protocol = Protocol::DeclogPmem.name().into();
        let db = Db::open(&named, &|_, _, _| {})
            .expect("the default's log holds nothing a checkpoint does not cover");
        assert!(db.durability().auto.is_none());
        assert_eq!(db.survives(), Survives::ProcessCrash, "emulated PMem, named explicitly");
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

    /// `Db::compact_all`: a checkpoint, then one block file without the
    /// overwritten points; the data reads back after a reopen.
    #[test]
    fn compact_all_leaves_one_block_file_and_keeps_the_data() {
        use strata_series::FieldValue::Float;
        for protocol in [Protocol::SerialSsd, Protocol::DeclogSsd] {
            let dir = tempfile::tempdir().unwrap();
            let db = Db::open(&config(dir.path(), protocol), &|_, _, _| {}).unwrap();
            for round in 0..5 {
                for ts in 0..50 {
                    write(&db, "k", Float((round * 100 + ts) as f64), ts);
                }
                db.engine().checkpoint().unwrap();
            }
            write(&db, "k", Float(-1.0), 1000);
            assert!(db.engine().stats().block_files >= 5, "{protocol:?}: checkpoints alone do not merge");
            let report = db.compact_all().unwrap();
            assert!(report.files_merged >= 5, "{protocol:?}: {report:?}");
            assert_eq!(db.engine().stats().block_files, 1, "{protocol:?}");
            assert!(report.merged_file_bytes < report.input_bytes, "{protocol:?}: {report:?}");
            assert_eq!(count(&db, "k"), 51, "{protocol:?}");
            drop(db);
            let db = Db::open(&config(dir.path(), protocol), &|_, _, _| {}).unwrap();
            assert_eq!(count(&db, "k"), 51, "{protocol:?}: after a reopen");
            assert_eq!(db.engine().stats().block_files, 1, "{protocol:?}");
        }
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
        declog.declog.key_slots = 1024;
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
