//! Keeps `docs/format/events-node.md` in agreement with the code: every
//! constant, every field table (offsets, sizes, order, no gaps), the type
//! codes, the paper's two streams and the capacities table.

use strata_testkit::doc_table::markdown_table;

use super::header::*;
use super::layout::{INDEX_ENTRY_FIXED_BYTES, INDEX_ENTRY_OFFSET_AGGREGATES, INDEX_ENTRY_OFFSET_CHILD};
use super::*;
use crate::aggregate::{AggregateSpec, Aggregates, AGG_FIXED_BYTES, AGG_VALUE_BYTES};
use crate::event::{self, Event, Value};
use crate::ids::{NodeId, NODE_ID_INDEX_BIT};
use crate::schema::*;

const DOC: &str = include_str!("../../../../docs/format/events-node.md");

fn table(heading: &str) -> Vec<Vec<String>> {
    markdown_table(DOC, heading)
}

/// Checks a field table (column layout, then the shared check).
fn check_fields(heading: &str, fields: &[(&str, usize, usize)], total: Option<usize>) {
    assert_eq!(table(heading)[0], ["offset", "size", "type", "name", "meaning"], "{heading}: column layout");
    strata_testkit::doc_table::check_field_table(DOC, heading, fields, total);
}

#[test]
fn constants_table_matches_the_code() {
    let expected: Vec<(&str, String)> = vec![
        ("NODE_BYTES", NODE_BYTES.to_string()),
        ("NODE_HEADER_BYTES", NODE_HEADER_BYTES.to_string()),
        ("NODE_MAGIC", format!("{NODE_MAGIC:#010x}")),
        ("NODE_FORMAT_VERSION", NODE_FORMAT_VERSION.to_string()),
        ("NODE_KIND_LEAF", NODE_KIND_LEAF.to_string()),
        ("NODE_KIND_INDEX", NODE_KIND_INDEX.to_string()),
        ("FLAG_SEALED", format!("{FLAG_SEALED:#04x}")),
        ("FLAG_AGGREGATES_INLINE", format!("{FLAG_AGGREGATES_INLINE:#04x}")),
        ("NO_SIBLING", format!("{NO_SIBLING:#018x}")),
        ("NODE_ID_INDEX_BIT", format!("{NODE_ID_INDEX_BIT:#018x}")),
        ("INDEX_ENTRY_FIXED_BYTES", INDEX_ENTRY_FIXED_BYTES.to_string()),
        ("DEFAULT_SPARE_PERMILLE", DEFAULT_SPARE_PERMILLE.to_string()),
        ("MAX_SPARE_PERMILLE", MAX_SPARE_PERMILLE.to_string()),
        ("TIMESTAMP_BYTES", TIMESTAMP_BYTES.to_string()),
        ("MAX_ATTRS", MAX_ATTRS.to_string()),
        ("MAX_ATTR_NAME_BYTES", MAX_ATTR_NAME_BYTES.to_string()),
        ("MAX_FIXED_STR_BYTES", MAX_FIXED_STR_BYTES.to_string()),
        ("MAX_EVENT_BYTES", MAX_EVENT_BYTES.to_string()),
        ("AGG_FIXED_BYTES", AGG_FIXED_BYTES.to_string()),
        ("AGG_VALUE_BYTES", AGG_VALUE_BYTES.to_string()),
        ("SCHEMA_MAGIC", format!("{SCHEMA_MAGIC:#010x}")),
        ("SCHEMA_VERSION", SCHEMA_VERSION.to_string()),
        ("SCHEMA_HEADER_BYTES", SCHEMA_HEADER_BYTES.to_string()),
        ("SCHEMA_ATTR_HEADER_BYTES", SCHEMA_ATTR_HEADER_BYTES.to_string()),
        ("SCHEMA_CRC_BYTES", SCHEMA_CRC_BYTES.to_string()),
    ];
    let rows = table("## Constants");
    assert_eq!(rows[0], ["constant", "value", "meaning"]);
    let documented: Vec<(String, String)> = rows[1..].iter().map(|r| (r[0].clone(), r[1].clone())).collect();
    let coded: Vec<(String, String)> = expected.iter().map(|(n, v)| (n.to_string(), v.clone())).collect();
    assert_eq!(documented, coded, "the Constants table and the code disagree");
    assert_eq!(&NODE_MAGIC.to_le_bytes(), b"STEN");
    assert_eq!(&SCHEMA_MAGIC.to_le_bytes(), b"STSC");
    assert!(DOC.contains("`STEN`") && DOC.contains("`STSC`"), "the doc spells the magics in ASCII");
    assert!(DOC.contains(&format!("version {NODE_FORMAT_VERSION}")), "title names the version");
}

