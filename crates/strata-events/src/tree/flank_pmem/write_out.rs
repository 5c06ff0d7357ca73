//! The end of a flank node's write-out on PMem (chronicledb-pmem.txt
//! section 4.1, "Right Flank"; steps W2-W4 of `docs/format/events-flank.md`,
//! "Write-out of a full node"): the parent's new entry, the successor's
//! fresh slot header and the idle journal state.
//!
//! Flank format 4 ends a write-out with two fences:
//! - **E1**: the entry's bytes in the parent's slot (past its durable
//!   count, so unread until E2) and the successor's fresh header in the
//!   node's slot; flush both; **fence**;
//! - **E2**: the parent's header (its count now covers the entry) and the
//!   journal state word *ended* (`JOURNAL_ENDED_TAG` and the CRC32C of the
//!   record's words); flush both; **fence**.
//!
//! Formats 2 and 3 used four: the entry, the parent's header, the slot
//! header and the idle state, each behind its own fence.
//!
//! What recovery may find (the node `x`, complete in storage before E1):
//! - journal committed, the parent without the entry, the slot torn or
//!   holding the successor: the entry is appended again from `x` as storage
//!   holds it, then E1 and E2 are redone;
//! - journal ended, its CRC matching the record's words, the parent's count
//!   without the entry: E2's state word persisted without the parent's
//!   header, so the entry is appended again from the stored `x`. The CRC
//!   tells whether the words still name that write-out: the next
//!   write-out's W0 rewrites them (under the ended word) before it commits.

use std::ops::Range;

use crate::ids::EventError;
use crate::node::NODE_HEADER_BYTES;

use strata_pmem::RegionOffset;

use super::{journal_ended_word, PmemFlankArea, FLANK_OFFSET_JOURNAL_LEVEL, FLANK_OFFSET_JOURNAL_STATE};

/// The parent's side of a write-out's end: its slot level, its DRAM node
/// and the byte range of its entries not yet durable (the new entry; empty
/// when a redo finds the entry durable already).
pub struct ParentAppend<'a> {
    pub level: u32,
    pub node: &'a [u8],
    pub entries: Range<usize>,
    /// Entries in `entries` (for the statistics).
    pub appended: u64,
}

impl PmemFlankArea {
    /// Ends a write-out (module comment): the parent's pending entries,
    /// `header` (the successor's fresh header) into slot `level`, and the
    /// idle journal state, in this area's version's persist order.
    pub fn end_write_out(
        &mut self,
        parent: ParentAppend<'_>,
        level: u32,
        header: &[u8],
    ) -> Result<(), EventError> {
        if self.version < 4 {
            // Formats 2 and 3: four fences (their recovery assumes the slot
            // holds the whole node until the parent's entry is durable).
            if !parent.entries.is_empty() {
                self.persist_append(parent.level, parent.node, parent.entries, parent.appended)?;
            }
            self.init_slot(level, header)?;
            self.end_journal();
            return Ok(());
        }
        self.check_level(parent.level)?;
        let parent_slot = self.slot_offset(parent.level);
        let appended = !parent.entries.is_empty();
        if appended {
            let at = parent_slot + parent.entries.start as u64;
            self.write(at, &parent.node[parent.entries.clone()]);
            self.flush(at, parent.entries.len() as u64);
        }
        self.write_slot_init(level, header)?;
        self.fence();
        if appended {
            self.write(parent_slot, &parent.node[..NODE_HEADER_BYTES]);
            self.flush(parent_slot, NODE_HEADER_BYTES as u64);
            self.stats.appends_persisted += 1;
            self.stats.entries_persisted += parent.appended;
        }
        let mut fields = [0u8; 32];
        self.region.read(RegionOffset(self.base + FLANK_OFFSET_JOURNAL_LEVEL), &mut fields);
        self.store_word(FLANK_OFFSET_JOURNAL_STATE, journal_ended_word(&fields));
        self.flush(FLANK_OFFSET_JOURNAL_STATE, 8);
        self.fence();
        Ok(())
    }
}
