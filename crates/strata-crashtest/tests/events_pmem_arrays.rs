//! Crash tests of both arrays on the simulator (DESIGN.md section 3): the
//! workload runs with a crash point after every flush and fence, and every
//! image the model allows (or a seeded sample) is reopened and checked:
//! every acknowledged write is there, nothing torn reads as valid.
//!
//! Aggregates: a slot must read the record of its last acknowledged write or
//! of a later (in-flight) write, and may be empty only if no write to it was
//! acknowledged; `get` must never fail. Index nodes: `node_count` covers every
//! acknowledged creation; a counted node holds its creation bytes; every byte
//! holds its last acknowledged value or a later one.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_crashtest::oracle::{AckLog, OracleCounts};
use strata_crashtest::pmem_harness::{run_pmem_crashtest, PmemCrashConfig, PmemCrashProtocol};
use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use strata_crashtest::error::{CheckResult, CrashCheckError};
use strata_events::pmem_arrays::{AggregateArray, IndexNodeArray, SlotLayout};
use strata_events::EventError;

const BASE: RegionOffset = RegionOffset(256);
/// Write number 0 is the format.
const FORMAT: TxnId = TxnId(0);

fn config(seed: u64) -> PmemCrashConfig {
    PmemCrashConfig { seed, max_images: Some(40_000), threads: 2, ..PmemCrashConfig::default() }
}

#[derive(Clone, Debug)]
enum AggOp {
    Set(u64),
    Unpersisted(u64),
    Persist(Range<u64>),
}

struct AggregatesCrash {
    layout: SlotLayout,
    record_bytes: u64,
    capacity: u64,
    ops: Vec<AggOp>,
    planted_seal_with_record: bool,
}

impl AggregatesCrash {
    fn new(layout: SlotLayout, record_bytes: u64, seed: u64) -> Self {
        let capacity = 10;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut ops: Vec<AggOp> = (0..capacity).map(AggOp::Set).collect();
        for _ in 0..14 {
            let slot = rng.gen_range(0..capacity);
            ops.push(match rng.gen_range(0..4) {
                0 | 1 => AggOp::Set(slot),
                2 => AggOp::Unpersisted(slot),
                _ => AggOp::Persist(slot..rng.gen_range(slot..=capacity)),
            });
        }
        // Then batched first writes into a fresh array region: see `run`.
        AggregatesCrash { layout, record_bytes, capacity, ops, planted_seal_with_record: false }
    }

    fn area_bytes(&self) -> u64 {
        // Twice the slots: the second half is first written in batches.
        AggregateArray::area_bytes_for(2 * self.capacity, self.record_bytes, self.layout).unwrap()
    }

    /// Every write in op order: (write number, slot); numbering starts at 1.
    fn writes(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for (k, op) in self.ops.iter().enumerate() {
            if let AggOp::Set(s) | AggOp::Unpersisted(s) = op {
                out.push((k as u64 + 1, *s));
            }
        }
        out
    }

    fn record(&self, k: u64) -> Vec<u8> {
        (0..self.record_bytes).map(|b| (k as u8).wrapping_mul(37).wrapping_add(b as u8) | 1).collect()
    }
}

impl PmemCrashProtocol for AggregatesCrash {
    fn name(&self) -> String {
        format!("aggregate-array-{}-{}", self.layout.name(), self.record_bytes)
    }

    fn region_len(&self) -> u64 {
        (BASE.0 + self.area_bytes()).div_ceil(64) * 64
    }

    fn run(&self, region: &Arc<Region>, acks: &AckLog) {
        let array =
            AggregateArray::format(region.clone(), BASE, self.area_bytes(), self.record_bytes, self.layout)
                .unwrap();
        acks.ack(FORMAT);
        array.plant_seal_with_record(self.planted_seal_with_record);
        let mut sealed = BTreeSet::new();
        let mut pending: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for (k, op) in self.ops.iter().enumerate() {
            let k = k as u64 + 1;
            match op {
                AggOp::Set(s) => {
                    array.set(*s, &self.record(k)).unwrap();
                    pending.remove(s);
                    sealed.insert(*s);
                    acks.ack(TxnId(k));
                }
                AggOp::Unpersisted(s) => {
                    array.set_unpersisted(*s, &self.record(k)).unwrap();
                    if sealed.contains(s) {
                        acks.ack(TxnId(k)); // an overwrite is durable at once
                    } else {
                        pending.entry(*s).or_default().push(k);
                    }
                }
                AggOp::Persist(range) => {
                    array.persist_range(range.clone()).unwrap();
                    let done: Vec<u64> = pending.range(range.clone()).map(|(s, _)| *s).collect();
                    for s in done {
                        sealed.insert(s);
                        for k in pending.remove(&s).unwrap() {
                            acks.ack(TxnId(k));
                        }
                    }
                }
            }
        }
        // Batched first writes of the upper half, persisted in two batches.
        let upper = self.capacity..2 * self.capacity;
        for s in upper.clone() {
            array.set_unpersisted(s, &self.record(1000 + s)).unwrap();
        }
        array.persist_range(upper.start..upper.start + 4).unwrap();
        for s in upper.start..upper.start + 4 {
            acks.ack(TxnId(1000 + s));
        }
        array.persist_pending().unwrap();
        for s in upper.start + 4..upper.end {
            acks.ack(TxnId(1000 + s));
        }
    }

