//! Every translation variant against a `BTreeMap` model: seeded random
//! sequences of node writes (new leaves, new index nodes, new versions of
//! old nodes), lookups, flushes, syncs, clean reopens and crashes (the block
//! file as synced, the PMem simulator's persistent image). After a crash the
//! model falls back to its state at the last sync.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_media::fs::Tear;
use strata_media::FaultFs;
use strata_pmem::{Region, RegionOffset};

use super::*;
use crate::block_store::sample_node;

const LEAF_CAPACITY: u64 = 4000;
const INDEX_CAPACITY: u64 = 1000;

#[derive(Copy, Clone, Debug)]
enum Variant {
    Dram,
    Pmem,
    Att(u32),
}

fn path() -> &'static Path {
    Path::new("events.blocks")
}

fn pmem_len() -> u64 {
    PmemArrayTranslation::footprint_bytes(LEAF_CAPACITY, INDEX_CAPACITY).unwrap()
}

fn create(variant: Variant, region: &Arc<Region>) -> Box<dyn Translation> {
    match variant {
        Variant::Dram => Box::new(DramTranslation::new(LEAF_CAPACITY, INDEX_CAPACITY)),
        Variant::Pmem => Box::new(
            PmemArrayTranslation::create(
                region.clone(),
                RegionOffset(0),
                pmem_len(),
                LEAF_CAPACITY,
                INDEX_CAPACITY,
            )
            .unwrap(),
        ),
        Variant::Att(fanout) => Box::new(AttTranslation::new(AttOptions { fanout }).unwrap()),
    }
}

fn recover(
    variant: Variant,
    store: &mut BlockStore,
    region: &Arc<Region>,
) -> (Box<dyn Translation>, RecoveryReport) {
    match variant {
        Variant::Dram => {
            let (t, r) = DramTranslation::recover(store, LEAF_CAPACITY, INDEX_CAPACITY).unwrap();
            (Box::new(t), r)
        }
        Variant::Pmem => {
            let (t, r) =
                PmemArrayTranslation::recover(region.clone(), RegionOffset(0), pmem_len(), store).unwrap();
            (Box::new(t), r)
        }
        Variant::Att(fanout) => {
            let (t, r) = AttTranslation::recover(store, AttOptions { fanout }).unwrap();
            (Box::new(t), r)
        }
    }
}

/// The model: every node written, with its address and bytes.
type Model = BTreeMap<NodeId, (PhysAddr, Vec<u8>)>;

/// What one seeded run observed; the tests assert on it.
struct ModelRun {
    /// Variant and seed, for messages.
    what: String,
    /// Every disagreement with the model seen during the run (lookups,
    /// bytes read back, checks after reopens and crashes), in order.
    mismatches: Vec<String>,
    /// Lookups compared against the model.
    lookups: u64,
    reopens: u32,
    crashes: u32,
    /// At the end: the model's address of every node written, and `None`
    /// for a few ids never written.
    expected: BTreeMap<NodeId, Option<PhysAddr>>,
    /// At the end: what the translation returns for the same ids.
    translated: BTreeMap<NodeId, Option<PhysAddr>>,
}

impl ModelRun {
    /// The first few mismatches, for assertion messages.
    fn first_mismatches(&self) -> &[String] {
        &self.mismatches[..self.mismatches.len().min(5)]
    }
}

/// Ids the run never writes (beyond the next leaf and index numbers).
fn never_written(next: [u64; 2]) -> [NodeId; 3] {
    [NodeId::leaf(next[0]), NodeId::leaf(next[0] + 17), NodeId::index(next[1] + 1)]
}

/// What `t` returns for `id`, an error as its message.
fn lookup(t: &dyn Translation, store: &BlockStore, id: NodeId) -> Result<Option<PhysAddr>, String> {
    t.get(store, id).map_err(|e| e.to_string())
}

/// Compares every node of the model (address and bytes), and a few ids
/// never written, against `t`; returns the number of lookups and pushes
/// every disagreement to `mismatches`.
fn compare_all(
    t: &dyn Translation,
    store: &BlockStore,
    model: &Model,
    next: [u64; 2],
    what: &str,
    mismatches: &mut Vec<String>,
) -> u64 {
    let mut lookups = 0;
    for (id, (addr, bytes)) in model {
        lookups += 1;
        let got = lookup(t, store, *id);
        if got != Ok(Some(*addr)) {
            mismatches.push(format!("{what}: {id} translates to {got:?}, the model says {addr}"));
        }
        match store.read_node(*addr) {
            Ok((read_id, read)) if read_id == *id && read == *bytes => {}
            other => mismatches.push(format!("{what}: bytes of {id} at {addr} read back as {other:?}")),
        }
    }
    for id in never_written(next) {
        lookups += 1;
        let got = lookup(t, store, id);
        if got != Ok(None) {
            mismatches.push(format!("{what}: {id} was never written, translates to {got:?}"));
        }
    }
    lookups
}

