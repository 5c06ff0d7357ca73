//! Creating a TAB+-tree on its media, and what create and recovery share:
//! checking the media against the configuration, the flank fingerprint, and
//! opening or formatting each PMem structure of the plan.

use std::sync::Arc;

use strata_pmem::{Region, RegionOffset};

use crate::aggregate::Aggregates;
use crate::block_store::BlockStore;
use crate::ids::{EventError, NodeKind};
use crate::node::{new_node_buffer, LeafNode, NODE_BYTES};
use crate::pmem_arrays::{AggregateArray, IndexNodeArray};
use crate::translation::{
    AttOptions, AttTranslation, DramTranslation, PmemArrayTranslation, Translation, TranslationKind,
};

use super::aggregate_store::AggregateStore;
use super::config::{AggregatePlacement, FlankPlacement, PmemPlan};
use super::flank::Flank;
use super::flank_pmem::{
    FlankFingerprint, PmemFlankArea, FLANK_FLAG_AGGREGATES_INLINE, FLANK_FLAG_SHARED_IDS,
};
use super::id_alloc::IdAllocator;
use super::storage::{PmemIndexStorage, SsdNodeStorage, TreeStorage};
use super::{TabTree, TreeConfig, TreeMedia, TreeStats, BLOCK_FILE_NAME};

/// The region and plan of a configuration (`None` region if no PMem is used).
pub(crate) fn check_media(
    config: &TreeConfig,
    media: &TreeMedia<'_>,
) -> Result<(PmemPlan, Option<Arc<Region>>), EventError> {
    config.validate()?;
    let plan = config.pmem_plan(media.pmem_base)?;
    if !config.needs_pmem() {
        return Ok((plan, None));
    }
    let region = media.region.clone().ok_or_else(|| {
        EventError::invalid(format!("placement '{}' needs a PMem region", config.placement_name()))
    })?;
    if region.len() < plan.end {
        return Err(EventError::invalid(format!(
            "placement '{}' needs {} bytes of PMem from {}; the region has {}",
            config.placement_name(),
            plan.bytes_needed(),
            plan.base,
            region.len()
        )));
    }
    Ok((plan, Some(region)))
}

/// What the PMem flank area records about the configuration.
pub(crate) fn fingerprint(config: &TreeConfig) -> Result<FlankFingerprint, EventError> {
    let leaf = config.leaf_layout()?;
    let index = config.index_layout()?;
    let mut crc = crc32c::crc32c(&config.schema.encode());
    for a in config.spec.per_attr() {
        crc = crc32c::crc32c_append(crc, &[a.min as u8, a.max as u8, a.sum as u8]);
    }
    crc = crc32c::crc32c_append(crc, &config.spare_permille.to_le_bytes());
    let mut flags = 0;
    if config.shared_id_sequence() {
        flags |= FLANK_FLAG_SHARED_IDS;
    }
    if config.aggregates == AggregatePlacement::Inline {
        flags |= FLANK_FLAG_AGGREGATES_INLINE;
    }
    Ok(FlankFingerprint {
        max_levels: config.max_levels,
        event_bytes: leaf.event_bytes() as u32,
        index_entry_bytes: index.entry_bytes() as u32,
        leaf_fill: leaf.fill_limit() as u32,
        index_fill: index.fill_limit() as u32,
        flags,
        config_crc: crc,
    })
}

fn area_of(plan_area: &std::ops::Range<u64>) -> (RegionOffset, u64) {
    (RegionOffset(plan_area.start), plan_area.end - plan_area.start)
}

pub(crate) fn new_ids(config: &TreeConfig) -> IdAllocator {
    IdAllocator::new(
        config.shared_id_sequence(),
        config.number_capacity(NodeKind::Leaf),
        config.number_capacity(NodeKind::Index),
    )
}

fn att_options(config: &TreeConfig) -> AttOptions {
    AttOptions { fanout: config.att_fanout }
}

/// Formats (`create`) or opens the aggregate arrays and the index node array.
pub(crate) fn pmem_arrays(
    config: &TreeConfig,
    plan: &PmemPlan,
    region: Option<&Arc<Region>>,
    create: bool,
) -> Result<(AggregateStore, Option<PmemIndexStorage>), EventError> {
    let aggs = match (config.aggregates, region) {
        (AggregatePlacement::PmemArray(layout), Some(region)) => {
            let record = config.spec.record_bytes() as u64;
            let mut arrays = Vec::new();
            for a in &plan.aggregates {
                let (base, bytes) = area_of(a);
                arrays.push(if create {
                    AggregateArray::format(region.clone(), base, bytes, record, layout)?
                } else {
                    AggregateArray::open(region.clone(), base, bytes)?
                });
            }
            AggregateStore::arrays(arrays)
        }
        _ => AggregateStore::Inline,
    };
    let index = match (&plan.index_nodes, region) {
        (Some(area), Some(region)) => {
            let (base, bytes) = area_of(area);
            Some(PmemIndexStorage::new(if create {
                IndexNodeArray::format(region.clone(), base, bytes, NODE_BYTES as u64)?
            } else {
                IndexNodeArray::open(region.clone(), base, bytes)?
            }))
        }
        _ => None,
    };
    Ok((aggs, index))
}

