//! The PMem log device (format: `docs/format/pmem-log.md`): a ring of records
//! in a persistent region, addressed by stream position.
//!
//! Layout at `base`: a 64-byte superblock (magic, version, alignment, capacity,
//! data offset, CRC32C), the head word on its own cache line (stream position
//! of the oldest live record, moved forward by truncation with one atomic
//! 8-byte store), and the data area. Records never straddle the end of the
//! ring: the rest of a lap is filled with a `Pad` record, or skipped when it is
//! shorter than the smallest record. Records start at multiples of the
//! device's alignment: 8 bytes packs them; 256 bytes starts each append on its
//! own XPLine (media block).
//!
//! The device does not decide ordering: it hands out [`Reservation`]s and
//! writes bodies and tails; the commit protocol (e.g. [`crate::serial`])
//! places the flushes and fences.

use std::sync::Arc;

use parking_lot::Mutex;
use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use crate::error::LogError;
use crate::lsn::{Lsn, StreamPos};
use crate::record::{
    self, encode_body, encode_pad_header, encode_tail, LogRecord, RecordKind, MIN_RECORD_BYTES, TAIL_BYTES,
};
use crate::scan::{scan, LogSource};

/// "STRATAPL" as a little-endian u64.
pub const PMEM_LOG_MAGIC: u64 = u64::from_le_bytes(*b"STRATAPL");
pub const PMEM_LOG_FORMAT_VERSION: u32 = 1;
pub const SB_OFFSET_MAGIC: u64 = 0;
pub const SB_OFFSET_VERSION: u64 = 8;
pub const SB_OFFSET_ALIGN: u64 = 12;
pub const SB_OFFSET_CAPACITY: u64 = 16;
pub const SB_OFFSET_DATA_OFFSET: u64 = 24;
pub const SB_OFFSET_CRC: u64 = 32;
/// CRC32C covers superblock bytes 0..32.
pub const SB_CRC_COVERED_BYTES: u64 = 32;
pub const HEAD_WORD_OFFSET: u64 = 64;
/// Bits 0..48 of the head word: the head position in units of `align`.
pub const HEAD_UNITS_BITS: u32 = 48;
/// Bits 48..64 of the head word: the low 16 bits of the CRC32C of the
/// units value (8 bytes, little-endian), so a damaged head word is detected.
pub const HEAD_CHECK_SHIFT: u32 = 48;

/// The head word for a head at stream position `pos` (a multiple of `align`).
pub fn encode_head_word(pos: StreamPos, align_bytes: u64) -> u64 {
    let units = pos.0 / align_bytes;
    assert!(pos.0.is_multiple_of(align_bytes) && units < 1 << HEAD_UNITS_BITS, "head {pos} not encodable");
    let check = (crc32c::crc32c(&units.to_le_bytes()) & 0xFFFF) as u64;
    (check << HEAD_CHECK_SHIFT) | units
}

/// The head position in a head word, or `None` if its check bits disagree.
pub fn decode_head_word(word: u64, align_bytes: u64) -> Option<StreamPos> {
    let units = word & ((1 << HEAD_UNITS_BITS) - 1);
    let check = (crc32c::crc32c(&units.to_le_bytes()) & 0xFFFF) as u64;
    (word >> HEAD_CHECK_SHIFT == check).then(|| StreamPos(units * align_bytes))
}
/// Data area starts here, relative to `base` (256-byte aligned).
pub const DATA_AREA_OFFSET: u64 = 256;

/// Geometry read from the superblock.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PmemLogLayout {
    pub base: RegionOffset,
    pub capacity_bytes: u64,
    pub align_bytes: u64,
}

impl PmemLogLayout {
    fn data(&self) -> RegionOffset {
        self.base + DATA_AREA_OFFSET
    }

    /// Region offset of a stream position.
    pub fn offset_of(&self, pos: StreamPos) -> RegionOffset {
        self.data() + pos.0 % self.capacity_bytes
    }

    fn lap_remaining(&self, pos: StreamPos) -> u64 {
        self.capacity_bytes - pos.0 % self.capacity_bytes
    }

    /// Where a record may start at or after `pos`.
    pub fn next_start(&self, pos: StreamPos) -> StreamPos {
        let aligned = StreamPos(pos.0.div_ceil(self.align_bytes) * self.align_bytes);
        if self.lap_remaining(aligned) < MIN_RECORD_BYTES {
            StreamPos(aligned.0 + self.lap_remaining(aligned))
        } else {
            aligned
        }
    }
}

