//! Crash test of an event stream's out-of-order merges (DESIGN.md section 3
//! applied to chronicledb-pmem.txt section 4.3): an [`EventStream`] with its
//! right flank on PMem and the PMem indexed out-of-order queue, under the
//! PMem crash simulator; the crash line `events-stream-ooo/pmem`.
//!
//! Workload (deterministic for a seed): events of the wide crash schema
//! ([`crash_schema`]: 838 bytes, nine to a
//! leaf; 10% spare room, so written-out leaves hold eight and a ninth event
//! fits, more are carried) with timestamps in pairs of equal values; a share of them (`ooo_permille`)
//! arrives late, with the timestamp of an event up to 30 places earlier
//! (ties with tree and queue events). The queue holds a few events, so it is
//! merged many times, with leaf rewrites, carries into full leaves and into
//! the flank leaf, write-outs and root growth inside merges. The stream is
//! synced now and then. Each event is one transaction (its bytes carry its
//! number): an event appended to the tree is acknowledged once
//! `durable_through` covers it (the last `len - durable_through` tree
//! appends are the flank leaf's unpersisted batch), a queued event when its
//! push returns (with the DRAM queue, [`StreamOooPmemCrash::with_dram_queue`]:
//! when a merge took it into the tree; merges then spill their input to
//! `strata_events::stream::merge_input` first, which recovery resumes from). Tree events depend on the tree event before them, queued
//! events on the queued event before them.
//!
//! The block file lives on a [`FaultFs`]; the tree's sync observer keeps a
//! copy as a crash leaves it after every store sync, and a crash at PMem
//! operation `c` recovers with the latest copy taken at or before `c` (as in
//! [`crate::events_flank::FlankPmemCrash`]).
//!
//! Oracle after [`EventStream::recover`] (which resumes an interrupted
//! merge): recovery succeeds; [`EventStream::verify`] passes (else
//! `partial`); every acknowledged event is present exactly once with its
//! bytes (`lost`, `partial`); what is present is closed under the
//! dependencies; range, point and aggregate queries equal those of the
//! recovered events sorted by time (`order_violations`). Then the stream
//! resumes: two in-order and two late events are appended and synced, and
//! a second recovery must hold them and the recovered ones.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use crate::oracle::{AckLog, OracleCounts, TxnOracle};
use crate::pmem_harness::{fs_as_of, sim_ops, PmemCrashProtocol};
use crate::protocol::{CrashBuilder, Knobs};
use parking_lot::{Mutex, RwLock};
use strata_media::fs::Tear;
use strata_media::{FaultFs, TxnId};
use strata_pmem::Region;

use strata_events::aggregate::Aggregates;
use strata_events::crashtest_hooks::{MergeBug, MERGE_BUG};
use strata_events::event::timestamp_of;
use strata_events::ooo::OooIndexing;
use strata_events::pmem_arrays::SlotLayout;
use strata_events::sample_events::{crash_event_shaped, crash_schema, seq_of, CrashValues};
use strata_events::schema::StreamSchema;
use strata_events::stream::{EventStream, Placed, QueuePlacement, StreamConfig, StreamMedia};
use strata_events::translation::TranslationKind;
use strata_events::tree::{AggregatePlacement, FlankPlacement, IndexPlacement, TreeConfig};

use crate::error::{CheckResult, CrashCheckError};
use crate::workload::SplitMix64;

/// Numbers of the events appended after recovery start here.
const RESUME_SEQ_BASE: u64 = 1 << 20;

/// The event with number `seq` and timestamp `ts` (small integral values:
/// exact sums).
pub fn stream_crash_event(schema: &StreamSchema, seed: u64, seq: u64, ts: i64) -> Vec<u8> {
    let shape = CrashValues { mul: 37, step: 11, pad: 'y', pad_mod: 97 };
    crash_event_shaped(schema, seed, seq, ts, shape)
}

/// The in-order timestamp of event `i`: pairs of equal values, 10 apart.
fn in_order_ts(i: u64) -> i64 {
    1_000 + (i / 2) as i64 * 10
}

