//! FIR's on-PMem layout (format: `docs/format/fir.md`; fir.txt 4.1): the
//! superblock, the Last Commit Transaction Table (one 8-byte word per
//! worker, each in its own 256-byte media block, so a worker's commit
//! writes one block), the region directory (`table_region_addr`: each
//! (table, region)'s last block), the Halloc area the blocks come from,
//! and the block: a header, the 256-byte update map, then 2,048 slots of
//! tuple content (txnId, key, flags, row).

use strata_pmem::RegionOffset;

/// Bytes 0..8 of the superblock.
pub const MAGIC: u64 = u64::from_le_bytes(*b"STRAFIR\0");
/// Superblock format version.
pub const VERSION: u32 = 1;
/// The media write unit: the superblock, each LCTT entry and the update map
/// take whole ones.
pub const MEDIA_BLOCK_BYTES: u64 = 256;
/// Tuple versions (slots) per block, and headers per DRAM tile.
pub const SLOTS_PER_BLOCK: usize = 2048;
/// Bytes of a block before its update map.
pub const BLOCK_HEADER_BYTES: u64 = 64;
/// One bit per slot: obsolete.
pub const UPDATE_MAP_BYTES: u64 = (SLOTS_PER_BLOCK / 8) as u64;
/// Bytes of a slot before its row: txnId, key, flags.
pub const SLOT_HEADER_BYTES: u64 = 24;
/// Bytes 0..4 of a block header.
pub const BLOCK_MAGIC: u32 = u32::from_le_bytes(*b"FBLK");
/// Slot flag: the version is a delete (no row follows).
pub const FLAG_TOMBSTONE: u64 = 1;

/// Bytes 0..4 of a checkpoint half's header.
pub const CHECKPOINT_MAGIC: u32 = u32::from_le_bytes(*b"FCKP");
/// Index shards, each with its own run of checkpoint entries.
pub const SHARDS: usize = 64;
/// Bytes of a checkpoint half before its entries: the header (64), then
/// each shard's entry count (8 x [`SHARDS`]), padded to media blocks.
pub const CHECKPOINT_HEADER_BYTES: u64 = (64 + 8 * SHARDS as u64).next_multiple_of(MEDIA_BLOCK_BYTES);
/// Bytes of a checkpoint entry.
pub const CHECKPOINT_ENTRY_BYTES: u64 = 32;

/// Where everything lies in a region formatted for `workers` regions
/// (one per worker), `tables` tables and checkpoints of up to
/// `checkpoint_keys` keys.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub workers: u32,
    pub tables: u32,
    pub checkpoint_keys: u64,
}

impl Layout {
    /// LCTT entry of `worker`: its own media block.
    pub fn lctt(&self, worker: u32) -> RegionOffset {
        assert!(worker < self.workers, "worker {worker} of {}", self.workers);
        RegionOffset(MEDIA_BLOCK_BYTES * (1 + u64::from(worker)))
    }

    /// The checkpoint selector: `generation << 1 | half` of the last
    /// checkpoint completed (0: none), alone in its media block.
    pub fn checkpoint_selector(&self) -> RegionOffset {
        RegionOffset(MEDIA_BLOCK_BYTES * (1 + u64::from(self.workers)))
    }

    fn directory_start(&self) -> u64 {
        MEDIA_BLOCK_BYTES * (2 + u64::from(self.workers))
    }

    /// Bytes of one checkpoint half.
    pub fn checkpoint_half_bytes(&self) -> u64 {
        (CHECKPOINT_HEADER_BYTES + CHECKPOINT_ENTRY_BYTES * self.checkpoint_keys)
            .next_multiple_of(MEDIA_BLOCK_BYTES)
    }

    /// Where checkpoint half 0 or 1 starts.
    pub fn checkpoint_half(&self, half: u64) -> RegionOffset {
        assert!(half < 2, "half {half}");
        let directory_end = self.directory_start() + 8 * u64::from(self.tables) * u64::from(self.workers);
        RegionOffset(directory_end.next_multiple_of(MEDIA_BLOCK_BYTES) + half * self.checkpoint_half_bytes())
    }

    /// `table_region_addr` of (table, region): the raw Halloc object id of
    /// its last block plus one (0: no block yet).
    pub fn last_block(&self, table: u32, region: u32) -> RegionOffset {
        assert!(table < self.tables && region < self.workers, "table {table} region {region}");
        RegionOffset(
            self.directory_start() + 8 * (u64::from(table) * u64::from(self.workers) + u64::from(region)),
        )
    }

