//! Block files (`docs/format/block-file.md`): the immutable, checksummed
//! files on SSD that a checkpoint writes its sealed series blocks to
//! (declog.txt section 5.1; the Gorilla blocks of Beringei). A file is named
//! `blocks-<seq:010>.blk`, holds a header, the blocks back to back (opaque
//! bytes to this module), an index sorted by (series, min_ts) and a footer.
//!
//! - `format`: the byte layout, its constants and its pure validation;
//! - `writer`: [`BlockFileWriter`], sequential writing and durability;
//! - `reader`: [`BlockFile`], opening, validating and reading blocks;
//! - `summary`: [`BlockSummary`], the aggregates an entry keeps of its block;
//! - `fuzz`: the entry point of the `block_file_open` fuzz target.

#[cfg(test)]
mod fixture_v1;
mod format;
#[cfg(any(test, feature = "fuzz"))]
mod fuzz;
mod reader;
mod summary;
mod writer;

pub use format::*;
#[cfg(any(test, feature = "fuzz"))]
pub use fuzz::fuzz_block_file_parse;
pub use reader::{describe_block_file, BlockFile};
pub use summary::*;
pub use writer::{BlockFileMeta, BlockFileWriter, WRITE_CHUNK_BYTES};

const NAME_PREFIX: &str = "blocks-";
const NAME_SUFFIX: &str = ".blk";
/// The sequence number in a file name has at least this many digits.
pub const BLOCK_FILE_NAME_DIGITS: usize = 10;

/// `blocks-0000000042.blk` for 42: the sequence number in decimal,
/// zero-padded to 10 digits (more digits above 9,999,999,999).
pub fn block_file_name(seq: u64) -> String {
    format!("{NAME_PREFIX}{seq:0width$}{NAME_SUFFIX}", width = BLOCK_FILE_NAME_DIGITS)
}

/// The sequence number of a block file name (a file name, not a path).
/// Only the canonical spelling `block_file_name(seq)` is accepted, so two
/// names never denote the same sequence number.
pub fn parse_block_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(NAME_PREFIX)?.strip_suffix(NAME_SUFFIX)?;
    if digits.len() < BLOCK_FILE_NAME_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let seq: u64 = digits.parse().ok()?;
    (block_file_name(seq) == name).then_some(seq)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod crash_tests;

#[cfg(test)]
mod format_doc_tests;
