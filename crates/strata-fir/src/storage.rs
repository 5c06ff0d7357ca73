//! Time-ordered storage (fir.txt 4.1): each table is split into one region
//! per worker; a region is a chain of PMem blocks (Halloc objects of the
//! table's pool), appended to only by its worker, so its versions lie in
//! txnId order. Each block has a DRAM tile of headers ([`crate::tile`]).
//! A version's content is persisted where it lies when it is written
//! (Algorithm 1: copy, flush, fence); nothing else is logged.
//!
//! A slot is a version iff its txnId is at least the block's floor and at
//! least the previous version's in the region (0 marks a slot an aborted
//! or discarded transaction left: a hole). Recovery keeps the versions at
//! or below the region's LCTT entry.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use strata_pmem::halloc::{Halloc, HallocConfig, ObjectId, PoolId, PoolSpec};
use strata_pmem::{Region, RegionOffset};
use strata_txn::TableSchema;

use crate::addr::VersionAddr;
use crate::error::FirError;
use crate::layout::{
    block_bytes, slot_bytes, slot_offset, BlockHeader, Layout, BLOCK_HEADER_BYTES, FLAG_TOMBSTONE,
    SLOTS_PER_BLOCK, SLOT_HEADER_BYTES, UPDATE_MAP_BYTES,
};
use crate::tile::{Tile, TupleHeader};

/// One block of a chain, with its tile (allocated on first touch: after
/// recovery, only blocks holding a version somebody reads get one).
pub(crate) struct Block {
    pub id: ObjectId,
    pub offset: RegionOffset,
    pub tile: OnceLock<Tile>,
}

impl Block {
    fn new(id: ObjectId, offset: RegionOffset) -> Block {
        Block { id, offset, tile: OnceLock::new() }
    }

    fn tile(&self) -> &Tile {
        self.tile.get_or_init(Tile::default)
    }
}

/// One (table, region): its blocks in chain order, each set once (by the
/// region's worker, or recovery) and read without a lock, as many as the
/// table's pool holds; and where the next version goes.
pub(crate) struct Chain {
    pub blocks: Box<[OnceLock<Block>]>,
    /// Blocks set (a prefix of `blocks`).
    len: AtomicUsize,
    /// Slots used in the last block; held by whoever appends.
    next_slot: Mutex<usize>,
}

impl Chain {
    fn new(capacity: usize) -> Chain {
        Chain {
            blocks: (0..capacity).map(|_| OnceLock::new()).collect(),
            len: AtomicUsize::new(0),
            next_slot: Mutex::new(0),
        }
    }

    /// Blocks in the chain.
    pub fn len(&self) -> usize {
        self.len.load(Acquire)
    }

    fn block(&self, n: usize) -> &Block {
        self.blocks[n].get().expect("a block of the chain")
    }

    /// Appends a block (one appender at a time: the caller holds `next_slot`).
    fn push(&self, block: Block) -> Result<(), FirError> {
        let n = self.len.load(Acquire);
        let cell =
            self.blocks.get(n).ok_or_else(|| FirError::Format(format!("a chain of more than {n} blocks")))?;
        assert!(cell.set(block).is_ok(), "block {n} of a chain set twice");
        self.len.store(n + 1, Release);
        Ok(())
    }
}

/// A slot as recovery reads it (whether it is a delete is read with its
/// header, on first use).
pub(crate) struct SlotContent {
    pub txn: u64,
    pub key: u64,
}

pub(crate) struct Storage {
    pub region: Arc<Region>,
    pub halloc: Halloc,
    pub layout: Layout,
    pub row_bytes: Vec<usize>,
    /// `[table][region]`.
    pub chains: Vec<Vec<Chain>>,
}

impl Storage {
    /// The Halloc configuration: one pool of blocks per table.
    pub fn halloc_config(schemas: &[TableSchema], options: &crate::db::FirOptions) -> HallocConfig {
        let pools = schemas
            .iter()
            .enumerate()
            .map(|(t, s)| PoolSpec {
                object_size_bytes: block_bytes(s.row_bytes),
                object_count: options.blocks_of(t),
            })
            .collect();
        HallocConfig::new(pools, 64, 0)
    }

