//! The 64-byte header shared by leaf and index nodes
//! (`docs/format/events-node.md`, "Node header"): field offsets, raw
//! little-endian accessors, the CRC32C over the used bytes, and
//! [`read_header`], which parses and range-checks a header of any kind.

use std::ops::Range;

use crate::ids::{EventError, NodeId, NodeKind};
use crate::node::{NODE_BYTES, NODE_HEADER_BYTES};

/// First four bytes of every node: the ASCII bytes `STEN`.
pub const NODE_MAGIC: u32 = u32::from_le_bytes(*b"STEN");
/// Version of the node format; nodes of any other version are rejected.
pub const NODE_FORMAT_VERSION: u8 = 1;
/// `kind` byte of a leaf.
pub const NODE_KIND_LEAF: u8 = 1;
/// `kind` byte of an index node.
pub const NODE_KIND_INDEX: u8 = 2;
/// `flags` bit: the node was sealed (CRC valid) and not changed since.
pub const FLAG_SEALED: u8 = 0x01;
/// `flags` bit (index nodes only): entries carry the child's aggregates.
pub const FLAG_AGGREGATES_INLINE: u8 = 0x02;
/// Raw sibling link meaning "no sibling".
pub const NO_SIBLING: u64 = u64::MAX;

pub const OFFSET_MAGIC: usize = 0;
pub const OFFSET_VERSION: usize = 4;
pub const OFFSET_KIND: usize = 5;
pub const OFFSET_FLAGS: usize = 6;
pub const OFFSET_RESERVED_BYTE: usize = 7;
pub const OFFSET_LEVEL: usize = 8;
pub const OFFSET_ENTRY_BYTES: usize = 10;
pub const OFFSET_COUNT: usize = 12;
pub const OFFSET_ID: usize = 16;
pub const OFFSET_PREV: usize = 24;
pub const OFFSET_NEXT: usize = 32;
pub const OFFSET_TS_MIN: usize = 40;
pub const OFFSET_TS_MAX: usize = 48;
pub const OFFSET_CRC: usize = 56;
pub const OFFSET_RESERVED_WORD: usize = 60;

/// The parsed header of a node of either kind.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NodeHeader {
    pub kind: NodeKind,
    pub flags: u8,
    /// 0 for leaves, 1 for index nodes whose children are leaves, ...
    pub level: u16,
    /// Bytes of one entry (an event, or an index entry).
    pub entry_bytes: u16,
    /// Number of entries.
    pub count: u32,
    pub id: NodeId,
    pub prev: Option<NodeId>,
    pub next: Option<NodeId>,
    pub ts_min: i64,
    pub ts_max: i64,
    pub crc: u32,
}

impl NodeHeader {
    pub fn is_sealed(&self) -> bool {
        self.flags & FLAG_SEALED != 0
    }

    /// Bytes of the header plus the entries: what the CRC covers.
    pub fn used_bytes(&self) -> usize {
        NODE_HEADER_BYTES + self.count as usize * self.entry_bytes as usize
    }
}

#[inline]
pub(crate) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

#[inline]
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

#[inline]
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[inline]
pub(crate) fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[inline]
/// The entry count of a node buffer (its header's `count` field).
pub(crate) fn header_count(buf: &[u8]) -> usize {
    u32_at(buf, OFFSET_COUNT) as usize
}

pub(crate) fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

