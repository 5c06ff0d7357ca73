//! A fresh Strata database per load: one commit protocol, a new data
//! directory on disk (block files, manifest, SSD log: the "SSD") and a new
//! emulated PMem pool file on tmpfs when there is one (`/dev/shm`), both
//! removed when the [`LocalDb`] is dropped. DecLog's file goes to the PMem
//! directory too (`declog-pmem`) or stays in the data directory
//! (`declog-ssd`). Background checkpoints are off, and the PMem log ring and
//! the DecLog file are sized to hold the whole load, so no protocol
//! checkpoints while it is being timed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use strata_engine::pool::POOL_HEADER_BYTES;
use strata_engine::{Config, Db, Protocol};
use strata_pmem::PersistStats;
use strata_series::SeriesEngine;
use tempfile::TempDir;

use crate::machine::fs_type;
use crate::persist::default_disk_dir;

/// Smallest PMem log ring (the engine's default).
pub const MIN_PMEM_LOG_BYTES: u64 = 192 << 20;
/// Largest PMem log ring the benchmark sizes (larger loads checkpoint while loading).
pub const MAX_PMEM_LOG_BYTES: u64 = 8 << 30;

/// Pool bytes beyond the pool header and the ring's capacity.
const POOL_SLACK_BYTES: u64 = 1 << 20;

/// Where the emulated PMem pool and the SSD files go.
#[derive(Clone, Debug)]
pub struct BenchDirs {
    pub pmem_dir: PathBuf,
    pub disk_dir: PathBuf,
}

impl BenchDirs {
    /// `/dev/shm` (else the temp directory) for PMem, [`default_disk_dir`] for SSD.
    pub fn detect() -> BenchDirs {
        let shm = PathBuf::from("/dev/shm");
        let pmem_dir = if shm.is_dir() { shm } else { std::env::temp_dir() };
        BenchDirs { pmem_dir, disk_dir: default_disk_dir() }
    }

    /// The directories given, [`BenchDirs::detect`]'s for those not given
    /// (the command line's `--pmem-dir` and `--ssd-dir`).
    pub fn detect_unless(pmem_dir: Option<PathBuf>, disk_dir: Option<PathBuf>) -> BenchDirs {
        let detected = BenchDirs::detect();
        BenchDirs {
            pmem_dir: pmem_dir.unwrap_or(detected.pmem_dir),
            disk_dir: disk_dir.unwrap_or(detected.disk_dir),
        }
    }

    /// `PMem pool in /dev/shm (tmpfs), SSD files in /tmp (ext4)`.
    pub fn describe(&self) -> String {
        let fs = |p: &Path| fs_type(p).unwrap_or_else(|| "unknown fs".into());
        format!(
            "PMem pool in {} ({}), SSD files in {} ({})",
            self.pmem_dir.display(),
            fs(&self.pmem_dir),
            self.disk_dir.display(),
            fs(&self.disk_dir)
        )
    }
}

/// A PMem log ring that holds `expected_log_bytes` with room to spare.
pub fn pmem_log_bytes_for(expected_log_bytes: u64) -> u64 {
    let mib = 1 << 20;
    let wanted = expected_log_bytes.saturating_add(64 * mib);
    wanted.div_ceil(mib).saturating_mul(mib).clamp(MIN_PMEM_LOG_BYTES, MAX_PMEM_LOG_BYTES)
}

/// An open database in temporary directories (fields drop in order: the
/// database closes before its directories go).
pub struct LocalDb {
    db: Db,
    config: Config,
    /// The data directory on disk (block files, manifest, SSD logs, the declog-ssd file).
    pub data_dir_path: PathBuf,
    pub protocol: Protocol,
    _data_dir: TempDir,
    _pmem_dir: TempDir,
}

impl LocalDb {
    pub fn open(
        protocol: Protocol,
        dirs: &BenchDirs,
        db_name: &str,
        pmem_log_bytes: u64,
    ) -> anyhow::Result<LocalDb> {
        let data_dir = tempfile::Builder::new()
            .prefix("strata-ingest-data-")
            .tempdir_in(&dirs.disk_dir)
            .with_context(|| format!("creating a data directory in {}", dirs.disk_dir.display()))?;
        let pmem_dir = tempfile::Builder::new()
            .prefix("strata-ingest-pmem-")
            .tempdir_in(&dirs.pmem_dir)
            .with_context(|| format!("creating a PMem directory in {}", dirs.pmem_dir.display()))?;
        let mut config = Config { data_dir: data_dir.path().to_path_buf(), ..Config::default() };
        config.storage.protocol = protocol.name().to_string();
        config.storage.default_database = db_name.to_string();
        config.storage.max_series_per_database = 0;
        config.storage.checkpoint_interval_s = 0;
        config.pmem.pool_file = pmem_dir.path().join("pmem.pool");
        config.pmem.log_bytes = pmem_log_bytes;
        // DecLog's file: on the PMem side for declog-pmem (the default would be
        // inside the data directory on disk), sized like the serial ring.
        config.declog.pmem_file = pmem_dir.path().join("declog.pmem");
        config.declog.file_bytes = pmem_log_bytes.max(config.declog.file_bytes);
        // The ring needs a little more than its capacity (its own header):
        // leave a MiB after the pool header.
        config.pmem.pool_bytes = pmem_log_bytes + POOL_HEADER_BYTES + POOL_SLACK_BYTES;
        let db = Db::open(&config, &|_, _, _| {}).with_context(|| {
            format!("opening a {} database in {}", protocol.name(), data_dir.path().display())
        })?;
        // As `strata serve` runs: checkpoints by log size in the background
        // (a DecLog stream asking for one included), off the ack path.
        db.start_background_checkpoints();
        Ok(LocalDb {
            db,
            config,
            data_dir_path: data_dir.path().to_path_buf(),
            protocol,
            _data_dir: data_dir,
            _pmem_dir: pmem_dir,
        })
    }

    pub fn engine(&self) -> &Arc<SeriesEngine> {
        self.db.engine()
    }

    /// The table catalog `strata serve` would serve.
    pub fn tables(&self) -> Arc<dyn strata_engine::Tables> {
        self.db.tables().clone()
    }

    /// Closes the database and returns the allocated bytes of its data
    /// directory at rest, before the directories are removed.
    pub fn close(self) -> anyhow::Result<u64> {
        let LocalDb { db, data_dir_path, _data_dir, _pmem_dir, .. } = self;
        drop(db);
        crate::peers::disk::allocated_bytes(&data_dir_path)
    }

    /// As [`Self::close`], then opens the database again, runs a full
    /// compaction (`Db::compact_all`: a checkpoint, then every block file
    /// merged into one without overwritten and deleted points), closes it,
    /// and returns the allocated bytes at rest before and after.
    pub fn close_and_compact(self) -> anyhow::Result<(u64, u64)> {
        let LocalDb { db, config, data_dir_path, _data_dir, _pmem_dir, .. } = self;
        drop(db);
        let at_rest = crate::peers::disk::allocated_bytes(&data_dir_path)?;
        let db = Db::open(&config, &|_, _, _| {})
            .with_context(|| format!("reopening {} for a full compaction", data_dir_path.display()))?;
        db.compact_all().context("the full compaction")?;
        drop(db);
        let compacted = crate::peers::disk::allocated_bytes(&data_dir_path)?;
        Ok((at_rest, compacted))
    }

    /// Persist counts of the PMem pool so far (`None` without a pool).
    pub fn persist_stats(&self) -> Option<PersistStats> {
        self.db.region().map(|r| r.stats())
    }
}
