//! The PMem OOO queue of chronicledb-pmem.txt section 4.3 ("Persistent
//! Memory Queues", "Indexing"): events appended in arrival (system-time)
//! order into a PMem area, each push persisted before it returns; *pure*
//! (queries scan the area) or *indexed* (the lightweight DRAM
//! application-time index of PMem offsets that replaces the full DRAM copy).
//! Layout and protocols: `docs/format/events-ooo-queue.md`.
//!
//! Publish protocol, one fence per push: the record (tag = generation, CRC
//! over slot index, tag and event) is written into the next slot, its lines
//! are flushed, and one fence makes it durable. There is no count word: the
//! valid records of the current generation always form a prefix of the slots
//! (slot `i + 1` is written only after slot `i` is durable, and a slot is
//! rewritten within a generation only after recovery found it invalid), so
//! recovery finds the end by a scan (indexed) or a binary search (pure).
//!
//! Truncate: one failure-atomic store of `generation + 1`, persisted (one
//! fence); every record of the old generation is then invalid. When the new
//! generation's low 32 bits would be 0 (the record tag would wrap), the
//! store marks a reset instead, the slots are zeroed and persisted, and the
//! generation after is stored; `open` completes an interrupted reset.

use std::collections::BTreeSet;
use std::sync::Arc;

use strata_pmem::{Region, RegionOffset};

use super::pmem_layout::{
    decode_header, decode_record, encode_header, encode_record, slot_bytes_for, tag_of, u64_at, PmemGeometry,
    RecordFault, HEADER_GENERATION_OFFSET, HEADER_MAGIC_OFFSET, HEADER_VERSION_OFFSET, PMEM_BASE_ALIGN_BYTES,
    PMEM_GENERATION_MAX, PMEM_HEADER_BYTES, PMEM_RECORDS_OFFSET, PMEM_RESET_TAG,
};
use super::{
    check_event, event_ts, sorted_list, EventList, OooIndexing, OooQueryStats, OooQueue, OooRecovery,
    QueryCounters,
};
use crate::EventError;

/// Bytes read at once when scanning slots.
const SCAN_CHUNK_BYTES: u64 = 64 << 10;
/// Bytes zeroed per write when formatting or resetting.
const ZERO_CHUNK_BYTES: u64 = 1 << 20;

#[cfg(any(test, feature = "crashtest"))]
thread_local! {
    /// A bug planted by the crash tests to show they catch it.
    pub static PLANTED_BUG: std::cell::Cell<PlantedBug> = const { std::cell::Cell::new(PlantedBug::None) };
}

#[cfg(any(test, feature = "crashtest"))]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PlantedBug {
    None,
    /// Push returns before its fence.
    SkipPushFence,
}

#[cfg(any(test, feature = "crashtest"))]
fn planted(bug: PlantedBug) -> bool {
    PLANTED_BUG.with(|b| b.get() == bug)
}

/// The PMem OOO queue on the area `[base, base + area_bytes)` of a region.
pub struct PmemOooQueue {
    region: Arc<Region>,
    base: RegionOffset,
    geometry: PmemGeometry,
    generation: u64,
    /// Valid records: slots `0..len`.
    len: u64,
    indexing: OooIndexing,
    /// `(ts, slot)` of every event (indexed flavour); the slot gives the PMem
    /// offset `base + 64 + slot * slot_bytes`.
    index: BTreeSet<(i64, u64)>,
    record_buf: Vec<u8>,
    counters: QueryCounters,
}

impl std::fmt::Debug for PmemOooQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PmemOooQueue")
            .field("base", &self.base)
            .field("geometry", &self.geometry)
            .field("generation", &self.generation)
            .field("len", &self.len)
            .field("indexing", &self.indexing)
            .finish()
    }
}

impl PmemOooQueue {
    /// The area size that holds `capacity_bytes` of `event_bytes`-byte events
    /// (at least one), header included.
    pub fn area_bytes_for(event_bytes: usize, capacity_bytes: u64) -> u64 {
        let events = (capacity_bytes / event_bytes.max(1) as u64).max(1);
        PMEM_RECORDS_OFFSET + events * slot_bytes_for(event_bytes)
    }

