//! Recovery of a TAB+-tree after a crash or a restart (chronicledb-pmem.txt
//! sections 4.1 and 5.2): open the block store and recover the translation
//! (section 4.2), open the PMem arrays, then recover the flank, from its
//! PMem area ([`super::recovery_pmem`]) or by rebuilding it from storage
//! ([`super::recovery_dram`]), and finish every full flank node's write-out.
//! A flank entry rewrite of a merge is finished before the slots are
//! repaired; a merge's redo record is kept pending for the caller.

use std::time::{Duration, Instant};

use crate::aggregate::Aggregates;
use crate::block_store::OpenReport;
use crate::ids::EventError;
use crate::node::{IndexNode, LeafNode};
use crate::translation::RecoveryReport;

use super::config::FlankPlacement;
use super::flank::Flank;
use super::flank_pmem::PmemFlankArea;
use super::ooo_merge::MergeResume;
use super::open::{check_media, fingerprint, new_ids, pmem_arrays, recover_ssd};
use super::recovery_pmem::{finish_entry_journal, repaired_levels};
use super::storage::TreeStorage;
use super::{TabTree, TreeConfig, TreeMedia, TreeStats};

/// What a recovery found and how long it took (the paper reports the
/// recovery time per placement, and the events a DRAM flank loses).
#[derive(Clone, Debug)]
pub struct TreeRecoveryReport {
    pub placement: String,
    /// The whole recovery: block store, translation, arrays, flank.
    pub duration: Duration,
    /// The flank alone: loading the PMem slots, or rebuilding from storage.
    pub flank_duration: Duration,
    /// Events in the recovered tree (the caller's count minus this is what
    /// the crash lost).
    pub events_recovered: u64,
    /// Events found in the flank leaf (0 with a DRAM flank).
    pub flank_leaf_events: u64,
    pub height: usize,
    /// Completed nodes read to rebuild the flank (DRAM flank).
    pub nodes_read: u64,
    /// A write-out interrupted by the crash was finished (PMem flank).
    pub journal_redone: bool,
    /// An out-of-order merge was interrupted and is pending
    /// ([`TabTree::pending_ooo_merge`]).
    pub merge_pending: bool,
    /// Full flank nodes written out after the flank was recovered.
    pub write_outs_finished: u64,
    pub block_store: OpenReport,
    pub translation: RecoveryReport,
}

impl TabTree {
    /// The merged aggregates of the entries of flank node `level` (`>= 1`),
    /// in entry order.
    pub(crate) fn entries_aggregate(&self, level: usize) -> Result<Aggregates, EventError> {
        if level == 0 {
            return Ok(Aggregates::empty(&self.config.spec));
        }
        self.index_aggregate(&self.flank.index(level))
    }

    /// The merged aggregates of an index node's entries, in entry order.
    pub(crate) fn index_aggregate(&self, node: &IndexNode<&[u8]>) -> Result<Aggregates, EventError> {
        let mut all = Aggregates::empty(&self.config.spec);
        for i in 0..node.len() {
            all.merge(&self.aggs.of_entry(&self.config.spec, node, i)?);
        }
        Ok(all)
    }

