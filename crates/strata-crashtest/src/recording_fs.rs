//! A file system that remembers its durable state at every PMem operation
//! boundary, for crash lines whose protocol keeps files off PMem (the
//! checkpoint's block files and manifest) while its log is on the simulator.
//!
//! Every mutating call is tagged with the simulator's operation count at
//! that moment. Before the first mutation under a new tag, and whenever the
//! workload calls [`RecordingFs::settle`], the state after every mutation so
//! far is kept as a crash copy (`FaultFs::crash(Tear::None)`: durable
//! entries and content only). [`Snapshots::at`] then gives the file system as
//! of a PMem crash point.
//!
//! Tag rule: a mutation tagged `p` ran after PMem operation `p` and before
//! `p + 1`. A crash point with op `c` is recovered with every mutation tagged
//! `<= c`. For a crash point taken right after operation `c` this is the
//! state a moment later, once the file work between `c` and `c + 1` is done:
//! no PMem word changes meanwhile, so it is a state the crash model allows.
//! (Points taken just before fence `c + 1` need it: stores issued after the
//! file work may already be evicted.) Crashes in the middle of file work
//! (torn or unsynced files) are the SSD lines' subject.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use strata_media::fs::{FaultFs, FileSystem, FsFile, Tear};
use strata_pmem::Region;

/// The file system after each PMem operation with file work: (tag, state),
/// tags increasing.
#[derive(Clone, Debug, Default)]
pub struct Snapshots(Vec<(u64, FaultFs)>);

impl Snapshots {
    /// A fresh copy of the file system as of a crash at PMem operation `op`.
    pub fn at(&self, op: u64) -> FaultFs {
        match self.0.iter().rev().find(|(tag, _)| *tag <= op) {
            Some((_, fs)) => fs.crash(Tear::None),
            None => FaultFs::new(),
        }
    }

    /// How many states were captured.
    pub fn count(&self) -> usize {
        self.0.len()
    }
}

struct Recorder {
    /// Tag of the mutations not yet captured, if any.
    pending: Option<u64>,
    snapshots: Vec<(u64, FaultFs)>,
}

struct Shared {
    inner: FaultFs,
    region: Arc<Region>,
    recorder: Mutex<Recorder>,
}

impl Shared {
    /// Called before every mutation.
    fn note(&self) {
        let now = self.region.as_sim().map_or(0, |s| s.ops());
        let mut r = self.recorder.lock();
        if let Some(tag) = r.pending {
            if tag != now {
                r.snapshots.push((tag, self.inner.crash(Tear::None)));
            }
        }
        r.pending = Some(now);
    }

    fn settle(&self) {
        let mut r = self.recorder.lock();
        if let Some(tag) = r.pending.take() {
            let snap = self.inner.crash(Tear::None);
            match r.snapshots.last_mut() {
                Some((last, fs)) if *last == tag => *fs = snap,
                _ => r.snapshots.push((tag, snap)),
            }
        }
    }
}

/// An in-memory [`FaultFs`] whose durable states are recorded by PMem
/// operation (see the module comment). Clones share the same file system.
#[derive(Clone)]
pub struct RecordingFs(Arc<Shared>);

impl RecordingFs {
    /// An empty file system clocked by `region`'s simulator.
    pub fn new(region: Arc<Region>) -> Self {
        RecordingFs(Arc::new(Shared {
            inner: FaultFs::new(),
            region,
            recorder: Mutex::new(Recorder { pending: None, snapshots: Vec::new() }),
        }))
    }

    /// Captures the state after every mutation so far (call after each
    /// engine call, so the last file work is captured too).
    pub fn settle(&self) {
        self.0.settle();
    }

    /// Every captured state (after a final [`RecordingFs::settle`]).
    pub fn snapshots(&self) -> Snapshots {
        self.settle();
        Snapshots(self.0.recorder.lock().snapshots.clone())
    }
}

impl FileSystem for RecordingFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.0.note();
        let file = self.0.inner.create(path)?;
        Ok(Box::new(RecordingFile { file, fs: self.0.clone() }))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let file = self.0.inner.open(path)?;
        Ok(Box::new(RecordingFile { file, fs: self.0.clone() }))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.0.note();
        self.0.inner.remove(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.note();
        self.0.inner.rename(from, to)
    }

    fn exists(&self, path: &Path) -> bool {
        self.0.inner.exists(path)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.0.inner.list_dir(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.0.note();
        self.0.inner.create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.0.note();
        self.0.inner.sync_dir(dir)
    }
}

struct RecordingFile {
    file: Box<dyn FsFile>,
    fs: Arc<Shared>,
}

impl FsFile for RecordingFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read_at(offset, buf)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.fs.note();
        self.file.write_at(offset, data)
    }

    fn len(&self) -> io::Result<u64> {
        self.file.len()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.fs.note();
        self.file.set_len(len)
    }

    fn preallocate(&self, len: u64) -> io::Result<()> {
        self.fs.note();
        self.file.preallocate(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.fs.note();
        self.file.sync_data()
    }

    fn sync_all(&self) -> io::Result<()> {
        self.fs.note();
        self.file.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_pmem::RegionOffset;

    fn durable_file(fs: &RecordingFs, name: &str) {
        let path = Path::new("/d").join(name);
        let f = fs.create(&path).unwrap();
        f.write_at(0, b"x").unwrap();
        f.sync_data().unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
    }

    #[test]
    fn each_crash_point_sees_the_file_work_done_by_then() {
        let region = Arc::new(Region::sim(256));
        let fs = RecordingFs::new(region.clone());
        fs.create_dir_all(Path::new("/d")).unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        region.store_u64_persist(RegionOffset(0), 1); // ops 1 (flush) and 2 (fence)
        durable_file(&fs, "a");
        region.store_u64_persist(RegionOffset(8), 2); // ops 3 and 4
        durable_file(&fs, "b");
        fs.settle();
        region.store_u64_persist(RegionOffset(16), 3);
        let snaps = fs.snapshots();
        assert_eq!(snaps.count(), 3, "one state per tag with file work");
        let has = |op: u64, name: &str| snaps.at(op).exists(&Path::new("/d").join(name));
        assert!(snaps.at(0).exists(Path::new("/d")));
        assert!(!has(1, "a") && has(2, "a") && has(3, "a"));
        assert!(!has(3, "b") && has(4, "b") && has(100, "b"));
    }

    #[test]
    fn unsynced_content_is_not_in_a_snapshot() {
        let region = Arc::new(Region::sim(256));
        let fs = RecordingFs::new(region.clone());
        fs.create_dir_all(Path::new("/d")).unwrap();
        let f = fs.create(Path::new("/d/x")).unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        f.write_at(0, b"unsynced").unwrap();
        let copy = fs.snapshots().at(0);
        let g = copy.open(Path::new("/d/x")).unwrap();
        assert_eq!(g.len().unwrap(), 0);
    }
}