/// Space for one record, handed out by [`PmemLog::reserve`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    pub pos: StreamPos,
    pub offset: RegionOffset,
    pub len_bytes: u64,
    /// The record's LSN: `pos + len_bytes`.
    pub lsn: Lsn,
}

struct WriterState {
    head: StreamPos,
    /// Where the next record goes (before alignment).
    tail: StreamPos,
}

/// A PMem log ring. Reservation is serialised by a mutex; writing bodies and
/// tails into distinct reservations may proceed concurrently.
pub struct PmemLog {
    region: Arc<Region>,
    layout: PmemLogLayout,
    state: Mutex<WriterState>,
}

/// Outcome of [`PmemLog::open`]: the valid records from head to the first
/// invalid one.
#[derive(Debug)]
pub struct PmemReplay {
    pub records: Vec<LogRecord>,
    pub head: StreamPos,
    pub end: StreamPos,
    pub torn_tail: Option<crate::record::RecordError>,
}

impl PmemLog {
    /// Bytes a log with `capacity_bytes` of data needs at `base`.
    pub fn footprint_bytes(capacity_bytes: u64) -> u64 {
        DATA_AREA_OFFSET + capacity_bytes
    }

    /// Writes an empty log. `align_bytes` is 8 (packed) or a power of two up to 4096.
    pub fn format(
        region: Arc<Region>,
        base: RegionOffset,
        capacity_bytes: u64,
        align_bytes: u64,
    ) -> Result<PmemLog, LogError> {
        assert!(align_bytes.is_power_of_two() && (8..=4096).contains(&align_bytes), "bad alignment");
        assert!(
            capacity_bytes.is_multiple_of(align_bytes) && capacity_bytes >= 4 * MIN_RECORD_BYTES,
            "bad capacity"
        );
        assert!(base.is_aligned(256), "log base must be 256-byte aligned");
        region.check_range(base, Self::footprint_bytes(capacity_bytes), "pmem log")?;
        let mut sb = [0u8; 64];
        sb[0..8].copy_from_slice(&PMEM_LOG_MAGIC.to_le_bytes());
        sb[8..12].copy_from_slice(&PMEM_LOG_FORMAT_VERSION.to_le_bytes());
        sb[12..16].copy_from_slice(&(align_bytes as u32).to_le_bytes());
        sb[16..24].copy_from_slice(&capacity_bytes.to_le_bytes());
        sb[24..32].copy_from_slice(&DATA_AREA_OFFSET.to_le_bytes());
        let crc = crc32c::crc32c(&sb[..SB_CRC_COVERED_BYTES as usize]);
        sb[32..36].copy_from_slice(&crc.to_le_bytes());
        // Everything but the magic first (invalidating any old first record),
        // then the magic in one atomic store: a superblock with its magic is
        // complete.
        region.store_u64(base + SB_OFFSET_MAGIC, 0);
        region.write(base + SB_OFFSET_VERSION, &sb[8..]);
        // Stream positions restart at 0, so records of an earlier log at this
        // base would carry valid LSNs again: zero the whole data area.
        let zeros = vec![0u8; 64 << 10];
        let mut at = 0;
        while at < capacity_bytes {
            let n = (capacity_bytes - at).min(zeros.len() as u64);
            region.write(base + DATA_AREA_OFFSET + at, &zeros[..n as usize]);
            region.flush(base + DATA_AREA_OFFSET + at, n);
            at += n;
        }
        region.store_u64(base + HEAD_WORD_OFFSET, encode_head_word(StreamPos(0), align_bytes));
        region.flush(base, 64);
        region.flush(base + HEAD_WORD_OFFSET, 8);
        region.fence();
        region.store_u64_persist(base + SB_OFFSET_MAGIC, PMEM_LOG_MAGIC);
        let layout = PmemLogLayout { base, capacity_bytes, align_bytes };
        Ok(PmemLog {
            region,
            layout,
            state: Mutex::new(WriterState { head: StreamPos(0), tail: StreamPos(0) }),
        })
    }

