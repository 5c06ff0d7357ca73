//! The step record of an out-of-order merge (chronicledb-pmem.txt section
//! 4.3, made crash-safe; format: `docs/format/events-flank.md`, "Merge
//! redo record"): what a crash during [`super::TabTree::merge_ooo`] leaves
//! to redo, five 8-byte words in one of the flank header's two record slots.
//!
//! The merge input (the queue's `sorted()`, still in the queue until the
//! merge is recorded) is consumed in *chunks*: `chunk` events from `done`
//! on, either all into one completed leaf (at most a leaf's capacity) or
//! appended. A chunk's first leaf may overflow; its largest events are
//! carried to the next leaf, and so on, each leaf one *step*. A step is
//! redone from what it read before it began: the leaf's previous version
//! (its block-store address `before`; the rewrite goes to a new address)
//! and the carried events, recomputed from the carry source's previous
//! version (`source`; with the chunk's events merged in when the source was
//! the chunk's first leaf) as its last `count` events. An append step
//! (carried events into the flank leaf, or the events not older than the
//! tree's newest) is redone from the tree's event count: the events beyond
//! `events_before` are those already appended.

use crate::block_store::PhysAddr;
use crate::ids::{DecodeError, EventError, NodeId};

/// A node-id word meaning "none" (here and in the flank header's journal).
pub const NO_NODE: u64 = u64::MAX;
/// Bytes of one step record.
pub const MERGE_RECORD_BYTES: u64 = 40;
/// `kind` byte of a leaf step.
pub const MERGE_STEP_LEAF: u8 = 1;
/// `kind` byte of an append step.
pub const MERGE_STEP_APPEND: u8 = 2;
/// `carry` byte bit: the step receives carried events.
pub const MERGE_CARRY_PRESENT: u8 = 1;
/// `carry` byte bit: the carry source was the chunk's first leaf (the
/// chunk's events are merged into its previous version first).
pub const MERGE_CARRY_SOURCE_FIRST: u8 = 2;

/// Events carried into a step from the leaf before it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MergeCarry {
    /// Block-store address of the source leaf's version before its step.
    pub source: PhysAddr,
    /// The source was the chunk's first leaf.
    pub source_first: bool,
    /// Events carried: the last `count` of the source's merged events.
    pub count: u32,
}

/// What a step does.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MergeStep {
    /// Rewrite completed leaf `leaf`, whose version before the step is at
    /// `before`: with the carried events, or (no carry) the chunk's events.
    Leaf { leaf: NodeId, before: PhysAddr, carry: Option<MergeCarry> },
    /// Append the carried events (then write the flank leaf out), or (no
    /// carry) the chunk's events; the tree held `events_before` events when
    /// the step began.
    Append { events_before: u64, carry: Option<MergeCarry> },
}

/// One step record: the chunk and the step.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MergeRecord {
    /// Input events in the tree before the chunk began.
    pub done: u32,
    /// Input events of the chunk (`done..done + chunk`).
    pub chunk: u32,
    pub step: MergeStep,
}

