//! DecLog's area in a PMem region (format: `docs/format/declog-stream.md`):
//! a superblock, the epoch word, the head-select word, two head arrays, and
//! one stream (a ring of batches) per logging thread.
//!
//! The heads are the checkpoint offsets of section 4.5/4.6: the stream
//! position where parsing starts in each stream. `truncate_all` moves every
//! head at once: it writes the inactive head array, persists it, then flips
//! the head-select word with one failure-atomic 8-byte store, so after a crash
//! either all streams are truncated or none is.
//!
//! The epoch counts writer incarnations: `format` sets 1 and every `open`
//! persists epoch + 1 before writing. Batches carry their epoch, entries are
//! checksummed with it, and parsing stops at a batch older than its
//! predecessor, so bytes a crashed incarnation left beyond its valid end are
//! never taken for new ones after the writer resumes there.

use strata_pmem::{Region, RegionOffset};

use crate::config::DeclogConfig;
use crate::error::DeclogError;

/// "STDECLOG" as a little-endian u64.
pub const DECLOG_MAGIC: u64 = u64::from_le_bytes(*b"STDECLOG");
pub const DECLOG_FORMAT_VERSION: u32 = 1;
pub const SB_OFFSET_MAGIC: u64 = 0;
pub const SB_OFFSET_VERSION: u64 = 8;
pub const SB_OFFSET_THREADS: u64 = 12;
pub const SB_OFFSET_QUEUES_PER_THREAD: u64 = 16;
pub const SB_OFFSET_QUEUE_LEN: u64 = 20;
pub const SB_OFFSET_ALIGN: u64 = 24;
pub const SB_OFFSET_RESERVED: u64 = 28;
pub const SB_OFFSET_STREAM_CAPACITY: u64 = 32;
pub const SB_OFFSET_STREAMS_OFFSET: u64 = 40;
pub const SB_OFFSET_CRC: u64 = 48;
/// The superblock CRC32C covers bytes 0..48.
pub const SB_CRC_COVERED_BYTES: u64 = 48;
pub const SUPERBLOCK_BYTES: u64 = 64;
pub const EPOCH_WORD_OFFSET: u64 = 64;
pub const HEAD_SELECT_WORD_OFFSET: u64 = 128;
pub const HEAD_ARRAY_0_OFFSET: u64 = 256;
pub const HEAD_ARRAY_1_OFFSET: u64 = 768;
/// Most logging threads (streams); each head array has this many words.
pub const MAX_THREADS: usize = 64;
/// Stream 0 starts here, relative to the DecLog base (256-byte aligned).
pub const STREAMS_OFFSET: u64 = 1280;
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
        }
    }

    /// Bytes DecLog needs at `base` for `threads` streams of `stream_capacity_bytes`.
    pub fn footprint_bytes(threads: usize, stream_capacity_bytes: u64) -> u64 {
        STREAMS_OFFSET + threads as u64 * stream_capacity_bytes
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

/// The mutable control state: writer epoch, head generation and the heads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Control {
    pub epoch: u32,
    pub generation: u64,
    /// Stream position where each stream's live log starts.
    pub heads: Vec<u64>,
}

fn stream_capacity_for(bytes: u64, threads: usize) -> u64 {
    (bytes.saturating_sub(STREAMS_OFFSET) / threads as u64) / STREAM_UNIT_BYTES * STREAM_UNIT_BYTES
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
    let capacity = stream_capacity_for(bytes, cfg.threads);
    if capacity < MIN_STREAM_BYTES {
        return Err(DeclogError::InvalidConfig(format!(
            "{bytes} bytes give {} threads streams of {capacity} bytes; each needs at least {MIN_STREAM_BYTES}",
            cfg.threads
        )));
    }
    let layout = Layout::new(base, cfg, capacity);
    let footprint = Layout::footprint_bytes(cfg.threads, capacity);
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
    let at = SB_OFFSET_STREAM_CAPACITY as usize;
    sb[at..at + 8].copy_from_slice(&capacity.to_le_bytes());
    let at = SB_OFFSET_STREAMS_OFFSET as usize;
    sb[at..at + 8].copy_from_slice(&STREAMS_OFFSET.to_le_bytes());
    let crc = crc32c::crc32c(&sb[..SB_CRC_COVERED_BYTES as usize]);
    put32(&mut sb, SB_OFFSET_CRC, crc);
    // The magic goes last: a superblock with its magic is complete. Stream
    // positions restart at 0, so an older log's batches at this base would
    // validate again: zero every stream.
    region.store_u64_persist(base + SB_OFFSET_MAGIC, 0);
    region.write(base + SB_OFFSET_VERSION, &sb[8..]);
    let zeros = vec![0u8; 64 << 10];
    let mut at = STREAMS_OFFSET;
    while at < footprint {
        let n = (footprint - at).min(zeros.len() as u64);
        region.write(base + at, &zeros[..n as usize]);
        region.flush(base + at, n);
        at += n;
    }
    let control = Control { epoch: 1, generation: 0, heads: vec![0; cfg.threads] };
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
    if version != DECLOG_FORMAT_VERSION {
        return Err(DeclogError::corruption(base.0, format!("unknown declog format version {version}")));
    }
    let cfg = DeclogConfig {
        threads: u32_at(SB_OFFSET_THREADS) as usize,
        queues_per_thread: u32_at(SB_OFFSET_QUEUES_PER_THREAD) as usize,
        queue_len: u32_at(SB_OFFSET_QUEUE_LEN) as usize,
        align_bytes: u32_at(SB_OFFSET_ALIGN) as u64,
        ..DeclogConfig::default()
    };
    let capacity = u64_at(SB_OFFSET_STREAM_CAPACITY);
    if cfg.validate().is_err()
        || u64_at(SB_OFFSET_STREAMS_OFFSET) != STREAMS_OFFSET
        || u32_at(SB_OFFSET_RESERVED) != 0
        || capacity < MIN_STREAM_BYTES
        || !capacity.is_multiple_of(STREAM_UNIT_BYTES)
    {
        return Err(DeclogError::corruption(base.0, "declog superblock geometry invalid"));
    }
    let layout = Layout::new(base, &cfg, capacity);
    let footprint = capacity
        .checked_mul(cfg.threads as u64)
        .and_then(|b| b.checked_add(STREAMS_OFFSET))
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
    Ok((layout, Control { epoch: epoch as u32, generation, heads }))
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
        let cfg = DeclogConfig { threads: 3, ..Default::default() };
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
        let (layout, _) = format_area(&region, RegionOffset(0), 32 << 10, &DeclogConfig::default()).unwrap();
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
        let err = format_area(&region, RegionOffset(0), 8 << 10, &DeclogConfig::default()).unwrap_err();
        assert!(err.to_string().contains("at least"), "{err}");
        format_area(&region, RegionOffset(0), 16 << 10, &DeclogConfig::default()).unwrap();
        region.write(RegionOffset(SB_OFFSET_THREADS), &[9]);
        assert!(read_area(&region, RegionOffset(0)).unwrap_err().is_corruption());
        assert!(read_area(&Region::sim(4096), RegionOffset(0)).unwrap_err().is_corruption());
    }
}
