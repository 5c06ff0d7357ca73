//! The log record codec (format: `docs/format/log-record.md`).
//!
//! A record is a 24-byte header, the payload zero-padded to 8 bytes, and a
//! 16-byte tail. The header carries a CRC32C over header and payload; the tail
//! carries the commit flag and LSN in one failure-atomic 8-byte word plus a
//! CRC32C binding that word to the body. A record is valid only when magic,
//! version, kind, both CRCs, the commit flag and the LSN expected at its
//! stream position all agree, so a torn write or a stale record from an
//! earlier lap of a ring never decodes as valid.
//!
//! `Pad` records fill the end of a ring lap; their CRC covers the header only
//! and their payload bytes are never read.
//!
//! [`RecordError`] says why bytes are not a valid record (or SSD segment
//! header); replay decides whether that is a torn tail or corruption.

use crate::lsn::{Lsn, StreamPos, MAX_LSN};
use strata_media::TxnId;

/// Why bytes do not decode as a valid record or SSD segment header. Every
/// variant means "not a committed record here": the scan decides whether
/// that is a torn tail or corruption.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("truncated {what}: {need} bytes needed, {have} given")]
    Truncated { what: &'static str, need: u64, have: u64 },
    #[error("bad {what} magic {found:#010x}")]
    BadMagic { what: &'static str, found: u64 },
    #[error("unknown {what} format version {version}")]
    UnsupportedVersion { what: &'static str, version: u32 },
    #[error("unknown record kind {0}")]
    UnknownKind(u16),
    #[error("payload length {0} over the limit")]
    PayloadTooLarge(u64),
    #[error("record of {len} bytes overruns the {room} bytes available")]
    Overrun { len: u64, room: u64 },
    #[error("{what} CRC mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    BadChecksum { what: &'static str, stored: u32, computed: u32 },
    #[error("no tail (uncommitted)")]
    NoTail,
    #[error("commit flag clear")]
    CommitFlagClear,
    #[error("LSN {lsn} is not the {expected} expected at {pos} (stale record)")]
    Stale { lsn: u64, expected: u64, pos: StreamPos },
    #[error("segment base {0} is not a valid record position")]
    BadSegmentBase(u64),
    #[error("{0}")]
    Invalid(&'static str),
}

/// Checks a stored CRC against the computed one.
pub(crate) fn check_crc(what: &'static str, stored: u32, computed: u32) -> Result<(), RecordError> {
    if stored == computed {
        Ok(())
    } else {
        Err(RecordError::BadChecksum { what, stored, computed })
    }
}

/// First four bytes of every record: "STRL".
pub const RECORD_MAGIC: u32 = u32::from_le_bytes(*b"STRL");
/// Last four bytes of every tail: "TAIL".
pub const TAIL_MAGIC: u32 = u32::from_le_bytes(*b"TAIL");
pub const RECORD_FORMAT_VERSION: u16 = 1;
pub const HEADER_BYTES: u64 = 24;
pub const TAIL_BYTES: u64 = 16;
/// The smallest record (empty payload).
pub const MIN_RECORD_BYTES: u64 = HEADER_BYTES + TAIL_BYTES;
/// Records start at multiples of this.
pub const RECORD_ALIGN_BYTES: u64 = 8;
/// Bit 63 of the tail's commit word.
pub const COMMIT_FLAG: u64 = 1 << 63;
/// Largest payload a record may carry.
pub const MAX_PAYLOAD_BYTES: u64 = 64 << 20;

pub const OFFSET_MAGIC: usize = 0;
pub const OFFSET_KIND: usize = 4;
pub const OFFSET_VERSION: usize = 6;
pub const OFFSET_PAYLOAD_LEN: usize = 8;
pub const OFFSET_BODY_CRC: usize = 12;
pub const OFFSET_TXN_ID: usize = 16;
pub const TAIL_OFFSET_COMMIT_WORD: usize = 0;
pub const TAIL_OFFSET_TAIL_CRC: usize = 8;
pub const TAIL_OFFSET_TAIL_MAGIC: usize = 12;

/// What a record carries.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum RecordKind {
    /// A transaction's redo payload.
    Txn = 1,
    /// Filler to the end of a ring lap; payload not covered by the CRC.
    Pad = 2,
}

impl RecordKind {
    pub fn from_u16(v: u16) -> Option<RecordKind> {
        match v {
            1 => Some(RecordKind::Txn),
            2 => Some(RecordKind::Pad),
            _ => None,
        }
    }
}

/// A decoded, valid record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    pub kind: RecordKind,
    pub txn: TxnId,
    pub lsn: Lsn,
    /// Where the record starts in the log stream.
    pub pos: StreamPos,
    pub payload: Vec<u8>,
}

/// Payload length rounded up to the record alignment.
pub const fn padded_payload_len(payload_len: u64) -> u64 {
    (payload_len + RECORD_ALIGN_BYTES - 1) & !(RECORD_ALIGN_BYTES - 1)
}

/// Total bytes of a record with this payload length.
pub const fn record_len(payload_len: u64) -> u64 {
    HEADER_BYTES + padded_payload_len(payload_len) + TAIL_BYTES
}

/// The decoded header fields.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub kind: RecordKind,
    pub payload_len: u64,
    pub body_crc: u32,
    pub txn: TxnId,
}

