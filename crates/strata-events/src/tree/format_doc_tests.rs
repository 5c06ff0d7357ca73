//! Keeps `docs/format/events-flank.md` and the code in agreement: every
//! constant appears in the constants table with its value, the header table
//! gives the offsets and sizes the code uses and tiles the 256-byte header,
//! the area layout matches `flank_area_bytes`, and the bytes `format` writes
//! sit where the document says.

use std::sync::Arc;

use strata_pmem::{Region, RegionOffset};

use super::config::{DEFAULT_MAX_LEVELS, MAX_LEVELS_LIMIT, PMEM_AREA_ALIGN_BYTES};
use super::flank_pmem::*;
use super::merge_record::*;
use crate::node::{new_node_buffer, LeafLayout, LeafNode};
use crate::schema::StreamSchema;
use crate::NodeId;

const DOC: &str = include_str!("../../../../docs/format/events-flank.md");

fn table(heading: &str) -> Vec<Vec<String>> {
    strata_testkit::doc_table::markdown_table(DOC, heading)
}

fn value_of(name: &str) -> String {
    strata_testkit::doc_table::table_value(DOC, "## Constants", name)
}

fn hex(v: u64) -> String {
    format!("{v:#018X}").replace("0X", "0x")
}

#[test]
fn every_constant_appears_with_its_value() {
    let dec: &[(&str, u64)] = &[
        ("FLANK_VERSION", FLANK_VERSION.into()),
        ("FLANK_HEADER_BYTES", FLANK_HEADER_BYTES),
        ("FLANK_SLOTS_OFFSET", FLANK_SLOTS_OFFSET),
        ("FLANK_SLOT_BYTES", FLANK_SLOT_BYTES),
        ("FLANK_HEADER_CRC_COVERED_BYTES", FLANK_HEADER_CRC_COVERED_BYTES),
        ("FLANK_FLAG_SHARED_IDS", FLANK_FLAG_SHARED_IDS.into()),
        ("FLANK_FLAG_AGGREGATES_INLINE", FLANK_FLAG_AGGREGATES_INLINE.into()),
        ("JOURNAL_IDLE", JOURNAL_IDLE),
        ("PMEM_AREA_ALIGN_BYTES", PMEM_AREA_ALIGN_BYTES),
        ("DEFAULT_MAX_LEVELS", DEFAULT_MAX_LEVELS.into()),
        ("MAX_LEVELS_LIMIT", MAX_LEVELS_LIMIT.into()),
        ("MERGE_IDLE", MERGE_IDLE),
        ("ENTRY_JOURNAL_IDLE", ENTRY_JOURNAL_IDLE),
        ("MERGE_RECORD_BYTES", MERGE_RECORD_BYTES),
        ("MERGE_STEP_LEAF", MERGE_STEP_LEAF.into()),
        ("MERGE_STEP_APPEND", MERGE_STEP_APPEND.into()),
        ("MERGE_CARRY_PRESENT", MERGE_CARRY_PRESENT.into()),
        ("MERGE_CARRY_SOURCE_FIRST", MERGE_CARRY_SOURCE_FIRST.into()),
        ("MERGE_STEP_SHIFT_TAIL", MERGE_STEP_SHIFT_TAIL.into()),
        ("MERGE_STEP_SHIFT_LEAF", MERGE_STEP_SHIFT_LEAF.into()),
        ("MERGE_STEP_REFRESH_RUN", MERGE_STEP_REFRESH_RUN.into()),
        ("MERGE_RUN_TO_FLANK", MERGE_RUN_TO_FLANK.into()),
        ("MERGE_KEEP_MAX", MERGE_KEEP_MAX.into()),
        ("FLANK_VERSION_PREVIOUS", FLANK_VERSION_PREVIOUS.into()),
        ("FLANK_VERSION_OLDEST", FLANK_VERSION_OLDEST.into()),
    ];
    for (name, v) in dec {
        assert_eq!(value_of(name), v.to_string(), "constant {name}");
    }
    let hexes = [
        ("FLANK_MAGIC", FLANK_MAGIC),
        ("JOURNAL_ACTIVE", JOURNAL_ACTIVE),
        ("NO_NODE", NO_NODE),
        ("MERGE_ACTIVE_0", MERGE_ACTIVE_0),
        ("MERGE_ACTIVE_1", MERGE_ACTIVE_1),
        ("ENTRY_JOURNAL_TAG", ENTRY_JOURNAL_TAG),
    ];
    for (name, v) in hexes {
        assert_eq!(value_of(name), hex(v), "constant {name}");
    }
    assert_eq!(value_of("JOURNAL_COMMIT_TAG"), format!("{JOURNAL_COMMIT_TAG:#010X}").replace("0X", "0x"));
    assert_eq!(&JOURNAL_COMMIT_TAG.to_le_bytes(), b"WOUT");
    assert_eq!(value_of("JOURNAL_ENDED_TAG"), format!("{JOURNAL_ENDED_TAG:#010X}").replace("0X", "0x"));
    assert_eq!(&JOURNAL_ENDED_TAG.to_le_bytes(), b"WEND");
    assert_eq!(&MERGE_ACTIVE_0.to_le_bytes(), b"OOOMERG0");
    assert_eq!(&MERGE_ACTIVE_1.to_le_bytes(), b"OOOMERG1");
    assert_eq!(&(ENTRY_JOURNAL_TAG as u16).to_le_bytes(), b"EJ");
    assert!(DOC.contains("\"OOOMERG0\"") && DOC.contains("\"EJ\""), "the doc spells them in ASCII");
    assert_eq!(&FLANK_MAGIC.to_le_bytes(), b"STEVFLNK");
    assert_eq!(&JOURNAL_ACTIVE.to_le_bytes(), b"WRITEOUT");
    assert!(DOC.contains("\"STEVFLNK\"") && DOC.contains("\"WRITEOUT\""), "the doc spells both in ASCII");
    assert_eq!(
        table("## Constants").len() - 1,
        dec.len() + hexes.len() + 2,
        "the doc lists exactly these constants"
    );
}

