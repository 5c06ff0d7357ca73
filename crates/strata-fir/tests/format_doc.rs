//! `docs/format/fir.md` agrees with the code: the constants, the field
//! tables, and bytes the code writes at the offsets the document gives.

use std::sync::Arc;

use strata_fir::addr::VersionAddr;
use strata_fir::checkpoint::{Entry, Header};
use strata_fir::layout::{
    block_bytes, slot_offset, BlockHeader, Layout, BLOCK_HEADER_BYTES, BLOCK_MAGIC, CHECKPOINT_ENTRY_BYTES,
    CHECKPOINT_HEADER_BYTES, CHECKPOINT_MAGIC, FLAG_TOMBSTONE, MAGIC, SHARDS, SLOTS_PER_BLOCK,
    SLOT_HEADER_BYTES, UPDATE_MAP_BYTES, VERSION,
};
use strata_fir::{FirDb, FirOptions};
use strata_pmem::{Region, RegionOffset};
use strata_testkit::doc_table::{check_field_table, table_value};
use strata_txn::{RowKey, TableId, TableSchema, WorkerId};

const DOC: &str = include_str!("../../../docs/format/fir.md");

fn int(s: &str) -> u64 {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => s.parse().unwrap(),
    }
}

#[test]
fn the_constants_are_the_documents() {
    for (name, value) in [
        ("MAGIC", MAGIC),
        ("VERSION", u64::from(VERSION)),
        ("SLOTS_PER_BLOCK", SLOTS_PER_BLOCK as u64),
        ("BLOCK_HEADER_BYTES", BLOCK_HEADER_BYTES),
        ("UPDATE_MAP_BYTES", UPDATE_MAP_BYTES),
        ("SLOT_HEADER_BYTES", SLOT_HEADER_BYTES),
        ("BLOCK_MAGIC", u64::from(BLOCK_MAGIC)),
        ("FLAG_TOMBSTONE", FLAG_TOMBSTONE),
        ("CHECKPOINT_MAGIC", u64::from(CHECKPOINT_MAGIC)),
        ("SHARDS", SHARDS as u64),
        ("CHECKPOINT_HEADER_BYTES", CHECKPOINT_HEADER_BYTES),
        ("CHECKPOINT_ENTRY_BYTES", CHECKPOINT_ENTRY_BYTES),
    ] {
        assert_eq!(int(&table_value(DOC, "## Constants", name)), value, "{name}");
    }
}

#[test]
fn the_field_tables_are_the_codes_layout() {
    let sb = [
        ("magic", 0, 8),
        ("version", 8, 4),
        ("workers", 12, 4),
        ("tables", 16, 4),
        ("reserved", 20, 4),
        ("row_bytes", 24, 4 * strata_fir::db::MAX_TABLES),
        ("checkpoint_keys", 216, 8),
        ("unused", 224, 32),
    ];
    check_field_table(DOC, "## Superblock", &sb, Some(256));
    let header = [
        ("magic", 0, 4),
        ("version", 4, 4),
        ("table", 8, 4),
        ("region", 12, 4),
        ("seq", 16, 4),
        ("reserved", 20, 4),
        ("prev", 24, 8),
        ("txn_floor", 32, 8),
        ("reserved2", 40, 20),
        ("crc32c", 60, 4),
    ];
    check_field_table(DOC, "## Block header", &header, Some(BLOCK_HEADER_BYTES as usize));
    let slot = [("txn_id", 0, 8), ("key", 8, 8), ("flags", 16, 8), ("row", 24, usize::MAX)];
    check_field_table(DOC, "## Slot", &slot, None);
    let ckpt = [
        ("magic", 0, 4),
        ("version", 4, 4),
        ("ct", 8, 8),
        ("generation", 16, 8),
        ("entries", 24, 8),
        ("entries_crc32c", 32, 4),
        ("reserved", 36, 24),
        ("crc32c", 60, 4),
        ("runs", 64, 8 * SHARDS),
        ("unused", 576, 192),
    ];
    check_field_table(DOC, "## Checkpoint header", &ckpt, Some(CHECKPOINT_HEADER_BYTES as usize));
    let entry = [("table", 0, 4), ("reserved", 4, 4), ("key", 8, 8), ("txn_id", 16, 8), ("addr", 24, 8)];
    check_field_table(DOC, "## Checkpoint entry", &entry, Some(CHECKPOINT_ENTRY_BYTES as usize));
}

