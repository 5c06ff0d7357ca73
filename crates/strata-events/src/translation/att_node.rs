//! The on-media node of the Address Translation Tree (chronicledb-pmem.txt
//! section 2.2; layout in `docs/format/events-translation.md`): the payload
//! of one translation block of the block file. A node at `level` with index
//! `i` covers node numbers `[i * F^(level+1), (i+1) * F^(level+1))` of one
//! tree (F = fanout); entry `s` of a leaf (level 0) is the packed address of
//! node `i * F + s`, entry `s` of an inner node the packed address of its
//! child `i * F + s` (0 = none). The last block of a commit also carries the
//! commit: both trees' roots and next ids, and where to replay data from.

use crate::block_store::{PhysAddr, TRANSLATION_PAYLOAD_BYTES};
use crate::ids::DecodeError;

/// Bytes before the entries.
pub const ATT_NODE_HEADER_BYTES: usize = 64;
/// The fanout that fills a translation block: 4083 entries of 8 bytes.
pub const ATT_MAX_FANOUT: u32 = ((TRANSLATION_PAYLOAD_BYTES - ATT_NODE_HEADER_BYTES) / 8) as u32;
pub const ATT_MIN_FANOUT: u32 = 2;
/// Node flag: this block ends a commit and carries its fields.
pub const ATT_FLAG_COMMIT: u16 = 1;
pub const ATT_TREE_LEAF: u8 = 0;
pub const ATT_TREE_INDEX: u8 = 1;
pub const ATT_OFFSET_TREE: usize = 0;
pub const ATT_OFFSET_LEVEL: usize = 1;
pub const ATT_OFFSET_FLAGS: usize = 2;
pub const ATT_OFFSET_FANOUT: usize = 4;
pub const ATT_OFFSET_NODE_INDEX: usize = 8;
pub const ATT_OFFSET_COMMIT_SEQ: usize = 16;
pub const ATT_OFFSET_REPLAY_FROM: usize = 24;
pub const ATT_OFFSET_LEAF_ROOT: usize = 32;
pub const ATT_OFFSET_INDEX_ROOT: usize = 40;
pub const ATT_OFFSET_LEAF_NEXT_ID: usize = 48;
pub const ATT_OFFSET_INDEX_NEXT_ID: usize = 56;
/// Highest level a node may have (a tree of 64 levels covers every id).
pub const ATT_MAX_LEVEL: u8 = 63;

/// The commit carried by the last block of a commit.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AttCommit {
    /// Increases by one per commit.
    pub seq: u64,
    /// Data records at and after this address are not in the committed trees.
    pub replay_from: PhysAddr,
    /// Root block of each tree (leaf sequence, index sequence), if any.
    pub roots: [Option<PhysAddr>; 2],
    /// Highest node number set plus one, per tree (0 = none).
    pub next_ids: [u64; 2],
}

/// A decoded ATT node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttNode {
    pub tree: u8,
    pub level: u8,
    pub fanout: u32,
    pub node_index: u64,
    pub commit: Option<AttCommit>,
    /// `fanout` packed addresses (0 = none).
    pub entries: Vec<u64>,
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Encodes a node's payload (without building an [`AttNode`]).
pub fn encode_node(
    tree: u8,
    level: u8,
    node_index: u64,
    commit: Option<&AttCommit>,
    entries: &[u64],
) -> Vec<u8> {
    let mut b = vec![0u8; ATT_NODE_HEADER_BYTES + entries.len() * 8];
    b[ATT_OFFSET_TREE] = tree;
    b[ATT_OFFSET_LEVEL] = level;
    let flags = if commit.is_some() { ATT_FLAG_COMMIT } else { 0 };
    b[ATT_OFFSET_FLAGS..ATT_OFFSET_FLAGS + 2].copy_from_slice(&flags.to_le_bytes());
    b[ATT_OFFSET_FANOUT..ATT_OFFSET_FANOUT + 4].copy_from_slice(&(entries.len() as u32).to_le_bytes());
    put_u64(&mut b, ATT_OFFSET_NODE_INDEX, node_index);
    if let Some(c) = commit {
        put_u64(&mut b, ATT_OFFSET_COMMIT_SEQ, c.seq);
        put_u64(&mut b, ATT_OFFSET_REPLAY_FROM, c.replay_from.to_u64());
        put_u64(&mut b, ATT_OFFSET_LEAF_ROOT, c.roots[0].map_or(0, PhysAddr::to_u64));
        put_u64(&mut b, ATT_OFFSET_INDEX_ROOT, c.roots[1].map_or(0, PhysAddr::to_u64));
        put_u64(&mut b, ATT_OFFSET_LEAF_NEXT_ID, c.next_ids[0]);
        put_u64(&mut b, ATT_OFFSET_INDEX_NEXT_ID, c.next_ids[1]);
    }
    for (i, e) in entries.iter().enumerate() {
        put_u64(&mut b, ATT_NODE_HEADER_BYTES + i * 8, *e);
    }
    b
}

impl AttNode {
    pub fn encode(&self) -> Vec<u8> {
        encode_node(self.tree, self.level, self.node_index, self.commit.as_ref(), &self.entries)
    }

