//! Fig. 7 (chronicledb-pmem.txt section 5.3): the address translation in
//! isolation: average time of a sequential update, of a random lookup, and
//! the total recovery time, for the DRAM map, the flat PMem array and the
//! interleaved ATT on SSD ("flash").
//!
//! Setup (untimed, once): a block file with `ops` small node records
//! (64-byte leaves `0..ops`), synced, so every record is durable before a
//! translation is set (the PMem array persists only synced records). Each
//! round, per variant: copy that file, open it, create the translation, then
//! - update: `set(leaf i, addr_i)` for `i = 0..ops` in order (the ATT writes
//!   its translation blocks into the copy as it commits; the PMem array
//!   persists every 32 slots);
//! - lookup: `get` of `ops` uniformly random leaves (seeded);
//! - recovery: sync the block file only, drop the translation (a crash),
//!   reopen the file and recover: DRAM scans the whole file, PMem replays
//!   from its persisted `replay_from`, the ATT loads its roots and replays
//!   from its last commit.

use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_events::block_store::{sample_node, BlockStore, PhysAddr};
use strata_events::translation::{
    AttOptions, AttTranslation, DramTranslation, PmemArrayTranslation, Translation, TranslationKind,
};
use strata_events::NodeId;
use strata_pmem::RegionOffset;

use super::media::EventsMedia;
use super::{EventsBudget, Figure};
use crate::measure::Samples;

/// Bytes of each node record of the setup file.
pub const NODE_RECORD_BYTES: usize = 64;
/// Index-node capacity of the DRAM and PMem tables (the figure sets leaves only).
const INDEX_CAPACITY: u64 = 16;

const COLUMNS: [&str; 7] = [
    "update_ns",
    "lookup_ns",
    "recovery_ms",
    "recovery_records_scanned",
    "recovery_blocks_read",
    "lookup_ssd_block_reads_per_op",
    "update_fences_per_op",
];

const VARIANTS: [TranslationKind; 3] =
    [TranslationKind::Dram, TranslationKind::PmemArray, TranslationKind::Att];

/// PMem bytes the figure needs.
pub(super) fn pmem_bytes_needed(budget: &EventsBudget) -> anyhow::Result<u64> {
    PmemArrayTranslation::footprint_bytes(budget.translation_ops, INDEX_CAPACITY)
        .context("translation capacities overflow")
}

fn variant_name(kind: TranslationKind) -> &'static str {
    match kind {
        TranslationKind::Dram => "dram",
        TranslationKind::PmemArray => "pmem-array",
        TranslationKind::Att => "flash-att",
    }
}

/// Writes the setup file: `ops` records, synced; returns their addresses.
fn build_master(media: &EventsMedia, path: &Path, ops: u64) -> anyhow::Result<Vec<PhysAddr>> {
    let mut store = BlockStore::create(&media.fs, path)?;
    let node = sample_node(7, NODE_RECORD_BYTES, true);
    let mut addrs = Vec::with_capacity(ops as usize);
    for i in 0..ops {
        addrs.push(store.append(NodeId::leaf(i), &node)?);
    }
    store.sync()?;
    Ok(addrs)
}

