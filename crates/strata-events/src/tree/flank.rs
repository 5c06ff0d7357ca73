//! The right flank of the TAB+-tree (chronicledb-pmem.txt section 2.2: "this
//! leaf node and its parents are referred to as the right flank"): the
//! current node of every level, level 0 the leaf events are appended to.
//!
//! The node bytes always live in DRAM buffers (the in-process truth, read by
//! queries without touching PMem). With the flank on PMem
//! ([`super::flank_pmem::PmemFlankArea`]) every change is also written to the
//! level's slot: leaf appends in batches of `batch_events` (section 4.1
//! "batch flushing"), index entries and slot re-initializations at once.
//! `persisted[l]` counts the entries of level `l` already durable in the slot.

use crate::aggregate::Aggregates;
use crate::ids::{EventError, NodeId};
use crate::node::header::{header_count, NO_SIBLING, OFFSET_ID, OFFSET_NEXT};
use crate::node::{IndexLayout, IndexNode, LeafLayout, LeafNode, NODE_BYTES};

use super::flank_pmem::{FlankJournal, ParentAppend, PmemFlankArea};
use super::merge_record::MergeRecord;
#[cfg(any(test, feature = "crashtest"))]
pub(crate) use super::planted::{planted, PlantedBug};

/// The flank nodes, one per level, in DRAM, optionally mirrored on PMem.
pub(crate) struct Flank {
    leaf_layout: LeafLayout,
    index_layout: IndexLayout,
    levels: Vec<Vec<u8>>,
    persisted: Vec<usize>,
    pmem: Option<PmemFlankArea>,
    batch_events: usize,
}

impl Flank {
    /// A flank in DRAM (or, with `pmem`, mirrored on a formatted/opened area)
    /// from node buffers of levels `0..levels.len()`.
    pub(crate) fn new(
        leaf_layout: LeafLayout,
        index_layout: IndexLayout,
        levels: Vec<Vec<u8>>,
        pmem: Option<(PmemFlankArea, u32)>,
    ) -> Flank {
        let persisted = match &pmem {
            Some(_) => levels.iter().map(|b| header_count(b)).collect(),
            None => vec![0; levels.len()],
        };
        let (pmem, batch_events) = match pmem {
            Some((area, k)) => (Some(area), k.max(1) as usize),
            None => (None, usize::MAX),
        };
        Flank { leaf_layout, index_layout, levels, persisted, pmem, batch_events }
    }

    pub(crate) fn height(&self) -> usize {
        self.levels.len()
    }

    pub(crate) fn is_pmem(&self) -> bool {
        self.pmem.is_some()
    }

    #[cfg(test)]
    pub(crate) fn pmem_mut(&mut self) -> Option<&mut PmemFlankArea> {
        self.pmem.as_mut()
    }

    pub(crate) fn pmem(&self) -> Option<&PmemFlankArea> {
        self.pmem.as_ref()
    }

    pub(crate) fn bytes(&self, level: usize) -> &[u8] {
        &self.levels[level]
    }

    pub(crate) fn leaf(&self) -> LeafNode<&[u8]> {
        LeafNode::open(self.levels[0].as_slice(), &self.leaf_layout).expect("flank leaf is a leaf")
    }

    pub(crate) fn index(&self, level: usize) -> IndexNode<&[u8]> {
        IndexNode::open(self.levels[level].as_slice(), &self.index_layout)
            .expect("flank node is an index node")
    }

    pub(crate) fn id(&self, level: usize) -> NodeId {
        node_id(&self.levels[level])
    }

    pub(crate) fn count(&self, level: usize) -> usize {
        header_count(&self.levels[level])
    }

    /// Whether the node of `level` reached its fill limit.
    pub(crate) fn is_full(&self, level: usize) -> bool {
        if level == 0 {
            self.leaf().is_full()
        } else {
            self.index(level).is_full()
        }
    }

    /// Entries of `level` not yet durable (all of them with a DRAM flank).
    pub(crate) fn unpersisted(&self, level: usize) -> usize {
        #[cfg(any(test, feature = "crashtest"))]
        if planted(PlantedBug::AckBeforePersist) {
            return 0;
        }
        self.count(level) - self.persisted[level]
    }