#[test]
fn header_table_gives_the_code_offsets_and_tiles_the_header() {
    let rows = table("## Header");
    assert_eq!(rows[0][..4], ["offset", "size", "type", "name"].map(String::from), "column layout");
    let fields: &[(&str, u64, u64)] = &[
        ("magic", FLANK_OFFSET_MAGIC, 8),
        ("version", FLANK_OFFSET_VERSION, 4),
        ("max_levels", FLANK_OFFSET_MAX_LEVELS, 4),
        ("event_bytes", FLANK_OFFSET_EVENT_BYTES, 4),
        ("index_entry_bytes", FLANK_OFFSET_INDEX_ENTRY_BYTES, 4),
        ("leaf_fill", FLANK_OFFSET_LEAF_FILL, 4),
        ("index_fill", FLANK_OFFSET_INDEX_FILL, 4),
        ("flags", FLANK_OFFSET_FLAGS, 4),
        ("config_crc", FLANK_OFFSET_CONFIG_CRC, 4),
        ("header_crc", FLANK_OFFSET_HEADER_CRC, 4),
        ("height", FLANK_OFFSET_HEIGHT, 8),
        ("merged_ooo_generation", FLANK_OFFSET_MERGED_OOO_GENERATION, 8),
        ("journal_state", FLANK_OFFSET_JOURNAL_STATE, 8),
        ("journal_level", FLANK_OFFSET_JOURNAL_LEVEL, 8),
        ("journal_old_id", FLANK_OFFSET_JOURNAL_OLD_ID, 8),
        ("journal_new_id", FLANK_OFFSET_JOURNAL_NEW_ID, 8),
        ("journal_root_id", FLANK_OFFSET_JOURNAL_ROOT_ID, 8),
        ("merge_state", FLANK_OFFSET_MERGE_STATE, 8),
        ("merge_generation", FLANK_OFFSET_MERGE_GENERATION, 8),
        ("merge_input_events", FLANK_OFFSET_MERGE_INPUT_EVENTS, 8),
        ("entry_journal", FLANK_OFFSET_ENTRY_JOURNAL, 8),
        ("leaf_commit", FLANK_OFFSET_LEAF_COMMIT, 8),
        ("merge_record_0", FLANK_OFFSET_MERGE_RECORD_0, MERGE_RECORD_BYTES),
        ("merge_record_1", FLANK_OFFSET_MERGE_RECORD_1, MERGE_RECORD_BYTES),
    ];
    let named: Vec<&Vec<String>> = rows[1..].iter().filter(|r| r[3] != "reserved").collect();
    assert_eq!(named.len(), fields.len(), "the doc has exactly these fields besides reserved ones");
    for (name, offset, size) in fields {
        let row = named.iter().find(|r| r[3] == *name).unwrap_or_else(|| panic!("field {name} missing"));
        assert_eq!(row[0], offset.to_string(), "offset of {name}");
        assert_eq!(row[1], size.to_string(), "size of {name}");
    }
    let mut at = 0;
    for row in &rows[1..] {
        assert_eq!(row[0], at.to_string(), "the header rows tile the header (row {})", row[3]);
        at += row[1].parse::<u64>().unwrap();
    }
    assert_eq!(at, FLANK_HEADER_BYTES);
    assert_eq!(FLANK_OFFSET_HEADER_CRC, FLANK_HEADER_CRC_COVERED_BYTES);
}

