//! Keeps `docs/format/events-translation.md` and the code in agreement:
//! every constant appears with the code's value, every header field row has
//! the code's offset and size, and the fields tile their header.

use strata_testkit::doc_table::markdown_table;

use super::att_node::*;
use super::*;

const DOC: &str = include_str!("../../../../docs/format/events-translation.md");

fn value_of(heading: &str, name: &str) -> String {
    strata_testkit::doc_table::table_value(DOC, heading, name)
}

/// Checks a field table in layout order, covering `total` bytes if given
/// (the shared check of `strata_testkit::doc_table`; size `u64::MAX`:
/// variable).
fn check_fields(heading: &str, fields: &[(&str, u64, u64)], total: Option<u64>) {
    let size = |s: u64| if s == u64::MAX { usize::MAX } else { s as usize };
    let fields: Vec<(&str, usize, usize)> =
        fields.iter().map(|&(name, offset, s)| (name, offset as usize, size(s))).collect();
    strata_testkit::doc_table::check_field_table(DOC, heading, &fields, total.map(|t| t as usize));
}

#[test]
fn pmem_array_constants_and_header_agree_with_the_doc() {
    let h = "### PMem constants";
    assert_eq!(value_of(h, "PMEM_TRANSLATION_MAGIC"), format!("{PMEM_TRANSLATION_MAGIC:#018x}"));
    assert_eq!(&PMEM_TRANSLATION_MAGIC.to_le_bytes(), b"STEVTRPM");
    assert!(DOC.contains("`STEVTRPM`"));
    for (name, value) in [
        ("PMEM_TRANSLATION_VERSION", PMEM_TRANSLATION_VERSION as u64),
        ("PMEM_HEADER_BYTES", PMEM_HEADER_BYTES),
        ("PMEM_SLOT_BYTES", PMEM_SLOT_BYTES),
        ("PMEM_BATCH_SLOTS", PMEM_BATCH_SLOTS as u64),
        ("PMEM_HEADER_CRC_COVERED_BYTES", PMEM_HEADER_CRC_COVERED_BYTES),
    ] {
        assert_eq!(value_of(h, name), value.to_string(), "{name}");
    }
    check_fields(
        "### PMem header",
        &[
            ("magic", PMEM_HDR_OFFSET_MAGIC, 8),
            ("version", PMEM_HDR_OFFSET_VERSION, 4),
            ("group_slots", PMEM_HDR_OFFSET_GROUP_SLOTS, 4),
            ("leaf_capacity", PMEM_HDR_OFFSET_LEAF_CAPACITY, 8),
            ("index_capacity", PMEM_HDR_OFFSET_INDEX_CAPACITY, 8),
            ("header_crc", PMEM_HDR_OFFSET_HEADER_CRC, 4),
            (
                "reserved",
                PMEM_HDR_OFFSET_HEADER_CRC + 4,
                PMEM_HDR_OFFSET_REPLAY_FROM - PMEM_HDR_OFFSET_HEADER_CRC - 4,
            ),
            ("replay_from", PMEM_HDR_OFFSET_REPLAY_FROM, 8),
            (
                "reserved2",
                PMEM_HDR_OFFSET_REPLAY_FROM + 8,
                PMEM_HEADER_BYTES - PMEM_HDR_OFFSET_REPLAY_FROM - 8,
            ),
        ],
        Some(PMEM_HEADER_BYTES),
    );
    assert_eq!(PMEM_HDR_OFFSET_HEADER_CRC, PMEM_HEADER_CRC_COVERED_BYTES, "the CRC follows what it covers");
}

#[test]
fn att_constants_and_node_layout_agree_with_the_doc() {
    let h = "### ATT constants";
    for (name, value) in [
        ("ATT_NODE_HEADER_BYTES", ATT_NODE_HEADER_BYTES as u64),
        ("ATT_MAX_FANOUT", ATT_MAX_FANOUT as u64),
        ("ATT_MIN_FANOUT", ATT_MIN_FANOUT as u64),
        ("ATT_FLAG_COMMIT", ATT_FLAG_COMMIT as u64),
        ("ATT_TREE_LEAF", ATT_TREE_LEAF as u64),
        ("ATT_TREE_INDEX", ATT_TREE_INDEX as u64),
        ("ATT_MAX_LEVEL", ATT_MAX_LEVEL as u64),
    ] {
        assert_eq!(value_of(h, name), value.to_string(), "{name}");
    }
    let header = |at: usize| at as u64;
    check_fields(
        "### ATT node",
        &[
            ("tree", header(ATT_OFFSET_TREE), 1),
            ("level", header(ATT_OFFSET_LEVEL), 1),
            ("flags", header(ATT_OFFSET_FLAGS), 2),
            ("fanout", header(ATT_OFFSET_FANOUT), 4),
            ("node_index", header(ATT_OFFSET_NODE_INDEX), 8),
            ("commit_seq", header(ATT_OFFSET_COMMIT_SEQ), 8),
            ("replay_from", header(ATT_OFFSET_REPLAY_FROM), 8),
            ("leaf_root", header(ATT_OFFSET_LEAF_ROOT), 8),
            ("index_root", header(ATT_OFFSET_INDEX_ROOT), 8),
            ("leaf_next_id", header(ATT_OFFSET_LEAF_NEXT_ID), 8),
            ("index_next_id", header(ATT_OFFSET_INDEX_NEXT_ID), 8),
            ("entries", ATT_NODE_HEADER_BYTES as u64, u64::MAX),
        ],
        None,
    );
    let entries =
        markdown_table(DOC, "### ATT node").into_iter().find(|r| r[3] == "entries").expect("entries row");
    assert_eq!(entries[0], ATT_NODE_HEADER_BYTES.to_string());
    assert_eq!(entries[1], "8 × fanout");
}

#[test]
fn kind_names_are_the_benchmark_variant_names() {
    let names: Vec<&str> = [TranslationKind::Dram, TranslationKind::PmemArray, TranslationKind::Att]
        .iter()
        .map(|k| k.name())
        .collect();
    assert_eq!(names, ["dram", "pmem", "flash-att"]);
}
