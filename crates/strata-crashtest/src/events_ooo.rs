//! Crash test of the PMem OOO queue (chronicledb-pmem.txt section 4.3: "each
//! insertion is followed by a force command. Thus, the queue is fully
//! persisted and no data is lost in case of a crash") on the PMem simulator
//! (DESIGN.md section 3), an implementation of [`PmemCrashProtocol`]. The
//! crashtest line is `events-ooo-queue/pmem`.
//!
//! Region layout: the word at offset 0 stands for the TAB+-tree's durable
//! *merged OOO generation* (see the merge protocol in [`super`]); the queue
//! area (indexed flavour) starts at offset 64.
//!
//! Workload (deterministic for a seed, one thread): event `t` (transaction
//! `Tt`) has timestamp `4t` plus a jitter in `-40..=40` snapped to a
//! multiple of 3 (so events arrive out of order and timestamps repeat), then
//! its id and filler bytes. Each push is acknowledged once it returns. When
//! the queue is full, and now and then before, the workload merges: it checks
//! `sorted()` against a model, persists the generation into the merged word
//! (the tree made durable) and truncates. Now and then it drops and reopens
//! the queue (a clean restart).
//!
//! Recovery: an image without the queue's magic had not finished formatting
//! (nothing acknowledged). Otherwise open the queue, run the merge protocol's
//! recovery step (`discard_if_merged`), and count as present every event of
//! a generation up to the merged word (the tree's) plus every event the queue
//! returns. Oracle: every acknowledged event present (`lost`); no event twice
//! and none with bytes that were never pushed (`partial`, with the oracle's
//! content check catching torn or garbage events); `sorted()`, range and point
//! queries in application-time order, ties in arrival order, and the pure
//! flavour agreeing with the indexed one (`order_violations`). Finally two
//! more events are pushed and a reopen must return exactly the old events
//! plus those.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::oracle::{AckLog, OracleCounts, TxnOracle};
use crate::pmem_harness::PmemCrashProtocol;
use parking_lot::RwLock;
use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use strata_events::ooo::pmem_layout::PMEM_MAGIC;
use strata_events::ooo::{event_ts, EventList, OooIndexing, OooQueue, PmemOooQueue};
pub use strata_events::sample_events::workload_event;

use crate::error::{CheckResult, CrashCheckError};
use crate::workload::SplitMix64;

/// The tree stand-in's merged-generation word.
const MERGED_WORD: RegionOffset = RegionOffset(0);
/// Where the queue area starts.
const QUEUE_BASE: RegionOffset = RegionOffset(64);
/// Ids of the events pushed after recovery start here.
const RESUME_ID_BASE: u64 = 1 << 40;

fn event_id(event: &[u8]) -> u64 {
    u64::from_le_bytes(event[8..16].try_into().expect("an event holds ts | id"))
}

/// What the run recorded for the checks.
#[derive(Default)]
struct RunRecord {
    oracle: TxnOracle,
    /// The queue generation each event was pushed in.
    generation_of: BTreeMap<TxnId, u64>,
    contents: BTreeMap<TxnId, Vec<u8>>,
    merges: u64,
    reopens: u64,
    last_generation: u64,
}

/// The PMem OOO queue (indexed) on the simulator with a seeded out-of-order
/// push / merge / reopen workload.
pub struct OooPmemCrash {
    pub seed: u64,
    /// Events pushed.
    pub events: u64,
    /// At least 16 (timestamp and id).
    pub event_bytes: usize,
    /// Queue capacity in events (small, so it fills and merges often).
    pub capacity_events: u64,
    /// Percent of pushes preceded by a merge of a non-empty, non-full queue.
    pub merge_percent: u64,
    /// Percent of pushes followed by a clean reopen.
    pub reopen_percent: u64,
    /// The generation the queue is formatted with (near a multiple of 2^32
    /// to cross the record-tag wrap and its zeroing reset).
    pub first_generation: u64,
    /// A planted bug for the tests: recovery skips `discard_if_merged`.
    pub skip_discard_if_merged: bool,
    record: RwLock<RunRecord>,
}

impl OooPmemCrash {
    pub fn new(seed: u64, events: u64) -> Self {
        OooPmemCrash {
            seed,
            events,
            event_bytes: 24,
            capacity_events: 16,
            merge_percent: 4,
            reopen_percent: 3,
            first_generation: 1,
            skip_discard_if_merged: false,
            record: RwLock::new(RunRecord::default()),
        }
    }

