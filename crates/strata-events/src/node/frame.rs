//! What leaf and index nodes share (chronicledb-pmem.txt section 4.1;
//! `docs/format/events-node.md`), written once for both views: the buffer
//! length check, opening a header of an expected kind, the header accessors
//! (id, sibling links, time range, sealed flag), setting sibling links, the
//! array of fixed-size entries after the header (its byte ranges, insertion
//! with shifting, the room checks), binary search by an i64 field of the
//! entries, and sealing and checking the seal. Callers have checked the
//! buffer length and that `count` entries of `entry_bytes` fit, so the
//! slicing here cannot go out of range.

use std::ops::Range;

use crate::ids::{EventError, NodeId, NodeKind};
use crate::node::header::{
    check_crc, i64_at, node_crc, put_i64, put_u32, put_u64, read_header, sibling_from_raw, sibling_to_raw,
    u32_at, u64_at, NodeHeader, FLAG_SEALED, OFFSET_COUNT, OFFSET_CRC, OFFSET_FLAGS, OFFSET_ID, OFFSET_NEXT,
    OFFSET_PREV, OFFSET_TS_MAX, OFFSET_TS_MIN,
};
use crate::node::{NODE_BYTES, NODE_HEADER_BYTES};

/// `InvalidInput` unless a node buffer has exactly [`NODE_BYTES`].
pub(crate) fn check_len(len: usize) -> Result<(), EventError> {
    if len != NODE_BYTES {
        return Err(EventError::invalid(format!("a node buffer has {NODE_BYTES} bytes, got {len}")));
    }
    Ok(())
}

/// Checks the buffer length and parses the header of a node that must be of
/// `kind` (`Corruption` if it is of the other kind).
pub(crate) fn open_header(node: &[u8], kind: NodeKind) -> Result<NodeHeader, EventError> {
    check_len(node.len())?;
    let h = read_header(node)?;
    if h.kind != kind {
        let what = match kind {
            NodeKind::Leaf => "an index node where a leaf was expected",
            NodeKind::Index => "a leaf where an index node was expected",
        };
        return Err(EventError::corruption(format!("node {}", h.id), what));
    }
    Ok(h)
}

/// `Corruption` at `location` unless the header's count fits `capacity`
/// and its entry size is `entry_bytes` (the node's layout).
pub(crate) fn check_fits_layout(
    h: &NodeHeader,
    capacity: usize,
    entry_bytes: usize,
    location: &str,
) -> Result<(), EventError> {
    if h.count as usize > capacity || h.entry_bytes as usize != entry_bytes {
        return Err(EventError::corruption(location, "header does not match the layout"));
    }
    Ok(())
}

/// Checks the sealed flag and the CRC32C of the used bytes: what `verify`
/// adds to `verify_structure`.
pub(crate) fn check_seal(node: &[u8]) -> Result<(), EventError> {
    let h = read_header(node)?;
    check_crc(node, &h)
}

#[inline]
pub(crate) fn count(node: &[u8]) -> usize {
    u32_at(node, OFFSET_COUNT) as usize
}

#[inline]
pub(crate) fn id(node: &[u8]) -> NodeId {
    NodeId::from_u64(u64_at(node, OFFSET_ID))
}

#[inline]
pub(crate) fn prev(node: &[u8]) -> Option<NodeId> {
    sibling_from_raw(u64_at(node, OFFSET_PREV))
}

#[inline]
pub(crate) fn next(node: &[u8]) -> Option<NodeId> {
    sibling_from_raw(u64_at(node, OFFSET_NEXT))
}

#[inline]
pub(crate) fn ts_min(node: &[u8]) -> i64 {
    i64_at(node, OFFSET_TS_MIN)
}

#[inline]
pub(crate) fn ts_max(node: &[u8]) -> i64 {
    i64_at(node, OFFSET_TS_MAX)
}

#[inline]
pub(crate) fn is_sealed(node: &[u8]) -> bool {
    node[OFFSET_FLAGS] & FLAG_SEALED != 0
}

/// Which sibling link of a node.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Sibling {
    Prev,
    Next,
}

/// Sets a sibling link of a node of `kind`: `InvalidInput` unless it names
/// another node of that kind. Unseals the node.
pub(crate) fn set_sibling(
    node: &mut [u8],
    kind: NodeKind,
    which: Sibling,
    link: Option<NodeId>,
) -> Result<(), EventError> {
    let own = id(node);
    let (what, offset) = match which {
        Sibling::Prev => ("prev", OFFSET_PREV),
        Sibling::Next => ("next", OFFSET_NEXT),
    };
    if let Some(l) = link.filter(|l| l.kind != kind || *l == own) {
        let noun = match kind {
            NodeKind::Leaf => "leaf",
            NodeKind::Index => "index node",
        };
        return Err(EventError::invalid(format!("{what} link {l} of {noun} {own}")));
    }
    unseal(node);
    put_u64(node, offset, sibling_to_raw(link));
    Ok(())
}

