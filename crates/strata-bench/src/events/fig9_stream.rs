//! Fig. 9 (chronicledb-pmem.txt section 5.4, second experiment): the total
//! time to insert Stock with 1, 5 and 10 % out-of-order events into the
//! whole event store ([`EventStream`]: TAB+-tree plus OOO queue, with the
//! queue's merges into the tree), per queue variant: PMem indexed, PMem
//! pure, flash indexed, flash pure, and DRAM for reference.
//!
//! Workload ([`super::generator::arrival_order`]): of `N` events `x %` arrive
//! late; 10 % of those uniform over the span, 90 % in equi-distant bursts
//! ([`paper_bursts`]: 10,000 bursts at 10^8 events, scaled with `N`, so a
//! burst holds `0.9 x N / B` events at every scale, 900 at 10 %).
//!
//! Per round, fraction and variant: a fresh stream (the original
//! ChronicleDB tree of section 5.1: DRAM flank, aggregates inline, index
//! nodes and ATT on the block store, 10 % spare room) gets the events in
//! arrival order; the timed span is every `append` (late events inside the
//! DRAM flank leaf go there, the rest to the queue, a full queue is merged
//! into the tree) and a final `sync()`. Then, untimed, the stream must hold
//! every event: `len() == N` and its replay equals the generator's events
//! `0..N` byte for byte; a run that loses or duplicates one fails.
//!
//! Media: the PMem queue in the emulated region; the flash queue's 8 KiB
//! pages in a directory on the disk (ext4, fsync per page), linked in as the
//! stream's `ooo` directory; the tree's block file on tmpfs, as Fig. 5's
//! `tmpfs/` rows (the tree is the same for every variant and its per-leaf
//! fdatasync would otherwise dominate every variant's time).
//!
//! Queue capacity: [`queue_bytes_for`]: the paper's 100 MiB per 10^8
//! events (so 100 MiB at `--paper-scale`, the paper's 0 / 1 / 2 merges at
//! 1 / 5 / 10 %), divided by [`QUICK_QUEUE_DIVISOR`] for `--quick` so its
//! small stream still merges several times.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use strata_events::ooo::OooIndexing;
use strata_events::stream::{EventStream, QueuePlacement, StreamConfig, StreamMedia};
use strata_events::tree::{AggregatePlacement, FlankPlacement, IndexPlacement};
use strata_media::fs::RealFs;

use super::generator::{arrival_order, paper_bursts, EventMaker, OooModel, Stream, PAPER_EVENTS};
use super::media::EventsMedia;
use super::trees::tree_config;
use super::{EventsBudget, Figure};
use crate::measure::Samples;

/// The OOO fractions of Fig. 9, in percent.
pub const OOO_FRACTIONS_PCT: [u32; 3] = [1, 5, 10];
/// The paper's queue capacity (section 5.4) for its 10^8 events.
pub const PAPER_QUEUE_BYTES: u64 = 100 << 20;
/// `--quick` divides the paper's capacity per event by this.
pub const QUICK_QUEUE_DIVISOR: u64 = 2;
/// The variant every ratio is taken against.
pub const REFERENCE_VARIANT: &str = "pmem-indexed";
/// Smallest queue (a few flash pages).
const MIN_QUEUE_BYTES: u64 = 16 << 10;

/// The queue variants, the reference first.
pub const VARIANTS: [(&str, QueuePlacement); 5] = [
    (REFERENCE_VARIANT, QueuePlacement::Pmem(OooIndexing::Indexed)),
    ("pmem-pure", QueuePlacement::Pmem(OooIndexing::Pure)),
    ("flash-indexed", QueuePlacement::Flash(OooIndexing::Indexed)),
    ("flash-pure", QueuePlacement::Flash(OooIndexing::Pure)),
    ("dram", QueuePlacement::Dram),
];

pub(super) const COLUMNS: [&str; 15] = [
    "total_s",
    "ratio_to_pmem_indexed",
    "throughput_events_per_s",
    "merges",
    "merge_s",
    "merge_share",
    "late_to_flank_leaf",
    "late_to_queue",
    "queue_events_at_end",
    "queue_records_read_per_late_event",
    "queue_page_reads",
    "leaves_rewritten",
    "leaves_rewritten_per_merge",
    "leaves_rewritten_twice",
    "events",
];

/// The queue capacity for a stream of `events` events: the paper's 100 MiB
/// per 10^8 events, divided by `divisor` (1 for full runs), at least 16 KiB.
pub fn queue_bytes_for(events: u64, divisor: u64) -> u64 {
    let bytes = (PAPER_QUEUE_BYTES as u128 * events as u128 / PAPER_EVENTS as u128) as u64;
    (bytes / divisor.max(1)).max(MIN_QUEUE_BYTES)
}

