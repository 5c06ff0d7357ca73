//! [`TreeConfig`]: every placement of the TAB+-tree that chronicledb-pmem.txt
//! compares (section 4.1, Fig. 4 A.a-A.d; section 4.2, Fig. 4 C), each
//! switchable on its own:
//!
//! - (a) the right flank in DRAM (the original ChronicleDB, Fig. 4 A.a) or
//!   on PMem with batch flushing every `k` events (A.b, section 5.2 Fig. 5);
//! - (b) aggregates inline in the index entries or in a flat PMem
//!   [`crate::pmem_arrays::AggregateArray`] indexed by node id (A.c), dense or
//!   64-byte aligned;
//! - (c) index nodes on SSD like the leaves, or in a PMem
//!   [`crate::pmem_arrays::IndexNodeArray`] (A.d); on PMem leaves and index
//!   nodes have separate id sequences, on SSD they share one;
//! - (d) the address translation variant (DRAM map, ATT on SSD, PMem array),
//!   passed through to [`crate::translation`].
//!
//! It also plans where each PMem structure lives in the region
//! ([`PmemPlan`]): areas one after another from a base, each 256-byte aligned.

use std::ops::Range;

use crate::aggregate::AggregateSpec;
use crate::ids::{EventError, NodeKind};
use crate::node::{IndexLayout, LeafLayout, DEFAULT_SPARE_PERMILLE, NODE_BYTES};
use crate::pmem_arrays::{AggregateArray, IndexNodeArray, SlotLayout};
use crate::schema::StreamSchema;
use crate::translation::att_node::ATT_MAX_FANOUT;
use crate::translation::{PmemArrayTranslation, TranslationKind};

use super::flank_pmem::flank_area_bytes;

/// Where the right flank (the current node of every level) lives.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FlankPlacement {
    /// In DRAM: a crash loses the events of the flank leaf (section 2.2).
    Dram,
    /// On PMem, persisted every `batch_events` appended events (1 = every
    /// event) and whenever a node is written out (section 4.1, "batch flushing").
    Pmem { batch_events: u32 },
}

/// Where the aggregates of a child live.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AggregatePlacement {
    /// Inline in the parent's index entry (the original ChronicleDB).
    Inline,
    /// In a flat PMem array, slot = the child's node number.
    PmemArray(SlotLayout),
}

/// Where completed index nodes live (leaves are always on SSD).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum IndexPlacement {
    /// In the block store with the leaves; one shared id sequence.
    Ssd,
    /// In a flat PMem array; leaves and index nodes have separate sequences.
    Pmem,
}

/// Configuration of one TAB+-tree. Build with [`TreeConfig::new`] and the
/// `with_*` methods; [`TreeConfig::validate`] runs on create and recover.
#[derive(Clone, Debug)]
pub struct TreeConfig {
    pub schema: StreamSchema,
    /// Which aggregates every index entry keeps (default: count, time range,
    /// min/max/sum of every numeric attribute).
    pub spec: AggregateSpec,
    /// Spare room per node for out-of-order inserts, permille (default 100).
    pub spare_permille: u32,
    pub flank: FlankPlacement,
    pub aggregates: AggregatePlacement,
    pub index: IndexPlacement,
    pub translation: TranslationKind,
    /// ATT entries per translation node (only for [`TranslationKind::Att`]).
    pub att_fanout: u32,
    /// Most leaves the tree may hold (sizes PMem arrays and translations).
    pub max_leaf_nodes: u64,
    /// Most index nodes the tree may hold.
    pub max_index_nodes: u64,
    /// Most levels (the PMem flank area has one node slot per level).
    pub max_levels: u32,
    /// Completed nodes kept in the DRAM read cache (0 = none).
    pub node_cache_nodes: usize,
}

/// Default number of cached completed nodes (256 KiB of 8 KiB nodes).
pub const DEFAULT_NODE_CACHE_NODES: usize = 32;
/// Default level limit.
pub const DEFAULT_MAX_LEVELS: u32 = 16;
/// Largest level limit.
pub const MAX_LEVELS_LIMIT: u32 = 64;

impl TreeConfig {
    /// The original ChronicleDB placement: flank in DRAM, aggregates inline,
    /// index nodes on SSD, DRAM translation; 10% spare room; the default
    /// aggregate spec; room for 2^20 leaves.
    pub fn new(schema: StreamSchema) -> TreeConfig {
        let spec = AggregateSpec::default_for(&schema);
        TreeConfig {
            schema,
            spec,
            spare_permille: DEFAULT_SPARE_PERMILLE,
            flank: FlankPlacement::Dram,
            aggregates: AggregatePlacement::Inline,
            index: IndexPlacement::Ssd,
            translation: TranslationKind::Dram,
            att_fanout: ATT_MAX_FANOUT,
            max_leaf_nodes: 1 << 20,
            max_index_nodes: 1 << 16,
            max_levels: DEFAULT_MAX_LEVELS,
            node_cache_nodes: DEFAULT_NODE_CACHE_NODES,
        }
    }