    pub fn new(region: Arc<Region>, halloc: Halloc, layout: Layout, schemas: &[TableSchema]) -> Storage {
        let chains = (0..layout.tables)
            .map(|t| {
                let capacity = halloc.object_count(PoolId(t)) as usize;
                (0..layout.workers).map(|_| Chain::new(capacity)).collect()
            })
            .collect();
        Storage { region, halloc, layout, row_bytes: schemas.iter().map(|s| s.row_bytes).collect(), chains }
    }

    fn slot_at(&self, table: usize, block: &Block, slot: usize) -> RegionOffset {
        block.offset + slot_offset(self.row_bytes[table], slot)
    }

    /// Whether `addr` names a slot of a block of `table`'s region.
    pub fn holds(&self, table: usize, addr: VersionAddr) -> bool {
        self.chains.get(table).and_then(|c| c.get(addr.region as usize)).is_some_and(|chain| {
            (addr.block as usize) < chain.len() && (addr.slot as usize) < SLOTS_PER_BLOCK
        })
    }

    /// Where a version's slot lies, and its header.
    pub fn locate(&self, table: usize, addr: VersionAddr) -> (RegionOffset, &Tile) {
        let block = self.chains[table][addr.region as usize].block(addr.block as usize);
        (self.slot_at(table, block, addr.slot as usize), block.tile())
    }

    /// Runs `f` on a version's header. A header never set (`begin_ts` 0)
    /// belongs to a version recovery put in the index without touching its
    /// tile (fir.txt 4.4: tiles rebuilt lazily): it is loaded from the slot
    /// first, as a committed version with nothing older in DRAM.
    pub fn with_header<R>(&self, table: usize, addr: VersionAddr, f: impl FnOnce(&TupleHeader) -> R) -> R {
        let (at, tile) = self.locate(table, addr);
        let h = &tile.headers[addr.slot as usize];
        if h.begin_ts.load(Relaxed) == 0 {
            let (txn, tombstone) = self.slot_txn(at);
            h.end_ts.store(crate::tile::OPEN, Relaxed);
            h.read_ts.store(txn, Relaxed);
            h.prev.store(0, Relaxed);
            h.next.store(0, Relaxed);
            h.tombstone.store(u64::from(tombstone), Relaxed);
            h.begin_ts.store(txn, Relaxed);
        }
        f(h)
    }

    /// A slot's txnId and whether it is a delete, as its bytes say.
    fn slot_txn(&self, at: RegionOffset) -> (u64, bool) {
        (self.region.load_u64(at), self.region.load_u64(at + 16) & FLAG_TOMBSTONE != 0)
    }

    /// A version's `(begin_ts, tombstone, prev)` read without its key's
    /// latch (a checkpoint's resolution): a header never set is read from
    /// the slot and left unset (its latch holder sets it).
    pub fn peek_header(&self, table: usize, addr: VersionAddr) -> (u64, bool, Option<VersionAddr>) {
        let (at, tile) = self.locate(table, addr);
        let h = &tile.headers[addr.slot as usize];
        let begin = h.begin_ts.load(Relaxed);
        if begin == 0 {
            let (txn, tombstone) = self.slot_txn(at);
            return (txn, tombstone, None);
        }
        (begin, h.tombstone.load(Relaxed) != 0, VersionAddr::unlink(h.prev.load(Relaxed)))
    }

    /// Sets a new version's header (no slot load: [`Self::with_header`]'s
    /// lazy path is for versions recovery found, not ones just written).
    pub fn init_header(&self, table: usize, addr: VersionAddr, f: impl FnOnce(&TupleHeader)) {
        let (_, tile) = self.locate(table, addr);
        f(&tile.headers[addr.slot as usize]);
    }

    /// A version's row (its content past the slot header).
    pub fn read_row(&self, table: usize, addr: VersionAddr) -> Vec<u8> {
        let (at, _) = self.locate(table, addr);
        self.region.read_vec(at + SLOT_HEADER_BYTES, self.row_bytes[table])
    }

