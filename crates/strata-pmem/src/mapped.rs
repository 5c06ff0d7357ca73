//! Mapped backends (DESIGN.md section 1): `dax` (MAP_SYNC on a DAX file
//! system), `emulated` (shared file mapping, real write-back and fence
//! instructions, optional injected delays) and `msync` (persist = msync of the
//! dirty pages). Also the anonymous mapping used by unit tests.
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
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use memmap2::{MmapMut, MmapRaw};

use crate::error::PmemError;
use crate::offset::{CACHE_LINE_BYTES, WORD_BYTES};
use crate::persist_insn::{detected_flush_instruction, flush_line, store_fence, FlushInstruction};

/// How a mapped region makes stores durable.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum PersistMethod {
    /// Write-back instructions + sfence (dax, emulated, anonymous).
    CacheLine,
    /// `msync(MS_SYNC)` of the flushed pages.
    Msync,
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

fn open_sized(path: &Path, len: u64) -> Result<(File, u64), PmemError> {
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
        file.sync_all().map_err(|e| io_err(path, e))?;
    }
    if created {
        // The new file's directory entry must survive power loss too.
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io_err(dir, e))?;
    }
    Ok((file, len))
}

impl MappedRegion {
    pub(crate) fn anonymous(len: u64) -> Result<Self, PmemError> {
        let len = len.next_multiple_of(WORD_BYTES);
        let mut map = MmapMut::map_anon(len as usize).map_err(|e| io_err(Path::new("<anonymous>"), e))?;
        let ptr = map.as_mut_ptr();
        Ok(Self::build(Mapping::Anonymous { _map: map }, ptr, len, PersistMethod::CacheLine, None))
    }

    pub(crate) fn file(path: &Path, len: u64, method: PersistMethod) -> Result<Self, PmemError> {
        let (file, len) = open_sized(path, len)?;
        let map = MmapRaw::map_raw(&file).map_err(|e| io_err(path, e))?;
        let ptr = map.as_mut_ptr();
        Ok(Self::build(Mapping::File(map), ptr, len, method, Some(file)))
    }

    #[cfg(target_os = "linux")]
    pub(crate) fn dax(path: &Path, len: u64) -> Result<Self, PmemError> {
        use std::os::fd::AsRawFd;
        let (file, len) = open_sized(path, len)?;
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
                if let Mapping::File(map) = &self.mapping {
                    // msync works on pages; memmap2 aligns the range for us.
                    // A failed msync leaves data possibly unpersisted: that is
                    // an unrecoverable media error for the caller.
                    map.flush_range(offset as usize, len as usize)
                        .unwrap_or_else(|e| panic!("msync of {len} bytes at {offset} failed: {e}"));
                }
            }
        }
    }

    pub(crate) fn fence(&self) {
        if self.method == PersistMethod::CacheLine {
            store_fence();
            spin_ns(self.delay_ns_per_fence);
        }
    }

    /// msync of the whole mapping (checkpoint points of the emulated backend).
    pub(crate) fn sync_all(&self) -> io::Result<()> {
        match &self.mapping {
            Mapping::File(map) => map.flush(),
            _ => Ok(()),
        }
    }
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