    pub fn with_spec(mut self, spec: AggregateSpec) -> Self {
        self.spec = spec;
        self
    }

    pub fn with_spare_permille(mut self, spare_permille: u32) -> Self {
        self.spare_permille = spare_permille;
        self
    }

    pub fn with_flank(mut self, flank: FlankPlacement) -> Self {
        self.flank = flank;
        self
    }

    pub fn with_aggregates(mut self, aggregates: AggregatePlacement) -> Self {
        self.aggregates = aggregates;
        self
    }

    pub fn with_index(mut self, index: IndexPlacement) -> Self {
        self.index = index;
        self
    }

    pub fn with_translation(mut self, translation: TranslationKind) -> Self {
        self.translation = translation;
        self
    }

    pub fn with_capacity(mut self, max_leaf_nodes: u64, max_index_nodes: u64) -> Self {
        self.max_leaf_nodes = max_leaf_nodes;
        self.max_index_nodes = max_index_nodes;
        self
    }

    /// Checks the settings and that the layouts can be built.
    pub fn validate(&self) -> Result<(), EventError> {
        if self.spec.event_bytes() != self.schema.event_bytes() {
            return Err(EventError::invalid("the aggregate spec belongs to another schema"));
        }
        if let FlankPlacement::Pmem { batch_events } = self.flank {
            if batch_events == 0 {
                return Err(EventError::invalid("the PMem flank's batch size is at least 1 event"));
            }
        }
        if !(2..=MAX_LEVELS_LIMIT).contains(&self.max_levels) {
            return Err(EventError::invalid(format!(
                "max_levels {} outside 2..={MAX_LEVELS_LIMIT}",
                self.max_levels
            )));
        }
        if self.max_leaf_nodes == 0 || self.max_index_nodes == 0 {
            return Err(EventError::invalid("node capacities must be at least 1"));
        }
        if self.max_leaf_nodes.checked_add(self.max_index_nodes).is_none_or(|n| n >= 1 << 48) {
            return Err(EventError::invalid("node capacities must stay below 2^48 nodes"));
        }
        self.leaf_layout()?;
        self.index_layout()?;
        Ok(())
    }

    pub fn leaf_layout(&self) -> Result<LeafLayout, EventError> {
        LeafLayout::new(&self.schema, self.spare_permille)
    }

    pub fn index_layout(&self) -> Result<IndexLayout, EventError> {
        IndexLayout::new(&self.spec, self.aggregates == AggregatePlacement::Inline, self.spare_permille)
    }

    /// Whether leaves and index nodes share one id sequence (index nodes on SSD).
    pub fn shared_id_sequence(&self) -> bool {
        self.index == IndexPlacement::Ssd
    }

    /// Node numbers a kind's tables must hold: with a shared sequence both
    /// kinds draw numbers from the sum of the capacities.
    pub fn number_capacity(&self, kind: NodeKind) -> u64 {
        if self.shared_id_sequence() {
            self.max_leaf_nodes + self.max_index_nodes
        } else {
            match kind {
                NodeKind::Leaf => self.max_leaf_nodes,
                NodeKind::Index => self.max_index_nodes,
            }
        }
    }

    /// Whether any structure lives on PMem (then a region is required).
    pub fn needs_pmem(&self) -> bool {
        matches!(self.flank, FlankPlacement::Pmem { .. })
            || matches!(self.aggregates, AggregatePlacement::PmemArray(_))
            || self.index == IndexPlacement::Pmem
            || self.translation == TranslationKind::PmemArray
    }

    /// A short name of the placement for reports, e.g.
    /// `flank=pmem-k25 aggs=inline index=ssd translation=dram`.
    pub fn placement_name(&self) -> String {
        let flank = match self.flank {
            FlankPlacement::Dram => "dram".to_string(),
            FlankPlacement::Pmem { batch_events } => format!("pmem-k{batch_events}"),
        };
        let aggs = match self.aggregates {
            AggregatePlacement::Inline => "inline".to_string(),
            AggregatePlacement::PmemArray(layout) => format!("pmem-{}", layout.name()),
        };
        let index = match self.index {
            IndexPlacement::Ssd => "ssd",
            IndexPlacement::Pmem => "pmem",
        };
        format!("flank={flank} aggs={aggs} index={index} translation={}", self.translation.name())
    }

