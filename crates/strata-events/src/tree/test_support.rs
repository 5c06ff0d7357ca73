//! Shared by the tree's tests: every placement combination, media on an
//! in-memory fault-injecting file system and a PMem region (simulated when a
//! test crashes it), deterministic events, and the naive model (a `Vec` of
//! the events in order) the queries are compared with.

use std::path::PathBuf;
use std::sync::Arc;

use strata_media::fs::Tear;
use strata_media::FaultFs;
use strata_pmem::Region;

use crate::aggregate::Aggregates;
use crate::event::{self, timestamp_of, Event, Value};
use crate::pmem_arrays::SlotLayout;
use crate::schema::StreamSchema;
use crate::translation::TranslationKind;

use super::{AggregatePlacement, FlankPlacement, IndexPlacement, TabTree, TreeConfig, TreeMedia};
use crate::sample_events::{crash_event, crash_schema};

/// One placement of each switch (Fig. 4).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    pub flank: FlankPlacement,
    pub aggregates: AggregatePlacement,
    pub index: IndexPlacement,
    pub translation: TranslationKind,
}

/// Every combination: 4 flanks x 3 aggregate placements x 2 index
/// placements x 3 translations = 72.
pub(crate) fn all_placements() -> Vec<Placement> {
    let flanks = [
        FlankPlacement::Dram,
        FlankPlacement::Pmem { batch_events: 1 },
        FlankPlacement::Pmem { batch_events: 3 },
        FlankPlacement::Pmem { batch_events: 25 },
    ];
    let aggs = [
        AggregatePlacement::Inline,
        AggregatePlacement::PmemArray(SlotLayout::Dense),
        AggregatePlacement::PmemArray(SlotLayout::Aligned),
    ];
    let indexes = [IndexPlacement::Ssd, IndexPlacement::Pmem];
    let translations = [TranslationKind::Dram, TranslationKind::Att, TranslationKind::PmemArray];
    let mut out = Vec::new();
    for flank in flanks {
        for aggregates in aggs {
            for index in indexes {
                for translation in translations {
                    out.push(Placement { flank, aggregates, index, translation });
                }
            }
        }
    }
    out
}

/// A configuration of `schema` with `placement`, room for `events` events
/// one per leaf, small ATT nodes (so the ATT has several levels).
pub(crate) fn config(
    schema: StreamSchema,
    placement: Placement,
    spare_permille: u32,
    events: u64,
) -> TreeConfig {
    let mut c = TreeConfig::new(schema)
        .with_spare_permille(spare_permille)
        .with_flank(placement.flank)
        .with_aggregates(placement.aggregates)
        .with_index(placement.index)
        .with_translation(placement.translation)
        .with_capacity(events + 16, events + 16);
    c.att_fanout = 4;
    c.max_levels = 24;
    c.node_cache_nodes = 4;
    c
}

/// The crash workload's wide schema in a configuration (leaves of 9 events,
/// inline index nodes of 8 entries before the spare room).
pub(crate) fn wide_config(placement: Placement, spare_permille: u32, events: u64) -> TreeConfig {
    config(crash_schema(), placement, spare_permille, events)
}

/// A file system and a PMem region for one tree.
pub(crate) struct TestEnv {
    pub fs: FaultFs,
    pub region: Arc<Region>,
}

impl TestEnv {
    /// Media for `config`; `sim` makes the region a crash simulator.
    pub(crate) fn new(config: &TreeConfig, sim: bool) -> TestEnv {
        let len = config.pmem_plan(0).unwrap().end.max(4096);
        let region = if sim { Region::sim(len) } else { Region::anonymous(len).unwrap() };
        TestEnv { fs: FaultFs::new(), region: Arc::new(region) }
    }

    pub(crate) fn media(&self) -> TreeMedia<'_> {
        TreeMedia {
            fs: &self.fs,
            dir: PathBuf::from("tree"),
            region: Some(self.region.clone()),
            pmem_base: 0,
        }
    }

    /// What a crash leaves: synced files, the simulator's persistent image.
    pub(crate) fn crash(&self) -> TestEnv {
        let image = self.region.as_sim().expect("a simulated region").persistent_image();
        TestEnv { fs: self.fs.crash(Tear::None), region: Arc::new(Region::sim_from_image(image)) }
    }

    pub(crate) fn create(&self, config: &TreeConfig) -> TabTree {
        TabTree::create(config.clone(), self.media()).unwrap_or_else(|e| panic!("create: {e}"))
    }
}

/// The events of a workload: timestamps from `deltas` (0 = equal to the
/// previous), content from the crash workload's generator.
pub(crate) fn events_from_deltas(schema: &StreamSchema, seed: u64, deltas: &[u8]) -> Vec<Vec<u8>> {
    let mut ts = 0i64;
    deltas
        .iter()
        .enumerate()
        .map(|(seq, d)| {
            ts += i64::from(*d);
            let mut e = crash_event(schema, seed, seq as u64);
            e[..8].copy_from_slice(&ts.to_le_bytes());
            e
        })
        .collect()
}

