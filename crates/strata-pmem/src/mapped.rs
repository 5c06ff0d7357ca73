//! Mapped backends (DESIGN.md section 1): `dax` (MAP_SYNC on a DAX file
//! system), `emulated` (shared file mapping, real write-back and fence
//! instructions, optional injected delays) and `msync` (persist = msync of the
//! flushed pages). Also the anonymous mapping used by unit tests.
//!
//! In `msync` mode a flush only records its range, rounded out to whole pages,
//! in the region's list of pending runs (merged when they overlap or touch);
//! the next fence, by any thread, msyncs each pending run once. A writer that
//! flushes a 4 KiB page line by line, entry by entry, then fences, writes that
//! page to the disk once per fence instead of once per flush.
//!
//! Folios: the page cache tracks dirtiness, and writes back, per folio, and
//! Linux (ext4 since 6.16) grows the folios of a file read or written
//! sequentially through a mapping (readahead raises their order, up to 2 MiB
//! with a large `read_ahead_kb`). A log ring is written just so, and an msync
//! of one 4 KiB page then writes its whole folio: measured here (Linux 6.18,
//! ext4, read_ahead_kb 8192), 4 KiB per msync at the start of a file, 40 KiB
//! on average over its first 32 MiB, hundreds of KiB per msync in a DecLog
//! ingest run. `msync` mode therefore maps its file `MADV_RANDOM`, which turns
//! off fault readahead, so every folio it faults in is one page. The price: a
//! sequential read of a file not in the page cache (recovery after a reboot)
//! faults its pages in one at a time.
//!
//! The mapping is shared memory that several threads (and other processes)
//! may access at once. Every access this type makes is an aligned 8-byte
//! atomic access (relaxed for plain reads and writes, a compare-exchange
//! merge for partial words), so concurrent overlapping reads and writes are
//! races in the logical sense only, never undefined behaviour: a reader sees
//! each word as some value that was stored to it. Callers still coordinate
//! writers (each structure gives a byte range a single writer); all bytes are
//! plain data, so no value is ever invalid. On x86-64 a relaxed 8-byte
//! atomic load or store is an ordinary `mov`.

use std::fs::{File, OpenOptions};
use std::io;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use memmap2::{Advice, MmapMut, MmapRaw};
use parking_lot::Mutex;

use crate::error::PmemError;
use crate::offset::{CACHE_LINE_BYTES, WORD_BYTES};
use crate::persist_insn::{detected_flush_instruction, flush_line, store_fence, FlushInstruction};

/// How a mapped region makes stores durable.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum PersistMethod {
    /// Write-back instructions + sfence (dax, emulated, anonymous).
    CacheLine,
    /// A flush records its pages; a fence msyncs (`MS_SYNC`) every page
    /// flushed since the last fence, each merged run of pages once.
    Msync,
    /// Flushes and fences do nothing (`volatile`: DRAM tables).
    Nothing,
}

enum Mapping {
    File(MmapRaw),
    /// Held only to keep the mapping alive.
    Anonymous {
        _map: MmapMut,
    },
    Dax {
        ptr: *mut u8,
        len: usize,
    },
}

pub(crate) struct MappedRegion {
    mapping: Mapping,
    ptr: *mut u8,
    len: u64,
    method: PersistMethod,
    insn: FlushInstruction,
    delay_ns_per_line: u64,
    delay_ns_per_fence: u64,
    /// Page size of the mapping: the unit msync writes.
    page_bytes: u64,
    /// `msync` mode: the runs flushed and not yet msynced, page aligned,
    /// sorted, pairwise disjoint and never adjacent (see [`add_run`]). Held
    /// across the msyncs of a fence (see [`MappedRegion::msync_pending`]).
    pending: Mutex<Vec<Range<u64>>>,
    /// msync calls made so far (fences and `sync_all`), for the tests.
    msync_calls: AtomicU64,
    _file: Option<File>,
}

// SAFETY: the mapping is owned by this struct for its whole life and the raw
// pointer is only dereferenced inside bounds-checked methods.
unsafe impl Send for MappedRegion {}
// SAFETY: every access through `&self` is an atomic access to an aligned
// 8-byte word (see `word`), so sharing between threads cannot cause a data
// race; the only references into the mapping are the `&AtomicU64`s `word`
// returns, which never outlive `&self`.
unsafe impl Sync for MappedRegion {}

