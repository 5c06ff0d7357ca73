//! The on-PMem layout of the PMem OOO queue (`docs/format/events-ooo-queue.md`,
//! chronicledb-pmem.txt section 4.3): the area header, the fixed-size
//! self-validating record slots, and their encoders and decoders. Pure
//! functions on byte slices; [`super::pmem`] does the persisting.
//!
//! A record is valid for slot `i` of generation `g` when its tag is the low
//! 32 bits of `g` (never 0) and its CRC32C over the slot index and the
//! record's bytes 4.. matches; so a torn record, a record left from an
//! earlier generation and a record copied to another slot are all invalid.

use super::{check_event_bytes, MAX_EVENT_BYTES};
use crate::EventError;

/// `STOOOQPM` in ASCII, little-endian.
pub const PMEM_MAGIC: u64 = u64::from_le_bytes(*b"STOOOQPM");
pub const PMEM_VERSION: u32 = 1;
/// The header at area offset 0; the record slots follow it.
pub const PMEM_HEADER_BYTES: u64 = 64;
/// Area offset of slot 0.
pub const PMEM_RECORDS_OFFSET: u64 = PMEM_HEADER_BYTES;
/// Required alignment of the area's base in the region (one cache line).
pub const PMEM_BASE_ALIGN_BYTES: u64 = 64;
/// A record's `crc` and `tag` words before the event.
pub const PMEM_RECORD_HEADER_BYTES: u64 = 8;
/// Slots are padded to a multiple of this.
pub const PMEM_SLOT_ALIGN_BYTES: u64 = 8;
/// Low 32 bits of a generation that mark an interrupted zeroing reset.
pub const PMEM_RESET_TAG: u32 = 0;
/// The largest generation (open rejects larger ones, truncate stops there).
pub const PMEM_GENERATION_MAX: u64 = (1 << 63) - 1;

// Header field offsets.
pub const HEADER_MAGIC_OFFSET: u64 = 0;
pub const HEADER_VERSION_OFFSET: u64 = 8;
pub const HEADER_EVENT_BYTES_OFFSET: u64 = 12;
pub const HEADER_SLOT_BYTES_OFFSET: u64 = 16;
pub const HEADER_RESERVED0_OFFSET: u64 = 20;
pub const HEADER_SLOT_COUNT_OFFSET: u64 = 24;
pub const HEADER_AREA_BYTES_OFFSET: u64 = 32;
pub const HEADER_CRC_OFFSET: u64 = 40;
pub const HEADER_RESERVED1_OFFSET: u64 = 44;
pub const HEADER_GENERATION_OFFSET: u64 = 48;
pub const HEADER_RESERVED2_OFFSET: u64 = 56;
/// The header CRC covers bytes `[0, HEADER_CRC_OFFSET)`.
pub const HEADER_CRC_COVERED_BYTES: u64 = HEADER_CRC_OFFSET;

// Record field offsets.
pub const RECORD_CRC_OFFSET: u64 = 0;
pub const RECORD_TAG_OFFSET: u64 = 4;
pub const RECORD_EVENT_OFFSET: u64 = 8;

/// Size of one record slot for `event_bytes`-byte events.
pub const fn slot_bytes_for(event_bytes: usize) -> u64 {
    let raw = PMEM_RECORD_HEADER_BYTES + event_bytes as u64;
    raw.div_ceil(PMEM_SLOT_ALIGN_BYTES) * PMEM_SLOT_ALIGN_BYTES
}

/// The record tag of generation `generation`.
pub const fn tag_of(generation: u64) -> u32 {
    generation as u32
}

/// The immutable geometry of a queue area, as its header records it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PmemGeometry {
    pub event_bytes: usize,
    pub slot_bytes: u64,
    pub slot_count: u64,
    pub area_bytes: u64,
}

impl PmemGeometry {
    /// The geometry of an area of `area_bytes` for `event_bytes`-byte events.
    pub fn for_area(event_bytes: usize, area_bytes: u64) -> Result<PmemGeometry, EventError> {
        check_event_bytes(event_bytes)?;
        let slot_bytes = slot_bytes_for(event_bytes);
        let slot_count = area_bytes.saturating_sub(PMEM_RECORDS_OFFSET) / slot_bytes;
        if slot_count == 0 {
            return Err(EventError::invalid(format!(
                "a PMem OOO area of {area_bytes} bytes holds no {slot_bytes}-byte slot after its header"
            )));
        }
        Ok(PmemGeometry { event_bytes, slot_bytes, slot_count, area_bytes })
    }