#[test]
fn area_layout_and_the_bytes_format_writes_match_the_doc() {
    let rows = table("## Area layout");
    assert_eq!(rows.last().unwrap()[0], format!("{FLANK_SLOTS_OFFSET} + l * {FLANK_SLOT_BYTES}"));
    assert_eq!(flank_area_bytes(DEFAULT_MAX_LEVELS), 131_328);
    assert!(DOC.contains("131328 for the default 16 levels"));
    let schema = StreamSchema::stock();
    let layout = LeafLayout::new(&schema, 100).unwrap();
    let mut leaf = new_node_buffer();
    LeafNode::init(leaf.as_mut_slice(), &layout, NodeId::leaf(0)).unwrap();
    let fp = FlankFingerprint {
        max_levels: 3,
        event_bytes: 28,
        index_entry_bytes: 136,
        leaf_fill: 261,
        index_fill: 53,
        flags: FLANK_FLAG_SHARED_IDS | FLANK_FLAG_AGGREGATES_INLINE,
        config_crc: 0xABCD_1234,
    };
    let base = 512u64;
    let region = Arc::new(Region::sim(base + flank_area_bytes(3)));
    PmemFlankArea::format(region.clone(), RegionOffset(base), flank_area_bytes(3), &fp, &leaf).unwrap();
    let image = region.as_sim().unwrap().persistent_image();
    let area = &image[base as usize..];
    let u32_at = |at: u64| u32::from_le_bytes(area[at as usize..at as usize + 4].try_into().unwrap());
    let u64_at = |at: u64| u64::from_le_bytes(area[at as usize..at as usize + 8].try_into().unwrap());
    assert_eq!(u64_at(FLANK_OFFSET_MAGIC), FLANK_MAGIC, "everything format writes is persisted");
    assert_eq!(u32_at(FLANK_OFFSET_VERSION), FLANK_VERSION);
    assert_eq!(u32_at(FLANK_OFFSET_MAX_LEVELS), 3);
    assert_eq!(u32_at(FLANK_OFFSET_EVENT_BYTES), 28);
    assert_eq!(u32_at(FLANK_OFFSET_INDEX_ENTRY_BYTES), 136);
    assert_eq!(u32_at(FLANK_OFFSET_LEAF_FILL), 261);
    assert_eq!(u32_at(FLANK_OFFSET_INDEX_FILL), 53);
    assert_eq!(u32_at(FLANK_OFFSET_FLAGS), 3);
    assert_eq!(u32_at(FLANK_OFFSET_CONFIG_CRC), 0xABCD_1234);
    assert_eq!(
        u32_at(FLANK_OFFSET_HEADER_CRC),
        crc32c::crc32c(&area[..FLANK_HEADER_CRC_COVERED_BYTES as usize])
    );
    assert!(area[44..64].iter().all(|&b| b == 0), "reserved bytes are zero");
    assert_eq!(u64_at(FLANK_OFFSET_HEIGHT), 1);
    assert_eq!(u64_at(FLANK_OFFSET_MERGED_OOO_GENERATION), 0);
    assert_eq!(u64_at(FLANK_OFFSET_JOURNAL_STATE), JOURNAL_IDLE);
    assert_eq!(u64_at(FLANK_OFFSET_JOURNAL_ROOT_ID), NO_NODE);
    let slot0 = &area[FLANK_SLOTS_OFFSET as usize..(FLANK_SLOTS_OFFSET + FLANK_SLOT_BYTES) as usize];
    assert_eq!(&slot0[..64], &leaf[..64], "slot 0 holds the first leaf's header in the node format");
    let (_, image) =
        PmemFlankArea::open(region.clone(), RegionOffset(base), flank_area_bytes(3), &fp).unwrap();
    assert_eq!((image.height, image.journal), (1, None));
    let other = FlankFingerprint { leaf_fill: 260, ..fp };
    let err =
        PmemFlankArea::open(region, RegionOffset(base), flank_area_bytes(3), &other).map(|_| ()).unwrap_err();
    assert!(err.is_corruption() && err.to_string().contains("another tree configuration"), "{err}");
}

