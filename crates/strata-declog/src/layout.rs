//! DecLog's area in a PMem region (format: `docs/format/declog-stream.md`):
//! a superblock, the epoch word, the head-select word, two head arrays, the
//! cut record, one stream (a ring of batches) per logging thread, and with
//! compression one key table and one checkpoint copy of it per stream.
//!
//! The heads are the checkpoint offsets of section 4.5/4.6: the stream
//! position where parsing starts in each stream. Truncation (`truncate_all`,
//! `truncate_to`) moves every head at once: it writes the inactive head
//! array, persists it, then flips the head-select word with one
//! failure-atomic 8-byte store, so after a crash either all streams are
//! truncated or none is.
//!
//! The cut record is the checkpoint log's part (2) of section 4.5: the stream
//! positions where the last checkpoint cut the log (`DecLog::cut`), with a
//! sequence number and a CRC32C. A crash while it is rewritten leaves no
//! valid record (the cut that was writing it had not returned).
//!
//! The epoch counts writer incarnations: `format` sets 1 and every `open`
//! persists epoch + 1 before writing. Batches carry their epoch, entries are
//! checksummed with it, and parsing stops at a batch older than its
//! predecessor, so bytes a crashed incarnation left beyond its valid end are
//! never taken for new ones after the writer resumes there.

use strata_pmem::{Region, RegionOffset};

use crate::compress::key_table::{key_table_area_bytes, write_empty_area};
use crate::config::DeclogConfig;
pub use crate::config::MAX_THREADS;
use crate::error::DeclogError;

/// "STDECLOG" as a little-endian u64.
pub const DECLOG_MAGIC: u64 = u64::from_le_bytes(*b"STDECLOG");
/// Version 3 added per-key entries (`ENTRY_FLAG_PER_KEY`); a version-2
/// area opens and is written on in place (its entries never carry the flag).
pub const DECLOG_FORMAT_VERSION: u32 = 3;
/// The oldest version `open` reads.
pub const DECLOG_OLDEST_READABLE_VERSION: u32 = 2;
pub const SB_OFFSET_MAGIC: u64 = 0;
pub const SB_OFFSET_VERSION: u64 = 8;
pub const SB_OFFSET_THREADS: u64 = 12;
pub const SB_OFFSET_QUEUES_PER_THREAD: u64 = 16;
pub const SB_OFFSET_QUEUE_LEN: u64 = 20;
pub const SB_OFFSET_ALIGN: u64 = 24;
pub const SB_OFFSET_FLAGS: u64 = 28;
pub const SB_OFFSET_STREAM_CAPACITY: u64 = 32;
pub const SB_OFFSET_STREAMS_OFFSET: u64 = 40;
pub const SB_OFFSET_KEY_SLOTS: u64 = 48;
pub const SB_OFFSET_CRC: u64 = 52;
/// The superblock CRC32C covers bytes 0..52.
pub const SB_CRC_COVERED_BYTES: u64 = 52;
pub const SUPERBLOCK_BYTES: u64 = 64;
/// Superblock `flags` bit 0: log compression is on.
pub const SB_FLAG_COMPRESSION: u32 = 1;
/// Superblock `flags` bit 1: strict ordering.
pub const SB_FLAG_STRICT_ORDERING: u32 = 2;
pub const EPOCH_WORD_OFFSET: u64 = 64;
pub const HEAD_SELECT_WORD_OFFSET: u64 = 128;
pub const HEAD_ARRAY_0_OFFSET: u64 = 256;
pub const HEAD_ARRAY_1_OFFSET: u64 = 768;
/// The cut record (relative to the base).
pub const CUT_RECORD_OFFSET: u64 = 1280;
pub const CUT_RECORD_BYTES: u64 = 768;
pub const CUT_OFFSET_SEQ: u64 = 0;
pub const CUT_OFFSET_STREAM_COUNT: u64 = 8;
pub const CUT_OFFSET_CRC: u64 = 12;
pub const CUT_OFFSET_ENDS: u64 = 16;
/// Stream 0 starts here, relative to the DecLog base (256-byte aligned).
pub const STREAMS_OFFSET: u64 = 2048;
/// Smallest stream; stream capacities are multiples of [`STREAM_UNIT_BYTES`].
pub const MIN_STREAM_BYTES: u64 = 4096;
pub const STREAM_UNIT_BYTES: u64 = 256;
/// Control words keep a 48-bit value in bits 0..48 ...
pub const WORD_VALUE_BITS: u32 = 48;
/// ... and the low 16 bits of the CRC32C of that value (8 bytes LE) in bits 48..64.
pub const WORD_CHECK_SHIFT: u32 = 48;
/// Head words hold a stream position divided by this.
pub const HEAD_UNIT_BYTES: u64 = 8;

