//! Fig. 5 (chronicledb-pmem.txt section 5.2, "Right flank"): the insertion
//! rate of Stock with the TAB+-tree's right flank on PMem, per flush batch
//! size `k`, relative to the flank in DRAM; the events a crash can lose and
//! the recovery time of both flanks.
//!
//! Every round inserts the whole stream once per variant, in the same order
//! (dram-flank, pmem-flank-k1, k2, ...), each into a fresh tree; the ratio is
//! taken within the round and the median over rounds reported. After each
//! insertion the tree is dropped without a sync (a crash: the PMem mapping
//! survives, the DRAM flank is gone) and recovered, timed.
//!
//! Losses: `events_at_risk_max` is the most events that were not yet durable
//! after any append (`len - durable_through`: `k - 1` on PMem, up to a leaf
//! in DRAM); `events_lost_on_recovery` is what recovery really missed (the
//! PMem flank's persisted count word covers only persisted batches, so even
//! though the mapping keeps every store, recovery drops the partial batch).

use std::time::Instant;

use anyhow::{bail, Context};
use strata_events::tree::{AggregatePlacement, AppendOutcome, FlankPlacement, IndexPlacement, TabTree};

use super::generator::{in_order, EventBatch, Stream};
use super::media::EventsMedia;
use super::trees::{pmem_bytes, tree_config, tree_media};
use super::{EventsBudget, Figure};
use crate::measure::Samples;

/// Flush batch sizes `k` of Fig. 5.
pub const FLUSH_BATCHES: [u32; 8] = [1, 2, 5, 10, 25, 50, 100, 250];
/// Name of the DRAM-flank variant (the ratios' denominator).
pub const DRAM_FLANK: &str = "dram-flank";

const COLUMNS: [&str; 10] = [
    "throughput_events_per_s",
    "ratio_to_dram_flank",
    "fences_per_event",
    "events_at_risk_max",
    "events_at_risk_at_crash",
    "events_lost_on_recovery",
    "recovery_ms",
    "flank_recovery_ms",
    "recovery_nodes_read",
    "tree_height",
];

fn variants() -> Vec<(String, FlankPlacement)> {
    let mut v = vec![(DRAM_FLANK.to_string(), FlankPlacement::Dram)];
    for k in FLUSH_BATCHES {
        v.push((format!("pmem-flank-k{k}"), FlankPlacement::Pmem { batch_events: k }));
    }
    v
}

/// PMem bytes the figure needs.
pub(super) fn pmem_bytes_needed(budget: &EventsBudget) -> anyhow::Result<u64> {
    let c = tree_config(
        Stream::Stock,
        FlankPlacement::Pmem { batch_events: 1 },
        AggregatePlacement::Inline,
        IndexPlacement::Ssd,
        budget.stock_events,
    )?;
    pmem_bytes(&c)
}

/// One insertion, crash and recovery.
fn run_once(
    media: &mut EventsMedia,
    leaves_on_tmpfs: bool,
    name: &str,
    flank: FlankPlacement,
    events: &EventBatch,
) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let n = events.len() as u64;
    let config = tree_config(Stream::Stock, flank, AggregatePlacement::Inline, IndexPlacement::Ssd, n)?;
    let dir = media.fresh_dir(leaves_on_tmpfs, name)?;
    let mut tree = TabTree::create(config.clone(), tree_media(&media.fs, dir.clone(), &media.region))
        .with_context(|| format!("creating the {name} tree"))?;
    let mut at_risk_max = 0u64;
    let started = Instant::now();
    for e in events.iter() {
        match tree.append(e)? {
            AppendOutcome::Appended { seq, durable_through } => {
                at_risk_max = at_risk_max.max(seq + 1 - durable_through);
            }
            AppendOutcome::Late { ts, .. } => bail!("event {ts} arrived late in an in-order stream"),
        }
    }
    let elapsed = started.elapsed();
    let at_risk_at_crash = tree.len() - tree.durable_through();
    let height = tree.height();
    let fences = tree.stats().flank_pmem.fences;
    drop(tree);
    let started = Instant::now();
    let (recovered, report) = TabTree::recover(config, tree_media(&media.fs, dir, &media.region))
        .with_context(|| format!("recovering the {name} tree"))?;
    let recovery = started.elapsed();
    drop(recovered);
    Ok(vec![
        ("throughput_events_per_s", n as f64 / elapsed.as_secs_f64()),
        ("fences_per_event", fences as f64 / n as f64),
        ("events_at_risk_max", at_risk_max as f64),
        ("events_at_risk_at_crash", at_risk_at_crash as f64),
        ("events_lost_on_recovery", n.saturating_sub(report.events_recovered) as f64),
        ("recovery_ms", recovery.as_secs_f64() * 1e3),
        ("flank_recovery_ms", report.flank_duration.as_secs_f64() * 1e3),
        ("recovery_nodes_read", report.nodes_read as f64),
        ("tree_height", height as f64),
    ])
}