    fn area_bytes(&self) -> u64 {
        PmemOooQueue::area_bytes_for(self.event_bytes, self.capacity_events * self.event_bytes as u64)
    }

    /// (merges, reopens, last generation) of the last run.
    pub fn run_counts(&self) -> (u64, u64, u64) {
        let r = self.record.read();
        (r.merges, r.reopens, r.last_generation)
    }

    fn timestamp(&self, t: u64, rng: &mut SplitMix64) -> i64 {
        let jitter = rng.below(81) as i64 - 40;
        (t as i64 * 4 + jitter).div_euclid(3) * 3
    }
}

/// Events in model order: timestamp, then arrival (the id grows with arrival).
fn model_sorted(events: &[Vec<u8>], event_bytes: usize) -> EventList {
    let mut v: Vec<&Vec<u8>> = events.iter().collect();
    v.sort_by_key(|e| (event_ts(e), event_id(e)));
    let mut out = EventList::new(event_bytes);
    for e in v {
        out.push(e);
    }
    out
}

impl PmemCrashProtocol for OooPmemCrash {
    fn name(&self) -> String {
        "events-ooo-queue".to_string()
    }

    fn region_len(&self) -> u64 {
        QUEUE_BASE.0 + self.area_bytes()
    }

    fn run(&self, region: &Arc<Region>, acks: &AckLog) {
        let seed = self.seed;
        assert!(self.event_bytes >= 16, "events carry a timestamp and an id");
        let mut rng = SplitMix64::new(seed);
        let mut q = PmemOooQueue::format_at_generation(
            region.clone(),
            QUEUE_BASE,
            self.area_bytes(),
            self.event_bytes,
            OooIndexing::Indexed,
            self.first_generation,
        )
        .unwrap_or_else(|e| panic!("seed {seed}: format: {e}"));
        let mut rec = RunRecord::default();
        let mut current: Vec<Vec<u8>> = Vec::new();
        for t in 1..=self.events {
            let merge_now = !q.is_empty() && rng.below(100) < self.merge_percent;
            if q.is_full() || merge_now {
                let g = q.generation();
                let sorted = q.sorted().unwrap_or_else(|e| panic!("seed {seed}: sorted: {e}"));
                assert_eq!(sorted, model_sorted(&current, self.event_bytes), "seed {seed}: merge at T{t}");
                region.store_u64_persist(MERGED_WORD, g);
                q.truncate().unwrap_or_else(|e| panic!("seed {seed}: truncate: {e}"));
                current.clear();
                rec.merges += 1;
            }
            let ts = self.timestamp(t, &mut rng);
            let event = workload_event(ts, t, self.event_bytes, &mut rng);
            rec.oracle.attempt(TxnId(t), event.clone(), Vec::new());
            rec.contents.insert(TxnId(t), event.clone());
            rec.generation_of.insert(TxnId(t), q.generation());
            q.push(&event).unwrap_or_else(|e| panic!("seed {seed}: push T{t}: {e}"));
            acks.ack(TxnId(t));
            current.push(event);
            if rng.below(100) < self.reopen_percent {
                let len = q.len();
                drop(q);
                q = PmemOooQueue::open(region.clone(), QUEUE_BASE, OooIndexing::Indexed)
                    .unwrap_or_else(|e| panic!("seed {seed}: reopen at T{t}: {e}"))
                    .0;
                assert_eq!(q.len(), len, "seed {seed}: a clean reopen keeps every event");
                rec.reopens += 1;
            }
        }
        rec.last_generation = q.generation();
        *self.record.write() = rec;
    }

    fn recover_and_check(&self, region: &Arc<Region>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let record = self.record.read();
        let merged = region.load_u64(MERGED_WORD);
        // The tree stands for every event of a generation it merged.
        let mut found: BTreeMap<TxnId, Vec<u8>> = record
            .generation_of
            .iter()
            .filter(|(_, &g)| g <= merged)
            .map(|(t, _)| (*t, record.contents[t].clone()))
            .collect();
        if region.load_u64(QUEUE_BASE) != PMEM_MAGIC {
            // Formatting persists the magic last: no queue, nothing acknowledged.
            return Ok(record.oracle.check(acked, &found));
        }
        let (mut q, _report) = PmemOooQueue::open(region.clone(), QUEUE_BASE, OooIndexing::Indexed)
            .map_err(CrashCheckError::step("open"))?;
        if !self.skip_discard_if_merged {
            q.discard_if_merged(merged).map_err(CrashCheckError::step("discard_if_merged"))?;
        }
        let sorted = q.sorted().map_err(CrashCheckError::step("sorted"))?;
        let mut problems = Problems::default();
        for event in sorted.iter() {
            let txn = TxnId(event_id(event));
            if found.insert(txn, event.to_vec()).is_some() {
                problems.partial(format!("{txn} recovered twice (tree and queue, or twice in the queue)"));
            }
        }
        check_queries(&q, &sorted, self.seed, &mut problems)?;
        let (pure, _) = PmemOooQueue::open(region.clone(), QUEUE_BASE, OooIndexing::Pure)
            .map_err(CrashCheckError::step("open pure"))?;
        if pure.sorted().map_err(CrashCheckError::step("pure sorted"))? != sorted {
            problems.order("the pure flavour disagrees with the indexed one".to_string());
        }
        resume(q, region, &sorted, self.event_bytes, self.seed, &mut problems)?;
        let (mut counts, why) = record.oracle.check(acked, &found);
        counts.partial += problems.counts.partial;
        counts.order_violations += problems.counts.order_violations;
        Ok((counts, why.or(problems.first)))
    }
}