impl RecordHeader {
    pub fn record_len(&self) -> u64 {
        record_len(self.payload_len)
    }
}

fn header_bytes(kind: RecordKind, txn: TxnId, payload_len: u64) -> [u8; HEADER_BYTES as usize] {
    let mut h = [0u8; HEADER_BYTES as usize];
    h[OFFSET_MAGIC..OFFSET_MAGIC + 4].copy_from_slice(&RECORD_MAGIC.to_le_bytes());
    h[OFFSET_KIND..OFFSET_KIND + 2].copy_from_slice(&(kind as u16).to_le_bytes());
    h[OFFSET_VERSION..OFFSET_VERSION + 2].copy_from_slice(&RECORD_FORMAT_VERSION.to_le_bytes());
    h[OFFSET_PAYLOAD_LEN..OFFSET_PAYLOAD_LEN + 4].copy_from_slice(&(payload_len as u32).to_le_bytes());
    h[OFFSET_TXN_ID..OFFSET_TXN_ID + 8].copy_from_slice(&txn.0.to_le_bytes());
    h
}

/// CRC32C over the header with its CRC field zeroed, then the payload
/// (header only for `Pad`).
fn body_crc(header_with_zero_crc: &[u8], kind: RecordKind, payload: &[u8]) -> u32 {
    let crc = crc32c::crc32c(header_with_zero_crc);
    match kind {
        RecordKind::Pad => crc,
        _ => crc32c::crc32c_append(crc, payload),
    }
}

/// CRC32C over the commit word and the body CRC, both little-endian.
pub fn tail_crc(commit_word: u64, body_crc: u32) -> u32 {
    let mut b = [0u8; 12];
    b[..8].copy_from_slice(&commit_word.to_le_bytes());
    b[8..].copy_from_slice(&body_crc.to_le_bytes());
    crc32c::crc32c(&b)
}

/// Appends header and padded payload to `out`; returns the body CRC, which
/// the tail needs. For `Pad`, `payload_len` bytes are reserved but not
/// written (the caller skips them).
pub fn encode_body(kind: RecordKind, txn: TxnId, payload: &[u8], out: &mut Vec<u8>) -> u32 {
    assert!(payload.len() as u64 <= MAX_PAYLOAD_BYTES, "payload over MAX_PAYLOAD_BYTES");
    let mut h = header_bytes(kind, txn, payload.len() as u64);
    let crc = body_crc(&h, kind, payload);
    h[OFFSET_BODY_CRC..OFFSET_BODY_CRC + 4].copy_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(payload);
    out.resize(out.len() + (padded_payload_len(payload.len() as u64) - payload.len() as u64) as usize, 0);
    crc
}

