//! The SSD file-system trait of DESIGN.md section 1 ("SSD: files in a data
//! directory behind a small file-system trait"), the helpers that make
//! directory changes durable, and its implementations:
//!
//! - [`RealFs`]: `std::fs` plus `fallocate`/`fsync` through libc;
//! - [`FaultFs`]: in memory, fault injecting, modelling the SSD crash model of
//!   DESIGN.md section 3 (unsynced data lost, last sector torn, Nth operation
//!   failing), and its crash points ([`FsCrashPoint`]); the harness that
//!   checks them against the oracle is `strata_crashtest::fs_harness`.
//!
//! Durability contract every caller relies on: file content is durable only
//! after `sync_data`/`sync_all` on the file; a directory entry (create, rename,
//! remove) is durable only after `sync_dir` of its parent directory.

mod crash_point;
mod fault;
mod paged;
mod real;

use std::io;
use std::path::{Path, PathBuf};

pub use crash_point::{FsCrashPoint, Tear, SECTOR_BYTES};
pub use fault::{FailMode, FaultFs};
pub use real::RealFs;

/// A file system holding a data directory. Object safe: used as
/// `Arc<dyn FileSystem>`.
pub trait FileSystem: Send + Sync {
    /// Creates `path` or truncates it if it exists; opened for reading and writing.
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Opens an existing file for reading and writing.
    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Atomically renames `from` to `to`, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn exists(&self, path: &Path) -> bool;
    /// Entries (files and directories) of `dir`, as full paths, sorted.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Makes the entries of `dir` durable (fsync of the directory).
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// An open file with positional I/O. Shared between threads by reference.
pub trait FsFile: Send + Sync {
    /// Reads up to `buf.len()` bytes at `offset`; fewer only at end of file.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;

    /// Fills `buf` from `offset` or fails with `UnexpectedEof`.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            let read = self.read_at(offset + done as u64, &mut buf[done..])?;
            if read == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("read_exact_at: end of file at offset {}", offset + done as u64),
                ));
            }
            done += read;
        }
        Ok(())
    }

    /// Writes the whole of `data` at `offset`, extending the file if needed.
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Visible length in bytes.
    fn len(&self) -> io::Result<u64>;

    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }

    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Reserves space for `len` bytes without changing the visible length
    /// (`fallocate(FALLOC_FL_KEEP_SIZE)`); a no-op where unsupported.
    fn preallocate(&self, len: u64) -> io::Result<()>;
    /// Makes the content durable (fdatasync).
    fn sync_data(&self) -> io::Result<()>;
    /// Makes the content and metadata durable (fsync).
    fn sync_all(&self) -> io::Result<()>;
}

/// The directory whose `sync_dir` makes the entry `path` durable.
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Creates (or truncates) `path` and fsyncs its parent directory, so the new
/// entry survives a crash.
pub fn create_durably(fs: &dyn FileSystem, path: &Path) -> io::Result<Box<dyn FsFile>> {
    let file = fs.create(path)?;
    fs.sync_dir(parent_dir(path))?;
    Ok(file)
}

/// Renames `from` to `to` and fsyncs the parent directories, so the rename
/// survives a crash.
pub fn rename_durably(fs: &dyn FileSystem, from: &Path, to: &Path) -> io::Result<()> {
    fs.rename(from, to)?;
    let to_dir = parent_dir(to);
    fs.sync_dir(to_dir)?;
    let from_dir = parent_dir(from);
    if from_dir != to_dir {
        fs.sync_dir(from_dir)?;
    }
    Ok(())
}
