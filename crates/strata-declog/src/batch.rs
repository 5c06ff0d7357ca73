//! Batches: the contents of one flushed log queue, merged and padded to a
//! multiple of the alignment (declog.txt section 4.4.2, group commit with log
//! alignment; format: `docs/format/declog-stream.md`).
//!
//! A batch is a 32-byte header (magic, kind, seal, stream position, writer
//! epoch, length, entry count, CRC32C) followed by its entries and zero
//! padding. With 256-byte alignment every batch starts on its own XPLine, so
//! the paper's "start address of a log entry that exceeds 256 bytes is a
//! multiple of 256" holds for the first entry of each batch and no block is
//! shared by two flushes. A `Wrap` batch (header only) fills the rest of a
//! ring lap that the next batch does not fit.
//!
//! The `seal` field is outside the CRC: after a crash, `open` marks a last
//! batch whose entries were torn as sealed with one atomic 8-byte store, so
//! once the writer has written past it parsing still accepts it.

use crate::entry::{encode_entry, EntryMeta, Stamp};
use crate::error::DecodeError;

/// "DLGB" read as a little-endian u32.
pub const BATCH_MAGIC: u32 = u32::from_le_bytes(*b"DLGB");
pub const BATCH_HEADER_BYTES: u64 = 32;
pub const BATCH_KIND_ENTRIES: u16 = 1;
pub const BATCH_KIND_WRAP: u16 = 2;
/// `seal` value of a batch whose torn entries `open` found and accepted.
pub const BATCH_SEAL_TORN: u16 = 1;
pub const BATCH_OFFSET_MAGIC: usize = 0;
pub const BATCH_OFFSET_KIND: usize = 4;
pub const BATCH_OFFSET_SEAL: usize = 6;
pub const BATCH_OFFSET_STREAM_POS: usize = 8;
pub const BATCH_OFFSET_EPOCH: usize = 16;
pub const BATCH_OFFSET_BATCH_BYTES: usize = 20;
pub const BATCH_OFFSET_ENTRY_COUNT: usize = 24;
pub const BATCH_OFFSET_CRC: usize = 28;

/// A decoded batch header.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BatchHeader {
    pub kind: u16,
    pub seal: u16,
    /// The stream position the batch was written at (its position stamp).
    pub pos: u64,
    pub epoch: u32,
    /// Bytes from the header to the next batch, padding included.
    pub batch_bytes: u32,
    pub entry_count: u32,
}

fn header_crc(h: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&h[..BATCH_OFFSET_SEAL]);
    crc32c::crc32c_append(crc, &h[BATCH_OFFSET_STREAM_POS..BATCH_OFFSET_CRC])
}

pub fn encode_header(h: &BatchHeader) -> [u8; BATCH_HEADER_BYTES as usize] {
    let mut b = [0u8; BATCH_HEADER_BYTES as usize];
    b[BATCH_OFFSET_MAGIC..BATCH_OFFSET_MAGIC + 4].copy_from_slice(&BATCH_MAGIC.to_le_bytes());
    b[BATCH_OFFSET_KIND..BATCH_OFFSET_KIND + 2].copy_from_slice(&h.kind.to_le_bytes());
    b[BATCH_OFFSET_SEAL..BATCH_OFFSET_SEAL + 2].copy_from_slice(&h.seal.to_le_bytes());
    b[BATCH_OFFSET_STREAM_POS..BATCH_OFFSET_STREAM_POS + 8].copy_from_slice(&h.pos.to_le_bytes());
    b[BATCH_OFFSET_EPOCH..BATCH_OFFSET_EPOCH + 4].copy_from_slice(&h.epoch.to_le_bytes());
    b[BATCH_OFFSET_BATCH_BYTES..BATCH_OFFSET_BATCH_BYTES + 4].copy_from_slice(&h.batch_bytes.to_le_bytes());
    b[BATCH_OFFSET_ENTRY_COUNT..BATCH_OFFSET_ENTRY_COUNT + 4].copy_from_slice(&h.entry_count.to_le_bytes());
    let crc = header_crc(&b);
    b[BATCH_OFFSET_CRC..BATCH_OFFSET_CRC + 4].copy_from_slice(&crc.to_le_bytes());
    b
}