    fn recover_and_check(&self, region: &Arc<Region>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let Some(array) = opened(AggregateArray::open(region.clone(), BASE, self.area_bytes()), acked)?
        else {
            return Ok((OracleCounts::default(), None));
        };
        let mut counts = OracleCounts::default();
        let mut first = None;
        let mut by_slot: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for (k, s) in self.writes() {
            by_slot.entry(s).or_default().push(k);
        }
        for s in self.capacity..2 * self.capacity {
            by_slot.entry(s).or_default().push(1000 + s);
        }
        for (slot, writes) in by_slot {
            let last_acked = writes.iter().rposition(|k| acked.contains(&TxnId(*k)));
            let allowed: Vec<Vec<u8>> =
                writes[last_acked.unwrap_or(0)..].iter().map(|k| self.record(*k)).collect();
            match array.get(slot) {
                Ok(None) if last_acked.is_none() => {}
                Ok(None) => {
                    counts.lost += 1;
                    first.get_or_insert_with(|| format!("slot {slot}: acknowledged write lost"));
                }
                Ok(Some(v)) if allowed.contains(&v) => {}
                Ok(Some(v)) => {
                    counts.partial += 1;
                    first.get_or_insert_with(|| format!("slot {slot}: unexpected record {v:?}"));
                }
                Err(e) => {
                    counts.partial += 1;
                    first.get_or_insert_with(|| format!("slot {slot}: {e}"));
                }
            }
        }
        Ok((counts, first))
    }
}

/// Runs `proto` under the crash harness and checks that every image
/// recovered cleanly after more than `min_crash_points` crash points.
fn assert_clean_run<P: PmemCrashProtocol>(
    proto: &P,
    seed: u64,
    min_crash_points: u64,
) -> strata_crashtest::oracle::CrashReport {
    let report = run_pmem_crashtest(proto, &config(seed));
    eprintln!("{} crash_points={}", report.line(), report.crash_points);
    assert!(report.is_clean(), "seed {seed:#x}: {} first failure {:?}", report.line(), report.first_failure);
    assert!(
        report.crash_points > min_crash_points,
        "{}: only {} crash points",
        report.line(),
        report.crash_points
    );
    report
}

#[test]
fn aggregate_array_survives_a_crash_at_every_persist_point_in_both_layouts() {
    for (layout, record_bytes, seed) in [
        (SlotLayout::Dense, 28, 0xC7A5_0001),
        (SlotLayout::Aligned, 40, 0xC7A5_0002),
        (SlotLayout::Dense, 72, 3),
    ] {
        let report = assert_clean_run(&AggregatesCrash::new(layout, record_bytes, seed), seed, 150);
        assert!(report.images > 2_000, "{}", report.line());
    }
}

#[test]
fn the_aggregate_crash_test_catches_a_seal_persisted_with_its_record() {
    let seed = 0x0BAD_5EA1;
    let mut proto = AggregatesCrash::new(SlotLayout::Dense, 28, seed);
    proto.planted_seal_with_record = true;
    let report = run_pmem_crashtest(&proto, &config(seed));
    eprintln!("{} first failure {:?}", report.line(), report.first_failure);
    assert!(!report.is_clean() && report.counts.partial > 0, "planted bug not caught: {}", report.line());
}

#[derive(Clone, Debug)]
enum NodeOp {
    Create {
        node: u64,
        bytes: Vec<u8>,
    },
    /// `write_range` + `persist_ranges` (header word and the range).
    Append {
        node: u64,
        offset: u64,
        bytes: Vec<u8>,
    },
    /// `write_node` over an existing node's first bytes.
    Rewrite {
        node: u64,
        bytes: Vec<u8>,
    },
}

struct IndexNodesCrash {
    ops: Vec<NodeOp>,
}

const NODE_BYTES: u64 = 256;
const NODES: u64 = 6;

impl IndexNodesCrash {
    fn new(seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut ops = Vec::new();
        let mut cursor: Vec<u64> = Vec::new();
        let fill = |len: usize, rng: &mut ChaCha8Rng| -> Vec<u8> { (0..len).map(|_| rng.gen()).collect() };
        while ops.len() < 30 {
            let created = cursor.len() as u64;
            let choice = rng.gen_range(0..10);
            if created == 0 || (choice < 3 && created < NODES) {
                let len = rng.gen_range(16..48);
                ops.push(NodeOp::Create { node: created, bytes: fill(len, &mut rng) });
                cursor.push(len as u64);
            } else if choice < 8 {
                let node = rng.gen_range(0..created);
                let len = rng.gen_range(8..40u64).min(NODE_BYTES - cursor[node as usize]);
                if len == 0 {
                    continue;
                }
                let offset = cursor[node as usize];
                cursor[node as usize] += len;
                // The header word (bytes 0..8) counts the appended bytes.
                ops.push(NodeOp::Append { node, offset: 0, bytes: (offset + len).to_le_bytes().to_vec() });
                ops.push(NodeOp::Append { node, offset, bytes: fill(len as usize, &mut rng) });
            } else {
                let node = rng.gen_range(0..created);
                ops.push(NodeOp::Rewrite { node, bytes: fill(12, &mut rng) });
            }
        }
        IndexNodesCrash { ops }
    }