/// Runs `ops` seeded random steps of `variant` against the model and
/// reports what it observed (see [`ModelRun`]). Errors of the store or of
/// `set` panic with the variant, seed and step.
fn run_model(variant: Variant, seed: u64, ops: usize) -> ModelRun {
    let what = format!("{variant:?} seed {seed}");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut fs = FaultFs::new();
    let mut region = Arc::new(Region::sim(pmem_len()));
    let mut store = BlockStore::create(&fs, path()).unwrap();
    let mut t = create(variant, &region);
    let mut model = Model::new();
    let mut synced_model = model.clone();
    let mut next = [0u64; 2];
    let mut mismatches = Vec::new();
    let (mut lookups, mut reopens, mut crashes) = (0, 0, 0);
    for step in 0..ops {
        let what = format!("{what} step {step}");
        match rng.gen_range(0..100) {
            0..=54 => {
                let id = match rng.gen_range(0..10) {
                    0..=5 => {
                        next[0] += 1;
                        NodeId::leaf(next[0] - 1)
                    }
                    6 | 7 => {
                        next[1] += 1;
                        NodeId::index(next[1] - 1)
                    }
                    _ if !model.is_empty() => *model.keys().nth(rng.gen_range(0..model.len())).unwrap(),
                    _ => continue,
                };
                let bytes = sample_node(rng.gen(), rng.gen_range(0..2500), rng.gen_bool(0.3));
                let addr = store.append(id, &bytes).unwrap();
                t.set(&mut store, id, addr).unwrap_or_else(|e| panic!("{what}: set {id}: {e}"));
                model.insert(id, (addr, bytes));
            }
            55..=79 => {
                let kind = if rng.gen_bool(0.7) { NodeKind::Leaf } else { NodeKind::Index };
                let number = rng.gen_range(0..next[kind_index(kind)] + 3);
                let id = NodeId { kind, number };
                let want = model.get(&id).map(|(a, _)| *a);
                lookups += 1;
                let got = lookup(&*t, &store, id);
                if got != Ok(want) {
                    mismatches.push(format!("{what}: get {id} returned {got:?}, the model says {want:?}"));
                }
            }
            80..=84 => store.flush().unwrap(),
            85..=91 => {
                t.sync(&mut store).unwrap();
                synced_model = model.clone();
            }
            92..=95 => {
                // Clean restart: everything synced, DRAM dropped.
                t.sync(&mut store).unwrap();
                synced_model = model.clone();
                drop(t);
                drop(store);
                store = BlockStore::open(&fs, path()).unwrap().0;
                let (recovered, report) = recover(variant, &mut store, &region);
                t = recovered;
                if report.kind != t.kind() {
                    mismatches.push(format!("{what}: recovery reports {:?} for {:?}", report.kind, t.kind()));
                }
                let after = format!("{what} after reopen");
                lookups += compare_all(&*t, &store, &model, next, &after, &mut mismatches);
                reopens += 1;
            }
            _ => {
                // Crash: unsynced file data lost, PMem as persisted.
                drop(t);
                drop(store);
                fs = fs.crash(Tear::None);
                region = Arc::new(Region::sim_from_image(region.as_sim().unwrap().persistent_image()));
                model = synced_model.clone();
                store = BlockStore::open(&fs, path()).unwrap().0;
                let (recovered, _) = recover(variant, &mut store, &region);
                t = recovered;
                let after = format!("{what} after crash");
                lookups += compare_all(&*t, &store, &model, next, &after, &mut mismatches);
                crashes += 1;
            }
        }
    }
    lookups += compare_all(&*t, &store, &model, next, &format!("{what} at the end"), &mut mismatches);
    let ids = model.keys().copied().chain(never_written(next));
    let expected = ids.clone().map(|id| (id, model.get(&id).map(|(a, _)| *a))).collect();
    let translated =
        ids.map(|id| (id, t.get(&store, id).unwrap_or_else(|e| panic!("{what}: get {id}: {e}")))).collect();
    ModelRun { what, mismatches, lookups, reopens, crashes, expected, translated }
}

#[test]
fn dram_translation_agrees_with_a_model_across_restarts() {
    for seed in 0..6 {
        let run = run_model(Variant::Dram, seed, 800);
        assert!(run.mismatches.is_empty(), "{}: {:?}", run.what, run.first_mismatches());
        assert_eq!(run.translated, run.expected, "{}: final translations", run.what);
        assert!(run.lookups > 800 && run.reopens > 0 && run.crashes > 0, "{}: too few checks", run.what);
    }
}