    /// Appends an encoded event to the leaf; persists the batch when it
    /// reaches `batch_events` (PMem only). Returns whether the leaf reached
    /// its fill limit. `Full` if it was full already.
    pub(crate) fn append_event(&mut self, event: &[u8]) -> Result<bool, EventError> {
        let mut leaf = LeafNode::open(self.levels[0].as_mut_slice(), &self.leaf_layout)?;
        leaf.append(event)?;
        let full = leaf.is_full();
        if self.pmem.is_some() && self.unpersisted(0) >= self.batch_events {
            self.persist_pending(0)?;
        }
        Ok(full)
    }

    /// Inserts an encoded event at its timestamp position in the DRAM flank
    /// leaf (section 4.3 step "spare room"; DRAM flank only: an in-place
    /// shift on PMem is not crash-atomic). Returns whether the leaf reached
    /// its fill limit.
    pub(crate) fn insert_event_ordered(&mut self, event: &[u8]) -> Result<bool, EventError> {
        if self.pmem.is_some() {
            return Err(EventError::invalid("ordered inserts into the PMem flank leaf are not crash-atomic"));
        }
        let mut leaf = LeafNode::open(self.levels[0].as_mut_slice(), &self.leaf_layout)?;
        leaf.insert_ordered(event)?;
        Ok(leaf.is_full())
    }

    /// Rewrites entry `i` of the flank index node of `level` with `edit`;
    /// on PMem the entry is rewritten in place through the entry journal
    /// (its copy at the first unused entry position first), then the header.
    pub(crate) fn rewrite_entry(
        &mut self,
        level: usize,
        i: usize,
        edit: impl FnOnce(&mut IndexNode<&mut [u8]>) -> Result<(), EventError>,
    ) -> Result<(), EventError> {
        let (range, scratch) = {
            let mut node = IndexNode::open(self.levels[level].as_mut_slice(), &self.index_layout)?;
            edit(&mut node)?;
            let n = node.len();
            (node.entries_range(i, i + 1), node.entries_range(n, n + 1).start)
        };
        if let Some(area) = &mut self.pmem {
            area.rewrite_entry(level as u32, &self.levels[level], range, i as u32, scratch)?;
        }
        Ok(())
    }

    /// Records the merged out-of-order generation (PMem; no-op in DRAM).
    pub(crate) fn set_merged_ooo_generation(&mut self, generation: u64) {
        if let Some(area) = &mut self.pmem {
            area.set_merged_ooo_generation(generation);
        }
    }

    /// Begins a merge's redo record (PMem; no-op in DRAM).
    pub(crate) fn begin_merge(&mut self, generation: u64, input_events: u64, first: &MergeRecord) {
        if let Some(area) = &mut self.pmem {
            area.begin_merge(generation, input_events, first);
        }
    }

    /// Records a merge's next step (PMem; no-op in DRAM).
    pub(crate) fn write_merge_record(&mut self, record: &MergeRecord) -> Result<(), EventError> {
        match &mut self.pmem {
            Some(area) => area.write_merge_record(record),
            None => Ok(()),
        }
    }

    /// Ends a merge's redo record (PMem; no-op in DRAM).
    pub(crate) fn end_merge(&mut self) {
        if let Some(area) = &mut self.pmem {
            area.end_merge();
        }
    }

    /// Persists the entries of `level` not yet durable (PMem only; no-op if none).
    pub(crate) fn persist_pending(&mut self, level: usize) -> Result<(), EventError> {
        let Some(area) = &mut self.pmem else { return Ok(()) };
        let (from, to) = (self.persisted[level], header_count(&self.levels[level]));
        if from == to {
            return Ok(());
        }
        let range = if level == 0 {
            LeafNode::open(self.levels[0].as_slice(), &self.leaf_layout)?.entries_range(from, to)
        } else {
            IndexNode::open(self.levels[level].as_slice(), &self.index_layout)?.entries_range(from, to)
        };
        area.persist_append(level as u32, &self.levels[level], range, (to - from) as u64)?;
        self.persisted[level] = to;
        Ok(())
    }

    /// Makes `id` the node of `level`: a fresh header (no entries) with
    /// `prev` as its left sibling, persisted (PMem). `level == height()`
    /// adds a level (the caller persists the new height afterwards).
    pub(crate) fn init_level(
        &mut self,
        level: usize,
        id: NodeId,
        prev: Option<NodeId>,
    ) -> Result<(), EventError> {
        let buf = self.fresh_level(level, id, prev)?;
        if let Some(area) = &mut self.pmem {
            area.init_slot(level as u32, &buf)?;
        }
        self.install_level(level, buf);
        Ok(())
    }

