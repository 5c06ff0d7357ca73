//! The DecLog log entry codec (format: `docs/format/declog-stream.md`,
//! declog.txt sections 3.1 and 4.3.1): one entry per operation, not per
//! transaction.
//!
//! An entry is a 40-byte header (txn id, key hash, data-driven LSN, payload
//! length, the number of entries of its transaction and this entry's index
//! among them, flags with the compression bit, CRC32C), the payload
//! zero-padded to 8 bytes, and an 8-byte tail word: the paper's "tail that
//! contains the commit flag and LSN". The CRC is seeded with the entry's
//! stream position and the writer epoch, so bytes left at the same place by
//! an earlier ring lap or an earlier incarnation of the writer never decode as
//! this entry. The tail word binds to the CRC, so it commits only this entry.
//!
//! Insert entries (LSN 0) are written whole, tail included, in one go; an
//! update entry (LSN > 0) is written with a zero tail word, and its tail is
//! stored later by the flushing pipeline with one failure-atomic 8-byte store.
//! Under strict ordering an insert entry is written like an update entry,
//! with its tail deferred; the `ENTRY_FLAG_DEFERRED_TAIL` flag says so, so
//! parsing tells such an entry (valid, not committed) from a torn one.

use strata_media::TxnId;

use crate::error::DecodeError;

pub const ENTRY_HEADER_BYTES: u64 = 40;
pub const ENTRY_TAIL_BYTES: u64 = 8;
/// Entries start at multiples of this inside a batch.
pub const ENTRY_ALIGN_BYTES: u64 = 8;
/// The smallest entry (empty payload).
pub const MIN_ENTRY_BYTES: u64 = ENTRY_HEADER_BYTES + ENTRY_TAIL_BYTES;
pub const ENTRY_OFFSET_TXN_ID: usize = 0;
pub const ENTRY_OFFSET_KEY_HASH: usize = 8;
pub const ENTRY_OFFSET_LSN: usize = 16;
pub const ENTRY_OFFSET_PAYLOAD_LEN: usize = 20;
pub const ENTRY_OFFSET_ENTRY_COUNT: usize = 24;
pub const ENTRY_OFFSET_OP_INDEX: usize = 28;
pub const ENTRY_OFFSET_FLAGS: usize = 32;
pub const ENTRY_OFFSET_CRC: usize = 36;
/// Bit 0 of `flags`: the payload was compressed by the compression stage
/// (declog.txt 4.4.1).
pub const ENTRY_FLAG_COMPRESSED: u32 = 1;
/// Bit 1 of `flags`: an insert entry (LSN 0) written without its tail, which
/// is stored once the entry is persisted (strict ordering). Never set on an
/// update entry (they always defer their tails). Every other bit is zero.
pub const ENTRY_FLAG_DEFERRED_TAIL: u32 = 2;
/// Bit 2 of `flags`: with compression on, the payload is the submitted point
/// payload verbatim, because its key does not fit the stream's key table
/// (longer than `KEY_TABLE_MAX_KEY_BYTES`, or the table is full). Never
/// together with `ENTRY_FLAG_COMPRESSED`.
pub const ENTRY_FLAG_RAW_POINT: u32 = 4;
/// Bit 3 of `flags` (format version 3): the payload, once decompressed, is
/// a points payload (every point of one key in one transaction,
/// [`PayloadForm::PerKey`]); without it, a point payload (with
/// compression) or opaque bytes. Version 2 never set it.
pub const ENTRY_FLAG_PER_KEY: u32 = 8;
/// Every flag bit an entry may carry.
pub const ENTRY_FLAGS_KNOWN: u32 =
    ENTRY_FLAG_COMPRESSED | ENTRY_FLAG_DEFERRED_TAIL | ENTRY_FLAG_RAW_POINT | ENTRY_FLAG_PER_KEY;
/// Bit 63 of the tail word.
pub const TAIL_COMMIT_FLAG: u64 = 1 << 63;