    /// Where the Halloc area starts (256-byte aligned), after the two
    /// checkpoint halves.
    pub fn halloc_base(&self) -> RegionOffset {
        self.checkpoint_half(1) + self.checkpoint_half_bytes()
    }
}

/// Bytes of one slot of a table with `row_bytes` rows (8-byte aligned).
pub fn slot_bytes(row_bytes: usize) -> u64 {
    SLOT_HEADER_BYTES + (row_bytes as u64).next_multiple_of(8)
}

/// Bytes of one block of such a table.
pub fn block_bytes(row_bytes: usize) -> u64 {
    BLOCK_HEADER_BYTES + UPDATE_MAP_BYTES + SLOTS_PER_BLOCK as u64 * slot_bytes(row_bytes)
}

/// Offset of slot `slot` within its block.
pub fn slot_offset(row_bytes: usize, slot: usize) -> u64 {
    assert!(slot < SLOTS_PER_BLOCK, "slot {slot}");
    BLOCK_HEADER_BYTES + UPDATE_MAP_BYTES + slot as u64 * slot_bytes(row_bytes)
}

/// A block's header: which region of which table it extends, its place in
/// the region's chain, and the smallest txnId a valid slot may carry (the
/// next txnId when the block was taken, so bytes an earlier use of the
/// object left behind never read as versions).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub table: u32,
    pub region: u32,
    /// Position in the region's chain, from 0.
    pub seq: u32,
    /// Raw object id + 1 of the previous block of the region (0: none).
    pub prev: u64,
    pub txn_floor: u64,
}

impl BlockHeader {
    pub fn encode(&self) -> [u8; BLOCK_HEADER_BYTES as usize] {
        let mut b = [0u8; BLOCK_HEADER_BYTES as usize];
        b[0..4].copy_from_slice(&BLOCK_MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&VERSION.to_le_bytes());
        b[8..12].copy_from_slice(&self.table.to_le_bytes());
        b[12..16].copy_from_slice(&self.region.to_le_bytes());
        b[16..20].copy_from_slice(&self.seq.to_le_bytes());
        b[24..32].copy_from_slice(&self.prev.to_le_bytes());
        b[32..40].copy_from_slice(&self.txn_floor.to_le_bytes());
        let crc = crc32c::crc32c(&b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// None for a header that is not whole (wrong magic, version or CRC).
    pub fn decode(b: &[u8]) -> Option<BlockHeader> {
        let b = b.get(..BLOCK_HEADER_BYTES as usize)?;
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if u32_at(0) != BLOCK_MAGIC || u32_at(4) != VERSION || u32_at(60) != crc32c::crc32c(&b[..60]) {
            return None;
        }
        Some(BlockHeader {
            table: u32_at(8),
            region: u32_at(12),
            seq: u32_at(16),
            prev: u64_at(24),
            txn_floor: u64_at(32),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_keeps_each_lctt_entry_in_its_own_media_block_and_the_halloc_area_aligned() {
        let l = Layout { workers: 3, tables: 2, checkpoint_keys: 10 };
        assert_eq!(l.lctt(0), RegionOffset(256));
        assert_eq!(l.lctt(2), RegionOffset(768));
        assert_eq!(l.checkpoint_selector(), RegionOffset(1024));
        assert_eq!(l.last_block(0, 0), RegionOffset(1280));
        assert_eq!(l.last_block(1, 2), RegionOffset(1280 + 8 * 5));
        assert_eq!(CHECKPOINT_HEADER_BYTES, 768);
        assert_eq!(l.checkpoint_half_bytes(), 1280, "768 + 320, in media blocks");
        assert_eq!(l.checkpoint_half(0), RegionOffset(1536));
        assert_eq!(l.checkpoint_half(1), RegionOffset(2816));
        assert_eq!(l.halloc_base(), RegionOffset(4096));
        assert_eq!(slot_bytes(1000), 1024);
        assert_eq!(slot_bytes(1), 32);
        assert_eq!(block_bytes(8), 64 + 256 + 2048 * 32);
        assert_eq!(slot_offset(8, 1), 64 + 256 + 32);
    }

    #[test]
    fn block_headers_round_trip_and_a_damaged_one_reads_as_none() {
        let h = BlockHeader { table: 1, region: 2, seq: 7, prev: 99, txn_floor: 1234 };
        let mut b = h.encode();
        assert_eq!(BlockHeader::decode(&b), Some(h));
        b[17] ^= 1;
        assert_eq!(BlockHeader::decode(&b), None, "a flipped bit fails the CRC");
        assert_eq!(BlockHeader::decode(&[0u8; 64]), None);
    }
}
