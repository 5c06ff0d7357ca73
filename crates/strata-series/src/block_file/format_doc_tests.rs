//! Keeps `docs/format/block-file.md` and the code in agreement: every
//! constant with its value, every field table row with the code's offset and
//! size, each structure tiled without gaps, and an encoded file checked at
//! the documented offsets.

use super::*;
use crate::model::SeriesId;
use strata_testkit::{check_fields, constant};

const DOC: &str = include_str!("../../../../docs/format/block-file.md");

#[test]
fn constants_agree_with_the_doc() {
    assert_eq!(constant(DOC, "BLOCK_FILE_MAGIC"), format!("{BLOCK_FILE_MAGIC:#018x}"));
    assert_eq!(constant(DOC, "BLOCK_FILE_FOOTER_MAGIC"), format!("{BLOCK_FILE_FOOTER_MAGIC:#018x}"));
    assert_eq!(&BLOCK_FILE_MAGIC.to_le_bytes(), b"STRATABF");
    assert_eq!(&BLOCK_FILE_FOOTER_MAGIC.to_le_bytes(), b"STRBFEND");
    assert!(DOC.contains("`STRATABF`") && DOC.contains("`STRBFEND`"), "the doc spells the magics in ASCII");
    assert_eq!(constant(DOC, "BLOCK_FILE_FORMAT_VERSION"), BLOCK_FILE_FORMAT_VERSION.to_string());
    assert_eq!(constant(DOC, "BLOCK_FILE_HEADER_BYTES"), BLOCK_FILE_HEADER_BYTES.to_string());
    assert_eq!(constant(DOC, "HDR_CRC_COVERED_BYTES"), HDR_CRC_COVERED_BYTES.to_string());
    assert_eq!(constant(DOC, "BLOCK_INDEX_ENTRY_BYTES"), BLOCK_INDEX_ENTRY_BYTES.to_string());
    assert_eq!(constant(DOC, "BLOCK_FILE_FOOTER_BYTES"), BLOCK_FILE_FOOTER_BYTES.to_string());
    assert_eq!(constant(DOC, "BLOCK_FILE_NAME_DIGITS"), BLOCK_FILE_NAME_DIGITS.to_string());
    assert!(DOC.contains(&block_file_name(42)), "the doc shows a file name");
    assert!(DOC.contains(&format!("({} MiB)", WRITE_CHUNK_BYTES >> 20)), "the doc gives WRITE_CHUNK_BYTES");
}

#[test]
fn field_tables_agree_with_the_code() {
    let header: &[(&str, usize, usize)] = &[
        ("magic", HDR_OFFSET_MAGIC, 8),
        ("version", HDR_OFFSET_VERSION, 4),
        ("reserved", HDR_OFFSET_RESERVED, 4),
        ("file_seq", HDR_OFFSET_FILE_SEQ, 8),
        ("reserved2", HDR_OFFSET_RESERVED2, 4),
        ("header_crc", HDR_OFFSET_CRC, 4),
    ];
    let index_entry: &[(&str, usize, usize)] = &[
        ("series", ENTRY_OFFSET_SERIES, 8),
        ("min_ts", ENTRY_OFFSET_MIN_TS, 8),
        ("max_ts", ENTRY_OFFSET_MAX_TS, 8),
        ("point_count", ENTRY_OFFSET_POINT_COUNT, 4),
        ("block_offset", ENTRY_OFFSET_BLOCK_OFFSET, 8),
        ("block_len", ENTRY_OFFSET_BLOCK_LEN, 4),
        ("block_crc", ENTRY_OFFSET_BLOCK_CRC, 4),
    ];
    let footer: &[(&str, usize, usize)] = &[
        ("index_offset", FTR_OFFSET_INDEX_OFFSET, 8),
        ("entry_count", FTR_OFFSET_ENTRY_COUNT, 4),
        ("index_crc", FTR_OFFSET_INDEX_CRC, 4),
        ("magic", FTR_OFFSET_MAGIC, 8),
    ];
    for (heading, fields, total_bytes) in [
        ("### Header", header, BLOCK_FILE_HEADER_BYTES),
        ("### Index entry", index_entry, BLOCK_INDEX_ENTRY_BYTES),
        ("### Footer", footer, BLOCK_FILE_FOOTER_BYTES),
    ] {
        check_fields(DOC, heading, fields, total_bytes as usize);
    }
    assert_eq!(HDR_OFFSET_CRC, HDR_CRC_COVERED_BYTES, "the CRC covers everything before it");
}

/// An encoded file holds what the document says at the documented offsets.
#[test]
fn encoded_file_matches_the_documented_layout() {
    let (a, b) = ([0xAAu8; 5], [0xBBu8; 3]);
    let blocks = [
        BlockSpec { series: SeriesId(9), min_ts: -5, max_ts: 7, point_count: 4, bytes: &a },
        BlockSpec { series: SeriesId(2), min_ts: 100, max_ts: 100, point_count: 1, bytes: &b },
    ];
    let f = encode_block_file(0x0102_0304_0506_0708, &blocks).unwrap();
    let u32_at = |at: usize| u32::from_le_bytes(f[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(f[at..at + 8].try_into().unwrap());
    assert_eq!(&f[..8], b"STRATABF");
    assert_eq!(u32_at(8), 1);
    assert_eq!(u64_at(16), 0x0102_0304_0506_0708);
    assert_eq!(u32_at(28), crc32c::crc32c(&f[..28]));
    assert_eq!(f[32..37], a, "blocks in append order from offset 32");
    assert_eq!(f[37..40], b);
    let index_offset = 40;
    let footer = f.len() - 24;
    assert_eq!(footer, index_offset + 2 * 44);
    assert_eq!(u64_at(footer), index_offset as u64);
    assert_eq!(u32_at(footer + 8), 2);
    assert_eq!(u32_at(footer + 12), crc32c::crc32c(&f[index_offset..footer]));
    assert_eq!(&f[footer + 16..], b"STRBFEND");
    // Index sorted by series: series 2 first.
    let e = index_offset;
    assert_eq!(u64_at(e), 2);
    assert_eq!(u64_at(e + 8) as i64, 100);
    assert_eq!(u64_at(e + 16) as i64, 100);
    assert_eq!(u32_at(e + 24), 1);
    assert_eq!(u64_at(e + 28), 37);
    assert_eq!(u32_at(e + 36), 3);
    assert_eq!(u32_at(e + 40), crc32c::crc32c(&b));
    let e = index_offset + 44;
    assert_eq!((u64_at(e), u64_at(e + 8) as i64, u64_at(e + 28), u32_at(e + 36)), (9, -5, 32, 5));
}