/// One operation of a transaction, as handed to [`crate::DecLog::commit`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EntryIn<'a> {
    /// Hash of the operation's key (measurement, tags, field key): picks the
    /// logging thread (key-based partitioning, section 4.3.1).
    pub key_hash: u64,
    /// Data-driven LSN (section 4.1): 0 for an insert-only transaction, the
    /// transaction's LSN (> 0) for an update transaction. Every entry of one
    /// transaction carries the same LSN.
    pub lsn: u32,
    /// Without compression: whether the caller compressed the payload
    /// itself; carried, never interpreted. With compression it must be
    /// false: DecLog compresses and sets the bit on media itself.
    pub compressed: bool,
    /// The redo payload: opaque without compression; with compression a
    /// point payload ([`crate::compress::point_payload`]).
    pub payload: &'a [u8],
}

/// An [`EntryIn`] owning its payload ([`crate::DecLog::submit_owned`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryOwned {
    pub key_hash: u64,
    pub lsn: u32,
    pub compressed: bool,
    pub payload: Vec<u8>,
}

impl EntryOwned {
    pub fn as_entry_in(&self) -> EntryIn<'_> {
        EntryIn {
            key_hash: self.key_hash,
            lsn: self.lsn,
            compressed: self.compressed,
            payload: &self.payload,
        }
    }
}

impl From<&EntryIn<'_>> for EntryOwned {
    fn from(e: &EntryIn<'_>) -> EntryOwned {
        EntryOwned { key_hash: e.key_hash, lsn: e.lsn, compressed: e.compressed, payload: e.payload.to_vec() }
    }
}

/// What an entry's payload holds ([`crate::DecLog::submit_owned_as`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum PayloadForm {
    /// One operation: with compression a point payload
    /// ([`crate::compress::point_payload`]), without it opaque bytes.
    #[default]
    Single,
    /// Every operation of one transaction on one key: a points payload
    /// ([`crate::compress::points_payload`]), compressed together against
    /// the key's running state (`ENTRY_FLAG_PER_KEY`).
    PerKey,
}

/// Everything of an entry except its payload.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EntryMeta {
    pub txn: TxnId,
    pub key_hash: u64,
    pub lsn: u32,
    /// Entries of the transaction (in all streams).
    pub entry_count: u32,
    /// This entry's index among them, `0..entry_count`.
    pub op_index: u32,
    pub compressed: bool,
    /// The payload is a point payload logged verbatim (`ENTRY_FLAG_RAW_POINT`).
    pub raw: bool,
    /// The payload's form (`ENTRY_FLAG_PER_KEY`).
    pub form: PayloadForm,
}

/// Where an entry sits: its stream position and the writer epoch of its batch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub pos: u64,
    pub epoch: u32,
}

/// Payload length rounded up to the entry alignment.
pub const fn padded_payload_len(payload_len: u64) -> u64 {
    payload_len.div_ceil(ENTRY_ALIGN_BYTES) * ENTRY_ALIGN_BYTES
}

/// Bytes of an entry with this payload length.
pub const fn entry_len(payload_len: u64) -> u64 {
    ENTRY_HEADER_BYTES + padded_payload_len(payload_len) + ENTRY_TAIL_BYTES
}

/// The committed tail word of an entry with body CRC `crc` and `lsn`.
pub fn tail_word(crc: u32, lsn: u32) -> u64 {
    TAIL_COMMIT_FLAG | (((crc & 0x7FFF_FFFF) as u64) << 32) | lsn as u64
}

fn entry_crc(stamp: Stamp, header: &[u8], payload: &[u8]) -> u32 {
    let mut seed = [0u8; 12];
    seed[..8].copy_from_slice(&stamp.pos.to_le_bytes());
    seed[8..].copy_from_slice(&stamp.epoch.to_le_bytes());
    let crc = crc32c::crc32c(&seed);
    let crc = crc32c::crc32c_append(crc, &header[..ENTRY_OFFSET_CRC]);
    crc32c::crc32c_append(crc, payload)
}

