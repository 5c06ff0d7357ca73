//! Strata's log devices as `bench logging` measures them, one commit per
//! record (16-byte key + value as the payload):
//! - the SSD log ([`strata_log::ssd_log::SsdLog`]): a fresh log directory per
//!   window; `append` returns once the group-committed `fdatasync` covers the
//!   record, so concurrent appenders share syncs;
//! - the serial PMem log ([`strata_log::SerialLog`] on PMem): one emulated
//!   region (a shared mapping of a file, on tmpfs in the benchmark) per run,
//!   its ring emptied before every window; each commit is body flush+fence,
//!   tail flush+fence under one mutex (strict ordering). When the ring fills
//!   mid-window it is truncated (one persisted 8-byte store) and counted.
//!
//! Both can be reopened afterwards to count the records recovery finds.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use strata_log::pmem_log::PmemLog;
use strata_log::ssd_log::{SsdLog, SsdLogOptions};
use strata_log::{CommitLog, LogError, RecordKind, SerialLog, TxnId};
use strata_media::fs::{FileSystem, RealFs};
use strata_pmem::{FlushInstruction, Region, RegionOffset};

use super::record::{key_of, payload_buffer, set_key};
use super::window::{run_window, WindowOutcome};

/// Largest batch one SSD-log write + fdatasync covers.
pub const SSD_MAX_BATCH_BYTES: u64 = 1 << 20;
/// Packed entries, as the serial baseline writes them.
pub const PMEM_ALIGN_BYTES: u64 = 8;

fn txn_id(thread: usize, seq: u64) -> TxnId {
    TxnId(((thread as u64) << 40) | seq)
}

/// The SSD log's options here: flush at once (no added wait), as `bench persist`.
pub fn ssd_options(preallocate_bytes: u64) -> SsdLogOptions {
    SsdLogOptions { max_batch_bytes: SSD_MAX_BATCH_BYTES, max_wait: Duration::ZERO, preallocate_bytes }
}

/// One window of `threads` appenders on a new SSD log in `dir` (which must
/// not hold a log yet). The log is closed when this returns.
pub fn ssd_window(
    dir: &Path,
    threads: usize,
    window: Duration,
    value: &[u8],
    preallocate_bytes: u64,
) -> anyhow::Result<WindowOutcome> {
    let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
    let (log, replay) = SsdLog::open(fs, dir, ssd_options(preallocate_bytes))
        .with_context(|| format!("opening an SSD log in {}", dir.display()))?;
    anyhow::ensure!(replay.records.is_empty(), "{} already holds an SSD log", dir.display());
    keyed_window(threads, window, value, |payload, txn| {
        log.append(RecordKind::Txn, txn, payload)?;
        Ok(())
    })
}

/// One window in which every commit is `value` under its record's key:
/// `commit(payload, txn)` commits one such payload as transaction `txn`.
/// Both Strata logs run through here, so they write the same records.
fn keyed_window(
    threads: usize,
    window: Duration,
    value: &[u8],
    commit: impl Fn(&[u8], TxnId) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<WindowOutcome> {
    run_window(
        threads,
        window,
        |_| Ok(payload_buffer(value)),
        |payload, t, seq| {
            set_key(payload, &key_of(t, seq));
            commit(payload, txn_id(t, seq))
        },
    )
}

/// Records the SSD log in `dir` replays on open (recovery's view).
pub fn ssd_recovered_records(dir: &Path, preallocate_bytes: u64) -> anyhow::Result<u64> {
    let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
    let (_, replay) = SsdLog::open(fs, dir, ssd_options(preallocate_bytes))?;
    Ok(replay.records.len() as u64)
}

/// A serial PMem log in an emulated region backed by a file.
pub struct PmemLogBench {
    region: Arc<Region>,
    log: SerialLog,
    path: PathBuf,
    /// Ring truncations during windows (the ring was full).
    truncations: AtomicU64,
}

impl PmemLogBench {
    /// Creates the region file `path` with a ring of `capacity_bytes`, every
    /// page touched and msynced first so no window pays for first touch.
    pub fn create(path: &Path, capacity_bytes: u64) -> anyhow::Result<PmemLogBench> {
        let len = PmemLog::footprint_bytes(capacity_bytes);
        let region = crate::emulated_region::open_touched(path, len)?;
        let region = Arc::new(region);
        let log = SerialLog::create_pmem(region.clone(), RegionOffset(0), capacity_bytes, PMEM_ALIGN_BYTES)?;
        Ok(PmemLogBench { region, log, path: path.to_path_buf(), truncations: AtomicU64::new(0) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn flush_instruction(&self) -> FlushInstruction {
        self.region.flush_instruction()
    }

    /// Ring truncations so far (each one empties a full ring mid-window).
    pub fn truncations(&self) -> u64 {
        self.truncations.load(Ordering::Relaxed)
    }

    /// One window of `threads` committers on an emptied ring.
    pub fn window(&self, threads: usize, window: Duration, value: &[u8]) -> anyhow::Result<WindowOutcome> {
        self.log.truncate_all()?;
        keyed_window(threads, window, value, |payload, txn| match self.log.commit(txn, payload) {
            Ok(_) => Ok(()),
            Err(LogError::Full { .. }) => {
                self.truncations.fetch_add(1, Ordering::Relaxed);
                self.log.truncate_all()?;
                self.log.commit(txn, payload)?;
                Ok(())
            }
            Err(e) => Err(e.into()),
        })
    }

    /// Records a fresh open of the region replays (recovery's view).
    pub fn recovered_records(&self) -> anyhow::Result<u64> {
        let (_, records) = SerialLog::open_pmem(self.region.clone(), RegionOffset(0))?;
        Ok(records.len() as u64)
    }
}