    /// Area offset of slot `slot`.
    pub fn slot_offset(&self, slot: u64) -> u64 {
        PMEM_RECORDS_OFFSET + slot * self.slot_bytes
    }

    /// Bytes from the area start to the end of the last slot.
    pub fn used_area_bytes(&self) -> u64 {
        PMEM_RECORDS_OFFSET + self.slot_count * self.slot_bytes
    }
}

/// The bytes of a header (generation included).
pub fn encode_header(g: &PmemGeometry, generation: u64) -> [u8; PMEM_HEADER_BYTES as usize] {
    let mut h = [0u8; PMEM_HEADER_BYTES as usize];
    put(&mut h, HEADER_MAGIC_OFFSET, &PMEM_MAGIC.to_le_bytes());
    put(&mut h, HEADER_VERSION_OFFSET, &PMEM_VERSION.to_le_bytes());
    put(&mut h, HEADER_EVENT_BYTES_OFFSET, &(g.event_bytes as u32).to_le_bytes());
    put(&mut h, HEADER_SLOT_BYTES_OFFSET, &(g.slot_bytes as u32).to_le_bytes());
    put(&mut h, HEADER_SLOT_COUNT_OFFSET, &g.slot_count.to_le_bytes());
    put(&mut h, HEADER_AREA_BYTES_OFFSET, &g.area_bytes.to_le_bytes());
    let crc = crc32c::crc32c(&h[..HEADER_CRC_COVERED_BYTES as usize]);
    put(&mut h, HEADER_CRC_OFFSET, &crc.to_le_bytes());
    put(&mut h, HEADER_GENERATION_OFFSET, &generation.to_le_bytes());
    h
}

/// Decodes and validates a header; returns the geometry and the generation.
/// `base` is only used to name the location in errors.
pub fn decode_header(h: &[u8], base: u64) -> Result<(PmemGeometry, u64), EventError> {
    let bad = |what: String| EventError::corruption(format!("PMem OOO queue header at @{base}"), what);
    if h.len() < PMEM_HEADER_BYTES as usize {
        return Err(bad(format!("{} bytes, expected {PMEM_HEADER_BYTES}", h.len())));
    }
    let magic = u64_at(h, HEADER_MAGIC_OFFSET);
    if magic != PMEM_MAGIC {
        return Err(bad(format!("magic {magic:#018x} is not {PMEM_MAGIC:#018x}: no queue formatted")));
    }
    let crc = u32_at(h, HEADER_CRC_OFFSET);
    let want = crc32c::crc32c(&h[..HEADER_CRC_COVERED_BYTES as usize]);
    if crc != want {
        return Err(bad(format!("header CRC {crc:#010x}, computed {want:#010x}")));
    }
    let version = u32_at(h, HEADER_VERSION_OFFSET);
    if version != PMEM_VERSION {
        return Err(bad(format!("version {version}, this code reads {PMEM_VERSION}")));
    }
    let event_bytes = u32_at(h, HEADER_EVENT_BYTES_OFFSET) as usize;
    if check_event_bytes(event_bytes).is_err() {
        return Err(bad(format!("event_bytes {event_bytes} outside 8..={MAX_EVENT_BYTES}")));
    }
    let slot_bytes = u32_at(h, HEADER_SLOT_BYTES_OFFSET) as u64;
    if slot_bytes != slot_bytes_for(event_bytes) {
        return Err(bad(format!("slot_bytes {slot_bytes} for {event_bytes}-byte events")));
    }
    let slot_count = u64_at(h, HEADER_SLOT_COUNT_OFFSET);
    let area_bytes = u64_at(h, HEADER_AREA_BYTES_OFFSET);
    let used = slot_count.checked_mul(slot_bytes).and_then(|b| b.checked_add(PMEM_RECORDS_OFFSET));
    if slot_count == 0 || used.is_none_or(|u| u > area_bytes) {
        return Err(bad(format!(
            "{slot_count} slots of {slot_bytes} bytes do not fit an area of {area_bytes}"
        )));
    }
    let generation = u64_at(h, HEADER_GENERATION_OFFSET);
    if generation == 0 || generation > PMEM_GENERATION_MAX {
        return Err(bad(format!("generation {generation:#x} outside 1..={PMEM_GENERATION_MAX:#x}")));
    }
    Ok((PmemGeometry { event_bytes, slot_bytes, slot_count, area_bytes }, generation))
}

/// The CRC of a record in slot `slot`: CRC32C over the slot index (u64 LE)
/// followed by the record's bytes from the tag to the end of the slot.
pub fn record_crc(slot: u64, record: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&slot.to_le_bytes());
    crc32c::crc32c_append(crc, &record[RECORD_TAG_OFFSET as usize..])
}