/// The row name of one fraction and variant.
pub fn row_name(fraction_pct: u32, variant: &str) -> String {
    format!("ooo{fraction_pct}pct/{variant}")
}

fn stream_config(events: u64, queue: QueuePlacement, queue_bytes: u64) -> anyhow::Result<StreamConfig> {
    let tree = tree_config(
        Stream::Stock,
        FlankPlacement::Dram,
        AggregatePlacement::Inline,
        IndexPlacement::Ssd,
        events,
    )?;
    Ok(StreamConfig::new(tree).with_queue(queue, queue_bytes))
}

/// PMem bytes the figure needs (the PMem queue after the tree's areas).
pub(super) fn pmem_bytes_needed(budget: &EventsBudget) -> anyhow::Result<u64> {
    let mut most = 0;
    for (_, queue) in VARIANTS {
        let c = stream_config(budget.stream_events, queue, budget.stream_queue_bytes)?;
        most = most.max(c.pmem_end(0)?);
    }
    Ok(most)
}

/// Checks that `stream` holds exactly the events `0..n` of `maker`.
fn verify_holds_every_event(stream: &EventStream, maker: &mut EventMaker, name: &str) -> anyhow::Result<()> {
    let n = stream.len();
    let replay = stream.replay().with_context(|| format!("{name}: replay"))?;
    anyhow::ensure!(replay.len() as u64 == n, "{name}: replay returned {} of {n} events", replay.len());
    let mut expect = vec![0u8; maker.event_bytes()];
    for (i, event) in replay.iter().enumerate() {
        maker.write(i as i64, &mut expect)?;
        anyhow::ensure!(
            *event == expect,
            "{name}: replay position {i} holds the event of timestamp {} instead of {i}",
            strata_events::ooo::event_ts(event)
        );
    }
    Ok(())
}

/// One insertion of `events` (arrival order) into a fresh stream.
fn run_once(
    media: &mut EventsMedia,
    name: &str,
    queue: QueuePlacement,
    events: &super::generator::EventBatch,
    queue_bytes: u64,
    maker: &mut EventMaker,
) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let n = events.len() as u64;
    let config = stream_config(n, queue, queue_bytes)?;
    let dir = media.fresh_dir(true, name)?;
    let flash_dir = media.fresh_ssd_dir(name)?;
    link_queue_dir(&flash_dir, &dir)?;
    let stream_media =
        StreamMedia { fs: Arc::new(RealFs::new()), dir, region: Some(media.region.clone()), pmem_base: 0 };
    let mut stream = EventStream::create(config, stream_media).with_context(|| format!("{name}: create"))?;
    let started = Instant::now();
    for e in events.iter() {
        stream.append(e).with_context(|| format!("{name}: append"))?;
    }
    stream.sync().with_context(|| format!("{name}: sync"))?;
    let total = started.elapsed();
    let stats = stream.stats();
    anyhow::ensure!(stream.len() == n, "{name}: the stream holds {} of {n} events", stream.len());
    anyhow::ensure!(
        stats.events_appended == n
            && stats.tree.ooo_events_merged + stats.queue_events == stats.late_to_queue,
        "{name}: {} appended, {} merged + {} queued of {} late to the queue",
        stats.events_appended,
        stats.tree.ooo_events_merged,
        stats.queue_events,
        stats.late_to_queue
    );
    verify_holds_every_event(&stream, maker, name)?;
    let reads = stream.queue().query_stats();
    let late = (stats.late_to_flank_leaf + stats.late_to_queue).max(1);
    Ok(vec![
        ("total_s", total.as_secs_f64()),
        ("throughput_events_per_s", n as f64 / total.as_secs_f64()),
        ("merges", stats.merges as f64),
        ("merge_s", stats.merge_time.as_secs_f64()),
        ("merge_share", stats.merge_time.as_secs_f64() / total.as_secs_f64()),
        ("late_to_flank_leaf", stats.late_to_flank_leaf as f64),
        ("late_to_queue", stats.late_to_queue as f64),
        ("queue_events_at_end", stats.queue_events as f64),
        ("queue_records_read_per_late_event", reads.records_read as f64 / late as f64),
        ("queue_page_reads", reads.page_reads as f64),
        ("leaves_rewritten", stats.tree.leaves_rewritten as f64),
        ("leaves_rewritten_per_merge", stats.tree.leaves_rewritten as f64 / stats.merges.max(1) as f64),
        ("leaves_rewritten_twice", stats.tree.leaves_rewritten_twice as f64),
        ("events", n as f64),
    ])
}