    /// A fresh node buffer for `level` (reusing the level's old buffer).
    fn fresh_level(&mut self, level: usize, id: NodeId, prev: Option<NodeId>) -> Result<Vec<u8>, EventError> {
        let mut buf = if level < self.levels.len() {
            std::mem::take(&mut self.levels[level])
        } else {
            vec![0u8; NODE_BYTES]
        };
        if level == 0 {
            let mut leaf = LeafNode::init(buf.as_mut_slice(), &self.leaf_layout, id)?;
            leaf.set_prev(prev)?;
        } else {
            let mut node = IndexNode::init(buf.as_mut_slice(), &self.index_layout, id, level as u16)?;
            node.set_prev(prev)?;
        }
        Ok(buf)
    }

    fn install_level(&mut self, level: usize, buf: Vec<u8>) {
        if level < self.levels.len() {
            self.levels[level] = buf;
            self.persisted[level] = 0;
        } else {
            self.levels.push(buf);
            self.persisted.push(0);
        }
    }

    /// Appends `(key, child, aggregates)` to the index node of `level` in
    /// DRAM only; [`Flank::end_write_out`] (or [`Flank::persist_pending`])
    /// persists it.
    pub(crate) fn stage_entry(
        &mut self,
        level: usize,
        key: i64,
        child: NodeId,
        aggregates: &Aggregates,
    ) -> Result<(), EventError> {
        let mut node = IndexNode::open(self.levels[level].as_mut_slice(), &self.index_layout)?;
        node.append(key, child, Some(aggregates))?;
        Ok(())
    }

    /// Ends the write-out of the node of `level` (W2's persist, W3, W4):
    /// the parent's staged entries made durable, `id` made the node of
    /// `level` with `prev` as its left sibling, the journal cleared; on
    /// PMem in the area version's persist order
    /// ([`super::flank_pmem::PmemFlankArea::end_write_out`]).
    pub(crate) fn end_write_out(
        &mut self,
        level: usize,
        id: NodeId,
        prev: Option<NodeId>,
    ) -> Result<(), EventError> {
        let parent = level + 1;
        let (from, to) = (self.persisted[parent], header_count(&self.levels[parent]));
        let entries =
            IndexNode::open(self.levels[parent].as_slice(), &self.index_layout)?.entries_range(from, to);
        let buf = self.fresh_level(level, id, prev)?;
        if let Some(area) = &mut self.pmem {
            let append = ParentAppend {
                level: parent as u32,
                node: &self.levels[parent],
                entries,
                appended: (to - from) as u64,
            };
            area.end_write_out(append, level as u32, &buf)?;
            self.persisted[parent] = to;
        }
        self.install_level(level, buf);
        Ok(())
    }

    /// Persists the height word (PMem), after a new root's slot.
    pub(crate) fn persist_height(&mut self) -> Result<(), EventError> {
        let height = self.levels.len() as u32;
        match &mut self.pmem {
            Some(area) => area.set_height(height),
            None => Ok(()),
        }
    }

    /// Replaces the DRAM copy of `level` (recovery repairs).
    pub(crate) fn replace_level(&mut self, level: usize, buf: Vec<u8>) {
        self.persisted[level] = if self.pmem.is_some() { header_count(&buf) } else { 0 };
        self.levels[level] = buf;
    }

    pub(crate) fn begin_journal(&mut self, j: &FlankJournal) -> Result<(), EventError> {
        match &mut self.pmem {
            Some(area) => area.begin_journal(j),
            None => Ok(()),
        }
    }
}

fn word_at(buf: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}

/// The id of a node buffer.
pub(crate) fn node_id(buf: &[u8]) -> NodeId {
    NodeId::from_u64(word_at(buf, OFFSET_ID))
}

/// The right sibling of a node buffer.
pub(crate) fn next_id(buf: &[u8]) -> Option<NodeId> {
    let raw = word_at(buf, OFFSET_NEXT);
    (raw != NO_SIBLING).then(|| NodeId::from_u64(raw))
}