    fn area_bytes() -> u64 {
        IndexNodeArray::area_bytes_for(NODES, NODE_BYTES).unwrap()
    }
}

impl PmemCrashProtocol for IndexNodesCrash {
    fn name(&self) -> String {
        "index-node-array".into()
    }

    fn region_len(&self) -> u64 {
        BASE.0 + Self::area_bytes()
    }

    fn run(&self, region: &Arc<Region>, acks: &AckLog) {
        let array = IndexNodeArray::format(region.clone(), BASE, Self::area_bytes(), NODE_BYTES).unwrap();
        acks.ack(FORMAT);
        let mut ops = self.ops.iter().enumerate().peekable();
        while let Some((k, op)) = ops.next() {
            match op {
                NodeOp::Create { node, bytes } | NodeOp::Rewrite { node, bytes } => {
                    array.write_node(*node, bytes).unwrap();
                    acks.ack(TxnId(k as u64 + 1));
                }
                NodeOp::Append { node, offset, bytes } => {
                    // A header-word update and its entry bytes: one persist, one fence.
                    let Some((k2, NodeOp::Append { offset: o2, bytes: b2, .. })) = ops.next() else {
                        unreachable!("appends come in pairs")
                    };
                    array.write_range(*node, *o2, b2).unwrap();
                    array.write_range(*node, *offset, bytes).unwrap();
                    let ranges = [*offset..*offset + bytes.len() as u64, *o2..*o2 + b2.len() as u64];
                    array.persist_ranges(*node, &ranges).unwrap();
                    acks.ack(TxnId(k as u64 + 1));
                    acks.ack(TxnId(k2 as u64 + 1));
                }
            }
        }
    }

    fn recover_and_check(&self, region: &Arc<Region>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let Some(array) = opened(IndexNodeArray::open(region.clone(), BASE, Self::area_bytes()), acked)?
        else {
            return Ok((OracleCounts::default(), None));
        };
        let mut counts = OracleCounts::default();
        let mut first = None;
        let count = array.node_count();
        let acked_creates = self
            .ops
            .iter()
            .enumerate()
            .filter(|(k, op)| matches!(op, NodeOp::Create { .. }) && acked.contains(&TxnId(*k as u64 + 1)))
            .count() as u64;
        if count < acked_creates {
            counts.lost += acked_creates - count;
            first = Some(format!("node count {count} below {acked_creates} acknowledged creations"));
        }
        // Per node byte: the writes to it, in order, and whether each counts as durable.
        let mut bytes: BTreeMap<(u64, u64), Vec<(u8, bool)>> = BTreeMap::new();
        for (k, op) in self.ops.iter().enumerate() {
            let done = acked.contains(&TxnId(k as u64 + 1));
            let (node, offset, data, durable) = match op {
                // A counted node's creation completed, acknowledged or not.
                NodeOp::Create { node, bytes } => (*node, 0, bytes, done || *node < count),
                NodeOp::Rewrite { node, bytes } => (*node, 0, bytes, done),
                NodeOp::Append { node, offset, bytes } => (*node, *offset, bytes, done),
            };
            for (j, b) in data.iter().enumerate() {
                bytes.entry((node, offset + j as u64)).or_default().push((*b, durable));
            }
        }
        for node in 0..count {
            let content = array.read_node(node).map_err(CrashCheckError::step("read of a counted node"))?;
            for at in 0..NODE_BYTES {
                let Some(writes) = bytes.get(&(node, at)) else { continue };
                let Some(last) = writes.iter().rposition(|(_, durable)| *durable) else { continue };
                if !writes[last..].iter().any(|(b, _)| *b == content[at as usize]) {
                    counts.partial += 1;
                    first.get_or_insert_with(|| format!("node {node} byte {at}: a durable write is missing"));
                }
            }
        }
        Ok((counts, first))
    }
}

#[test]
fn index_node_array_survives_a_crash_at_every_persist_point() {
    for seed in [0x1DC0_0001, 0x1DC0_0002] {
        assert_clean_run(&IndexNodesCrash::new(seed), seed, 60);
    }
}

/// An array as recovery opens it: `None` if the format was interrupted (an
/// unacknowledged format reads as unformatted), an error if a completed
/// format does not open.
fn opened<T>(open: Result<T, EventError>, acked: &BTreeSet<TxnId>) -> Result<Option<T>, CrashCheckError> {
    match open {
        Ok(a) => Ok(Some(a)),
        Err(e) if !acked.contains(&FORMAT) && e.is_corruption() => Ok(None),
        Err(e) => Err(CrashCheckError::inconsistent(format!("open after a completed format: {e}"))),
    }
}
