//! Keeps `docs/format/events-pmem-arrays.md` and the code in agreement: every
//! constant appears in the constants table with its value, the header table
//! gives the offsets and sizes the code uses and tiles the header, the fixed
//! rows of the area tables match, the examples are what `format` produces,
//! and the bytes the code writes sit where the document says.

use std::sync::Arc;

use strata_pmem::{Region, RegionOffset};

use super::*;

const DOC: &str = include_str!("../../../../docs/format/events-pmem-arrays.md");

fn table(heading: &str) -> Vec<Vec<String>> {
    strata_testkit::doc_table::markdown_table(DOC, heading)
}

fn value_of(name: &str) -> String {
    strata_testkit::doc_table::table_value(DOC, "## Constants", name)
}

#[test]
fn every_constant_appears_with_its_value() {
    let dec: &[(&str, u64)] = &[
        ("PMEM_ARRAYS_VERSION", PMEM_ARRAYS_VERSION.into()),
        ("HEADER_BYTES", HEADER_BYTES),
        ("HEADER_CRC_COVERED_BYTES", HEADER_CRC_COVERED_BYTES),
        ("LAYOUT_DENSE", LAYOUT_DENSE.into()),
        ("LAYOUT_ALIGNED", LAYOUT_ALIGNED.into()),
        ("AREA_ALIGN_BYTES", AREA_ALIGN_BYTES),
        ("SLOTS_ALIGN_BYTES", SLOTS_ALIGN_BYTES),
        ("MAX_RECORD_BYTES", MAX_RECORD_BYTES),
        ("JOURNAL_TARGET_OFFSET", JOURNAL_TARGET_OFFSET),
        ("JOURNAL_SEAL_OFFSET", JOURNAL_SEAL_OFFSET),
        ("JOURNAL_RECORD_OFFSET", JOURNAL_RECORD_OFFSET),
        ("SEAL_WORD_BYTES", SEAL_WORD_BYTES),
        ("NODE_COUNT_OFFSET", NODE_COUNT_OFFSET),
        ("NODE_ALIGN_BYTES", NODE_ALIGN_BYTES),
        ("MAX_NODE_BYTES", MAX_NODE_BYTES),
    ];
    for (name, v) in dec {
        assert_eq!(value_of(name), v.to_string(), "constant {name}");
    }
    let hex = |v: u64, width: usize| format!("{v:#0width$X}").replace("0X", "0x");
    assert_eq!(value_of("AGGREGATE_ARRAY_MAGIC"), hex(AGGREGATE_ARRAY_MAGIC, 18));
    assert_eq!(value_of("INDEX_NODE_ARRAY_MAGIC"), hex(INDEX_NODE_ARRAY_MAGIC, 18));
    assert_eq!(value_of("SEAL_TAG"), hex(SEAL_TAG.into(), 10));
    assert_eq!(value_of("JOURNAL_SEAL_TAG"), hex(JOURNAL_SEAL_TAG.into(), 10));
    assert_eq!(&AGGREGATE_ARRAY_MAGIC.to_le_bytes(), b"STAGGARR");
    assert_eq!(&INDEX_NODE_ARRAY_MAGIC.to_le_bytes(), b"STIDXARR");
    assert!(
        DOC.contains("\"STAGGARR\"") && DOC.contains("\"STIDXARR\""),
        "the doc spells the magics in ASCII"
    );
    assert_eq!(table("## Constants").len() - 1, dec.len() + 4, "the doc lists exactly these constants");
}

#[test]
fn header_table_gives_the_code_offsets_and_tiles_the_header() {
    let rows = table("## Header");
    assert_eq!(rows[0][..4], ["offset", "size", "type", "name"].map(String::from), "column layout");
    let fields: &[(&str, u64, u64, &str)] = &[
        ("magic", HEADER_OFFSET_MAGIC, 8, "u64"),
        ("version", HEADER_OFFSET_VERSION, 4, "u32"),
        ("layout", HEADER_OFFSET_LAYOUT, 4, "u32"),
        ("record_bytes", HEADER_OFFSET_RECORD_BYTES, 4, "u32"),
        ("stride_bytes", HEADER_OFFSET_STRIDE_BYTES, 4, "u32"),
        ("capacity", HEADER_OFFSET_CAPACITY, 8, "u64"),
        ("area_bytes", HEADER_OFFSET_AREA_BYTES, 8, "u64"),
        ("table_offset", HEADER_OFFSET_TABLE_OFFSET, 8, "u64"),
        ("slots_offset", HEADER_OFFSET_SLOTS_OFFSET, 8, "u64"),
        ("reserved", HEADER_OFFSET_RESERVED, 4, "u32"),
        ("header_crc", HEADER_OFFSET_CRC, 4, "u32"),
    ];
    assert_eq!(rows.len() - 1, fields.len(), "the doc has exactly these fields");
    let mut at = 0;
    for (row, &(name, offset, size, ty)) in rows[1..].iter().zip(fields) {
        assert_eq!(row[3], name, "field order");
        assert_eq!(row[0], offset.to_string(), "offset of {name}");
        assert_eq!(row[1], size.to_string(), "size of {name}");
        assert_eq!(row[2], ty, "type of {name}");
        assert_eq!(offset, at, "{name} follows its predecessor");
        at += size;
    }
    assert_eq!(at, HEADER_BYTES);
    assert_eq!(HEADER_OFFSET_CRC, HEADER_CRC_COVERED_BYTES, "the CRC follows the bytes it covers");
}