/// A formatted 4-level flank area for Sine events on a simulated region,
/// with its fingerprint (the fixture of the journal and merge-record tests).
fn formatted_sine_flank_area() -> (FlankFingerprint, Arc<Region>, PmemFlankArea) {
    let fp = FlankFingerprint {
        max_levels: 4,
        event_bytes: 56,
        index_entry_bytes: 16,
        leaf_fill: 130,
        index_fill: 457,
        flags: 0,
        config_crc: 7,
    };
    let region = Arc::new(Region::sim(flank_area_bytes(4)));
    let layout = LeafLayout::new(&StreamSchema::sine(), 100).unwrap();
    let mut leaf = new_node_buffer();
    LeafNode::init(leaf.as_mut_slice(), &layout, NodeId::leaf(0)).unwrap();
    let area =
        PmemFlankArea::format(region.clone(), RegionOffset(0), flank_area_bytes(4), &fp, &leaf).unwrap();
    (fp, region, area)
}

#[test]
fn a_journal_record_round_trips_through_open_and_damage_is_corruption() {
    let (fp, region, mut area) = formatted_sine_flank_area();
    let j = FlankJournal {
        level: 0,
        old_id: NodeId::leaf(0),
        new_id: NodeId::leaf(1),
        root_id: Some(NodeId::index(0)),
    };
    area.begin_journal(&j).unwrap();
    assert_eq!(
        area.stats().fences,
        3 + 1,
        "format: clear magic, header, magic; then the journal in one fence"
    );
    let open = || PmemFlankArea::open(region.clone(), RegionOffset(0), flank_area_bytes(4), &fp);
    let (_, image) = open().unwrap();
    assert_eq!(image.journal, Some(j));
    let commit = region.load_u64(RegionOffset(FLANK_OFFSET_JOURNAL_STATE));
    assert_eq!(commit >> 32, u64::from(JOURNAL_COMMIT_TAG));
    // A torn commit (a word of the record not the committed one) reads as
    // a write-out that never began.
    region.store_u64(RegionOffset(FLANK_OFFSET_JOURNAL_NEW_ID), NodeId::leaf(7).to_u64());
    assert_eq!(open().unwrap().1.journal, None, "a commit word whose CRC does not match");
    // Format 2's state word still reads as committed.
    region.store_u64(RegionOffset(FLANK_OFFSET_JOURNAL_STATE), JOURNAL_ACTIVE);
    assert_eq!(open().unwrap().1.journal.map(|r| r.new_id), Some(NodeId::leaf(7)));
    region.store_u64(RegionOffset(FLANK_OFFSET_JOURNAL_NEW_ID), NodeId::leaf(1).to_u64());
    region.store_u64(RegionOffset(FLANK_OFFSET_JOURNAL_STATE), commit);
    assert_eq!(open().unwrap().1.journal, Some(j));
    area.end_journal();
    let (_, image) = PmemFlankArea::open(region.clone(), RegionOffset(0), flank_area_bytes(4), &fp).unwrap();
    assert_eq!(image.journal, None);
    region.store_u64(RegionOffset(FLANK_OFFSET_JOURNAL_STATE), 42);
    let err = PmemFlankArea::open(region.clone(), RegionOffset(0), flank_area_bytes(4), &fp)
        .map(|_| ())
        .unwrap_err();
    assert!(err.is_corruption(), "{err}");
    region.store_u64(RegionOffset(FLANK_OFFSET_JOURNAL_STATE), JOURNAL_IDLE);
    region.store_u64(RegionOffset(FLANK_OFFSET_HEIGHT), 5);
    let err = PmemFlankArea::open(region.clone(), RegionOffset(0), flank_area_bytes(4), &fp)
        .map(|_| ())
        .unwrap_err();
    assert!(err.to_string().contains("height 5"), "{err}");
    region.store_u64(RegionOffset(FLANK_OFFSET_HEIGHT), 1);
    region.write(RegionOffset(FLANK_OFFSET_EVENT_BYTES), &[9]);
    let err = PmemFlankArea::open(region, RegionOffset(0), flank_area_bytes(4), &fp).map(|_| ()).unwrap_err();
    assert!(err.to_string().contains("CRC"), "{err}");
}

