//! The flat PMem arrays of the TAB+-tree (chronicledb-pmem.txt section 4.1,
//! Fig. 4 placements (b) and (c); format: `docs/format/events-pmem-arrays.md`).
//!
//! - [`AggregateArray`] (placement (b), "Aggregates"): slot `i` holds the
//!   aggregate record of node `i`, so reading a node's aggregates is one
//!   lookup of slot `i`. Two slot layouts compared in section 5.2:
//!   [`SlotLayout::Dense`] (records back to back) and [`SlotLayout::Aligned`]
//!   (each slot starts on a 64-byte cache line). A slot is valid only once its
//!   seal word (tag + CRC32C of the record) is persisted after the record, so
//!   a crash never makes a half-written slot look valid; overwriting a valid
//!   slot goes through a one-record redo journal and is atomic.
//! - [`IndexNodeArray`] (placement (c), "Index Nodes"): slot `i` holds the
//!   index node with index-sequence number `i` ([`crate::NodeId::index`]),
//!   node-size slots, a persisted node count as the high-water mark of
//!   created nodes. The node's own header protocol (entries persisted before
//!   the entry count) makes appends to a node crash-consistent; the array
//!   persists exactly the ranges it is asked to.
//!
//! Both live in an area `(Arc<Region>, base, area_bytes)` of a region, start
//! with a 64-byte CRC-protected header, keep every write inside the area
//! (checked, an error otherwise) and count what they write and persist
//! ([`PmemArrayCounters`]).

mod aggregates;
mod area;
#[cfg(any(test, feature = "fuzz"))]
mod fuzz;
mod header;
mod index_nodes;

#[cfg(test)]
mod aggregates_tests;
#[cfg(test)]
mod format_doc_tests;
#[cfg(test)]
mod index_nodes_tests;

pub use aggregates::{
    AggregateArray, AGGREGATE_ARRAY_MAGIC, JOURNAL_RECORD_OFFSET, JOURNAL_SEAL_OFFSET, JOURNAL_SEAL_TAG,
    JOURNAL_TARGET_OFFSET, MAX_RECORD_BYTES, SEAL_TAG, SEAL_WORD_BYTES,
};
pub use area::{PmemArrayCounters, AREA_ALIGN_BYTES, SLOTS_ALIGN_BYTES};
#[cfg(any(test, feature = "fuzz"))]
pub use fuzz::{fuzz_open_arrays, ArraysFuzzOutcome};
pub use header::{
    HEADER_BYTES, HEADER_CRC_COVERED_BYTES, HEADER_OFFSET_AREA_BYTES, HEADER_OFFSET_CAPACITY,
    HEADER_OFFSET_CRC, HEADER_OFFSET_LAYOUT, HEADER_OFFSET_MAGIC, HEADER_OFFSET_RECORD_BYTES,
    HEADER_OFFSET_RESERVED, HEADER_OFFSET_SLOTS_OFFSET, HEADER_OFFSET_STRIDE_BYTES,
    HEADER_OFFSET_TABLE_OFFSET, HEADER_OFFSET_VERSION, LAYOUT_ALIGNED, LAYOUT_DENSE, PMEM_ARRAYS_VERSION,
};
pub use index_nodes::{
    index_number, IndexNodeArray, INDEX_NODE_ARRAY_MAGIC, MAX_NODE_BYTES, NODE_ALIGN_BYTES, NODE_COUNT_OFFSET,
};

/// How the slots of an [`AggregateArray`] are placed (section 5.2 compares both).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SlotLayout {
    /// Slots packed back to back: stride = record size.
    Dense,
    /// Stride rounded up to 64 bytes: every slot starts on a cache line.
    Aligned,
}

impl SlotLayout {
    /// Distance between consecutive slots for records of `record_bytes`.
    pub const fn stride_bytes(self, record_bytes: u64) -> u64 {
        match self {
            SlotLayout::Dense => record_bytes,
            SlotLayout::Aligned => {
                record_bytes.div_ceil(strata_pmem::CACHE_LINE_BYTES) * strata_pmem::CACHE_LINE_BYTES
            }
        }
    }

    /// The header's `layout` code.
    pub const fn code(self) -> u32 {
        match self {
            SlotLayout::Dense => LAYOUT_DENSE,
            SlotLayout::Aligned => LAYOUT_ALIGNED,
        }
    }

    pub const fn from_code(code: u32) -> Option<SlotLayout> {
        match code {
            LAYOUT_DENSE => Some(SlotLayout::Dense),
            LAYOUT_ALIGNED => Some(SlotLayout::Aligned),
            _ => None,
        }
    }

    /// Configuration and report name.
    pub const fn name(self) -> &'static str {
        match self {
            SlotLayout::Dense => "dense",
            SlotLayout::Aligned => "aligned",
        }
    }
}
