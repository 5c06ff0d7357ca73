//! Seeded randomized test of Halloc against a reference model (lsm-pmem.txt
//! section 3.4.1): random get / commit / release / batch zone release
//! sequences on the crash simulator, a crash at a random flush or fence with a
//! random image the crash model allows, recovery, and a comparison with what
//! the model says each object may be; then the run continues on the recovered
//! allocator. Every failure message names the seed.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Halloc, HallocConfig, ObjectId, PoolId, PoolSpec, ZoneId};
use crate::offset::RegionOffset;
use crate::region::Region;

/// A pool-independent handle: object pools by id, the zone pool as `None`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Obj {
    pool: Option<u32>,
    index: u32,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Model {
    Free,
    Taken,
    Committed,
}

/// One persistent operation: the objects it moves and the state it moves them
/// to, with the simulator's op counter before and after it.
struct Event {
    objects: Vec<Obj>,
    to: Model,
    ops_before: u64,
    ops_after: u64,
}

fn config() -> HallocConfig {
    HallocConfig::new(
        vec![
            PoolSpec { object_size_bytes: 64, object_count: 5 },
            PoolSpec { object_size_bytes: 128, object_count: 3 },
        ],
        256,
        4,
    )
}

fn all_objects(h: &Halloc) -> Vec<Obj> {
    let mut v = Vec::new();
    for p in 0..h.pool_count() as u32 {
        v.extend((0..h.object_count(PoolId(p)) as u32).map(|i| Obj { pool: Some(p), index: i }));
    }
    v.extend((0..h.zone_count() as u32).map(|i| Obj { pool: None, index: i }));
    v
}

fn committed(h: &Halloc, o: Obj) -> bool {
    match o.pool {
        Some(p) => h.check(ObjectId::new(PoolId(p), o.index)),
        None => h.check_zone(ZoneId(o.index)),
    }
}

fn free_list(h: &Halloc) -> Vec<Obj> {
    let mut v = Vec::new();
    for p in 0..h.pool_count() as u32 {
        v.extend(
            h.free_list(PoolId(p)).unwrap().into_iter().map(|id| Obj { pool: Some(p), index: id.index() }),
        );
    }
    v.extend(h.free_zone_list().unwrap().into_iter().map(|z| Obj { pool: None, index: z.0 }));
    v
}

/// Runs `steps` random operations, recording events; returns the events.
fn random_ops(
    seed: u64,
    rng: &mut ChaCha8Rng,
    h: &Halloc,
    model: &mut BTreeMap<Obj, Model>,
    steps: usize,
) -> Vec<Event> {
    let sim = h.region().as_sim().expect("sim");
    let mut events = Vec::new();
    for step in 0..steps {
        let in_state = |m: &BTreeMap<Obj, Model>, s: Model| -> Vec<Obj> {
            m.iter().filter(|(_, &v)| v == s).map(|(&o, _)| o).collect()
        };
        let ops_before = sim.ops();
        let (objects, to) = match rng.gen_range(0..4) {
            0 => {
                let pool = rng.gen_range(0..=h.pool_count() as u32);
                let got = if pool == h.pool_count() as u32 {
                    h.get_zone().ok().map(|z| Obj { pool: None, index: z.0 })
                } else {
                    h.get(PoolId(pool)).ok().map(|id| Obj { pool: Some(pool), index: id.index() })
                };
                let want_free = model
                    .iter()
                    .any(|(o, &m)| m == Model::Free && o.pool == got.map_or(Some(u32::MAX), |g| g.pool));
                match got {
                    Some(o) => {
                        assert_eq!(
                            model[&o],
                            Model::Free,
                            "seed {seed} step {step}: get returned a non-free {o:?}"
                        );
                        (vec![o], Model::Taken)
                    }
                    None => {
                        assert!(!want_free, "seed {seed} step {step}: get failed with free objects");
                        continue;
                    }
                }
            }
            1 => {
                let taken = in_state(model, Model::Taken);
                if taken.is_empty() {
                    continue;
                }
                let o = taken[rng.gen_range(0..taken.len())];
                match o.pool {
                    Some(p) => h.commit(ObjectId::new(PoolId(p), o.index)),
                    None => h.commit_zone(ZoneId(o.index)),
                }
                (vec![o], Model::Committed)
            }
            2 => {
                let mut busy = in_state(model, Model::Taken);
                busy.extend(in_state(model, Model::Committed));
                busy.retain(|o| o.pool.is_some());
                if busy.is_empty() {
                    continue;
                }
                let o = busy[rng.gen_range(0..busy.len())];
                h.release(ObjectId::new(PoolId(o.pool.unwrap()), o.index));
                (vec![o], Model::Free)
            }
            _ => {
                let mut zones = in_state(model, Model::Taken);
                zones.extend(in_state(model, Model::Committed));
                zones.retain(|o| o.pool.is_none() && rng.gen_bool(0.7));
                if zones.is_empty() {
                    continue;
                }
                h.release_zones(&zones.iter().map(|o| ZoneId(o.index)).collect::<Vec<_>>());
                (zones, Model::Free)
            }
        };
        for &o in &objects {
            model.insert(o, to);
        }
        events.push(Event { objects, to, ops_before, ops_after: sim.ops() });
    }
    events
}