    /// Recovers the tree that `create` made on `media` with `config` (the
    /// same configuration; a PMem flank formatted for another is rejected).
    /// An out-of-order merge the crash interrupted stays pending
    /// ([`TabTree::pending_ooo_merge`]): the caller must finish it with
    /// [`TabTree::resume_ooo_merge`] and the queue's events before appending
    /// ([`crate::stream::EventStream::recover`] does).
    pub fn recover(
        config: TreeConfig,
        media: TreeMedia<'_>,
    ) -> Result<(TabTree, TreeRecoveryReport), EventError> {
        let started = Instant::now();
        let (plan, region) = check_media(&config, &media)?;
        let leaf_layout = config.leaf_layout()?;
        let index_layout = config.index_layout()?;
        let (ssd, block_store, translation) = recover_ssd(&config, &media, &plan, region.as_ref())?;
        let (aggs, pmem_index) = pmem_arrays(&config, &plan, region.as_ref(), false)?;
        let storage = TreeStorage::new(ssd, pmem_index, config.node_cache_nodes);
        let flank_started = Instant::now();
        let mut generation = 0;
        let mut merge = None;
        let mut last_write_out = None;
        let (flank, journal) = match (config.flank, &region, &plan.flank) {
            (FlankPlacement::Pmem { batch_events }, Some(region), Some(area)) => {
                let base = strata_pmem::RegionOffset(area.start);
                let (mut pmem, mut image) =
                    PmemFlankArea::open(region.clone(), base, area.end - area.start, &fingerprint(&config)?)?;
                finish_entry_journal(&mut pmem, &mut image, &index_layout)?;
                let levels = repaired_levels(&mut image, &leaf_layout, &index_layout)?;
                let flank =
                    Flank::new(leaf_layout.clone(), index_layout.clone(), levels, Some((pmem, batch_events)));
                generation = image.merged_ooo_generation;
                merge = image.merge;
                last_write_out = image.last_write_out;
                (flank, image.journal)
            }
            _ => {
                // The DRAM flank is rebuilt from storage below; start from one
                // empty buffer for the leaf level.
                let empty_leaf_level = vec![crate::node::new_node_buffer()];
                (Flank::new(leaf_layout.clone(), index_layout.clone(), empty_leaf_level, None), None)
            }
        };
        let mut tree = TabTree {
            running: Vec::new(),
            ids: new_ids(&config),
            config,
            leaf_layout,
            index_layout,
            storage,
            aggs,
            flank,
            events: 0,
            newest_ts: i64::MIN,
            stats: TreeStats::default(),
            merged_ooo_generation: generation,
            pending_merge: None,
            merge_rewritten: Default::default(),
        };
        let mut nodes_read = 0;
        if !tree.flank.is_pmem() {
            let rebuilt = tree.rebuild_dram_flank()?;
            nodes_read = rebuilt.nodes_read;
            tree.flank =
                Flank::new(tree.leaf_layout.clone(), tree.index_layout.clone(), rebuilt.levels, None);
        }
        for level in 0..tree.flank.height() {
            tree.ids.observe(tree.flank.id(level));
        }
        // (An ended journal's ids are older than the slots' or, when its
        // words are torn by the next W0, not ids at all.)
        if let Some(j) = &journal {
            for id in [Some(j.old_id), Some(j.new_id), j.root_id].into_iter().flatten() {
                tree.ids.observe(id);
            }
        }
        let journal_level = journal.map(|j| j.level as usize);
        tree.running = (0..tree.flank.height())
            .map(|l| {
                if Some(l) == journal_level {
                    Ok(Aggregates::empty(&tree.config.spec))
                } else {
                    tree.entries_aggregate(l)
                }
            })
            .collect::<Result<_, _>>()?;
        let mut journal_redone = journal.is_some();
        if let Some(j) = &journal {
            tree.finish_journal(j)?;
        }
        if let Some(j) = &last_write_out {
            journal_redone |= tree.finish_last_write_out(j)?;
        }
        if let Some(m) = merge {
            if m.generation == tree.merged_ooo_generation {
                // The merge was recorded; only its end was cut.
                tree.flank.end_merge();
            } else {
                tree.pending_merge = Some(MergeResume {
                    generation: m.generation,
                    input_events: m.input_events,
                    record: m.record,
                });
            }
        }
        let flank_leaf_events = tree.flank.count(0) as u64;
        let before = tree.stats.leaves_written + tree.stats.index_nodes_written;
        tree.settle()?;
        let write_outs_finished = tree.stats.leaves_written + tree.stats.index_nodes_written - before;
        tree.recount()?;
        let flank_duration = flank_started.elapsed();
        let report = TreeRecoveryReport {
            placement: tree.config.placement_name(),
            duration: started.elapsed(),
            flank_duration,
            events_recovered: tree.events,
            flank_leaf_events,
            height: tree.flank.height(),
            nodes_read,
            journal_redone,
            merge_pending: tree.pending_merge.is_some(),
            write_outs_finished,
            block_store,
            translation,
        };
        Ok((tree, report))
    }

    /// Recomputes the event count and the newest timestamp from the flank.
    pub(crate) fn recount(&mut self) -> Result<(), EventError> {
        let leaf = LeafNode::open(self.flank.bytes(0), &self.leaf_layout)?;
        let mut events = leaf.len() as u64;
        let mut newest = if leaf.is_empty() { i64::MIN } else { leaf.ts_max() };
        for agg in &self.running[1..] {
            events += agg.count;
            if agg.count > 0 {
                newest = newest.max(agg.ts_max);
            }
        }
        self.events = events;
        self.newest_ts = newest;
        Ok(())
    }
}