/// The rows of a merge record table, checked to tile the record.
fn record_table(heading: &str) -> Vec<Vec<String>> {
    let rows = table(heading);
    assert_eq!(rows[0][..4], ["offset", "size", "type", "name"].map(String::from), "column layout");
    let mut at = 0;
    for row in &rows[1..] {
        assert_eq!(row[0], at.to_string(), "the rows tile the record (row {})", row[3]);
        at += row[1].parse::<u64>().unwrap();
    }
    assert_eq!(at, MERGE_RECORD_BYTES, "{heading}");
    rows
}

#[test]
fn merge_record_table_matches_the_encoding() {
    let rows = record_table("## Merge step record");
    let field = |name: &str| -> (usize, usize) {
        let row = rows.iter().find(|r| r[3] == name).unwrap_or_else(|| panic!("field {name} missing"));
        (row[0].parse().unwrap(), row[1].parse().unwrap())
    };
    let source = crate::block_store::PhysAddr::new(9, 128).unwrap();
    let before = crate::block_store::PhysAddr::new(4, 64).unwrap();
    let r = MergeRecord {
        done: 0x0102_0304,
        chunk: 0x0A0B_0C0D,
        step: MergeStep::Leaf {
            leaf: NodeId::leaf(77),
            before,
            carry: Some(MergeCarry { source, source_first: true, count: 0x0506_0708 }),
        },
    };
    let bytes = r.encode();
    let at = |name: &str| {
        let (o, n) = field(name);
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&bytes[o..o + n]);
        u64::from_le_bytes(b)
    };
    assert_eq!(at("done"), 0x0102_0304);
    assert_eq!(at("chunk"), 0x0A0B_0C0D);
    assert_eq!(at("kind"), u64::from(MERGE_STEP_LEAF));
    assert_eq!(at("carry_bits"), u64::from(MERGE_CARRY_PRESENT | MERGE_CARRY_SOURCE_FIRST));
    assert_eq!(at("carry_count"), 0x0506_0708);
    assert_eq!(at("target"), NodeId::leaf(77).to_u64());
    assert_eq!(at("before"), before.to_u64());
    assert_eq!(at("carry_source"), source.to_u64());
    let append = MergeRecord { step: MergeStep::Append { events_before: 12, carry: None }, ..r }.encode();
    assert_eq!(append[field("before").0..field("before").0 + 8], NO_NODE.to_le_bytes());
    assert_eq!(append[field("carry_source").0..field("carry_source").0 + 8], NO_NODE.to_le_bytes());
}

#[test]
fn one_pass_merge_record_table_matches_the_encoding() {
    let rows = record_table("## One-pass merge step record");
    let field = |bytes: &[u8], name: &str| -> u64 {
        let row = rows.iter().find(|r| r[3] == name).unwrap_or_else(|| panic!("field {name} missing"));
        let (o, n): (usize, usize) = (row[0].parse().unwrap(), row[1].parse().unwrap());
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&bytes[o..o + n]);
        u64::from_le_bytes(b)
    };
    let before = crate::block_store::PhysAddr::new(4, 64).unwrap();
    let shift = MergeRecord {
        done: 0x0102_0304,
        chunk: 0x0A0B_0C0D,
        step: MergeStep::ShiftLeaf {
            leaf: NodeId::leaf(77),
            before,
            keep: 0x1234,
            skip: 0x0506_0708,
            last: NodeId::leaf(99),
            to_flank: true,
        },
    };
    let bytes = shift.encode();
    assert_eq!(field(&bytes, "run_start"), 0x0102_0304);
    assert_eq!(field(&bytes, "run_input"), 0x0A0B_0C0D);
    assert_eq!(field(&bytes, "kind"), u64::from(MERGE_STEP_SHIFT_LEAF));
    assert_eq!(field(&bytes, "flags"), u64::from(MERGE_RUN_TO_FLANK));
    assert_eq!(field(&bytes, "keep"), 0x1234);
    assert_eq!(field(&bytes, "skip"), 0x0506_0708);
    assert_eq!(field(&bytes, "target"), NodeId::leaf(77).to_u64());
    assert_eq!(field(&bytes, "before"), before.to_u64());
    assert_eq!(field(&bytes, "last"), NodeId::leaf(99).to_u64());
    let tail = MergeRecord {
        step: MergeStep::ShiftTail { last: NodeId::leaf(99), source: before, events_before: 1234, count: 17 },
        ..shift
    };
    let bytes = tail.encode();
    assert_eq!(field(&bytes, "kind"), u64::from(MERGE_STEP_SHIFT_TAIL));
    assert_eq!(field(&bytes, "flags"), u64::from(MERGE_RUN_TO_FLANK));
    assert_eq!((field(&bytes, "keep"), field(&bytes, "skip"), field(&bytes, "target")), (0, 17, 1234));
    let refresh = MergeRecord {
        done: 5,
        chunk: 0,
        step: MergeStep::RefreshRun { first: NodeId::leaf(3), newest_ts: -7 },
    };
    let bytes = refresh.encode();
    assert_eq!(field(&bytes, "kind"), u64::from(MERGE_STEP_REFRESH_RUN));
    assert_eq!(field(&bytes, "target"), NodeId::leaf(3).to_u64());
    assert_eq!((field(&bytes, "before"), field(&bytes, "last")), (-7i64 as u64, NO_NODE));
    for r in [shift, tail, refresh] {
        assert_eq!(MergeRecord::decode(&r.encode()), Ok(r));
    }
    let mut bad = shift.encode();
    bad[9] = 2;
    assert!(MergeRecord::decode(&bad).is_err(), "an unknown flag");
    let mut bad = refresh.encode();
    bad[32..40].copy_from_slice(&NodeId::leaf(1).to_u64().to_le_bytes());
    assert!(MergeRecord::decode(&bad).is_err(), "a refresh names no last leaf");
}