/// Where the leaves of a Fig. 5 run go: the SSD (every completed leaf
/// fdatasynced to ext4, as the tree does) and tmpfs (the same code, no device
/// write: the flank's own cost, as the paper's figure shows it).
pub const LEAF_MEDIA: [(&str, bool); 2] = [("ext4", false), ("tmpfs", true)];

/// Runs Fig. 5.
pub(super) fn run(media: &mut EventsMedia, budget: &EventsBudget, print: bool) -> anyhow::Result<Figure> {
    let events = in_order(Stream::Stock, budget.stock_events, budget.seed)?;
    let mut vs: Vec<(String, bool, FlankPlacement, Samples)> = Vec::new();
    for (label, tmpfs) in LEAF_MEDIA {
        for (name, flank) in variants() {
            vs.push((format!("{label}/{name}"), tmpfs, flank, Samples::default()));
        }
    }
    for round in 0..budget.rounds {
        if print {
            eprintln!("events bench: fig. 5 round {}/{}", round + 1, budget.rounds);
        }
        let mut dram_rate = f64::NAN;
        for (name, tmpfs, flank, samples) in &mut vs {
            let metrics = run_once(media, *tmpfs, name.rsplit('/').next().unwrap_or(name), *flank, &events)?;
            let rate = metrics[0].1;
            if *flank == FlankPlacement::Dram {
                dram_rate = rate;
            }
            for (m, v) in metrics {
                samples.push(m, v);
            }
            samples.push("ratio_to_dram_flank", rate / dram_rate);
        }
    }
    let rows = vs.iter().map(|(name, _, _, s)| s.median_row(name)).collect();
    Ok(Figure {
        key: "fig5",
        title: format!(
            "Fig. 5: insertion of {} Stock events, right flank on PMem per flush batch k vs in DRAM; leaves on ext4 and on tmpfs",
            budget.stock_events
        ),
        rows,
        columns: COLUMNS.to_vec(),
        notes: vec![
            "ratio to dram flank: events/s over the dram-flank events/s of the same round and leaf medium, median over rounds (paper: k=1 ~0.5, k=25 0.95)".into(),
            "ext4/: every completed leaf is appended and fdatasynced (~0.2-1.5 ms each here), which dominates and makes ratios disk noise; tmpfs/: the same tree with the block file on tmpfs, isolating the flank's cost".into(),
            "events at risk: appended but not yet durable (len - durable_through); max over the run (paper: < k on PMem vs 291 in DRAM)".into(),
            "events lost on recovery: measured after dropping the tree unsynced (PMem: the partial batch, < k; DRAM: the flank leaf)".into(),
            "recovery: whole TabTree::recover (block store, ATT replay, flank); flank recovery: the flank alone (paper: 40 ms DRAM vs < 1 ms PMem, height 3)".into(),
        ],
        config: serde_json::json!({
            "stream": "stock",
            "events": budget.stock_events,
            "flush_batches": FLUSH_BATCHES,
            "leaf_media": LEAF_MEDIA.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
            "translation": "flash-att",
            "aggregates": "inline",
            "index": "ssd",
        }),
    })
}