/// Appends every event, syncing every `sync_every`-th; asserts none is late.
pub(crate) fn append_all(tree: &mut TabTree, events: &[Vec<u8>], sync_every: usize) {
    for (i, e) in events.iter().enumerate() {
        let out = tree.append(e).unwrap_or_else(|err| panic!("append {i}: {err}"));
        assert!(matches!(out, super::AppendOutcome::Appended { seq, .. } if seq == i as u64), "{out:?}");
        if sync_every > 0 && i % sync_every == sync_every - 1 {
            tree.sync().unwrap();
        }
    }
}

/// Sine-stream events (section 5.1): six values `sin((i mod period) / period * 2 pi)`,
/// timestamp `i`; small periods give selective filters in small trees.
pub(crate) fn sine_event(schema: &StreamSchema, i: u64, period: u64) -> Vec<u8> {
    let v = ((i % period) as f64 / period as f64 * std::f64::consts::TAU).sin();
    let values =
        (0..6).map(|a| Value::F64(if a == 0 { v } else { (v * 1000.0).round() + a as f64 })).collect();
    event::encode(schema, &Event::new(i as i64, values)).unwrap()
}

/// The naive model's answers.
pub(crate) struct Model<'a> {
    pub events: &'a [Vec<u8>],
}

impl Model<'_> {
    pub(crate) fn range(&self, lo: i64, hi: i64) -> Vec<Vec<u8>> {
        self.events.iter().filter(|e| (lo..=hi).contains(&timestamp_of(e))).cloned().collect()
    }

    pub(crate) fn aggregate(&self, config: &TreeConfig, lo: i64, hi: i64) -> Aggregates {
        let inside = self.range(lo, hi);
        Aggregates::of_events(&config.spec, inside.iter().map(Vec::as_slice)).unwrap()
    }

    pub(crate) fn filter(
        &self,
        config: &TreeConfig,
        attr: usize,
        lo: f64,
        hi: f64,
        t_lo: i64,
        t_hi: i64,
    ) -> Vec<Vec<u8>> {
        self.range(t_lo, t_hi)
            .into_iter()
            .filter(|e| event::attr_as_f64(&config.schema, e, attr).is_some_and(|v| lo <= v && v <= hi))
            .collect()
    }
}

/// Checks every query of `tree` against the model on a few ranges derived
/// from `seed`; returns how many checks ran.
pub(crate) fn check_queries(tree: &TabTree, model: &Model<'_>, seed: u64) -> usize {
    let config = tree.config();
    let replay: Vec<Vec<u8>> = tree.replay().collect::<Result<_, _>>().unwrap();
    assert_eq!(replay.len(), model.events.len(), "replay length");
    assert!(replay == model.events, "replay differs from the model");
    let (first, last) = match (model.events.first(), model.events.last()) {
        (Some(f), Some(l)) => (timestamp_of(f), timestamp_of(l)),
        _ => (0, 0),
    };
    let span = (last - first).max(1);
    let mut x = seed | 1;
    let mut next = |m: i64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m.max(1) as u64) as i64
    };
    let mut checks = 0;
    let mut ranges =
        vec![(i64::MIN, i64::MAX), (first, last), (last, last), (first - 5, first - 1), (last + 1, last + 9)];
    for _ in 0..6 {
        let a = first - 2 + next(span + 4);
        let b = a + next(span / 2 + 2);
        ranges.push((a, b));
    }
    for (lo, hi) in ranges {
        let got: Vec<Vec<u8>> = tree.range(lo, hi).collect::<Result<_, _>>().unwrap();
        assert!(
            got == model.range(lo, hi),
            "range [{lo}, {hi}]: {} events, model {}",
            got.len(),
            model.range(lo, hi).len()
        );
        let (aggs, stats) = tree.aggregate_with_stats(lo, hi).unwrap();
        assert_eq!(aggs, model.aggregate(config, lo, hi), "aggregate [{lo}, {hi}]");
        let bound = 2 * tree.height() as u64 + 2;
        assert!(
            stats.nodes_read() <= bound,
            "aggregate [{lo}, {hi}] read {} nodes, bound {bound}",
            stats.nodes_read()
        );
        let attr = 1 + next(5) as usize;
        let (vlo, vhi) = (-500.0 + next(600) as f64, 0.0 + next(500) as f64);
        let got = tree.filter(attr, vlo, vhi, lo, hi).unwrap();
        assert!(
            got == model.filter(config, attr, vlo, vhi, lo, hi),
            "filter attr {attr} in [{vlo}, {vhi}] over [{lo}, {hi}]"
        );
        checks += 3;
    }
    let t = model.events.get(next(model.events.len() as i64) as usize).map_or(0, |e| timestamp_of(e));
    assert!(tree.point(t).unwrap() == model.range(t, t), "point {t}");
    checks + 1
}
