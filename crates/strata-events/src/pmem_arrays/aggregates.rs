//! [`AggregateArray`]: the aggregates of the TAB+-tree's nodes as a flat PMem
//! array (chronicledb-pmem.txt section 4.1 "Aggregates", Fig. 4 (b)): slot `i`
//! holds the aggregate record of node `i`. The record encoding belongs to the
//! caller; here it is `record_bytes` opaque bytes fixed at format.
//!
//! Area layout (offsets relative to the area's base; the format document has
//! the byte tables): header (64 bytes), redo journal (target and seal words,
//! then one record at 128), the seal table (one 8-byte word per slot), the
//! slots (from a 256-byte boundary, `stride_bytes` apart).
//!
//! Validity: a slot is valid when its seal word is `SEAL_TAG << 32 | crc`,
//! `crc` = CRC32C of the slot number (8 bytes LE) then the record. Seals are
//! 0 after format.
//! - First write of a slot (seal 0): write the record, persist it, store the
//!   seal, persist it (2 fences). A crash leaves seal 0 (empty) or the seal
//!   over a persisted record; a torn record never has a seal.
//! - Overwrite (seal non-zero): copy slot number and record to the journal,
//!   persist, store the journal seal, persist, write record and seal in place,
//!   persist, clear the journal seal, persist (4 fences). `open` redoes a
//!   sealed journal, so after a crash the slot holds the old or the new record.
//! - Batched first writes: `set_unpersisted` writes the record only (the seal
//!   it will get is kept in DRAM); `persist_range` persists the records of
//!   every pending slot in the range, fences, stores and persists their seals,
//!   fences (2 fences per batch). Pending slots read back in this process and
//!   are empty after a crash or reopen.
//!
//! A seal that is non-zero but wrong (bad tag, CRC mismatch) cannot come from
//! a crash: `get` reports it as `Corruption`.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use parking_lot::Mutex;
use strata_pmem::{Region, RegionOffset, CACHE_LINE_BYTES};

use super::area::{align_up, Area, PmemArrayCounters, SLOTS_ALIGN_BYTES};
use super::header::{ArrayHeader, HEADER_BYTES, HEADER_OFFSET_MAGIC, PMEM_ARRAYS_VERSION};
use super::SlotLayout;
use crate::ids::EventError;

/// "STAGGARR" as a little-endian u64.
pub const AGGREGATE_ARRAY_MAGIC: u64 = u64::from_le_bytes(*b"STAGGARR");
/// Largest aggregate record.
pub const MAX_RECORD_BYTES: u64 = 65536;
/// Area offset of the journal's target slot number.
pub const JOURNAL_TARGET_OFFSET: u64 = 64;
/// Area offset of the journal's seal word.
pub const JOURNAL_SEAL_OFFSET: u64 = 72;
/// Area offset of the journal's record.
pub const JOURNAL_RECORD_OFFSET: u64 = 128;
/// Size of one seal word.
pub const SEAL_WORD_BYTES: u64 = 8;
/// High 32 bits of a valid slot seal.
pub const SEAL_TAG: u32 = 0x5EA1_A66E;
/// High 32 bits of a valid journal seal.
pub const JOURNAL_SEAL_TAG: u32 = 0x10A6_5EA1;

const WHAT: &str = "aggregate array";

/// A seal word: `tag << 32 | CRC32C(slot LE ++ record)`. Never 0.
pub(crate) fn seal_word(tag: u32, slot: u64, record: &[u8]) -> u64 {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&slot.to_le_bytes()), record);
    (u64::from(tag) << 32) | u64::from(crc)
}

/// Where things lie in an area holding `capacity` slots.
struct Plan {
    seals_offset: u64,
    slots_offset: u64,
    end: u64,
}

