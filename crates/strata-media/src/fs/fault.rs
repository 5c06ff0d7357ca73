//! [`FaultFs`]: an in-memory, fault-injecting [`FileSystem`] modelling the SSD
//! crash model of DESIGN.md section 3. Each file has `current` bytes (what
//! reads see) and `durable` bytes (what a crash keeps); directory entries are
//! durable only after `sync_dir` of their parent. Any operation can be made to
//! fail ([`FaultFs::fail_at`]), and the crash-relevant state can be captured
//! after every mutating operation for the crash harness (see `crash_point`).
//!
//! Counted operations (see [`FaultFs::ops`]): create, open, remove, rename,
//! list_dir, sync_dir, and on files read_at, read_exact_at, write_at,
//! set_len, preallocate, sync_data, sync_all. Not counted, never failing:
//! exists, create_dir_all, len.
//!
//! Simplifications: directories themselves are always durable once created;
//! hard links do not exist; paths are compared as given (no `..` handling).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::crash_point::{crash_image, FsCrashPoint, Tear};
use super::paged::{PagedBytes, FILE_BYTES_MAX};
use super::{parent_dir, FileSystem, FsFile};

/// How long an injected fault lasts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FailMode {
    /// Only the chosen operation fails.
    Once,
    /// The chosen operation and every later one fail.
    Forever,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct InodeId(pub(crate) u64);

/// One file's content, independent of the names that reach it.
#[derive(Clone, Default)]
pub(crate) struct Inode {
    pub(crate) current: PagedBytes,
    pub(crate) durable: PagedBytes,
    /// Lowest offset changed since the last sync; `None` when in sync.
    pub(crate) dirty_from: Option<u64>,
    /// Operation index of the last write, to order files by recency.
    pub(crate) last_write_op: u64,
    /// Bytes reserved by `preallocate` (a full disk still takes writes
    /// up to here, as blocks a real file system has allocated).
    pub(crate) reserved: u64,
}

impl Inode {
    /// A file whose current content is durable.
    pub(crate) fn settled(content: PagedBytes) -> Inode {
        Inode { current: content.clone(), durable: content, dirty_from: None, last_write_op: 0, reserved: 0 }
    }

    /// The unsynced range `[dirty_from, current length)`, if not empty.
    pub(crate) fn unsynced_tail(&self) -> Option<(u64, u64)> {
        let dirty_from = self.dirty_from?;
        let len = self.current.len();
        (len > dirty_from).then_some((dirty_from, len))
    }

    fn mark_dirty(&mut self, offset: u64) {
        self.dirty_from = Some(self.dirty_from.map_or(offset, |from| from.min(offset)));
    }
}

/// The crash-relevant state. Every field is shared, so a crash-point
/// snapshot costs reference counts; mutation copies on write.
#[derive(Clone, Default)]
pub(crate) struct Tree {
    pub(crate) dirs: Arc<BTreeSet<PathBuf>>,
    pub(crate) names: Arc<BTreeMap<PathBuf, InodeId>>,
    pub(crate) durable_names: Arc<BTreeMap<PathBuf, InodeId>>,
    pub(crate) inodes: Arc<BTreeMap<InodeId, Arc<Inode>>>,
    pub(crate) last_written: Option<InodeId>,
    pub(crate) next_inode: u64,
}

impl Tree {
    fn dir_exists(&self, dir: &Path) -> bool {
        is_root(dir) || self.dirs.contains(dir)
    }

    fn require_dir(&self, dir: &Path) -> io::Result<()> {
        if self.dir_exists(dir) {
            Ok(())
        } else {
            Err(not_found("directory", dir))
        }
    }

    fn lookup(&self, path: &Path) -> io::Result<InodeId> {
        self.names.get(path).copied().ok_or_else(|| not_found("file", path))
    }

    fn inode(&self, id: InodeId) -> io::Result<&Inode> {
        self.inodes.get(&id).map(|inode| &**inode).ok_or_else(stale_handle)
    }