    /// Algorithm 1: appends a version to `region`'s chain of `table` and
    /// flushes its lines; the caller fences before the transaction's
    /// commit signal (one fence orders every line this thread flushed). A
    /// new block's floor is `txn`. `durable` false only under the planted
    /// bug that persists the slot after its LCTT entry.
    pub fn append(
        &self,
        table: usize,
        region: usize,
        txn: u64,
        key: u64,
        row: Option<&[u8]>,
        durable: bool,
    ) -> Result<VersionAddr, FirError> {
        let chain = &self.chains[table][region];
        let mut next_slot = chain.next_slot.lock();
        if chain.len() == 0 || *next_slot == SLOTS_PER_BLOCK {
            self.add_block(table, region, chain, txn)?;
            *next_slot = 0;
        }
        let slot = *next_slot;
        let block_no = chain.len() - 1;
        let at = self.slot_at(table, chain.block(block_no), slot);
        let row_bytes = self.row_bytes[table];
        let mut head = [0u8; SLOT_HEADER_BYTES as usize];
        head[..8].copy_from_slice(&txn.to_le_bytes());
        head[8..16].copy_from_slice(&key.to_le_bytes());
        head[16..24].copy_from_slice(&(if row.is_none() { FLAG_TOMBSTONE } else { 0 }).to_le_bytes());
        self.region.write(at, &head);
        let content = at + SLOT_HEADER_BYTES;
        match row {
            Some(r) => self.region.write(content, r),
            // A delete's row is zeros (the slot may be a reused block's).
            None => self.region.write(content, &vec![0u8; row_bytes]),
        }
        let padding = slot_bytes(row_bytes) - SLOT_HEADER_BYTES - row_bytes as u64;
        if padding > 0 {
            self.region.write(content + row_bytes as u64, &[0u8; 8][..padding as usize]);
        }
        if durable {
            self.region.flush(at, slot_bytes(row_bytes));
        }
        *next_slot += 1;
        Ok(VersionAddr { region: region as u16, block: block_no as u32, slot: slot as u16 })
    }

    /// Takes a block from the table's pool, persists its header and an
    /// empty update map, links it as the region's last block, then commits
    /// the object (Halloc's protocol: contents, reference, commit).
    /// The caller holds the chain's `next_slot`.
    fn add_block(&self, table: usize, region: usize, chain: &Chain, floor: u64) -> Result<(), FirError> {
        let id = self.halloc.get(PoolId(table as u32))?;
        let offset = self.halloc.object_offset(id);
        let header = BlockHeader {
            table: table as u32,
            region: region as u32,
            seq: chain.len() as u32,
            prev: chain.len().checked_sub(1).map_or(0, |n| chain.block(n).id.to_raw() + 1),
            txn_floor: floor,
        };
        self.region.write(offset, &header.encode());
        self.region.write(offset + BLOCK_HEADER_BYTES, &[0u8; UPDATE_MAP_BYTES as usize]);
        self.region.persist(offset, BLOCK_HEADER_BYTES + UPDATE_MAP_BYTES);
        self.region.store_u64_persist(self.layout.last_block(table as u32, region as u32), id.to_raw() + 1);
        self.halloc.commit(id);
        chain.push(Block::new(id, offset))
    }

    /// Flushes a version's slot (the planted bug's late persist).
    pub fn flush_slot(&self, table: usize, addr: VersionAddr) {
        let (at, _) = self.locate(table, addr);
        self.region.flush(at, slot_bytes(self.row_bytes[table]));
    }

    /// Turns slots into holes (txnId 0), flushed; the caller fences.
    pub fn clear_slot(&self, table: usize, addr: VersionAddr) {
        let (at, _) = self.locate(table, addr);
        self.region.store_u64(at, 0);
        self.region.flush(at, 8);
    }