#[test]
fn header_table_matches_the_code() {
    check_fields(
        "## Node header",
        &[
            ("magic", OFFSET_MAGIC, 4),
            ("version", OFFSET_VERSION, 1),
            ("kind", OFFSET_KIND, 1),
            ("flags", OFFSET_FLAGS, 1),
            ("reserved_byte", OFFSET_RESERVED_BYTE, 1),
            ("level", OFFSET_LEVEL, 2),
            ("entry_bytes", OFFSET_ENTRY_BYTES, 2),
            ("count", OFFSET_COUNT, 4),
            ("id", OFFSET_ID, 8),
            ("prev", OFFSET_PREV, 8),
            ("next", OFFSET_NEXT, 8),
            ("ts_min", OFFSET_TS_MIN, 8),
            ("ts_max", OFFSET_TS_MAX, 8),
            ("crc", OFFSET_CRC, 4),
            ("reserved_word", OFFSET_RESERVED_WORD, 4),
        ],
        Some(NODE_HEADER_BYTES),
    );
    // The offsets are where the code really writes: build a leaf and read.
    let layout = LeafLayout::new(&StreamSchema::stock(), DEFAULT_SPARE_PERMILLE).unwrap();
    let mut leaf = LeafNode::init(new_node_buffer(), &layout, NodeId::leaf(9)).unwrap();
    let e = Event::new(77, vec![Value::I32(1), Value::I32(2), Value::F64(3.0), Value::I32(4)]);
    leaf.append_event(&e).unwrap();
    leaf.set_next(Some(NodeId::leaf(10))).unwrap();
    leaf.seal();
    let b = leaf.as_bytes();
    assert_eq!(u32_at(b, OFFSET_MAGIC), NODE_MAGIC);
    assert_eq!(b[OFFSET_VERSION], NODE_FORMAT_VERSION);
    assert_eq!(b[OFFSET_KIND], NODE_KIND_LEAF);
    assert_eq!(b[OFFSET_FLAGS], FLAG_SEALED);
    assert_eq!(u16_at(b, OFFSET_LEVEL), 0);
    assert_eq!(u16_at(b, OFFSET_ENTRY_BYTES), 28);
    assert_eq!(u32_at(b, OFFSET_COUNT), 1);
    assert_eq!(u64_at(b, OFFSET_ID), 9);
    assert_eq!(u64_at(b, OFFSET_PREV), NO_SIBLING);
    assert_eq!(u64_at(b, OFFSET_NEXT), 10);
    assert_eq!((i64_at(b, OFFSET_TS_MIN), i64_at(b, OFFSET_TS_MAX)), (77, 77));
    let mut covered = b[..NODE_HEADER_BYTES + 28].to_vec();
    covered[OFFSET_CRC..OFFSET_CRC + 4].fill(0);
    assert_eq!(u32_at(b, OFFSET_CRC), crc32c::crc32c(&covered), "CRC as documented");
    assert_eq!(
        &b[NODE_HEADER_BYTES..NODE_HEADER_BYTES + 28],
        event::encode(&StreamSchema::stock(), &e).unwrap()
    );
}

#[test]
fn layout_entry_and_record_tables_match_the_code() {
    let rows = table("## Node layout");
    assert_eq!(rows[1][..4], ["0", NODE_HEADER_BYTES.to_string().as_str(), "struct", "header"]);
    assert_eq!(rows[2][0], NODE_HEADER_BYTES.to_string());
    check_fields("### Event layout", &[("ts", 0, TIMESTAMP_BYTES), ("attributes", 8, usize::MAX)], None);
    check_fields(
        "## Index entry",
        &[
            ("key", 0, 8),
            ("child", INDEX_ENTRY_OFFSET_CHILD, 8),
            ("aggregates", INDEX_ENTRY_OFFSET_AGGREGATES, usize::MAX),
        ],
        None,
    );
    assert_eq!(INDEX_ENTRY_OFFSET_AGGREGATES, INDEX_ENTRY_FIXED_BYTES);
    check_fields(
        "## Aggregate record",
        &[("count", 0, 8), ("ts_min", 8, 8), ("ts_max", 16, 8), ("values", AGG_FIXED_BYTES, usize::MAX)],
        None,
    );
    let spec = AggregateSpec::default_for(&StreamSchema::sine());
    assert_eq!(spec.record_bytes(), AGG_FIXED_BYTES + 18 * AGG_VALUE_BYTES);
    let empty = Aggregates::empty(&spec).encode(&spec).unwrap();
    assert_eq!(&empty[8..16], &i64::MAX.to_le_bytes());
    assert_eq!(&empty[24..32], &f64::INFINITY.to_le_bytes(), "empty min is +inf");
}