    fn inode_mut(&mut self, id: InodeId) -> io::Result<&mut Inode> {
        let inode = Arc::make_mut(&mut self.inodes).get_mut(&id).ok_or_else(stale_handle)?;
        Ok(Arc::make_mut(inode))
    }
}

struct State {
    ops: u64,
    /// The last successful mutating operation (what a crash point after it sees).
    last_mutation: u64,
    faults: Vec<(u64, FailMode)>,
    tree: Tree,
    capture: bool,
    points: Vec<FsCrashPoint>,
    tear_seed: u64,
    /// While set, operations that take space fail with `StorageFull`.
    full: bool,
}

impl State {
    fn fault_hits(&self, op: u64) -> bool {
        self.faults.iter().any(|&(at, mode)| match mode {
            FailMode::Once => op == at,
            FailMode::Forever => op >= at,
        })
    }
}

/// The fault-injecting file system. Clones share the same file system.
#[derive(Clone)]
pub struct FaultFs {
    state: Arc<Mutex<State>>,
}

impl Default for FaultFs {
    fn default() -> Self {
        FaultFs::new()
    }
}

impl fmt::Debug for FaultFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("FaultFs")
            .field("ops", &state.ops)
            .field("files", &state.tree.names.len())
            .field("crash_points", &state.points.len())
            .finish()
    }
}

impl FaultFs {
    pub fn new() -> Self {
        FaultFs::with_tear_seed(0)
    }

    /// A file system whose crash points derive their seeded tear from `seed`
    /// (see [`FsCrashPoint::image`]).
    pub fn with_tear_seed(seed: u64) -> Self {
        FaultFs::from_tree(Tree::default(), seed)
    }

    pub(crate) fn from_tree(tree: Tree, tear_seed: u64) -> Self {
        let state = State {
            ops: 0,
            last_mutation: 0,
            faults: Vec::new(),
            tree,
            capture: false,
            points: Vec::new(),
            tear_seed,
            full: false,
        };
        FaultFs { state: Arc::new(Mutex::new(state)) }
    }

    /// Operations performed so far, failed ones included. Operation `n` is
    /// the one after which `ops()` returns `n`.
    pub fn ops(&self) -> u64 {
        self.state.lock().ops
    }

    /// The index of the last successful mutating operation: the crash point
    /// that shows the state a caller sees now. Acknowledgements are stamped
    /// with this, not with [`FaultFs::ops`], so reads between a write and an
    /// acknowledgement cannot move the stamp past the point that must hold it.
    pub fn last_mutation_op(&self) -> u64 {
        self.state.lock().last_mutation
    }

    /// Makes operation `op_index` fail (see [`FaultFs::ops`] for numbering):
    /// `fail_at(fs.ops() + 1, ..)` fails the next operation. A failed
    /// operation changes nothing.
    pub fn fail_at(&self, op_index: u64, mode: FailMode) {
        self.state.lock().faults.push((op_index, mode));
    }

    pub fn clear_faults(&self) {
        self.state.lock().faults.clear();
    }

    /// A full disk while `full`: `create`, and `write_at`, `set_len` and
    /// `preallocate` past a file's length and reserved (preallocated) size,
    /// fail with [`io::ErrorKind::StorageFull`] and change nothing (still
    /// counted); writes into reserved space, shrinking, removing, renaming
    /// and syncing work, as on a real full file system.
    pub fn set_full(&self, full: bool) {
        self.state.lock().full = full;
    }

    /// What survives a crash now: durable directory entries with durable
    /// content, and with [`Tear::LastSector`] part of the unsynced tail of the
    /// most recently written file. Not counted as an operation.
    pub fn crash(&self, tear: Tear) -> FaultFs {
        let state = self.state.lock();
        FaultFs::from_tree(crash_image(&state.tree, tear), state.tear_seed)
    }