#[test]
fn version_2_and_3_areas_open_and_other_versions_are_refused() {
    let (fp, region, mut area) = formatted_sine_flank_area();
    let open = || PmemFlankArea::open(region.clone(), RegionOffset(0), flank_area_bytes(4), &fp);
    for version in [FLANK_VERSION_PREVIOUS, FLANK_VERSION_OLDEST] {
        area.restamp_version(version);
        assert_eq!(open().unwrap().0.version(), version, "version {version} opens");
    }
    area.restamp_version(1);
    assert!(open().map(|_| ()).unwrap_err().to_string().contains("version 1"));
    area.restamp_version(FLANK_VERSION + 1);
    assert!(open().is_err(), "a newer version is refused");
}

#[test]
fn merge_records_and_the_entry_journal_round_trip_through_open() {
    let (fp, region, mut area) = formatted_sine_flank_area();
    let open = || PmemFlankArea::open(region.clone(), RegionOffset(0), flank_area_bytes(4), &fp);
    let addr = crate::block_store::PhysAddr::new(2, 64).unwrap();
    let first = MergeRecord {
        done: 0,
        chunk: 3,
        step: MergeStep::Leaf { leaf: NodeId::leaf(4), before: addr, carry: None },
    };
    let fences = area.stats().fences;
    area.begin_merge(9, 11, &first);
    assert_eq!(area.stats().fences - fences, 2, "record, then state");
    let (_, image) = open().unwrap();
    assert_eq!(
        image.merge.map(|m| (m.generation, m.input_events, m.record, m.slot)),
        Some((9, 11, first, 0))
    );
    let second = MergeRecord { step: MergeStep::Append { events_before: 40, carry: None }, ..first };
    area.write_merge_record(&second).unwrap();
    let (_, image) = open().unwrap();
    assert_eq!(image.merge.map(|m| (m.record, m.slot)), Some((second, 1)), "the other slot");
    assert_eq!(
        u64::from_le_bytes(
            region.as_sim().unwrap().persistent_image()[FLANK_OFFSET_MERGE_RECORD_0 as usize..][..8]
                .try_into()
                .unwrap()
        ),
        3 << 32,
        "the previous record stays whole in slot 0"
    );
    area.end_merge();
    assert_eq!(open().unwrap().1.merge, None);
    region.store_u64(RegionOffset(FLANK_OFFSET_MERGE_STATE), 5);
    assert!(open().map(|_| ()).unwrap_err().to_string().contains("merge state"));
    region.store_u64(RegionOffset(FLANK_OFFSET_MERGE_STATE), MERGE_ACTIVE_1);
    region.write(RegionOffset(FLANK_OFFSET_MERGE_RECORD_1 + 8), &[7]);
    assert!(open().map(|_| ()).unwrap_err().is_corruption(), "an undecodable record");
    region.store_u64(RegionOffset(FLANK_OFFSET_MERGE_STATE), MERGE_IDLE);
    region.store_u64(RegionOffset(FLANK_OFFSET_HEIGHT), 2);
    region.store_u64(RegionOffset(FLANK_OFFSET_ENTRY_JOURNAL), entry_journal_word(1, 3));
    assert_eq!(open().unwrap().1.entry_journal, Some((1, 3)));
    region.store_u64(RegionOffset(FLANK_OFFSET_ENTRY_JOURNAL), entry_journal_word(2, 3));
    assert!(open().map(|_| ()).unwrap_err().to_string().contains("entry journal"), "level beyond the height");
    region.store_u64(RegionOffset(FLANK_OFFSET_ENTRY_JOURNAL), 1);
    assert!(open().map(|_| ()).unwrap_err().is_corruption(), "a word without the tag");
}