/// Appends the entry to `out` (which must end at an 8-byte boundary). The tail
/// word is written committed when `with_tail`, else as zero (and an insert
/// entry gets `ENTRY_FLAG_DEFERRED_TAIL`). Returns the committed tail word
/// (for a later store) and its offset within `out`.
pub fn encode_entry(
    meta: &EntryMeta,
    payload: &[u8],
    stamp: Stamp,
    with_tail: bool,
    out: &mut Vec<u8>,
) -> (u64, usize) {
    debug_assert!(out.len().is_multiple_of(ENTRY_ALIGN_BYTES as usize));
    let mut h = [0u8; ENTRY_HEADER_BYTES as usize];
    h[ENTRY_OFFSET_TXN_ID..ENTRY_OFFSET_TXN_ID + 8].copy_from_slice(&meta.txn.0.to_le_bytes());
    h[ENTRY_OFFSET_KEY_HASH..ENTRY_OFFSET_KEY_HASH + 8].copy_from_slice(&meta.key_hash.to_le_bytes());
    h[ENTRY_OFFSET_LSN..ENTRY_OFFSET_LSN + 4].copy_from_slice(&meta.lsn.to_le_bytes());
    h[ENTRY_OFFSET_PAYLOAD_LEN..ENTRY_OFFSET_PAYLOAD_LEN + 4]
        .copy_from_slice(&(payload.len() as u32).to_le_bytes());
    h[ENTRY_OFFSET_ENTRY_COUNT..ENTRY_OFFSET_ENTRY_COUNT + 4]
        .copy_from_slice(&meta.entry_count.to_le_bytes());
    h[ENTRY_OFFSET_OP_INDEX..ENTRY_OFFSET_OP_INDEX + 4].copy_from_slice(&meta.op_index.to_le_bytes());
    let flags = if meta.compressed { ENTRY_FLAG_COMPRESSED } else { 0 }
        | if meta.raw { ENTRY_FLAG_RAW_POINT } else { 0 }
        | if meta.form == PayloadForm::PerKey { ENTRY_FLAG_PER_KEY } else { 0 }
        | if !with_tail && meta.lsn == 0 { ENTRY_FLAG_DEFERRED_TAIL } else { 0 };
    h[ENTRY_OFFSET_FLAGS..ENTRY_OFFSET_FLAGS + 4].copy_from_slice(&flags.to_le_bytes());
    let crc = entry_crc(stamp, &h, payload);
    h[ENTRY_OFFSET_CRC..ENTRY_OFFSET_CRC + 4].copy_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(payload);
    out.resize(out.len() + (padded_payload_len(payload.len() as u64) - payload.len() as u64) as usize, 0);
    let tail = tail_word(crc, meta.lsn);
    let tail_at = out.len();
    out.extend_from_slice(&(if with_tail { tail } else { 0 }).to_le_bytes());
    (tail, tail_at)
}

/// A decoded entry whose header and payload are intact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedEntry {
    pub meta: EntryMeta,
    pub payload: Vec<u8>,
    /// Bytes the entry occupies.
    pub len: u64,
    /// Whether its tail word commits it.
    pub committed: bool,
    /// Whether its tail was stored after its body (an update entry, or an
    /// insert entry with `ENTRY_FLAG_DEFERRED_TAIL`): such an entry without
    /// its tail is valid but not committed; any other is torn.
    pub tail_deferred: bool,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Decodes the entry at the start of `bytes` (the rest of its batch), stamped