#[derive(Default)]
struct Problems {
    counts: OracleCounts,
    first: Option<String>,
}

impl Problems {
    fn partial(&mut self, why: String) {
        self.counts.partial += 1;
        self.first.get_or_insert(why);
    }

    fn order(&mut self, why: String) {
        self.counts.order_violations += 1;
        self.first.get_or_insert(why);
    }
}

/// Application-time order of `sorted`, and range and point queries against it.
fn check_queries(
    q: &PmemOooQueue,
    sorted: &EventList,
    seed: u64,
    problems: &mut Problems,
) -> Result<(), CrashCheckError> {
    let keys: Vec<(i64, u64)> = sorted.iter().map(|e| (event_ts(e), event_id(e))).collect();
    if let Some(w) = keys.windows(2).find(|w| w[0] >= w[1]) {
        problems.order(format!("sorted() puts {:?} before {:?}", w[0], w[1]));
    }
    let mut rng = SplitMix64::new(seed ^ keys.len() as u64);
    // Saturating: a damaged image may hold any timestamps.
    let lo_ts = keys.first().map_or(0, |k| k.0).saturating_sub(5);
    let hi_ts = keys.last().map_or(0, |k| k.0).saturating_add(5);
    let span = (hi_ts as i128 - lo_ts as i128).clamp(0, 1 << 40) as u64;
    for _ in 0..4 {
        let a = lo_ts.saturating_add(rng.below(span + 1) as i64);
        let b = a.saturating_add(rng.below(40) as i64);
        let want: Vec<&[u8]> = sorted.iter().filter(|e| (a..=b).contains(&event_ts(e))).collect();
        let got = q.get_range(a, b).map_err(CrashCheckError::step("get_range"))?;
        if got.iter().collect::<Vec<_>>() != want {
            problems.order(format!("get_range({a}, {b}) disagrees with sorted()"));
        }
        let point = q.point(a).map_err(CrashCheckError::step("point"))?;
        if point.iter().collect::<Vec<_>>()
            != want.iter().copied().filter(|e| event_ts(e) == a).collect::<Vec<_>>()
        {
            problems.order(format!("point({a}) disagrees with sorted()"));
        }
    }
    Ok(())
}

/// The restart after the crash goes on: up to two more events, then a reopen
/// must find exactly the old events plus those, in order.
fn resume(
    mut q: PmemOooQueue,
    region: &Arc<Region>,
    sorted: &EventList,
    event_bytes: usize,
    seed: u64,
    problems: &mut Problems,
) -> Result<(), CrashCheckError> {
    let mut rng = SplitMix64::new(seed.rotate_left(17));
    let mut expect: Vec<Vec<u8>> = sorted.to_vecs();
    for k in 0..2 {
        if q.is_full() {
            break;
        }
        let ts = expect.first().map_or(0, |e| event_ts(e)).saturating_add(k);
        let event = workload_event(ts, RESUME_ID_BASE + k as u64, event_bytes, &mut rng);
        q.push(&event).map_err(CrashCheckError::step("push after recovery"))?;
        expect.push(event);
    }
    drop(q);
    let (again, _) = PmemOooQueue::open(region.clone(), QUEUE_BASE, OooIndexing::Indexed)
        .map_err(CrashCheckError::step("reopen"))?;
    let got = again.sorted().map_err(CrashCheckError::step("sorted after reopen"))?;
    if got != model_sorted(&expect, event_bytes) {
        problems.partial("a reopen after resuming disagrees with what was pushed".to_string());
    }
    Ok(())
}
