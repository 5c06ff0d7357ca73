//! Crash test of the TAB+-tree with its right flank on PMem (DESIGN.md
//! section 3 applied to chronicledb-pmem.txt section 4.1, "Right Flank"): an
//! implementation of [`PmemCrashProtocol`] for the crash lines
//! `events-flank-k1/pmem`, `events-flank-k25/pmem` (and other batch sizes).
//!
//! Workload (deterministic for a seed): events of a wide schema (40 numeric
//! attributes and two 255-byte strings, so an 8 KiB leaf holds nine and an
//! index node with inline aggregates eight entries; 30% spare room) are
//! appended in timestamp order with runs of equal timestamps; now and then
//! the workload calls `sync` (persisting a partial batch). An event is
//! acknowledged as soon as `durable_through` covers it. Each event is one
//! transaction whose content is its bytes; it depends on the event before it
//! (the recovered events must be a prefix of the appended ones).
//!
//! The block file lives on a [`FaultFs`]. The tree's SSD sync observer keeps
//! a copy of the file system as a crash would leave it after every store
//! sync, tagged with the simulator's operation count; a crash at PMem
//! operation `c` recovers with the latest copy tagged `<= c` (file work
//! between two PMem operations changes no PMem word, so that pair of states
//! is one the crash model allows).
//!
//! Oracle: recovery must succeed and [`TabTree::verify`] pass (else
//! `partial`); the replayed events, each mapped to its transaction by the
//! sequence number it carries, must hold every acknowledged one exactly once
//! with its exact bytes, and be closed under the prefix dependency. Then the
//! recovered tree resumes: three more events are appended and synced, and a
//! second recovery must find all of them.

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

use crate::error::{CheckResult, CrashCheckError};
use strata_events::crashtest_hooks::{FlankBug, FLANK_BUG};
use strata_events::sample_events::seq_of;
pub use strata_events::sample_events::{crash_event, crash_schema, CRASH_NUMERIC_ATTRS};
use strata_events::translation::TranslationKind;
use strata_events::tree::flank_pmem::FLANK_MAGIC;
use strata_events::tree::{
    AggregatePlacement, FlankPlacement, IndexPlacement, TabTree, TreeConfig, TreeMedia,
};

#[derive(Default)]
struct RunRecord {
    oracle: TxnOracle,
    /// File-system states after each store sync: (simulator operations, state).
    snapshots: Vec<(u64, FaultFs)>,
    appended: u64,
    height: usize,
}

/// The PMem right flank under crash test (module comment).
pub struct FlankPmemCrash {
    /// Seed, events appended, planted bug (set through [`CrashBuilder`]).
    pub knobs: Knobs<FlankBug>,
    pub batch_events: u32,
    pub aggregates: AggregatePlacement,
    pub index: IndexPlacement,
    pub translation: TranslationKind,
    /// Spare room per node, permille (smaller nodes make taller trees).
    pub spare_permille: u32,
    record: RwLock<RunRecord>,
}

impl CrashBuilder for FlankPmemCrash {
    type Bug = FlankBug;

    fn knobs_mut(&mut self) -> &mut Knobs<FlankBug> {
        &mut self.knobs
    }
}

impl FlankPmemCrash {
    /// The crash line `events-flank-k{batch_events}/pmem`: inline aggregates,
    /// index nodes on SSD, PMem translation, 100 events (a tree of height 3).
    pub fn new(batch_events: u32) -> FlankPmemCrash {
        FlankPmemCrash {
            knobs: Knobs { seed: 1, size: 100, bug: FlankBug::None },
            batch_events,
            aggregates: AggregatePlacement::Inline,
            index: IndexPlacement::Ssd,
            translation: TranslationKind::PmemArray,
            spare_permille: 300,
            record: RwLock::new(RunRecord::default()),
        }
    }

    /// Every structure on PMem: aggregates in the (dense) PMem array, index
    /// nodes in the PMem array, PMem translation. The index fan-out is then
    /// large, so 90% spare room keeps the tree three levels high with one
    /// event per leaf.
    pub fn all_pmem(batch_events: u32) -> FlankPmemCrash {
        FlankPmemCrash {
            aggregates: AggregatePlacement::PmemArray(strata_events::pmem_arrays::SlotLayout::Dense),
            index: IndexPlacement::Pmem,
            spare_permille: 900,
            ..FlankPmemCrash::new(batch_events).with_size(70)
        }
    }

    fn plant(&self) {
        FLANK_BUG.with(|b| b.set(self.knobs.bug));
    }

    pub fn with_translation(mut self, translation: TranslationKind) -> Self {
        self.translation = translation;
        self
    }

    /// The tree configuration under test.
    pub fn config(&self) -> TreeConfig {
        let mut c = TreeConfig::new(crash_schema())
            .with_spare_permille(self.spare_permille)
            .with_flank(FlankPlacement::Pmem { batch_events: self.batch_events })
            .with_aggregates(self.aggregates)
            .with_index(self.index)
            .with_translation(self.translation)
            .with_capacity(self.knobs.size + 16, self.knobs.size / 2 + 16);
        c.max_levels = 6;
        c.att_fanout = 4;
        c
    }

    fn media<'a>(&self, fs: &'a FaultFs, region: &Arc<Region>) -> TreeMedia<'a> {
        TreeMedia { fs, dir: PathBuf::from("tree"), region: Some(region.clone()), pmem_base: 0 }
    }

    /// Height of the tree and events appended in the last run.
    pub fn run_counts(&self) -> (usize, u64) {
        let r = self.record.read();
        (r.height, r.appended)
    }

    /// The file system as a crash at simulator operation `op` leaves it.
    fn fs_at(&self, op: u64) -> Option<FaultFs> {
        fs_as_of(&self.record.read().snapshots, op, true)
    }
}

