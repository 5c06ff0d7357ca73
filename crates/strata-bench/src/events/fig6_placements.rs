//! Fig. 6 (chronicledb-pmem.txt section 5.2, "Aggregates/Index nodes"):
//! insertion time of Sine and the average time of three query kinds per
//! placement, relative to the original ChronicleDB (aggregates inline in
//! the index entries, index nodes on SSD):
//! - `baseline`: aggregates inline, index nodes on SSD;
//! - `aggs-pmem-dense`, `aggs-pmem-aligned`: aggregates in the flat PMem
//!   array (packed, or 64-byte aligned slots), index nodes on SSD;
//! - `index-pmem`: index nodes (with their aggregates) in the PMem array.
//!
//! Queries (seeded, the same for every placement of a round):
//! - time-travel point query `point(t)` at a uniform random `t`;
//! - temporal aggregation over `[t, t + len]`, `len` cycling through
//!   10^2 .. 10^7 (those not above the stream's length), `t` uniform;
//! - filter on one Sine attribute for a value band matching 0.1 % of the
//!   events over the whole time range (band drawn on the rising part of the
//!   sine; the measured selectivity is reported).
//!
//! Each round builds every placement's tree afresh (timed insertion), then
//! runs its queries; ratios are per round, medians over rounds. The block
//! file is on ext4 but in the OS page cache, so an "SSD read" is a page-cache
//! read plus LZ4 decompression; the tree's own node cache holds 32 nodes.

use std::time::Instant;

use anyhow::Context;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_events::pmem_arrays::SlotLayout;
use strata_events::tree::{AggregatePlacement, FlankPlacement, IndexPlacement, TabTree};

use super::generator::{in_order, sine_value, Stream, SINE_PERIOD_EVENTS};
use super::media::EventsMedia;
use super::trees::{pmem_bytes, tree_config, tree_media};
use super::{EventsBudget, Figure};
use crate::measure::Samples;

/// Name of the baseline placement.
pub const BASELINE: &str = "baseline";
/// Ranges of the temporal aggregation queries, in events.
pub const AGGREGATE_RANGES: [u64; 6] = [100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];
/// Selectivity of the filter queries.
pub const FILTER_SELECTIVITY: f64 = 0.001;

const COLUMNS: [&str; 11] = [
    "insert_s",
    "insert_ratio_to_baseline",
    "point_query_us",
    "point_ratio_to_baseline",
    "aggregate_query_us",
    "aggregate_ratio_to_baseline",
    "filter_query_us",
    "filter_ratio_to_baseline",
    "filter_selectivity_pct",
    "index_nodes_read_per_point_query",
    "tree_height",
];

/// The placements, baseline first.
pub(super) fn placements() -> Vec<(&'static str, AggregatePlacement, IndexPlacement)> {
    vec![
        (BASELINE, AggregatePlacement::Inline, IndexPlacement::Ssd),
        ("aggs-pmem-dense", AggregatePlacement::PmemArray(SlotLayout::Dense), IndexPlacement::Ssd),
        ("aggs-pmem-aligned", AggregatePlacement::PmemArray(SlotLayout::Aligned), IndexPlacement::Ssd),
        ("index-pmem", AggregatePlacement::Inline, IndexPlacement::Pmem),
    ]
}

/// PMem bytes the figure needs (the largest placement).
pub(super) fn pmem_bytes_needed(budget: &EventsBudget) -> anyhow::Result<u64> {
    let mut most = 0;
    for (_, aggs, index) in placements() {
        let c = tree_config(Stream::Sine, FlankPlacement::Dram, aggs, index, budget.sine_events)?;
        most = most.max(pmem_bytes(&c)?);
    }
    Ok(most)
}

/// The queries of one round.
struct Queries {
    points: Vec<i64>,
    aggregates: Vec<(i64, i64)>,
    /// (attribute, lo, hi)
    filters: Vec<(usize, f64, f64)>,
}

fn queries(n: u64, budget: &EventsBudget, seed: u64) -> Queries {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let points = (0..budget.point_queries).map(|_| rng.gen_range(0..n) as i64).collect();
    let ranges: Vec<u64> = AGGREGATE_RANGES.iter().copied().filter(|r| *r < n).collect();
    let aggregates = (0..budget.aggregate_queries as usize)
        .map(|q| {
            let len = ranges.get(q % ranges.len().max(1)).copied().unwrap_or(n - 1);
            let lo = rng.gen_range(0..n - len);
            (lo as i64, (lo + len) as i64)
        })
        .collect();
    // A band of sine values matched by FILTER_SELECTIVITY of the events: on
    // each rising crossing of the band the matches are consecutive events.
    let crossings = (2.0 * n as f64 / SINE_PERIOD_EVENTS as f64).max(1.0);
    let width = ((FILTER_SELECTIVITY * n as f64 / crossings).round() as u64).max(1);
    let rising = n.min(SINE_PERIOD_EVENTS / 4).saturating_sub(width).max(1);
    let filters = (0..budget.filter_queries as usize)
        .map(|q| {
            let i0 = rng.gen_range(0..rising);
            (q % 6, sine_value(i0), sine_value(i0 + width - 1))
        })
        .collect();
    Queries { points, aggregates, filters }
}

fn mean_us(started: Instant, count: usize) -> f64 {
    started.elapsed().as_secs_f64() * 1e6 / count.max(1) as f64
}