    /// Formats an empty queue on `[base, base + area_bytes)`, generation 1.
    /// Zeroes the slots (so no earlier content can ever validate); three fences.
    pub fn format(
        region: Arc<Region>,
        base: RegionOffset,
        area_bytes: u64,
        event_bytes: usize,
        indexing: OooIndexing,
    ) -> Result<PmemOooQueue, EventError> {
        Self::format_at_generation(region, base, area_bytes, event_bytes, indexing, 1)
    }

    /// [`PmemOooQueue::format`] starting at `generation` (tests use one near
    /// a 2^32 boundary to exercise the tag wrap).
    pub fn format_at_generation(
        region: Arc<Region>,
        base: RegionOffset,
        area_bytes: u64,
        event_bytes: usize,
        indexing: OooIndexing,
        generation: u64,
    ) -> Result<PmemOooQueue, EventError> {
        let geometry = PmemGeometry::for_area(event_bytes, area_bytes)?;
        check_area(&region, base, area_bytes)?;
        if generation > PMEM_GENERATION_MAX - 2 {
            return Err(EventError::invalid(format!("first generation {generation:#x} too large")));
        }
        let generation = if tag_of(generation) == PMEM_RESET_TAG { generation + 1 } else { generation };
        // No magic while the rest is written: a crash leaves no queue.
        region.store_u64_persist(base + HEADER_MAGIC_OFFSET, 0);
        zero_range(&region, base + PMEM_HEADER_BYTES, geometry.used_area_bytes() - PMEM_HEADER_BYTES);
        let header = encode_header(&geometry, generation);
        region.write(base + HEADER_VERSION_OFFSET, &header[HEADER_VERSION_OFFSET as usize..]);
        region.flush(base, geometry.used_area_bytes());
        region.fence();
        region.store_u64_persist(base + HEADER_MAGIC_OFFSET, u64_at(&header, HEADER_MAGIC_OFFSET));
        Ok(PmemOooQueue::empty(region, base, geometry, generation, indexing))
    }

    /// Opens the queue at `base` after a restart or crash: validates the
    /// header, completes an interrupted reset, finds the end of the valid
    /// records (indexed: a scan that rebuilds the index; pure: a binary
    /// search), and reports the work done.
    pub fn open(
        region: Arc<Region>,
        base: RegionOffset,
        indexing: OooIndexing,
    ) -> Result<(PmemOooQueue, OooRecovery), EventError> {
        check_area(&region, base, PMEM_HEADER_BYTES)?;
        let header = region.read_vec(base, PMEM_HEADER_BYTES as usize);
        let (geometry, mut generation) = decode_header(&header, base.0)?;
        if !region.contains(base, geometry.area_bytes) {
            return Err(EventError::corruption(
                format!("PMem OOO queue header at {base}"),
                format!("area of {} bytes exceeds the region of {}", geometry.area_bytes, region.len()),
            ));
        }
        let mut report = OooRecovery { bytes_read: PMEM_HEADER_BYTES, ..OooRecovery::default() };
        if tag_of(generation) == PMEM_RESET_TAG {
            generation = finish_reset(&region, base, &geometry, generation);
            report.reset_completed = true;
        }
        let mut q = PmemOooQueue::empty(region, base, geometry, generation, indexing);
        match indexing {
            OooIndexing::Indexed => q.scan_to_end(&mut report)?,
            OooIndexing::Pure => q.search_end(&mut report)?,
        }
        report.events_recovered = q.len;
        report.generation = q.generation;
        Ok((q, report))
    }

    fn empty(
        region: Arc<Region>,
        base: RegionOffset,
        geometry: PmemGeometry,
        generation: u64,
        indexing: OooIndexing,
    ) -> PmemOooQueue {
        PmemOooQueue {
            region,
            base,
            record_buf: vec![0; geometry.slot_bytes as usize],
            geometry,
            generation,
            len: 0,
            indexing,
            index: BTreeSet::new(),
            counters: QueryCounters::default(),
        }
    }

