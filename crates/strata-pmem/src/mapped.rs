//! Mapped backends (DESIGN.md section 1): `dax` (MAP_SYNC on a DAX file
//! system), `emulated` (shared file mapping, real write-back and fence
//! instructions, optional injected delays) and `msync` (persist = msync of the
//! dirty pages). Also the anonymous mapping used by unit tests.
//!
//! The mapping is shared memory: other processes may map the same file, and
//! concurrent writers to overlapping ranges get unspecified bytes. Callers
//! coordinate writers (every structure in Strata gives each byte range a
//! single writer); all bytes are plain data, so no value is ever invalid.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use memmap2::{MmapMut, MmapRaw};

use crate::error::PmemError;
use crate::offset::CACHE_LINE_BYTES;
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
// pointer is only dereferenced inside bounds-checked methods; concurrent access
// is the shared-memory discipline documented in the module comment.
unsafe impl Send for MappedRegion {}
// SAFETY: as above; `&self` methods never hand out references into the mapping.
unsafe impl Sync for MappedRegion {}

fn io_err(path: &Path, source: io::Error) -> PmemError {
    PmemError::Io { path: path.to_path_buf(), source }
}

fn open_sized(path: &Path, len: u64) -> Result<(File, u64), PmemError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    let existing = file.metadata().map_err(|e| io_err(path, e))?.len();
    let len = existing.max(len);
    if existing < len {
        file.set_len(len).map_err(|e| io_err(path, e))?;
        file.sync_all().map_err(|e| io_err(path, e))?;
    }
    Ok((file, len))
}

impl MappedRegion {
    pub(crate) fn anonymous(len: u64) -> Result<Self, PmemError> {
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

    /// Copies `buf.len()` bytes from `offset` (bounds checked by the caller).
    pub(crate) fn read(&self, offset: u64, buf: &mut [u8]) {
        // SAFETY: the caller checked offset + buf.len() <= self.len, so the
        // source lies inside the live mapping; `buf` is a distinct Rust
        // allocation, so the ranges do not overlap; bytes are plain data.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(offset as usize), buf.as_mut_ptr(), buf.len()) }
    }

    /// Copies `data` to `offset` (bounds checked by the caller).
    pub(crate) fn write(&self, offset: u64, data: &[u8]) {
        // SAFETY: the caller checked offset + data.len() <= self.len, so the
        // destination lies inside the live, writable mapping; `data` is a
        // distinct Rust allocation, so the ranges do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(offset as usize), data.len()) }
    }

    fn word(&self, offset: u64) -> &AtomicU64 {
        // SAFETY: the caller checked that offset is 8-byte aligned and
        // offset + 8 <= self.len; the mapping is page aligned, so the address
        // is 8-byte aligned, and it stays mapped while `self` lives, which
        // bounds the returned reference's lifetime.
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
