//! The uncompressed 8 KiB TAB+-tree node layouts (chronicledb-pmem.txt
//! section 4.1): "the in-memory layout of pages is byte-oriented so that they
//! can be written to external storage without further serialization". A node
//! is a 64-byte header (sibling links, entry count, id, time range, CRC32C)
//! followed by fixed-size entries: events in a leaf, `(key, child,
//! [aggregates])` in an index node. The format is specified in
//! `docs/format/events-node.md`; a test keeps the two in agreement.
//!
//! - [`header`]: the header fields, [`NodeHeader`], the CRC.
//! - [`layout`]: capacities and the spare room for out-of-order inserts
//!   ([`LeafLayout`], [`IndexLayout`]).
//! - [`leaf`], [`index`]: the [`LeafNode`] and [`IndexNode`] views over a
//!   node buffer (append, ordered insert, search, seal, verify).
//! - [`fuzz`]: [`fuzz_node_decode`], the entry of the `events_node_decode`
//!   fuzz target.
//!
//! The used bytes of a node are the header plus `count` entries, so the PMem
//! right flank can persist exactly the header ([`LeafNode::header_range`])
//! and the entries it changed ([`LeafNode::entry_range`]).

mod frame;
#[cfg(any(test, feature = "fuzz"))]
pub mod fuzz;
pub mod header;
pub mod index;
pub mod layout;
pub mod leaf;

#[cfg(test)]
mod format_doc_tests;
#[cfg(test)]
mod tests;

#[cfg(any(test, feature = "fuzz"))]
pub use fuzz::fuzz_node_decode;
pub use header::{peek_kind, read_header, NodeHeader};
pub use index::{IndexEntry, IndexNode};
pub use layout::{index_capacity, leaf_capacity, IndexLayout, LeafLayout};
pub use leaf::LeafNode;

/// Bytes of one uncompressed node.
pub const NODE_BYTES: usize = 8192;
/// Bytes of the node header at the start of every node.
pub const NODE_HEADER_BYTES: usize = 64;
/// Default spare room per node for out-of-order inserts, in permille of its
/// capacity (the paper's 10%).
pub const DEFAULT_SPARE_PERMILLE: u32 = 100;
/// Largest allowed spare room, in permille.
pub const MAX_SPARE_PERMILLE: u32 = 900;

/// A fresh zeroed node buffer.
pub fn new_node_buffer() -> Vec<u8> {
    vec![0; NODE_BYTES]
}