    pub fn indexing(&self) -> OooIndexing {
        self.indexing
    }

    pub fn base(&self) -> RegionOffset {
        self.base
    }

    pub fn region(&self) -> &Arc<Region> {
        &self.region
    }

    /// Slots in the area: the capacity in events.
    pub fn slot_count(&self) -> u64 {
        self.geometry.slot_count
    }

    pub fn slot_bytes(&self) -> u64 {
        self.geometry.slot_bytes
    }

    /// PMem bytes the records occupy (headers and padding included).
    pub fn media_bytes_used(&self) -> u64 {
        PMEM_HEADER_BYTES + self.len * self.geometry.slot_bytes
    }

    /// DRAM index entries (0 for the pure flavour).
    pub fn index_entries(&self) -> usize {
        self.index.len()
    }

    fn tag(&self) -> u32 {
        tag_of(self.generation)
    }

    fn slot_offset(&self, slot: u64) -> RegionOffset {
        self.base + self.geometry.slot_offset(slot)
    }

    /// Whether slot `slot` holds a valid record of the current generation.
    fn slot_is_valid(&self, slot: u64, buf: &mut [u8]) -> bool {
        self.region.read(self.slot_offset(slot), buf);
        self.check(slot, buf).is_ok()
    }

    fn check<'b>(&self, slot: u64, record: &'b [u8]) -> Result<&'b [u8], RecordFault> {
        decode_record(record, slot, self.tag(), self.geometry.event_bytes)
    }

    fn corrupt(&self, slot: u64, fault: RecordFault) -> EventError {
        EventError::corruption(
            format!("PMem OOO queue slot {slot} at {}", self.slot_offset(slot)),
            format!("{fault:?} inside the {} valid records of generation {}", self.len, self.generation),
        )
    }

    /// Visits the records of slots `from..to` in chunks: `f(slot, record)`.
    fn for_each_record(
        &self,
        from: u64,
        to: u64,
        mut f: impl FnMut(u64, &[u8]) -> Result<bool, EventError>,
    ) -> Result<u64, EventError> {
        let slot_bytes = self.geometry.slot_bytes;
        let per_chunk = (SCAN_CHUNK_BYTES / slot_bytes).max(1);
        let mut buf = Vec::new();
        let mut bytes_read = 0;
        let mut slot = from;
        'chunks: while slot < to {
            let n = per_chunk.min(to - slot);
            buf.resize((n * slot_bytes) as usize, 0);
            self.region.read(self.slot_offset(slot), &mut buf);
            bytes_read += buf.len() as u64;
            for (i, record) in buf.chunks_exact(slot_bytes as usize).enumerate() {
                if !f(slot + i as u64, record)? {
                    break 'chunks;
                }
            }
            slot += n;
        }
        Ok(bytes_read)
    }

    /// Indexed recovery: decodes slots from 0 until the first invalid one,
    /// rebuilding the index.
    fn scan_to_end(&mut self, report: &mut OooRecovery) -> Result<(), EventError> {
        let mut index = BTreeSet::new();
        let mut end = self.geometry.slot_count;
        let bytes = self.for_each_record(0, self.geometry.slot_count, |slot, record| {
            report.records_examined += 1;
            match self.check(slot, record) {
                Ok(event) => {
                    index.insert((event_ts(event), slot));
                    Ok(true)
                }
                Err(_) => {
                    end = slot;
                    Ok(false)
                }
            }
        })?;
        report.bytes_read += bytes;
        report.index_entries_built = index.len() as u64;
        self.index = index;
        self.len = end;
        self.check_after_end(report)
    }

    /// Pure recovery: binary search for the first invalid slot (the valid
    /// records form a prefix), O(log slots) record reads.
    fn search_end(&mut self, report: &mut OooRecovery) -> Result<(), EventError> {
        let mut buf = vec![0u8; self.geometry.slot_bytes as usize];
        let (mut lo, mut hi) = (0, self.geometry.slot_count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            report.records_examined += 1;
            report.bytes_read += buf.len() as u64;
            if self.slot_is_valid(mid, &mut buf) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        self.len = lo;
        self.check_after_end(report)
    }

    /// The slot after the first invalid one must be invalid too: only the
    /// last record written can be torn. Records whether a torn slot ended
    /// the queue.
    fn check_after_end(&self, report: &mut OooRecovery) -> Result<(), EventError> {
        let mut buf = vec![0u8; self.geometry.slot_bytes as usize];
        if self.len < self.geometry.slot_count {
            self.region.read(self.slot_offset(self.len), &mut buf);
            report.records_examined += 1;
            report.bytes_read += buf.len() as u64;
            report.torn_tail_dropped = matches!(self.check(self.len, &buf), Err(RecordFault::Crc { .. }));
        }
        let next = self.len + 1;
        if next < self.geometry.slot_count {
            report.records_examined += 1;
            report.bytes_read += buf.len() as u64;
            if self.slot_is_valid(next, &mut buf) {
                return Err(EventError::corruption(
                    format!("PMem OOO queue slot {} at {}", self.len, self.slot_offset(self.len)),
                    format!("invalid record before the valid slot {next} (generation {})", self.generation),
                ));
            }
        }
        Ok(())
    }

    /// Reads and checks the record of slot `slot` into `buf`.
    fn read_event<'b>(&self, slot: u64, buf: &'b mut [u8]) -> Result<&'b [u8], EventError> {
        self.region.read(self.slot_offset(slot), buf);
        match decode_record(buf, slot, self.tag(), self.geometry.event_bytes) {
            Ok(_) => {
                let start = super::pmem_layout::RECORD_EVENT_OFFSET as usize;
                Ok(&buf[start..start + self.geometry.event_bytes])
            }
            Err(fault) => Err(self.corrupt(slot, fault)),
        }
    }

    /// Indexed: the events of index entries in `range`, fetched from PMem.
    fn fetch_indexed(&self, t_lo: i64, t_hi: i64) -> Result<EventList, EventError> {
        let mut out = EventList::new(self.geometry.event_bytes);
        let mut buf = vec![0u8; self.geometry.slot_bytes as usize];
        let mut records = 0;
        for &(_, slot) in self.index.range((t_lo, 0)..=(t_hi, u64::MAX)) {
            out.push(self.read_event(slot, &mut buf)?);
            records += 1;
        }
        self.counters.add(records, 0, records * self.geometry.slot_bytes);
        Ok(out)
    }

    /// Pure: scans every record and sorts the matches.
    fn scan_range(&self, t_lo: i64, t_hi: i64) -> Result<EventList, EventError> {
        let event_bytes = self.geometry.event_bytes;
        let mut found = Vec::new();
        let mut matched = Vec::new();
        let bytes = self.for_each_record(0, self.len, |slot, record| {
            let event = self.check(slot, record).map_err(|fault| self.corrupt(slot, fault))?;
            let ts = event_ts(event);
            if (t_lo..=t_hi).contains(&ts) {
                found.push((ts, slot, matched.len()));
                matched.extend_from_slice(event);
            }
            Ok(true)
        })?;
        self.counters.add(self.len, 0, bytes);
        Ok(sorted_list(event_bytes, found, &matched))
    }
}