#[derive(Default)]
struct RunRecord {
    oracle: TxnOracle,
    snapshots: Vec<(u64, FaultFs)>,
    /// Simulator operations when `create` returned (no acknowledgement before).
    created_at: u64,
    merges: u64,
    events_carried: u64,
    leaves_rewritten: u64,
    height: usize,
}

/// What one uncrashed run did (for tests and reports).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamCrashRunCounts {
    pub merges: u64,
    pub events_carried: u64,
    pub leaves_rewritten: u64,
    pub height: usize,
}

/// An event stream's out-of-order merges under crash test (module comment).
pub struct StreamOooPmemCrash {
    /// Seed, events appended, planted merge bug (set through [`CrashBuilder`]).
    pub knobs: Knobs<MergeBug>,
    /// The PMem flank's batch size `k`.
    pub batch_events: u32,
    /// Events the queue holds before it is merged.
    pub queue_events: u64,
    /// Share of late events, permille.
    pub ooo_permille: u64,
    /// Every tree structure on PMem (aggregate array, index node array).
    pub all_pmem: bool,
    /// The DRAM queue instead of the PMem indexed one: queued events are
    /// acknowledged when a merge took them into the tree, and merges spill
    /// their input to a file first.
    pub dram_queue: bool,
    /// Leaves written out full (no spare room), so every merge shifts the
    /// leaves after its first late event towards the flank in runs, with
    /// tails of more than a leaf (the one-pass merge's long runs).
    pub shifting: bool,
    record: RwLock<RunRecord>,
}

impl CrashBuilder for StreamOooPmemCrash {
    type Bug = MergeBug;

    fn knobs_mut(&mut self) -> &mut Knobs<MergeBug> {
        &mut self.knobs
    }
}

impl StreamOooPmemCrash {
    /// The batch size of the crash line `events-stream-ooo/pmem`.
    pub const DEFAULT_BATCH_EVENTS: u32 = 5;

    /// The crash line `events-stream-ooo/pmem` with `new(5)` (other batch
    /// sizes are named `events-stream-ooo-k{k}`): batch `k` = `batch_events`,
    /// inline aggregates, index nodes on SSD, PMem translation, a queue of 4
    /// events, 70 events of which 40% late.
    pub fn new(batch_events: u32) -> StreamOooPmemCrash {
        StreamOooPmemCrash {
            knobs: Knobs { seed: 1, size: 70, bug: MergeBug::None },
            batch_events,
            queue_events: 4,
            ooo_permille: 400,
            all_pmem: false,
            dram_queue: false,
            shifting: false,
            record: RwLock::new(RunRecord::default()),
        }
    }

    /// Aggregates in the PMem array and index nodes in the PMem index node
    /// array (completed index nodes are rewritten in place by merges); 100
    /// events, so the tree has completed index nodes.
    pub fn all_pmem(batch_events: u32) -> StreamOooPmemCrash {
        StreamOooPmemCrash { all_pmem: true, ..StreamOooPmemCrash::new(batch_events).with_size(100) }
    }

    /// The crash line `events-stream-shift/pmem`: no spare room, a queue of
    /// 12, 110 events of which half are late, so merges shift whole runs of
    /// leaves and append tails of more than a leaf to the flank.
    pub fn shifting(batch_events: u32) -> StreamOooPmemCrash {
        StreamOooPmemCrash {
            shifting: true,
            queue_events: 12,
            ooo_permille: 500,
            ..StreamOooPmemCrash::new(batch_events).with_size(110)
        }
    }

    /// The DRAM queue (crash line `events-stream-ooo-dramq/pmem`).
    pub fn with_dram_queue(mut self) -> Self {
        self.dram_queue = true;
        self
    }

