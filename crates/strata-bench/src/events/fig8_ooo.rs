//! Fig. 8 (chronicledb-pmem.txt section 5.4): the out-of-order queue in
//! isolation: time to write a full queue, recovery time, and the average
//! application-time point query that finds an event (HIT) or none (MISS),
//! for the DRAM ordered tree, the PMem queue (pure, indexed) and the flash
//! queue of 8 KiB pages (pure, indexed).
//!
//! Per round and variant: a fresh queue of `queue_bytes` (paper: 100 MiB,
//! about 3.5M Stock events), filled with Stock events whose timestamps are
//! the even numbers `0, 2, ..` in a seeded random order (every PMem push is
//! persisted; every flash page is written with an fsync when full); then
//! `sync` (the flash queue writes its partial page), drop, reopen (timed:
//! pure variants find the end, indexed ones rebuild the DRAM index); then
//! HIT queries at pushed timestamps and MISS queries at odd ones. The DRAM
//! queue has nothing to recover (it is not durable).

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_events::ooo::{DramOooQueue, FlashOooConfig, FlashOooQueue, OooIndexing, OooQueue, PmemOooQueue};
use strata_media::fs::{FileSystem, RealFs};
use strata_pmem::RegionOffset;

use super::generator::{EventMaker, Stream};
use super::media::EventsMedia;
use super::{EventsBudget, Figure};
use crate::measure::Samples;

const COLUMNS: [&str; 7] = [
    "write_ms",
    "write_ns_per_event",
    "recovery_ms",
    "hit_query_us",
    "miss_query_us",
    "events",
    "hit_ratio_to_dram",
];

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Dram,
    Pmem(OooIndexing),
    Flash(OooIndexing),
}

const VARIANTS: [(&str, Kind); 5] = [
    ("dram", Kind::Dram),
    ("pmem-pure", Kind::Pmem(OooIndexing::Pure)),
    ("pmem-indexed", Kind::Pmem(OooIndexing::Indexed)),
    ("flash-pure", Kind::Flash(OooIndexing::Pure)),
    ("flash-indexed", Kind::Flash(OooIndexing::Indexed)),
];

fn event_bytes() -> usize {
    Stream::Stock.schema().event_bytes()
}

/// PMem bytes the figure needs.
pub(super) fn pmem_bytes_needed(budget: &EventsBudget) -> u64 {
    PmemOooQueue::area_bytes_for(event_bytes(), budget.ooo_queue_bytes)
}

/// Opens (`fresh`: formats or creates) the queue of `kind`.
fn open_queue(
    media: &EventsMedia,
    kind: Kind,
    dir: &std::path::Path,
    capacity_bytes: u64,
    fresh: bool,
) -> anyhow::Result<Box<dyn OooQueue>> {
    let eb = event_bytes();
    Ok(match kind {
        Kind::Dram => Box::new(DramOooQueue::new(eb, capacity_bytes)?),
        Kind::Pmem(indexing) => {
            let area = PmemOooQueue::area_bytes_for(eb, capacity_bytes);
            if fresh {
                Box::new(PmemOooQueue::format(media.region.clone(), RegionOffset(0), area, eb, indexing)?)
            } else {
                Box::new(PmemOooQueue::open(media.region.clone(), RegionOffset(0), indexing)?.0)
            }
        }
        Kind::Flash(indexing) => {
            let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
            let config = FlashOooConfig { event_bytes: eb, capacity_bytes, indexing };
            Box::new(FlashOooQueue::open(fs, dir, config)?.0)
        }
    })
}

