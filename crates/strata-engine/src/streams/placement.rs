//! Turns a stream's [`Catalog`] into the event store's configuration and
//! media (chronicledb-pmem.txt section 4, Fig. 4): a PMem right flank with
//! batch flushing every k events (A.b), aggregates inline in the index
//! entries, index nodes on SSD with the leaves, the flat PMem translation
//! array (C.b), and the PMem indexed out-of-order queue (B.c) or, for the
//! `ssd` placement, a flash indexed queue. The PMem structures live in one
//! mapped file per stream (`region.pmem` in the stream's directory), opened
//! like the engine's pool: `Region::open` in the configured PMem mode, or
//! msync-persisted for the `ssd` placement.

use std::path::Path;
use std::sync::Arc;

use strata_events::ooo::OooIndexing;
use strata_events::stream::{QueuePlacement, StreamConfig, StreamMedia};
use strata_events::translation::TranslationKind;
use strata_events::tree::{AggregatePlacement, FlankPlacement, IndexPlacement, TreeConfig};
use strata_media::fs::RealFs;
use strata_pmem::{PmemMode, Region, RegionOptions};
use strata_series::EngineError;

use super::catalog::{Catalog, Placement};

/// Name of the mapped PMem file in a stream's directory.
pub const REGION_FILE: &str = "region.pmem";
/// The event store's files (block file, flash queue) live here, inside the stream's directory.
pub const DATA_DIR: &str = "data";
/// Region files are sized in whole pages.
const PAGE_BYTES: u64 = 4096;

/// PMem mode and injected delays for streams of the `pmem` placement.
#[derive(Copy, Clone, Debug)]
pub struct PmemSettings {
    pub mode: PmemMode,
    pub flush_delay_ns_per_line: u64,
    pub fence_delay_ns: u64,
}

fn event_error(e: strata_events::EventError) -> EngineError {
    match e {
        strata_events::EventError::Io(io) => EngineError::Io(io),
        strata_events::EventError::Corruption { location, what } => EngineError::corruption(location, what),
        strata_events::EventError::InvalidInput(what) => EngineError::InvalidArgument(what),
        other => EngineError::Storage { what: "event store".into(), source: Box::new(other) },
    }
}

/// Converts the event store's errors, keeping corruption and I/O apart.
pub fn from_event_error(e: strata_events::EventError) -> EngineError {
    event_error(e)
}

/// The stream configuration a catalog describes.
pub fn stream_config(catalog: &Catalog) -> StreamConfig {
    let tree = TreeConfig::new(catalog.schema.clone())
        .with_flank(FlankPlacement::Pmem { batch_events: catalog.flank_batch_events })
        .with_aggregates(AggregatePlacement::Inline)
        .with_index(IndexPlacement::Ssd)
        .with_translation(TranslationKind::PmemArray)
        .with_capacity(catalog.max_leaf_nodes, catalog.max_index_nodes);
    let queue = match catalog.placement {
        Placement::Pmem => QueuePlacement::Pmem(OooIndexing::Indexed),
        Placement::Ssd => QueuePlacement::Flash(OooIndexing::Indexed),
    };
    StreamConfig::new(tree).with_queue(queue, catalog.queue_capacity_bytes)
}

/// Bytes of the region file a configuration needs (whole pages).
pub fn region_bytes(config: &StreamConfig) -> Result<u64, EngineError> {
    config.tree.validate().map_err(event_error)?;
    let end = config.pmem_end(0).map_err(event_error)?;
    Ok(end.div_ceil(PAGE_BYTES).max(1) * PAGE_BYTES)
}

/// Opens (creating if needed) the stream's region file and returns its media.
pub fn open_media(dir: &Path, catalog: &Catalog, pmem: &PmemSettings) -> Result<StreamMedia, EngineError> {
    let mode = match catalog.placement {
        Placement::Pmem => pmem.mode,
        Placement::Ssd => PmemMode::Msync,
    };
    let mut options = RegionOptions::new(mode, catalog.region_bytes);
    options.flush_delay_ns_per_line = pmem.flush_delay_ns_per_line;
    options.fence_delay_ns = pmem.fence_delay_ns;
    let path = dir.join(REGION_FILE);
    let region = Region::open(&path, &options).map_err(|e| EngineError::Storage {
        what: format!("stream region {}", path.display()),
        source: Box::new(e),
    })?;
    if region.len() < catalog.region_bytes {
        return Err(EngineError::corruption(
            path.display().to_string(),
            format!("the region has {} bytes, the catalog needs {}", region.len(), catalog.region_bytes),
        ));
    }
    let data = dir.join(DATA_DIR);
    std::fs::create_dir_all(&data)?;
    Ok(StreamMedia { fs: Arc::new(RealFs::new()), dir: data, region: Some(Arc::new(region)), pmem_base: 0 })
}