/// The header of a `Pad` record covering `total_len` bytes (at least
/// [`MIN_RECORD_BYTES`]), and its body CRC.
pub fn encode_pad_header(total_len: u64) -> ([u8; HEADER_BYTES as usize], u32) {
    assert!(total_len >= MIN_RECORD_BYTES && total_len.is_multiple_of(RECORD_ALIGN_BYTES));
    let mut h = header_bytes(RecordKind::Pad, TxnId(0), total_len - MIN_RECORD_BYTES);
    let crc = body_crc(&h, RecordKind::Pad, &[]);
    h[OFFSET_BODY_CRC..OFFSET_BODY_CRC + 4].copy_from_slice(&crc.to_le_bytes());
    (h, crc)
}

/// The 16-byte tail committing a record with `lsn`.
pub fn encode_tail(lsn: Lsn, body_crc: u32) -> [u8; TAIL_BYTES as usize] {
    assert!(lsn.0 <= MAX_LSN, "LSN overflow");
    let word = COMMIT_FLAG | lsn.0;
    let mut t = [0u8; TAIL_BYTES as usize];
    t[TAIL_OFFSET_COMMIT_WORD..TAIL_OFFSET_COMMIT_WORD + 8].copy_from_slice(&word.to_le_bytes());
    t[TAIL_OFFSET_TAIL_CRC..TAIL_OFFSET_TAIL_CRC + 4]
        .copy_from_slice(&tail_crc(word, body_crc).to_le_bytes());
    t[TAIL_OFFSET_TAIL_MAGIC..TAIL_OFFSET_TAIL_MAGIC + 4].copy_from_slice(&TAIL_MAGIC.to_le_bytes());
    t
}