    /// Sets the update-map bit of an obsolete version, flushed; fenced by
    /// the next fence (the bit is a hint for garbage collection: recovery
    /// keeps each key's newest version whatever the bits say).
    pub fn mark_obsolete(&self, table: usize, addr: VersionAddr) {
        let block = self.chains[table][addr.region as usize].block(addr.block as usize);
        let word = block.offset + BLOCK_HEADER_BYTES + 8 * (addr.slot as u64 / 64);
        let old = self.region.load_u64(word);
        self.region.store_u64(word, old | 1 << (addr.slot % 64));
        self.region.flush(word, 8);
    }

    /// Recovery of one (table, region): the chain from its last block back
    /// (a last block Halloc did not commit is unlinked: it holds no
    /// version), then every slot of it in order; and the largest block
    /// floor (new txnIds must exceed it, or their versions in that block
    /// would read as leftovers).
    /// Only slots above `after` (a checkpoint's `CT`) are returned, and a
    /// block is not read at all when the next one's floor is at or below
    /// `after` (a region's txnIds only grow, so every slot of it is too).
    pub fn recover_chain(
        &self,
        table: usize,
        region: usize,
        after: u64,
    ) -> Result<(Vec<(VersionAddr, SlotContent)>, u64), FirError> {
        let dir = self.layout.last_block(table as u32, region as u32);
        let mut ids = Vec::new();
        let mut link = self.region.load_u64(dir);
        let mut headers = Vec::new();
        let pool = PoolId(table as u32);
        while let Some(raw) = link.checked_sub(1) {
            let id = self.halloc.object_id_from_raw(raw)?;
            if id.pool() != pool {
                return Err(bad(table, region, "a block of another table's pool"));
            }
            if ids.len() as u64 >= self.halloc.object_count(pool) {
                return Err(bad(table, region, "a chain longer than the pool (a cycle)"));
            }
            if !self.halloc.check(id) {
                if ids.is_empty() && headers.is_empty() {
                    // Linked, then the crash came before Halloc's commit.
                    let h = self
                        .read_header(id)
                        .ok_or_else(|| bad(table, region, "an uncommitted last block"))?;
                    self.region.store_u64_persist(dir, h.prev);
                    link = h.prev;
                    continue;
                }
                return Err(bad(table, region, "an uncommitted block inside the chain"));
            }
            let h = self.read_header(id).ok_or_else(|| bad(table, region, "a damaged block header"))?;
            if h.table as usize != table || h.region as usize != region {
                return Err(bad(table, region, "a block of another region in the chain"));
            }
            ids.push(id);
            headers.push(h);
            link = h.prev;
        }
        ids.reverse();
        headers.reverse();
        let chain = &self.chains[table][region];
        let mut next_slot = chain.next_slot.lock();
        let mut out = Vec::new();
        let mut last_txn = 0u64;
        for (n, (id, h)) in ids.iter().zip(&headers).enumerate() {
            if h.seq as usize != n {
                return Err(bad(table, region, "a chain out of sequence"));
            }
            let block = Block::new(*id, self.halloc.object_offset(*id));
            *next_slot = 0;
            if headers.get(n + 1).is_some_and(|next| next.txn_floor <= after) {
                chain.push(block)?;
                continue;
            }
            for slot in 0..SLOTS_PER_BLOCK {
                let at = self.slot_at(table, &block, slot);
                let txn = self.region.load_u64(at);
                if txn != 0 && txn >= h.txn_floor && txn >= last_txn {
                    last_txn = txn;
                    *next_slot = slot + 1;
                    if txn <= after {
                        continue;
                    }
                    let key = self.region.load_u64(at + 8);
                    let addr = VersionAddr { region: region as u16, block: n as u32, slot: slot as u16 };
                    out.push((addr, SlotContent { txn, key }));
                }
            }
            chain.push(block)?;
        }
        Ok((out, headers.iter().map(|h| h.txn_floor).max().unwrap_or(0)))
    }

    fn read_header(&self, id: ObjectId) -> Option<BlockHeader> {
        BlockHeader::decode(&self.region.read_vec(self.halloc.object_offset(id), BLOCK_HEADER_BYTES as usize))
    }
}

fn bad(table: usize, region: usize, what: &str) -> FirError {
    FirError::Format(format!("table {table} region {region}: {what}"))
}
