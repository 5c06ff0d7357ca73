//! Recovery with the right flank in DRAM (chronicledb-pmem.txt section 2.2:
//! "without an additional log, the last leaf can be lost in a crash";
//! section 5.2: 40 ms for a tree of height 3). The flank is rebuilt from the
//! completed nodes in storage; the events of the flank leaf are lost.
//!
//! Every completed node is durable before the next node completes, so the
//! completed nodes of a level form a prefix of its sibling chain, and a node
//! is complete iff storage says so ([`super::storage::NodeStorage::is_complete`]).
//!
//! 1. The leftmost spine: leaf 0; the leftmost node of level `l + 1` was
//!    created as the new root when the leftmost node of level `l` (then the
//!    root) was written out, right after its successor, so its id is the
//!    successor's number + 1 in the index sequence (index 0 above the leaves
//!    with separate sequences). The first spine node that is not complete is
//!    the root.
//! 2. Top down: the root's children are the complete nodes on the chain from
//!    the leftmost node below it; the last of them is the last complete node
//!    `C` of that level and the first incomplete one is that level's flank
//!    node. Below, the flank node's children follow the last child of `C`
//!    on the chain of the next level down. Each level reads at most its
//!    fan-out plus one node.
//! 3. The rebuilt flank nodes get their entries back (key, child, the
//!    child's aggregates: recomputed for leaves, inline or from the PMem
//!    array for index nodes); the flank leaf starts empty.

use std::sync::Arc;

use crate::aggregate::Aggregates;
use crate::ids::{EventError, NodeId};
use crate::node::{new_node_buffer, IndexNode, LeafNode};

use super::storage::NodeStorage;
use super::TabTree;

/// A complete node read during the rebuild.
struct Completed {
    id: NodeId,
    bytes: Arc<Vec<u8>>,
}

/// The rebuilt flank: node buffers of levels `0..height`.
pub(crate) struct Rebuilt {
    pub(crate) levels: Vec<Vec<u8>>,
    pub(crate) nodes_read: u64,
}

fn corrupt(id: NodeId, what: impl Into<String>) -> EventError {
    EventError::corruption(format!("node {id} (DRAM flank recovery)"), what)
}

impl TabTree {
    fn read_complete(&self, id: NodeId, level: usize, nodes_read: &mut u64) -> Result<Completed, EventError> {
        let bytes = self.storage.read(id)?;
        *nodes_read += 1;
        let (got_level, next_ok) = if level == 0 {
            let leaf = LeafNode::open(bytes.as_slice(), &self.leaf_layout)?;
            leaf.verify()?;
            (0, leaf.next().is_some())
        } else {
            let node = IndexNode::open(bytes.as_slice(), &self.index_layout)?;
            node.verify()?;
            (node.level() as usize, node.next().is_some())
        };
        if got_level != level || crate::tree::flank::node_id(&bytes) != id {
            return Err(corrupt(id, format!("expected a node of level {level}, found level {got_level}")));
        }
        if !next_ok {
            return Err(corrupt(id, "a completed node without a right sibling"));
        }
        Ok(Completed { id, bytes })
    }

    fn next_of(&self, node: &Completed) -> NodeId {
        crate::tree::flank::next_id(&node.bytes).expect("checked when read")
    }

    /// Complete nodes of `level` on the sibling chain from `start`, and the
    /// first incomplete id (the level's flank node).
    fn walk_chain(
        &self,
        start: NodeId,
        level: usize,
        nodes_read: &mut u64,
    ) -> Result<(Vec<Completed>, NodeId), EventError> {
        let mut out = Vec::new();
        let mut cur = start;
        while self.storage.is_complete(cur)? {
            let node = self.read_complete(cur, level, nodes_read)?;
            cur = self.next_of(&node);
            out.push(node);
            if out.len() > self.index_layout.capacity().max(self.leaf_layout.capacity()) + 1 {
                return Err(corrupt(start, "more complete siblings after it than a node has entries"));
            }
        }
        Ok((out, cur))
    }

