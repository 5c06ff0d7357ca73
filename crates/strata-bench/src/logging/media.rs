//! The media of the logging benchmark: one directory per file system (a disk
//! file system such as ext4, and tmpfs), each with a scratch directory
//! removed on drop. Every window gets a fresh subdirectory (its SSD log,
//! SQLite database or RocksDB database), removed after the window, so no
//! window inherits another's files. The tmpfs medium also holds the emulated
//! PMem region of Strata's serial PMem log.

use std::path::{Path, PathBuf};

use anyhow::Context;
use tempfile::TempDir;

use super::strata::PmemLogBench;
use crate::machine::fs_type;

/// One medium and its scratch space.
pub(super) struct Medium {
    /// Name in variant names: the detected file-system type (`ext4`, `tmpfs`).
    pub label: String,
    /// The role it was given (`ext4` or `tmpfs`), for warnings.
    pub role: &'static str,
    pub dir: PathBuf,
    pub fs_type: String,
    /// Strata's serial PMem log, on the tmpfs medium only.
    pub pmem: Option<PmemLogBench>,
    next_window: u64,
    /// Dropped last: removes everything below.
    scratch: TempDir,
}

impl Medium {
    pub fn open(role: &'static str, dir: &Path, pmem_capacity_bytes: Option<u64>) -> anyhow::Result<Medium> {
        let fs_type = fs_type(dir).unwrap_or_else(|| "unknown".to_string());
        let scratch = tempfile::Builder::new()
            .prefix("strata-bench-logging-")
            .tempdir_in(dir)
            .with_context(|| format!("creating a scratch directory in {}", dir.display()))?;
        let pmem = match pmem_capacity_bytes {
            Some(capacity) => Some(PmemLogBench::create(&scratch.path().join("pmem-region"), capacity)?),
            None => None,
        };
        let label = if fs_type == "unknown" { role.to_string() } else { fs_type.clone() };
        Ok(Medium { label, role, dir: dir.to_path_buf(), fs_type, pmem, next_window: 0, scratch })
    }

    /// A new, empty directory for one window.
    pub fn window_dir(&mut self, what: &str) -> anyhow::Result<PathBuf> {
        self.next_window += 1;
        let d = self.scratch.path().join(format!("{what}-{}", self.next_window));
        std::fs::create_dir(&d).with_context(|| format!("creating {}", d.display()))?;
        Ok(d)
    }
}

/// Removes a window's directory (its files are no longer needed).
pub(super) fn remove_window_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))
}