impl OooQueue for PmemOooQueue {
    fn variant(&self) -> String {
        format!("pmem-{}", self.indexing.name())
    }

    fn event_bytes(&self) -> usize {
        self.geometry.event_bytes
    }

    /// Writes the record, flushes its lines, one fence: durable on return.
    fn push(&mut self, event: &[u8]) -> Result<(), EventError> {
        check_event(event, self.geometry.event_bytes)?;
        if self.len == self.geometry.slot_count {
            return Err(EventError::Full {
                what: "PMem OOO queue",
                detail: format!("{} events of {} bytes", self.len, self.geometry.event_bytes),
            });
        }
        let slot = self.len;
        let tag = self.tag();
        encode_record(&mut self.record_buf, slot, tag, event);
        let at = self.slot_offset(slot);
        self.region.write(at, &self.record_buf);
        self.region.flush(at, self.geometry.slot_bytes);
        #[cfg(any(test, feature = "crashtest"))]
        let skip_fence = planted(PlantedBug::SkipPushFence);
        #[cfg(not(any(test, feature = "crashtest")))]
        let skip_fence = false;
        if !skip_fence {
            self.region.fence();
        }
        self.len += 1;
        if self.indexing == OooIndexing::Indexed {
            self.index.insert((event_ts(event), slot));
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn capacity_bytes(&self) -> u64 {
        self.geometry.slot_count * self.geometry.event_bytes as u64
    }

    fn get_range(&self, t_lo: i64, t_hi: i64) -> Result<EventList, EventError> {
        if t_lo > t_hi {
            return Ok(EventList::new(self.geometry.event_bytes));
        }
        match self.indexing {
            OooIndexing::Indexed => self.fetch_indexed(t_lo, t_hi),
            OooIndexing::Pure => self.scan_range(t_lo, t_hi),
        }
    }

    fn sorted(&self) -> Result<EventList, EventError> {
        self.get_range(i64::MIN, i64::MAX)
    }

    fn generation(&self) -> u64 {
        self.generation
    }

    /// One persisted 8-byte store of the next generation (one fence), or at
    /// a tag wrap the zeroing reset (three fences plus the zeroing).
    fn truncate(&mut self) -> Result<(), EventError> {
        let next = self.generation + 1;
        if next + 1 > PMEM_GENERATION_MAX {
            return Err(EventError::Full {
                what: "PMem OOO queue generations",
                detail: format!("generation {:#x}", self.generation),
            });
        }
        let generation_word = self.base + HEADER_GENERATION_OFFSET;
        self.generation = if tag_of(next) == PMEM_RESET_TAG {
            self.region.store_u64_persist(generation_word, next);
            finish_reset(&self.region, self.base, &self.geometry, next)
        } else {
            self.region.store_u64_persist(generation_word, next);
            next
        };
        self.len = 0;
        self.index.clear();
        Ok(())
    }

    fn query_stats(&self) -> OooQueryStats {
        self.counters.snapshot()
    }
}

/// Zeroes every slot and persists the generation after the reset marker
/// `marker` (whose tag is [`PMEM_RESET_TAG`]). Returns that generation.
fn finish_reset(region: &Region, base: RegionOffset, geometry: &PmemGeometry, marker: u64) -> u64 {
    let records = base + PMEM_RECORDS_OFFSET;
    let len = geometry.used_area_bytes() - PMEM_RECORDS_OFFSET;
    zero_range(region, records, len);
    region.flush(records, len);
    region.fence();
    let next = marker + 1;
    region.store_u64_persist(base + HEADER_GENERATION_OFFSET, next);
    next
}

/// Stores zeros over `[at, at + len)` (not flushed).
fn zero_range(region: &Region, at: RegionOffset, len: u64) {
    let zeros = vec![0u8; ZERO_CHUNK_BYTES.min(len) as usize];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(ZERO_CHUNK_BYTES);
        region.write(at + done, &zeros[..n as usize]);
        done += n;
    }
}

fn check_area(region: &Region, base: RegionOffset, len: u64) -> Result<(), EventError> {
    if !base.is_aligned(PMEM_BASE_ALIGN_BYTES) {
        return Err(EventError::invalid(format!(
            "PMem OOO queue base {base} is not {PMEM_BASE_ALIGN_BYTES}-byte aligned"
        )));
    }
    if !region.contains(base, len) {
        return Err(EventError::invalid(format!(
            "PMem OOO area of {len} bytes at {base} exceeds the region of {} bytes",
            region.len()
        )));
    }
    Ok(())
}
