//! Keeps `docs/format/events-ooo-queue.md` and the code in agreement: every
//! constant with its value, every field table row with the code's offset and
//! size (DESIGN.md section 8).

use strata_testkit::doc_table::markdown_table;

use super::flash_layout::*;
use super::pmem_layout::*;
use super::{DEFAULT_CAPACITY_BYTES, MAX_EVENT_BYTES, MIN_EVENT_BYTES};

const DOC: &str = include_str!("../../../../docs/format/events-ooo-queue.md");

#[test]
fn format_doc_lists_every_constant() {
    let value_of = |name: &str| strata_testkit::doc_table::table_value(DOC, "## Constants", name);
    assert_eq!(value_of("PMEM_MAGIC"), format!("{PMEM_MAGIC:#018x}"));
    assert_eq!(value_of("PMEM_VERSION"), PMEM_VERSION.to_string());
    assert_eq!(value_of("PMEM_HEADER_BYTES"), PMEM_HEADER_BYTES.to_string());
    assert_eq!(value_of("PMEM_RECORDS_OFFSET"), PMEM_RECORDS_OFFSET.to_string());
    assert_eq!(value_of("PMEM_BASE_ALIGN_BYTES"), PMEM_BASE_ALIGN_BYTES.to_string());
    assert_eq!(value_of("PMEM_RECORD_HEADER_BYTES"), PMEM_RECORD_HEADER_BYTES.to_string());
    assert_eq!(value_of("PMEM_SLOT_ALIGN_BYTES"), PMEM_SLOT_ALIGN_BYTES.to_string());
    assert_eq!(value_of("PMEM_RESET_TAG"), PMEM_RESET_TAG.to_string());
    assert_eq!(value_of("PMEM_GENERATION_MAX"), PMEM_GENERATION_MAX.to_string());
    assert_eq!(value_of("FLASH_PAGE_MAGIC"), format!("{FLASH_PAGE_MAGIC:#010x}"));
    assert_eq!(value_of("FLASH_VERSION"), FLASH_VERSION.to_string());
    assert_eq!(value_of("FLASH_PAGE_BYTES"), FLASH_PAGE_BYTES.to_string());
    assert_eq!(value_of("FLASH_PAGE_HEADER_BYTES"), FLASH_PAGE_HEADER_BYTES.to_string());
    assert_eq!(value_of("FLASH_FILE_PREFIX"), FLASH_FILE_PREFIX);
    assert_eq!(value_of("FLASH_FILE_SUFFIX"), FLASH_FILE_SUFFIX);
    assert_eq!(value_of("MIN_EVENT_BYTES"), MIN_EVENT_BYTES.to_string());
    assert_eq!(value_of("MAX_EVENT_BYTES"), MAX_EVENT_BYTES.to_string());
    assert_eq!(value_of("DEFAULT_CAPACITY_BYTES"), DEFAULT_CAPACITY_BYTES.to_string());
    assert_eq!(&PMEM_MAGIC.to_le_bytes(), b"STOOOQPM");
    assert!(DOC.contains("`STOOOQPM`") && DOC.contains("`OOQF`"), "the doc spells the magics in ASCII");
    assert_eq!(&FLASH_PAGE_MAGIC.to_le_bytes(), b"OOQF");
    assert_eq!(markdown_table(DOC, "## Constants").len() - 1, 18, "the doc lists exactly these constants");
}

/// Checks a field table in layout order, covering `total` bytes (the
/// shared check of `strata_testkit::doc_table`).
fn check_fields(heading: &str, fields: &[(&str, u64, u64)], total: u64) {
    let fields: Vec<(&str, usize, usize)> =
        fields.iter().map(|&(name, offset, size)| (name, offset as usize, size as usize)).collect();
    strata_testkit::doc_table::check_field_table(DOC, heading, &fields, Some(total as usize));
}

#[test]
fn format_doc_field_tables_match_the_code() {
    check_fields(
        "### PMem header",
        &[
            ("magic", HEADER_MAGIC_OFFSET, 8),
            ("version", HEADER_VERSION_OFFSET, 4),
            ("event_bytes", HEADER_EVENT_BYTES_OFFSET, 4),
            ("slot_bytes", HEADER_SLOT_BYTES_OFFSET, 4),
            ("reserved0", HEADER_RESERVED0_OFFSET, 4),
            ("slot_count", HEADER_SLOT_COUNT_OFFSET, 8),
            ("area_bytes", HEADER_AREA_BYTES_OFFSET, 8),
            ("header_crc", HEADER_CRC_OFFSET, 4),
            ("reserved1", HEADER_RESERVED1_OFFSET, 4),
            ("generation", HEADER_GENERATION_OFFSET, 8),
            ("reserved2", HEADER_RESERVED2_OFFSET, 8),
        ],
        PMEM_HEADER_BYTES,
    );
    assert!(DOC.contains(&format!("header bytes `[0, {HEADER_CRC_COVERED_BYTES})`")), "header CRC coverage");

    let record = markdown_table(DOC, "### PMem record");
    let fixed = [("crc", RECORD_CRC_OFFSET, 4), ("tag", RECORD_TAG_OFFSET, 4)];
    for (name, offset, size) in fixed {
        let row = record.iter().find(|r| r[2] == name).unwrap_or_else(|| panic!("record field {name}"));
        assert_eq!((row[0].clone(), row[1].clone()), (offset.to_string(), size.to_string()), "{name}");
    }
    let event = record.iter().find(|r| r[2] == "event").expect("record field event");
    assert_eq!(
        (event[0].as_str(), event[1].as_str()),
        (RECORD_EVENT_OFFSET.to_string().as_str(), "event_bytes")
    );
    assert_eq!(RECORD_EVENT_OFFSET, PMEM_RECORD_HEADER_BYTES);
    assert_eq!(record.len() - 1, 3, "the record has exactly crc, tag, event");
    assert!(DOC.contains("round_up(8 + event_bytes, 8)"));
    assert_eq!(slot_bytes_for(28), 40, "round_up(8 + 28, 8)");

    check_fields(
        "### Flash page",
        &[
            ("magic", PAGE_MAGIC_OFFSET, 4),
            ("page_crc", PAGE_CRC_OFFSET, 4),
            ("generation", PAGE_GENERATION_OFFSET, 8),
            ("page_index", PAGE_INDEX_OFFSET, 8),
            ("version", PAGE_VERSION_OFFSET, 2),
            ("event_count", PAGE_EVENT_COUNT_OFFSET, 2),
            ("event_bytes", PAGE_EVENT_BYTES_OFFSET, 4),
        ],
        FLASH_PAGE_HEADER_BYTES,
    );
    assert!(DOC.contains(&format!("page bytes `[{PAGE_CRC_COVERED_FROM}, {FLASH_PAGE_BYTES})`")), "page CRC");
    assert_eq!(file_name(0x1f), format!("{FLASH_FILE_PREFIX}000000000000001f{FLASH_FILE_SUFFIX}"));
}
