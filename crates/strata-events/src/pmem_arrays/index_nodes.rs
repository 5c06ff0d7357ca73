//! [`IndexNodeArray`]: the TAB+-tree's index nodes as a flat PMem array
//! (chronicledb-pmem.txt section 4.1 "Index Nodes", Fig. 4 (c)): slot `i`
//! holds the index node with index-sequence number `i`
//! ([`NodeId::index`]`(i)`; leaves have their own sequence on SSD), each slot
//! one node (`node_bytes`, typically 8192, fixed at format).
//!
//! Area layout (relative to the base): header (64 bytes), the node-count word
//! at 64, node slots from 256, `node_bytes` apart (a multiple of 64, so every
//! node starts on a cache line; on a 256-aligned base, on an XPLine).
//!
//! Validity: nodes are created in id order. Creating node `n` (`write_node`
//! with `i == node_count`) writes and persists its bytes, then stores and
//! persists `node_count = n + 1` with one failure-atomic 8-byte store: after a
//! crash `node_count` covers exactly the nodes whose creation completed
//! (those whose `write_node` returned, and maybe the one in flight, fully
//! persisted). Later changes to a node (`write_node` again, `write_range` +
//! `persist_range`) are persisted when the call returns but are not atomic:
//! the node format's own protocol (entries persisted before the entry count
//! in its header, an aligned 8-byte word) makes appends crash-consistent.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use strata_pmem::{Region, RegionOffset};

use super::area::{Area, PmemArrayCounters, SLOTS_ALIGN_BYTES};
use super::header::{ArrayHeader, HEADER_BYTES, HEADER_OFFSET_MAGIC, LAYOUT_ALIGNED, PMEM_ARRAYS_VERSION};
use crate::ids::{EventError, NodeId, NodeKind};

/// "STIDXARR" as a little-endian u64.
pub const INDEX_NODE_ARRAY_MAGIC: u64 = u64::from_le_bytes(*b"STIDXARR");
/// Area offset of the persisted node count.
pub const NODE_COUNT_OFFSET: u64 = 64;
/// Node sizes are multiples of this (a cache line).
pub const NODE_ALIGN_BYTES: u64 = 64;
/// Largest node.
pub const MAX_NODE_BYTES: u64 = 1 << 20;

const WHAT: &str = "index node array";

/// The slot number of an index node id; `InvalidInput` for a leaf id (leaves
/// are not stored here and have their own sequence).
pub fn index_number(id: NodeId) -> Result<u64, EventError> {
    match id.kind {
        NodeKind::Index => Ok(id.number),
        NodeKind::Leaf => {
            Err(EventError::invalid(format!("{id} is a leaf; the {WHAT} holds index nodes only")))
        }
    }
}

fn check_node_bytes(node_bytes: u64) -> Result<(), EventError> {
    if node_bytes == 0 || !node_bytes.is_multiple_of(NODE_ALIGN_BYTES) || node_bytes > MAX_NODE_BYTES {
        return Err(EventError::invalid(format!(
            "index node size {node_bytes} is not a multiple of {NODE_ALIGN_BYTES} in \
             {NODE_ALIGN_BYTES}..={MAX_NODE_BYTES} bytes"
        )));
    }
    Ok(())
}

fn expected_header(node_bytes: u64, area_bytes: u64) -> Option<ArrayHeader> {
    let capacity = area_bytes.checked_sub(SLOTS_ALIGN_BYTES)? / node_bytes;
    if capacity == 0 {
        return None;
    }
    Some(ArrayHeader {
        magic: INDEX_NODE_ARRAY_MAGIC,
        version: PMEM_ARRAYS_VERSION,
        layout: LAYOUT_ALIGNED,
        record_bytes: u32::try_from(node_bytes).ok()?,
        stride_bytes: u32::try_from(node_bytes).ok()?,
        capacity,
        area_bytes,
        table_offset: NODE_COUNT_OFFSET,
        slots_offset: SLOTS_ALIGN_BYTES,
    })
}