fn io_err(path: &Path, source: io::Error) -> PmemError {
    PmemError::Io { path: path.to_path_buf(), source }
}

fn open_sized(path: &Path, len: u64, allocate: bool) -> Result<(File, u64), PmemError> {
    let created = !path.exists();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    let existing = file.metadata().map_err(|e| io_err(path, e))?.len();
    // Whole 8-byte words, so every access is a word access inside the file.
    let len = existing.max(len).next_multiple_of(WORD_BYTES);
    if existing < len {
        file.set_len(len).map_err(|e| io_err(path, e))?;
    }
    if allocate {
        allocate_blocks(&file, len).map_err(|e| io_err(path, e))?;
    }
    if existing < len {
        file.sync_all().map_err(|e| io_err(path, e))?;
    }
    if created {
        // The new file's directory entry must survive power loss too.
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io_err(dir, e))?;
    }
    Ok((file, len))
}

/// Allocates the blocks of the whole file (a no-op where they are), so a
/// store through the mapping never needs disk space: into a hole of a
/// sparse file on a full disk it would raise SIGBUS and kill the process.
/// A full disk is then an error of `open`. File systems without
/// `fallocate` keep the sparse file.
#[cfg(target_os = "linux")]
fn allocate_blocks(file: &File, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let Ok(len) = libc::off_t::try_from(len) else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "pool length exceeds off_t"));
    };
    if len == 0 {
        return Ok(());
    }
    loop {
        // SAFETY: `file` keeps its descriptor open for the call, and
        // fallocate takes only integers: no memory of ours is accessed.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EOPNOTSUPP) => return Ok(()),
            _ => return Err(e),
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn allocate_blocks(_file: &File, _len: u64) -> io::Result<()> {
    Ok(())
}

impl MappedRegion {
    pub(crate) fn anonymous(len: u64) -> Result<Self, PmemError> {
        let len = len.next_multiple_of(WORD_BYTES);
        let mut map = MmapMut::map_anon(len as usize).map_err(|e| io_err(Path::new("<anonymous>"), e))?;
        let ptr = map.as_mut_ptr();
        Ok(Self::build(Mapping::Anonymous { _map: map }, ptr, len, PersistMethod::CacheLine, None))
    }

    pub(crate) fn file(path: &Path, len: u64, method: PersistMethod) -> Result<Self, PmemError> {
        // Disk-backed persistence allocates its blocks; `emulated` (PMem
        // emulated in memory, usually on tmpfs) stays sparse rather than
        // commit the whole pool's memory up front.
        let (file, len) = open_sized(path, len, method == PersistMethod::Msync)?;
        let map = MmapRaw::map_raw(&file).map_err(|e| io_err(path, e))?;
        if method == PersistMethod::Msync {
            // Page-sized page-cache folios (module comment, "Folios").
            map.advise(Advice::Random).map_err(|e| io_err(path, e))?;
        }
        let ptr = map.as_mut_ptr();
        Ok(Self::build(Mapping::File(map), ptr, len, method, Some(file)))
    }

    #[cfg(target_os = "linux")]
    pub(crate) fn dax(path: &Path, len: u64) -> Result<Self, PmemError> {
        use std::os::fd::AsRawFd;
        let (file, len) = open_sized(path, len, true)?;
        // SAFETY: mapping a file we hold open, with a length equal to its size;
        // the result is checked against MAP_FAILED before use and unmapped in Drop.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED_VALIDATE | libc::MAP_SYNC,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(PmemError::NotDax { path: path.to_path_buf(), source: io::Error::last_os_error() });
        }
        let ptr = ptr as *mut u8;
        let mapping = Mapping::Dax { ptr, len: len as usize };
        Ok(Self::build(mapping, ptr, len, PersistMethod::CacheLine, Some(file)))
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn dax(path: &Path, _len: u64) -> Result<Self, PmemError> {
        Err(PmemError::NotDax {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::Unsupported, "MAP_SYNC needs Linux"),
        })
    }

    fn build(mapping: Mapping, ptr: *mut u8, len: u64, method: PersistMethod, file: Option<File>) -> Self {
        MappedRegion {
            mapping,
            ptr,
            len,
            method,
            insn: detected_flush_instruction(),
            delay_ns_per_line: 0,
            delay_ns_per_fence: 0,
            page_bytes: page_bytes(),
            pending: Mutex::new(Vec::new()),
            msync_calls: AtomicU64::new(0),
            _file: file,
        }
    }

    pub(crate) fn set_delays(&mut self, ns_per_line: u64, ns_per_fence: u64) {
        self.delay_ns_per_line = ns_per_line;
        self.delay_ns_per_fence = ns_per_fence;
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    pub(crate) fn flush_instruction(&self) -> FlushInstruction {
        self.insn
    }

    /// Splits `[offset, offset + len)` into a partial first word, whole
    /// words, and a partial last word: the byte counts of each part.
    fn split(offset: u64, len: usize) -> (usize, usize, usize) {
        let head = ((WORD_BYTES - offset % WORD_BYTES) % WORD_BYTES).min(len as u64) as usize;
        let body = (len - head) / 8 * 8;
        (head, body, len - head - body)
    }

    /// Copies `buf.len()` bytes from `offset` (bounds checked by the caller)
    /// with one relaxed atomic load per word touched.
    pub(crate) fn read(&self, offset: u64, buf: &mut [u8]) {
        let (head, body, tail) = Self::split(offset, buf.len());
        if head > 0 {
            self.read_partial(offset, &mut buf[..head]);
        }
        let words_at = offset + head as u64;
        for (i, chunk) in buf[head..head + body].chunks_exact_mut(8).enumerate() {
            let v = self.word(words_at + 8 * i as u64).load(Ordering::Relaxed);
            chunk.copy_from_slice(&v.to_ne_bytes());
        }
        if tail > 0 {
            self.read_partial(words_at + body as u64, &mut buf[head + body..]);
        }
    }

    fn read_partial(&self, offset: u64, buf: &mut [u8]) {
        let skip = (offset % WORD_BYTES) as usize;
        let bytes = self.word(offset - skip as u64).load(Ordering::Relaxed).to_ne_bytes();
        buf.copy_from_slice(&bytes[skip..skip + buf.len()]);
    }

    /// Copies `data` to `offset` (bounds checked by the caller): whole words
    /// with one relaxed atomic store each, partial words at the ends merged
    /// with a compare-exchange so neighbouring bytes are never clobbered.
    pub(crate) fn write(&self, offset: u64, data: &[u8]) {
        let (head, body, tail) = Self::split(offset, data.len());
        if head > 0 {
            self.write_partial(offset, &data[..head]);
        }
        let words_at = offset + head as u64;
        for (i, chunk) in data[head..head + body].chunks_exact(8).enumerate() {
            let v = u64::from_ne_bytes(chunk.try_into().expect("8 bytes"));
            self.word(words_at + 8 * i as u64).store(v, Ordering::Relaxed);
        }
        if tail > 0 {
            self.write_partial(words_at + body as u64, &data[head + body..]);
        }
    }

    fn write_partial(&self, offset: u64, part: &[u8]) {
        let skip = (offset % WORD_BYTES) as usize;
        let word = self.word(offset - skip as u64);
        let _ = word.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
            let mut bytes = old.to_ne_bytes();
            bytes[skip..skip + part.len()].copy_from_slice(part);
            Some(u64::from_ne_bytes(bytes))
        });
    }

    fn word(&self, offset: u64) -> &AtomicU64 {
        debug_assert!(offset.is_multiple_of(WORD_BYTES) && offset + WORD_BYTES <= self.len);
        // SAFETY: callers pass an 8-byte aligned offset with offset + 8 <=
        // self.len (the region bounds-checks every range, and `len` is a
        // whole number of words); the mapping is page aligned, so the address
        // is 8-byte aligned, and it stays mapped while `self` lives, which
        // bounds the returned reference's lifetime. Every access to the
        // mapping goes through such 8-byte atomics, never mixed with
        // non-atomic or differently sized accesses, as `from_ptr` requires.
        unsafe { AtomicU64::from_ptr(self.ptr.add(offset as usize) as *mut u64) }
    }

    /// Failure-atomic aligned 8-byte store.
    pub(crate) fn store_u64(&self, offset: u64, value: u64) {
        self.word(offset).store(value, Ordering::Release);
    }

    pub(crate) fn load_u64(&self, offset: u64) -> u64 {
        self.word(offset).load(Ordering::Acquire)
    }

    /// `write` then `flush`, with non-temporal stores for the whole words
    /// where the CPU writes lines back itself (PMDK's `pmem_memcpy` for
    /// large copies): the data bypasses the cache, so there is nothing to
    /// flush and nothing of the caller's working set is evicted. Durable
    /// at the next `fence` (sfence orders the streaming stores).
    pub(crate) fn write_streaming(&self, offset: u64, data: &[u8]) {
        if self.method != PersistMethod::CacheLine || !cfg!(target_arch = "x86_64") {
            self.write(offset, data);
            self.flush(offset, data.len() as u64);
            return;
        }
        let (head, body, tail) = Self::split(offset, data.len());
        if head > 0 {
            self.write(offset, &data[..head]);
            self.flush(offset, head as u64);
        }
        let words_at = offset + head as u64;
        for (i, chunk) in data[head..head + body].chunks_exact(8).enumerate() {
            let v = u64::from_ne_bytes(chunk.try_into().expect("8 bytes"));
            stream_word(self.word(words_at + 8 * i as u64), v);
        }
        if tail > 0 {
            self.write(words_at + body as u64, &data[head + body..]);
            self.flush(words_at + body as u64, tail as u64);
        }
        let lines = (body as u64).div_ceil(CACHE_LINE_BYTES);
        spin_ns(self.delay_ns_per_line * lines);
    }

    pub(crate) fn flush(&self, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        match self.method {
            PersistMethod::CacheLine => {
                let first = offset / CACHE_LINE_BYTES * CACHE_LINE_BYTES;
                let mut line = first;
                while line < offset + len {
                    // SAFETY: `line` is inside [first, offset + len), which the
                    // caller bounds-checked against the mapping.
                    flush_line(self.insn, unsafe { self.ptr.add(line as usize) });
                    line += CACHE_LINE_BYTES;
                }
                let lines = (line - first) / CACHE_LINE_BYTES;
                spin_ns(self.delay_ns_per_line * lines);
            }
            PersistMethod::Msync => {
                // Only recorded: the next fence msyncs it (module comment).
                add_run(&mut self.pending.lock(), page_run(offset, len, self.page_bytes, self.len));
            }
            PersistMethod::Nothing => {}
        }
    }

    pub(crate) fn fence(&self) {
        match self.method {
            PersistMethod::CacheLine => {
                store_fence();
                spin_ns(self.delay_ns_per_fence);
            }
            PersistMethod::Msync => self.msync_pending(),
            PersistMethod::Nothing => {}
        }
    }

    /// `msync` mode's fence: msyncs every pending run once, whichever thread
    /// flushed it, then clears the list.
    ///
    /// The lock is held across the msyncs, not only while taking the runs.
    /// Say thread A flushed run R and fences while thread B, fencing just
    /// before, has already taken R and is msyncing it. Had B emptied the list
    /// and released the lock before its msyncs, A's fence would find nothing
    /// pending and return while R is still on its way to the disk, and A would
    /// acknowledge data a power loss can still take. Holding the lock, A's
    /// fence gets it only after B's msync of R has completed. For the same
    /// reason the runs are cleared only after every msync succeeded: a failed
    /// msync panics and leaves them pending, so no other fence can take the
    /// failure for durability. The price is that flushes and fences of other
    /// threads wait while an msync runs; the next fence then msyncs what they
    /// flushed meanwhile in one go.
    fn msync_pending(&self) {
        let Mapping::File(map) = &self.mapping else {
            return;
        };
        let mut pending = self.pending.lock();
        for run in pending.iter() {
            self.msync_range(map, run.start, run.end - run.start);
        }
        pending.clear();
    }

    fn msync_range(&self, map: &MmapRaw, offset: u64, len: u64) {
        self.msync_calls.fetch_add(1, Ordering::Relaxed);
        // A failed msync leaves data possibly unpersisted: that is an
        // unrecoverable media error for the caller.
        map.flush_range(offset as usize, len as usize)
            .unwrap_or_else(|e| panic!("msync of {len} bytes at {offset} failed: {e}"));
    }

    /// msync of the whole mapping (checkpoint points of the emulated backend).
    /// In `msync` mode it also covers, and so clears, the pending runs; the
    /// lock is held across the msync for the reason given at
    /// [`MappedRegion::msync_pending`].
    pub(crate) fn sync_all(&self) -> io::Result<()> {
        match &self.mapping {
            Mapping::File(map) => {
                let mut pending = self.pending.lock();
                self.msync_calls.fetch_add(1, Ordering::Relaxed);
                map.flush()?;
                pending.clear();
                Ok(())
            }
            _ => Ok(()),
        }
    }

    #[cfg(test)]
    fn msync_calls(&self) -> u64 {
        self.msync_calls.load(Ordering::Relaxed)
    }
}