/// Appends a whole committed record starting at stream position `pos`;
/// returns its LSN.
pub fn encode_record(kind: RecordKind, txn: TxnId, pos: StreamPos, payload: &[u8], out: &mut Vec<u8>) -> Lsn {
    let lsn = Lsn(pos.0 + record_len(payload.len() as u64));
    let crc = encode_body(kind, txn, payload, out);
    out.extend_from_slice(&encode_tail(lsn, crc));
    lsn
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Validates the fixed part of a header. `room_bytes` is how many bytes the
/// record may occupy at its position (to the end of the ring lap or file).
pub fn decode_header(h: &[u8], room_bytes: u64) -> Result<RecordHeader, RecordError> {
    if (h.len() as u64) < HEADER_BYTES {
        return Err(RecordError::Truncated { what: "header", need: HEADER_BYTES, have: h.len() as u64 });
    }
    let magic = u32_at(h, OFFSET_MAGIC);
    if magic != RECORD_MAGIC {
        return Err(RecordError::BadMagic { what: "record", found: magic.into() });
    }
    let version = u16_at(h, OFFSET_VERSION);
    if version != RECORD_FORMAT_VERSION {
        return Err(RecordError::UnsupportedVersion { what: "record", version: version.into() });
    }
    let kind_raw = u16_at(h, OFFSET_KIND);
    let kind = RecordKind::from_u16(kind_raw).ok_or(RecordError::UnknownKind(kind_raw))?;
    let payload_len = u32_at(h, OFFSET_PAYLOAD_LEN) as u64;
    if payload_len > MAX_PAYLOAD_BYTES {
        return Err(RecordError::PayloadTooLarge(payload_len));
    }
    if record_len(payload_len) > room_bytes {
        return Err(RecordError::Overrun { len: record_len(payload_len), room: room_bytes });
    }
    Ok(RecordHeader {
        kind,
        payload_len,
        body_crc: u32_at(h, OFFSET_BODY_CRC),
        txn: TxnId(u64_at(h, OFFSET_TXN_ID)),
    })
}

/// Decodes a whole record (`bytes` is exactly `header.record_len()` long,
/// though a `Pad` record's payload bytes may be anything) found at `pos`.
pub fn decode_record(bytes: &[u8], pos: StreamPos) -> Result<LogRecord, RecordError> {
    let header = decode_header(bytes, bytes.len() as u64)?;
    let len = header.record_len();
    if bytes.len() as u64 != len {
        return Err(RecordError::Truncated { what: "record", need: len, have: bytes.len() as u64 });
    }
    let payload_end = (HEADER_BYTES + header.payload_len) as usize;
    let payload = &bytes[HEADER_BYTES as usize..payload_end];
    let mut zeroed = [0u8; HEADER_BYTES as usize];
    zeroed.copy_from_slice(&bytes[..HEADER_BYTES as usize]);
    zeroed[OFFSET_BODY_CRC..OFFSET_BODY_CRC + 4].fill(0);
    check_crc("body", header.body_crc, body_crc(&zeroed, header.kind, payload))?;
    let tail = &bytes[(len - TAIL_BYTES) as usize..];
    if u32_at(tail, TAIL_OFFSET_TAIL_MAGIC) != TAIL_MAGIC {
        return Err(RecordError::NoTail);
    }
    let word = u64_at(tail, TAIL_OFFSET_COMMIT_WORD);
    check_crc("tail", u32_at(tail, TAIL_OFFSET_TAIL_CRC), tail_crc(word, header.body_crc))?;
    if word & COMMIT_FLAG == 0 {
        return Err(RecordError::CommitFlagClear);
    }
    let lsn = Lsn(word & !COMMIT_FLAG);
    if lsn.0 != pos.0 + len {
        return Err(RecordError::Stale { lsn: lsn.0, expected: pos.0 + len, pos });
    }
    let payload = if header.kind == RecordKind::Pad { Vec::new() } else { payload.to_vec() };
    Ok(LogRecord { kind: header.kind, txn: header.txn, lsn, pos, payload })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_padding() {
        for len in [0usize, 1, 7, 8, 9, 100, 255] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut out = Vec::new();
            let lsn = encode_record(RecordKind::Txn, TxnId(42), StreamPos(1000), &payload, &mut out);
            assert_eq!(out.len() as u64, record_len(len as u64));
            assert_eq!(out.len() % 8, 0);
            assert_eq!(lsn, Lsn(1000 + out.len() as u64));
            let rec = decode_record(&out, StreamPos(1000)).unwrap();
            assert_eq!((rec.txn, rec.lsn, rec.payload), (TxnId(42), lsn, payload));
        }
    }

    #[test]
    fn stale_position_is_rejected() {
        let mut out = Vec::new();
        encode_record(RecordKind::Txn, TxnId(1), StreamPos(0), b"abc", &mut out);
        let err = decode_record(&out, StreamPos(4096)).unwrap_err();
        assert!(matches!(err, RecordError::Stale { .. }), "{err}");
        assert!(err.to_string().contains("stale"), "{err}");
    }

    #[test]
    fn every_single_byte_flip_is_detected() {
        let mut out = Vec::new();
        encode_record(RecordKind::Txn, TxnId(7), StreamPos(64), b"payload bytes!", &mut out);
        let payload_end = HEADER_BYTES as usize + 14;
        for i in 0..out.len() {
            if (payload_end..out.len() - TAIL_BYTES as usize).contains(&i) {
                continue; // padding bytes are not part of the record's meaning
            }
            for bit in 0..8 {
                let mut b = out.clone();
                b[i] ^= 1 << bit;
                assert!(decode_record(&b, StreamPos(64)).is_err(), "flip of byte {i} bit {bit} undetected");
            }
        }
    }

    #[test]
    fn pad_covers_requested_length() {
        let (h, crc) = encode_pad_header(96);
        let mut b = h.to_vec();
        b.resize(96 - TAIL_BYTES as usize, 0xAB);
        b.extend_from_slice(&encode_tail(Lsn(96), crc));
        let rec = decode_record(&b, StreamPos(0)).unwrap();
        assert_eq!(rec.kind, RecordKind::Pad);
    }

    #[test]
    fn header_overrunning_room_is_rejected() {
        let mut out = Vec::new();
        encode_record(RecordKind::Txn, TxnId(1), StreamPos(0), &[0; 64], &mut out);
        assert!(decode_header(&out, 64).is_err());
        assert!(decode_header(&out, out.len() as u64).is_ok());
    }
}