/// The index nodes of the tree, slot `i` for `NodeId::index(i)`.
///
/// Every method takes `&self`; writes are serialized by the tree (one writer
/// per node), node creation is serialized here.
pub struct IndexNodeArray {
    area: Area,
    node_bytes: u64,
    capacity: u64,
    node_count: AtomicU64,
    create: Mutex<()>,
}

impl IndexNodeArray {
    /// Area size for `capacity` nodes of `node_bytes`.
    pub fn area_bytes_for(capacity: u64, node_bytes: u64) -> Result<u64, EventError> {
        check_node_bytes(node_bytes)?;
        capacity
            .checked_mul(node_bytes)
            .and_then(|b| b.checked_add(SLOTS_ALIGN_BYTES))
            .ok_or_else(|| EventError::invalid(format!("{capacity} index nodes overflow an area size")))
    }

    /// Formats the area (base 64-byte aligned) with as many node slots as
    /// fit and `node_count` 0. The magic is cleared first and written last.
    pub fn format(
        region: Arc<Region>,
        base: RegionOffset,
        area_bytes: u64,
        node_bytes: u64,
    ) -> Result<IndexNodeArray, EventError> {
        check_node_bytes(node_bytes)?;
        let area = Area::new(region, base, area_bytes, WHAT)?;
        let header = expected_header(node_bytes, area_bytes).ok_or_else(|| {
            EventError::invalid(format!(
                "{WHAT} area of {area_bytes} bytes holds no node of {node_bytes} bytes"
            ))
        })?;
        area.store_u64_persist(HEADER_OFFSET_MAGIC, 0)?;
        let bytes = header.encode();
        area.write(8, &bytes[8..])?;
        area.store_u64(NODE_COUNT_OFFSET, 0)?;
        area.flush(8, HEADER_BYTES - 8)?;
        area.flush(NODE_COUNT_OFFSET, 8)?;
        area.fence();
        area.store_u64_persist(HEADER_OFFSET_MAGIC, header.magic)?;
        Ok(IndexNodeArray {
            area,
            node_bytes,
            capacity: header.capacity,
            node_count: 0.into(),
            create: Mutex::new(()),
        })
    }

    /// Opens a formatted area: validates the header (`Corruption` unless it
    /// is what `format` writes for `area_bytes`) and the node count. O(1).
    pub fn open(
        region: Arc<Region>,
        base: RegionOffset,
        area_bytes: u64,
    ) -> Result<IndexNodeArray, EventError> {
        let opened = Area::open_formatted(region, base, area_bytes, WHAT, INDEX_NODE_ARRAY_MAGIC)?;
        let header = opened.header;
        let node_bytes = u64::from(header.record_bytes);
        check_node_bytes(node_bytes).map_err(|e| opened.corruption(e.to_string()))?;
        opened.expect_header(expected_header(node_bytes, area_bytes), "nodes")?;
        let area = opened.area;
        let node_count = area.load_u64(NODE_COUNT_OFFSET)?;
        if node_count > header.capacity {
            return Err(EventError::corruption(
                format!("{WHAT} node count at {}", base + NODE_COUNT_OFFSET),
                format!("node count {node_count} exceeds the capacity {}", header.capacity),
            ));
        }
        Ok(IndexNodeArray {
            area,
            node_bytes,
            capacity: header.capacity,
            node_count: node_count.into(),
            create: Mutex::new(()),
        })
    }

    pub fn node_bytes(&self) -> u64 {
        self.node_bytes
    }

    /// Number of node slots.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Nodes created so far: index numbers `0..node_count` exist.
    pub fn node_count(&self) -> u64 {
        self.node_count.load(Ordering::Acquire)
    }

    pub fn region(&self) -> &Arc<Region> {
        self.area.region()
    }

    /// What this array wrote, read and persisted since format or open.
    pub fn counters(&self) -> PmemArrayCounters {
        self.area.counters()
    }

    /// Region offset of node slot `i` (created or not).
    pub fn node_offset(&self, i: u64) -> Result<RegionOffset, EventError> {
        if i >= self.capacity {
            return Err(EventError::invalid(format!("{WHAT} has no slot {i}: capacity {}", self.capacity)));
        }
        Ok(self.area.base() + self.slot_rel(i))
    }