/// A 48-bit value with 16 check bits, for failure-atomic control words.
pub fn encode_checked_word(value: u64) -> u64 {
    assert!(value < 1 << WORD_VALUE_BITS, "control word value {value} over 48 bits");
    let check = (crc32c::crc32c(&value.to_le_bytes()) & 0xFFFF) as u64;
    (check << WORD_CHECK_SHIFT) | value
}

/// The value of a control word, or `None` when its check bits disagree.
pub fn decode_checked_word(word: u64) -> Option<u64> {
    let value = word & ((1 << WORD_VALUE_BITS) - 1);
    (encode_checked_word(value) == word).then_some(value)
}

/// Geometry read from (or written to) the superblock.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub base: RegionOffset,
    pub threads: usize,
    pub queues_per_thread: usize,
    pub queue_len: usize,
    pub align_bytes: u64,
    /// Bytes of each stream's ring.
    pub stream_capacity_bytes: u64,
    pub compression: bool,
    pub strict_ordering: bool,
    /// Slots of each stream's key table (stored even without compression).
    pub key_slots: u32,
}

/// Bytes of the key tables (each stream's active table and its checkpoint
/// copy) of `cfg`; 0 without compression.
fn compression_area_bytes(cfg: &DeclogConfig) -> u64 {
    if cfg.compression {
        2 * cfg.threads as u64 * key_table_area_bytes(cfg.key_slots)
    } else {
        0
    }
}

impl Layout {
    /// The geometry of an area at `base` with `cfg`'s queues and streams of
    /// `stream_capacity_bytes` each.
    fn new(base: RegionOffset, cfg: &DeclogConfig, stream_capacity_bytes: u64) -> Layout {
        Layout {
            base,
            threads: cfg.threads,
            queues_per_thread: cfg.queues_per_thread,
            queue_len: cfg.queue_len,
            align_bytes: cfg.align_bytes,
            stream_capacity_bytes,
            compression: cfg.compression,
            strict_ordering: cfg.strict_ordering,
            key_slots: cfg.key_slots,
        }
    }

    /// Bytes DecLog needs at `base` for `threads` streams of
    /// `stream_capacity_bytes` *without compression* (no key tables); see
    /// [`Layout::footprint_bytes_for`].
    pub fn footprint_bytes(threads: usize, stream_capacity_bytes: u64) -> u64 {
        STREAMS_OFFSET + threads as u64 * stream_capacity_bytes
    }

    /// Bytes DecLog needs at `base` with `cfg` and streams of
    /// `stream_capacity_bytes`: [`Layout::footprint_bytes`] plus, with
    /// compression, 2 x threads key tables of `key_slots` slots.
    pub fn footprint_bytes_for(cfg: &DeclogConfig, stream_capacity_bytes: u64) -> u64 {
        Self::footprint_bytes(cfg.threads, stream_capacity_bytes) + compression_area_bytes(cfg)
    }

    /// This area's footprint.
    pub fn footprint(&self) -> u64 {
        Self::footprint_bytes(self.threads, self.stream_capacity_bytes) + self.key_tables_bytes()
    }

    fn key_tables_bytes(&self) -> u64 {
        if self.compression {
            2 * self.threads as u64 * key_table_area_bytes(self.key_slots)
        } else {
            0
        }
    }

    /// The active key table of stream `stream` (with compression).
    pub fn key_table(&self, stream: usize) -> RegionOffset {
        let table = key_table_area_bytes(self.key_slots);
        self.base
            + Self::footprint_bytes(self.threads, self.stream_capacity_bytes)
            + 2 * stream as u64 * table
    }