/// The first 8 bytes of `header` with `seal` set: one atomic store seals it.
pub fn sealed_first_word(header: &BatchHeader) -> u64 {
    let b = encode_header(&BatchHeader { seal: BATCH_SEAL_TORN, ..*header });
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

/// Decodes a header expected at stream position `pos`; `Err` for anything
/// that is not a complete header written at `pos` (zeroes, torn, a stale lap).
pub fn decode_header(b: &[u8], pos: u64) -> Result<BatchHeader, DecodeError> {
    if (b.len() as u64) < BATCH_HEADER_BYTES {
        return Err(DecodeError::Truncated {
            what: "batch header",
            need: BATCH_HEADER_BYTES,
            have: b.len() as u64,
        });
    }
    let u16_at = |at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4"));
    let magic = u32_at(BATCH_OFFSET_MAGIC);
    if magic != BATCH_MAGIC {
        return Err(DecodeError::BadMagic { what: "batch", found: magic });
    }
    DecodeError::check_crc("batch header", u32_at(BATCH_OFFSET_CRC), header_crc(b))?;
    let h = BatchHeader {
        kind: u16_at(BATCH_OFFSET_KIND),
        seal: u16_at(BATCH_OFFSET_SEAL),
        pos: u64::from_le_bytes(
            b[BATCH_OFFSET_STREAM_POS..BATCH_OFFSET_STREAM_POS + 8].try_into().expect("8"),
        ),
        epoch: u32_at(BATCH_OFFSET_EPOCH),
        batch_bytes: u32_at(BATCH_OFFSET_BATCH_BYTES),
        entry_count: u32_at(BATCH_OFFSET_ENTRY_COUNT),
    };
    if h.pos != pos {
        return Err(DecodeError::Stale { what: "batch", stamped: h.pos, found_at: pos });
    }
    if h.kind != BATCH_KIND_ENTRIES && h.kind != BATCH_KIND_WRAP {
        return Err(DecodeError::Unknown { what: "batch kind", value: h.kind.into() });
    }
    if h.seal != 0 && h.seal != BATCH_SEAL_TORN {
        return Err(DecodeError::Unknown { what: "batch seal", value: h.seal.into() });
    }
    if (h.batch_bytes as u64) < BATCH_HEADER_BYTES {
        return Err(DecodeError::Invalid(format!(
            "batch of {} bytes is shorter than its header",
            h.batch_bytes
        )));
    }
    Ok(h)
}

/// One entry to merge into a batch.
pub struct BatchEntry<'a> {
    pub meta: EntryMeta,
    pub payload: &'a [u8],
}

/// A merged, padded batch ready to be written at its stream position.
pub struct BuiltBatch {
    pub bytes: Vec<u8>,
    /// For a batch whose last entry's tail is deferred (an update entry, or
    /// any entry under strict ordering): where its tail word goes (offset in
    /// the batch) and the committed value to store there later.
    pub update_tail: Option<(u64, u64)>,
}

/// Bytes of a batch holding entries of these encoded lengths, padded to `align_bytes`.
pub fn batch_len(entries_bytes: u64, align_bytes: u64) -> u64 {
    (BATCH_HEADER_BYTES + entries_bytes).div_ceil(align_bytes) * align_bytes
}