/// The page size of this machine (4096 if it cannot be read).
fn page_bytes() -> u64 {
    // SAFETY: sysconf only reads a system constant; it has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(page).ok().filter(|p| p.is_power_of_two()).unwrap_or(4096)
}

/// `[offset, offset + len)` rounded out to whole pages of `page_bytes` (a
/// power of two), the end clamped to `limit` (the mapping's length, which
/// need not be a whole number of pages; msync covers the last partial page).
fn page_run(offset: u64, len: u64, page_bytes: u64, limit: u64) -> Range<u64> {
    let start = offset / page_bytes * page_bytes;
    let end = (offset + len).next_multiple_of(page_bytes).min(limit);
    start..end
}

/// Adds `run` to `runs`, which are sorted, pairwise disjoint and never
/// adjacent, and keeps them so: `run` and every run it overlaps or touches
/// become one run.
fn add_run(runs: &mut Vec<Range<u64>>, run: Range<u64>) {
    if run.is_empty() {
        return;
    }
    // Ends are sorted too, as the runs are disjoint: the first run that can
    // merge is the first ending at or after `run.start`, the last is the last
    // starting at or before `run.end`.
    let first = runs.partition_point(|r| r.end < run.start);
    let last = first + runs[first..].partition_point(|r| r.start <= run.end);
    if first == last {
        runs.insert(first, run);
        return;
    }
    let merged = run.start.min(runs[first].start)..run.end.max(runs[last - 1].end);
    runs[first] = merged;
    runs.drain(first + 1..last);
}