    /// The checkpoint copy of stream `stream`'s key table (with compression).
    pub fn key_table_copy(&self, stream: usize) -> RegionOffset {
        self.key_table(stream) + key_table_area_bytes(self.key_slots)
    }

    /// The ring of stream `stream`.
    pub fn ring(&self, stream: usize) -> Ring {
        Ring {
            data: self.base + STREAMS_OFFSET + stream as u64 * self.stream_capacity_bytes,
            capacity_bytes: self.stream_capacity_bytes,
            align_bytes: self.align_bytes,
        }
    }

    /// The largest batch: a quarter of a stream, so a batch always fits once
    /// the stream has been truncated, wrap skip included.
    pub fn max_batch_bytes(&self) -> u64 {
        (self.stream_capacity_bytes / 4) / STREAM_UNIT_BYTES * STREAM_UNIT_BYTES
    }

    fn head_array(&self, generation: u64) -> RegionOffset {
        self.base + if generation.is_multiple_of(2) { HEAD_ARRAY_0_OFFSET } else { HEAD_ARRAY_1_OFFSET }
    }
}

/// One stream's ring, addressed by stream position (only grows, never wraps).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ring {
    pub data: RegionOffset,
    pub capacity_bytes: u64,
    pub align_bytes: u64,
}

impl Ring {
    pub fn offset_of(&self, pos: u64) -> RegionOffset {
        self.data + pos % self.capacity_bytes
    }

    /// Bytes from `pos` to the end of its lap.
    pub fn lap_remaining(&self, pos: u64) -> u64 {
        self.capacity_bytes - pos % self.capacity_bytes
    }
}

/// The last checkpoint cut (section 4.5): its sequence number (from 1) and
/// every stream's end position when it was taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutRecord {
    pub seq: u64,
    pub ends: Vec<u64>,
}

/// Where a checkpoint cut the log (`DecLog::cut`): every stream's end
/// position at the cut, in stream order. `DecLog::truncate_to` takes it; the
/// cut record stores it. Here, below both `declog` and `recovery`, which
/// both hand it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutPoint {
    pub ends: Vec<u64>,
}

impl From<&CutRecord> for CutPoint {
    fn from(c: &CutRecord) -> CutPoint {
        CutPoint { ends: c.ends.clone() }
    }
}

/// The mutable control state: writer epoch, head generation, the heads and
/// the last cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Control {
    pub epoch: u32,
    pub generation: u64,
    /// Stream position where each stream's live log starts.
    pub heads: Vec<u64>,
    /// The cut record, when a valid one is stored.
    pub cut: Option<CutRecord>,
}

fn stream_capacity_for(bytes: u64, cfg: &DeclogConfig) -> u64 {
    let streams_bytes = bytes.saturating_sub(STREAMS_OFFSET).saturating_sub(compression_area_bytes(cfg));
    (streams_bytes / cfg.threads as u64) / STREAM_UNIT_BYTES * STREAM_UNIT_BYTES
}

fn cut_record_crc(record: &[u8], threads: usize) -> u32 {
    let crc = crc32c::crc32c(&record[..CUT_OFFSET_CRC as usize]);
    let ends = CUT_OFFSET_ENDS as usize;
    crc32c::crc32c_append(crc, &record[ends..ends + 8 * threads])
}

/// Writes and persists the cut record.
pub fn persist_cut_record(region: &Region, layout: &Layout, cut: &CutRecord) {
    debug_assert_eq!(cut.ends.len(), layout.threads);
    let mut b = vec![0u8; CUT_RECORD_BYTES as usize];
    b[..8].copy_from_slice(&cut.seq.to_le_bytes());
    let at = CUT_OFFSET_STREAM_COUNT as usize;
    b[at..at + 4].copy_from_slice(&(cut.ends.len() as u32).to_le_bytes());
    for (s, end) in cut.ends.iter().enumerate() {
        let at = CUT_OFFSET_ENDS as usize + 8 * s;
        b[at..at + 8].copy_from_slice(&end.to_le_bytes());
    }
    let crc = cut_record_crc(&b, cut.ends.len());
    let at = CUT_OFFSET_CRC as usize;
    b[at..at + 4].copy_from_slice(&crc.to_le_bytes());
    region
        .write_persist(layout.base + CUT_RECORD_OFFSET, &b[..CUT_OFFSET_ENDS as usize + 8 * cut.ends.len()]);
}

