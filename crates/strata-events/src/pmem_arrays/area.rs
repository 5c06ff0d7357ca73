//! [`Area`]: the byte range `[base, base + area_bytes)` of a region that one
//! PMem array owns. Every access goes through it: offsets are relative to
//! `base`, every range is checked against the area (an error, never a write
//! outside it, never a panic in the region), and every write, read, flush and
//! fence is counted in [`PmemArrayCounters`]. Opening an array's area reads
//! and checks the header both arrays share ([`Area::open_formatted`],
//! [`OpenedArea`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use strata_pmem::{Region, RegionOffset, CACHE_LINE_BYTES, WORD_BYTES};

use super::header::{ArrayHeader, HEADER_BYTES};
use crate::ids::EventError;

/// An array's area must start on a cache line (so aligned slots are cache-line
/// aligned in the region, not just in the area).
pub const AREA_ALIGN_BYTES: u64 = 64;
/// Slots start at an area offset that is a multiple of this (an XPLine).
pub const SLOTS_ALIGN_BYTES: u64 = 256;

/// What one array did to PMem since it was formatted or opened. Benchmarks
/// divide these by the nodes written or queried.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PmemArrayCounters {
    /// Slot or node writes requested (`set`, `set_unpersisted`, `write_node`, `write_range`).
    pub writes: u64,
    /// Slot or node reads requested (`get`, `get_into`, `read_node`, `read_range`).
    pub reads: u64,
    /// Bytes stored to PMem, including seal, journal and count words.
    pub bytes_written: u64,
    /// Bytes loaded from PMem, including seal words.
    pub bytes_read: u64,
    /// Cache lines written back (each flush call counts the lines it overlaps).
    pub lines_flushed: u64,
    /// Bytes named by flush calls.
    pub bytes_persisted: u64,
    pub fences: u64,
}

#[derive(Default)]
struct Counters {
    writes: AtomicU64,
    reads: AtomicU64,
    bytes_written: AtomicU64,
    bytes_read: AtomicU64,
    lines_flushed: AtomicU64,
    bytes_persisted: AtomicU64,
    fences: AtomicU64,
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

/// The area of one array; `what` names the array in errors.
pub(crate) struct Area {
    region: Arc<Region>,
    base: RegionOffset,
    len_bytes: u64,
    what: &'static str,
    counters: Counters,
}

impl Area {
    pub(crate) fn new(
        region: Arc<Region>,
        base: RegionOffset,
        len_bytes: u64,
        what: &'static str,
    ) -> Result<Area, EventError> {
        if !base.is_aligned(AREA_ALIGN_BYTES) {
            return Err(EventError::invalid(format!(
                "{what} area at {base} is not {AREA_ALIGN_BYTES}-byte aligned"
            )));
        }
        if !region.contains(base, len_bytes) {
            return Err(EventError::invalid(format!(
                "{what} area of {len_bytes} bytes at {base} exceeds the region of {} bytes",
                region.len()
            )));
        }
        Ok(Area { region, base, len_bytes, what, counters: Counters::default() })
    }

    pub(crate) fn region(&self) -> &Arc<Region> {
        &self.region
    }

    pub(crate) fn base(&self) -> RegionOffset {
        self.base
    }

    /// The region offset of `[rel, rel + len)`, if it lies inside the area.
    pub(crate) fn at(&self, rel: u64, len: u64) -> Result<RegionOffset, EventError> {
        match rel.checked_add(len) {
            Some(end) if end <= self.len_bytes => Ok(self.base + rel),
            _ => Err(EventError::invalid(format!(
                "{}: {len} bytes at area offset {rel} lie outside the area of {} bytes at {}",
                self.what, self.len_bytes, self.base
            ))),
        }
    }

    fn word_at(&self, rel: u64) -> Result<RegionOffset, EventError> {
        if !rel.is_multiple_of(WORD_BYTES) {
            return Err(EventError::invalid(format!(
                "{}: 8-byte word at unaligned area offset {rel}",
                self.what
            )));
        }
        self.at(rel, WORD_BYTES)
    }

    pub(crate) fn write(&self, rel: u64, data: &[u8]) -> Result<(), EventError> {
        let at = self.at(rel, data.len() as u64)?;
        self.region.write(at, data);
        bump(&self.counters.bytes_written, data.len() as u64);
        Ok(())
    }

    pub(crate) fn read(&self, rel: u64, buf: &mut [u8]) -> Result<(), EventError> {
        let at = self.at(rel, buf.len() as u64)?;
        self.region.read(at, buf);
        bump(&self.counters.bytes_read, buf.len() as u64);
        Ok(())
    }

    /// Failure-atomic 8-byte store (little-endian); volatile until persisted.
    pub(crate) fn store_u64(&self, rel: u64, value: u64) -> Result<(), EventError> {
        let at = self.word_at(rel)?;
        self.region.store_u64(at, value);
        bump(&self.counters.bytes_written, WORD_BYTES);
        Ok(())
    }

    pub(crate) fn load_u64(&self, rel: u64) -> Result<u64, EventError> {
        let at = self.word_at(rel)?;
        bump(&self.counters.bytes_read, WORD_BYTES);
        Ok(self.region.load_u64(at))
    }

