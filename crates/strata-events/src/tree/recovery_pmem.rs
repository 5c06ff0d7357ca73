//! Recovery of the right flank on PMem (chronicledb-pmem.txt section 4.1:
//! "the most recent state of the flank is available at any time - in
//! particular after a restart"; section 5.2: below 1 ms for height 3).
//!
//! The slots of levels `0..height` are read back; headers are repaired where
//! the persist order allows staleness (the count word is newer than the time
//! range words: recomputed from the entries); every slot is checked
//! structurally. A journal record in flight is finished: if the parent
//! already ends with the entry for the node written out (W2 done), only the
//! slot re-initialization and the journal clear are redone; if the node is
//! complete in storage (W1 done), its entry is made from the stored node
//! (flank format 4 re-initializes the slot together with the parent's
//! entry); otherwise the slot still holds the full node and W1-W4 are
//! redone. An ended journal's last write-out (format 4) gets its parent
//! entry back if the ended word persisted without the parent's count.

use crate::ids::EventError;
use crate::node::{IndexLayout, IndexNode, LeafLayout, LeafNode};

use super::flank_pmem::{FlankImage, FlankJournal, PmemFlankArea};
use super::storage::NodeStorage;
use super::TabTree;

/// Repairs and checks the slot of `level` (see the module comment).
pub(crate) fn repair_slot(
    level: usize,
    buf: &mut [u8],
    leaf_layout: &LeafLayout,
    index_layout: &IndexLayout,
) -> Result<(), EventError> {
    if level == 0 {
        let mut leaf = LeafNode::open(buf, leaf_layout)?;
        leaf.refresh_ts_range();
        return leaf.verify_structure();
    }
    let mut node = IndexNode::open(buf, index_layout)?;
    if node.level() as usize != level {
        return Err(EventError::corruption(
            format!("flank slot {level}"),
            format!("holds index node {} of level {}", node.id(), node.level()),
        ));
    }
    if node.is_empty() {
        // A torn first append may leave the time range words newer than the
        // count word: an empty node's header is rewritten from its identity.
        let (id, prev) = (node.id(), node.prev());
        let mut fresh = IndexNode::init(node.into_inner(), index_layout, id, level as u16)?;
        fresh.set_prev(prev)?;
        return fresh.verify_structure();
    }
    if let Some(first) = node.key_at(0) {
        node.set_key(0, first)?;
        let mut max = i64::MIN;
        for i in 0..node.len() {
            max = max.max(node.key_at(i).unwrap_or(i64::MIN));
            if let Some(a) = node.aggregates_at(i)? {
                if a.count > 0 {
                    max = max.max(a.ts_max);
                }
            }
        }
        node.widen_ts_max(max);
    }
    node.verify_structure()
}

/// Finishes a flank entry rewrite a crash interrupted: copies the journal
/// copy (at the slot's first unused entry position) over the entry, in the
/// image and on PMem, and clears the entry journal word.
pub(crate) fn finish_entry_journal(
    area: &mut PmemFlankArea,
    image: &mut FlankImage,
    index_layout: &IndexLayout,
) -> Result<(), EventError> {
    let Some((level, index)) = image.entry_journal.take() else { return Ok(()) };
    let slot = &mut image.slots[level as usize];
    let count = crate::node::header::header_count(slot);
    let eb = index_layout.entry_bytes();
    let at = crate::node::NODE_HEADER_BYTES + index as usize * eb;
    let scratch = crate::node::NODE_HEADER_BYTES + count * eb;
    if index as usize >= count || scratch + eb > slot.len() {
        return Err(EventError::corruption(
            format!("PMem flank slot {level}"),
            format!("entry journal of entry {index} in a node of {count} entries"),
        ));
    }
    let copy = slot[scratch..scratch + eb].to_vec();
    slot[at..at + eb].copy_from_slice(&copy);
    area.finish_entry_journal(level, at, &copy)
}

/// The repaired slots of an opened flank image; the slot of a journal
/// record's level is left as read (it may be mid-re-initialization).
pub(crate) fn repaired_levels(
    image: &mut FlankImage,
    leaf_layout: &LeafLayout,
    index_layout: &IndexLayout,
) -> Result<Vec<Vec<u8>>, EventError> {
    let journal_level = image.journal.map(|j| j.level as usize);
    let mut levels = std::mem::take(&mut image.slots);
    for (level, buf) in levels.iter_mut().enumerate() {
        if Some(level) != journal_level {
            repair_slot(level, buf, leaf_layout, index_layout)
                .map_err(|e| EventError::corruption(format!("PMem flank slot {level}"), e.to_string()))?;
        }
    }
    Ok(levels)
}

impl TabTree {
    /// Finishes a write-out a crash interrupted (module comment).
    pub(crate) fn finish_journal(&mut self, j: &FlankJournal) -> Result<(), EventError> {
        let level = j.level as usize;
        if self.parent_ends_with(level, j.old_id) || self.storage.is_complete(j.old_id)? {
            // W2 done, or at least W1: the slot is not read (flank format 4
            // may have re-initialized it already).
            return self.redo_write_out(j, true);
        }
        let mut buf = self.flank.bytes(level).to_vec();
        repair_slot(level, &mut buf, &self.leaf_layout, &self.index_layout)
            .map_err(|e| EventError::corruption(format!("PMem flank slot {level}"), e.to_string()))?;
        if crate::tree::flank::node_id(&buf) != j.old_id {
            return Err(EventError::corruption(
                format!("PMem flank slot {level}"),
                format!(
                    "holds {} but the journal writes out {}",
                    crate::tree::flank::node_id(&buf),
                    j.old_id
                ),
            ));
        }
        self.flank.replace_level(level, buf);
        self.running[level] = self.entries_aggregate(level)?;
        self.redo_write_out(j, true)
    }

    /// Flank format 4: the last write-out's journal has ended (its ended
    /// word's CRC matches the words), but its end may have persisted
    /// without the parent's count (the ended word and the parent's header
    /// share one fence): if the parent does not end with the node written
    /// out, its entry is appended again from the stored node. Returns
    /// whether it was.
    pub(crate) fn finish_last_write_out(&mut self, j: &FlankJournal) -> Result<bool, EventError> {
        let level = j.level as usize;
        #[cfg(any(test, feature = "crashtest"))]
        if crate::tree::planted::planted(crate::tree::planted::PlantedBug::TrustEndedJournal) {
            return Ok(false);
        }
        if level + 1 >= self.flank.height() || self.parent_ends_with(level, j.old_id) {
            return Ok(false);
        }
        if !self.storage.is_complete(j.old_id)? || self.flank.id(level) != j.new_id {
            return Err(EventError::corruption(
                format!("PMem flank slot {}", level + 1),
                format!(
                    "the last write-out ({} -> {}) ended, but the parent has no entry for it and the slot \
                     or storage disagrees",
                    j.old_id, j.new_id
                ),
            ));
        }
        let aggs = self.stored_aggregates(j.old_id)?;
        self.flank.stage_entry(level + 1, aggs.ts_min, j.old_id, &aggs)?;
        self.flank.persist_pending(level + 1)?;
        self.running[level + 1].merge(&aggs);
        Ok(true)
    }
}