/// The stored cut record: `None` when there is none (sequence 0) or it was
/// torn (CRC), or it does not describe this area's streams.
pub fn read_cut_record(region: &Region, layout: &Layout) -> Option<CutRecord> {
    let b = region.read_vec(layout.base + CUT_RECORD_OFFSET, CUT_RECORD_BYTES as usize);
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8"));
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4"));
    let seq = u64_at(CUT_OFFSET_SEQ as usize);
    if seq == 0 || u32_at(CUT_OFFSET_STREAM_COUNT as usize) as usize != layout.threads {
        return None;
    }
    if u32_at(CUT_OFFSET_CRC as usize) != cut_record_crc(&b, layout.threads) {
        return None;
    }
    let ends: Vec<u64> = (0..layout.threads).map(|s| u64_at(CUT_OFFSET_ENDS as usize + 8 * s)).collect();
    ends.iter().all(|e| e.is_multiple_of(layout.align_bytes)).then_some(CutRecord { seq, ends })
}

/// Writes an empty DecLog area of `bytes` at `base`: zeroed streams, heads at
/// 0, epoch 1, the magic last.
pub fn format_area(
    region: &Region,
    base: RegionOffset,
    bytes: u64,
    cfg: &DeclogConfig,
) -> Result<(Layout, Control), DeclogError> {
    cfg.validate()?;
    if !base.is_aligned(256) {
        return Err(DeclogError::InvalidConfig(format!("base {base} is not 256-byte aligned")));
    }
    let capacity = stream_capacity_for(bytes, cfg);
    if capacity < MIN_STREAM_BYTES {
        return Err(DeclogError::InvalidConfig(format!(
            "{bytes} bytes give {} threads streams of {capacity} bytes (after {} bytes of key tables); \
             each needs at least {MIN_STREAM_BYTES}",
            cfg.threads,
            compression_area_bytes(cfg)
        )));
    }
    let layout = Layout::new(base, cfg, capacity);
    let streams_end = Layout::footprint_bytes(cfg.threads, capacity);
    let footprint = layout.footprint();
    region.check_range(base, footprint, "declog area")?;
    let mut sb = [0u8; SUPERBLOCK_BYTES as usize];
    let put32 =
        |sb: &mut [u8], at: u64, v: u32| sb[at as usize..at as usize + 4].copy_from_slice(&v.to_le_bytes());
    sb[..8].copy_from_slice(&DECLOG_MAGIC.to_le_bytes());
    put32(&mut sb, SB_OFFSET_VERSION, DECLOG_FORMAT_VERSION);
    put32(&mut sb, SB_OFFSET_THREADS, cfg.threads as u32);
    put32(&mut sb, SB_OFFSET_QUEUES_PER_THREAD, cfg.queues_per_thread as u32);
    put32(&mut sb, SB_OFFSET_QUEUE_LEN, cfg.queue_len as u32);
    put32(&mut sb, SB_OFFSET_ALIGN, cfg.align_bytes as u32);
    let flags = if cfg.compression { SB_FLAG_COMPRESSION } else { 0 }
        | if cfg.strict_ordering { SB_FLAG_STRICT_ORDERING } else { 0 };
    put32(&mut sb, SB_OFFSET_FLAGS, flags);
    let at = SB_OFFSET_STREAM_CAPACITY as usize;
    sb[at..at + 8].copy_from_slice(&capacity.to_le_bytes());
    let at = SB_OFFSET_STREAMS_OFFSET as usize;
    sb[at..at + 8].copy_from_slice(&STREAMS_OFFSET.to_le_bytes());
    put32(&mut sb, SB_OFFSET_KEY_SLOTS, cfg.key_slots);
    let crc = crc32c::crc32c(&sb[..SB_CRC_COVERED_BYTES as usize]);
    put32(&mut sb, SB_OFFSET_CRC, crc);
    // The magic goes last: a superblock with its magic is complete. Stream
    // positions restart at 0, so an older log's batches at this base would
    // validate again: zero the cut record and every stream, and write empty
    // key tables (active and copy).
    region.store_u64_persist(base + SB_OFFSET_MAGIC, 0);
    region.write(base + SB_OFFSET_VERSION, &sb[8..]);
    let zeros = vec![0u8; 64 << 10];
    let mut at = CUT_RECORD_OFFSET;
    while at < streams_end {
        let n = (streams_end - at).min(zeros.len() as u64);
        region.write(base + at, &zeros[..n as usize]);
        region.flush(base + at, n);
        at += n;
    }
    if cfg.compression {
        for s in 0..cfg.threads {
            write_empty_area(region, layout.key_table(s), cfg.key_slots)?;
            write_empty_area(region, layout.key_table_copy(s), cfg.key_slots)?;
        }
    }
    let control = Control { epoch: 1, generation: 0, heads: vec![0; cfg.threads], cut: None };
    region.store_u64(base + EPOCH_WORD_OFFSET, encode_checked_word(1));
    region.store_u64(base + HEAD_SELECT_WORD_OFFSET, encode_checked_word(0));
    for s in 0..cfg.threads {
        region.store_u64(layout.head_array(0) + 8 * s as u64, encode_checked_word(0));
    }
    region.flush(base, SUPERBLOCK_BYTES);
    region.flush(base + EPOCH_WORD_OFFSET, 8);
    region.flush(base + HEAD_SELECT_WORD_OFFSET, 8);
    region.flush(layout.head_array(0), 8 * cfg.threads as u64);
    region.fence();
    region.store_u64_persist(base + SB_OFFSET_MAGIC, DECLOG_MAGIC);
    Ok((layout, control))
}