fn plan(record_bytes: u64, layout: SlotLayout, capacity: u64) -> Option<Plan> {
    let seals_offset = align_up(JOURNAL_RECORD_OFFSET.checked_add(record_bytes)?, CACHE_LINE_BYTES)?;
    let seals_end = seals_offset.checked_add(capacity.checked_mul(SEAL_WORD_BYTES)?)?;
    let slots_offset = align_up(seals_end, SLOTS_ALIGN_BYTES)?;
    let end = slots_offset.checked_add(capacity.checked_mul(layout.stride_bytes(record_bytes))?)?;
    Some(Plan { seals_offset, slots_offset, end })
}

/// The most slots an area of `area_bytes` holds.
fn max_capacity(area_bytes: u64, record_bytes: u64, layout: SlotLayout) -> u64 {
    let Some(fixed) = plan(record_bytes, layout, 0) else { return 0 };
    if area_bytes < fixed.end {
        return 0;
    }
    // An upper bound (every slot costs its stride and its seal beyond the
    // seal table's start), lowered while the 256-byte alignment of the slots
    // makes it not fit (a few steps at most).
    let mut n = (area_bytes - fixed.seals_offset) / (layout.stride_bytes(record_bytes) + SEAL_WORD_BYTES);
    while n > 0 && plan(record_bytes, layout, n).is_none_or(|p| p.end > area_bytes) {
        n -= 1;
    }
    n
}

fn check_record_bytes(record_bytes: u64) -> Result<(), EventError> {
    if record_bytes == 0 || record_bytes > MAX_RECORD_BYTES {
        return Err(EventError::invalid(format!(
            "aggregate record size {record_bytes} is not in 1..={MAX_RECORD_BYTES} bytes"
        )));
    }
    Ok(())
}

/// The header `format` writes for this area, `None` if no slot fits.
fn expected_header(record_bytes: u64, layout: SlotLayout, area_bytes: u64) -> Option<ArrayHeader> {
    let capacity = max_capacity(area_bytes, record_bytes, layout);
    if capacity == 0 {
        return None;
    }
    let p = plan(record_bytes, layout, capacity)?;
    Some(ArrayHeader {
        magic: AGGREGATE_ARRAY_MAGIC,
        version: PMEM_ARRAYS_VERSION,
        layout: layout.code(),
        record_bytes: u32::try_from(record_bytes).ok()?,
        stride_bytes: u32::try_from(layout.stride_bytes(record_bytes)).ok()?,
        capacity,
        area_bytes,
        table_offset: p.seals_offset,
        slots_offset: p.slots_offset,
    })
}

/// The aggregate records of the tree's nodes, slot `i` for node `i`.
///
/// Every method takes `&self`. One writer per slot at a time; a read of a
/// slot that is being overwritten may see `Corruption` (the tree never does
/// that: it writes a node's aggregates when the node is completed).
pub struct AggregateArray {
    area: Area,
    layout: SlotLayout,
    record_bytes: u64,
    stride_bytes: u64,
    capacity: u64,
    seals_offset: u64,
    slots_offset: u64,
    /// Slots written by `set_unpersisted` and not yet sealed, with their seals.
    pending: Mutex<BTreeMap<u64, u64>>,
    /// Serializes overwrites (one journal).
    journal: Mutex<()>,
    /// Planted bug for the crash test's self-check: seal in the record's fence.
    #[cfg(any(test, feature = "crashtest"))]
    planted_seal_with_record: std::sync::atomic::AtomicBool,
}

