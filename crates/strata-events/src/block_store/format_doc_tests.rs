//! `docs/format/events-blocks.md` agrees with the code: every constant of
//! the block format with its value, every block and record header field with
//! its offset and size.

use super::*;

/// Every constant of the format appears in `docs/format/events-blocks.md`
/// with the code's value, and every field row has the code's offset.
#[test]
fn format_doc_agrees_with_code() {
    let doc = include_str!("../../../../docs/format/events-blocks.md");
    let value_of = |name: &str| strata_testkit::doc_table::table_value(doc, "## Constants", name);
    assert_eq!(value_of("BLOCK_MAGIC"), format!("{BLOCK_MAGIC:#018x}"));
    assert!(doc.contains("`STREVBLK`"));
    for (name, value) in [
        ("BLOCK_BYTES", BLOCK_BYTES as u64),
        ("BLOCK_HEADER_BYTES", BLOCK_HEADER_BYTES as u64),
        ("RECORD_HEADER_BYTES", RECORD_HEADER_BYTES as u64),
        ("MAX_NODE_BYTES", MAX_NODE_BYTES as u64),
        ("MAX_RECORD_BYTES", MAX_RECORD_BYTES as u64),
        ("TRANSLATION_PAYLOAD_BYTES", TRANSLATION_PAYLOAD_BYTES as u64),
        ("BLOCK_FORMAT_VERSION", BLOCK_FORMAT_VERSION as u64),
        ("BLOCK_KIND_DATA", BLOCK_KIND_DATA as u64),
        ("BLOCK_KIND_TRANSLATION", BLOCK_KIND_TRANSLATION as u64),
        ("BLOCK_FLAG_SEALED", BLOCK_FLAG_SEALED as u64),
        ("RECORD_ENCODING_RAW", RECORD_ENCODING_RAW as u64),
        ("RECORD_ENCODING_LZ4", RECORD_ENCODING_LZ4 as u64),
        ("PHYS_ADDR_OFFSET_BITS", PHYS_ADDR_OFFSET_BITS as u64),
        ("MAX_BLOCK_NUMBER", MAX_BLOCK_NUMBER),
    ] {
        assert_eq!(value_of(name), value.to_string(), "{name}");
    }
    let check_fields = |heading: &str, fields: &[(&str, usize, usize)], total: usize| {
        strata_testkit::doc_table::check_field_table(doc, heading, fields, Some(total))
    };
    check_fields(
        "### Block header",
        &[
            ("magic", HDR_OFFSET_MAGIC, 8),
            ("version", HDR_OFFSET_VERSION, 2),
            ("kind", HDR_OFFSET_KIND, 1),
            ("flags", HDR_OFFSET_FLAGS, 1),
            ("record_count", HDR_OFFSET_RECORD_COUNT, 4),
            ("used_bytes", HDR_OFFSET_USED_BYTES, 4),
            ("block_crc", HDR_OFFSET_BLOCK_CRC, 4),
            ("block_number", HDR_OFFSET_BLOCK_NUMBER, 8),
            ("prev_translation", HDR_OFFSET_PREV_TRANSLATION, 8),
        ],
        BLOCK_HEADER_BYTES,
    );
    check_fields(
        "### Record header",
        &[
            ("node_id", REC_OFFSET_NODE_ID, 8),
            ("stored_len", REC_OFFSET_STORED_LEN, 4),
            ("node_len", REC_OFFSET_NODE_LEN, 4),
            ("encoding", REC_OFFSET_ENCODING, 1),
            ("reserved", REC_OFFSET_ENCODING + 1, 3),
            ("record_crc", REC_OFFSET_RECORD_CRC, 4),
        ],
        RECORD_HEADER_BYTES,
    );
}