/// Reads and validates the superblock and the control words.
pub fn read_area(region: &Region, base: RegionOffset) -> Result<(Layout, Control), DeclogError> {
    if !base.is_aligned(256) {
        return Err(DeclogError::InvalidConfig(format!("base {base} is not 256-byte aligned")));
    }
    region.check_range(base, STREAMS_OFFSET, "declog superblock")?;
    let sb = region.read_vec(base, SUPERBLOCK_BYTES as usize);
    let u32_at = |at: u64| u32::from_le_bytes(sb[at as usize..at as usize + 4].try_into().expect("4"));
    let u64_at = |at: u64| u64::from_le_bytes(sb[at as usize..at as usize + 8].try_into().expect("8"));
    if u64_at(SB_OFFSET_MAGIC) != DECLOG_MAGIC {
        return Err(DeclogError::corruption(base.0, "no declog here (bad magic)"));
    }
    if u32_at(SB_OFFSET_CRC) != crc32c::crc32c(&sb[..SB_CRC_COVERED_BYTES as usize]) {
        return Err(DeclogError::corruption(base.0, "declog superblock CRC mismatch"));
    }
    let version = u32_at(SB_OFFSET_VERSION);
    if !(DECLOG_OLDEST_READABLE_VERSION..=DECLOG_FORMAT_VERSION).contains(&version) {
        return Err(DeclogError::corruption(base.0, format!("unknown declog format version {version}")));
    }
    let flags = u32_at(SB_OFFSET_FLAGS);
    let cfg = DeclogConfig {
        threads: u32_at(SB_OFFSET_THREADS) as usize,
        queues_per_thread: u32_at(SB_OFFSET_QUEUES_PER_THREAD) as usize,
        queue_len: u32_at(SB_OFFSET_QUEUE_LEN) as usize,
        align_bytes: u32_at(SB_OFFSET_ALIGN) as u64,
        compression: flags & SB_FLAG_COMPRESSION != 0,
        strict_ordering: flags & SB_FLAG_STRICT_ORDERING != 0,
        key_slots: u32_at(SB_OFFSET_KEY_SLOTS),
        ..DeclogConfig::default()
    };
    let capacity = u64_at(SB_OFFSET_STREAM_CAPACITY);
    if cfg.validate().is_err()
        || u64_at(SB_OFFSET_STREAMS_OFFSET) != STREAMS_OFFSET
        || flags & !(SB_FLAG_COMPRESSION | SB_FLAG_STRICT_ORDERING) != 0
        || capacity < MIN_STREAM_BYTES
        || !capacity.is_multiple_of(STREAM_UNIT_BYTES)
    {
        return Err(DeclogError::corruption(base.0, "declog superblock geometry invalid"));
    }
    let layout = Layout::new(base, &cfg, capacity);
    let footprint = capacity
        .checked_mul(cfg.threads as u64)
        .and_then(|b| b.checked_add(STREAMS_OFFSET))
        .and_then(|b| b.checked_add(compression_area_bytes(&cfg)))
        .ok_or_else(|| DeclogError::corruption(base.0, "declog superblock geometry overflows"))?;
    region.check_range(base, footprint, "declog streams")?;
    let checked = |at: u64, what: &str| -> Result<u64, DeclogError> {
        let word = region.load_u64(base + at);
        decode_checked_word(word).ok_or_else(|| {
            DeclogError::corruption((base + at).0, format!("{what} word {word:#018x} fails its check bits"))
        })
    };
    let epoch = checked(EPOCH_WORD_OFFSET, "epoch")?;
    if epoch == 0 || epoch > u32::MAX as u64 {
        return Err(DeclogError::corruption(
            (base + EPOCH_WORD_OFFSET).0,
            format!("epoch {epoch} out of range"),
        ));
    }
    let generation = checked(HEAD_SELECT_WORD_OFFSET, "head-select")?;
    let array = layout.head_array(generation).0 - base.0;
    let mut heads = Vec::with_capacity(cfg.threads);
    for s in 0..cfg.threads {
        let units = checked(array + 8 * s as u64, "head")?;
        heads.push(units * HEAD_UNIT_BYTES);
    }
    let cut = read_cut_record(region, &layout);
    Ok((layout, Control { epoch: epoch as u32, generation, heads, cut }))
}

