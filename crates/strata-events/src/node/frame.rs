//! What leaf and index nodes share: the array of fixed-size entries after
//! the header, its byte ranges, insertion with shifting, the sealed flag and
//! sealing. Callers have checked the buffer length and that `count`
//! entries of `entry_bytes` fit, so the slicing here cannot go out of range.

use std::ops::Range;

use crate::node::header::{node_crc, put_u32, u32_at, FLAG_SEALED, OFFSET_COUNT, OFFSET_CRC, OFFSET_FLAGS};
use crate::node::NODE_HEADER_BYTES;

#[inline]
pub(crate) fn count(node: &[u8]) -> usize {
    u32_at(node, OFFSET_COUNT) as usize
}

#[inline]
pub(crate) fn entry_range(entry_bytes: usize, i: usize) -> Range<usize> {
    let start = NODE_HEADER_BYTES + i * entry_bytes;
    start..start + entry_bytes
}

#[inline]
pub(crate) fn entries_range(entry_bytes: usize, from: usize, to: usize) -> Range<usize> {
    NODE_HEADER_BYTES + from * entry_bytes..NODE_HEADER_BYTES + to * entry_bytes
}

#[inline]
pub(crate) fn used_bytes(node: &[u8], entry_bytes: usize) -> usize {
    NODE_HEADER_BYTES + count(node) * entry_bytes
}

/// Clears the sealed flag: the node is about to change.
#[inline]
pub(crate) fn unseal(node: &mut [u8]) {
    node[OFFSET_FLAGS] &= !FLAG_SEALED;
}

/// Writes `entry` at position `pos` (0..=count), shifting the entries from
/// `pos` on by one; the count grows by one.
pub(crate) fn insert_at(node: &mut [u8], entry_bytes: usize, pos: usize, entry: &[u8]) {
    let n = count(node);
    let from = entries_range(entry_bytes, pos, n);
    node.copy_within(from.clone(), from.start + entry_bytes);
    node[entry_range(entry_bytes, pos)].copy_from_slice(entry);
    unseal(node);
    put_u32(node, OFFSET_COUNT, (n + 1) as u32);
}

/// Zeroes the unused bytes, sets the sealed flag and stores the CRC.
pub(crate) fn seal(node: &mut [u8], entry_bytes: usize) {
    let used = used_bytes(node, entry_bytes);
    node[used..].fill(0);
    node[OFFSET_FLAGS] |= FLAG_SEALED;
    let crc = node_crc(node, used);
    put_u32(node, OFFSET_CRC, crc);
}

/// Index of the first entry whose i64 at `field` is greater than `t`
/// (`upper == true`) or not less than `t` (`upper == false`), in entries
/// `0..n` sorted by that field.
pub(crate) fn partition_point(
    node: &[u8],
    entry_bytes: usize,
    n: usize,
    field: usize,
    t: i64,
    upper: bool,
) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let at = NODE_HEADER_BYTES + mid * entry_bytes + field;
        let v = i64::from_le_bytes(node[at..at + 8].try_into().expect("8 bytes"));
        let before = if upper { v <= t } else { v < t };
        if before {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}
