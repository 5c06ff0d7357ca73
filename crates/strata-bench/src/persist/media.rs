//! The media of the persist benchmark: one directory per file system (tmpfs
//! and a disk file system such as ext4), each holding, in a scratch directory
//! removed on drop,
//! - an emulated PMem region (a shared mapping of a file in that directory)
//!   laid out as a raw area for memcpy/persist streams followed by one serial
//!   PMem log per entry size, every byte touched once before measuring so
//!   first-touch page allocation is not timed, then msynced so the run
//!   starts with no dirty pages;
//! - an SSD log directory (group commit with fdatasync).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use strata_log::pmem_log::PmemLog;
use strata_log::ssd_log::{SsdLog, SsdLogOptions};
use strata_log::SerialLog;
use strata_media::fs::{FileSystem, RealFs};
use strata_pmem::{Region, RegionOffset};
use tempfile::TempDir;

use super::PersistBudget;
use crate::machine::fs_type;

/// Largest batch one SSD-log write + fdatasync covers.
pub(super) const SSD_MAX_BATCH_BYTES: u64 = 1 << 20;
/// Packed entries, as the serial baseline writes them.
pub(super) const SERIAL_ALIGN_BYTES: u64 = 8;

/// One medium and everything the benchmark measures on it.
pub(super) struct Medium {
    /// Name used in variant names (`tmpfs`, `ext4`).
    pub label: String,
    pub dir: PathBuf,
    pub fs_type: String,
    pub region: Arc<Region>,
    pub raw_area_bytes: u64,
    /// Next write position in the raw area (streams wrap around).
    pub cursor: u64,
    /// (entry bytes, log) per serial-log entry size.
    pub serial_logs: Vec<(u64, SerialLog)>,
    pub ssd_log: SsdLog,
    /// Dropped last: removes the region file and the SSD log.
    _scratch: TempDir,
}

impl Medium {
    pub fn open(
        label: String,
        dir: &Path,
        budget: &PersistBudget,
        entry_sizes: &[u64],
    ) -> anyhow::Result<Medium> {
        let fs_type = fs_type(dir).unwrap_or_else(|| "unknown".to_string());
        let scratch = tempfile::Builder::new()
            .prefix("strata-bench-persist-")
            .tempdir_in(dir)
            .with_context(|| format!("creating a scratch directory in {}", dir.display()))?;
        let log_footprint = PmemLog::footprint_bytes(budget.log_capacity_bytes);
        let region_len = budget.raw_area_bytes + log_footprint * entry_sizes.len() as u64;
        let region_path = scratch.path().join("pmem-region");
        let region = Arc::new(crate::emulated_region::open_touched(&region_path, region_len)?);
        let mut serial_logs = Vec::new();
        for (i, &entry_bytes) in entry_sizes.iter().enumerate() {
            let base = RegionOffset(budget.raw_area_bytes + i as u64 * log_footprint);
            let log =
                SerialLog::create_pmem(region.clone(), base, budget.log_capacity_bytes, SERIAL_ALIGN_BYTES)?;
            serial_logs.push((entry_bytes, log));
        }
        let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
        let ssd_options = SsdLogOptions {
            max_batch_bytes: SSD_MAX_BATCH_BYTES,
            max_wait: Duration::ZERO,
            preallocate_bytes: budget.ssd_preallocate_bytes,
        };
        let (ssd_log, _) = SsdLog::open(fs, &scratch.path().join("ssd-log"), ssd_options)?;
        Ok(Medium {
            label,
            dir: dir.to_path_buf(),
            fs_type,
            region,
            raw_area_bytes: budget.raw_area_bytes,
            cursor: 0,
            serial_logs,
            ssd_log,
            _scratch: scratch,
        })
    }

    /// The raw-area offset for the next `len` bytes of a stream.
    pub fn next_offset(&mut self, len: u64) -> RegionOffset {
        if self.cursor + len > self.raw_area_bytes {
            self.cursor = 0;
        }
        let at = RegionOffset(self.cursor);
        self.cursor += len;
        at
    }
}