    /// Reads the superblock and head.
    fn read_layout(region: &Region, base: RegionOffset) -> Result<(PmemLogLayout, StreamPos), LogError> {
        region.check_range(base, DATA_AREA_OFFSET, "pmem log superblock")?;
        let sb = region.read_vec(base, 64);
        let word = |at: u64| u64::from_le_bytes(sb[at as usize..at as usize + 8].try_into().expect("8"));
        let word32 = |at: u64| u32::from_le_bytes(sb[at as usize..at as usize + 4].try_into().expect("4"));
        if word(SB_OFFSET_MAGIC) != PMEM_LOG_MAGIC {
            return Err(LogError::corruption(base.0, "no pmem log here (bad magic)"));
        }
        if word32(SB_OFFSET_CRC) != crc32c::crc32c(&sb[..SB_CRC_COVERED_BYTES as usize]) {
            return Err(LogError::corruption(base.0, "pmem log superblock CRC mismatch"));
        }
        let version = word32(SB_OFFSET_VERSION);
        if version != PMEM_LOG_FORMAT_VERSION {
            return Err(LogError::corruption(base.0, format!("unknown pmem log version {version}")));
        }
        let align_bytes = word32(SB_OFFSET_ALIGN) as u64;
        let capacity_bytes = word(SB_OFFSET_CAPACITY);
        if word(SB_OFFSET_DATA_OFFSET) != DATA_AREA_OFFSET
            || !align_bytes.is_power_of_two()
            || capacity_bytes % align_bytes.max(1) != 0
            || !(8..=4096).contains(&align_bytes) // the rules `format` enforces
            || !(4 * MIN_RECORD_BYTES..=region.len()).contains(&capacity_bytes)
        {
            return Err(LogError::corruption(base.0, "pmem log superblock geometry invalid"));
        }
        region.check_range(base, Self::footprint_bytes(capacity_bytes), "pmem log data area")?;
        let word = region.load_u64(base + HEAD_WORD_OFFSET);
        let Some(head) = decode_head_word(word, align_bytes) else {
            return Err(LogError::corruption(
                (base + HEAD_WORD_OFFSET).0,
                format!("head word {word:#018x} fails its check bits"),
            ));
        };
        Ok((PmemLogLayout { base, capacity_bytes, align_bytes }, head))
    }

    /// Opens an existing log and replays it from the head.
    pub fn open(region: Arc<Region>, base: RegionOffset) -> Result<(PmemLog, PmemReplay), LogError> {
        let (layout, head) = Self::read_layout(&region, base)?;
        let src = RingSource { region: &region, layout, head };
        let outcome = scan(&src, head)?;
        let log = PmemLog { region, layout, state: Mutex::new(WriterState { head, tail: outcome.end }) };
        let replay =
            PmemReplay { records: outcome.records, head, end: outcome.end, torn_tail: outcome.torn_tail };
        Ok((log, replay))
    }

    pub fn region(&self) -> &Arc<Region> {
        &self.region
    }

    pub fn layout(&self) -> PmemLogLayout {
        self.layout
    }

    pub fn head(&self) -> StreamPos {
        self.state.lock().head
    }

    /// Stream position after the last reserved record.
    pub fn tail(&self) -> StreamPos {
        self.state.lock().tail
    }

    /// Reserves room for a record. If the record does not fit in the rest of
    /// the current lap, a `Pad` record is written over that rest (body and
    /// tail, not persisted) and returned, so the caller persists it with the
    /// same ordering as the record itself.
    pub fn reserve_with_pad(&self, payload_len: u64) -> Result<(Reservation, Option<Reservation>), LogError> {
        if payload_len > record::MAX_PAYLOAD_BYTES {
            return Err(LogError::TooLarge { len_bytes: payload_len, max_bytes: record::MAX_PAYLOAD_BYTES });
        }
        let len_bytes = record::record_len(payload_len);
        let mut s = self.state.lock();
        let mut pos = self.layout.next_start(s.tail);
        let mut pad = None;
        let rest = self.layout.lap_remaining(pos);
        if rest < len_bytes && s.tail == s.head && len_bytes <= self.layout.capacity_bytes {
            // Nothing is live: start the next lap instead of padding, so a
            // record longer than the rest of the lap always fits an empty ring.
            // The head moves first (persisted), so replay starts there.
            let lap_start = StreamPos(pos.0 + rest);
            self.region.store_u64_persist(
                self.layout.base + HEAD_WORD_OFFSET,
                encode_head_word(lap_start, self.layout.align_bytes),
            );
            s.head = lap_start;
            s.tail = lap_start;
            pos = lap_start;
        } else if rest < len_bytes {
            pad = Some(Reservation {
                pos,
                offset: self.layout.offset_of(pos),
                len_bytes: rest,
                lsn: Lsn(pos.0 + rest),
            });
            pos = StreamPos(pos.0 + rest);
        }
        let end = pos.0 + len_bytes;
        let used = end - s.head.0;
        if len_bytes > self.layout.capacity_bytes || used > self.layout.capacity_bytes {
            let free = self.layout.capacity_bytes.saturating_sub(s.tail.0 - s.head.0);
            return Err(LogError::Full { needed_bytes: end - s.tail.0, free_bytes: free });
        }
        s.tail = StreamPos(end);
        drop(s);
        if let Some(p) = pad {
            let (h, crc) = encode_pad_header(p.len_bytes);
            self.region.write(p.offset, &h);
            self.region.write(p.offset + (p.len_bytes - TAIL_BYTES), &encode_tail(p.lsn, crc));
        }
        Ok((Reservation { pos, offset: self.layout.offset_of(pos), len_bytes, lsn: Lsn(end) }, pad))
    }

