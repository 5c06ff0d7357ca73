//! [`PmemArrayTranslation`]: address translation as a flat PMem array
//! (chronicledb-pmem.txt section 4.2, Fig. 4 C.b): slot `i` of a kind's
//! array holds the packed [`PhysAddr`] of node `i` (0 = none; a valid
//! address never packs to 0). Layout in `docs/format/events-translation.md`.
//!
//! Batching (the paper's "we batch updates to match the 256-byte write
//! granularity"): `set` keeps the update in a small DRAM pending list and
//! writes nothing to PMem; once [`PMEM_BATCH_SLOTS`] (32) pending updates
//! point at durable records (before [`BlockStore::durable_end`]), they are
//! stored into their slots and persisted with one fence, together with the
//! header's `replay_from` word (the address of the batch's first update).
//! With sequential ids a batch is exactly one 256-byte group of slots.
//! [`Translation::sync`] syncs the store and persists every pending update.
//!
//! Why slots are written only at batch time, and only for durable records:
//! a slot stored early could reach PMem by cache eviction and, after a
//! crash, point at a record the SSD lost, with nothing telling recovery
//! which slot that was. This way a slot on PMem always points at a durable
//! record, and no fsync is ever issued by the translation itself.
//!
//! Recovery: every update not persisted has an address at or after
//! `replay_from` (updates come in append order, and `replay_from` is never
//! past the oldest pending one), so scanning the block file from there
//! restores them. With the store synced, that is at most 31 translations
//! beyond the last batch ("at most 32 translations need to be restored").

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use strata_pmem::{Region, RegionOffset, CACHE_LINE_BYTES, MEDIA_BLOCK_BYTES};

use super::{check_order, kind_index, RecoveryReport, Translation, TranslationKind, TranslationStats};
use crate::block_store::{BlockStore, PhysAddr};
use crate::ids::{EventError, NodeId, NodeKind};

/// `STEVTRPM` read as a little-endian u64.
pub const PMEM_TRANSLATION_MAGIC: u64 = u64::from_le_bytes(*b"STEVTRPM");
pub const PMEM_TRANSLATION_VERSION: u32 = 1;
/// The header occupies one 256-byte media block; the leaf slots follow.
pub const PMEM_HEADER_BYTES: u64 = 256;
pub const PMEM_SLOT_BYTES: u64 = 8;
/// Updates persisted together: one 256-byte media block of slots.
pub const PMEM_BATCH_SLOTS: usize = (MEDIA_BLOCK_BYTES / PMEM_SLOT_BYTES) as usize;
pub const PMEM_HDR_OFFSET_MAGIC: u64 = 0;
pub const PMEM_HDR_OFFSET_VERSION: u64 = 8;
pub const PMEM_HDR_OFFSET_GROUP_SLOTS: u64 = 12;
pub const PMEM_HDR_OFFSET_LEAF_CAPACITY: u64 = 16;
pub const PMEM_HDR_OFFSET_INDEX_CAPACITY: u64 = 24;
pub const PMEM_HDR_OFFSET_HEADER_CRC: u64 = 32;
/// The header CRC covers header bytes `0..32`.
pub const PMEM_HEADER_CRC_COVERED_BYTES: u64 = 32;
/// Own cache line: rewritten with every batch.
pub const PMEM_HDR_OFFSET_REPLAY_FROM: u64 = 64;
/// Pending updates that lookups scan; beyond this they use a hash index.
const PENDING_SCAN_MAX: usize = 64;

/// The flat PMem translation arrays in an area of a region.
pub struct PmemArrayTranslation {
    region: Arc<Region>,
    base: u64,
    capacity: [u64; 2],
    /// Region offsets of the two arrays' first slots.
    slots_base: [u64; 2],
    /// Updates not yet on PMem, in set (= append) order.
    pending: Vec<(NodeId, PhysAddr)>,
    /// The latest pending address of each node with one; kept only while
    /// `pending` is longer than [`PENDING_SCAN_MAX`] (lookups scan it otherwise).
    pending_index: Option<HashMap<NodeId, PhysAddr>>,
    last_addr: Option<PhysAddr>,
    stats: TranslationStats,
}

/// Bugs the crash test must catch (planted by its tests only; compiled for
/// tests and the `crashtest` feature, see `crate::crashtest_hooks`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(not(any(test, feature = "crashtest")), allow(dead_code))]
pub enum PlantedBug {
    None,
    /// Persist slots of records the SSD may still lose.
    IgnoreDurableEnd,
    /// Set `replay_from` to the batch's last update instead of its first.
    ReplayFromLast,
}

