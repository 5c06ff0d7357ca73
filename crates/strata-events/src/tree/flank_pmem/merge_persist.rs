//! The out-of-order merge's records in the PMem flank area
//! (chronicledb-pmem.txt section 4.3; `docs/format/events-flank.md`,
//! "Out-of-order merges"): the merged queue generation, the merge's redo
//! step records (two ping-pong slots named by the state word), and the
//! entry journal that makes an in-place rewrite of a flank index entry
//! crash-atomic. Only the bytes and their persist order live here.

use std::ops::Range;

use crate::ids::EventError;
use crate::node::NODE_HEADER_BYTES;

use super::*;

impl PmemFlankArea {
    /// Stores and persists `merged_ooo_generation` (the out-of-order queue
    /// generation whose events the durable tree holds; one 8-byte store).
    pub fn set_merged_ooo_generation(&mut self, generation: u64) {
        self.store_word(FLANK_OFFSET_MERGED_OOO_GENERATION, generation);
        self.persist(FLANK_OFFSET_MERGED_OOO_GENERATION, 8);
    }

    /// Begins an out-of-order merge: the input's generation and size and the
    /// first step record (record slot 0), persisted; then the state word
    /// naming slot 0, persisted.
    pub fn begin_merge(&mut self, generation: u64, input_events: u64, first: &MergeRecord) {
        self.store_word(FLANK_OFFSET_MERGE_GENERATION, generation);
        self.store_word(FLANK_OFFSET_MERGE_INPUT_EVENTS, input_events);
        self.write(merge_record_offset(0), &first.encode());
        self.flush(FLANK_OFFSET_MERGE_GENERATION, 16);
        self.flush(merge_record_offset(0), MERGE_RECORD_BYTES);
        self.fence();
        self.store_word(FLANK_OFFSET_MERGE_STATE, MERGE_ACTIVE_0);
        self.persist(FLANK_OFFSET_MERGE_STATE, 8);
        self.merge_slot = Some(0);
    }

    /// Records the merge's next step: the record into the slot not in use,
    /// persisted, then the state word naming it, persisted.
    pub fn write_merge_record(&mut self, record: &MergeRecord) -> Result<(), EventError> {
        let Some(current) = self.merge_slot else {
            return Err(EventError::invalid("no out-of-order merge is in flight"));
        };
        let slot = 1 - current;
        self.write(merge_record_offset(slot), &record.encode());
        self.persist(merge_record_offset(slot), MERGE_RECORD_BYTES);
        self.store_word(FLANK_OFFSET_MERGE_STATE, if slot == 0 { MERGE_ACTIVE_0 } else { MERGE_ACTIVE_1 });
        self.persist(FLANK_OFFSET_MERGE_STATE, 8);
        self.merge_slot = Some(slot);
        Ok(())
    }

    /// Ends a merge (after `merged_ooo_generation` holds its generation):
    /// the state word back to idle, persisted.
    pub fn end_merge(&mut self) {
        self.store_word(FLANK_OFFSET_MERGE_STATE, MERGE_IDLE);
        self.persist(FLANK_OFFSET_MERGE_STATE, 8);
        self.merge_slot = None;
    }

    /// Rewrites entry `index` (bytes `entry` of `node`) of the slot of
    /// `level` in place, journaled: the entry's new bytes to `scratch` (the
    /// slot offset of the first unused entry position), persisted; the entry
    /// journal word, persisted; the entry and the node header in place,
    /// persisted; the word cleared, persisted (4 fences).
    pub fn rewrite_entry(
        &mut self,
        level: u32,
        node: &[u8],
        entry: Range<usize>,
        index: u32,
        scratch: usize,
    ) -> Result<(), EventError> {
        self.check_level(level)?;
        if level == 0 || scratch + entry.len() > NODE_BYTES || scratch < entry.end {
            return Err(EventError::invalid(format!(
                "entry rewrite of level {level}: no room at {scratch} for the {}-byte journal copy",
                entry.len()
            )));
        }
        let slot = self.slot_offset(level);
        let bytes = &node[entry.clone()];
        #[cfg(any(test, feature = "crashtest"))]
        let journaled = !crate::tree::ooo_steps::merge_bug(crate::tree::ooo_steps::MergeBug::NoEntryJournal);
        #[cfg(not(any(test, feature = "crashtest")))]
        let journaled = true;
        if journaled {
            self.write(slot + scratch as u64, bytes);
            self.persist(slot + scratch as u64, bytes.len() as u64);
            self.store_word(FLANK_OFFSET_ENTRY_JOURNAL, entry_journal_word(level, index));
            self.persist(FLANK_OFFSET_ENTRY_JOURNAL, 8);
        }
        self.write(slot + entry.start as u64, bytes);
        self.flush(slot + entry.start as u64, bytes.len() as u64);
        self.write(slot, &node[..NODE_HEADER_BYTES]);
        self.flush(slot, NODE_HEADER_BYTES as u64);
        self.fence();
        if journaled {
            self.store_word(FLANK_OFFSET_ENTRY_JOURNAL, ENTRY_JOURNAL_IDLE);
            self.persist(FLANK_OFFSET_ENTRY_JOURNAL, 8);
        }
        self.stats.entries_persisted += 1;
        Ok(())
    }

    /// Recovery of an entry rewrite: `bytes` (the journal copy) written at
    /// slot offset `at` of `level`, persisted, then the word cleared.
    pub fn finish_entry_journal(&mut self, level: u32, at: usize, bytes: &[u8]) -> Result<(), EventError> {
        self.check_level(level)?;
        let slot = self.slot_offset(level);
        self.write(slot + at as u64, bytes);
        self.persist(slot + at as u64, bytes.len() as u64);
        self.store_word(FLANK_OFFSET_ENTRY_JOURNAL, ENTRY_JOURNAL_IDLE);
        self.persist(FLANK_OFFSET_ENTRY_JOURNAL, 8);
        Ok(())
    }
}

/// Area offset of merge record slot `slot` (0 or 1).
pub(super) fn merge_record_offset(slot: u32) -> u64 {
    if slot == 0 {
        FLANK_OFFSET_MERGE_RECORD_0
    } else {
        FLANK_OFFSET_MERGE_RECORD_1
    }
}

/// The entry journal word naming entry `index` of level `level`.
pub fn entry_journal_word(level: u32, index: u32) -> u64 {
    ENTRY_JOURNAL_TAG << 48 | u64::from(level & 0xFFFF) << 32 | u64::from(index)
}
