//! Every OOO queue variant against the reference model (the pushed events
//! sorted stably by timestamp) on seeded random workloads: out-of-order and
//! equal timestamps, range and point queries (HIT and MISS), full queues,
//! drains, truncations and (persistent variants) clean reopens.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_media::{FaultFs, FileSystem, RealFs};
use strata_pmem::{Region, RegionOffset};

use super::test_support::{assert_matches_model, make_event, ooo_event, ooo_ts, vecs, Model};
use super::*;

type Reopen<'a> = Box<dyn FnMut(Box<dyn OooQueue>) -> Box<dyn OooQueue> + 'a>;

/// Runs `steps` random operations on `q`, checking it against the model.
fn run_workload(
    mut q: Box<dyn OooQueue>,
    mut reopen: Option<Reopen<'_>>,
    seed: u64,
    steps: u64,
) -> Box<dyn OooQueue> {
    let variant = q.variant();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut model = Model::default();
    let eb = q.event_bytes();
    let capacity_events = q.capacity_bytes() / eb as u64;
    let mut arrival = 0u32;
    let (mut fulls, mut drains, mut reopens) = (0, 0, 0);
    for step in 0..steps {
        let ctx = format!("{variant} seed {seed} step {step}");
        let r = rng.gen_range(0..100);
        if r < 75 {
            // A push, or a burst of equal timestamps.
            let burst = if r < 65 { 1 } else { rng.gen_range(2..5) };
            let ts = ooo_ts(&mut rng, arrival as u64);
            for _ in 0..burst {
                let e = make_event(&mut rng, ts, arrival, eb);
                arrival += 1;
                if model.len() == capacity_events {
                    assert!(q.is_full(), "{ctx}: full at capacity");
                    let err = q.push(&e).unwrap_err();
                    assert!(matches!(err, EventError::Full { .. }), "{ctx}: {err}");
                    assert_eq!(vecs(&q.drain_sorted().unwrap()), model.sorted(), "{ctx}: drain when full");
                    model.clear();
                    fulls += 1;
                }
                assert!(!q.is_full(), "{ctx}: not full below capacity");
                q.push(&e).unwrap_or_else(|err| panic!("{ctx}: push: {err}"));
                model.push(&e);
            }
        } else if r < 88 {
            assert_matches_model(q.as_ref(), &model, &mut rng, &ctx);
            let miss = -1_000_000 - rng.gen_range(0..1000);
            assert!(q.point(miss).unwrap().is_empty(), "{ctx}: MISS point query");
        } else if r < 92 {
            assert_eq!(vecs(&q.drain_sorted().unwrap()), model.sorted(), "{ctx}: drain");
            assert!(q.is_empty(), "{ctx}: empty after drain");
            model.clear();
            drains += 1;
        } else if r < 94 {
            let g = q.generation();
            q.truncate().unwrap();
            assert_eq!(q.generation(), g + 1, "{ctx}: truncate advances the generation");
            assert!(!q.discard_if_merged(g).unwrap(), "{ctx}: an old generation is not discarded");
            model.clear();
        } else if let Some(reopen) = reopen.as_mut() {
            q.sync().unwrap();
            let g = q.generation();
            q = reopen(q);
            assert_eq!(q.generation(), g, "{ctx}: reopen keeps the generation");
            assert_matches_model(q.as_ref(), &model, &mut rng, &format!("{ctx} after reopen"));
            reopens += 1;
        }
    }
    assert_matches_model(q.as_ref(), &model, &mut rng, &format!("{variant} seed {seed} end"));
    assert!(fulls + drains > 0, "{variant} seed {seed}: the workload emptied the queue at least once");
    if reopen.is_some() {
        assert!(reopens > 0, "{variant} seed {seed}: the workload reopened");
    }
    q
}

const SEEDS: [u64; 3] = [1, 0xdead_beef, 20_240_611];

fn pmem_queue(
    region: &Arc<Region>,
    eb: usize,
    capacity_events: u64,
    indexing: OooIndexing,
) -> Box<dyn OooQueue> {
    let area = PmemOooQueue::area_bytes_for(eb, capacity_events * eb as u64);
    Box::new(PmemOooQueue::format(region.clone(), RegionOffset(128), area, eb, indexing).unwrap())
}

fn pmem_reopen(region: &Arc<Region>, indexing: OooIndexing) -> Reopen<'_> {
    Box::new(move |q| {
        drop(q);
        Box::new(PmemOooQueue::open(region.clone(), RegionOffset(128), indexing).unwrap().0)
    })
}

#[test]
fn dram_queue_matches_the_model() {
    for (i, &seed) in SEEDS.iter().enumerate() {
        let eb = [8, 28, 56][i];
        let q = DramOooQueue::new(eb, 150 * eb as u64).unwrap();
        let q = run_workload(Box::new(q), None, seed, 1500);
        assert_eq!(q.variant(), "dram");
    }
}

