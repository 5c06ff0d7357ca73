//! A file system in front of the SSD crash lines' `FaultFs` that, while
//! its gate is closed, holds back each log manager's append to its
//! `log-<i>` file and lets them through one log at a time in the order the
//! driver asks (`crate::txn_driver`). So the order of the logs' writes and
//! syncs, and with it every crash point, is a function of the seed,
//! although each log has its own manager thread; and a record can be made
//! durable before the record it depends on, the order Taurus must survive.
//!
//! Only `write_at` waits at the gate; the append's `sync_data` follows it
//! and is counted, so the driver knows when the append is durable.

use crate::error::CrashCheckError;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};
use strata_media::fs::{FileSystem, FsFile};

use crate::txn_driver::WAIT_LIMIT;

#[derive(Default)]
struct GateState {
    closed: bool,
    /// Per log: the append (offset, bytes) waiting at the gate.
    waiting: BTreeMap<usize, (u64, u64)>,
    /// The log whose waiting append may go.
    let_through: Option<usize>,
    /// Per log: syncs completed.
    syncs: BTreeMap<usize, u64>,
}

/// The gate the driver opens and closes.
#[derive(Default)]
pub(crate) struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

impl Gate {
    pub fn close(&self) {
        self.state.lock().closed = true;
    }

    /// Lets every append through, now and later.
    pub fn open(&self) {
        self.state.lock().closed = false;
        self.changed.notify_all();
    }

    /// Lets log `log`'s append through once it waits at the gate, checks it
    /// is the one record ending at `end`, and returns once it is synced.
    pub fn let_through(&self, log: usize, end: u64) -> Result<(), CrashCheckError> {
        let deadline = Instant::now() + WAIT_LIMIT;
        let mut s = self.state.lock();
        while !s.waiting.contains_key(&log) {
            if self.changed.wait_until(&mut s, deadline).timed_out() {
                return Err(CrashCheckError::inconsistent(format!(
                    "log {log}: no append reached the gate in {WAIT_LIMIT:?}"
                )));
            }
        }
        let (at, len) = s.waiting[&log];
        if at + len != end {
            return Err(CrashCheckError::inconsistent(format!(
                "log {log}: the manager appends {at}..{}, the wave's record ends at {end}",
                at + len
            )));
        }
        let synced = s.syncs.get(&log).copied().unwrap_or(0);
        s.let_through = Some(log);
        self.changed.notify_all();
        while s.syncs.get(&log).copied().unwrap_or(0) == synced {
            if self.changed.wait_until(&mut s, deadline).timed_out() {
                return Err(CrashCheckError::inconsistent(format!(
                    "log {log}: its append was not synced in {WAIT_LIMIT:?}"
                )));
            }
        }
        Ok(())
    }

    fn arrive(&self, log: usize, at: u64, len: u64) {
        let mut s = self.state.lock();
        if !s.closed {
            return;
        }
        s.waiting.insert(log, (at, len));
        self.changed.notify_all();
        while s.closed && s.let_through != Some(log) {
            self.changed.wait(&mut s);
        }
        if s.let_through == Some(log) {
            s.let_through = None;
        }
        s.waiting.remove(&log);
    }

    fn synced(&self, log: usize) {
        *self.state.lock().syncs.entry(log).or_default() += 1;
        self.changed.notify_all();
    }
}

/// The gated file system over `inner`.
pub(crate) struct GateFs {
    inner: Arc<dyn FileSystem>,
    gate: Arc<Gate>,
}

impl GateFs {
    pub fn new(inner: Arc<dyn FileSystem>, gate: Arc<Gate>) -> Self {
        GateFs { inner, gate }
    }

    fn wrap(&self, path: &Path, file: Box<dyn FsFile>) -> Box<dyn FsFile> {
        let log = path.file_name().and_then(|n| n.to_str()?.strip_prefix("log-")?.parse().ok());
        match log {
            Some(log) => Box::new(GatedFile { inner: file, log, gate: self.gate.clone() }),
            None => file,
        }
    }
}

impl FileSystem for GateFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(self.wrap(path, self.inner.create(path)?))
    }
    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(self.wrap(path, self.inner.open(path)?))
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.inner.list_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
}

struct GatedFile {
    inner: Box<dyn FsFile>,
    log: usize,
    gate: Arc<Gate>,
}

impl FsFile for GatedFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_at(offset, buf)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.gate.arrive(self.log, offset, data.len() as u64);
        self.inner.write_at(offset, data)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn preallocate(&self, len: u64) -> io::Result<()> {
        self.inner.preallocate(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.inner.sync_data()?;
        self.gate.synced(self.log);
        Ok(())
    }
    fn sync_all(&self) -> io::Result<()> {
        self.inner.sync_all()
    }
}