#[test]
fn type_codes_and_streams_match_the_code() {
    let rows = table("Attribute types");
    let types =
        [AttrType::I64, AttrType::F64, AttrType::I32, AttrType::F32, AttrType::Bool, AttrType::FixedStr(7)];
    assert_eq!(rows.len() - 1, types.len());
    for (row, ty) in rows[1..].iter().zip(types) {
        let name = format!("{ty:?}");
        assert!(name.starts_with(&row[0]), "{name} vs {}", row[0]);
        assert_eq!(row[1], ty.code().to_string(), "code of {name}");
        let size = if let AttrType::FixedStr(_) = ty { "n".to_string() } else { ty.size_bytes().to_string() };
        assert_eq!(row[2], size, "size of {name}");
    }
    let rows = table("The two streams");
    let stock = StreamSchema::stock();
    let sine = StreamSchema::sine();
    assert_eq!(rows[1][0], "Stock");
    assert_eq!(rows[1][2], stock.event_bytes().to_string());
    for a in stock.attrs() {
        assert!(rows[1][1].contains(&format!("{} {:?}", a.name, a.ty)), "Stock attribute {}", a.name);
    }
    assert_eq!(rows[2][0], "Sine");
    assert_eq!(rows[2][2], sine.event_bytes().to_string());
}

#[test]
fn schema_tables_match_the_encoding() {
    check_fields(
        "### Schema header",
        &[
            ("magic", SCHEMA_OFFSET_MAGIC, 4),
            ("version", SCHEMA_OFFSET_VERSION, 1),
            ("attr_count", SCHEMA_OFFSET_ATTR_COUNT, 1),
            ("total_bytes", SCHEMA_OFFSET_TOTAL_BYTES, 2),
        ],
        Some(SCHEMA_HEADER_BYTES),
    );
    check_fields(
        "### Schema attribute",
        &[
            ("type_code", 0, 1),
            ("name_len", 1, 1),
            ("str_len", 2, 2),
            ("name", SCHEMA_ATTR_HEADER_BYTES, usize::MAX),
        ],
        None,
    );
    let schema =
        StreamSchema::new(vec![Attr::new("ab", AttrType::FixedStr(5)), Attr::new("c", AttrType::F32)])
            .unwrap();
    let bytes = schema.encode();
    assert_eq!(bytes.len(), 8 + (4 + 2) + (4 + 1) + 4);
    assert_eq!(&bytes[..8], &[b'S', b'T', b'S', b'C', SCHEMA_VERSION, 2, bytes.len() as u8, 0]);
    assert_eq!(&bytes[8..14], &[TYPE_CODE_FIXED_STR, 2, 5, 0, b'a', b'b']);
    assert_eq!(&bytes[14..19], &[TYPE_CODE_F32, 1, 0, 0, b'c']);
    assert_eq!(&bytes[19..], &crc32c::crc32c(&bytes[..19]).to_le_bytes());
}

#[test]
fn capacities_table_matches_the_layouts() {
    let stock = StreamSchema::stock();
    let sine = StreamSchema::sine();
    let spare = DEFAULT_SPARE_PERMILLE;
    let leaf = |s: &StreamSchema| {
        let l = LeafLayout::new(s, spare).unwrap();
        (l.event_bytes(), l.capacity(), l.fill_limit())
    };
    let index = |s: &StreamSchema, inline: bool| {
        let l = IndexLayout::new(&AggregateSpec::default_for(s), inline, spare).unwrap();
        (l.entry_bytes(), l.capacity(), l.fill_limit())
    };
    let expected = [
        ("Stock leaf", leaf(&stock)),
        ("Sine leaf", leaf(&sine)),
        ("index, no inline aggregates", index(&sine, false)),
        ("Stock index, inline aggregates", index(&stock, true)),
        ("Sine index, inline aggregates", index(&sine, true)),
    ];
    let rows = table("Capacities at the default spare room");
    assert_eq!(rows[0], ["node", "entry bytes", "capacity", "fill limit"]);
    assert_eq!(rows.len() - 1, expected.len());
    for (row, (name, (entry, capacity, fill))) in rows[1..].iter().zip(expected) {
        assert_eq!(row[0], name);
        assert_eq!(row[1..], [entry.to_string(), capacity.to_string(), fill.to_string()], "{name}");
    }
    assert_eq!(index(&stock, false), index(&sine, false), "without aggregates the schema does not matter");
    assert_eq!(NODE_BYTES - NODE_HEADER_BYTES, 8128, "the doc's 8128");
}