fn run_once(
    media: &mut EventsMedia,
    kind: TranslationKind,
    master: &Path,
    addrs: &[PhysAddr],
    lookups: &[u64],
) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let ops = addrs.len() as u64;
    let dir = media.fresh_ssd_dir(variant_name(kind))?;
    let path = dir.join("events.blocks");
    std::fs::copy(master, &path).with_context(|| format!("copying {}", master.display()))?;
    let (mut store, _) = BlockStore::open(&media.fs, &path)?;
    let region = media.region.clone();
    let area = pmem_bytes_needed_for(ops)?;
    let mut t: Box<dyn Translation> = match kind {
        TranslationKind::Dram => Box::new(DramTranslation::new(ops, INDEX_CAPACITY)),
        TranslationKind::PmemArray => Box::new(PmemArrayTranslation::create(
            region.clone(),
            RegionOffset(0),
            area,
            ops,
            INDEX_CAPACITY,
        )?),
        TranslationKind::Att => Box::new(AttTranslation::new(AttOptions::default())?),
    };
    let started = Instant::now();
    for (i, addr) in addrs.iter().enumerate() {
        t.set(&mut store, NodeId::leaf(i as u64), *addr)?;
    }
    let update_ns = started.elapsed().as_nanos() as f64 / ops as f64;
    let fences = t.stats().fences;

    let reads_before = t.stats().ssd_block_reads;
    let mut hits = 0u64;
    let started = Instant::now();
    for &i in lookups {
        hits += u64::from(t.get(&store, NodeId::leaf(i))?.is_some());
    }
    let lookup_ns = started.elapsed().as_nanos() as f64 / lookups.len().max(1) as f64;
    anyhow::ensure!(
        hits == lookups.len() as u64,
        "{}: {hits} of {} lookups found",
        variant_name(kind),
        lookups.len()
    );
    let ssd_reads = t.stats().ssd_block_reads - reads_before;

    // Crash: the records are durable, the translation's own state as it is.
    store.sync()?;
    drop(t);
    drop(store);
    let (mut store, _) = BlockStore::open(&media.fs, &path)?;
    let started = Instant::now();
    let report = match kind {
        TranslationKind::Dram => DramTranslation::recover(&store, ops, INDEX_CAPACITY)?.1,
        TranslationKind::PmemArray => PmemArrayTranslation::recover(region, RegionOffset(0), area, &store)?.1,
        TranslationKind::Att => AttTranslation::recover(&mut store, AttOptions::default())?.1,
    };
    let recovery_ms = started.elapsed().as_secs_f64() * 1e3;
    Ok(vec![
        ("update_ns", update_ns),
        ("lookup_ns", lookup_ns),
        ("recovery_ms", recovery_ms),
        ("recovery_records_scanned", report.records_scanned as f64),
        ("recovery_blocks_read", report.blocks_read as f64),
        ("lookup_ssd_block_reads_per_op", ssd_reads as f64 / lookups.len().max(1) as f64),
        ("update_fences_per_op", fences as f64 / ops as f64),
    ])
}

fn pmem_bytes_needed_for(ops: u64) -> anyhow::Result<u64> {
    PmemArrayTranslation::footprint_bytes(ops, INDEX_CAPACITY).context("translation capacities overflow")
}

/// Runs Fig. 7.
pub(super) fn run(media: &mut EventsMedia, budget: &EventsBudget, print: bool) -> anyhow::Result<Figure> {
    let ops = budget.translation_ops;
    let master = media.ssd_scratch_root().join("translation-master.blocks");
    let addrs = build_master(media, &master, ops)?;
    let mut vs: Vec<(TranslationKind, Samples)> = VARIANTS.iter().map(|k| (*k, Samples::default())).collect();
    for round in 0..budget.rounds {
        if print {
            eprintln!("events bench: fig. 7 round {}/{}", round + 1, budget.rounds);
        }
        let mut rng = ChaCha8Rng::seed_from_u64(budget.seed ^ 0x7a7 ^ round as u64);
        let lookups: Vec<u64> = (0..ops).map(|_| rng.gen_range(0..ops)).collect();
        for (kind, samples) in &mut vs {
            for (m, v) in run_once(media, *kind, &master, &addrs, &lookups)? {
                samples.push(m, v);
            }
        }
    }
    std::fs::remove_file(&master).ok();
    Ok(Figure {
        key: "fig7",
        title: format!("Fig. 7: address translation in isolation, {ops} updates and lookups"),
        rows: vs.iter().map(|(k, s)| s.median_row(variant_name(*k))).collect(),
        columns: COLUMNS.to_vec(),
        notes: vec![
            "update: sequential set of leaf i; lookup: get of a uniform random leaf; recovery: after a crash with the records synced".into(),
            "paper: flash (ATT) updates 5x faster than PMem (its flank is in DRAM); PMem best lookup and recovery; DRAM recovery scans the whole file".into(),
            format!("records: {NODE_RECORD_BYTES}-byte leaves in 32 KiB blocks; the ATT's translation blocks are read through the page cache"),
        ],
        config: serde_json::json!({
            "operations": ops,
            "node_record_bytes": NODE_RECORD_BYTES,
            "att_fanout": AttOptions::default().fanout,
        }),
    })
}
