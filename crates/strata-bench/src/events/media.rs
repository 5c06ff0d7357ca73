//! The media of `strata bench events`: an emulated PMem region (a shared
//! mapping of a file in a tmpfs directory, `/dev/shm` by default; real
//! clwb/clflushopt + sfence, no injected delay), touched once and msynced
//! before any measurement so first-touch page faults are not timed, and a
//! scratch directory on a disk file system (ext4 here) for the block files,
//! ATT and flash queues, through [`RealFs`]. Both are removed on drop.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use strata_media::fs::RealFs;
use strata_pmem::Region;
use tempfile::TempDir;

use crate::machine::fs_type;

/// The PMem region and the SSD directory of one run.
pub(super) struct EventsMedia {
    pub region: Arc<Region>,
    pub pmem_dir: PathBuf,
    pub pmem_fs_type: String,
    pub ssd_dir: PathBuf,
    pub ssd_fs_type: String,
    pub fs: RealFs,
    next_dir: u64,
    pmem_scratch: TempDir,
    ssd_scratch: TempDir,
}

impl EventsMedia {
    /// A region of `region_bytes` in `pmem_dir` and a scratch directory in `ssd_dir`.
    pub fn open(pmem_dir: &Path, ssd_dir: &Path, region_bytes: u64) -> anyhow::Result<EventsMedia> {
        let pmem_scratch = tempfile::Builder::new()
            .prefix("strata-bench-events-")
            .tempdir_in(pmem_dir)
            .with_context(|| format!("creating a scratch directory in {}", pmem_dir.display()))?;
        let ssd_scratch = tempfile::Builder::new()
            .prefix("strata-bench-events-")
            .tempdir_in(ssd_dir)
            .with_context(|| format!("creating a scratch directory in {}", ssd_dir.display()))?;
        let region_path = pmem_scratch.path().join("pmem-region");
        let len = region_bytes.div_ceil(4096) * 4096;
        let region = crate::emulated_region::open_touched(&region_path, len)?;
        Ok(EventsMedia {
            region: Arc::new(region),
            pmem_dir: pmem_dir.to_path_buf(),
            pmem_fs_type: fs_type(pmem_dir).unwrap_or_else(|| "unknown".into()),
            ssd_dir: ssd_dir.to_path_buf(),
            ssd_fs_type: fs_type(ssd_dir).unwrap_or_else(|| "unknown".into()),
            fs: RealFs::new(),
            next_dir: 0,
            pmem_scratch,
            ssd_scratch,
        })
    }

    /// A fresh, empty directory on the SSD for one run of one variant; the
    /// previous runs' directories are removed (the disk holds one at a time).
    pub fn fresh_ssd_dir(&mut self, label: &str) -> anyhow::Result<PathBuf> {
        self.fresh_dir(false, label)
    }

    /// [`EventsMedia::fresh_ssd_dir`] on the SSD, or (`tmpfs`) next to the
    /// PMem file: leaves written there cost no device write.
    pub fn fresh_dir(&mut self, tmpfs: bool, label: &str) -> anyhow::Result<PathBuf> {
        let root = if tmpfs { self.pmem_scratch.path() } else { self.ssd_scratch.path() }.to_path_buf();
        for entry in std::fs::read_dir(&root)? {
            let path = entry?.path();
            let is_run = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("run-"));
            if is_run {
                std::fs::remove_dir_all(&path).with_context(|| format!("removing {}", path.display()))?;
            }
        }
        self.next_dir += 1;
        let dir = root.join(format!("run-{}-{label}", self.next_dir));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(dir)
    }

    /// The SSD scratch directory; entries not named `run-*` survive
    /// [`EventsMedia::fresh_ssd_dir`].
    pub fn ssd_scratch_root(&self) -> &Path {
        self.ssd_scratch.path()
    }
}