    /// The stream configuration under test.
    pub fn config(&self) -> StreamConfig {
        let mut tree = TreeConfig::new(crash_schema())
            .with_spare_permille(match (self.all_pmem, self.shifting) {
                (true, _) => 900,
                (false, true) => 0,
                (false, false) => 100,
            })
            .with_flank(FlankPlacement::Pmem { batch_events: self.batch_events })
            .with_translation(TranslationKind::PmemArray)
            .with_capacity(self.knobs.size + 64, self.knobs.size / 2 + 32);
        if self.all_pmem {
            // Index nodes with the aggregates out of line have a large
            // fan-out: 90% spare room (one event per written-out leaf, 50
            // entries per index node) still makes a tree of three levels.
            tree = tree
                .with_aggregates(AggregatePlacement::PmemArray(SlotLayout::Dense))
                .with_index(IndexPlacement::Pmem);
        }
        tree.max_levels = 6;
        let event_bytes = tree.schema.event_bytes() as u64;
        let queue =
            if self.dram_queue { QueuePlacement::Dram } else { QueuePlacement::Pmem(OooIndexing::Indexed) };
        StreamConfig::new(tree).with_queue(queue, self.queue_events * event_bytes)
    }

    fn media(&self, fs: &FaultFs, region: &Arc<Region>) -> StreamMedia {
        StreamMedia {
            fs: Arc::new(fs.clone()),
            dir: PathBuf::from("stream"),
            region: Some(region.clone()),
            pmem_base: 0,
        }
    }

    /// What the last run did.
    pub fn run_counts(&self) -> StreamCrashRunCounts {
        let r = self.record.read();
        StreamCrashRunCounts {
            merges: r.merges,
            events_carried: r.events_carried,
            leaves_rewritten: r.leaves_rewritten,
            height: r.height,
        }
    }

    /// The workload's events in arrival order: `(seq, bytes)`.
    fn arrivals(&self, schema: &StreamSchema) -> Vec<(u64, Vec<u8>)> {
        let mut rng = SplitMix64::new(self.knobs.seed ^ 0x5EED_0000_0000_0001);
        (0..self.knobs.size)
            .map(|seq| {
                let late = seq >= 4 && rng.below(1000) < self.ooo_permille;
                let ts = if late { in_order_ts(seq - 1 - rng.below(seq.min(30))) } else { in_order_ts(seq) };
                (seq, stream_crash_event(schema, self.knobs.seed, seq, ts))
            })
            .collect()
    }

    fn fs_at(&self, op: u64) -> Option<FaultFs> {
        fs_as_of(&self.record.read().snapshots, op, true)
    }

    fn with_bug<T>(&self, f: impl FnOnce() -> T) -> T {
        MERGE_BUG.with(|b| b.set(self.knobs.bug));
        let out = f();
        MERGE_BUG.with(|b| b.set(MergeBug::None));
        out
    }

    fn run_workload(&self, region: &Arc<Region>, acks: &AckLog) {
        let seed = self.knobs.seed;
        let config = self.config();
        let schema = config.tree.schema.clone();
        let fs = FaultFs::new();
        let snapshots = Arc::new(Mutex::new(Vec::new()));
        let mut s = EventStream::create(config, self.media(&fs, region))
            .unwrap_or_else(|e| panic!("seed {seed}: create: {e}"));
        let created_at = sim_ops(region);
        snapshots.lock().push((created_at, fs.crash(Tear::None)));
        let (obs_fs, obs_region, obs_snaps) = (fs.clone(), region.clone(), snapshots.clone());
        s.set_ssd_sync_observer(Some(Box::new(move || {
            obs_snaps.lock().push((sim_ops(&obs_region), obs_fs.crash(Tear::None)));
        })));
        let mut oracle = TxnOracle::new();
        let (mut last_tree, mut last_queue) = (None::<u64>, None::<u64>);
        let mut tree_unacked = std::collections::VecDeque::new();
        let mut queue_unacked = std::collections::VecDeque::new();
        for (seq, bytes) in self.arrivals(&schema) {
            let r = s.append(&bytes).unwrap_or_else(|e| panic!("seed {seed}: append {seq}: {e}"));
            let chain = if r.placed == Placed::Queue { &mut last_queue } else { &mut last_tree };
            oracle.attempt(TxnId(seq), bytes, chain.map(TxnId).into_iter().collect());
            *chain = Some(seq);
            match r.placed {
                Placed::Queue if self.dram_queue => queue_unacked.push_back(seq),
                Placed::Queue => acks.ack(TxnId(seq)),
                _ => tree_unacked.push_back(seq),
            }
            // DRAM queue: what is no longer queued was merged (durably).
            while queue_unacked.len() as u64 > s.queue().len() {
                acks.ack(TxnId(queue_unacked.pop_front().expect("non-empty")));
            }
            let mut durable = r.durable_through;
            if (seq + seed) % 11 == 5 {
                durable = s.sync().unwrap_or_else(|e| panic!("seed {seed}: sync after {seq}: {e}"));
            }
            let unpersisted = (s.tree().len() - durable) as usize;
            while tree_unacked.len() > unpersisted {
                acks.ack(TxnId(tree_unacked.pop_front().expect("non-empty")));
            }
        }
        if self.dram_queue && !s.queue().is_empty() {
            s.merge().unwrap_or_else(|e| panic!("seed {seed}: final merge: {e}"));
        }
        s.sync().unwrap_or_else(|e| panic!("seed {seed}: final sync: {e}"));
        for seq in tree_unacked.into_iter().chain(queue_unacked) {
            acks.ack(TxnId(seq));
        }
        let stats = s.stats();
        let height = s.tree().height();
        drop(s);
        *self.record.write() = RunRecord {
            oracle,
            snapshots: std::mem::take(&mut *snapshots.lock()),
            created_at,
            merges: stats.merges,
            events_carried: stats.tree.events_carried,
            leaves_rewritten: stats.tree.leaves_rewritten,
            height,
        };
    }

