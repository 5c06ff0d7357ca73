//! [`DramTranslation`]: the pure in-memory translation of chronicledb-pmem.txt
//! section 5.3 (Fig. 7 "DRAM"): one flat array per node kind, slot `i` = the
//! packed [`PhysAddr`] of node `i` (0 = none). Nothing is durable, so
//! recovery is a full scan of the block file.

use std::time::Instant;

use super::{check_order, kind_index, RecoveryReport, Translation, TranslationKind, TranslationStats};
use crate::block_store::{BlockStore, PhysAddr};
use crate::ids::{EventError, NodeId, NodeKind};

/// Flat DRAM arrays, grown on demand up to their capacities.
pub struct DramTranslation {
    slots: [Vec<u64>; 2],
    capacity: [u64; 2],
    last_addr: Option<PhysAddr>,
    stats: TranslationStats,
}

impl DramTranslation {
    /// Empty arrays for node numbers below `leaf_capacity` and `index_capacity`.
    pub fn new(leaf_capacity: u64, index_capacity: u64) -> DramTranslation {
        DramTranslation {
            slots: [Vec::new(), Vec::new()],
            capacity: [leaf_capacity, index_capacity],
            last_addr: None,
            stats: TranslationStats::default(),
        }
    }

    /// Rebuilds the arrays from a full scan of `store` (the latest record of
    /// each node in file order wins).
    pub fn recover(
        store: &BlockStore,
        leaf_capacity: u64,
        index_capacity: u64,
    ) -> Result<(DramTranslation, RecoveryReport), EventError> {
        let started = Instant::now();
        let mut t = DramTranslation::new(leaf_capacity, index_capacity);
        let mut scan = store.scan();
        for rec in scan.by_ref() {
            let rec = rec?;
            // A node beyond the capacity was refused by `set`: it never had a translation.
            if rec.node_id.number < t.capacity(rec.node_id.kind) {
                t.put(rec.node_id, rec.addr)?;
            }
        }
        let records = scan.records();
        let report = RecoveryReport {
            kind: TranslationKind::Dram,
            records_scanned: records,
            translations_restored: records,
            blocks_read: scan.blocks_read(),
            replay_from: PhysAddr::block_start(0),
            duration: started.elapsed(),
        };
        Ok((t, report))
    }

    fn put(&mut self, id: NodeId, addr: PhysAddr) -> Result<(), EventError> {
        let k = kind_index(id.kind);
        if id.number >= self.capacity[k] {
            return Err(EventError::Full {
                what: "DRAM translation",
                detail: format!("{id} is beyond the capacity of {} {:?} nodes", self.capacity[k], id.kind),
            });
        }
        let n = id.number as usize;
        let slots = &mut self.slots[k];
        if slots.len() <= n {
            slots.resize(n + 1, 0);
        }
        slots[n] = addr.to_u64();
        self.last_addr = Some(addr);
        Ok(())
    }

    /// Capacity (node numbers) of a kind's array.
    pub fn capacity(&self, kind: NodeKind) -> u64 {
        self.capacity[kind_index(kind)]
    }
}

impl Translation for DramTranslation {
    fn kind(&self) -> TranslationKind {
        TranslationKind::Dram
    }

    fn set(&mut self, _store: &mut BlockStore, id: NodeId, addr: PhysAddr) -> Result<(), EventError> {
        check_order(self.last_addr, id, addr)?;
        self.put(id, addr)?;
        self.stats.sets += 1;
        Ok(())
    }

    fn get(&self, _store: &BlockStore, id: NodeId) -> Result<Option<PhysAddr>, EventError> {
        let slots = &self.slots[kind_index(id.kind)];
        let raw = usize::try_from(id.number).ok().and_then(|n| slots.get(n)).copied().unwrap_or(0);
        Ok(PhysAddr::from_u64(raw))
    }

    fn sync(&mut self, store: &mut BlockStore) -> Result<(), EventError> {
        store.sync()
    }

    fn stats(&self) -> TranslationStats {
        self.stats
    }
}