/// Makes `stream_dir/ooo` (where a stream keeps its flash queue) a link to
/// `flash_dir` on the disk, so the queue's pages are fsynced to the device
/// while the tree stays on tmpfs.
fn link_queue_dir(flash_dir: &Path, stream_dir: &Path) -> anyhow::Result<()> {
    let link = stream_dir.join("ooo");
    std::os::unix::fs::symlink(flash_dir, &link)
        .with_context(|| format!("linking {} to {}", link.display(), flash_dir.display()))
}

/// Runs Fig. 9.
pub(super) fn run(media: &mut EventsMedia, budget: &EventsBudget, print: bool) -> anyhow::Result<Figure> {
    let n = budget.stream_events;
    let queue_bytes = budget.stream_queue_bytes;
    let event_bytes = Stream::Stock.schema().event_bytes() as u64;
    let bursts = paper_bursts(n);
    let mut rows = Vec::new();
    let mut maker = EventMaker::new(Stream::Stock, budget.seed);
    let mut workloads = Vec::new();
    for fraction_pct in OOO_FRACTIONS_PCT {
        let model = OooModel { fraction: fraction_pct as f64 / 100.0, bursts };
        let order = arrival_order(n, &model, budget.seed ^ 0x9009 ^ u64::from(fraction_pct))?;
        let events = maker.batch(order.timestamps.iter().copied())?;
        workloads.push(serde_json::json!({
            "ooo_fraction_pct": fraction_pct,
            "ooo_events": order.ooo_events,
            "uniform_events": order.uniform_events,
            "burst_events": order.burst_events,
            "bursts": order.bursts,
        }));
        drop(order);
        let mut vs: Vec<(&str, QueuePlacement, Samples)> =
            VARIANTS.iter().map(|(v, q)| (*v, *q, Samples::default())).collect();
        for round in 0..budget.rounds {
            if print {
                eprintln!("events bench: fig. 9 {fraction_pct} % OOO, round {}/{}", round + 1, budget.rounds);
            }
            let mut reference_s = f64::NAN;
            for (variant, queue, samples) in &mut vs {
                let metrics = run_once(media, variant, *queue, &events, queue_bytes, &mut maker)?;
                let total_s = metrics[0].1;
                if *variant == REFERENCE_VARIANT {
                    reference_s = total_s;
                }
                for (m, v) in metrics {
                    samples.push(m, v);
                }
                samples.push("ratio_to_pmem_indexed", total_s / reference_s);
            }
        }
        rows.extend(vs.iter().map(|(v, _, s)| s.median_row(&row_name(fraction_pct, v))));
    }
    Ok(Figure {
        key: "fig9",
        title: format!(
            "Fig. 9: total time to insert {n} Stock events with 1/5/10 % OOO into the event stream, per OOO queue ({} KiB queue, {} events)",
            queue_bytes >> 10,
            queue_bytes / event_bytes
        ),
        rows,
        columns: COLUMNS.to_vec(),
        notes: vec![
            "total: every append (late events to the DRAM flank leaf or the queue; full queue merged into the tree) plus the final sync; ratio: total over pmem-indexed's total of the same fraction and round, median over rounds".into(),
            "paper: merges dominate; pure variants cannot bulk-merge (unsorted queue); flash indexed worst at 5 and 10 % (random page reads in time order); pmem indexed best of both".into(),
            format!(
                "queue {queue_bytes} bytes = 100 MiB x {n} / 10^8 events{}; tree: DRAM flank, inline aggregates, index and ATT in the block file on tmpfs; flash queue pages fsynced on {}",
                if budget.stream_queue_divisor > 1 { format!(" / {} (--quick: more merges)", budget.stream_queue_divisor) } else { String::new() },
                media.ssd_fs_type
            ),
            "queue records read per late event: reads by the stream's equal-timestamp check (a point query per late event inside the queue's span; a whole-queue scan for pure queues) and by merges".into(),
            "checked after every run: len() = events and the replay equals the generator's events 0..N byte for byte".into(),
            "merges are one pass (a leaf is rewritten at most once per merge; leaves no late event or carry reaches are not touched); merge share = merge s / total s; leaves rewritten twice: rewrites of a leaf the same merge had rewritten already".into(),
        ],
        config: serde_json::json!({
            "stream": "stock",
            "events": n,
            "ooo_fractions_pct": OOO_FRACTIONS_PCT,
            "uniform_share": super::generator::OOO_UNIFORM_SHARE,
            "bursts": bursts,
            "queue_bytes": queue_bytes,
            "queue_events": queue_bytes / event_bytes,
            "queue_divisor": budget.stream_queue_divisor,
            "flank": "dram",
            "aggregates": "inline",
            "index": "ssd",
            "translation": "flash-att",
            "tree_dir": "tmpfs",
            "flash_queue_dir": media.ssd_fs_type,
            "workloads": workloads,
        }),
    })
}
