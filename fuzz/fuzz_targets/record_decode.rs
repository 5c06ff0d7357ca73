//! Fuzzes the log record codec (`docs/format/log-record.md`): `decode_header`
//! and `decode_record` on arbitrary bytes at arbitrary stream positions must
//! never panic, and whatever they accept must obey the format.
//!
//! Input: `flags (1) | pos (8) | room (8) | skip (1) | bytes...`. The record
//! is decoded from `bytes[skip % (len + 1)..]`. With flag bit 0 the target
//! first rewrites both CRCs following the documented rules, so the fuzzer
//! gets past them and reaches the tail, commit flag and LSN checks.

#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_log::record::{
    decode_header, decode_record, encode_record, RecordKind, COMMIT_FLAG, HEADER_BYTES, MAX_PAYLOAD_BYTES,
    OFFSET_BODY_CRC, OFFSET_KIND, TAIL_BYTES, TAIL_MAGIC, TAIL_OFFSET_COMMIT_WORD, TAIL_OFFSET_TAIL_CRC,
    TAIL_OFFSET_TAIL_MAGIC,
};
use strata_log::StreamPos;

/// Stream positions stay below 2^63 (LSNs are 63-bit): larger ones cannot
/// reach the decoder through a log device.
const POS_MASK: u64 = (1 << 63) - 1;

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Rewrites body and tail CRC of the record at the start of `b` as the format
/// document specifies them.
fn fix_crcs(b: &mut [u8], record_len: usize, payload_len: usize) {
    let kind = u16::from_le_bytes([b[OFFSET_KIND], b[OFFSET_KIND + 1]]);
    b[OFFSET_BODY_CRC..OFFSET_BODY_CRC + 4].fill(0);
    let mut crc = crc32c::crc32c(&b[..HEADER_BYTES as usize]);
    if kind != RecordKind::Pad as u16 {
        crc = crc32c::crc32c_append(crc, &b[HEADER_BYTES as usize..HEADER_BYTES as usize + payload_len]);
    }
    b[OFFSET_BODY_CRC..OFFSET_BODY_CRC + 4].copy_from_slice(&crc.to_le_bytes());
    let tail = record_len - TAIL_BYTES as usize;
    let mut input = b[tail + TAIL_OFFSET_COMMIT_WORD..tail + TAIL_OFFSET_COMMIT_WORD + 8].to_vec();
    input.extend_from_slice(&crc.to_le_bytes());
    let tail_crc = crc32c::crc32c(&input);
    b[tail + TAIL_OFFSET_TAIL_CRC..tail + TAIL_OFFSET_TAIL_CRC + 4].copy_from_slice(&tail_crc.to_le_bytes());
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 18 {
        return;
    }
    let flags = data[0];
    let pos = StreamPos(u64_at(data, 1) & POS_MASK);
    let room = u64_at(data, 9);
    let rest = &data[18..];
    let mut bytes = rest[data[17] as usize % (rest.len() + 1)..].to_vec();

    // The header alone, with an arbitrary room.
    if let Ok(h) = decode_header(&bytes, room) {
        assert!(h.payload_len <= MAX_PAYLOAD_BYTES);
        assert!(h.record_len() <= room, "accepted a record longer than its room");
        assert_eq!(h.record_len() % 8, 0);
    }

    // A whole record, its length taken from its header.
    let Ok(h) = decode_header(&bytes, bytes.len() as u64) else {
        let _ = decode_record(&bytes, pos);
        return;
    };
    let len = h.record_len() as usize;
    if flags & 1 != 0 {
        fix_crcs(&mut bytes, len, h.payload_len as usize);
    }
    let record = &bytes[..len];
    let tail = len - TAIL_BYTES as usize;
    let word = u64_at(record, tail + TAIL_OFFSET_COMMIT_WORD);
    match decode_record(record, pos) {
        Ok(rec) => {
            assert_eq!(rec.pos, pos);
            assert_eq!(rec.lsn.0, pos.0 + len as u64, "LSN is not the stream position of the record's end");
            assert_eq!(word, COMMIT_FLAG | rec.lsn.0);
            assert_eq!(u32_at(record, tail + TAIL_OFFSET_TAIL_MAGIC), TAIL_MAGIC);
            assert_eq!(rec.kind, h.kind);
            if rec.kind == RecordKind::Txn {
                // Re-encoding gives the same bytes, except the zero padding,
                // which no CRC covers.
                let mut again = Vec::new();
                let lsn = encode_record(RecordKind::Txn, rec.txn, pos, &rec.payload, &mut again);
                assert_eq!(lsn, rec.lsn);
                let payload_end = HEADER_BYTES as usize + rec.payload.len();
                assert_eq!(again[..payload_end], record[..payload_end]);
                assert_eq!(again[tail..], record[tail..]);
            } else {
                assert!(rec.payload.is_empty());
            }
        }
        Err(_) if flags & 1 != 0 => {
            // With correct CRCs only the tail magic, the commit flag or the
            // LSN can make the record invalid.
            let committed = u32_at(record, tail + TAIL_OFFSET_TAIL_MAGIC) == TAIL_MAGIC
                && word & COMMIT_FLAG != 0
                && word & !COMMIT_FLAG == pos.0 + len as u64;
            assert!(!committed, "a record with correct CRCs, tail and LSN was rejected");
        }
        Err(_) => {}
    }
    // And any decode on the raw, possibly longer, bytes.
    let _ = decode_record(&bytes, pos);
});