impl Drop for MappedRegion {
    fn drop(&mut self) {
        if let Mapping::Dax { ptr, len } = self.mapping {
            // SAFETY: ptr/len are exactly what mmap returned; no reference into
            // the mapping outlives `self`.
            unsafe {
                libc::munmap(ptr as *mut libc::c_void, len);
            }
        }
    }
}

/// Busy-waits to model slower media; a sleep would be far too coarse.
fn spin_ns(ns: u64) {
    if ns == 0 {
        return;
    }
    let until = Instant::now() + Duration::from_nanos(ns);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// A non-temporal 8-byte store to `word` (a plain atomic store off x86-64).
fn stream_word(word: &AtomicU64, value: u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `word` is a live, 8-byte aligned word of the mapping (it is a
    // reference); movnti writes exactly those 8 bytes, and the mapping's
    // words are only accessed atomically or by whole-word stores like this
    // one, ordered for readers by the sfence of the caller's fence.
    unsafe {
        std::arch::x86_64::_mm_stream_si64(word.as_ptr() as *mut i64, value as i64)
    }
    #[cfg(not(target_arch = "x86_64"))]
    word.store(value, Ordering::Relaxed);
}

// The tests compare lists of runs, one-run lists included: `[0..24]` is
// meant as a list of one range.
#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// An msync-persisted file has every block allocated when it opens (no
    /// holes for a store to fault on when the disk is full), also when an
    /// existing sparse file is reopened.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_mapped_pool_file_is_allocated_not_sparse() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let len = 1u64 << 20;
        let sparse = dir.path().join("sparse");
        File::create(&sparse).unwrap().set_len(len).unwrap();
        assert!(std::fs::metadata(&sparse).unwrap().blocks() * 512 < len, "the fixture starts sparse");
        for path in [dir.path().join("fresh"), sparse] {
            let region = MappedRegion::file(&path, len, PersistMethod::Msync).unwrap();
            drop(region);
            let allocated = std::fs::metadata(&path).unwrap().blocks() * 512;
            assert!(allocated >= len, "{}: {allocated} of {len} bytes allocated", path.display());
        }
    }

    #[test]
    fn page_runs_round_out_to_pages_and_stop_at_the_mapping_end() {
        assert_eq!(page_run(0, 1, 4096, 1 << 20), 0..4096);
        assert_eq!(page_run(4095, 2, 4096, 1 << 20), 0..8192);
        assert_eq!(page_run(4096, 4096, 4096, 1 << 20), 4096..8192);
        assert_eq!(page_run(8200, 8, 4096, 10_000), 8192..10_000);
    }

    #[test]
    fn add_run_merges_overlapping_and_adjacent_runs() {
        let mut runs = Vec::new();
        add_run(&mut runs, 8..12);
        add_run(&mut runs, 0..2);
        add_run(&mut runs, 20..24);
        assert_eq!(runs, [0..2, 8..12, 20..24], "disjoint runs stay apart, sorted");
        add_run(&mut runs, 12..14);
        assert_eq!(runs, [0..2, 8..14, 20..24], "touching on the right");
        add_run(&mut runs, 6..8);
        assert_eq!(runs, [0..2, 6..14, 20..24], "touching on the left");
        add_run(&mut runs, 9..10);
        assert_eq!(runs, [0..2, 6..14, 20..24], "inside one");
        add_run(&mut runs, 3..5);
        assert_eq!(runs, [0..2, 3..5, 6..14, 20..24], "in a gap, touching neither");
        add_run(&mut runs, 1..21);
        assert_eq!(runs, [0..24], "spanning several");
        add_run(&mut runs, 30..30);
        assert_eq!(runs, [0..24], "an empty run adds nothing");
    }

    #[test]
    fn random_runs_merge_like_a_page_bitmap() {
        let seed = 0x5eed_4a65;
        println!("seed {seed:#x}");
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        for case in 0..500 {
            let mut runs = Vec::new();
            let mut pages = [false; 64];
            for _ in 0..rng.gen_range(1..20) {
                let start = rng.gen_range(0..64u64);
                let end = rng.gen_range(start..=64);
                add_run(&mut runs, start..end);
                pages[start as usize..end as usize].fill(true);
            }
            // The model: the maximal stretches of set pages, in order.
            let mut want = Vec::new();
            let mut i = 0;
            while i < pages.len() {
                let start = i;
                while i < pages.len() && pages[i] {
                    i += 1;
                }
                if i > start {
                    want.push(start as u64..i as u64);
                }
                i += 1;
            }
            assert_eq!(runs, want, "seed {seed:#x} case {case}");
        }
    }

    fn msync_region(dir: &tempfile::TempDir, pages: u64) -> (MappedRegion, std::path::PathBuf) {
        let path = dir.path().join("region");
        let region = MappedRegion::file(&path, pages * page_bytes(), PersistMethod::Msync).unwrap();
        (region, path)
    }

    #[test]
    fn a_flush_is_msynced_by_the_next_fence() {
        let dir = tempfile::tempdir().unwrap();
        let page = page_bytes();
        let (r, path) = msync_region(&dir, 4);
        let at = page + 100;
        r.write(at, b"durable");
        r.flush(at, 7);
        assert_eq!(r.msync_calls(), 0, "a flush only records its pages");
        assert_eq!(*r.pending.lock(), [page..2 * page]);
        r.fence();
        assert_eq!(r.msync_calls(), 1, "the fence msyncs the flushed page");
        assert!(r.pending.lock().is_empty());
        // Read back through the file. This sees the page cache, which the
        // mapping shares; the msync count above is what says the page was
        // written to the disk.
        let file = std::fs::read(&path).unwrap();
        assert_eq!(&file[at as usize..at as usize + 7], b"durable");
    }

    #[test]
    fn many_small_flushes_of_one_page_cost_one_msync_per_fence() {
        let dir = tempfile::tempdir().unwrap();
        let page = page_bytes();
        let (r, _) = msync_region(&dir, 8);
        for round in 0..3u64 {
            let before = r.msync_calls();
            // DecLog's pattern: every line of a page flushed on its own, some twice.
            for line in 0..page / CACHE_LINE_BYTES {
                let at = 2 * page + line * CACHE_LINE_BYTES;
                r.store_u64(at, round);
                r.flush(at, 8);
                r.flush(at, CACHE_LINE_BYTES);
            }
            r.fence();
            assert_eq!(r.msync_calls() - before, 1, "round {round}");
        }
        // Pages apart: one msync each. Filling the gap joins them into one run.
        let before = r.msync_calls();
        r.flush(0, 8);
        r.flush(4 * page, 8);
        r.fence();
        assert_eq!(r.msync_calls() - before, 2, "two separate runs");
        r.flush(0, 8);
        r.flush(4 * page, 8);
        r.flush(page + 8, 3 * page);
        assert_eq!(*r.pending.lock(), [0..5 * page]);
        r.fence();
        assert_eq!(r.msync_calls() - before, 3, "one merged run");
        r.fence();
        assert_eq!(r.msync_calls() - before, 3, "a fence with nothing pending msyncs nothing");
    }

    #[test]
    fn sync_all_covers_and_clears_the_pending_runs() {
        let dir = tempfile::tempdir().unwrap();
        let (r, _) = msync_region(&dir, 4);
        r.store_u64(0, 7);
        r.flush(0, 8);
        r.sync_all().unwrap();
        assert_eq!(r.msync_calls(), 1);
        assert!(r.pending.lock().is_empty());
        r.fence();
        assert_eq!(r.msync_calls(), 1, "nothing left for the fence");
    }

    /// The VmFlags line of /proc/self/smaps for the mapping at `addr`.
    #[cfg(target_os = "linux")]
    fn vm_flags(addr: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = range.split_once('-') {
                if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) {
                    inside = lo <= addr && addr < hi;
                    continue;
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return flags.to_string();
                }
            }
        }
        panic!("no mapping at {addr:#x} in /proc/self/smaps");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn only_msync_files_are_mapped_without_readahead() {
        let dir = tempfile::tempdir().unwrap();
        let (msync, _) = msync_region(&dir, 4);
        let emulated =
            MappedRegion::file(&dir.path().join("emulated"), 4 * page_bytes(), PersistMethod::CacheLine)
                .unwrap();
        // `rr` is VM_RAND_READ, what MADV_RANDOM sets.
        let flags = vm_flags(msync.ptr as usize);
        assert!(flags.split_whitespace().any(|f| f == "rr"), "msync mapping flags: {flags}");
        let flags = vm_flags(emulated.ptr as usize);
        assert!(!flags.split_whitespace().any(|f| f == "rr"), "emulated mapping flags: {flags}");
    }

    #[test]
    fn streaming_writes_store_what_plain_writes_store() {
        let seed = 0x57_u64;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let dir = tempfile::tempdir().unwrap();
        for method in [PersistMethod::CacheLine, PersistMethod::Msync] {
            let streamed =
                MappedRegion::file(&dir.path().join(format!("{method:?}")), 2 * page_bytes(), method)
                    .unwrap();
            let plain = MappedRegion::anonymous(2 * page_bytes()).unwrap();
            for _ in 0..200 {
                let len = rng.gen_range(0..600usize);
                let offset = rng.gen_range(0..2 * page_bytes() - len as u64);
                let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                streamed.write_streaming(offset, &data);
                plain.write(offset, &data);
            }
            streamed.fence();
            let (mut a, mut b) = (vec![0; 2 * page_bytes() as usize], vec![0; 2 * page_bytes() as usize]);
            streamed.read(0, &mut a);
            plain.read(0, &mut b);
            assert!(a == b, "{method:?}: streamed and plain writes differ (seed {seed:#x})");
        }
    }
}