    /// Writes header and payload into `res` (not persisted); returns the body
    /// CRC for [`PmemLog::write_tail`].
    pub fn write_body(&self, res: &Reservation, kind: RecordKind, txn: TxnId, payload: &[u8]) -> u32 {
        let mut buf = Vec::with_capacity(res.len_bytes as usize);
        let crc = encode_body(kind, txn, payload, &mut buf);
        debug_assert_eq!(buf.len() as u64 + TAIL_BYTES, res.len_bytes);
        self.region.write(res.offset, &buf);
        crc
    }

    /// Region range of a reservation's header and payload.
    pub fn body_range(&self, res: &Reservation) -> (RegionOffset, u64) {
        (res.offset, res.len_bytes - TAIL_BYTES)
    }

    /// Region range of a reservation's tail.
    pub fn tail_range(&self, res: &Reservation) -> (RegionOffset, u64) {
        (res.offset + (res.len_bytes - TAIL_BYTES), TAIL_BYTES)
    }

    /// Writes the tail (commit flag + LSN) of `res` (not persisted). The
    /// commit word is a single failure-atomic 8-byte store.
    pub fn write_tail(&self, res: &Reservation, body_crc: u32) {
        let tail = encode_tail(res.lsn, body_crc);
        let (at, _) = self.tail_range(res);
        self.region.write(at + 8, &tail[8..]);
        self.region.store_u64(at, u64::from_le_bytes(tail[..8].try_into().expect("8")));
    }

    /// Frees the log before `upto`, a record boundary (the LSN of a record a
    /// checkpoint covers): one atomic, persisted store of the head word.
    pub fn truncate(&self, upto: Lsn) {
        let mut s = self.state.lock();
        assert!(upto.0 >= s.head.0 && upto.0 <= s.tail.0, "truncate outside the live log");
        let head = StreamPos(upto.0.div_ceil(self.layout.align_bytes) * self.layout.align_bytes);
        self.region.store_u64_persist(
            self.layout.base + HEAD_WORD_OFFSET,
            encode_head_word(head, self.layout.align_bytes),
        );
        s.head = head;
        s.tail = s.tail.max(head);
    }
}

struct RingSource<'a> {
    region: &'a Region,
    layout: PmemLogLayout,
    head: StreamPos,
}

