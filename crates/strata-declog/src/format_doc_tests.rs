//! Keeps `docs/format/declog-stream.md` and the code in agreement: every
//! format constant appears in the constants table with its value, the field
//! tables give the offsets and sizes the code uses and tile their structure,
//! and bytes the code writes sit where the document says.

use strata_media::TxnId;

use crate::batch::*;
use crate::entry::*;
use crate::layout::*;

const DOC: &str = include_str!("../../../docs/format/declog-stream.md");

fn table(heading: &str) -> Vec<Vec<String>> {
    strata_testkit::doc_table::markdown_table(DOC, heading)
}

fn value_of(name: &str) -> String {
    table("## Constants")
        .into_iter()
        .find(|row| row[0] == name)
        .unwrap_or_else(|| panic!("constant {name} missing from the doc"))[1]
        .clone()
}

#[test]
fn every_constant_appears_with_its_value() {
    let dec: &[(&str, u64)] = &[
        ("DECLOG_FORMAT_VERSION", DECLOG_FORMAT_VERSION as u64),
        ("SUPERBLOCK_BYTES", SUPERBLOCK_BYTES),
        ("SB_CRC_COVERED_BYTES", SB_CRC_COVERED_BYTES),
        ("SB_FLAG_COMPRESSION", SB_FLAG_COMPRESSION as u64),
        ("SB_FLAG_STRICT_ORDERING", SB_FLAG_STRICT_ORDERING as u64),
        ("EPOCH_WORD_OFFSET", EPOCH_WORD_OFFSET),
        ("HEAD_SELECT_WORD_OFFSET", HEAD_SELECT_WORD_OFFSET),
        ("HEAD_ARRAY_0_OFFSET", HEAD_ARRAY_0_OFFSET),
        ("HEAD_ARRAY_1_OFFSET", HEAD_ARRAY_1_OFFSET),
        ("MAX_THREADS", MAX_THREADS as u64),
        ("CUT_RECORD_OFFSET", CUT_RECORD_OFFSET),
        ("CUT_RECORD_BYTES", CUT_RECORD_BYTES),
        ("STREAMS_OFFSET", STREAMS_OFFSET),
        ("MIN_STREAM_BYTES", MIN_STREAM_BYTES),
        ("STREAM_UNIT_BYTES", STREAM_UNIT_BYTES),
        ("WORD_VALUE_BITS", WORD_VALUE_BITS as u64),
        ("WORD_CHECK_SHIFT", WORD_CHECK_SHIFT as u64),
        ("HEAD_UNIT_BYTES", HEAD_UNIT_BYTES),
        ("BATCH_HEADER_BYTES", BATCH_HEADER_BYTES),
        ("BATCH_KIND_ENTRIES", BATCH_KIND_ENTRIES as u64),
        ("BATCH_KIND_WRAP", BATCH_KIND_WRAP as u64),
        ("BATCH_SEAL_TORN", BATCH_SEAL_TORN as u64),
        ("ENTRY_HEADER_BYTES", ENTRY_HEADER_BYTES),
        ("ENTRY_TAIL_BYTES", ENTRY_TAIL_BYTES),
        ("ENTRY_ALIGN_BYTES", ENTRY_ALIGN_BYTES),
        ("MIN_ENTRY_BYTES", MIN_ENTRY_BYTES),
        ("ENTRY_FLAG_COMPRESSED", ENTRY_FLAG_COMPRESSED as u64),
        ("ENTRY_FLAG_DEFERRED_TAIL", ENTRY_FLAG_DEFERRED_TAIL as u64),
        ("ENTRY_FLAG_RAW_POINT", ENTRY_FLAG_RAW_POINT as u64),
        ("ENTRY_FLAG_PER_KEY", ENTRY_FLAG_PER_KEY as u64),
        ("DECLOG_OLDEST_READABLE_VERSION", DECLOG_OLDEST_READABLE_VERSION as u64),
    ];
    for (name, v) in dec {
        assert_eq!(value_of(name), v.to_string(), "constant {name}");
    }
    assert_eq!(value_of("DECLOG_MAGIC"), format!("{DECLOG_MAGIC:#018X}").replace("0X", "0x"));
    assert_eq!(value_of("BATCH_MAGIC"), format!("{BATCH_MAGIC:#010X}").replace("0X", "0x"));
    assert_eq!(value_of("TAIL_COMMIT_FLAG"), format!("{TAIL_COMMIT_FLAG:#018x}"));
    assert_eq!(&DECLOG_MAGIC.to_le_bytes(), b"STDECLOG");
    assert_eq!(&BATCH_MAGIC.to_le_bytes(), b"DLGB");
    assert!(DOC.contains("\"STDECLOG\"") && DOC.contains("\"DLGB\""), "the doc spells the magics in ASCII");
    assert_eq!(table("## Constants").len() - 1, dec.len() + 3, "the doc lists exactly these constants");
}