/// Encodes the record of `event` for slot `slot` with tag `tag` into `out`
/// (`slot_bytes` long; the padding is zeroed).
pub fn encode_record(out: &mut [u8], slot: u64, tag: u32, event: &[u8]) {
    out.fill(0);
    put(out, RECORD_TAG_OFFSET, &tag.to_le_bytes());
    put(out, RECORD_EVENT_OFFSET, event);
    let crc = record_crc(slot, out);
    put(out, RECORD_CRC_OFFSET, &crc.to_le_bytes());
}

/// Why a slot does not hold a valid record.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RecordFault {
    /// The tag is not the current generation's (an empty, stale or torn slot).
    Tag { found: u32 },
    /// The tag matches but the CRC does not (a torn or damaged record).
    Crc { found: u32, computed: u32 },
}

/// The event of the record `record` (`slot_bytes` long) if it is valid for
/// slot `slot` and tag `tag`.
pub fn decode_record(record: &[u8], slot: u64, tag: u32, event_bytes: usize) -> Result<&[u8], RecordFault> {
    let found_tag = u32_at(record, RECORD_TAG_OFFSET);
    if found_tag != tag || tag == PMEM_RESET_TAG {
        return Err(RecordFault::Tag { found: found_tag });
    }
    let found = u32_at(record, RECORD_CRC_OFFSET);
    let computed = record_crc(slot, record);
    if found != computed {
        return Err(RecordFault::Crc { found, computed });
    }
    let start = RECORD_EVENT_OFFSET as usize;
    Ok(&record[start..start + event_bytes])
}

fn put(buf: &mut [u8], at: u64, bytes: &[u8]) {
    buf[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
}

pub(crate) fn u32_at(b: &[u8], at: u64) -> u32 {
    u32::from_le_bytes(b[at as usize..at as usize + 4].try_into().expect("4 bytes"))
}

pub(crate) fn u64_at(b: &[u8], at: u64) -> u64 {
    u64::from_le_bytes(b[at as usize..at as usize + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(ts: i64, fill: u8, len: usize) -> Vec<u8> {
        let mut e = ts.to_le_bytes().to_vec();
        e.resize(len, fill);
        e
    }

    #[test]
    fn header_round_trips_and_rejects_each_damage() {
        let g = PmemGeometry::for_area(28, 4096).unwrap();
        assert_eq!(g.slot_bytes, 40, "8-byte record header + 28 event bytes, padded to 8");
        assert_eq!(g.slot_count, (4096 - 64) / 40);
        let h = encode_header(&g, 7);
        assert_eq!(decode_header(&h, 0).unwrap(), (g, 7));
        for (at, what) in [(0, "magic"), (9, "version"), (12, "event_bytes"), (25, "slot_count"), (41, "crc")]
        {
            let mut bad = h;
            bad[at] ^= 0x40;
            let err = decode_header(&bad, 0).unwrap_err();
            assert!(err.is_corruption(), "{what}: {err}");
        }
        let mut gen0 = h;
        gen0[HEADER_GENERATION_OFFSET as usize..][..8].fill(0);
        assert!(decode_header(&gen0, 0).is_err(), "generation 0 never exists");
        let mut changed_gen = h;
        changed_gen[HEADER_GENERATION_OFFSET as usize] = 9;
        assert_eq!(decode_header(&changed_gen, 0).unwrap().1, 9, "the generation is outside the CRC");
    }

    #[test]
    fn record_is_valid_only_in_its_slot_generation_and_untorn() {
        let e = event(-42, 0xab, 21);
        let slot_bytes = slot_bytes_for(21) as usize;
        assert_eq!(slot_bytes, 32);
        let mut r = vec![0xff; slot_bytes];
        encode_record(&mut r, 5, 3, &e);
        assert_eq!(decode_record(&r, 5, 3, 21).unwrap(), &e[..]);
        assert_eq!(r[29..], [0, 0, 0], "padding is zeroed");
        assert!(matches!(decode_record(&r, 6, 3, 21), Err(RecordFault::Crc { .. })), "another slot");
        assert!(
            matches!(decode_record(&r, 5, 4, 21), Err(RecordFault::Tag { found: 3 })),
            "another generation"
        );
        for word in 1..slot_bytes / 8 {
            let mut torn = r.clone();
            torn[word * 8..word * 8 + 8].fill(0);
            assert!(decode_record(&torn, 5, 3, 21).is_err(), "word {word} old");
        }
        let zero = vec![0u8; slot_bytes];
        assert!(decode_record(&zero, 0, 0, 21).is_err(), "tag 0 is never valid");
    }
}