impl MergeRecord {
    /// The five little-endian words: `done | chunk << 32`; `kind | carry
    /// bits << 8 | count << 32`; leaf id or `events_before`; `before` or
    /// `NO_NODE`; the carry source or `NO_NODE`.
    pub fn encode(&self) -> [u8; MERGE_RECORD_BYTES as usize] {
        let (kind, target, before, carry) = match self.step {
            MergeStep::Leaf { leaf, before, carry } => {
                (MERGE_STEP_LEAF, leaf.to_u64(), before.to_u64(), carry)
            }
            MergeStep::Append { events_before, carry } => (MERGE_STEP_APPEND, events_before, NO_NODE, carry),
        };
        let (bits, count, source) = match carry {
            None => (0u8, 0u32, NO_NODE),
            Some(c) => {
                let first = if c.source_first { MERGE_CARRY_SOURCE_FIRST } else { 0 };
                (MERGE_CARRY_PRESENT | first, c.count, c.source.to_u64())
            }
        };
        let words = [
            u64::from(self.done) | u64::from(self.chunk) << 32,
            u64::from(kind) | u64::from(bits) << 8 | u64::from(count) << 32,
            target,
            before,
            source,
        ];
        let mut out = [0u8; MERGE_RECORD_BYTES as usize];
        for (i, w) in words.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// Decodes a record; a message naming the bad field otherwise.
    pub fn decode(bytes: &[u8]) -> Result<MergeRecord, DecodeError> {
        if bytes.len() < MERGE_RECORD_BYTES as usize {
            return Err(DecodeError::Truncated {
                what: "merge record",
                need: MERGE_RECORD_BYTES,
                have: bytes.len() as u64,
            });
        }
        let w = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let (done, chunk) = (w(0) as u32, (w(0) >> 32) as u32);
        let (kind, bits, count) = (w(1) as u8, (w(1) >> 8) as u8, (w(1) >> 32) as u32);
        if (w(1) >> 16) & 0xFFFF != 0 || bits & !(MERGE_CARRY_PRESENT | MERGE_CARRY_SOURCE_FIRST) != 0 {
            return Err(DecodeError::Invalid(format!("step word {:#018x} has unknown bits", w(1))));
        }
        let addr = |raw: u64, what| PhysAddr::from_u64(raw).ok_or(DecodeError::BadAddress { what, raw });
        let carry = if bits & MERGE_CARRY_PRESENT != 0 {
            Some(MergeCarry {
                source: addr(w(4), "carry source address")?,
                source_first: bits & MERGE_CARRY_SOURCE_FIRST != 0,
                count,
            })
        } else if count != 0 || bits != 0 || w(4) != NO_NODE {
            return Err(DecodeError::Invalid("a record without a carry has carry fields".into()));
        } else {
            None
        };
        let step = match kind {
            MERGE_STEP_LEAF => {
                let leaf = NodeId::from_u64(w(2));
                if leaf.kind != crate::ids::NodeKind::Leaf {
                    return Err(DecodeError::Invalid(format!("leaf step of {leaf}")));
                }
                MergeStep::Leaf { leaf, before: addr(w(3), "leaf address")?, carry }
            }
            MERGE_STEP_APPEND if w(3) == NO_NODE => MergeStep::Append { events_before: w(2), carry },
            _ => return Err(DecodeError::Invalid(format!("step kind {kind} with address word {:#x}", w(3)))),
        };
        Ok(MergeRecord { done, chunk, step })
    }
}

/// Builds a record, checking that the counts fit their 32-bit fields.
pub(crate) fn record(done: usize, chunk: usize, step: MergeStep) -> Result<MergeRecord, EventError> {
    let fit = |n: usize| {
        u32::try_from(n).map_err(|_| EventError::invalid(format!("a merge input of {n} events is too large")))
    };
    Ok(MergeRecord { done: fit(done)?, chunk: fit(chunk)?, step })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(block: u64) -> PhysAddr {
        PhysAddr::new(block, 64).unwrap()
    }

    #[test]
    fn records_round_trip_and_damage_is_reported() {
        let carry = Some(MergeCarry { source: addr(3), source_first: true, count: 4 });
        let records = [
            MergeRecord {
                done: 7,
                chunk: 9,
                step: MergeStep::Leaf { leaf: NodeId::leaf(12), before: addr(2), carry: None },
            },
            MergeRecord {
                done: 0,
                chunk: 1,
                step: MergeStep::Leaf { leaf: NodeId::leaf(1), before: addr(5), carry },
            },
            MergeRecord { done: 3, chunk: 2, step: MergeStep::Append { events_before: 99, carry } },
            MergeRecord { done: 3, chunk: 20, step: MergeStep::Append { events_before: 0, carry: None } },
        ];
        for r in records {
            assert_eq!(MergeRecord::decode(&r.encode()), Ok(r));
        }
        let mut bad = records[0].encode();
        bad[8] = 9;
        assert!(MergeRecord::decode(&bad).unwrap_err().to_string().contains("step kind 9"));
        let mut bad = records[0].encode();
        bad[16..24].copy_from_slice(&NodeId::index(1).to_u64().to_le_bytes());
        assert!(MergeRecord::decode(&bad).unwrap_err().to_string().contains("leaf step"));
        let mut bad = records[1].encode();
        bad[32..40].copy_from_slice(&0u64.to_le_bytes());
        assert!(matches!(
            MergeRecord::decode(&bad),
            Err(DecodeError::BadAddress { what: "carry source address", .. })
        ));
        assert!(MergeRecord::decode(&[0u8; 39]).is_err());
        assert!(record(1 << 33, 1, records[0].step).is_err(), "counts beyond 32 bits are refused");
    }
}
