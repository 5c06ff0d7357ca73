//! Queries over the TAB+-tree (chronicledb-pmem.txt section 2.2, R2 and R3):
//! time travel and replay ([`range`]), temporal aggregation from the index
//! entries' aggregates ([`aggregate`]), filters on a secondary attribute
//! pruned by min/max aggregates ([`filter`]), point queries. Every query
//! sees the flank too.
//!
//! The flank is part of the tree as queries see it: a flank index node has
//! its entries (completed children) and, after them, an implicit last child,
//! the flank node one level down, whose key is the smallest timestamp of the
//! flank subtree below. Completed nodes are read through the storage cache;
//! flank nodes are the DRAM buffers.
//!
//! Out-of-order data (section 4.3) lives in a separate queue; [`merge`]
//! holds the hook to merge a sorted extra source into a range result, and
//! aggregates are decomposable, so the caller merges the queue's aggregates.

mod aggregate;
mod filter;
mod merge;
mod range;

use std::sync::Arc;

use crate::ids::{EventError, NodeId};
use crate::node::{IndexNode, LeafNode};

use super::TabTree;

pub use merge::MergeByTs;
pub use range::RangeIter;

/// What one query touched.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// Completed index nodes loaded (from the cache, SSD or PMem).
    pub index_nodes_read: u64,
    /// Completed leaves loaded.
    pub leaves_read: u64,
    /// Flank nodes visited (DRAM, no I/O).
    pub flank_nodes_visited: u64,
    /// Child aggregates consulted (each a PMem read with the aggregate array).
    pub aggregates_read: u64,
    /// Subtrees answered from their aggregates without descending.
    pub subtrees_covered: u64,
    /// Subtrees skipped by time range or attribute range.
    pub subtrees_pruned: u64,
    /// Events looked at in leaves.
    pub events_scanned: u64,
}

impl QueryStats {
    /// Completed nodes loaded (index nodes and leaves).
    pub fn nodes_read(&self) -> u64 {
        self.index_nodes_read + self.leaves_read
    }
}

/// A node's bytes during a query.
#[derive(Clone)]
pub(crate) enum NodeBuf<'a> {
    Flank(&'a [u8]),
    Stored(Arc<Vec<u8>>),
}

impl AsRef<[u8]> for NodeBuf<'_> {
    fn as_ref(&self) -> &[u8] {
        match self {
            NodeBuf::Flank(b) => b,
            NodeBuf::Stored(b) => b.as_slice(),
        }
    }
}

/// A node a query is at: its level, whether it is the flank node of its
/// level, its bytes.
#[derive(Clone)]
pub(crate) struct QNode<'a> {
    pub(crate) level: usize,
    pub(crate) flank: bool,
    pub(crate) buf: NodeBuf<'a>,
}

impl<'a> QNode<'a> {
    pub(crate) fn leaf(&self, tree: &TabTree) -> Result<LeafNode<&[u8]>, EventError> {
        LeafNode::open(self.buf.as_ref(), &tree.leaf_layout)
    }

    pub(crate) fn index(&self, tree: &TabTree) -> Result<IndexNode<&[u8]>, EventError> {
        IndexNode::open(self.buf.as_ref(), &tree.index_layout)
    }
}

impl TabTree {
    /// The flank node of `level` as a query node.
    pub(crate) fn flank_node(&self, level: usize, stats: &mut QueryStats) -> QNode<'_> {
        stats.flank_nodes_visited += 1;
        QNode { level, flank: true, buf: NodeBuf::Flank(self.flank.bytes(level)) }
    }

    /// The root (the flank node of the top level).
    pub(crate) fn root_node(&self, stats: &mut QueryStats) -> QNode<'_> {
        self.flank_node(self.flank.height() - 1, stats)
    }

    /// Node `id` of `level`: the flank node if it is one, else read from
    /// storage (checking its level).
    pub(crate) fn load(
        &self,
        id: NodeId,
        level: usize,
        stats: &mut QueryStats,
    ) -> Result<QNode<'_>, EventError> {
        if level < self.flank.height() && self.flank.id(level) == id {
            return Ok(self.flank_node(level, stats));
        }
        let bytes = self.storage.read(id)?;
        let node = QNode { level, flank: false, buf: NodeBuf::Stored(bytes) };
        if level == 0 {
            node.leaf(self)?;
            stats.leaves_read += 1;
        } else {
            let view = node.index(self)?;
            if view.level() as usize != level {
                return Err(EventError::corruption(
                    format!("node {id}"),
                    format!("an index node of level {} where level {level} was expected", view.level()),
                ));
            }
            stats.index_nodes_read += 1;
        }
        Ok(node)
    }

    /// The smallest timestamp of the flank subtree rooted at the flank node
    /// of `level` (`None` if it holds no event).
    pub(crate) fn flank_subtree_min(&self, level: usize) -> Option<i64> {
        for l in (0..=level).rev() {
            if self.flank.count(l) > 0 {
                return Some(if l == 0 { self.flank.leaf().ts_min() } else { self.flank.index(l).ts_min() });
            }
        }
        None
    }

    /// The implicit last child of a flank index node at `level`: the flank
    /// subtree below and its key, if it holds events.
    pub(crate) fn implicit_child(&self, node: &QNode<'_>) -> Option<i64> {
        if node.flank && node.level >= 1 {
            self.flank_subtree_min(node.level - 1)
        } else {
            None
        }
    }

    /// Events with `t_lo <= ts <= t_hi`, in order (time travel).
    pub fn range(&self, t_lo: i64, t_hi: i64) -> RangeIter<'_> {
        RangeIter::new(self, t_lo, t_hi)
    }

    /// Every event in order, following the leaves' next links (replay).
    pub fn replay(&self) -> RangeIter<'_> {
        RangeIter::new(self, i64::MIN, i64::MAX)
    }

    /// The events with timestamp `t`, in arrival order.
    pub fn point(&self, t: i64) -> Result<Vec<Vec<u8>>, EventError> {
        self.range(t, t).collect()
    }

    /// [`TabTree::range`] merged with `extra`, events sorted by timestamp
    /// and already restricted to the range (e.g. the out-of-order queue's
    /// answer); on equal timestamps the tree's events come first.
    pub fn range_merged<I>(&self, t_lo: i64, t_hi: i64, extra: I) -> MergeByTs<RangeIter<'_>, I::IntoIter>
    where
        I: IntoIterator<Item = Vec<u8>>,
    {
        MergeByTs::new(self.range(t_lo, t_hi), extra.into_iter())
    }
}