#[test]
fn the_leaf_commit_word_sits_where_the_doc_says_and_a_torn_batch_falls_back_to_from() {
    let (fp, region, mut area) = formatted_sine_flank_area();
    let open = || PmemFlankArea::open(region.clone(), RegionOffset(0), flank_area_bytes(4), &fp);
    let layout = LeafLayout::new(&StreamSchema::sine(), 100).unwrap();
    let mut leaf = new_node_buffer();
    let mut node = LeafNode::init(leaf.as_mut_slice(), &layout, NodeId::leaf(0)).unwrap();
    let events: Vec<Vec<u8>> =
        (0..5u8).map(|i| [vec![i; 48], (i64::from(i) * 10).to_le_bytes().to_vec()].concat()).collect();
    let event_of = |i: usize| {
        let mut e = events[i].clone();
        e.rotate_right(8);
        e
    };
    for i in 0..3 {
        node.append(&event_of(i)).unwrap();
    }
    let first = node.entries_range(0, 3);
    let fences = area.stats().fences;
    area.persist_append(0, &leaf, first.clone(), 3).unwrap();
    assert_eq!(area.stats().fences - fences, 1, "a leaf batch is one fence");
    let mut node = LeafNode::open(leaf.as_mut_slice(), &layout).unwrap();
    node.append(&event_of(3)).unwrap();
    node.append(&event_of(4)).unwrap();
    let second = node.entries_range(3, 5);
    area.persist_append(0, &leaf, second.clone(), 2).unwrap();
    let word = region.load_u64(RegionOffset(FLANK_OFFSET_LEAF_COMMIT));
    let crc = crc32c::crc32c(&leaf[second.clone()]);
    assert_eq!(word & 0xFFFF, 5, "bits 0..16: count");
    assert_eq!((word >> 16) & 0xFFFF, 3, "bits 16..32: from");
    assert_eq!((word >> 32) as u32, crc, "bits 32..64: CRC32C of the batch's event bytes");
    assert_eq!(second.start, 64 + 3 * 56, "the batch starts at 64 + from * event_bytes");
    let (_, image) = open().unwrap();
    assert_eq!(crate::node::header::header_count(&image.slots[0]), 5);
    assert_eq!(image.leaf_commit, LeafCommit { count: 5, from: 3, crc });
    // Tear the batch: one byte of its last event never reached the media.
    let torn = FLANK_SLOTS_OFFSET + second.end as u64 - 1;
    region.write(RegionOffset(torn), &[0xEE]);
    let (_, image) = open().unwrap();
    assert_eq!(
        crate::node::header::header_count(&image.slots[0]),
        3,
        "a torn batch: the leaf holds `from` events"
    );
    assert_eq!(
        region.load_u64(RegionOffset(FLANK_OFFSET_LEAF_COMMIT)),
        LeafCommit { count: 3, from: 3, crc: 0 }.word(),
        "open settles a torn word on what the leaf holds"
    );
    region.store_u64(RegionOffset(FLANK_OFFSET_LEAF_COMMIT), LeafCommit { count: 9000, from: 3, crc }.word());
    let err = open().map(|_| ()).unwrap_err();
    assert!(err.is_corruption() && err.to_string().contains("leaf commit word"), "{err}");
    area.init_slot(0, &leaf).unwrap();
    assert_eq!(region.load_u64(RegionOffset(FLANK_OFFSET_LEAF_COMMIT)), 0, "a fresh leaf slot: word 0");
}