/// What each object may be after a crash at simulator op `crash_op`: the
/// state after its last completed event, or after an event in flight at the
/// crash (a taken object recovers as free). Also returns the bounds on the
/// leaks recovery must reclaim: objects surely taken at the crash, and those
/// plus every object of the event in flight.
fn allowed(
    before: &BTreeMap<Obj, Model>,
    events: &[Event],
    crash_op: u64,
) -> (BTreeMap<Obj, Vec<Model>>, u64, u64) {
    let persisted = |m: Model| if m == Model::Committed { Model::Committed } else { Model::Free };
    let mut must: BTreeMap<Obj, Model> = before.clone();
    let mut may: BTreeMap<Obj, Vec<Model>> = BTreeMap::new();
    for e in events {
        if e.ops_after <= crash_op {
            for &o in &e.objects {
                must.insert(o, e.to);
            }
        } else if e.ops_before < crash_op {
            for &o in &e.objects {
                may.entry(o).or_default().push(persisted(e.to));
            }
        }
    }
    let surely_taken = must.iter().filter(|(o, &m)| m == Model::Taken && !may.contains_key(o)).count() as u64;
    let maybe_leaked = surely_taken + may.len() as u64;
    let allowed = must
        .into_iter()
        .map(|(o, m)| {
            let mut v = vec![persisted(m)];
            v.extend(may.remove(&o).unwrap_or_default());
            (o, v)
        })
        .collect();
    (allowed, surely_taken, maybe_leaked)
}

/// Runs one seeded case; returns how many objects it checked against the model.
fn run_seed(seed: u64) -> usize {
    let mut checked = 0;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let len = Halloc::required_len_bytes(&config());
    let region = Arc::new(Region::sim(len));
    let mut h = Halloc::format(&region, RegionOffset(0), len, &config()).unwrap();
    let mut model: BTreeMap<Obj, Model> = all_objects(&h).into_iter().map(|o| (o, Model::Free)).collect();
    for round in 0..4 {
        let sim = h.region().as_sim().unwrap();
        sim.set_capture(true);
        let before = model.clone();
        let steps = rng.gen_range(5..40);
        let events = random_ops(seed, &mut rng, &h, &mut model, steps);
        let points = sim.take_crash_points();
        sim.set_capture(false);
        let point = &points[rng.gen_range(0..points.len())];
        let image = rng.gen_range(0..point.planned_images(4096, 64));
        let (allowed, surely_taken, maybe_leaked) = allowed(&before, &events, point.op);
        drop(h);
        let region = Arc::new(Region::sim_from_image(point.image(4096, seed, image)));
        let ctx = format!("seed {seed} round {round} point {} image {image}", point.index);
        let (reopened, report) =
            Halloc::open(&region, RegionOffset(0)).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        h = reopened;
        let free = free_list(&h);
        let mut sorted = free.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), free.len(), "{ctx}: an object is twice on the freelist");
        for (&o, states) in &allowed {
            let actual = if committed(&h, o) { Model::Committed } else { Model::Free };
            assert!(states.contains(&actual), "{ctx}: {o:?} is {actual:?}, model allows {states:?}");
            assert_eq!(
                free.contains(&o),
                actual == Model::Free,
                "{ctx}: {o:?} is {actual:?} but freelist membership disagrees"
            );
            model.insert(o, actual);
        }
        assert_eq!(report.objects_scanned, allowed.len() as u64, "{ctx}");
        checked += allowed.len();
        assert!(
            (surely_taken..=maybe_leaked).contains(&report.leaks_reclaimed),
            "{ctx}: {} leaks reclaimed, model expects {surely_taken}..={maybe_leaked}",
            report.leaks_reclaimed
        );
    }
    checked
}

#[test]
fn random_operations_with_crashes_match_the_model() {
    let checked: usize = (0..150).map(run_seed).sum();
    assert!(checked >= 150 * 4, "every seed checks every object after each of its 4 crashes: {checked}");
}