#[test]
fn area_tables_give_the_fixed_offsets() {
    let find = |heading: &str, name: &str| -> (String, String) {
        let rows = table(heading);
        let row = rows.iter().find(|r| r[2] == name).unwrap_or_else(|| panic!("{heading}: {name} missing"));
        (row[0].clone(), row[1].clone())
    };
    let agg = "## Aggregate array";
    assert_eq!(find(agg, "header"), ("0".into(), HEADER_BYTES.to_string()));
    assert_eq!(find(agg, "journal_target"), (JOURNAL_TARGET_OFFSET.to_string(), "8".into()));
    assert_eq!(find(agg, "journal_seal"), (JOURNAL_SEAL_OFFSET.to_string(), SEAL_WORD_BYTES.to_string()));
    assert_eq!(find(agg, "journal_record").0, JOURNAL_RECORD_OFFSET.to_string());
    let idx = "## Index node array";
    assert_eq!(find(idx, "node_count"), (NODE_COUNT_OFFSET.to_string(), "8".into()));
    assert_eq!(find(idx, "slots").0, SLOTS_ALIGN_BYTES.to_string());
}

fn header_field(region: &Region, base: RegionOffset, offset: u64, size: u64) -> u64 {
    if size == 8 {
        region.load_u64(base + offset)
    } else {
        region.read_u32(base + offset).into()
    }
}

#[test]
fn examples_are_what_format_writes_and_bytes_sit_where_the_doc_says() {
    let rows = table("## Examples");
    assert_eq!(rows.len(), 4, "three examples");
    let base = RegionOffset(4096);
    for row in &rows[1..] {
        let n = |c: usize| row[c].parse::<u64>().unwrap();
        let (record_bytes, area_bytes) = (n(2), n(3));
        let region = Arc::new(Region::sim(base.0 + area_bytes));
        let (layout_code, magic) = match (row[0].as_str(), row[1].as_str()) {
            ("aggregates", layout) => {
                let layout = if layout == "dense" { SlotLayout::Dense } else { SlotLayout::Aligned };
                let a =
                    AggregateArray::format(region.clone(), base, area_bytes, record_bytes, layout).unwrap();
                assert_eq!((a.stride_bytes(), a.capacity()), (n(4), n(5)), "{row:?}");
                (layout.code(), AGGREGATE_ARRAY_MAGIC)
            }
            ("index nodes", "aligned") => {
                let a = IndexNodeArray::format(region.clone(), base, area_bytes, record_bytes).unwrap();
                assert_eq!((a.node_bytes(), a.capacity()), (n(4), n(5)), "{row:?}");
                (LAYOUT_ALIGNED, INDEX_NODE_ARRAY_MAGIC)
            }
            other => panic!("unknown example {other:?}"),
        };
        let field = |offset, size| header_field(&region, base, offset, size);
        assert_eq!(field(HEADER_OFFSET_MAGIC, 8), magic);
        assert_eq!(field(HEADER_OFFSET_VERSION, 4), PMEM_ARRAYS_VERSION.into());
        assert_eq!(field(HEADER_OFFSET_LAYOUT, 4), layout_code.into());
        assert_eq!(field(HEADER_OFFSET_RECORD_BYTES, 4), record_bytes);
        assert_eq!(field(HEADER_OFFSET_STRIDE_BYTES, 4), n(4));
        assert_eq!(field(HEADER_OFFSET_CAPACITY, 8), n(5));
        assert_eq!(field(HEADER_OFFSET_AREA_BYTES, 8), area_bytes);
        assert_eq!(field(HEADER_OFFSET_TABLE_OFFSET, 8), n(6));
        assert_eq!(field(HEADER_OFFSET_SLOTS_OFFSET, 8), n(7));
        assert_eq!(field(HEADER_OFFSET_RESERVED, 4), 0);
        let header = region.read_vec(base, HEADER_CRC_COVERED_BYTES as usize);
        assert_eq!(field(HEADER_OFFSET_CRC, 4), crc32c::crc32c(&header).into(), "CRC of bytes 0..60");
    }
}

#[test]
fn seals_records_and_node_count_sit_where_the_doc_says() {
    let base = RegionOffset(4096);
    let region = Arc::new(Region::sim(base.0 + 4096));
    let a = AggregateArray::format(region.clone(), base, 4096, 28, SlotLayout::Dense).unwrap();
    let record: Vec<u8> = (0..28).collect();
    a.set(3, &record).unwrap();
    let (table_offset, slots_offset) = (192, 1024);
    assert_eq!(
        region.read_vec(base + slots_offset + 3 * 28, 28),
        record,
        "slot 3 at slots_offset + 3 stride"
    );
    let seal = region.load_u64(base + table_offset + 3 * SEAL_WORD_BYTES);
    let crc = crc32c::crc32c_append(crc32c::crc32c(&3u64.to_le_bytes()), &record);
    assert_eq!(
        seal,
        (u64::from(SEAL_TAG) << 32) | u64::from(crc),
        "seal = tag, CRC of slot number and record"
    );
    a.set(3, &[7; 28]).unwrap();
    assert_eq!(region.load_u64(base + JOURNAL_TARGET_OFFSET), 3, "the overwrite went through the journal");
    assert_eq!(region.read_vec(base + JOURNAL_RECORD_OFFSET, 28), [7; 28]);
    assert_eq!(region.load_u64(base + JOURNAL_SEAL_OFFSET), 0, "and cleared its seal");

    let region = Arc::new(Region::sim(base.0 + 8192));
    let n = IndexNodeArray::format(region.clone(), base, 8192, 1024).unwrap();
    n.write_node(0, &[1; 10]).unwrap();
    n.write_node(1, &[2; 10]).unwrap();
    assert_eq!(region.load_u64(base + NODE_COUNT_OFFSET), 2);
    assert_eq!(region.read_vec(base + SLOTS_ALIGN_BYTES + 1024, 10), [2; 10], "node 1 at 256 + node_bytes");
}