#[test]
fn pmem_translation_agrees_with_a_model_across_restarts() {
    for seed in 0..6 {
        let run = run_model(Variant::Pmem, seed, 800);
        assert!(run.mismatches.is_empty(), "{}: {:?}", run.what, run.first_mismatches());
        assert_eq!(run.translated, run.expected, "{}: final translations", run.what);
        assert!(run.lookups > 800 && run.reopens > 0 && run.crashes > 0, "{}: too few checks", run.what);
    }
}

#[test]
fn att_translation_agrees_with_a_model_across_restarts() {
    for (seed, fanout) in [(0, 2), (1, 3), (2, 4), (3, 8), (4, 16), (5, ATT_MAX_FANOUT_FOR_TESTS)] {
        let run = run_model(Variant::Att(fanout), seed, 800);
        assert!(run.mismatches.is_empty(), "{}: {:?}", run.what, run.first_mismatches());
        assert_eq!(run.translated, run.expected, "{}: final translations", run.what);
        assert!(run.lookups > 800 && run.reopens > 0 && run.crashes > 0, "{}: too few checks", run.what);
    }
}

const ATT_MAX_FANOUT_FOR_TESTS: u32 = super::att_node::ATT_MAX_FANOUT;

#[test]
fn every_variant_rejects_translations_out_of_append_order() {
    let fs = FaultFs::new();
    let region = Arc::new(Region::sim(pmem_len()));
    for variant in [Variant::Dram, Variant::Pmem, Variant::Att(4)] {
        let mut store = BlockStore::create(&fs, path()).unwrap();
        let mut t = create(variant, &region);
        let a = store.append(NodeId::leaf(0), b"a").unwrap();
        let b = store.append(NodeId::leaf(1), b"b").unwrap();
        t.set(&mut store, NodeId::leaf(1), b).unwrap();
        let err = t.set(&mut store, NodeId::leaf(0), a).unwrap_err();
        assert!(matches!(err, EventError::InvalidInput(_)), "{variant:?}: {err}");
        assert_eq!(t.get(&store, NodeId::leaf(0)).unwrap(), None, "{variant:?}");
        assert_eq!(t.get(&store, NodeId::leaf(1)).unwrap(), Some(b), "{variant:?}");
        assert_eq!(t.stats().sets, 1, "{variant:?}");
    }
}

#[test]
fn capacities_bound_the_flat_arrays() {
    let fs = FaultFs::new();
    let region = Arc::new(Region::sim(pmem_len()));
    for variant in [Variant::Dram, Variant::Pmem] {
        let mut store = BlockStore::create(&fs, path()).unwrap();
        let mut t = create(variant, &region);
        let a = store.append(NodeId::leaf(LEAF_CAPACITY), b"too far").unwrap();
        let err = t.set(&mut store, NodeId::leaf(LEAF_CAPACITY), a).unwrap_err();
        assert!(matches!(err, EventError::Full { .. }), "{variant:?}: {err}");
        assert_eq!(t.get(&store, NodeId::leaf(LEAF_CAPACITY)).unwrap(), None);
        // Recovery skips the refused record instead of failing.
        store.sync().unwrap();
        let (t, _) = recover(variant, &mut store, &region);
        assert_eq!(t.get(&store, NodeId::leaf(LEAF_CAPACITY)).unwrap(), None, "{variant:?}");
    }
}

/// Recovery cost in records scanned, as in Fig. 7: DRAM scans the whole
/// file, the ATT the records since its last commit, the PMem array those
/// since its last persisted batch.
#[test]
fn recovery_scans_all_records_for_dram_and_a_tail_for_att_and_pmem() {
    let mut scanned = Vec::new();
    for variant in [Variant::Dram, Variant::Att(64), Variant::Pmem] {
        let fs = FaultFs::new();
        let region = Arc::new(Region::sim(pmem_len()));
        let mut store = BlockStore::create(&fs, path()).unwrap();
        let mut t = create(variant, &region);
        for i in 0..1000 {
            let addr = store.append(NodeId::leaf(i), &sample_node(i, 300, false)).unwrap();
            t.set(&mut store, NodeId::leaf(i), addr).unwrap();
            store.sync().unwrap();
        }
        drop(t);
        let (t, report) = recover(variant, &mut store, &region);
        assert!(t.get(&store, NodeId::leaf(999)).unwrap().is_some(), "{variant:?}");
        if let Variant::Pmem = variant {
            assert!(
                report.translations_restored <= PMEM_BATCH_SLOTS as u64,
                "at most 32 to restore: {report:?}"
            );
        }
        scanned.push(report.records_scanned);
    }
    assert_eq!(scanned[0], 1000, "DRAM scans every record");
    assert!(scanned[1] <= 64, "the ATT replays since its last commit: {scanned:?}");
    assert!(scanned[2] <= 2 * PMEM_BATCH_SLOTS as u64, "PMem replays since its last batch: {scanned:?}");
}