impl AggregateArray {
    /// Plants the crash test's bug on this array (sealing in the record's
    /// fence): a crash-test hook, compiled only for tests and under the
    /// `crashtest` feature, which only `strata-crashtest` turns on.
    #[cfg(any(test, feature = "crashtest"))]
    pub fn plant_seal_with_record(&self, on: bool) {
        self.planted_seal_with_record.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Area size for `capacity` slots of `record_bytes` in `layout`.
    pub fn area_bytes_for(capacity: u64, record_bytes: u64, layout: SlotLayout) -> Result<u64, EventError> {
        check_record_bytes(record_bytes)?;
        plan(record_bytes, layout, capacity)
            .map(|p| p.end)
            .ok_or_else(|| EventError::invalid(format!("{capacity} aggregate slots overflow an area size")))
    }

    /// Formats the area `[base, base + area_bytes)` of `region` (base 64-byte
    /// aligned) with as many slots as fit; every slot starts empty. Not
    /// crash-atomic: the magic is cleared first and written last, so an
    /// interrupted format leaves an area `open` rejects (format it again).
    pub fn format(
        region: Arc<Region>,
        base: RegionOffset,
        area_bytes: u64,
        record_bytes: u64,
        layout: SlotLayout,
    ) -> Result<AggregateArray, EventError> {
        check_record_bytes(record_bytes)?;
        let area = Area::new(region, base, area_bytes, WHAT)?;
        let header = expected_header(record_bytes, layout, area_bytes).ok_or_else(|| {
            EventError::invalid(format!(
                "{WHAT} area of {area_bytes} bytes holds no slot of {record_bytes} bytes ({} layout)",
                layout.name()
            ))
        })?;
        area.store_u64_persist(HEADER_OFFSET_MAGIC, 0)?;
        area.write(JOURNAL_TARGET_OFFSET, &[0; 16])?;
        let seals_bytes = header.capacity * SEAL_WORD_BYTES;
        let zeros = vec![0u8; seals_bytes.min(1 << 16) as usize];
        let mut at = 0;
        while at < seals_bytes {
            let n = (seals_bytes - at).min(zeros.len() as u64);
            area.write(header.table_offset + at, &zeros[..n as usize])?;
            at += n;
        }
        area.flush(JOURNAL_TARGET_OFFSET, 16)?;
        area.flush(header.table_offset, seals_bytes)?;
        area.fence();
        let bytes = header.encode();
        area.write(8, &bytes[8..])?;
        area.persist(8, HEADER_BYTES - 8)?;
        area.store_u64_persist(HEADER_OFFSET_MAGIC, header.magic)?;
        Ok(Self::from_header(area, &header, layout))
    }

    /// Opens a formatted area: validates the header (`Corruption` if it is
    /// not exactly what `format` writes for an area of `area_bytes`), then
    /// redoes an overwrite a crash interrupted. O(1) in the number of slots.
    pub fn open(
        region: Arc<Region>,
        base: RegionOffset,
        area_bytes: u64,
    ) -> Result<AggregateArray, EventError> {
        let opened = Area::open_formatted(region, base, area_bytes, WHAT, AGGREGATE_ARRAY_MAGIC)?;
        let header = opened.header;
        let layout = SlotLayout::from_code(header.layout)
            .ok_or_else(|| opened.corruption(format!("unknown layout code {}", header.layout)))?;
        let record_bytes = u64::from(header.record_bytes);
        check_record_bytes(record_bytes).map_err(|e| opened.corruption(e.to_string()))?;
        opened.expect_header(expected_header(record_bytes, layout, area_bytes), "slots")?;
        let array = Self::from_header(opened.area, &header, layout);
        array.recover_journal()?;
        Ok(array)
    }

    fn from_header(area: Area, header: &ArrayHeader, layout: SlotLayout) -> AggregateArray {
        AggregateArray {
            area,
            layout,
            record_bytes: header.record_bytes.into(),
            stride_bytes: header.stride_bytes.into(),
            capacity: header.capacity,
            seals_offset: header.table_offset,
            slots_offset: header.slots_offset,
            pending: Mutex::new(BTreeMap::new()),
            journal: Mutex::new(()),
            #[cfg(any(test, feature = "crashtest"))]
            planted_seal_with_record: Default::default(),
        }
    }

    pub fn layout(&self) -> SlotLayout {
        self.layout
    }

    pub fn record_bytes(&self) -> u64 {
        self.record_bytes
    }

    pub fn stride_bytes(&self) -> u64 {
        self.stride_bytes
    }

    /// Number of slots (node ids `0..capacity`).
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    pub fn region(&self) -> &Arc<Region> {
        self.area.region()
    }

    /// What this array wrote, read and persisted since format or open.
    pub fn counters(&self) -> PmemArrayCounters {
        self.area.counters()
    }

    /// Slots written by `set_unpersisted` and not yet persisted.
    pub fn pending_count(&self) -> usize {
        self.pending.lock().len()
    }

    /// Region offset of slot `i`'s record.
    pub fn slot_offset(&self, i: u64) -> Result<RegionOffset, EventError> {
        self.check_slot(i)?;
        Ok(self.area.base() + self.slot_rel(i))
    }

    fn slot_rel(&self, i: u64) -> u64 {
        self.slots_offset + i * self.stride_bytes
    }

    fn seal_rel(&self, i: u64) -> u64 {
        self.seals_offset + i * SEAL_WORD_BYTES
    }

    fn check_slot(&self, i: u64) -> Result<(), EventError> {
        if i >= self.capacity {
            return Err(EventError::invalid(format!("{WHAT} has no slot {i}: capacity {}", self.capacity)));
        }
        Ok(())
    }

    fn check_write(&self, i: u64, record: &[u8]) -> Result<(), EventError> {
        if record.len() as u64 != self.record_bytes {
            return Err(EventError::invalid(format!(
                "aggregate record of {} bytes for slot {i}; the array holds {}-byte records",
                record.len(),
                self.record_bytes
            )));
        }
        if i >= self.capacity {
            return Err(EventError::Full {
                what: WHAT,
                detail: format!(
                    "slot {i} is beyond the last slot {} (capacity {})",
                    self.capacity - 1,
                    self.capacity
                ),
            });
        }
        Ok(())
    }

    /// Writes the aggregate record of node `i` and persists it: when this
    /// returns, slot `i` reads `record` after any crash. 2 fences for a first
    /// write, 4 for an overwrite (atomic through the journal).
    pub fn set(&self, i: u64, record: &[u8]) -> Result<(), EventError> {
        self.check_write(i, record)?;
        self.area.count_write();
        if self.area.load_u64(self.seal_rel(i))? != 0 {
            return self.overwrite(i, record);
        }
        let seal = seal_word(SEAL_TAG, i, record);
        self.area.write(self.slot_rel(i), record)?;
        #[cfg(any(test, feature = "crashtest"))]
        if self.planted_seal_with_record.load(std::sync::atomic::Ordering::Relaxed) {
            self.area.store_u64(self.seal_rel(i), seal)?;
            self.area.flush(self.slot_rel(i), self.record_bytes)?;
            self.area.flush(self.seal_rel(i), SEAL_WORD_BYTES)?;
            self.area.fence();
            self.pending.lock().remove(&i);
            return Ok(());
        }
        self.area.persist(self.slot_rel(i), self.record_bytes)?;
        self.area.store_u64_persist(self.seal_rel(i), seal)?;
        self.pending.lock().remove(&i);
        Ok(())
    }

    /// Writes the record of node `i` without persisting it: it reads back at
    /// once, and becomes durable at the next `persist_range` covering `i` (or
    /// `persist_pending`). Until then a crash or reopen leaves the slot empty.
    /// Overwriting a valid slot is done (and persisted) at once, as by `set`.
    pub fn set_unpersisted(&self, i: u64, record: &[u8]) -> Result<(), EventError> {
        self.check_write(i, record)?;
        self.area.count_write();
        if self.area.load_u64(self.seal_rel(i))? != 0 {
            return self.overwrite(i, record);
        }
        self.area.write(self.slot_rel(i), record)?;
        self.pending.lock().insert(i, seal_word(SEAL_TAG, i, record));
        Ok(())
    }

    /// Persists every pending slot in `slots`: records, one fence, seals, one
    /// fence. Adjacent slots are flushed with one call. No fence if none is pending.
    pub fn persist_range(&self, slots: Range<u64>) -> Result<(), EventError> {
        let batch: Vec<(u64, u64)> = self.pending.lock().range(slots).map(|(i, s)| (*i, *s)).collect();
        if batch.is_empty() {
            return Ok(());
        }
        for run in runs(&batch) {
            let (first, last) = (run[0].0, run[run.len() - 1].0);
            let len = (last - first) * self.stride_bytes + self.record_bytes;
            self.area.flush(self.slot_rel(first), len)?;
        }
        self.area.fence();
        for &(i, seal) in &batch {
            self.area.store_u64(self.seal_rel(i), seal)?;
        }
        for run in runs(&batch) {
            let (first, last) = (run[0].0, run[run.len() - 1].0);
            self.area.flush(self.seal_rel(first), (last - first + 1) * SEAL_WORD_BYTES)?;
        }
        self.area.fence();
        let mut pending = self.pending.lock();
        for (i, _) in batch {
            pending.remove(&i);
        }
        Ok(())
    }

    /// Persists every pending slot.
    pub fn persist_pending(&self) -> Result<(), EventError> {
        self.persist_range(0..u64::MAX)
    }

    /// The record of node `i`, `None` if slot `i` was never written (or its
    /// write did not complete before a crash). `Corruption` if the slot's seal
    /// does not match its record; `InvalidInput` if `i >= capacity`.
    /// Cost: one 8-byte seal load, one record copy, one CRC32C of the record.
    pub fn get(&self, i: u64) -> Result<Option<Vec<u8>>, EventError> {
        let mut buf = vec![0u8; self.record_bytes as usize];
        Ok(self.get_into(i, &mut buf)?.then_some(buf))
    }

    /// [`AggregateArray::get`] into `buf` (exactly `record_bytes` long);
    /// `Ok(false)` for an empty slot (then `buf` is unspecified).
    pub fn get_into(&self, i: u64, buf: &mut [u8]) -> Result<bool, EventError> {
        if buf.len() as u64 != self.record_bytes {
            return Err(EventError::invalid(format!(
                "buffer of {} bytes for a {}-byte aggregate record",
                buf.len(),
                self.record_bytes
            )));
        }
        self.check_slot(i)?;
        self.area.count_read();
        let seal = self.area.load_u64(self.seal_rel(i))?;
        if seal == 0 {
            if self.pending.lock().contains_key(&i) {
                self.area.read(self.slot_rel(i), buf)?;
                return Ok(true);
            }
            return Ok(false);
        }
        let location = || format!("{WHAT} slot {i} at {}", self.area.base() + self.slot_rel(i));
        if (seal >> 32) as u32 != SEAL_TAG {
            return Err(EventError::corruption(
                location(),
                format!("seal word {seal:#018x} has a wrong tag"),
            ));
        }
        self.area.read(self.slot_rel(i), buf)?;
        if seal_word(SEAL_TAG, i, buf) != seal {
            return Err(EventError::corruption(location(), "record does not match the CRC32C in its seal"));
        }
        Ok(true)
    }

    /// Writes record and seal of slot `i` in place and persists them (one fence).
    fn write_in_place(&self, i: u64, record: &[u8], seal: u64) -> Result<(), EventError> {
        self.area.write(self.slot_rel(i), record)?;
        self.area.store_u64(self.seal_rel(i), seal)?;
        self.area.flush(self.slot_rel(i), self.record_bytes)?;
        self.area.flush(self.seal_rel(i), SEAL_WORD_BYTES)?;
        self.area.fence();
        Ok(())
    }

    /// Atomic overwrite of a valid slot through the redo journal (4 fences).
    fn overwrite(&self, i: u64, record: &[u8]) -> Result<(), EventError> {
        let _journal = self.journal.lock();
        self.area.store_u64(JOURNAL_TARGET_OFFSET, i)?;
        self.area.write(JOURNAL_RECORD_OFFSET, record)?;
        self.area.flush(JOURNAL_TARGET_OFFSET, SEAL_WORD_BYTES)?;
        self.area.flush(JOURNAL_RECORD_OFFSET, self.record_bytes)?;
        self.area.fence();
        self.area.store_u64_persist(JOURNAL_SEAL_OFFSET, seal_word(JOURNAL_SEAL_TAG, i, record))?;
        self.write_in_place(i, record, seal_word(SEAL_TAG, i, record))?;
        self.area.store_u64_persist(JOURNAL_SEAL_OFFSET, 0)?;
        self.pending.lock().remove(&i);
        Ok(())
    }

    /// Redoes the overwrite a sealed journal describes, then clears it.
    fn recover_journal(&self) -> Result<(), EventError> {
        let seal = self.area.load_u64(JOURNAL_SEAL_OFFSET)?;
        if seal == 0 {
            return Ok(());
        }
        let location = format!("{WHAT} journal at {}", self.area.base() + JOURNAL_SEAL_OFFSET);
        if (seal >> 32) as u32 != JOURNAL_SEAL_TAG {
            return Err(EventError::corruption(
                location,
                format!("journal seal {seal:#018x} has a wrong tag"),
            ));
        }
        let target = self.area.load_u64(JOURNAL_TARGET_OFFSET)?;
        if target >= self.capacity {
            return Err(EventError::corruption(
                location,
                format!("journal names slot {target}, capacity {}", self.capacity),
            ));
        }
        let mut record = vec![0u8; self.record_bytes as usize];
        self.area.read(JOURNAL_RECORD_OFFSET, &mut record)?;
        if seal_word(JOURNAL_SEAL_TAG, target, &record) != seal {
            return Err(EventError::corruption(location, "journal record does not match its seal's CRC32C"));
        }
        self.write_in_place(target, &record, seal_word(SEAL_TAG, target, &record))?;
        self.area.store_u64_persist(JOURNAL_SEAL_OFFSET, 0)
    }
}

/// Splits slots sorted by number into runs of consecutive numbers.
fn runs(batch: &[(u64, u64)]) -> impl Iterator<Item = &[(u64, u64)]> {
    batch.chunk_by(|a, b| b.0 == a.0 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_is_the_most_slots_that_fit_and_area_bytes_for_inverts_it() {
        for layout in [SlotLayout::Dense, SlotLayout::Aligned] {
            for record_bytes in [1, 8, 28, 64, 65, 144, 4096] {
                for capacity in [1, 2, 7, 100, 1000] {
                    let bytes = AggregateArray::area_bytes_for(capacity, record_bytes, layout).unwrap();
                    assert_eq!(
                        max_capacity(bytes, record_bytes, layout),
                        capacity,
                        "{layout:?} {record_bytes}"
                    );
                    assert_eq!(max_capacity(bytes - 1, record_bytes, layout), capacity - 1);
                }
            }
        }
        assert_eq!(max_capacity(100, 8, SlotLayout::Dense), 0);
        assert!(AggregateArray::area_bytes_for(u64::MAX, 8, SlotLayout::Dense).is_err());
        assert!(AggregateArray::area_bytes_for(1, MAX_RECORD_BYTES + 1, SlotLayout::Dense).is_err());
    }

    #[test]
    fn seals_are_never_zero_and_name_their_slot() {
        let r = [7u8; 28];
        assert_ne!(seal_word(SEAL_TAG, 0, &r), 0);
        assert_ne!(
            seal_word(SEAL_TAG, 1, &r),
            seal_word(SEAL_TAG, 2, &r),
            "a record in the wrong slot fails"
        );
        assert_ne!(seal_word(SEAL_TAG, 1, &r), seal_word(JOURNAL_SEAL_TAG, 1, &r));
        let batch = [(1, 0), (2, 0), (4, 0), (5, 0), (9, 0)];
        let lens: Vec<usize> = runs(&batch).map(<[_]>::len).collect();
        assert_eq!(lens, [2, 2, 1]);
    }
}