#[inline]
pub(crate) fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[inline]
pub(crate) fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[inline]
pub(crate) fn put_i64(b: &mut [u8], at: usize, v: i64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// The raw encoding of an optional sibling link.
pub(crate) fn sibling_to_raw(id: Option<NodeId>) -> u64 {
    id.map_or(NO_SIBLING, NodeId::to_u64)
}

pub(crate) fn sibling_from_raw(raw: u64) -> Option<NodeId> {
    (raw != NO_SIBLING).then(|| NodeId::from_u64(raw))
}

/// The byte range of the header.
pub const fn header_range() -> Range<usize> {
    0..NODE_HEADER_BYTES
}

/// CRC32C of `node[..used_bytes]` with the CRC field read as zero.
pub fn node_crc(node: &[u8], used_bytes: usize) -> u32 {
    let crc = crc32c::crc32c(&node[..OFFSET_CRC]);
    let crc = crc32c::crc32c_append(crc, &[0; 4]);
    crc32c::crc32c_append(crc, &node[OFFSET_CRC + 4..used_bytes])
}

/// Writes a fresh header (count 0, empty time range, no siblings, not
/// sealed) into `node`.
pub(crate) fn init_header(node: &mut [u8], kind: u8, flags: u8, level: u16, entry_bytes: u16, id: NodeId) {
    let h = &mut node[..NODE_HEADER_BYTES];
    h.fill(0);
    put_u32(h, OFFSET_MAGIC, NODE_MAGIC);
    h[OFFSET_VERSION] = NODE_FORMAT_VERSION;
    h[OFFSET_KIND] = kind;
    h[OFFSET_FLAGS] = flags;
    put_u16(h, OFFSET_LEVEL, level);
    put_u16(h, OFFSET_ENTRY_BYTES, entry_bytes);
    put_u64(h, OFFSET_ID, id.to_u64());
    put_u64(h, OFFSET_PREV, NO_SIBLING);
    put_u64(h, OFFSET_NEXT, NO_SIBLING);
    put_i64(h, OFFSET_TS_MIN, i64::MAX);
    put_i64(h, OFFSET_TS_MAX, i64::MIN);
}

fn corrupt(what: String) -> EventError {
    EventError::corruption("node header", what)
}

/// The kind of the node in `bytes`, from its magic, version and kind byte.
pub fn peek_kind(bytes: &[u8]) -> Result<NodeKind, EventError> {
    if bytes.len() < NODE_HEADER_BYTES {
        return Err(corrupt(format!("{} bytes are too short for a node header", bytes.len())));
    }
    let magic = u32_at(bytes, OFFSET_MAGIC);
    if magic != NODE_MAGIC {
        return Err(corrupt(format!("bad magic {magic:#010x}")));
    }
    if bytes[OFFSET_VERSION] != NODE_FORMAT_VERSION {
        return Err(corrupt(format!(
            "unknown version {}, expected {NODE_FORMAT_VERSION}",
            bytes[OFFSET_VERSION]
        )));
    }
    match bytes[OFFSET_KIND] {
        NODE_KIND_LEAF => Ok(NodeKind::Leaf),
        NODE_KIND_INDEX => Ok(NodeKind::Index),
        k => Err(corrupt(format!("unknown kind {k}"))),
    }
}

/// Parses the header of the node in `bytes` (at least [`NODE_BYTES`] long)
/// and checks what the header alone can tell: magic, version, kind, flags,
/// reserved bytes, level, entry size, that the entries fit the node, and
/// that the id and sibling links are of the node's kind.
pub fn read_header(bytes: &[u8]) -> Result<NodeHeader, EventError> {
    let kind = peek_kind(bytes)?;
    if bytes.len() != NODE_BYTES {
        return Err(corrupt(format!("a node has {NODE_BYTES} bytes, got {}", bytes.len())));
    }
    let flags = bytes[OFFSET_FLAGS];
    let allowed = match kind {
        NodeKind::Leaf => FLAG_SEALED,
        NodeKind::Index => FLAG_SEALED | FLAG_AGGREGATES_INLINE,
    };
    if flags & !allowed != 0 {
        return Err(corrupt(format!("unknown flags {flags:#04x} on a {kind:?} node")));
    }
    if bytes[OFFSET_RESERVED_BYTE] != 0 || u32_at(bytes, OFFSET_RESERVED_WORD) != 0 {
        return Err(corrupt("reserved bytes are not zero".into()));
    }
    let level = u16_at(bytes, OFFSET_LEVEL);
    if (kind == NodeKind::Leaf) != (level == 0) {
        return Err(corrupt(format!("a {kind:?} node at level {level}")));
    }
    let entry_bytes = u16_at(bytes, OFFSET_ENTRY_BYTES);
    let count = u32_at(bytes, OFFSET_COUNT);
    if entry_bytes == 0 {
        return Err(corrupt("entry size 0".into()));
    }
    let room = (NODE_BYTES - NODE_HEADER_BYTES) / entry_bytes as usize;
    if count as usize > room {
        return Err(corrupt(format!("{count} entries of {entry_bytes} bytes do not fit a node")));
    }
    let id = NodeId::from_u64(u64_at(bytes, OFFSET_ID));
    let prev = sibling_from_raw(u64_at(bytes, OFFSET_PREV));
    let next = sibling_from_raw(u64_at(bytes, OFFSET_NEXT));
    for (what, link) in [("id", Some(id)), ("prev", prev), ("next", next)] {
        if let Some(link) = link {
            if link.kind != kind {
                return Err(corrupt(format!("{what} {link} on a {kind:?} node")));
            }
        }
    }
    if prev == Some(id) || next == Some(id) {
        return Err(corrupt(format!("node {id} links to itself")));
    }
    Ok(NodeHeader {
        kind,
        flags,
        level,
        entry_bytes,
        count,
        id,
        prev,
        next,
        ts_min: i64_at(bytes, OFFSET_TS_MIN),
        ts_max: i64_at(bytes, OFFSET_TS_MAX),
        crc: u32_at(bytes, OFFSET_CRC),
    })
}

/// Checks the sealed flag and the CRC of a node whose header parsed.
pub(crate) fn check_crc(bytes: &[u8], header: &NodeHeader) -> Result<(), EventError> {
    if !header.is_sealed() {
        return Err(EventError::corruption(
            format!("node {}", header.id),
            "not sealed: the node changed after its CRC was computed",
        ));
    }
    let crc = node_crc(bytes, header.used_bytes());
    if crc != header.crc {
        return Err(EventError::corruption(
            format!("node {}", header.id),
            format!("CRC mismatch: stored {:#010x}, computed {crc:#010x}", header.crc),
        ));
    }
    Ok(())
}