fn run_once(
    media: &mut EventsMedia,
    leaves_on_tmpfs: bool,
    name: &str,
    aggs: AggregatePlacement,
    index: IndexPlacement,
    events: &super::generator::EventBatch,
    q: &Queries,
) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let n = events.len() as u64;
    let config = tree_config(Stream::Sine, FlankPlacement::Dram, aggs, index, n)?;
    let dir = media.fresh_dir(leaves_on_tmpfs, name)?;
    let mut tree = TabTree::create(config, tree_media(&media.fs, dir, &media.region))
        .with_context(|| format!("creating the {name} tree"))?;
    let started = Instant::now();
    for e in events.iter() {
        tree.append(e)?;
    }
    let insert_s = started.elapsed().as_secs_f64();

    let mut found = 0usize;
    let mut index_reads = 0u64;
    let started = Instant::now();
    for &t in &q.points {
        let mut it = tree.range(t, t);
        for e in it.by_ref() {
            e?;
            found += 1;
        }
        index_reads += it.stats().index_nodes_read;
    }
    let point_us = mean_us(started, q.points.len());
    anyhow::ensure!(found == q.points.len(), "{name}: {found} of {} point queries hit", q.points.len());

    let mut counted = 0u64;
    let started = Instant::now();
    for &(lo, hi) in &q.aggregates {
        counted += tree.aggregate(lo, hi)?.count;
    }
    let aggregate_us = mean_us(started, q.aggregates.len());
    let expected: u64 = q.aggregates.iter().map(|(lo, hi)| (hi - lo + 1) as u64).sum();
    anyhow::ensure!(counted == expected, "{name}: aggregation counted {counted}, expected {expected}");

    let mut matched = 0usize;
    let started = Instant::now();
    for &(attr, lo, hi) in &q.filters {
        matched += tree.filter(attr, lo, hi, 0, n as i64 - 1)?.len();
    }
    let filter_us = mean_us(started, q.filters.len());
    let selectivity = matched as f64 / (q.filters.len().max(1) as f64 * n as f64);
    Ok(vec![
        ("insert_s", insert_s),
        ("point_query_us", point_us),
        ("aggregate_query_us", aggregate_us),
        ("filter_query_us", filter_us),
        ("filter_selectivity_pct", selectivity * 100.0),
        ("index_nodes_read_per_point_query", index_reads as f64 / q.points.len().max(1) as f64),
        ("tree_height", tree.height() as f64),
    ])
}

/// Runs Fig. 6.
pub(super) fn run(media: &mut EventsMedia, budget: &EventsBudget, print: bool) -> anyhow::Result<Figure> {
    let n = budget.sine_events;
    let events = in_order(Stream::Sine, n, budget.seed)?;
    let mut vs: Vec<(&str, AggregatePlacement, IndexPlacement, Samples)> =
        placements().into_iter().map(|(name, a, i)| (name, a, i, Samples::default())).collect();
    let ratio_of = [
        ("insert_s", "insert_ratio_to_baseline"),
        ("point_query_us", "point_ratio_to_baseline"),
        ("aggregate_query_us", "aggregate_ratio_to_baseline"),
        ("filter_query_us", "filter_ratio_to_baseline"),
    ];
    for round in 0..budget.rounds {
        if print {
            eprintln!("events bench: fig. 6 round {}/{}", round + 1, budget.rounds);
        }
        let q = queries(n, budget, budget.seed ^ ((round as u64 + 1) * 0x5157));
        let mut base: Vec<f64> = Vec::new();
        for (name, aggs, index, samples) in &mut vs {
            let metrics = run_once(media, budget.fig6_leaves_on_tmpfs, name, *aggs, *index, &events, &q)?;
            let value = |m: &str| metrics.iter().find(|(k, _)| *k == m).map_or(f64::NAN, |(_, v)| *v);
            if *name == BASELINE {
                base = ratio_of.iter().map(|(m, _)| value(m)).collect();
            }
            for ((m, r), b) in ratio_of.iter().zip(&base) {
                samples.push(r, value(m) / b);
            }
            for (m, v) in metrics {
                samples.push(m, v);
            }
        }
    }
    Ok(Figure {
        key: "fig6",
        title: format!("Fig. 6: Sine ({n} events), insert and query time per placement vs the baseline"),
        rows: vs.iter().map(|(name, _, _, s)| s.median_row(name)).collect(),
        columns: COLUMNS.to_vec(),
        notes: vec![
            "ratio to baseline: time over the baseline's time in the same round (< 1 = faster), median over rounds".into(),
            "paper: insert barely affected; aggs on PMem: point -15 %, aggregation +10-25 %, filter -15 %; index nodes on PMem: -35-40 % for every query".into(),
            format!(
                "queries per placement and round: {} point, {} aggregation (ranges {:?} events, those < the stream), {} filter (0.1 % of events)",
                budget.point_queries, budget.aggregate_queries, AGGREGATE_RANGES, budget.filter_queries
            ),
            if budget.fig6_leaves_on_tmpfs {
                "flank in DRAM, ATT translation; block file on tmpfs (--quick: no per-leaf fdatasync in the insert time), so node reads are memory reads + LZ4".into()
            } else {
                "flank in DRAM, ATT translation; block file on the disk, in the page cache, so SSD reads are page-cache reads + LZ4".into()
            },
        ],
        config: serde_json::json!({
            "stream": "sine",
            "events": n,
            "point_queries": budget.point_queries,
            "aggregate_queries": budget.aggregate_queries,
            "aggregate_ranges_events": AGGREGATE_RANGES,
            "filter_queries": budget.filter_queries,
            "filter_selectivity": FILTER_SELECTIVITY,
            "translation": "flash-att",
            "flank": "dram",
        }),
    })
}