#[cfg(any(test, feature = "crashtest"))]
thread_local! {
    pub static PLANTED_BUG: std::cell::Cell<PlantedBug> = const { std::cell::Cell::new(PlantedBug::None) };
}

fn planted(bug: PlantedBug) -> bool {
    #[cfg(any(test, feature = "crashtest"))]
    return PLANTED_BUG.with(|b| b.get()) == bug;
    #[cfg(not(any(test, feature = "crashtest")))]
    {
        let _ = bug;
        false
    }
}

fn align_media(bytes: u64) -> u64 {
    bytes.div_ceil(MEDIA_BLOCK_BYTES) * MEDIA_BLOCK_BYTES
}

fn area_error(what: String) -> EventError {
    EventError::invalid(format!("PMem translation area: {what}"))
}

impl PmemArrayTranslation {
    /// Bytes an area needs for the given capacities (node numbers per kind).
    pub fn footprint_bytes(leaf_capacity: u64, index_capacity: u64) -> Option<u64> {
        let leaf = align_media(leaf_capacity.checked_mul(PMEM_SLOT_BYTES)?);
        let index = align_media(index_capacity.checked_mul(PMEM_SLOT_BYTES)?);
        PMEM_HEADER_BYTES.checked_add(leaf)?.checked_add(index)
    }

    fn layout(
        region: &Region,
        base: RegionOffset,
        area_bytes: u64,
        capacity: [u64; 2],
    ) -> Result<[u64; 2], EventError> {
        if !base.is_aligned(MEDIA_BLOCK_BYTES) {
            return Err(area_error(format!("base {base} is not aligned to {MEDIA_BLOCK_BYTES} bytes")));
        }
        if !region.contains(base, area_bytes) {
            return Err(area_error(format!("{area_bytes} bytes at {base} exceed the region")));
        }
        let needed = PmemArrayTranslation::footprint_bytes(capacity[0], capacity[1])
            .ok_or_else(|| area_error("capacities overflow".into()))?;
        if needed > area_bytes {
            return Err(EventError::Full {
                what: "PMem translation area",
                detail: format!("capacities {capacity:?} need {needed} bytes, the area has {area_bytes}"),
            });
        }
        let leaf = base.0 + PMEM_HEADER_BYTES;
        Ok([leaf, leaf + align_media(capacity[0] * PMEM_SLOT_BYTES)])
    }

    fn header_bytes(capacity: [u64; 2]) -> Vec<u8> {
        let mut h = vec![0u8; (PMEM_HDR_OFFSET_HEADER_CRC + 4) as usize];
        h[0..8].copy_from_slice(&PMEM_TRANSLATION_MAGIC.to_le_bytes());
        h[8..12].copy_from_slice(&PMEM_TRANSLATION_VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&(PMEM_BATCH_SLOTS as u32).to_le_bytes());
        h[16..24].copy_from_slice(&capacity[0].to_le_bytes());
        h[24..32].copy_from_slice(&capacity[1].to_le_bytes());
        let crc = crc32c::crc32c(&h[..PMEM_HEADER_CRC_COVERED_BYTES as usize]);
        h[32..36].copy_from_slice(&crc.to_le_bytes());
        h
    }

    /// Formats the area `[base, base + area_bytes)`: zeroes every slot, writes
    /// the header and persists its magic last (a crash before that leaves no
    /// array, and nothing was acknowledged on it).
    pub fn create(
        region: Arc<Region>,
        base: RegionOffset,
        area_bytes: u64,
        leaf_capacity: u64,
        index_capacity: u64,
    ) -> Result<PmemArrayTranslation, EventError> {
        let capacity = [leaf_capacity, index_capacity];
        let slots_base = PmemArrayTranslation::layout(&region, base, area_bytes, capacity)?;
        let footprint =
            PmemArrayTranslation::footprint_bytes(leaf_capacity, index_capacity).expect("checked");
        let zeros = vec![0u8; 64 * 1024];
        let mut at = 0;
        while at < footprint {
            let n = (footprint - at).min(zeros.len() as u64);
            region.write(base + at, &zeros[..n as usize]);
            at += n;
        }
        region.persist(base, footprint);
        let header = PmemArrayTranslation::header_bytes(capacity);
        region.write_persist(base + PMEM_HDR_OFFSET_VERSION, &header[8..]);
        region.store_u64_persist(base + PMEM_HDR_OFFSET_MAGIC, PMEM_TRANSLATION_MAGIC);
        Ok(PmemArrayTranslation::with_layout(region, base.0, capacity, slots_base))
    }

