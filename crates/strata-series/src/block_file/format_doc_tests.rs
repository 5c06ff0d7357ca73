//! Keeps `docs/format/block-file.md` and the code in agreement: every
//! constant with its value, every field table row with the code's offset and
//! size, each structure tiled without gaps, and an encoded file checked at
//! the documented offsets.

use super::*;
use crate::model::{FieldType, FieldValue, SeriesId};
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
    assert_eq!(constant(DOC, "BLOCK_FILE_OLDEST_VERSION"), BLOCK_FILE_OLDEST_VERSION.to_string());
    assert_eq!(constant(DOC, "BLOCK_INDEX_ENTRY_BYTES_V1"), BLOCK_INDEX_ENTRY_BYTES_V1.to_string());
    for (name, value) in [
        ("SUMMARY_KIND_NONE", SUMMARY_KIND_NONE),
        ("SUMMARY_KIND_FLOAT", SUMMARY_KIND_FLOAT),
        ("SUMMARY_KIND_INTEGER", SUMMARY_KIND_INTEGER),
        ("SUMMARY_KIND_UNSIGNED", SUMMARY_KIND_UNSIGNED),
        ("SUMMARY_KIND_BOOLEAN", SUMMARY_KIND_BOOLEAN),
    ] {
        assert_eq!(constant(DOC, name), value.to_string(), "{name}");
    }
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
        ("summary_kind", ENTRY_OFFSET_SUMMARY_KIND, 4),
        ("sum", ENTRY_OFFSET_SUM, 8),
        ("min", ENTRY_OFFSET_MIN, 8),
        ("max", ENTRY_OFFSET_MAX, 8),
        ("first", ENTRY_OFFSET_FIRST, 8),
        ("last", ENTRY_OFFSET_LAST, 8),
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
    assert_eq!(ENTRY_OFFSET_SUMMARY_KIND as u64, BLOCK_INDEX_ENTRY_BYTES_V1, "version 2 appends the summary");
    assert_eq!(BLOCK_INDEX_ENTRY_BYTES_V1 as usize + SUMMARY_BYTES, BLOCK_INDEX_ENTRY_BYTES as usize);
}

/// An encoded file holds what the document says at the documented offsets.
#[test]
fn encoded_file_matches_the_documented_layout() {
    let (a, b) = ([0xAAu8; 5], [0xBBu8; 3]);
    let points: Vec<(i64, FieldValue)> =
        [(-5, -3), (0, 8), (3, 1), (7, 2)].iter().map(|(t, v)| (*t, FieldValue::Integer(*v))).collect();
    let summary = BlockSummary::of_points(FieldType::Integer, &points);
    let blocks = [
        BlockSpec { series: SeriesId(9), min_ts: -5, max_ts: 7, point_count: 4, bytes: &a, summary },
        BlockSpec { series: SeriesId(2), min_ts: 100, max_ts: 100, point_count: 1, bytes: &b, summary: None },
    ];
    let f = encode_block_file(0x0102_0304_0506_0708, &blocks).unwrap();
    let u32_at = |at: usize| u32::from_le_bytes(f[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(f[at..at + 8].try_into().unwrap());
    assert_eq!(&f[..8], b"STRATABF");
    assert_eq!(u32_at(8), 2);
    assert_eq!(u64_at(16), 0x0102_0304_0506_0708);
    assert_eq!(u32_at(28), crc32c::crc32c(&f[..28]));
    assert_eq!(f[32..37], a, "blocks in append order from offset 32");
    assert_eq!(f[37..40], b);
    let index_offset = 40;
    let footer = f.len() - 24;
    assert_eq!(footer, index_offset + 2 * 88);
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
    assert_eq!(u32_at(e + 44), 0, "no summary: kind 0");
    assert!(f[e + 48..e + 88].iter().all(|b| *b == 0), "and zero words");
    let e = index_offset + 88;
    assert_eq!((u64_at(e), u64_at(e + 8) as i64, u64_at(e + 28), u32_at(e + 36)), (9, -5, 32, 5));
    assert_eq!(u32_at(e + 44), 2, "an integer summary");
    let words: Vec<i64> = (0..5).map(|i| u64_at(e + 48 + 8 * i) as i64).collect();
    assert_eq!(words, vec![8, -3, 8, -3, 2], "sum, min, max, first, last");
    // A version-1 image of the same blocks without summaries: 44-byte entries.
    let plain: Vec<BlockSpec<'_>> = blocks.iter().map(|b| BlockSpec { summary: None, ..b.clone() }).collect();
    let v1 = encode_block_file_version(1, 1, &plain).unwrap();
    assert_eq!(u32::from_le_bytes(v1[8..12].try_into().unwrap()), 1);
    assert_eq!(v1.len(), 40 + 2 * 44 + 24);
    assert!(encode_block_file_version(1, 1, &blocks).is_err(), "version 1 has no summaries");
}