    /// Decodes and checks a translation block's payload. `Err` says what is wrong.
    pub fn decode(payload: &[u8]) -> Result<AttNode, DecodeError> {
        if payload.len() < ATT_NODE_HEADER_BYTES {
            return Err(DecodeError::Truncated {
                what: "ATT node",
                need: ATT_NODE_HEADER_BYTES as u64,
                have: payload.len() as u64,
            });
        }
        let tree = payload[ATT_OFFSET_TREE];
        if tree != ATT_TREE_LEAF && tree != ATT_TREE_INDEX {
            return Err(DecodeError::Unknown { what: "tree", value: tree.into() });
        }
        let level = payload[ATT_OFFSET_LEVEL];
        if level > ATT_MAX_LEVEL {
            return Err(DecodeError::Invalid(format!("level {level} exceeds {ATT_MAX_LEVEL}")));
        }
        let flags = u16::from_le_bytes([payload[ATT_OFFSET_FLAGS], payload[ATT_OFFSET_FLAGS + 1]]);
        if flags & !ATT_FLAG_COMMIT != 0 {
            return Err(DecodeError::Unknown { what: "flags", value: flags.into() });
        }
        let fanout =
            u32::from_le_bytes(payload[ATT_OFFSET_FANOUT..ATT_OFFSET_FANOUT + 4].try_into().expect("4"));
        if !(ATT_MIN_FANOUT..=ATT_MAX_FANOUT).contains(&fanout) {
            return Err(DecodeError::Invalid(format!("fanout {fanout} out of range")));
        }
        if payload.len() != ATT_NODE_HEADER_BYTES + fanout as usize * 8 {
            return Err(DecodeError::Invalid(format!(
                "ATT node of {} bytes does not hold {fanout} entries",
                payload.len()
            )));
        }
        let address = |raw: u64, what: &'static str| {
            PhysAddr::from_u64(raw).ok_or(DecodeError::BadAddress { what, raw })
        };
        let addr_or_none = |raw: u64, what| match raw {
            0 => Ok(None),
            raw => address(raw, what).map(Some),
        };
        let commit = if flags & ATT_FLAG_COMMIT != 0 {
            let replay_from = address(u64_at(payload, ATT_OFFSET_REPLAY_FROM), "replay_from")?;
            Some(AttCommit {
                seq: u64_at(payload, ATT_OFFSET_COMMIT_SEQ),
                replay_from,
                roots: [
                    addr_or_none(u64_at(payload, ATT_OFFSET_LEAF_ROOT), "leaf root")?,
                    addr_or_none(u64_at(payload, ATT_OFFSET_INDEX_ROOT), "index root")?,
                ],
                next_ids: [
                    u64_at(payload, ATT_OFFSET_LEAF_NEXT_ID),
                    u64_at(payload, ATT_OFFSET_INDEX_NEXT_ID),
                ],
            })
        } else {
            if payload[ATT_OFFSET_COMMIT_SEQ..ATT_NODE_HEADER_BYTES].iter().any(|&b| b != 0) {
                return Err(DecodeError::Invalid("commit fields set in a node that is no commit".into()));
            }
            None
        };
        let entries: Vec<u64> =
            (0..fanout as usize).map(|i| u64_at(payload, ATT_NODE_HEADER_BYTES + i * 8)).collect();
        if let Some(&raw) = entries.iter().find(|&&e| e != 0 && PhysAddr::from_u64(e).is_none()) {
            return Err(DecodeError::BadAddress { what: "entry", raw });
        }
        Ok(AttNode {
            tree,
            level,
            fanout,
            node_index: u64_at(payload, ATT_OFFSET_NODE_INDEX),
            commit,
            entries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_round_trip_and_the_default_fanout_fills_a_translation_block() {
        assert_eq!(ATT_MAX_FANOUT, 4083);
        assert!(ATT_NODE_HEADER_BYTES + ATT_MAX_FANOUT as usize * 8 <= TRANSLATION_PAYLOAD_BYTES);
        let a = PhysAddr::new(3, 100).unwrap();
        let commit = AttCommit { seq: 9, replay_from: a, roots: [Some(a), None], next_ids: [17, 0] };
        let node = AttNode {
            tree: ATT_TREE_INDEX,
            level: 2,
            fanout: 4,
            node_index: 5,
            commit: Some(commit),
            entries: vec![0, a.to_u64(), 0, a.to_u64()],
        };
        let bytes = node.encode();
        assert_eq!(bytes.len(), ATT_NODE_HEADER_BYTES + 32);
        assert_eq!(AttNode::decode(&bytes).unwrap(), node);
        let plain = AttNode { commit: None, ..node };
        assert_eq!(AttNode::decode(&plain.encode()).unwrap(), plain);
    }

    #[test]
    fn damaged_nodes_are_rejected_with_a_reason() {
        let a = PhysAddr::new(1, 40).unwrap();
        let node = AttNode {
            tree: 0,
            level: 0,
            fanout: 2,
            node_index: 0,
            commit: None,
            entries: vec![a.to_u64(), 0],
        };
        let good = node.encode();
        let mut bad_tree = good.clone();
        bad_tree[ATT_OFFSET_TREE] = 7;
        assert!(matches!(AttNode::decode(&bad_tree), Err(DecodeError::Unknown { what: "tree", .. })));
        let mut bad_entry = good.clone();
        bad_entry[ATT_NODE_HEADER_BYTES] = 1; // offset 1 < block header
        assert!(matches!(AttNode::decode(&bad_entry), Err(DecodeError::BadAddress { what: "entry", .. })));
        assert!(AttNode::decode(&good[..good.len() - 1]).is_err());
        let mut stray = good.clone();
        stray[ATT_OFFSET_LEAF_ROOT] = 1;
        assert!(AttNode::decode(&stray).unwrap_err().to_string().contains("no commit"));
    }
}