    /// When on, the state is captured after every successful mutating operation.
    pub fn capture_crash_points(&self, on: bool) {
        self.state.lock().capture = on;
    }

    /// The crash points captured so far, in operation order.
    pub fn crash_points(&self) -> Vec<FsCrashPoint> {
        self.state.lock().points.clone()
    }

    /// Current content of `path`, without counting an operation (for tests
    /// and diagnostics).
    pub fn peek(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.state.lock();
        let id = state.tree.names.get(path)?;
        state.tree.inodes.get(id).map(|inode| inode.current.to_vec())
    }

    /// Counts one operation, applies injected faults, runs `body` on the tree
    /// and captures a crash point after a successful mutating operation.
    fn run<T>(
        &self,
        what: &str,
        mutating: bool,
        body: impl FnOnce(&mut Tree, u64) -> io::Result<T>,
    ) -> io::Result<T> {
        self.run_taking(what, mutating, None, body)
    }

    /// [`Self::run`] for an operation that may take space: `grows` is the
    /// file and the end it needs. On a full disk it fails unless the file
    /// already has that much, written or reserved.
    fn run_taking<T>(
        &self,
        what: &str,
        mutating: bool,
        grows: Option<(InodeId, u64)>,
        body: impl FnOnce(&mut Tree, u64) -> io::Result<T>,
    ) -> io::Result<T> {
        let mut state = self.state.lock();
        state.ops += 1;
        let op = state.ops;
        if state.fault_hits(op) {
            return Err(io::Error::other(format!("injected fault at operation {op} ({what})")));
        }
        let needs_space = match grows {
            Some((inode, end)) => {
                let inode = state.tree.inode(inode)?;
                end > inode.current.len().max(inode.reserved)
            }
            None => what == "create",
        };
        if state.full && needs_space {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                format!("no space left on device ({what})"),
            ));
        }
        let out = body(&mut state.tree, op)?;
        if mutating {
            state.last_mutation = op;
        }
        if mutating && state.capture {
            let point = FsCrashPoint::new(op, state.tree.clone(), state.tear_seed);
            state.points.push(point);
        }
        Ok(out)
    }

    fn handle(&self, inode: InodeId) -> Box<dyn FsFile> {
        Box::new(FaultFile { fs: self.clone(), inode })
    }
}

impl FileSystem for FaultFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let inode = self.run("create", true, |tree, _| {
            tree.require_dir(parent_dir(path))?;
            if tree.dir_exists(path) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is a directory", path.display()),
                ));
            }
            if let Some(&id) = tree.names.get(path) {
                let inode = tree.inode_mut(id)?;
                inode.current.set_len(0);
                inode.mark_dirty(0);
                return Ok(id);
            }
            let id = InodeId(tree.next_inode);
            tree.next_inode += 1;
            Arc::make_mut(&mut tree.inodes).insert(id, Arc::new(Inode::default()));
            Arc::make_mut(&mut tree.names).insert(path.to_path_buf(), id);
            Ok(id)
        })?;
        Ok(self.handle(inode))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let inode = self.run("open", false, |tree, _| tree.lookup(path))?;
        Ok(self.handle(inode))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.run("remove", true, |tree, _| {
            tree.lookup(path)?;
            Arc::make_mut(&mut tree.names).remove(path);
            Ok(())
        })
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.run("rename", true, |tree, _| {
            let id = tree.lookup(from)?;
            tree.require_dir(parent_dir(to))?;
            let names = Arc::make_mut(&mut tree.names);
            names.remove(from);
            names.insert(to.to_path_buf(), id);
            Ok(())
        })
    }

    fn exists(&self, path: &Path) -> bool {
        let state = self.state.lock();
        state.tree.names.contains_key(path) || state.tree.dir_exists(path)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.run("list_dir", false, |tree, _| {
            tree.require_dir(dir)?;
            let files = tree.names.keys();
            let dirs = tree.dirs.iter().filter(|d| !is_root(d));
            let mut entries: Vec<PathBuf> =
                files.chain(dirs).filter(|entry| parent_dir(entry) == dir).cloned().collect();
            entries.sort();
            Ok(entries)
        })
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        if state.tree.names.contains_key(dir) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{} is a file", dir.display())));
        }
        let dirs = Arc::make_mut(&mut state.tree.dirs);
        for ancestor in dir.ancestors().filter(|a| !is_root(a)) {
            dirs.insert(ancestor.to_path_buf());
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.run("sync_dir", true, |tree, _| {
            tree.require_dir(dir)?;
            let durable = Arc::make_mut(&mut tree.durable_names);
            durable.retain(|name, _| parent_dir(name) != dir);
            for (name, id) in tree.names.iter().filter(|(name, _)| parent_dir(name) == dir) {
                durable.insert(name.clone(), *id);
            }
            Ok(())
        })
    }
}