/// Merges `entries` into one batch at `pos`. Insert entries are written with
/// their tails; the last entry, if it is an update entry (LSN > 0) or
/// `defer_last_tail` (strict ordering), without.
pub fn build_batch(
    entries: &[BatchEntry<'_>],
    pos: u64,
    epoch: u32,
    align_bytes: u64,
    defer_last_tail: bool,
) -> BuiltBatch {
    let mut bytes = Vec::new();
    let update_tail = build_batch_into(entries, pos, epoch, align_bytes, defer_last_tail, &mut bytes);
    BuiltBatch { bytes, update_tail }
}

/// [`build_batch`] into `bytes` (cleared first; a buffer kept from batch to
/// batch, so the ack path does not fault in fresh pages): returns the
/// deferred tail, as [`BuiltBatch::update_tail`].
pub fn build_batch_into(
    entries: &[BatchEntry<'_>],
    pos: u64,
    epoch: u32,
    align_bytes: u64,
    defer_last_tail: bool,
    bytes: &mut Vec<u8>,
) -> Option<(u64, u64)> {
    bytes.clear();
    bytes.resize(BATCH_HEADER_BYTES as usize, 0);
    let mut update_tail = None;
    for (i, e) in entries.iter().enumerate() {
        let is_last = i + 1 == entries.len();
        let is_update = e.meta.lsn > 0;
        debug_assert!(!is_update || is_last, "an update entry closes its queue");
        let deferred = is_update || (defer_last_tail && is_last);
        let stamp = Stamp { pos: pos + bytes.len() as u64, epoch };
        let (tail, at) = encode_entry(&e.meta, e.payload, stamp, !deferred, bytes);
        if deferred {
            update_tail = Some((at as u64, tail));
        }
    }
    let total = batch_len(bytes.len() as u64 - BATCH_HEADER_BYTES, align_bytes);
    bytes.resize(total as usize, 0);
    let header = BatchHeader {
        kind: BATCH_KIND_ENTRIES,
        seal: 0,
        pos,
        epoch,
        batch_bytes: total as u32,
        entry_count: entries.len() as u32,
    };
    bytes[..BATCH_HEADER_BYTES as usize].copy_from_slice(&encode_header(&header));
    update_tail
}

/// The header of a wrap batch filling `len` bytes at `pos` (the rest of a lap).
pub fn wrap_header(pos: u64, epoch: u32, len: u64) -> [u8; BATCH_HEADER_BYTES as usize] {
    encode_header(&BatchHeader {
        kind: BATCH_KIND_WRAP,
        seal: 0,
        pos,
        epoch,
        batch_bytes: len as u32,
        entry_count: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{decode_entry, entry_len};
    use strata_media::TxnId;

    fn meta(txn: u64, lsn: u32) -> EntryMeta {
        EntryMeta {
            txn: TxnId(txn),
            key_hash: txn * 31,
            lsn,
            entry_count: 1,
            op_index: 0,
            compressed: false,
            raw: false,
            form: crate::entry::PayloadForm::Single,
        }
    }

    #[test]
    fn batch_is_padded_to_alignment_and_entries_decode_in_place() {
        let payloads: Vec<Vec<u8>> = (0..5).map(|i| vec![i as u8; 10 + 20 * i]).collect();
        let entries: Vec<BatchEntry> = payloads
            .iter()
            .enumerate()
            .map(|(i, p)| BatchEntry { meta: meta(i as u64, 0), payload: p })
            .collect();
        for align in [8, 256] {
            let b = build_batch(&entries, 4096, 2, align, false);
            assert_eq!(b.bytes.len() as u64 % align, 0);
            assert!(b.update_tail.is_none());
            let h = decode_header(&b.bytes, 4096).unwrap();
            assert_eq!((h.entry_count, h.batch_bytes as usize, h.epoch), (5, b.bytes.len(), 2));
            let mut at = BATCH_HEADER_BYTES as usize;
            for (i, p) in payloads.iter().enumerate() {
                let d = decode_entry(&b.bytes[at..], Stamp { pos: 4096 + at as u64, epoch: 2 }).unwrap();
                assert_eq!((d.meta.txn, &d.payload, d.committed), (TxnId(i as u64), p, true));
                assert_eq!(d.len, entry_len(p.len() as u64));
                at += d.len as usize;
            }
        }
    }

    #[test]
    fn update_entry_is_last_and_written_uncommitted() {
        let entries = [
            BatchEntry { meta: meta(1, 0), payload: b"ins" },
            BatchEntry { meta: meta(2, 4), payload: b"up" },
        ];
        let b = build_batch(&entries, 0, 1, 256, false);
        let (at, tail) = b.update_tail.unwrap();
        assert_eq!(&b.bytes[at as usize..at as usize + 8], &[0; 8]);
        let mut bytes = b.bytes.clone();
        bytes[at as usize..at as usize + 8].copy_from_slice(&tail.to_le_bytes());
        let first = decode_entry(&bytes[32..], Stamp { pos: 32, epoch: 1 }).unwrap();
        let second_at = 32 + first.len as usize;
        let second = decode_entry(&bytes[second_at..], Stamp { pos: second_at as u64, epoch: 1 }).unwrap();
        assert!(second.committed && second.meta.lsn == 4);
    }

    #[test]
    fn strict_ordering_defers_the_last_insert_tail_only() {
        let entries = [
            BatchEntry { meta: meta(1, 0), payload: b"first" },
            BatchEntry { meta: meta(2, 0), payload: b"last" },
        ];
        let b = build_batch(&entries, 0, 1, 256, true);
        let (at, tail) = b.update_tail.expect("the last tail is deferred");
        let first = decode_entry(&b.bytes[32..], Stamp { pos: 32, epoch: 1 }).unwrap();
        assert!(first.committed && !first.tail_deferred);
        let second_at = 32 + first.len as usize;
        let second = decode_entry(&b.bytes[second_at..], Stamp { pos: second_at as u64, epoch: 1 }).unwrap();
        assert!(!second.committed && second.tail_deferred);
        assert_eq!(at as usize, second_at + second.len as usize - 8);
        assert_eq!(tail >> 63, 1);
    }

    #[test]
    fn header_rejects_stale_position_and_accepts_its_seal() {
        let b = build_batch(&[BatchEntry { meta: meta(1, 0), payload: b"x" }], 512, 1, 256, false);
        let stale = decode_header(&b.bytes, 512 + 8192).unwrap_err();
        assert!(matches!(stale, DecodeError::Stale { stamped: 512, .. }), "{stale}");
        assert!(stale.to_string().contains("stale"));
        let h = decode_header(&b.bytes, 512).unwrap();
        let mut sealed = b.bytes.clone();
        sealed[..8].copy_from_slice(&sealed_first_word(&h).to_le_bytes());
        assert_eq!(decode_header(&sealed, 512).unwrap(), BatchHeader { seal: BATCH_SEAL_TORN, ..h });
        for i in (0..32).filter(|i| !(6..8).contains(i)) {
            let mut bad = b.bytes.clone();
            bad[i] ^= 0x10;
            assert!(decode_header(&bad, 512).is_err(), "flip at byte {i}");
        }
        let w = wrap_header(768, 1, 256);
        assert_eq!(decode_header(&w, 768).unwrap().kind, BATCH_KIND_WRAP);
    }
}