    /// Range, point and aggregate queries against the recovered events.
    fn check_queries(&self, s: &EventStream, present: &[Vec<u8>]) -> Result<(), CrashCheckError> {
        let spec = &s.config().tree.spec;
        let schema = &s.config().tree.schema;
        let key = |e: &Vec<u8>| (timestamp_of(e), seq_of(schema, e));
        let mut model = present.to_vec();
        model.sort_by_key(key);
        let last = model.last().map_or(1_000, |e| timestamp_of(e));
        let mut rng = SplitMix64::new(self.knobs.seed ^ present.len() as u64);
        for q in 0..6 {
            let lo = 990 + rng.below((last - 980).max(1) as u64) as i64;
            let hi = if q == 0 { i64::MAX } else { lo + rng.below(120) as i64 };
            let want: Vec<Vec<u8>> =
                model.iter().filter(|e| (lo..=hi).contains(&timestamp_of(e))).cloned().collect();
            let got = s.range(lo, hi).map_err(CrashCheckError::step("range"))?;
            if got.windows(2).any(|w| timestamp_of(&w[0]) > timestamp_of(&w[1])) {
                return Err(CrashCheckError::inconsistent(format!("range {lo}..={hi} is not in time order")));
            }
            let mut sorted = got.clone();
            sorted.sort_by_key(key);
            if sorted != want {
                return Err(CrashCheckError::inconsistent(format!(
                    "range {lo}..={hi}: {} events, the model has {}",
                    got.len(),
                    want.len()
                )));
            }
            let mut point = s.point(lo).map_err(CrashCheckError::step("point"))?;
            point.sort_by_key(key);
            let want_point: Vec<Vec<u8>> = want.iter().filter(|e| timestamp_of(e) == lo).cloned().collect();
            if point != want_point {
                return Err(CrashCheckError::inconsistent(format!(
                    "point {lo}: {} events, the model has {}",
                    point.len(),
                    want_point.len()
                )));
            }
            let aggs = s.aggregate(lo, hi).map_err(CrashCheckError::step("aggregate"))?;
            let expected = Aggregates::of_events(spec, want.iter().map(Vec::as_slice))
                .map_err(CrashCheckError::step("model aggregates"))?;
            if aggs != expected {
                return Err(CrashCheckError::inconsistent(format!(
                    "aggregate {lo}..={hi}: {aggs:?}, the model's {expected:?}"
                )));
            }
        }
        Ok(())
    }
}