/// An open file of [`FaultFs`]; keeps working after its name is removed.
struct FaultFile {
    fs: FaultFs,
    inode: InodeId,
}

impl FaultFile {
    fn sync(&self, what: &str) -> io::Result<()> {
        self.fs.run(what, true, |tree, _| {
            let inode = tree.inode_mut(self.inode)?;
            inode.durable = inode.current.clone();
            inode.dirty_from = None;
            Ok(())
        })
    }
}

impl FsFile for FaultFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.fs.run("read", false, |tree, _| Ok(tree.inode(self.inode)?.current.read_at(offset, buf)))
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.fs.run("read", false, |tree, _| {
            if tree.inode(self.inode)?.current.read_at(offset, buf) < buf.len() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("end of file before offset {offset} + {}", buf.len()),
                ));
            }
            Ok(())
        })
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let end = offset.saturating_add(data.len() as u64);
        self.fs.run_taking("write", true, Some((self.inode, end)), |tree, op| {
            check_len(offset.checked_add(data.len() as u64))?;
            if data.is_empty() {
                return Ok(());
            }
            let inode = tree.inode_mut(self.inode)?;
            let old_len = inode.current.len();
            inode.current.write_at(offset, data);
            inode.mark_dirty(offset.min(old_len));
            inode.last_write_op = op;
            tree.last_written = Some(self.inode);
            Ok(())
        })
    }

    fn len(&self) -> io::Result<u64> {
        let state = self.fs.state.lock();
        Ok(state.tree.inode(self.inode)?.current.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.fs.run_taking("set_len", true, Some((self.inode, len)), |tree, _| {
            check_len(Some(len))?;
            let inode = tree.inode_mut(self.inode)?;
            let old_len = inode.current.len();
            inode.current.set_len(len);
            inode.mark_dirty(len.min(old_len));
            Ok(())
        })
    }

    fn preallocate(&self, len: u64) -> io::Result<()> {
        self.fs.run_taking("preallocate", true, Some((self.inode, len)), |tree, _| {
            check_len(Some(len))?;
            let inode = tree.inode_mut(self.inode)?;
            inode.reserved = inode.reserved.max(len);
            Ok(())
        })
    }

    fn sync_data(&self) -> io::Result<()> {
        self.sync("sync_data")
    }

    fn sync_all(&self) -> io::Result<()> {
        self.sync("sync_all")
    }
}

fn is_root(dir: &Path) -> bool {
    dir.as_os_str().is_empty() || dir == Path::new(".") || dir == Path::new("/")
}

fn check_len(end: Option<u64>) -> io::Result<()> {
    match end {
        Some(end) if end <= FILE_BYTES_MAX => Ok(()),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("FaultFs files hold at most {FILE_BYTES_MAX} bytes"),
        )),
    }
}

fn not_found(what: &str, path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{what} {} not found", path.display()))
}

fn stale_handle() -> io::Error {
    io::Error::other("FaultFs handle refers to no file")
}

#[cfg(test)]
#[path = "fault_tests.rs"]
mod tests;
