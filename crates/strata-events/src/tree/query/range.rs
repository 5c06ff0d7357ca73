//! Time travel and replay (chronicledb-pmem.txt section 2.2, R2: "fast
//! stream replay and time travel operations", served by the doubly linked
//! leaves): descend once to the first leaf that may hold `t_lo` (the last
//! entry with a key below `t_lo`: events equal to a key may end the previous
//! child), then follow the leaves' `next` links, the flank leaf last.

use crate::event::timestamp_of;
use crate::ids::EventError;
use crate::node::NODE_HEADER_BYTES;

use super::{QNode, QueryStats};
use crate::tree::TabTree;

/// The events of a time range, in timestamp order (arrival order among
/// equal timestamps). Yields an error at most once, then ends.
pub struct RangeIter<'a> {
    tree: &'a TabTree,
    leaf: Option<QNode<'a>>,
    /// Events in the current leaf and the next index to yield.
    len: usize,
    pos: usize,
    t_hi: i64,
    pending_error: Option<EventError>,
    stats: QueryStats,
}

impl<'a> RangeIter<'a> {
    pub(crate) fn new(tree: &'a TabTree, t_lo: i64, t_hi: i64) -> RangeIter<'a> {
        let mut it = RangeIter {
            tree,
            leaf: None,
            len: 0,
            pos: 0,
            t_hi,
            pending_error: None,
            stats: Default::default(),
        };
        if t_lo > t_hi {
            return it;
        }
        match it.seek(t_lo) {
            Ok(Some((leaf, pos))) => it.enter(leaf, pos),
            Ok(None) => {}
            Err(e) => it.pending_error = Some(e),
        }
        it
    }

    /// What the query touched so far.
    pub fn stats(&self) -> QueryStats {
        self.stats
    }

    /// The leaf and position of the first event with `ts >= t_lo` (or where
    /// it would be), descending from the root.
    fn seek(&mut self, t_lo: i64) -> Result<Option<(QNode<'a>, usize)>, EventError> {
        let tree = self.tree;
        let mut node = tree.root_node(&mut self.stats);
        while node.level > 0 {
            let implicit = tree.implicit_child(&node);
            let view = node.index(tree)?;
            let n = view.len();
            let to_flank = implicit.is_some_and(|k| n == 0 || k < t_lo);
            node = if to_flank {
                tree.flank_node(node.level - 1, &mut self.stats)
            } else if n == 0 {
                return Ok(None);
            } else {
                let i = view.child_for_scan_from(t_lo).expect("non-empty");
                let child = view.child_at(i).expect("in range");
                tree.load(child, node.level - 1, &mut self.stats)?
            };
        }
        let pos = node.leaf(tree)?.lower_bound(t_lo);
        Ok(Some((node, pos)))
    }

    fn enter(&mut self, leaf: QNode<'a>, pos: usize) {
        self.len = crate::node::header::header_count(leaf.buf.as_ref());
        self.pos = pos;
        self.leaf = Some(leaf);
    }

    /// Moves to the right sibling of the current leaf; `false` at the end.
    fn advance(&mut self) -> Result<bool, EventError> {
        let Some(leaf) = &self.leaf else { return Ok(false) };
        if leaf.flank {
            return Ok(false);
        }
        let Some(next) = crate::tree::flank::next_id(leaf.buf.as_ref()) else { return Ok(false) };
        let next = self.tree.load(next, 0, &mut self.stats)?;
        self.enter(next, 0);
        Ok(true)
    }

    /// Calls `f` with every remaining event, without allocating per event;
    /// stops early when `f` returns `false`.
    pub fn for_each_event(mut self, mut f: impl FnMut(&[u8]) -> bool) -> Result<QueryStats, EventError> {
        if let Some(e) = self.pending_error.take() {
            return Err(e);
        }
        let eb = self.tree.leaf_layout.event_bytes();
        while let Some(leaf) = &self.leaf {
            let bytes = leaf.buf.as_ref();
            while self.pos < self.len {
                let at = NODE_HEADER_BYTES + self.pos * eb;
                let event = &bytes[at..at + eb];
                self.stats.events_scanned += 1;
                if timestamp_of(event) > self.t_hi {
                    return Ok(self.stats);
                }
                self.pos += 1;
                if !f(event) {
                    return Ok(self.stats);
                }
            }
            if !self.advance()? {
                break;
            }
        }
        Ok(self.stats)
    }
}

impl Iterator for RangeIter<'_> {
    type Item = Result<Vec<u8>, EventError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.pending_error.take() {
            self.leaf = None;
            return Some(Err(e));
        }
        let eb = self.tree.leaf_layout.event_bytes();
        loop {
            let leaf = self.leaf.as_ref()?;
            if self.pos < self.len {
                let at = NODE_HEADER_BYTES + self.pos * eb;
                let event = &leaf.buf.as_ref()[at..at + eb];
                self.stats.events_scanned += 1;
                if timestamp_of(event) > self.t_hi {
                    self.leaf = None;
                    return None;
                }
                self.pos += 1;
                return Some(Ok(event.to_vec()));
            }
            match self.advance() {
                Ok(true) => {}
                Ok(false) => {
                    self.leaf = None;
                    return None;
                }
                Err(e) => {
                    self.leaf = None;
                    return Some(Err(e));
                }
            }
        }
    }
}