fn run_once(
    media: &mut EventsMedia,
    name: &str,
    kind: Kind,
    events: &[Vec<u8>],
    hits: &[i64],
    misses: &[i64],
    capacity_bytes: u64,
) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let dir = media.fresh_ssd_dir(name)?.join("queue");
    let mut q = open_queue(media, kind, &dir, capacity_bytes, true)?;
    let started = Instant::now();
    for e in events {
        q.push(e).with_context(|| format!("{name}: push"))?;
    }
    let write = started.elapsed();
    let mut metrics = vec![
        ("write_ms", write.as_secs_f64() * 1e3),
        ("write_ns_per_event", write.as_nanos() as f64 / events.len().max(1) as f64),
        ("events", events.len() as f64),
    ];
    if kind != Kind::Dram {
        q.sync()?;
        drop(q);
        let started = Instant::now();
        q = open_queue(media, kind, &dir, capacity_bytes, false)?;
        metrics.push(("recovery_ms", started.elapsed().as_secs_f64() * 1e3));
        anyhow::ensure!(
            q.len() == events.len() as u64,
            "{name}: recovered {} of {} events",
            q.len(),
            events.len()
        );
    }
    let mut found = 0;
    let started = Instant::now();
    for &t in hits {
        found += q.point(t)?.len();
    }
    metrics.push(("hit_query_us", started.elapsed().as_secs_f64() * 1e6 / hits.len().max(1) as f64));
    anyhow::ensure!(found == hits.len(), "{name}: {found} of {} HIT queries found their event", hits.len());
    let mut found = 0;
    let started = Instant::now();
    for &t in misses {
        found += q.point(t)?.len();
    }
    metrics.push(("miss_query_us", started.elapsed().as_secs_f64() * 1e6 / misses.len().max(1) as f64));
    anyhow::ensure!(found == 0, "{name}: MISS queries found {found} events");
    Ok(metrics)
}

/// Runs Fig. 8.
pub(super) fn run(media: &mut EventsMedia, budget: &EventsBudget, print: bool) -> anyhow::Result<Figure> {
    let capacity = budget.ooo_queue_bytes;
    let n = capacity / event_bytes() as u64;
    let mut rng = ChaCha8Rng::seed_from_u64(budget.seed ^ 0x8008);
    let mut order: Vec<i64> = (0..n as i64).map(|k| 2 * k).collect();
    order.shuffle(&mut rng);
    let mut maker = EventMaker::new(Stream::Stock, budget.seed);
    let batch = maker.batch(order.iter().copied())?;
    let events: Vec<Vec<u8>> = batch.iter().map(<[u8]>::to_vec).collect();
    let mut vs: Vec<(&str, Kind, Samples)> =
        VARIANTS.iter().map(|(n, k)| (*n, *k, Samples::default())).collect();
    for round in 0..budget.rounds {
        if print {
            eprintln!("events bench: fig. 8 round {}/{}", round + 1, budget.rounds);
        }
        let hits: Vec<i64> = (0..budget.ooo_queries).map(|_| 2 * rng.gen_range(0..n as i64)).collect();
        let misses: Vec<i64> = (0..budget.ooo_queries).map(|_| 2 * rng.gen_range(0..n as i64) + 1).collect();
        let mut dram_hit = f64::NAN;
        for (name, kind, samples) in &mut vs {
            let metrics = run_once(media, name, *kind, &events, &hits, &misses, capacity)?;
            let hit = metrics.iter().find(|(m, _)| *m == "hit_query_us").map_or(f64::NAN, |(_, v)| *v);
            if *kind == Kind::Dram {
                dram_hit = hit;
            }
            for (m, v) in metrics {
                samples.push(m, v);
            }
            samples.push("hit_ratio_to_dram", hit / dram_hit);
        }
    }
    Ok(Figure {
        key: "fig8",
        title: format!("Fig. 8: OOO queue in isolation, {} MiB queue ({n} Stock events)", capacity >> 20),
        rows: vs.iter().map(|(name, _, s)| s.median_row(name)).collect(),
        columns: COLUMNS.to_vec(),
        notes: vec![
            "write: push the whole queue (PMem: flush + fence per event; flash: fsync per full 8 KiB page); recovery: sync, drop, reopen".into(),
            "paper: PMem writes 3x (pure) / 2x (indexed) faster than flash, slower than DRAM; indexed recovery dominated by the index rebuild; PMem indexed HIT as fast as DRAM".into(),
            format!("{} HIT and {} MISS point queries per variant and round; dram has no recovery (not durable)", budget.ooo_queries, budget.ooo_queries),
        ],
        config: serde_json::json!({
            "queue_bytes": capacity,
            "events": n,
            "event_bytes": event_bytes(),
            "queries": budget.ooo_queries,
            "flash_page_bytes": strata_events::ooo::FLASH_PAGE_BYTES,
        }),
    })
}