/// Checks a field table: each named field at its offset with its size, rows
/// tiling `0..total` in order.
fn check_fields(heading: &str, fields: &[(&str, u64, u64)], total: u64) {
    let rows = table(heading);
    assert_eq!(
        rows[0][..4],
        ["offset", "size", "type", "name"].map(String::from),
        "{heading}: column layout"
    );
    let mut at = 0;
    for &(name, offset, size) in fields {
        let row = rows
            .iter()
            .find(|r| r.get(3).map(String::as_str) == Some(name))
            .unwrap_or_else(|| panic!("{heading}: field {name} missing from the doc"));
        assert_eq!(row[0], offset.to_string(), "{heading}: offset of {name}");
        assert_eq!(row[1], size.to_string(), "{heading}: size of {name}");
        assert_eq!(offset, at, "{heading}: {name} leaves a gap or overlaps");
        at += size;
    }
    assert_eq!(at, total, "{heading}: fields cover the structure");
}

#[test]
fn field_tables_match_the_code() {
    check_fields(
        "## Superblock",
        &[
            ("magic", SB_OFFSET_MAGIC, 8),
            ("version", SB_OFFSET_VERSION, 4),
            ("threads", SB_OFFSET_THREADS, 4),
            ("queues_per_thread", SB_OFFSET_QUEUES_PER_THREAD, 4),
            ("queue_len", SB_OFFSET_QUEUE_LEN, 4),
            ("align", SB_OFFSET_ALIGN, 4),
            ("flags", SB_OFFSET_FLAGS, 4),
            ("stream_capacity", SB_OFFSET_STREAM_CAPACITY, 8),
            ("streams_offset", SB_OFFSET_STREAMS_OFFSET, 8),
            ("key_slots", SB_OFFSET_KEY_SLOTS, 4),
            ("crc", SB_OFFSET_CRC, 4),
            ("reserved_2", SB_OFFSET_CRC + 4, SUPERBLOCK_BYTES - SB_OFFSET_CRC - 4),
        ],
        SUPERBLOCK_BYTES,
    );
    assert_eq!(SB_CRC_COVERED_BYTES, SB_OFFSET_CRC, "the CRC covers everything before it");
    check_fields(
        "## Area layout",
        &[
            ("superblock", 0, SUPERBLOCK_BYTES),
            ("epoch_word", EPOCH_WORD_OFFSET, 8),
            ("unused_1", EPOCH_WORD_OFFSET + 8, HEAD_SELECT_WORD_OFFSET - EPOCH_WORD_OFFSET - 8),
            ("head_select_word", HEAD_SELECT_WORD_OFFSET, 8),
            ("unused_2", HEAD_SELECT_WORD_OFFSET + 8, HEAD_ARRAY_0_OFFSET - HEAD_SELECT_WORD_OFFSET - 8),
            ("head_array_0", HEAD_ARRAY_0_OFFSET, 8 * MAX_THREADS as u64),
            ("head_array_1", HEAD_ARRAY_1_OFFSET, 8 * MAX_THREADS as u64),
            ("cut_record", CUT_RECORD_OFFSET, CUT_RECORD_BYTES),
        ],
        STREAMS_OFFSET,
    );
    let streams_row = table("## Area layout").into_iter().find(|r| r[3] == "streams").expect("streams row");
    assert_eq!(streams_row[0], STREAMS_OFFSET.to_string());
    let tables_row =
        table("## Area layout").into_iter().find(|r| r[3] == "key_tables").expect("key tables row");
    assert_eq!(tables_row[0], format!("{STREAMS_OFFSET} + m x capacity"));
    let cut = table("## Cut record");
    let field = |name: &str| cut.iter().find(|r| r[3] == name).unwrap_or_else(|| panic!("cut record {name}"));
    for (name, offset, size) in [
        ("seq", CUT_OFFSET_SEQ, "8"),
        ("stream_count", CUT_OFFSET_STREAM_COUNT, "4"),
        ("crc", CUT_OFFSET_CRC, "4"),
        ("ends", CUT_OFFSET_ENDS, "8 x m"),
    ] {
        assert_eq!(
            (field(name)[0].clone(), field(name)[1].as_str()),
            (offset.to_string(), size),
            "cut {name}"
        );
    }
    assert_eq!(cut.len() - 1, 4, "cut record: exactly these fields");
    assert!(CUT_OFFSET_ENDS + 8 * MAX_THREADS as u64 <= CUT_RECORD_BYTES);
    check_fields(
        "## Batch header",
        &[
            ("magic", BATCH_OFFSET_MAGIC as u64, 4),
            ("kind", BATCH_OFFSET_KIND as u64, 2),
            ("seal", BATCH_OFFSET_SEAL as u64, 2),
            ("stream_pos", BATCH_OFFSET_STREAM_POS as u64, 8),
            ("epoch", BATCH_OFFSET_EPOCH as u64, 4),
            ("batch_bytes", BATCH_OFFSET_BATCH_BYTES as u64, 4),
            ("entry_count", BATCH_OFFSET_ENTRY_COUNT as u64, 4),
            ("crc", BATCH_OFFSET_CRC as u64, 4),
        ],
        BATCH_HEADER_BYTES,
    );
    let entry_rows = table("## Entry");
    assert_eq!(entry_rows.len() - 1, 10, "entry: header fields, payload, tail");
    check_fields(
        "## Entry",
        &[
            ("txn_id", ENTRY_OFFSET_TXN_ID as u64, 8),
            ("key_hash", ENTRY_OFFSET_KEY_HASH as u64, 8),
            ("lsn", ENTRY_OFFSET_LSN as u64, 4),
            ("payload_len", ENTRY_OFFSET_PAYLOAD_LEN as u64, 4),
            ("entry_count", ENTRY_OFFSET_ENTRY_COUNT as u64, 4),
            ("op_index", ENTRY_OFFSET_OP_INDEX as u64, 4),
            ("flags", ENTRY_OFFSET_FLAGS as u64, 4),
            ("crc", ENTRY_OFFSET_CRC as u64, 4),
        ],
        ENTRY_HEADER_BYTES,
    );
    let payload = entry_rows.iter().find(|r| r[3] == "payload").expect("payload row");
    assert_eq!((payload[0].as_str(), payload[1].as_str()), ("40", "payload_len"));
    let tail = entry_rows.iter().find(|r| r[3] == "tail").expect("tail row");
    assert_eq!((tail[0].as_str(), tail[1].as_str()), ("40 + padded", "8"));
}