#[test]
fn pmem_queues_match_the_model_on_the_simulator() {
    for indexing in [OooIndexing::Pure, OooIndexing::Indexed] {
        for (i, &seed) in SEEDS.iter().enumerate() {
            let eb = [8, 28, 61][i];
            let capacity = 120;
            let region = Arc::new(Region::sim(128 + PmemOooQueue::area_bytes_for(eb, capacity * eb as u64)));
            let q = pmem_queue(&region, eb, capacity, indexing);
            assert_eq!(q.capacity_bytes(), capacity * eb as u64, "the area holds exactly the capacity");
            let q = run_workload(q, Some(pmem_reopen(&region, indexing)), seed, 1200);
            assert_eq!(q.variant(), format!("pmem-{}", indexing.name()));
        }
    }
}

#[test]
fn pmem_indexed_queue_matches_the_model_on_an_emulated_mapping() {
    let (eb, capacity) = (28, 200);
    let region =
        Arc::new(Region::anonymous(128 + PmemOooQueue::area_bytes_for(eb, capacity * eb as u64)).unwrap());
    let q = pmem_queue(&region, eb, capacity, OooIndexing::Indexed);
    let q = run_workload(q, Some(pmem_reopen(&region, OooIndexing::Indexed)), 77, 1500);
    assert!(q.len() <= capacity);
}

fn flash_queue(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    eb: usize,
    capacity: u64,
    ix: OooIndexing,
) -> FlashOooQueue {
    let config = FlashOooConfig { event_bytes: eb, capacity_bytes: capacity * eb as u64, indexing: ix };
    FlashOooQueue::open(fs.clone(), dir, config).unwrap().0
}

fn flash_reopen(
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    eb: usize,
    capacity: u64,
    ix: OooIndexing,
) -> Reopen<'static> {
    Box::new(move |q| {
        drop(q);
        Box::new(flash_queue(&fs, &dir, eb, capacity, ix))
    })
}

#[test]
fn flash_queues_match_the_model_on_the_fault_fs() {
    for indexing in [OooIndexing::Pure, OooIndexing::Indexed] {
        for (i, &seed) in SEEDS.iter().enumerate() {
            // Big events, so pages fill: 8, 14 and 291 events per page.
            let (eb, capacity) = [(1000, 150), (560, 150), (28, 700)][i];
            let fs: Arc<dyn FileSystem> = Arc::new(FaultFs::new());
            let dir = PathBuf::from("/data/ooo");
            let q = flash_queue(&fs, &dir, eb, capacity, indexing);
            let reopen = flash_reopen(fs.clone(), dir.clone(), eb, capacity, indexing);
            let q = run_workload(Box::new(q), Some(reopen), seed, 1500);
            assert_eq!(q.variant(), format!("flash-{}", indexing.name()));
            let files = fs.list_dir(&dir).unwrap();
            assert_eq!(files.len(), 1, "one generation file remains: {files:?}");
        }
    }
}

#[test]
fn flash_indexed_queue_matches_the_model_on_a_real_file_system() {
    let tmp = tempfile::tempdir().unwrap();
    let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
    let dir = tmp.path().join("ooo");
    let (eb, capacity) = (700, 100);
    let q = flash_queue(&fs, &dir, eb, capacity, OooIndexing::Indexed);
    let reopen = flash_reopen(fs.clone(), dir.clone(), eb, capacity, OooIndexing::Indexed);
    let q = run_workload(Box::new(q), Some(reopen), 99, 800);
    assert!(q.len() <= capacity);
}

/// All five variants of section 5.4 return identical answers to one workload.
#[test]
fn all_variants_agree_on_one_workload() {
    let (eb, capacity) = (600, 400);
    let region = Arc::new(Region::sim(128 + PmemOooQueue::area_bytes_for(eb, capacity * eb as u64)));
    let region2 = Arc::new(Region::sim(128 + PmemOooQueue::area_bytes_for(eb, capacity * eb as u64)));
    let fs: Arc<dyn FileSystem> = Arc::new(FaultFs::new());
    let mut queues: Vec<Box<dyn OooQueue>> = vec![
        Box::new(DramOooQueue::new(eb, capacity * eb as u64).unwrap()),
        pmem_queue(&region, eb, capacity, OooIndexing::Pure),
        pmem_queue(&region2, eb, capacity, OooIndexing::Indexed),
        Box::new(flash_queue(&fs, Path::new("/a"), eb, capacity, OooIndexing::Pure)),
        Box::new(flash_queue(&fs, Path::new("/b"), eb, capacity, OooIndexing::Indexed)),
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for i in 0..capacity {
        let e = ooo_event(&mut rng, i, eb);
        for q in &mut queues {
            q.push(&e).unwrap();
        }
    }
    let answers: Vec<Vec<Vec<u8>>> = queues.iter().map(|q| vecs(&q.get_range(50, 250).unwrap())).collect();
    assert!(!answers[0].is_empty());
    for (q, a) in queues.iter().zip(&answers) {
        assert_eq!(a, &answers[0], "{} disagrees with dram", q.variant());
        assert!(q.is_full(), "{} is full at capacity", q.variant());
    }
}
