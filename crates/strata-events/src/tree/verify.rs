//! The invariants of the TAB+-tree (chronicledb-pmem.txt section 2.2), checked
//! by reading every node: each node valid (completed nodes sealed with a
//! matching CRC, flank nodes structurally), keys in order and equal to their
//! child's smallest timestamp, every entry's aggregates (inline or in the PMem
//! array) equal to their recomputation from the leaves below, the flank's
//! running aggregates likewise, timestamps non-decreasing over all leaves,
//! sibling links on every level forming one chain that ends in the flank
//! node, and node ids consecutive per id sequence. Used by tests and tools;
//! it is O(nodes).

use std::collections::BTreeSet;

use crate::aggregate::Aggregates;
use crate::ids::{EventError, NodeId, NodeKind};

use super::query::{QNode, QueryStats};
use super::TabTree;

/// What [`TabTree::verify`] walked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeCheck {
    pub height: usize,
    pub leaves: u64,
    pub index_nodes: u64,
    pub events: u64,
}

/// One node as the walk saw it.
struct Seen {
    id: NodeId,
    flank: bool,
    prev: Option<NodeId>,
    next: Option<NodeId>,
}

struct Walk {
    levels: Vec<Vec<Seen>>,
    last_ts: i64,
    events: u64,
}

fn bad(id: NodeId, what: String) -> EventError {
    EventError::corruption(format!("tree node {id}"), what)
}

impl TabTree {
    /// Checks every invariant (module comment); `Corruption` names the first
    /// violation.
    pub fn verify(&self) -> Result<TreeCheck, EventError> {
        let height = self.flank.height();
        let mut walk =
            Walk { levels: (0..height).map(|_| Vec::new()).collect(), last_ts: i64::MIN, events: 0 };
        let mut stats = QueryStats::default();
        let root = self.root_node(&mut stats);
        self.verify_node(&root, &mut walk, &mut stats)?;
        if walk.events != self.events {
            return Err(EventError::corruption(
                "tree",
                format!("the leaves hold {} events, the tree counts {}", walk.events, self.events),
            ));
        }
        let mut ids = Vec::new();
        for (level, nodes) in walk.levels.iter().enumerate() {
            self.verify_chain(level, nodes)?;
            ids.extend(nodes.iter().map(|s| s.id));
        }
        self.verify_ids(&ids)?;
        Ok(TreeCheck {
            height,
            leaves: walk.levels[0].len() as u64,
            index_nodes: walk.levels[1..].iter().map(|l| l.len() as u64).sum(),
            events: walk.events,
        })
    }

    /// Checks `node` and its subtree; returns the subtree's recomputed aggregates.
    fn verify_node(
        &self,
        node: &QNode<'_>,
        walk: &mut Walk,
        stats: &mut QueryStats,
    ) -> Result<Aggregates, EventError> {
        let spec = &self.config.spec;
        if node.level == 0 {
            let leaf = node.leaf(self)?;
            if node.flank {
                leaf.verify_structure()?
            } else {
                leaf.verify()?
            }
            walk.levels[0].push(Seen {
                id: leaf.id(),
                flank: node.flank,
                prev: leaf.prev(),
                next: leaf.next(),
            });
            for e in leaf.iter() {
                let ts = crate::event::timestamp_of(e);
                if ts < walk.last_ts {
                    return Err(bad(
                        leaf.id(),
                        format!("timestamp {ts} after {} in an earlier leaf", walk.last_ts),
                    ));
                }
                walk.last_ts = ts;
            }
            walk.events += leaf.len() as u64;
            return leaf.aggregates(spec);
        }
        let view = node.index(self)?;
        let id = view.id();
        if node.flank {
            view.verify_structure()?
        } else {
            view.verify()?
        }
        if view.level() as usize != node.level {
            return Err(bad(id, format!("level {} where {} was expected", view.level(), node.level)));
        }
        walk.levels[node.level].push(Seen { id, flank: node.flank, prev: view.prev(), next: view.next() });
        let mut entries = Aggregates::empty(spec);
        let mut all = Aggregates::empty(spec);
        for i in 0..view.len() {
            let child_id = view.child_at(i).expect("in range");
            let child = self.load(child_id, node.level - 1, stats)?;
            if child.flank {
                return Err(bad(id, format!("entry {i} names the flank node {child_id}")));
            }
            let recomputed = self.verify_node(&child, walk, stats)?;
            let stored = self.aggs.of_entry(spec, &view, i)?;
            if !stored.same_as(&recomputed) {
                return Err(bad(
                    id,
                    format!("entry {i} ({child_id}): stored {stored:?}, recomputed {recomputed:?}"),
                ));
            }
            if view.key_at(i) != Some(recomputed.ts_min) {
                return Err(bad(
                    id,
                    format!(
                        "entry {i}: key {:?}, child's first timestamp {}",
                        view.key_at(i),
                        recomputed.ts_min
                    ),
                ));
            }
            entries.merge(&recomputed);
        }
        all.merge(&entries);
        if node.flank {
            if !self.running[node.level].same_as(&entries) {
                return Err(bad(
                    id,
                    format!(
                        "running aggregates {:?} differ from the entries' {entries:?}",
                        self.running[node.level]
                    ),
                ));
            }
            let below = self.flank_node(node.level - 1, stats);
            all.merge(&self.verify_node(&below, walk, stats)?);
        }
        Ok(all)
    }

    /// The nodes of one level, in key order, form the sibling chain and end
    /// with the level's flank node.
    fn verify_chain(&self, level: usize, nodes: &[Seen]) -> Result<(), EventError> {
        let Some(last) = nodes.last() else {
            return Err(EventError::corruption("tree", format!("level {level} has no node")));
        };
        if !last.flank || last.id != self.flank.id(level) || last.next.is_some() {
            return Err(bad(
                last.id,
                format!("the last node of level {level} is not the flank node, or has a right sibling"),
            ));
        }
        if nodes[0].prev.is_some() {
            return Err(bad(nodes[0].id, format!("the first node of level {level} has a left sibling")));
        }
        for pair in nodes.windows(2) {
            if pair[0].flank {
                return Err(bad(pair[0].id, "a flank node that is not the last of its level".into()));
            }
            if pair[0].next != Some(pair[1].id) || pair[1].prev != Some(pair[0].id) {
                return Err(bad(
                    pair[0].id,
                    format!(
                        "sibling links of level {level} broken between {} and {}",
                        pair[0].id, pair[1].id
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Ids are consecutive from 0 in each sequence (one shared, or one per kind).
    fn verify_ids(&self, ids: &[NodeId]) -> Result<(), EventError> {
        let sequences: Vec<Vec<NodeKind>> = if self.config.shared_id_sequence() {
            vec![vec![NodeKind::Leaf, NodeKind::Index]]
        } else {
            vec![vec![NodeKind::Leaf], vec![NodeKind::Index]]
        };
        for kinds in sequences {
            let numbers: BTreeSet<u64> =
                ids.iter().filter(|id| kinds.contains(&id.kind)).map(|id| id.number).collect();
            let count = ids.iter().filter(|id| kinds.contains(&id.kind)).count();
            let expected = numbers.len() as u64;
            if numbers.len() != count || numbers.last().is_some_and(|&max| max + 1 != expected) {
                return Err(EventError::corruption(
                    "tree",
                    format!(
                        "the ids of sequence {kinds:?} are not 0..{expected} without repeats: {numbers:?}"
                    ),
                ));
            }
        }
        Ok(())
    }
}