    /// The aggregates of a complete child for its rebuilt parent entry.
    fn child_aggregates(&self, child: &Completed, level: usize) -> Result<Aggregates, EventError> {
        if level == 0 {
            return LeafNode::open(child.bytes.as_slice(), &self.leaf_layout)?.aggregates(&self.config.spec);
        }
        if self.aggs.is_inline() {
            let node = IndexNode::open(child.bytes.as_slice(), &self.index_layout)?;
            return Ok(node.aggregates()?.unwrap_or_else(|| Aggregates::empty(&self.config.spec)));
        }
        self.aggs.get(&self.config.spec, child.id)
    }

    /// A flank node of `level` with id `id`, left sibling `prev`, and an
    /// entry per child.
    fn rebuilt_node(
        &self,
        level: usize,
        id: NodeId,
        prev: Option<NodeId>,
        children: &[Completed],
    ) -> Result<Vec<u8>, EventError> {
        let mut buf = new_node_buffer();
        if level == 0 {
            let mut leaf = LeafNode::init(buf.as_mut_slice(), &self.leaf_layout, id)?;
            leaf.set_prev(prev)?;
            return Ok(buf);
        }
        let mut node = IndexNode::init(buf.as_mut_slice(), &self.index_layout, id, level as u16)?;
        node.set_prev(prev)?;
        for child in children {
            let aggs = self.child_aggregates(child, level - 1)?;
            node.append(aggs.ts_min, child.id, Some(&aggs))
                .map_err(|e| corrupt(child.id, format!("cannot re-enter it into {id}: {e}")))?;
        }
        Ok(buf)
    }

    /// Rebuilds the flank from storage (module comment).
    pub(crate) fn rebuild_dram_flank(&self) -> Result<Rebuilt, EventError> {
        let mut nodes_read = 0;
        let storage = &self.storage;
        let leaf0 = NodeId::leaf(0);
        if !storage.is_complete(leaf0)? {
            return Ok(Rebuilt { levels: vec![self.rebuilt_node(0, leaf0, None, &[])?], nodes_read });
        }
        // 1. The leftmost spine.
        let mut spine = vec![self.read_complete(leaf0, 0, &mut nodes_read)?];
        let root = loop {
            let level = spine.len();
            if level as u32 >= self.config.max_levels {
                return Err(corrupt(
                    spine[level - 1].id,
                    "the leftmost spine is taller than the level limit",
                ));
            }
            let successor = self.next_of(&spine[level - 1]);
            let candidate = if level == 1 && !self.config.shared_id_sequence() {
                NodeId::index(0)
            } else {
                NodeId::index(successor.number + 1)
            };
            if !storage.is_complete(candidate)? {
                break candidate;
            }
            spine.push(self.read_complete(candidate, level, &mut nodes_read)?);
        };
        let height = spine.len() + 1;
        let top = height - 1;
        // 2. Top down.
        let mut levels: Vec<Vec<u8>> = vec![Vec::new(); height];
        let (children, flank_below) = self.walk_chain(spine[top - 1].id, top - 1, &mut nodes_read)?;
        levels[top] = self.rebuilt_node(top, root, None, &children)?;
        let mut last_complete = children.into_iter().last().expect("the leftmost node is complete");
        let mut flank_id = flank_below;
        for level in (1..top).rev() {
            // `flank_id` is the flank node of `level`; its children follow the
            // last child of the last complete node of `level`.
            let parent = IndexNode::open(last_complete.bytes.as_slice(), &self.index_layout)?;
            let last_child = parent
                .child_at(parent.len().wrapping_sub(1))
                .ok_or_else(|| corrupt(last_complete.id, "a completed index node without entries"))?;
            let z = self.read_complete(last_child, level - 1, &mut nodes_read)?;
            let (children, below) = self.walk_chain(self.next_of(&z), level - 1, &mut nodes_read)?;
            levels[level] = self.rebuilt_node(level, flank_id, Some(last_complete.id), &children)?;
            last_complete = children.into_iter().last().unwrap_or(z);
            flank_id = below;
        }
        levels[0] = self.rebuilt_node(0, flank_id, Some(last_complete.id), &[])?;
        Ok(Rebuilt { levels, nodes_read })
    }
}