impl LogSource for RingSource<'_> {
    fn read(&self, pos: StreamPos, len: u64) -> Option<Vec<u8>> {
        if len > self.layout.lap_remaining(pos) || pos.0 + len > self.limit().0 {
            return None;
        }
        Some(self.region.read_vec(self.layout.offset_of(pos), len as usize))
    }

    fn room(&self, pos: StreamPos) -> u64 {
        self.layout.lap_remaining(pos).min(self.limit().0.saturating_sub(pos.0))
    }

    fn next_start(&self, pos: StreamPos) -> StreamPos {
        self.layout.next_start(pos)
    }

    fn limit(&self) -> StreamPos {
        StreamPos(self.head.0 + self.layout.capacity_bytes)
    }

    fn media_offset(&self, pos: StreamPos) -> u64 {
        self.layout.offset_of(pos).0
    }

    fn search_step(&self) -> u64 {
        self.layout.align_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn append(log: &PmemLog, txn: u64, payload: &[u8]) -> Lsn {
        let (res, pad) = log.reserve_with_pad(payload.len() as u64).unwrap();
        if let Some(p) = pad {
            log.region().persist(p.offset, p.len_bytes);
        }
        let crc = log.write_body(&res, RecordKind::Txn, TxnId(txn), payload);
        let (o, l) = log.body_range(&res);
        log.region().persist(o, l);
        log.write_tail(&res, crc);
        let (o, l) = log.tail_range(&res);
        log.region().persist(o, l);
        res.lsn
    }

    #[test]
    fn records_survive_reopen_across_wraparound() {
        for align in [8, 256] {
            let region = Arc::new(Region::sim(4096 + 256));
            let log = PmemLog::format(region.clone(), RegionOffset(0), 4096, align).unwrap();
            let mut expect = Vec::new();
            for t in 0..200u64 {
                let payload = vec![t as u8; (t % 90) as usize];
                if t % 10 == 9 {
                    // A checkpoint covering everything so far.
                    log.truncate(Lsn(log.tail().0));
                    expect.clear();
                }
                let lsn = append(&log, t, &payload);
                expect.push((TxnId(t), lsn, payload));
            }
            let (_, replay) = PmemLog::open(region, RegionOffset(0)).unwrap();
            let got: Vec<_> = replay.records.iter().map(|r| (r.txn, r.lsn, r.payload.clone())).collect();
            assert_eq!(got, expect, "align {align}");
            assert!(replay.head.0 > 4096, "wrapped at least once (align {align})");
        }
    }

    #[test]
    fn head_word_round_trips_and_detects_every_bit_flip() {
        for align in [8, 256] {
            for pos in [0u64, 256, 4096 * 7, (1 << 40) * align] {
                let w = encode_head_word(StreamPos(pos), align);
                assert_eq!(decode_head_word(w, align), Some(StreamPos(pos)));
                for bit in 0..64 {
                    assert_eq!(decode_head_word(w ^ (1 << bit), align), None, "pos {pos} bit {bit}");
                }
            }
        }
    }

    #[test]
    fn long_record_fits_an_empty_ring_wherever_the_head_is() {
        let region = Arc::new(Region::sim(1024 + 256));
        let log = PmemLog::format(region.clone(), RegionOffset(0), 1024, 256).unwrap();
        append(&log, 1, &[1; 217]);
        log.truncate(Lsn(log.tail().0));
        let lsn = append(&log, 2, &[2; 900]);
        let (_, replay) = PmemLog::open(region, RegionOffset(0)).unwrap();
        assert_eq!(replay.records.len(), 1);
        assert_eq!((replay.records[0].txn, replay.records[0].lsn), (TxnId(2), lsn));
    }

    /// Found in review: format zeroed only 8 bytes, so an old log's records
    /// at the same base came back after a reformat.
    #[test]
    fn reformat_forgets_the_old_log() {
        let region = Arc::new(Region::sim(4096 + 256));
        let log = PmemLog::format(region.clone(), RegionOffset(0), 4096, 8).unwrap();
        for t in 1..=3 {
            append(&log, t, &[t as u8; 50]);
        }
        let log = PmemLog::format(region.clone(), RegionOffset(0), 4096, 8).unwrap();
        append(&log, 100, &[9; 50]);
        let (_, replay) = PmemLog::open(region, RegionOffset(0)).unwrap();
        assert_eq!(replay.records.iter().map(|r| r.txn).collect::<Vec<_>>(), vec![TxnId(100)]);
    }

    #[test]
    fn full_log_is_an_error_not_an_overwrite() {
        let region = Arc::new(Region::sim(1024 + 256));
        let log = PmemLog::format(region, RegionOffset(0), 1024, 8).unwrap();
        let mut n = 0;
        while log.reserve_with_pad(100).is_ok() {
            n += 1;
        }
        assert!(n >= 6);
        assert!(matches!(log.reserve_with_pad(100), Err(LogError::Full { .. })));
    }

    #[test]
    fn bad_superblock_is_corruption() {
        let region = Arc::new(Region::sim(2048));
        PmemLog::format(region.clone(), RegionOffset(0), 1024, 8).unwrap();
        region.write(RegionOffset(17), &[0xFF]);
        let err = PmemLog::open(region, RegionOffset(0)).err().expect("corruption");
        assert!(err.is_corruption(), "{err}");
    }
}