    fn slot_rel(&self, i: u64) -> u64 {
        SLOTS_ALIGN_BYTES + i * self.node_bytes
    }

    fn check_exists(&self, i: u64) -> Result<(), EventError> {
        let count = self.node_count();
        if i >= count {
            return Err(EventError::invalid(format!(
                "index node {i} does not exist: {count} created (create it with write_node)"
            )));
        }
        Ok(())
    }

    fn check_range(&self, i: u64, offset: u64, len: u64) -> Result<(), EventError> {
        if offset.checked_add(len).is_none_or(|end| end > self.node_bytes) {
            return Err(EventError::invalid(format!(
                "{len} bytes at offset {offset} of index node {i} exceed the node size {}",
                self.node_bytes
            )));
        }
        Ok(())
    }

    /// Writes `bytes` (at most `node_bytes`) at the start of node `i` and
    /// persists them (flush of `bytes.len()` bytes, one fence). `i ==
    /// node_count` creates the node (then one more fence for the count);
    /// `i < node_count` rewrites it in place (not atomic). The rest of the
    /// slot is not touched: the node's header says which bytes are valid.
    pub fn write_node(&self, i: u64, bytes: &[u8]) -> Result<(), EventError> {
        self.check_range(i, 0, bytes.len() as u64)?;
        let _create = self.create.lock();
        let count = self.node_count();
        if i > count {
            return Err(EventError::invalid(format!(
                "index nodes are created in id order: the next is {count}, not {i}"
            )));
        }
        if i >= self.capacity {
            return Err(EventError::Full {
                what: WHAT,
                detail: format!("{} nodes of {} bytes created", self.capacity, self.node_bytes),
            });
        }
        self.area.count_write();
        self.area.write(self.slot_rel(i), bytes)?;
        self.area.persist(self.slot_rel(i), bytes.len() as u64)?;
        if i == count {
            self.area.store_u64_persist(NODE_COUNT_OFFSET, count + 1)?;
            self.node_count.store(count + 1, Ordering::Release);
        }
        Ok(())
    }

    /// Writes `bytes` at `offset` within existing node `i`, not persisted
    /// (see [`IndexNodeArray::persist_ranges`]).
    pub fn write_range(&self, i: u64, offset: u64, bytes: &[u8]) -> Result<(), EventError> {
        self.check_exists(i)?;
        self.check_range(i, offset, bytes.len() as u64)?;
        self.area.count_write();
        self.area.write(self.slot_rel(i) + offset, bytes)
    }

    /// Persists `range` (byte offsets within node `i`): flush + one fence.
    pub fn persist_range(&self, i: u64, range: Range<u64>) -> Result<(), EventError> {
        self.persist_ranges(i, &[range])
    }

    /// Persists several ranges of node `i` (say its header and the entries
    /// just appended) with one flush each and a single fence.
    pub fn persist_ranges(&self, i: u64, ranges: &[Range<u64>]) -> Result<(), EventError> {
        self.check_exists(i)?;
        for r in ranges {
            if r.start > r.end {
                return Err(EventError::invalid(format!("range {r:?} of index node {i} is reversed")));
            }
            self.check_range(i, r.start, r.end - r.start)?;
        }
        for r in ranges {
            self.area.flush(self.slot_rel(i) + r.start, r.end - r.start)?;
        }
        self.area.fence();
        Ok(())
    }

    /// A copy of the whole slot of node `i` (`node_bytes`; cost: one copy of
    /// the node out of PMem; use `read_range` to read only the header or an
    /// entry).
    pub fn read_node(&self, i: u64) -> Result<Vec<u8>, EventError> {
        let mut buf = vec![0u8; self.node_bytes as usize];
        self.read_range(i, 0, &mut buf)?;
        Ok(buf)
    }

    /// Copies `buf.len()` bytes at `offset` of node `i` into `buf`.
    pub fn read_range(&self, i: u64, offset: u64, buf: &mut [u8]) -> Result<(), EventError> {
        self.check_exists(i)?;
        self.check_range(i, offset, buf.len() as u64)?;
        self.area.count_read();
        self.area.read(self.slot_rel(i) + offset, buf)
    }
}
