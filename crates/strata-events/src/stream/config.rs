//! [`StreamConfig`] and [`StreamMedia`]: a TAB+-tree configuration plus the
//! out-of-order queue variant of chronicledb-pmem.txt section 4.3 / 5.4
//! (PMem indexed, the default; PMem pure; DRAM; flash indexed or pure), and
//! where the queue lives (the PMem area right after the tree's areas, or the
//! `ooo` directory beside the tree's block file).

use std::path::PathBuf;
use std::sync::Arc;

use strata_media::FileSystem;
use strata_pmem::Region;

use crate::ids::EventError;
use crate::ooo::{OooIndexing, PmemOooQueue, DEFAULT_CAPACITY_BYTES};
use crate::tree::config::PMEM_AREA_ALIGN_BYTES;
use crate::tree::{TreeConfig, TreeMedia};

/// Which out-of-order queue a stream uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueuePlacement {
    Pmem(OooIndexing),
    Dram,
    Flash(OooIndexing),
}

/// A tree configuration and its queue.
#[derive(Clone, Debug)]
pub struct StreamConfig {
    pub tree: TreeConfig,
    pub queue: QueuePlacement,
    /// Event bytes the queue holds before it is merged (100 MiB by default).
    pub queue_capacity_bytes: u64,
}

impl StreamConfig {
    /// `tree` with the default queue: PMem, indexed, 100 MiB.
    pub fn new(tree: TreeConfig) -> StreamConfig {
        StreamConfig {
            tree,
            queue: QueuePlacement::Pmem(OooIndexing::Indexed),
            queue_capacity_bytes: DEFAULT_CAPACITY_BYTES,
        }
    }

    pub fn with_queue(mut self, queue: QueuePlacement, capacity_bytes: u64) -> Self {
        self.queue = queue;
        self.queue_capacity_bytes = capacity_bytes;
        self
    }

    /// Whether a PMem region is needed (tree or queue on PMem).
    pub fn needs_pmem(&self) -> bool {
        self.tree.needs_pmem() || matches!(self.queue, QueuePlacement::Pmem(_))
    }

    /// The PMem queue's area `(start, bytes)` for a tree planned from `base`.
    pub fn queue_area(&self, base: u64) -> Result<(u64, u64), EventError> {
        let end = self.tree.pmem_plan(base)?.end;
        let start = end.div_ceil(PMEM_AREA_ALIGN_BYTES) * PMEM_AREA_ALIGN_BYTES;
        let bytes = PmemOooQueue::area_bytes_for(self.tree.schema.event_bytes(), self.queue_capacity_bytes);
        Ok((start, bytes))
    }

    /// First region byte after the stream's PMem areas (tree and queue).
    pub fn pmem_end(&self, base: u64) -> Result<u64, EventError> {
        match self.queue {
            QueuePlacement::Pmem(_) => self.queue_area(base).map(|(s, b)| s + b),
            _ => Ok(self.tree.pmem_plan(base)?.end),
        }
    }

    /// A short name for reports: the tree placement and the queue variant.
    pub fn name(&self) -> String {
        let queue = match self.queue {
            QueuePlacement::Pmem(i) => format!("pmem-{}", i.name()),
            QueuePlacement::Dram => "dram".to_string(),
            QueuePlacement::Flash(i) => format!("flash-{}", i.name()),
        };
        format!("{} ooo={queue}", self.tree.placement_name())
    }
}

/// Where a stream keeps its data.
#[derive(Clone)]
pub struct StreamMedia {
    pub fs: Arc<dyn FileSystem>,
    pub dir: PathBuf,
    pub region: Option<Arc<Region>>,
    pub pmem_base: u64,
}

impl StreamMedia {
    pub(crate) fn tree_media(&self) -> TreeMedia<'_> {
        TreeMedia {
            fs: self.fs.as_ref(),
            dir: self.dir.clone(),
            region: self.region.clone(),
            pmem_base: self.pmem_base,
        }
    }

    pub(crate) fn queue_dir(&self) -> PathBuf {
        self.dir.join("ooo")
    }
}