    fn with_layout(region: Arc<Region>, base: u64, capacity: [u64; 2], slots_base: [u64; 2]) -> Self {
        PmemArrayTranslation {
            region,
            base,
            capacity,
            slots_base,
            pending: Vec::new(),
            pending_index: None,
            last_addr: None,
            stats: TranslationStats::default(),
        }
    }

    /// Opens the array formatted in the area and restores the translations
    /// not yet persisted from the block file, starting at the header's
    /// `replay_from`; persists what it restored.
    pub fn recover(
        region: Arc<Region>,
        base: RegionOffset,
        area_bytes: u64,
        store: &BlockStore,
    ) -> Result<(PmemArrayTranslation, RecoveryReport), EventError> {
        let started = Instant::now();
        if !base.is_aligned(MEDIA_BLOCK_BYTES) || !region.contains(base, PMEM_HEADER_BYTES) {
            return Err(area_error(format!("no room for a header at {base}")));
        }
        let corrupt =
            |what: String| EventError::corruption(format!("PMem translation header at {base}"), what);
        if region.load_u64(base + PMEM_HDR_OFFSET_MAGIC) != PMEM_TRANSLATION_MAGIC {
            return Err(corrupt("no magic: the area was never formatted".into()));
        }
        let h = region.read_vec(base, (PMEM_HDR_OFFSET_HEADER_CRC + 4) as usize);
        let u32_at = |at: usize| u32::from_le_bytes(h[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(h[at..at + 8].try_into().expect("8 bytes"));
        if crc32c::crc32c(&h[..PMEM_HEADER_CRC_COVERED_BYTES as usize]) != u32_at(32) {
            return Err(corrupt("header CRC mismatch".into()));
        }
        if u32_at(8) != PMEM_TRANSLATION_VERSION {
            return Err(corrupt(format!("unknown version {}", u32_at(8))));
        }
        if u32_at(12) as usize != PMEM_BATCH_SLOTS {
            return Err(corrupt(format!("group of {} slots, expected {PMEM_BATCH_SLOTS}", u32_at(12))));
        }
        let capacity = [u64_at(16), u64_at(24)];
        let slots_base = PmemArrayTranslation::layout(&region, base, area_bytes, capacity)
            .map_err(|e| corrupt(format!("capacities {capacity:?} do not fit the area: {e}")))?;
        let replay_raw = region.load_u64(base + PMEM_HDR_OFFSET_REPLAY_FROM);
        let replay_from = match replay_raw {
            0 => PhysAddr::block_start(0),
            raw => PhysAddr::from_u64(raw)
                .ok_or_else(|| corrupt(format!("replay_from {raw:#x} is no address")))?,
        };
        let mut t = PmemArrayTranslation::with_layout(region, base.0, capacity, slots_base);
        let mut lines = Vec::new();
        let mut restored = 0;
        let mut scan = store.scan_from(replay_from);
        for rec in scan.by_ref() {
            let rec = rec?;
            // A node beyond the capacity was refused by `set`: it never had a translation.
            let Some(offset) = t.slot_offset(rec.node_id) else {
                continue;
            };
            if t.region.load_u64(offset) != rec.addr.to_u64() {
                t.region.store_u64(offset, rec.addr.to_u64());
                lines.push(offset.0 / CACHE_LINE_BYTES);
                restored += 1;
            }
            t.last_addr = Some(rec.addr);
        }
        t.flush_lines(lines);
        let report = RecoveryReport {
            kind: TranslationKind::PmemArray,
            records_scanned: scan.records(),
            translations_restored: restored,
            blocks_read: scan.blocks_read(),
            replay_from,
            duration: started.elapsed(),
        };
        Ok((t, report))
    }

    /// Capacity (node numbers) of a kind's array.
    pub fn capacity(&self, kind: NodeKind) -> u64 {
        self.capacity[kind_index(kind)]
    }

    /// The area's first byte.
    pub fn base(&self) -> RegionOffset {
        RegionOffset(self.base)
    }

    fn slot_offset(&self, id: NodeId) -> Option<RegionOffset> {
        let k = kind_index(id.kind);
        (id.number < self.capacity[k]).then(|| RegionOffset(self.slots_base[k] + id.number * PMEM_SLOT_BYTES))
    }

    /// Writes back the given cache lines (coalescing neighbours) and fences.
    fn flush_lines(&mut self, mut lines: Vec<u64>) {
        if lines.is_empty() {
            return;
        }
        lines.sort_unstable();
        lines.dedup();
        let mut run_start = lines[0];
        let mut run_end = lines[0] + 1;
        for &line in &lines[1..] {
            if line == run_end {
                run_end += 1;
                continue;
            }
            self.region
                .flush(RegionOffset(run_start * CACHE_LINE_BYTES), (run_end - run_start) * CACHE_LINE_BYTES);
            run_start = line;
            run_end = line + 1;
        }
        self.region
            .flush(RegionOffset(run_start * CACHE_LINE_BYTES), (run_end - run_start) * CACHE_LINE_BYTES);
        self.region.fence();
        self.stats.lines_flushed += lines.len() as u64;
        self.stats.fences += 1;
    }

    /// Persists the pending updates whose records are before `durable_end`
    /// (a prefix: pending is in address order), if there are at least
    /// `min_count` of them.
    fn persist_durable(&mut self, durable_end: PhysAddr, min_count: usize) {
        let count = if planted(PlantedBug::IgnoreDurableEnd) {
            self.pending.len()
        } else {
            self.pending.partition_point(|(_, addr)| *addr < durable_end)
        };
        if count == 0 || count < min_count {
            return;
        }
        let first =
            if planted(PlantedBug::ReplayFromLast) { self.pending[count - 1].1 } else { self.pending[0].1 };
        let mut lines = Vec::with_capacity(count / 8 + 2);
        for &(id, addr) in &self.pending[..count] {
            let offset = self.slot_offset(id).expect("capacity checked by set");
            self.region.store_u64(offset, addr.to_u64());
            lines.push(offset.0 / CACHE_LINE_BYTES);
        }
        // Never past the oldest update not yet persisted (see module comment).
        let replay_from = RegionOffset(self.base + PMEM_HDR_OFFSET_REPLAY_FROM);
        self.region.store_u64(replay_from, first.to_u64());
        lines.push(replay_from.0 / CACHE_LINE_BYTES);
        self.flush_lines(lines);
        self.stats.batches_persisted += 1;
        self.stats.slots_persisted += count as u64;
        self.pending.drain(..count);
        self.pending_index = None;
        self.index_pending_if_long();
    }

    /// Builds the hash index of `pending` once it outgrows a scan.
    fn index_pending_if_long(&mut self) {
        if self.pending.len() > PENDING_SCAN_MAX && self.pending_index.is_none() {
            self.pending_index = Some(self.pending.iter().copied().collect());
        }
    }

    /// The latest pending address of `id`, if any.
    fn pending_addr(&self, id: NodeId) -> Option<PhysAddr> {
        match &self.pending_index {
            Some(index) => index.get(&id).copied(),
            None => self.pending.iter().rev().find(|(pid, _)| *pid == id).map(|(_, addr)| *addr),
        }
    }
}

impl Translation for PmemArrayTranslation {
    fn kind(&self) -> TranslationKind {
        TranslationKind::PmemArray
    }

    fn set(&mut self, store: &mut BlockStore, id: NodeId, addr: PhysAddr) -> Result<(), EventError> {
        check_order(self.last_addr, id, addr)?;
        if self.slot_offset(id).is_none() {
            return Err(EventError::Full {
                what: "PMem translation array",
                detail: format!(
                    "{id} is beyond the capacity of {} {:?} nodes",
                    self.capacity(id.kind),
                    id.kind
                ),
            });
        }
        self.pending.push((id, addr));
        match &mut self.pending_index {
            Some(index) => {
                index.insert(id, addr);
            }
            None => self.index_pending_if_long(),
        }
        self.last_addr = Some(addr);
        self.stats.sets += 1;
        if self.pending.len() >= PMEM_BATCH_SLOTS {
            self.persist_durable(store.durable_end(), PMEM_BATCH_SLOTS);
        }
        Ok(())
    }

    fn get(&self, _store: &BlockStore, id: NodeId) -> Result<Option<PhysAddr>, EventError> {
        if let Some(addr) = self.pending_addr(id) {
            return Ok(Some(addr));
        }
        let Some(offset) = self.slot_offset(id) else {
            return Ok(None);
        };
        match self.region.load_u64(offset) {
            0 => Ok(None),
            raw => PhysAddr::from_u64(raw).map(Some).ok_or_else(|| {
                EventError::corruption(
                    format!("PMem translation slot of {id} at {offset}"),
                    format!("{raw:#x}"),
                )
            }),
        }
    }

    fn sync(&mut self, store: &mut BlockStore) -> Result<(), EventError> {
        store.sync()?;
        self.persist_durable(store.durable_end(), 1);
        Ok(())
    }

    fn stats(&self) -> TranslationStats {
        TranslationStats { pending: self.pending.len() as u64, ..self.stats }
    }
}