    /// Writes back the lines overlapping `[rel, rel + len)`; a no-op for `len == 0`.
    pub(crate) fn flush(&self, rel: u64, len: u64) -> Result<(), EventError> {
        let at = self.at(rel, len)?;
        if len == 0 {
            return Ok(());
        }
        self.region.flush(at, len);
        let lines = (at.0 + len - 1) / CACHE_LINE_BYTES - at.0 / CACHE_LINE_BYTES + 1;
        bump(&self.counters.lines_flushed, lines);
        bump(&self.counters.bytes_persisted, len);
        Ok(())
    }

    pub(crate) fn fence(&self) {
        self.region.fence();
        bump(&self.counters.fences, 1);
    }

    /// `flush` then `fence`.
    pub(crate) fn persist(&self, rel: u64, len: u64) -> Result<(), EventError> {
        self.flush(rel, len)?;
        self.fence();
        Ok(())
    }

    /// `store_u64` then `persist` of that word.
    pub(crate) fn store_u64_persist(&self, rel: u64, value: u64) -> Result<(), EventError> {
        self.store_u64(rel, value)?;
        self.persist(rel, WORD_BYTES)
    }

    pub(crate) fn count_write(&self) {
        bump(&self.counters.writes, 1);
    }

    pub(crate) fn count_read(&self) {
        bump(&self.counters.reads, 1);
    }

    pub(crate) fn counters(&self) -> PmemArrayCounters {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        PmemArrayCounters {
            writes: get(&c.writes),
            reads: get(&c.reads),
            bytes_written: get(&c.bytes_written),
            bytes_read: get(&c.bytes_read),
            lines_flushed: get(&c.lines_flushed),
            bytes_persisted: get(&c.bytes_persisted),
            fences: get(&c.fences),
        }
    }
}

/// The area of a formatted array being opened: the area, its header as read
/// (magic, CRC, version and reserved word checked, the fields not yet), and
/// the location naming the header in errors.
pub(crate) struct OpenedArea {
    pub(crate) area: Area,
    pub(crate) header: ArrayHeader,
    pub(crate) location: String,
}

impl Area {
    /// Opens the area `[base, base + area_bytes)` of an array named `what`
    /// whose header has `magic`, and reads and decodes the header.
    /// `Corruption` if the area is smaller than a header or the header is bad.
    pub(crate) fn open_formatted(
        region: Arc<Region>,
        base: RegionOffset,
        area_bytes: u64,
        what: &'static str,
        magic: u64,
    ) -> Result<OpenedArea, EventError> {
        let area = Area::new(region, base, area_bytes, what)?;
        let location = format!("{what} header at {base}");
        let mut bytes = [0u8; HEADER_BYTES as usize];
        area.read(0, &mut bytes).map_err(|_| {
            EventError::corruption(&location, format!("area of {area_bytes} bytes is smaller than a header"))
        })?;
        let header = ArrayHeader::decode(&bytes, magic, &location)?;
        Ok(OpenedArea { area, header, location })
    }
}

impl OpenedArea {
    /// `Corruption` at the header's location.
    pub(crate) fn corruption(&self, what: impl Into<String>) -> EventError {
        EventError::corruption(&self.location, what)
    }

    /// `Corruption` unless the header read is `expected`, the header
    /// `format` writes for this area; `None` means the area holds none of
    /// the array's `slots` (named so in the error).
    pub(crate) fn expect_header(&self, expected: Option<ArrayHeader>, slots: &str) -> Result<(), EventError> {
        let expected = expected.ok_or_else(|| {
            self.corruption(format!("area of {} bytes holds none of its {slots}", self.area.len_bytes))
        })?;
        self.header.expect_equal(&expected, &self.location)
    }
}

/// Rounds `value` up to a multiple of `align` (a power of two), `None` on overflow.
pub(crate) fn align_up(value: u64, align: u64) -> Option<u64> {
    Some(value.checked_add(align - 1)? & !(align - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_outside_the_area_are_errors_and_leave_the_region_alone() {
        let region = Arc::new(Region::sim(1024));
        let area = Area::new(region.clone(), RegionOffset(256), 256, "test array").unwrap();
        assert!(area.write(250, &[1; 8]).is_err(), "crosses the end");
        assert!(area.write(u64::MAX - 2, &[1; 8]).is_err(), "offset overflow");
        assert!(area.store_u64(256, 7).is_err());
        assert!(area.store_u64(4, 7).is_err(), "unaligned word");
        assert!(area.flush(0, 257).is_err());
        assert!(region.read_vec(RegionOffset(0), 1024).iter().all(|b| *b == 0), "nothing written");
        area.write(248, &[9; 8]).unwrap();
        assert_eq!(region.read_vec(RegionOffset(504), 8), [9; 8], "relative to base");
        let err = Area::new(region.clone(), RegionOffset(32), 64, "test array").err().unwrap();
        assert!(err.to_string().contains("aligned"), "{err}");
        assert!(Area::new(region, RegionOffset(512), 1024, "test array").is_err(), "beyond the region");
    }

    #[test]
    fn counters_count_lines_bytes_and_fences() {
        let area = Area::new(Arc::new(Region::sim(1024)), RegionOffset(64), 512, "test array").unwrap();
        area.write(60, &[1; 8]).unwrap();
        area.persist(60, 8).unwrap();
        let c = area.counters();
        assert_eq!((c.bytes_written, c.lines_flushed, c.bytes_persisted, c.fences), (8, 2, 8, 1));
        assert_eq!(align_up(65, 64), Some(128));
        assert_eq!(align_up(u64::MAX, 64), None);
    }
}
