//! Keeps `docs/format/events-catalog.md` in agreement with the code: every
//! constant, and the header table's offsets, sizes and order.

use strata_testkit::doc_table::{markdown_table, table_value};

use super::catalog::*;
use super::{CREATING_PREFIX, DROPPED_PREFIX};

const DOC: &str = include_str!("../../../../docs/format/events-catalog.md");

#[test]
fn constants_match_the_code() {
    let expected: Vec<(&str, String)> = vec![
        ("CATALOG_MAGIC", format!("{CATALOG_MAGIC:#010x}")),
        ("CATALOG_VERSION", CATALOG_VERSION.to_string()),
        ("CATALOG_HEADER_BYTES", CATALOG_HEADER_BYTES.to_string()),
        ("CATALOG_CRC_BYTES", CATALOG_CRC_BYTES.to_string()),
        ("MAX_NAME_BYTES", MAX_NAME_BYTES.to_string()),
        ("PLACEMENT_PMEM", PLACEMENT_PMEM.to_string()),
        ("PLACEMENT_SSD", PLACEMENT_SSD.to_string()),
        ("CATALOG_FILE", CATALOG_FILE.to_string()),
        ("CREATING_PREFIX", CREATING_PREFIX.to_string()),
        ("DROPPED_PREFIX", DROPPED_PREFIX.to_string()),
    ];
    for (name, value) in &expected {
        assert_eq!(&table_value(DOC, "## Constants", name), value, "constant {name}");
    }
    assert_eq!(markdown_table(DOC, "## Constants").len() - 1, expected.len(), "no undocumented extras");
    assert_eq!(&CATALOG_MAGIC.to_le_bytes(), b"STCA");
    assert!(DOC.contains(&format!("version {CATALOG_VERSION}")));
}

#[test]
fn header_table_matches_the_code() {
    let fields: [(&str, usize, usize); 14] = [
        ("magic", OFFSET_MAGIC, 4),
        ("version", OFFSET_VERSION, 2),
        ("placement", OFFSET_PLACEMENT, 1),
        ("reserved", OFFSET_RESERVED, 1),
        ("total_bytes", OFFSET_TOTAL_BYTES, 4),
        ("flank_batch_events", OFFSET_FLANK_BATCH_EVENTS, 4),
        ("max_leaf_nodes", OFFSET_MAX_LEAF_NODES, 8),
        ("max_index_nodes", OFFSET_MAX_INDEX_NODES, 8),
        ("queue_capacity_bytes", OFFSET_QUEUE_CAPACITY_BYTES, 8),
        ("region_bytes", OFFSET_REGION_BYTES, 8),
        ("created_unix_ns", OFFSET_CREATED_UNIX_NS, 8),
        ("db_name_bytes", OFFSET_DB_NAME_BYTES, 2),
        ("stream_name_bytes", OFFSET_STREAM_NAME_BYTES, 2),
        ("schema_bytes", OFFSET_SCHEMA_BYTES, 4),
    ];
    let rows = markdown_table(DOC, "## Header");
    assert_eq!(rows[0], ["offset", "size", "type", "name", "meaning"]);
    assert_eq!(rows.len() - 1, fields.len());
    let mut next = 0;
    for (row, (name, offset, size)) in rows[1..].iter().zip(fields) {
        assert_eq!(
            (row[3].as_str(), row[0].clone(), row[1].clone()),
            (name, offset.to_string(), size.to_string())
        );
        assert_eq!(offset, next, "{name} leaves no gap");
        next = offset + size;
    }
    assert_eq!(next, CATALOG_HEADER_BYTES, "the header fields cover the header");
    let body = markdown_table(DOC, "## Body");
    assert_eq!(body[1][0], CATALOG_HEADER_BYTES.to_string(), "the names start after the header");
    assert_eq!(body.last().unwrap()[1], CATALOG_CRC_BYTES.to_string());
}