/// Widens the header's time range to include `[min, max]`. Does not unseal:
/// callers change entries, which unseals.
pub(crate) fn widen_ts(node: &mut [u8], min: i64, max: i64) {
    let (min, max) = (ts_min(node).min(min), ts_max(node).max(max));
    put_i64(node, OFFSET_TS_MIN, min);
    put_i64(node, OFFSET_TS_MAX, max);
}

/// Sets the header's time range; unseals the node.
pub(crate) fn set_ts_range(node: &mut [u8], min: i64, max: i64) {
    unseal(node);
    put_i64(node, OFFSET_TS_MIN, min);
    put_i64(node, OFFSET_TS_MAX, max);
}

/// `Full` (of `what`, counting `noun`) if `n` entries reach the fill limit.
pub(crate) fn check_fill_limit(
    n: usize,
    limit: usize,
    what: &'static str,
    noun: &str,
) -> Result<(), EventError> {
    if n >= limit {
        return Err(EventError::Full { what, detail: format!("{n} {noun} reach the fill limit {limit}") });
    }
    Ok(())
}

/// `Full` (of `what`, counting `noun`) if `n` entries fill the capacity.
pub(crate) fn check_capacity(
    n: usize,
    capacity: usize,
    what: &'static str,
    noun: &str,
) -> Result<(), EventError> {
    if n >= capacity {
        return Err(EventError::Full {
            what,
            detail: format!("{n} {noun} fill its capacity including the spare room"),
        });
    }
    Ok(())
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

/// The `count` entries in order.
pub(crate) fn entries(node: &[u8], entry_bytes: usize) -> std::slice::ChunksExact<'_, u8> {
    node[entries_range(entry_bytes, 0, count(node))].chunks_exact(entry_bytes)
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

/// Index of the first of the `count` entries whose i64 at `field` is
/// greater than `t` (`upper == true`) or not less than `t` (`upper ==
/// false`); the entries are sorted by that field.
fn partition_point(node: &[u8], entry_bytes: usize, field: usize, t: i64, upper: bool) -> usize {
    let (mut lo, mut hi) = (0, count(node));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let v = i64_at(node, NODE_HEADER_BYTES + mid * entry_bytes + field);
        let before = if upper { v <= t } else { v < t };
        if before {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Index of the first entry whose i64 at `field` is `>= t` (`count` if none).
pub(crate) fn lower_bound(node: &[u8], entry_bytes: usize, field: usize, t: i64) -> usize {
    partition_point(node, entry_bytes, field, t, false)
}

/// Index of the first entry whose i64 at `field` is `> t` (`count` if none).
pub(crate) fn upper_bound(node: &[u8], entry_bytes: usize, field: usize, t: i64) -> usize {
    partition_point(node, entry_bytes, field, t, true)
}

/// The first entry whose i64 at `field` is `>= t`.
pub(crate) fn first_ge(node: &[u8], entry_bytes: usize, field: usize, t: i64) -> Option<usize> {
    let i = lower_bound(node, entry_bytes, field, t);
    (i < count(node)).then_some(i)
}

/// The last entry whose i64 at `field` is `<= t`.
pub(crate) fn last_le(node: &[u8], entry_bytes: usize, field: usize, t: i64) -> Option<usize> {
    upper_bound(node, entry_bytes, field, t).checked_sub(1)
}

/// Writes the read methods leaf and index views share, once for both, as
/// inherent methods of the view (`LeafNode<B>` or `IndexNode<B>`, fields
/// `buf: B` and `layout: $layout`, a method `eb()` giving the entry size):
/// `layout`, `as_bytes`, `into_inner`, `header`, `len`, `is_empty`,
/// `is_full`, `is_at_capacity`, `id`, `prev`, `next`, `is_sealed`,
/// `used_bytes`, `header_range`, `entry_range`, `entries_range`,
/// `lower_bound`, `upper_bound`, `first_ge`, `last_le` (searching by the i64
/// at byte `$key` of the entries: an event's timestamp, an index key) and
/// `verify`. Each delegates to the functions of this module.
macro_rules! node_view_reads {
    (layout: $layout:ty, key: $key:expr) => {
        pub fn layout(&self) -> &$layout {
            &self.layout
        }

        /// The whole node buffer.
        pub fn as_bytes(&self) -> &[u8] {
            self.buf.as_ref()
        }

        pub fn into_inner(self) -> B {
            self.buf
        }

        fn bytes(&self) -> &[u8] {
            self.buf.as_ref()
        }

        /// The parsed and checked header.
        pub fn header(&self) -> Result<$crate::node::NodeHeader, $crate::ids::EventError> {
            $crate::node::header::read_header(self.bytes())
        }

        /// Number of entries (events of a leaf).
        pub fn len(&self) -> usize {
            $crate::node::frame::count(self.bytes())
        }

        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// Whether bulk-loading is done: an append would exceed the fill
        /// limit (an index node's fan-out).
        pub fn is_full(&self) -> bool {
            self.len() >= self.layout.fill_limit()
        }

        /// Whether even the spare room is used up: an ordered insert would fail.
        pub fn is_at_capacity(&self) -> bool {
            self.len() >= self.layout.capacity()
        }

        pub fn id(&self) -> $crate::ids::NodeId {
            $crate::node::frame::id(self.bytes())
        }

        pub fn prev(&self) -> Option<$crate::ids::NodeId> {
            $crate::node::frame::prev(self.bytes())
        }

        pub fn next(&self) -> Option<$crate::ids::NodeId> {
            $crate::node::frame::next(self.bytes())
        }

        pub fn is_sealed(&self) -> bool {
            $crate::node::frame::is_sealed(self.bytes())
        }

        /// Bytes of header plus entries: what the CRC covers and what a
        /// writer must persist.
        pub fn used_bytes(&self) -> usize {
            $crate::node::frame::used_bytes(self.bytes(), self.eb())
        }

        /// The byte range of the header (persist it after every change).
        pub fn header_range(&self) -> std::ops::Range<usize> {
            $crate::node::header::header_range()
        }

        /// The byte range of entry `i`.
        pub fn entry_range(&self, i: usize) -> std::ops::Range<usize> {
            $crate::node::frame::entry_range(self.eb(), i)
        }

        /// The byte range of entries `from..to`: after an ordered insert at
        /// `pos`, entries `pos..len()` moved.
        pub fn entries_range(&self, from: usize, to: usize) -> std::ops::Range<usize> {
            $crate::node::frame::entries_range(self.eb(), from, to)
        }

        /// Index of the first entry with key (a leaf's: timestamp) `>= t`
        /// (`len()` if none).
        pub fn lower_bound(&self, t: i64) -> usize {
            $crate::node::frame::lower_bound(self.bytes(), self.eb(), $key, t)
        }

        /// Index of the first entry with key (a leaf's: timestamp) `> t`
        /// (`len()` if none).
        pub fn upper_bound(&self, t: i64) -> usize {
            $crate::node::frame::upper_bound(self.bytes(), self.eb(), $key, t)
        }

        /// The first entry with key (a leaf's: timestamp) `>= t`.
        pub fn first_ge(&self, t: i64) -> Option<usize> {
            $crate::node::frame::first_ge(self.bytes(), self.eb(), $key, t)
        }

        /// The last entry with key (a leaf's: timestamp) `<= t`.
        pub fn last_le(&self, t: i64) -> Option<usize> {
            $crate::node::frame::last_le(self.bytes(), self.eb(), $key, t)
        }

        /// Checks a sealed node completely: `verify_structure` plus the
        /// sealed flag and the CRC32C of the used bytes.
        pub fn verify(&self) -> Result<(), $crate::ids::EventError> {
            $crate::node::frame::check_seal(self.bytes())?;
            self.verify_structure()
        }
    };
}
pub(crate) use node_view_reads;

/// Writes the change methods leaf and index views share, once for both:
/// `set_prev` and `set_next` (links to other nodes of `$kind`) and `seal`.
macro_rules! node_view_writes {
    (kind: $kind:expr) => {
        fn bytes_mut(&mut self) -> &mut [u8] {
            self.buf.as_mut()
        }

        pub fn set_prev(&mut self, prev: Option<$crate::ids::NodeId>) -> Result<(), $crate::ids::EventError> {
            $crate::node::frame::set_sibling(
                self.bytes_mut(),
                $kind,
                $crate::node::frame::Sibling::Prev,
                prev,
            )
        }

        pub fn set_next(&mut self, next: Option<$crate::ids::NodeId>) -> Result<(), $crate::ids::EventError> {
            $crate::node::frame::set_sibling(
                self.bytes_mut(),
                $kind,
                $crate::node::frame::Sibling::Next,
                next,
            )
        }

        /// Prepares the node for write-out: zeroes the unused bytes, sets
        /// the sealed flag and stores the CRC32C of the used bytes.
        pub fn seal(&mut self) {
            let eb = self.eb();
            $crate::node::frame::seal(self.bytes_mut(), eb);
        }
    };
}
pub(crate) use node_view_writes;
