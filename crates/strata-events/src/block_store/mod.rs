//! The block file of the event store (chronicledb-pmem.txt section 2.2,
//! "Storage Layout"; format: `docs/format/events-blocks.md`).
//!
//! Owns [`BlockStore`]: TAB+-tree nodes (opaque byte buffers of at most
//! [`MAX_NODE_BYTES`]) compressed one by one with LZ4 and packed into
//! fixed-size [`BLOCK_BYTES`] blocks appended to one SSD file, interleaved
//! with the translation blocks of the address translation tree
//! ([`BlockStore::append_translation_block`]). A node is named by its
//! [`PhysAddr`] (block number and offset of its record in the block).
//!
//! Decisions (each documented in the format document):
//! - a node whose LZ4 form is not smaller than the node is stored raw, so a
//!   record never exceeds [`MAX_RECORD_BYTES`], which fits a block; nodes
//!   larger than [`MAX_NODE_BYTES`] are rejected;
//! - the unfilled block lives in DRAM; it is written when the next record
//!   does not fit (sealed, zero padded), when a translation block follows,
//!   and by [`BlockStore::flush`] (unsealed). A flushed unsealed block is
//!   rewritten in place, whole, when more is flushed: the bytes already on
//!   the file are rewritten unchanged, and every record carries its own
//!   CRC32C, so a torn rewrite loses none of the records synced before it;
//! - open checks only the end of the file: the last valid block, at most one
//!   torn block after it (its records salvaged by their CRCs), and trailing
//!   all-zero blocks. A bad block that is followed by a valid block is
//!   corruption, reported by [`BlockStore::scan`] and by reads.
//!
//! Files (reading order):
//! - `format`: the on-file constants and field offsets, [`PhysAddr`], the
//!   decoded headers, the CRCs and the block header encoder;
//! - `codec`: record encoding, record and block checking, torn-block salvage;
//! - `store`: the [`BlockStore`] value, its DRAM open block, counters and
//!   accessors;
//! - `writer`: append, seal, translation blocks, flush and sync (the rewrite
//!   of the open block);
//! - `open`: [`BlockStore::open`], the end-of-file check and salvage;
//! - `read`: node reads and translation block reads;
//! - `scan`: [`BlockScan`], the file-order record scan;
//! - `samples`, `fuzz`: deterministic sample nodes and files, and
//!   [`fuzz_block_decode`], the entry of the `events_block_decode` fuzz
//!   target.

mod codec;
mod format;
#[cfg(any(test, feature = "fuzz"))]
mod fuzz;
mod open;
mod read;
mod samples;
mod scan;
mod store;
mod writer;

#[cfg(test)]
mod damage_tests;
#[cfg(test)]
mod format_doc_tests;
#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

pub use codec::{decode_record, validate_block};
pub use format::{
    block_crc, record_crc, BlockHeader, BlockKind, PhysAddr, RecordHeader, BLOCK_BYTES, BLOCK_FLAG_SEALED,
    BLOCK_FORMAT_VERSION, BLOCK_HEADER_BYTES, BLOCK_KIND_DATA, BLOCK_KIND_TRANSLATION, BLOCK_MAGIC,
    HDR_OFFSET_BLOCK_CRC, HDR_OFFSET_BLOCK_NUMBER, HDR_OFFSET_FLAGS, HDR_OFFSET_KIND, HDR_OFFSET_MAGIC,
    HDR_OFFSET_PREV_TRANSLATION, HDR_OFFSET_RECORD_COUNT, HDR_OFFSET_USED_BYTES, HDR_OFFSET_VERSION,
    MAX_BLOCK_NUMBER, MAX_NODE_BYTES, MAX_RECORD_BYTES, PHYS_ADDR_OFFSET_BITS, RECORD_ENCODING_LZ4,
    RECORD_ENCODING_RAW, RECORD_HEADER_BYTES, REC_OFFSET_ENCODING, REC_OFFSET_NODE_ID, REC_OFFSET_NODE_LEN,
    REC_OFFSET_RECORD_CRC, REC_OFFSET_STORED_LEN, TRANSLATION_PAYLOAD_BYTES,
};
#[cfg(any(test, feature = "fuzz"))]
pub use fuzz::fuzz_block_decode;
pub use open::OpenReport;
pub use read::TranslationBlock;
pub use samples::{sample_block_file, sample_node, WrittenNode};
pub use scan::{BlockScan, ScannedRecord};
pub use store::{BlockStore, BlockStoreStats};