impl PmemCrashProtocol for FlankPmemCrash {
    fn name(&self) -> String {
        let default = FlankPmemCrash::new(self.batch_events);
        let mut name = format!("events-flank-k{}", self.batch_events);
        if self.index != default.index || self.aggregates != default.aggregates {
            name.push_str("-allpmem");
        }
        if self.translation != default.translation {
            name.push_str(&format!("-{}", self.translation.name()));
        }
        name
    }

    fn region_len(&self) -> u64 {
        self.config().pmem_plan(0).expect("valid plan").end
    }

    fn run(&self, region: &Arc<Region>, acks: &AckLog) {
        self.plant();
        let seed = self.knobs.seed;
        let config = self.config();
        let schema = config.schema.clone();
        let fs = FaultFs::new();
        let snapshots = Arc::new(Mutex::new(Vec::new()));
        let mut tree = TabTree::create(config, self.media(&fs, region))
            .unwrap_or_else(|e| panic!("seed {seed}: create: {e}"));
        snapshots.lock().push((sim_ops(region), fs.crash(Tear::None)));
        let (obs_fs, obs_region, obs_snaps) = (fs.clone(), region.clone(), snapshots.clone());
        tree.set_ssd_sync_observer(Some(Box::new(move || {
            obs_snaps.lock().push((sim_ops(&obs_region), obs_fs.crash(Tear::None)));
        })));
        let mut oracle = TxnOracle::new();
        let mut acked = 0u64;
        let mut ack_through = |durable: u64| {
            while acked < durable {
                acks.ack(TxnId(acked));
                acked += 1;
            }
        };
        for seq in 0..self.knobs.size {
            let bytes = crash_event(&schema, seed, seq);
            let deps = seq.checked_sub(1).map(TxnId).into_iter().collect();
            oracle.attempt(TxnId(seq), bytes.clone(), deps);
            tree.append(&bytes).unwrap_or_else(|e| panic!("seed {seed}: append {seq}: {e}"));
            if (seq + seed) % 7 == 3 {
                tree.sync().unwrap_or_else(|e| panic!("seed {seed}: sync after {seq}: {e}"));
            }
            ack_through(tree.durable_through());
        }
        ack_through(tree.sync().unwrap_or_else(|e| panic!("seed {seed}: final sync: {e}")));
        let height = tree.height();
        drop(tree);
        let snapshots = std::mem::take(&mut *snapshots.lock());
        *self.record.write() = RunRecord { oracle, snapshots, appended: self.knobs.size, height };
    }

    fn recover_and_check_at(
        &self,
        region: &Arc<Region>,
        acked: &BTreeSet<TxnId>,
        crash_op: u64,
    ) -> CheckResult {
        self.plant();
        let config = self.config();
        let schema = config.schema.clone();
        let plan = config.pmem_plan(0).map_err(CrashCheckError::step("pmem plan"))?;
        let flank_base =
            plan.flank.as_ref().ok_or_else(|| CrashCheckError::inconsistent("no flank area"))?.start;
        let record = self.record.read();
        if region.load_u64(strata_pmem::RegionOffset(flank_base)) != FLANK_MAGIC {
            // The flank is formatted last by create: nothing was acknowledged.
            return Ok(record.oracle.check(acked, &BTreeMap::new()));
        }
        let fs = self.fs_at(crash_op).ok_or(CrashCheckError::NoFileSystemState)?;
        let (mut tree, _) = TabTree::recover(config.clone(), self.media(&fs, region))
            .map_err(CrashCheckError::step("recovery"))?;
        let mut counts = OracleCounts::default();
        let mut why = None;
        if let Err(e) = tree.verify() {
            counts.partial += 1;
            why = Some(format!("recovered tree fails verification: {e}"));
        }
        let mut found = BTreeMap::new();
        let mut replayed = 0u64;
        for e in tree.replay() {
            let e = e.map_err(CrashCheckError::step("replay"))?;
            replayed += 1;
            let seq = seq_of(&schema, &e)
                .ok_or_else(|| CrashCheckError::Unidentified("an event without a sequence number".into()))?;
            if found.insert(TxnId(seq), e).is_some() {
                counts.partial += 1;
                why.get_or_insert_with(|| format!("event {seq} recovered twice"));
            }
        }
        let (c, w) = record.oracle.check(acked, &found);
        counts.add(c);
        if why.is_none() {
            why = w;
        }
        drop(record);
        // Resume: three more events, synced, must survive a second recovery.
        let next = found.keys().last().map_or(0, |t| t.0 + 1);
        let mut expect: Vec<Vec<u8>> =
            tree.replay().collect::<Result<_, _>>().map_err(CrashCheckError::step("replay"))?;
        for seq in next..next + 3 {
            let bytes = crash_event(&schema, self.knobs.seed, seq);
            tree.append(&bytes).map_err(CrashCheckError::step("append after recovery"))?;
            expect.push(bytes);
        }
        tree.sync().map_err(CrashCheckError::step("sync after recovery"))?;
        if replayed + 3 != tree.len() {
            return Err(CrashCheckError::inconsistent(format!(
                "the resumed tree counts {} events, expected {}",
                tree.len(),
                replayed + 3
            )));
        }
        drop(tree);
        let (again, _) = TabTree::recover(config, self.media(&fs.crash(Tear::None), region))
            .map_err(CrashCheckError::step("second recovery"))?;
        again.verify().map_err(CrashCheckError::step("second recovery fails verification"))?;
        let got: Vec<Vec<u8>> =
            again.replay().collect::<Result<_, _>>().map_err(CrashCheckError::step("second replay"))?;
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
