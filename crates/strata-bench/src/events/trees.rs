//! TAB+-tree configurations of the tree figures (Fig. 5, 6): the original
//! ChronicleDB storage layer (LZ4 nodes of 8 KiB in 32 KiB blocks, the
//! interleaved ATT on SSD, 10 % spare room) with the placement under test,
//! and capacities sized for the run's event count.

use std::path::PathBuf;
use std::sync::Arc;

use strata_events::translation::TranslationKind;
use strata_events::tree::{AggregatePlacement, FlankPlacement, IndexPlacement, TreeConfig, TreeMedia};
use strata_media::fs::RealFs;
use strata_pmem::Region;

use super::generator::Stream;

/// A configuration of `stream` with the given placements, room for `events`.
pub(super) fn tree_config(
    stream: Stream,
    flank: FlankPlacement,
    aggregates: AggregatePlacement,
    index: IndexPlacement,
    events: u64,
) -> anyhow::Result<TreeConfig> {
    let base = TreeConfig::new(stream.schema())
        .with_flank(flank)
        .with_aggregates(aggregates)
        .with_index(index)
        .with_translation(TranslationKind::Att);
    let leaf_fill = base.leaf_layout()?.fill_limit() as u64;
    let index_fill = base.index_layout()?.fill_limit().max(2) as u64;
    let leaves = events / leaf_fill + 16;
    let index_nodes = leaves / (index_fill - 1) * 2 + 64;
    let config = base.with_capacity(leaves, index_nodes);
    config.validate()?;
    Ok(config)
}

/// PMem bytes `config` needs from offset 0.
pub(super) fn pmem_bytes(config: &TreeConfig) -> anyhow::Result<u64> {
    Ok(config.pmem_plan(0)?.end)
}

/// The media of one tree: the run's region from offset 0 and `dir`.
pub(super) fn tree_media<'a>(fs: &'a RealFs, dir: PathBuf, region: &Arc<Region>) -> TreeMedia<'a> {
    TreeMedia { fs, dir, region: Some(region.clone()), pmem_base: 0 }
}
