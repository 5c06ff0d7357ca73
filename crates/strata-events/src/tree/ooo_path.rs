//! Root-to-leaf paths for the out-of-order merge (chronicledb-pmem.txt
//! section 4.3, third step: merged events are "inserted into their leaves"):
//! the leaf an application timestamp belongs in, and the leaf after a given
//! path (where a leaf at capacity hands its largest events).
//!
//! A flank index node has its entries and an implicit last child, the flank
//! node one level down (see `query`); a path step records which entry was
//! followed, `None` for the implicit child.
//!
//! A merge step redone after a crash finds its leaf by id
//! ([`TabTree::path_to_leaf`]): the keys on its path may be old or new
//! (only lowered), so the search follows every entry whose closed key
//! interval contains one of the leaf's previous timestamps.

use crate::ids::{EventError, NodeId};
use crate::node::IndexNode;

use super::query::QueryStats;
use super::TabTree;

/// Chooses the entry to follow in an index node (`None`: the implicit child).
type PickEntry<'p> = &'p dyn Fn(&TabTree, &IndexNode<&[u8]>, usize, bool) -> Option<usize>;

/// One index node on a path and the entry followed from it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct PathStep {
    pub(crate) level: usize,
    pub(crate) id: NodeId,
    pub(crate) flank: bool,
    /// `None`: the implicit child (the flank node below).
    pub(crate) entry: Option<usize>,
}

/// The index nodes from the root down and the leaf reached.
#[derive(Clone, Debug)]
pub(crate) struct LeafPath {
    pub(crate) steps: Vec<PathStep>,
    pub(crate) leaf: NodeId,
}

impl TabTree {
    /// The bytes of index node `id` at `level` (flank buffer or storage).
    pub(crate) fn index_bytes(&self, level: usize, id: NodeId) -> Result<Vec<u8>, EventError> {
        let mut stats = QueryStats::default();
        Ok(self.load(id, level, &mut stats)?.buf.as_ref().to_vec())
    }

    /// Follows `entry` (or the implicit child) of the node of `step`.
    fn child_of(&self, node: &IndexNode<&[u8]>, step: &PathStep) -> Result<NodeId, EventError> {
        match step.entry {
            Some(i) => node
                .child_at(i)
                .ok_or_else(|| EventError::corruption(format!("index {}", step.id), format!("no entry {i}"))),
            None => Ok(self.flank.id(step.level - 1)),
        }
    }

    /// Descends from `steps`' last node (already pushed, `entry` chosen by
    /// `pick`) to a leaf.
    fn descend(&self, mut steps: Vec<PathStep>, pick: PickEntry<'_>) -> Result<LeafPath, EventError> {
        loop {
            let step = *steps.last().expect("a path has a root");
            let bytes = self.index_bytes(step.level, step.id)?;
            let node = IndexNode::open(bytes.as_slice(), &self.index_layout)?;
            let child = self.child_of(&node, &step)?;
            let below = step.level - 1;
            let child_flank = step.entry.is_none();
            if below == 0 {
                return Ok(LeafPath { steps, leaf: child });
            }
            let cb = self.index_bytes(below, child)?;
            let cnode = IndexNode::open(cb.as_slice(), &self.index_layout)?;
            let entry = pick(self, &cnode, below, child_flank);
            steps.push(PathStep { level: below, id: child, flank: child_flank, entry });
        }
    }

    /// The entry of `node` (level `level`) an event with timestamp `ts`
    /// belongs in: the implicit child if the flank subtree below holds
    /// events no newer than `ts`, else the last entry with key `<= ts`.
    fn pick_for_ts(&self, node: &IndexNode<&[u8]>, level: usize, flank: bool, ts: i64) -> Option<usize> {
        if flank {
            let implicit = self.flank_subtree_min(level - 1);
            if node.is_empty() || implicit.is_some_and(|k| ts >= k) {
                return None;
            }
        }
        node.child_for_insert(ts)
    }

    /// The path to the leaf an event with timestamp `ts` belongs in.
    pub(crate) fn path_for_ts(&self, ts: i64) -> Result<LeafPath, EventError> {
        let top = self.flank.height() - 1;
        if top == 0 {
            return Ok(LeafPath { steps: Vec::new(), leaf: self.flank.id(0) });
        }
        let root = self.flank.index(top);
        let entry = self.pick_for_ts(&root, top, true, ts);
        let steps = vec![PathStep { level: top, id: self.flank.id(top), flank: true, entry }];
        self.descend(steps, &|tree, node, level, flank| tree.pick_for_ts(node, level, flank, ts))
    }

    /// The path to the leaf after `path`'s leaf (`None` after the flank leaf).
    pub(crate) fn next_leaf_path(&self, path: &LeafPath) -> Result<Option<LeafPath>, EventError> {
        let leftmost = |_: &TabTree, node: &IndexNode<&[u8]>, _: usize, flank: bool| -> Option<usize> {
            if flank && node.is_empty() {
                None
            } else {
                Some(0)
            }
        };
        for k in (0..path.steps.len()).rev() {
            let step = path.steps[k];
            let Some(i) = step.entry else { continue };
            let bytes = self.index_bytes(step.level, step.id)?;
            let node = IndexNode::open(bytes.as_slice(), &self.index_layout)?;
            let next = if i + 1 < node.len() {
                Some(i + 1)
            } else if step.flank {
                None
            } else {
                continue;
            };
            let mut steps = path.steps[..k].to_vec();
            steps.push(PathStep { entry: next, ..step });
            return self.descend(steps, &leftmost).map(Some);
        }
        Ok(None)
    }

    /// The path to completed leaf `leaf`, which held an event with
    /// timestamp `ts` before the current merge step (module comment).
    pub(crate) fn path_to_leaf(&self, leaf: NodeId, ts: i64) -> Result<LeafPath, EventError> {
        let top = self.flank.height() - 1;
        let mut steps = Vec::new();
        if top > 0 && self.find_leaf(top, self.flank.id(top), true, leaf, ts, &mut steps)? {
            return Ok(LeafPath { steps, leaf });
        }
        Err(EventError::corruption(
            format!("leaf {leaf}"),
            format!("no path from the root reaches it around timestamp {ts}"),
        ))
    }

    /// Depth-first search for `leaf` below the index node `id` of `level`,
    /// pushing the steps taken; `true` when found.
    fn find_leaf(
        &self,
        level: usize,
        id: NodeId,
        flank: bool,
        leaf: NodeId,
        ts: i64,
        steps: &mut Vec<PathStep>,
    ) -> Result<bool, EventError> {
        let bytes = self.index_bytes(level, id)?;
        let node = IndexNode::open(bytes.as_slice(), &self.index_layout)?;
        let n = node.len();
        let key = |i: usize| node.key_at(i).unwrap_or(i64::MAX);
        let mut candidates: Vec<Option<usize>> = (0..n)
            .filter(|&i| (i == 0 || key(i) <= ts) && (i + 1 == n || key(i + 1) >= ts))
            .map(Some)
            .collect();
        if flank {
            candidates.push(None);
        }
        for entry in candidates {
            let step = PathStep { level, id, flank, entry };
            let child = self.child_of(&node, &step)?;
            steps.push(step);
            let found = if level == 1 {
                child == leaf
            } else {
                self.find_leaf(level - 1, child, entry.is_none(), leaf, ts, steps)?
            };
            if found {
                return Ok(true);
            }
            steps.pop();
        }
        Ok(false)
    }
}