impl PmemCrashProtocol for StreamOooPmemCrash {
    fn name(&self) -> String {
        let mut name = if self.shifting { "events-stream-shift" } else { "events-stream-ooo" }.to_string();
        if self.batch_events != StreamOooPmemCrash::DEFAULT_BATCH_EVENTS {
            name.push_str(&format!("-k{}", self.batch_events));
        }
        if self.all_pmem {
            name.push_str("-allpmem");
        }
        if self.dram_queue {
            name.push_str("-dramq");
        }
        name
    }

    fn region_len(&self) -> u64 {
        self.config().pmem_end(0).expect("valid plan")
    }

    fn run(&self, region: &Arc<Region>, acks: &AckLog) {
        self.with_bug(|| self.run_workload(region, acks))
    }

    fn recover_and_check_at(
        &self,
        region: &Arc<Region>,
        acked: &BTreeSet<TxnId>,
        crash_op: u64,
    ) -> CheckResult {
        let record = self.record.read();
        if crash_op < record.created_at {
            // Cut inside create: nothing was acknowledged yet.
            return Ok(record.oracle.check(acked, &BTreeMap::new()));
        }
        drop(record);
        self.with_bug(|| self.check_recovery(region, acked, crash_op))
    }
}

impl StreamOooPmemCrash {
    fn check_recovery(&self, region: &Arc<Region>, acked: &BTreeSet<TxnId>, crash_op: u64) -> CheckResult {
        let config = self.config();
        let schema = config.tree.schema.clone();
        let fs = self.fs_at(crash_op).ok_or(CrashCheckError::NoFileSystemState)?;
        let (mut s, _) = EventStream::recover(config.clone(), self.media(&fs, region))
            .map_err(CrashCheckError::step("recovery"))?;
        let mut counts = OracleCounts::default();
        let mut why = None;
        if let Err(e) = s.verify() {
            counts.partial += 1;
            why = Some(format!("recovered stream fails verification: {e}"));
        }
        let present = s.replay().map_err(CrashCheckError::step("replay"))?;
        let mut found = BTreeMap::new();
        for e in &present {
            let seq = seq_of(&schema, e)
                .ok_or_else(|| CrashCheckError::Unidentified("an event without a sequence number".into()))?;
            if found.insert(TxnId(seq), e.clone()).is_some() {
                counts.partial += 1;
                why.get_or_insert_with(|| format!("event {seq} recovered twice"));
            }
        }
        let (c, w) = self.record.read().oracle.check(acked, &found);
        counts.add(c);
        if why.is_none() {
            why = w;
        }
        if counts.is_clean() {
            if let Err(e) = self.check_queries(&s, &present) {
                counts.order_violations += 1;
                why = Some(e.to_string());
            }
        }
        // Resume: two in-order and two late events, synced, survive a second recovery.
        let newest = present.iter().map(|e| timestamp_of(e)).max().unwrap_or(1_000);
        let mut expect = present.clone();
        for (k, ts) in [newest + 10, newest + 20, newest - 15, newest - 3].into_iter().enumerate() {
            let bytes = stream_crash_event(&schema, self.knobs.seed, RESUME_SEQ_BASE + k as u64, ts);
            s.append(&bytes).map_err(CrashCheckError::step("append after recovery"))?;
            expect.push(bytes);
        }
        if self.dram_queue && !s.queue().is_empty() {
            s.merge().map_err(CrashCheckError::step("merge after recovery"))?;
        }
        s.sync().map_err(CrashCheckError::step("sync after recovery"))?;
        drop(s);
        let (again, _) = EventStream::recover(config, self.media(&fs.crash(Tear::None), region))
            .map_err(CrashCheckError::step("second recovery"))?;
        again.verify().map_err(CrashCheckError::step("second recovery fails verification"))?;
        let mut got = again.replay().map_err(CrashCheckError::step("second replay"))?;
        let key = |e: &Vec<u8>| (timestamp_of(e), seq_of(&schema, e));
        got.sort_by_key(key);
        expect.sort_by_key(key);
        if got != expect {
            return Err(CrashCheckError::inconsistent(format!(
                "a second recovery after resuming holds {} events, expected {}",
                got.len(),
                expect.len()
            )));
        }
        Ok((counts, why))
    }
}