#[test]
fn bytes_written_sit_where_the_doc_says() {
    let meta = EntryMeta {
        txn: TxnId(0x1122_3344_5566_7788),
        key_hash: 0xA1A2_A3A4_A5A6_A7A8,
        lsn: 9,
        entry_count: 3,
        op_index: 2,
        compressed: true,
        raw: false,
        form: crate::entry::PayloadForm::Single,
    };
    let b = build_batch(&[BatchEntry { meta, payload: b"hello" }], 4096, 5, 256, false);
    let u32_at = |at: usize| u32::from_le_bytes(b.bytes[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(b.bytes[at..at + 8].try_into().unwrap());
    assert_eq!(u32_at(0), BATCH_MAGIC);
    assert_eq!(u64_at(8), 4096);
    assert_eq!(u32_at(16), 5);
    assert_eq!(u32_at(20), 256);
    assert_eq!(u32_at(24), 1);
    let mut covered = b.bytes[..6].to_vec();
    covered.extend_from_slice(&b.bytes[8..28]);
    assert_eq!(u32_at(28), crc32c::crc32c(&covered), "header CRC covers 0..6 and 8..28");
    let e = 32;
    assert_eq!(u64_at(e), meta.txn.0);
    assert_eq!(u64_at(e + 8), meta.key_hash);
    assert_eq!(
        (u32_at(e + 16), u32_at(e + 20), u32_at(e + 24), u32_at(e + 28), u32_at(e + 32)),
        (9, 5, 3, 2, 1)
    );
    assert_eq!(&b.bytes[e + 40..e + 45], b"hello");
    let mut seed = 4128u64.to_le_bytes().to_vec();
    seed.extend_from_slice(&5u32.to_le_bytes());
    seed.extend_from_slice(&b.bytes[e..e + 36]);
    seed.extend_from_slice(b"hello");
    let crc = crc32c::crc32c(&seed);
    assert_eq!(u32_at(e + 36), crc, "entry CRC: position, epoch, header 0..36, payload");
    let (tail_at, word) = b.update_tail.unwrap();
    assert_eq!(tail_at as usize, e + 48);
    assert_eq!(word, TAIL_COMMIT_FLAG | (((crc & 0x7FFF_FFFF) as u64) << 32) | 9);
    let w = encode_checked_word(1234);
    assert_eq!(w & ((1 << WORD_VALUE_BITS) - 1), 1234);
    assert_eq!(w >> WORD_CHECK_SHIFT, (crc32c::crc32c(&1234u64.to_le_bytes()) & 0xFFFF) as u64);
}

#[test]
fn superblock_and_cut_record_bytes_sit_where_the_doc_says() {
    use crate::config::DeclogConfig;
    use strata_pmem::{Region, RegionOffset};
    let cfg = DeclogConfig { strict_ordering: true, key_slots: 3, ..Default::default() };
    let bytes = Layout::footprint_bytes_for(&cfg, 4096);
    let region = Region::sim(bytes);
    let (layout, _) = format_area(&region, RegionOffset(0), bytes, &cfg).unwrap();
    let sb = region.read_vec(RegionOffset(0), SUPERBLOCK_BYTES as usize);
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!(&sb[..8], b"STDECLOG");
    assert_eq!(u32_at(&sb, 8), 3, "version");
    assert_eq!(u32_at(&sb, 28), SB_FLAG_COMPRESSION | SB_FLAG_STRICT_ORDERING, "flags");
    assert_eq!(u64::from_le_bytes(sb[40..48].try_into().unwrap()), 2048, "streams_offset");
    assert_eq!(u32_at(&sb, 48), 3, "key_slots");
    assert_eq!(u32_at(&sb, 52), crc32c::crc32c(&sb[..52]), "crc of 0..52");
    assert_eq!(&region.read_vec(layout.key_table(0), 8), b"DLKEYTAB", "key tables after the streams");
    persist_cut_record(&region, &layout, &CutRecord { seq: 7, ends: vec![256, 512] });
    let c = region.read_vec(RegionOffset(1280), 32);
    assert_eq!(u64::from_le_bytes(c[..8].try_into().unwrap()), 7);
    assert_eq!(u32_at(&c, 8), 2);
    assert_eq!(u64::from_le_bytes(c[16..24].try_into().unwrap()), 256);
    assert_eq!(u64::from_le_bytes(c[24..32].try_into().unwrap()), 512);
    let mut covered = c[..12].to_vec();
    covered.extend_from_slice(&c[16..32]);
    assert_eq!(u32_at(&c, 12), crc32c::crc32c(&covered), "cut CRC: bytes 0..12 then the ends");
}