/// Persists `epoch` (one atomic store) before the writer of that epoch writes.
pub fn persist_epoch(region: &Region, layout: &Layout, epoch: u32) {
    region.store_u64_persist(layout.base + EPOCH_WORD_OFFSET, encode_checked_word(epoch as u64));
}

/// Moves every head at once: the inactive array first, then the select word.
pub fn persist_heads(region: &Region, layout: &Layout, generation: u64, heads: &[u64]) {
    let array = layout.head_array(generation);
    for (s, &head) in heads.iter().enumerate() {
        debug_assert!(head.is_multiple_of(HEAD_UNIT_BYTES));
        region.store_u64(array + 8 * s as u64, encode_checked_word(head / HEAD_UNIT_BYTES));
    }
    region.flush(array, 8 * heads.len() as u64);
    region.fence();
    region.store_u64_persist(layout.base + HEAD_SELECT_WORD_OFFSET, encode_checked_word(generation));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::key_table::KeyTable;

    /// Without compression (the geometry tests do not want key tables).
    fn plain() -> DeclogConfig {
        DeclogConfig { compression: false, ..Default::default() }
    }

    #[test]
    fn checked_words_round_trip_and_catch_every_bit_flip() {
        for v in [0u64, 1, 4096, (1 << 48) - 1] {
            let w = encode_checked_word(v);
            assert_eq!(decode_checked_word(w), Some(v));
            for bit in 0..64 {
                assert_eq!(decode_checked_word(w ^ (1 << bit)), None, "value {v} bit {bit}");
            }
        }
    }

    #[test]
    fn format_then_read_gives_the_same_geometry_and_control() {
        let region = Region::sim(64 << 10);
        let cfg = DeclogConfig { threads: 3, ..plain() };
        let (layout, control) = format_area(&region, RegionOffset(256), 40_000, &cfg).unwrap();
        assert_eq!(layout.stream_capacity_bytes, (40_000 - STREAMS_OFFSET) / 3 / 256 * 256);
        let (l2, c2) = read_area(&region, RegionOffset(256)).unwrap();
        assert_eq!((l2, c2.clone()), (layout, control));
        assert_eq!(c2.epoch, 1);
        assert!(layout.ring(2).data.0 + layout.stream_capacity_bytes <= 256 + 40_000);
    }

    #[test]
    fn heads_move_together_by_generation() {
        let region = Region::sim(32 << 10);
        let (layout, _) = format_area(&region, RegionOffset(0), 32 << 10, &plain()).unwrap();
        persist_heads(&region, &layout, 1, &[512, 1024]);
        persist_epoch(&region, &layout, 7);
        let (_, c) = read_area(&region, RegionOffset(0)).unwrap();
        assert_eq!((c.epoch, c.generation, c.heads), (7, 1, vec![512, 1024]));
        // The old array is untouched: a crash before the select word flips keeps it.
        region.store_u64_persist(layout.base + HEAD_SELECT_WORD_OFFSET, encode_checked_word(0));
        assert_eq!(read_area(&region, RegionOffset(0)).unwrap().1.heads, vec![0, 0]);
    }

    #[test]
    fn too_small_or_damaged_areas_are_clear_errors() {
        let region = Region::sim(16 << 10);
        let err = format_area(&region, RegionOffset(0), 8 << 10, &plain()).unwrap_err();
        assert!(err.to_string().contains("at least"), "{err}");
        format_area(&region, RegionOffset(0), 16 << 10, &plain()).unwrap();
        region.write(RegionOffset(SB_OFFSET_THREADS), &[9]);
        assert!(read_area(&region, RegionOffset(0)).unwrap_err().is_corruption());
        assert!(read_area(&Region::sim(4096), RegionOffset(0)).unwrap_err().is_corruption());
    }

    #[test]
    fn compression_and_ordering_are_stored_and_key_tables_follow_the_streams() {
        let cfg = DeclogConfig { key_slots: 5, strict_ordering: true, ..Default::default() };
        let bytes = Layout::footprint_bytes_for(&cfg, 8192);
        assert_eq!(bytes, STREAMS_OFFSET + 2 * 8192 + 4 * key_table_area_bytes(5));
        let region = std::sync::Arc::new(Region::sim(bytes));
        let (layout, _) = format_area(&region, RegionOffset(0), bytes, &cfg).unwrap();
        assert_eq!(layout.stream_capacity_bytes, 8192);
        assert_eq!((layout.compression, layout.strict_ordering, layout.key_slots), (true, true, 5));
        assert_eq!(layout.key_table(0).0, STREAMS_OFFSET + 2 * 8192);
        assert_eq!(layout.key_table_copy(1).0 + key_table_area_bytes(5), bytes);
        assert_eq!(layout.footprint(), bytes);
        let (l2, _) = read_area(&region, RegionOffset(0)).unwrap();
        assert_eq!(l2, layout);
        for s in 0..2 {
            for at in [layout.key_table(s), layout.key_table_copy(s)] {
                let t = KeyTable::open(region.clone(), at).unwrap();
                assert_eq!((t.slot_count(), t.len()), (5, 0), "empty table at {at}");
            }
        }
        // Without compression there are no tables; unknown flags are corruption.
        let plain_bytes = Layout::footprint_bytes_for(&plain(), 8192);
        assert_eq!(plain_bytes, Layout::footprint_bytes(2, 8192));
        region.write_u32(RegionOffset(SB_OFFSET_FLAGS), 4);
        assert!(read_area(&region, RegionOffset(0)).unwrap_err().is_corruption());
    }

    #[test]
    fn cut_record_round_trips_and_a_torn_one_reads_as_none() {
        let region = Region::sim(32 << 10);
        let (layout, c) = format_area(&region, RegionOffset(0), 32 << 10, &plain()).unwrap();
        assert_eq!(c.cut, None, "format stores no cut");
        let cut = CutRecord { seq: 3, ends: vec![512, 4096] };
        persist_cut_record(&region, &layout, &cut);
        assert_eq!(read_area(&region, RegionOffset(0)).unwrap().1.cut, Some(cut.clone()));
        for at in [0, 8, 12, 16, 24] {
            let mut b = region.read_vec(RegionOffset(CUT_RECORD_OFFSET + at), 1);
            b[0] ^= 0x40;
            region.write(RegionOffset(CUT_RECORD_OFFSET + at), &b);
            assert_eq!(read_cut_record(&region, &layout), None, "flip at {at}");
            b[0] ^= 0x40;
            region.write(RegionOffset(CUT_RECORD_OFFSET + at), &b);
        }
        assert_eq!(read_cut_record(&region, &layout), Some(cut));
    }
}
