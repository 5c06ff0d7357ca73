//! The step record of an out-of-order merge (chronicledb-pmem.txt section
//! 4.3, made crash-safe; format: `docs/format/events-flank.md`, "Merge step
//! record" and "One-pass merge step record"): what a crash during
//! [`super::TabTree::merge_ooo`] leaves to redo, five 8-byte words in one of
//! the flank header's two record slots.
//!
//! Flank format 3 merges in one pass (`super::ooo_pass`): kinds
//! [`MERGE_STEP_REFRESH_RUN`], [`MERGE_STEP_SHIFT_TAIL`] and
//! [`MERGE_STEP_SHIFT_LEAF`], and the append step without a carry. The rest
//! of this comment describes format 2's kinds, still decoded and redone:
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
/// `kind` byte of a shift-tail step (one-pass merge, flank format 3).
pub const MERGE_STEP_SHIFT_TAIL: u8 = 3;
/// `kind` byte of a shift-leaf step (one-pass merge, flank format 3).
pub const MERGE_STEP_SHIFT_LEAF: u8 = 4;
/// `kind` byte of a refresh-run step (one-pass merge, flank format 3).
pub const MERGE_STEP_REFRESH_RUN: u8 = 5;
/// Largest `keep` of a shift-leaf step (16 bits).
pub const MERGE_KEEP_MAX: u32 = u16::MAX as u32;
/// One-pass flag bit: the run's last leaf is the last completed one (its
/// input ends with the input events older than the tree's newest).
pub const MERGE_RUN_TO_FLANK: u8 = 1;
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
    /// One-pass merge (`super::ooo_pass`): append the last `count` events
    /// of the run's merged sequence through its last leaf `last` (whose
    /// version before the pass is at `source`) to the flank leaf; the tree
    /// held `events_before` events when the step began.
    ShiftTail { last: NodeId, source: PhysAddr, events_before: u64, count: u32 },
    /// One-pass merge: rewrite leaf `leaf` (version before the pass at
    /// `before`) with the `keep` events of the run's merged sequence through
    /// it that precede its last `skip` (those went to leaves to its right or
    /// the flank). `last` is the run's last leaf; `to_flank` if it is the
    /// last completed leaf.
    ShiftLeaf { leaf: NodeId, before: PhysAddr, keep: u32, skip: u32, last: NodeId, to_flank: bool },
    /// One-pass merge: the run starting at leaf `first` (and at input event
    /// `done`) gives its leaves' index entries their new keys and
    /// aggregates, left to right, before any of them is rewritten. Input
    /// events older than `newest_ts` (the tree's newest timestamp when the
    /// run began) belong to runs: the refresh itself lowers the newest the
    /// index shows until the tail is appended, so a redo uses this one.
    RefreshRun { first: NodeId, newest_ts: i64 },
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
        let pass = |kind: u8, flags: u8, keep: u32, skip: u32, w2: u64, w3: u64, w4: u64| {
            debug_assert!(keep <= MERGE_KEEP_MAX);
            [
                u64::from(kind) | u64::from(flags) << 8 | u64::from(keep) << 16 | u64::from(skip) << 32,
                w2,
                w3,
                w4,
            ]
        };
        let tail = match self.step {
            MergeStep::ShiftTail { last, source, events_before, count } => Some(pass(
                MERGE_STEP_SHIFT_TAIL,
                MERGE_RUN_TO_FLANK,
                0,
                count,
                events_before,
                source.to_u64(),
                last.to_u64(),
            )),
            MergeStep::ShiftLeaf { leaf, before, keep, skip, last, to_flank } => Some(pass(
                MERGE_STEP_SHIFT_LEAF,
                if to_flank { MERGE_RUN_TO_FLANK } else { 0 },
                keep,
                skip,
                leaf.to_u64(),
                before.to_u64(),
                last.to_u64(),
            )),
            MergeStep::RefreshRun { first, newest_ts } => {
                Some(pass(MERGE_STEP_REFRESH_RUN, 0, 0, 0, first.to_u64(), newest_ts as u64, NO_NODE))
            }
            _ => None,
        };
        if let Some(tail) = tail {
            return words_to_bytes(&[
                u64::from(self.done) | u64::from(self.chunk) << 32,
                tail[0],
                tail[1],
                tail[2],
                tail[3],
            ]);
        }
        let (kind, target, before, carry) = match self.step {
            MergeStep::Leaf { leaf, before, carry } => {
                (MERGE_STEP_LEAF, leaf.to_u64(), before.to_u64(), carry)
            }
            MergeStep::Append { events_before, carry } => (MERGE_STEP_APPEND, events_before, NO_NODE, carry),
            _ => unreachable!("one-pass steps are encoded above"),
        };
        let (bits, count, source) = match carry {
            None => (0u8, 0u32, NO_NODE),
            Some(c) => {
                let first = if c.source_first { MERGE_CARRY_SOURCE_FIRST } else { 0 };
                (MERGE_CARRY_PRESENT | first, c.count, c.source.to_u64())
            }
        };
        words_to_bytes(&[
            u64::from(self.done) | u64::from(self.chunk) << 32,
            u64::from(kind) | u64::from(bits) << 8 | u64::from(count) << 32,
            target,
            before,
            source,
        ])
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
        let addr = |raw: u64, what| PhysAddr::from_u64(raw).ok_or(DecodeError::BadAddress { what, raw });
        let leaf = |raw: u64, what: &str| {
            let id = NodeId::from_u64(raw);
            if id.kind != crate::ids::NodeKind::Leaf {
                return Err(DecodeError::Invalid(format!("{what} {id} is not a leaf")));
            }
            Ok(id)
        };
        let (kind, flags) = (w(1) as u8, (w(1) >> 8) as u8);
        let (keep, skip) = (((w(1) >> 16) & u64::from(MERGE_KEEP_MAX)) as u32, (w(1) >> 32) as u32);
        let to_flank = flags == MERGE_RUN_TO_FLANK;
        let flags_ok = flags & !MERGE_RUN_TO_FLANK == 0;
        let one_pass = match kind {
            MERGE_STEP_SHIFT_TAIL if keep == 0 && skip > 0 && to_flank => Some(MergeStep::ShiftTail {
                last: leaf(w(4), "shift-tail last leaf")?,
                source: addr(w(3), "shift-tail source address")?,
                events_before: w(2),
                count: skip,
            }),
            MERGE_STEP_SHIFT_LEAF if keep > 0 && flags_ok => Some(MergeStep::ShiftLeaf {
                leaf: leaf(w(2), "shift-leaf step of")?,
                before: addr(w(3), "shift-leaf address")?,
                keep,
                skip,
                last: leaf(w(4), "shift-leaf last leaf")?,
                to_flank,
            }),
            MERGE_STEP_REFRESH_RUN if flags == 0 && keep == 0 && skip == 0 && w(4) == NO_NODE => {
                Some(MergeStep::RefreshRun {
                    first: leaf(w(2), "refresh-run first leaf")?,
                    newest_ts: w(3) as i64,
                })
            }
            MERGE_STEP_SHIFT_TAIL | MERGE_STEP_SHIFT_LEAF | MERGE_STEP_REFRESH_RUN => {
                return Err(DecodeError::Invalid(format!("one-pass step word {:#018x} has bad counts", w(1))))
            }
            _ => None,
        };
        if let Some(step) = one_pass {
            return Ok(MergeRecord { done, chunk, step });
        }
        let (bits, count) = ((w(1) >> 8) as u8, (w(1) >> 32) as u32);
        if (w(1) >> 16) & 0xFFFF != 0 || bits & !(MERGE_CARRY_PRESENT | MERGE_CARRY_SOURCE_FIRST) != 0 {
            return Err(DecodeError::Invalid(format!("step word {:#018x} has unknown bits", w(1))));
        }
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

fn words_to_bytes(words: &[u64; 5]) -> [u8; MERGE_RECORD_BYTES as usize] {
    let mut out = [0u8; MERGE_RECORD_BYTES as usize];
    for (i, w) in words.iter().enumerate() {
        out[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    out
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