#[test]
fn bytes_the_code_writes_lie_where_the_document_says() {
    let h = BlockHeader { table: 3, region: 5, seq: 9, prev: 0x1122, txn_floor: 0x3344 };
    let b = h.encode();
    assert_eq!(&b[0..4], b"FBLK");
    assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 3);
    assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 5);
    assert_eq!(u32::from_le_bytes(b[16..20].try_into().unwrap()), 9);
    assert_eq!(u64::from_le_bytes(b[24..32].try_into().unwrap()), 0x1122);
    assert_eq!(u64::from_le_bytes(b[32..40].try_into().unwrap()), 0x3344);
    assert_eq!(u32::from_le_bytes(b[60..64].try_into().unwrap()), crc32c::crc32c(&b[..60]));
    // Slots start at 320; an 8-byte row makes a 32-byte slot.
    assert_eq!(slot_offset(8, 0), 320);
    assert_eq!(slot_offset(8, 2), 320 + 64);
    assert_eq!(block_bytes(8), 320 + 2048 * 32);

    // A database: the superblock, the LCTT entry and the directory entry
    // where the document puts them, and a committed version's slot.
    let region = Arc::new(Region::sim(8 << 20));
    let schemas = [TableSchema { name: "t".into(), row_bytes: 8 }];
    let db = FirDb::create(
        region.clone(),
        &schemas,
        &FirOptions { workers: 2, blocks_per_table: 4, table_blocks: Vec::new(), checkpoint_keys: 4096 },
    )
    .unwrap();
    let mut t = db.begin(WorkerId(1)).unwrap();
    t.insert(TableId(0), RowKey(77), &[9; 8]).unwrap();
    let ticket = t.commit_durably().unwrap();
    assert_eq!(region.load_u64(RegionOffset(0)), MAGIC);
    assert_eq!(region.read_u32(RegionOffset(12)), 2, "workers");
    assert_eq!(region.read_u32(RegionOffset(16)), 1, "tables");
    assert_eq!(region.read_u32(RegionOffset(24)), 8, "row_bytes[0]");
    let layout = Layout { workers: 2, tables: 1, checkpoint_keys: 4096 };
    assert_eq!(region.load_u64(RegionOffset(256 * 2)), ticket.txn, "worker 1's LCTT entry at 256 x 2");
    let dir = RegionOffset(256 * 4 + 8);
    assert_eq!(layout.last_block(0, 1), dir, "(table 0, region 1)");
    let raw = region.load_u64(dir).checked_sub(1).expect("region 1 has a block");
    drop(db);
    let (halloc, _) = strata_pmem::halloc::Halloc::open(&region, layout.halloc_base()).unwrap();
    let block = halloc.object_offset(halloc.object_id_from_raw(raw).unwrap());
    let slot = block + slot_offset(8, 0);
    assert_eq!(region.load_u64(slot), ticket.txn, "txn_id");
    assert_eq!(region.load_u64(slot + 8), 77, "key");
    assert_eq!(region.load_u64(slot + 16), 0, "flags");
    assert_eq!(region.read_vec(slot + 24, 8), vec![9; 8], "row");
}

#[test]
fn checkpoint_bytes_lie_where_the_document_says() {
    let e = Entry { table: 2, key: 0x55, txn: 0x66, addr: VersionAddr { region: 1, block: 3, slot: 4 } };
    let b = e.encode();
    assert_eq!(u32::from_le_bytes(b[0..4].try_into().unwrap()), 2);
    assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 0x55);
    assert_eq!(u64::from_le_bytes(b[16..24].try_into().unwrap()), 0x66);
    assert_eq!(u64::from_le_bytes(b[24..32].try_into().unwrap()), (1 << 48) | (3 << 16) | 4);
    let mut runs = vec![0u64; SHARDS];
    runs[5] = 2;
    runs[63] = 1;
    let h = Header { ct: 0x77, generation: 9, runs, entries_crc: 0xABCD };
    let b = h.encode();
    assert_eq!(&b[0..4], b"FCKP");
    assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 0x77);
    assert_eq!(u64::from_le_bytes(b[16..24].try_into().unwrap()), 9);
    assert_eq!(u64::from_le_bytes(b[24..32].try_into().unwrap()), 3, "entries");
    assert_eq!(u32::from_le_bytes(b[32..36].try_into().unwrap()), 0xABCD);
    assert_eq!(u64::from_le_bytes(b[64 + 8 * 5..72 + 8 * 5].try_into().unwrap()), 2, "run 5");
    let mut crc_input = b[..60].to_vec();
    crc_input.extend_from_slice(&b[64..576]);
    assert_eq!(u32::from_le_bytes(b[60..64].try_into().unwrap()), crc32c::crc32c(&crc_input));
    assert_eq!(Header::decode(&b), Some(h));
    let layout = Layout { workers: 2, tables: 1, checkpoint_keys: 10 };
    assert_eq!(layout.checkpoint_selector(), RegionOffset(256 * 3));
    assert_eq!(layout.checkpoint_half(0), RegionOffset(256 * 5), "after the directory, rounded up to 256");
    assert_eq!(layout.checkpoint_half_bytes(), (768u64 + 32 * 10).next_multiple_of(256));
}