    /// Where the PMem structures of this configuration go, from `base`.
    pub fn pmem_plan(&self, base: u64) -> Result<PmemPlan, EventError> {
        let mut plan = PmemPlan { base, ..PmemPlan::default() };
        let mut at = align(base);
        let mut take = |bytes: u64| -> Result<Range<u64>, EventError> {
            let start = at;
            let end = start
                .checked_add(bytes)
                .ok_or_else(|| EventError::invalid("PMem areas overflow the address space"))?;
            at = align(end);
            Ok(start..end)
        };
        if matches!(self.flank, FlankPlacement::Pmem { .. }) {
            plan.flank = Some(take(flank_area_bytes(self.max_levels))?);
        }
        if let AggregatePlacement::PmemArray(layout) = self.aggregates {
            let record = self.spec.record_bytes() as u64;
            if self.shared_id_sequence() {
                let cap = self.number_capacity(NodeKind::Leaf);
                plan.aggregates = vec![take(AggregateArray::area_bytes_for(cap, record, layout)?)?];
            } else {
                let leaf = AggregateArray::area_bytes_for(self.max_leaf_nodes, record, layout)?;
                let index = AggregateArray::area_bytes_for(self.max_index_nodes, record, layout)?;
                plan.aggregates = vec![take(leaf)?, take(index)?];
            }
        }
        if self.index == IndexPlacement::Pmem {
            plan.index_nodes =
                Some(take(IndexNodeArray::area_bytes_for(self.max_index_nodes, NODE_BYTES as u64)?)?);
        }
        if self.translation == TranslationKind::PmemArray {
            let bytes = PmemArrayTranslation::footprint_bytes(
                self.number_capacity(NodeKind::Leaf),
                self.number_capacity(NodeKind::Index),
            )
            .ok_or_else(|| EventError::invalid("translation capacities overflow"))?;
            plan.translation = Some(take(bytes)?);
        }
        plan.end = at;
        Ok(plan)
    }
}

/// PMem areas are 256-byte (XPLine) aligned.
pub const PMEM_AREA_ALIGN_BYTES: u64 = 256;

fn align(at: u64) -> u64 {
    at.div_ceil(PMEM_AREA_ALIGN_BYTES) * PMEM_AREA_ALIGN_BYTES
}

/// Region offsets of the PMem areas of one tree (absolute, not relative).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PmemPlan {
    pub base: u64,
    pub flank: Option<Range<u64>>,
    /// One array (shared id sequence) or two (leaf array, then index array).
    pub aggregates: Vec<Range<u64>>,
    pub index_nodes: Option<Range<u64>>,
    pub translation: Option<Range<u64>>,
    /// First byte after the last area (aligned).
    pub end: u64,
}

impl PmemPlan {
    /// Bytes of the region the tree needs from `base` on.
    pub fn bytes_needed(&self) -> u64 {
        self.end - self.base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_original_chronicledb_and_needs_no_pmem() {
        let c = TreeConfig::new(StreamSchema::stock());
        c.validate().unwrap();
        assert!(!c.needs_pmem());
        assert_eq!(c.placement_name(), "flank=dram aggs=inline index=ssd translation=dram");
        assert!(c.shared_id_sequence());
        assert_eq!(c.number_capacity(NodeKind::Index), (1 << 20) + (1 << 16));
        assert_eq!(c.pmem_plan(0).unwrap().bytes_needed(), 0);
    }

    #[test]
    fn every_pmem_placement_gets_its_own_aligned_area() {
        let c = TreeConfig::new(StreamSchema::sine())
            .with_flank(FlankPlacement::Pmem { batch_events: 25 })
            .with_aggregates(AggregatePlacement::PmemArray(SlotLayout::Aligned))
            .with_index(IndexPlacement::Pmem)
            .with_translation(TranslationKind::PmemArray)
            .with_capacity(1000, 100);
        c.validate().unwrap();
        let plan = c.pmem_plan(100).unwrap();
        assert_eq!(plan.flank.as_ref().unwrap().start, 256, "the base is rounded up to 256");
        assert_eq!(plan.aggregates.len(), 2, "separate sequences: a leaf and an index array");
        let mut areas: Vec<Range<u64>> = plan.flank.iter().cloned().collect();
        areas.extend(plan.aggregates.iter().cloned());
        areas.extend(plan.index_nodes.iter().cloned());
        areas.extend(plan.translation.iter().cloned());
        for pair in areas.windows(2) {
            assert!(pair[0].end <= pair[1].start, "{areas:?} overlap");
        }
        assert!(areas.iter().all(|a| a.start % PMEM_AREA_ALIGN_BYTES == 0));
        assert_eq!(plan.end, align(areas.last().unwrap().end));
        assert_eq!(c.placement_name(), "flank=pmem-k25 aggs=pmem-aligned index=pmem translation=pmem");
    }

    #[test]
    fn bad_settings_are_rejected_with_clear_errors() {
        let c = TreeConfig::new(StreamSchema::stock()).with_flank(FlankPlacement::Pmem { batch_events: 0 });
        assert!(c.validate().unwrap_err().to_string().contains("batch size"));
        let c = TreeConfig::new(StreamSchema::stock()).with_spare_permille(950);
        assert!(c.validate().is_err());
        let mut c = TreeConfig::new(StreamSchema::stock());
        c.max_levels = 1;
        assert!(c.validate().unwrap_err().to_string().contains("max_levels"));
        let c = TreeConfig::new(StreamSchema::stock())
            .with_spec(AggregateSpec::default_for(&StreamSchema::sine()));
        assert!(c.validate().unwrap_err().to_string().contains("another schema"));
    }
}