/// `stamp`. `Err` when the header or payload is not intact (torn, zero, or
/// stale); an intact entry whose tail word is not its commit word decodes with
/// `committed: false`.
pub fn decode_entry(bytes: &[u8], stamp: Stamp) -> Result<DecodedEntry, DecodeError> {
    if (bytes.len() as u64) < MIN_ENTRY_BYTES {
        return Err(DecodeError::Truncated {
            what: "entry",
            need: MIN_ENTRY_BYTES,
            have: bytes.len() as u64,
        });
    }
    let payload_len = u32_at(bytes, ENTRY_OFFSET_PAYLOAD_LEN) as u64;
    let len = entry_len(payload_len);
    if len > bytes.len() as u64 {
        return Err(DecodeError::Overrun { what: "entry", len, room: bytes.len() as u64 });
    }
    let header = &bytes[..ENTRY_HEADER_BYTES as usize];
    let payload = &bytes[ENTRY_HEADER_BYTES as usize..(ENTRY_HEADER_BYTES + payload_len) as usize];
    let crc = u32_at(header, ENTRY_OFFSET_CRC);
    DecodeError::check_crc("entry", crc, entry_crc(stamp, header, payload))?;
    let flags = u32_at(header, ENTRY_OFFSET_FLAGS);
    if flags & !ENTRY_FLAGS_KNOWN != 0 {
        return Err(DecodeError::Unknown { what: "entry flags", value: flags.into() });
    }
    if flags & ENTRY_FLAG_COMPRESSED != 0 && flags & ENTRY_FLAG_RAW_POINT != 0 {
        return Err(DecodeError::Invalid("entry flagged both compressed and raw".into()));
    }
    let meta = EntryMeta {
        txn: TxnId(u64_at(header, ENTRY_OFFSET_TXN_ID)),
        key_hash: u64_at(header, ENTRY_OFFSET_KEY_HASH),
        lsn: u32_at(header, ENTRY_OFFSET_LSN),
        entry_count: u32_at(header, ENTRY_OFFSET_ENTRY_COUNT),
        op_index: u32_at(header, ENTRY_OFFSET_OP_INDEX),
        compressed: flags & ENTRY_FLAG_COMPRESSED != 0,
        raw: flags & ENTRY_FLAG_RAW_POINT != 0,
        form: if flags & ENTRY_FLAG_PER_KEY != 0 { PayloadForm::PerKey } else { PayloadForm::Single },
    };
    if meta.entry_count == 0 || meta.op_index >= meta.entry_count {
        return Err(DecodeError::Invalid(format!(
            "entry {} of {} is out of range",
            meta.op_index, meta.entry_count
        )));
    }
    let deferred_flag = flags & ENTRY_FLAG_DEFERRED_TAIL != 0;
    if deferred_flag && meta.lsn > 0 {
        return Err(DecodeError::Invalid("deferred-tail flag on an update entry".into()));
    }
    let tail = u64_at(bytes, (len - ENTRY_TAIL_BYTES) as usize);
    let committed = tail == tail_word(crc, meta.lsn);
    Ok(DecodedEntry {
        meta,
        payload: payload.to_vec(),
        len,
        committed,
        tail_deferred: deferred_flag || meta.lsn > 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(lsn: u32) -> EntryMeta {
        EntryMeta {
            txn: TxnId(77),
            key_hash: 0xABCD,
            lsn,
            entry_count: 3,
            op_index: 1,
            compressed: true,
            raw: false,
            form: PayloadForm::Single,
        }
    }

    const STAMP: Stamp = Stamp { pos: 4096, epoch: 3 };

    #[test]
    fn round_trips_with_padding_and_tail() {
        for len in [0usize, 1, 7, 8, 9, 50, 255] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut out = Vec::new();
            let (tail, at) = encode_entry(&meta(0), &payload, STAMP, true, &mut out);
            assert_eq!(out.len() as u64, entry_len(len as u64));
            assert_eq!(at, out.len() - 8);
            assert_eq!(u64::from_le_bytes(out[at..].try_into().unwrap()), tail);
            let d = decode_entry(&out, STAMP).unwrap();
            assert_eq!((d.meta, d.payload, d.len, d.committed), (meta(0), payload, out.len() as u64, true));
        }
    }

    #[test]
    fn update_entry_commits_only_with_its_tail_word() {
        let mut out = Vec::new();
        let (tail, at) = encode_entry(&meta(5), b"upd", STAMP, false, &mut out);
        assert!(!decode_entry(&out, STAMP).unwrap().committed, "zero tail: not committed");
        out[at..at + 8].copy_from_slice(&tail.to_le_bytes());
        assert!(decode_entry(&out, STAMP).unwrap().committed);
        assert_eq!(tail & 0xFFFF_FFFF, 5, "the tail carries the LSN");
        assert_ne!(tail & TAIL_COMMIT_FLAG, 0);
    }

    #[test]
    fn an_insert_written_without_its_tail_is_flagged_deferred() {
        let mut out = Vec::new();
        let (tail, at) = encode_entry(&meta(0), b"strict", STAMP, false, &mut out);
        let flags = u32::from_le_bytes(out[ENTRY_OFFSET_FLAGS..ENTRY_OFFSET_FLAGS + 4].try_into().unwrap());
        assert_eq!(flags, ENTRY_FLAG_COMPRESSED | ENTRY_FLAG_DEFERRED_TAIL);
        let d = decode_entry(&out, STAMP).unwrap();
        assert!(d.tail_deferred && !d.committed);
        out[at..at + 8].copy_from_slice(&tail.to_le_bytes());
        assert!(decode_entry(&out, STAMP).unwrap().committed);
        let mut with_tail = Vec::new();
        encode_entry(&meta(0), b"relaxed", STAMP, true, &mut with_tail);
        assert!(!decode_entry(&with_tail, STAMP).unwrap().tail_deferred);
        let mut update = Vec::new();
        encode_entry(&meta(4), b"u", STAMP, false, &mut update);
        let d = decode_entry(&update, STAMP).unwrap();
        assert!(d.tail_deferred, "update entries always defer");
        assert_eq!(u32::from_le_bytes(update[32..36].try_into().unwrap()), ENTRY_FLAG_COMPRESSED);
    }

    #[test]
    fn the_per_key_form_is_flag_bit_3() {
        let per_key = EntryMeta { form: PayloadForm::PerKey, compressed: false, ..meta(0) };
        let mut out = Vec::new();
        encode_entry(&per_key, b"pts", STAMP, true, &mut out);
        let flags = u32::from_le_bytes(out[ENTRY_OFFSET_FLAGS..ENTRY_OFFSET_FLAGS + 4].try_into().unwrap());
        assert_eq!(flags, ENTRY_FLAG_PER_KEY);
        assert_eq!(decode_entry(&out, STAMP).unwrap().meta, per_key);
    }

    #[test]
    fn other_position_or_epoch_does_not_decode() {
        let mut out = Vec::new();
        encode_entry(&meta(0), b"abc", STAMP, true, &mut out);
        assert!(decode_entry(&out, Stamp { pos: 4096 + 8192, ..STAMP }).is_err(), "an earlier lap");
        assert!(decode_entry(&out, Stamp { epoch: 4, ..STAMP }).is_err(), "an earlier incarnation");
    }

    #[test]
    fn every_bit_flip_of_header_and_payload_is_detected() {
        let mut out = Vec::new();
        encode_entry(&meta(9), b"payload!!", STAMP, true, &mut out);
        let meaningful = ENTRY_HEADER_BYTES as usize + 9;
        for i in 0..meaningful {
            for bit in 0..8 {
                let mut b = out.clone();
                b[i] ^= 1 << bit;
                assert!(decode_entry(&b, STAMP).is_err(), "flip of byte {i} bit {bit} undetected");
            }
        }
        // Tail flips un-commit the entry.
        for bit in 0..64 {
            let mut b = out.clone();
            let at = out.len() - 8;
            let w = u64::from_le_bytes(b[at..].try_into().unwrap()) ^ (1 << bit);
            b[at..].copy_from_slice(&w.to_le_bytes());
            assert!(!decode_entry(&b, STAMP).unwrap().committed, "tail bit {bit}");
        }
    }

    #[test]
    fn short_or_out_of_range_input_is_an_error_not_a_panic() {
        assert!(decode_entry(&[0; 10], STAMP).is_err());
        assert!(decode_entry(&[0xFF; 64], STAMP).is_err());
        let mut out = Vec::new();
        encode_entry(&meta(0), &[1; 30], STAMP, true, &mut out);
        assert!(decode_entry(&out[..out.len() - 1], STAMP).is_err());
    }
}