/// Opens the block store and recovers the translation of the plan.
pub(crate) fn recover_ssd(
    config: &TreeConfig,
    media: &TreeMedia<'_>,
    plan: &PmemPlan,
    region: Option<&Arc<Region>>,
) -> Result<(SsdNodeStorage, crate::block_store::OpenReport, crate::translation::RecoveryReport), EventError>
{
    let path = media.dir.join(BLOCK_FILE_NAME);
    let (mut store, open_report) = BlockStore::open(media.fs, &path)?;
    let leaf_cap = config.number_capacity(NodeKind::Leaf);
    let index_cap = config.number_capacity(NodeKind::Index);
    let (translation, report): (Box<dyn Translation + Send>, _) = match config.translation {
        TranslationKind::Dram => {
            let (t, r) = DramTranslation::recover(&store, leaf_cap, index_cap)?;
            (Box::new(t), r)
        }
        TranslationKind::Att => {
            let (t, r) = AttTranslation::recover(&mut store, att_options(config))?;
            (Box::new(t), r)
        }
        TranslationKind::PmemArray => {
            let (region, area) = region
                .zip(plan.translation.as_ref())
                .ok_or_else(|| EventError::invalid("the PMem translation needs a region and an area"))?;
            let (base, bytes) = area_of(area);
            let (t, r) = PmemArrayTranslation::recover(region.clone(), base, bytes, &store)?;
            (Box::new(t), r)
        }
    };
    Ok((SsdNodeStorage::new(store, translation), open_report, report))
}

impl TabTree {
    /// Creates an empty tree: the block file `dir/events.blocks` (replacing
    /// one that exists), the translation, the PMem arrays of the placement
    /// and the flank (formatted last on PMem, so an interrupted create leaves
    /// an area recovery rejects).
    pub fn create(config: TreeConfig, media: TreeMedia<'_>) -> Result<TabTree, EventError> {
        let (plan, region) = check_media(&config, &media)?;
        let leaf_layout = config.leaf_layout()?;
        let index_layout = config.index_layout()?;
        media.fs.create_dir_all(&media.dir)?;
        let store = BlockStore::create(media.fs, &media.dir.join(BLOCK_FILE_NAME))?;
        let leaf_cap = config.number_capacity(NodeKind::Leaf);
        let index_cap = config.number_capacity(NodeKind::Index);
        let translation: Box<dyn Translation + Send> = match config.translation {
            TranslationKind::Dram => Box::new(DramTranslation::new(leaf_cap, index_cap)),
            TranslationKind::Att => Box::new(AttTranslation::new(att_options(&config))?),
            TranslationKind::PmemArray => {
                let (region, area) = region
                    .as_ref()
                    .zip(plan.translation.as_ref())
                    .ok_or_else(|| EventError::invalid("the PMem translation needs a region and an area"))?;
                let (base, bytes) = area_of(area);
                Box::new(PmemArrayTranslation::create(region.clone(), base, bytes, leaf_cap, index_cap)?)
            }
        };
        let (aggs, pmem_index) = pmem_arrays(&config, &plan, region.as_ref(), true)?;
        let storage =
            TreeStorage::new(SsdNodeStorage::new(store, translation), pmem_index, config.node_cache_nodes);
        let mut ids = new_ids(&config);
        let leaf0 = ids.alloc(NodeKind::Leaf)?;
        let mut buf = new_node_buffer();
        LeafNode::init(buf.as_mut_slice(), &leaf_layout, leaf0)?;
        let pmem = match (config.flank, &region, &plan.flank) {
            (FlankPlacement::Pmem { batch_events }, Some(region), Some(area)) => {
                let (base, bytes) = area_of(area);
                let area = PmemFlankArea::format(region.clone(), base, bytes, &fingerprint(&config)?, &buf)?;
                Some((area, batch_events))
            }
            _ => None,
        };
        let flank = Flank::new(leaf_layout.clone(), index_layout.clone(), vec![buf], pmem);
        let running = vec![Aggregates::empty(&config.spec)];
        Ok(TabTree {
            config,
            leaf_layout,
            index_layout,
            storage,
            aggs,
            flank,
            running,
            ids,
            events: 0,
            newest_ts: i64::MIN,
            stats: TreeStats::default(),
            merged_ooo_generation: 0,
            pending_merge: None,
            merge_rewritten: Default::default(),
        })
    }
}
