//! Node id allocation (chronicledb-pmem.txt section 4.1: "the TAB+-Tree
//! assigns consecutive node IDs starting at 0"; with index nodes on PMem
//! "we also require two ID sequences"). A node gets its id when it enters
//! the flank (its left sibling's `next` link must name it when that sibling
//! is written out), so ids are consecutive per sequence in creation order.
//!
//! Within one write-out the successor is allocated before a new root, so a
//! root created by growth has the id right after its left child's successor
//! (in the index sequence); DRAM-flank recovery relies on this to find the
//! leftmost node of every level ([`super::recovery_dram`]).

use crate::ids::{EventError, NodeId, NodeKind};

/// The next free number of each sequence (one shared, or leaf and index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IdAllocator {
    shared: bool,
    next: [u64; 2],
    capacity: [u64; 2],
}

fn slot(shared: bool, kind: NodeKind) -> usize {
    match (shared, kind) {
        (true, _) | (false, NodeKind::Leaf) => 0,
        (false, NodeKind::Index) => 1,
    }
}

impl IdAllocator {
    /// Empty sequences; `capacity[k]` numbers may be handed out per kind.
    pub(crate) fn new(shared: bool, leaf_capacity: u64, index_capacity: u64) -> IdAllocator {
        IdAllocator { shared, next: [0, 0], capacity: [leaf_capacity, index_capacity] }
    }

    pub(crate) fn alloc(&mut self, kind: NodeKind) -> Result<NodeId, EventError> {
        let s = slot(self.shared, kind);
        let number = self.next[s];
        let cap = self.capacity[match kind {
            NodeKind::Leaf => 0,
            NodeKind::Index => 1,
        }];
        if number >= cap {
            return Err(EventError::Full {
                what: "TAB+-tree",
                detail: format!("no {kind:?} node number left below the capacity {cap}"),
            });
        }
        self.next[s] += 1;
        Ok(NodeId { kind, number })
    }

    /// Makes sure later allocations do not hand out `id` again.
    pub(crate) fn observe(&mut self, id: NodeId) {
        let s = slot(self.shared, id.kind);
        self.next[s] = self.next[s].max(id.number + 1);
    }

    /// The next number of `kind`'s sequence.
    #[cfg(test)]
    pub(crate) fn peek(&self, kind: NodeKind) -> u64 {
        self.next[slot(self.shared, kind)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_and_separate_sequences_hand_out_consecutive_numbers() {
        let mut shared = IdAllocator::new(true, 10, 10);
        let got: Vec<NodeId> = [NodeKind::Leaf, NodeKind::Leaf, NodeKind::Index]
            .iter()
            .map(|k| shared.alloc(*k).unwrap())
            .collect();
        assert_eq!(got, [NodeId::leaf(0), NodeId::leaf(1), NodeId::index(2)]);
        let mut separate = IdAllocator::new(false, 10, 10);
        separate.alloc(NodeKind::Leaf).unwrap();
        assert_eq!(separate.alloc(NodeKind::Index).unwrap(), NodeId::index(0));
        separate.observe(NodeId::index(7));
        assert_eq!(separate.peek(NodeKind::Index), 8);
        assert_eq!(separate.peek(NodeKind::Leaf), 1);
        let mut tiny = IdAllocator::new(false, 1, 1);
        tiny.alloc(NodeKind::Leaf).unwrap();
        assert!(matches!(tiny.alloc(NodeKind::Leaf), Err(EventError::Full { .. })));
    }
}
