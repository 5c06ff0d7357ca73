//! Out-of-order events in the TAB+-tree (chronicledb-pmem.txt sections 2.2
//! "Out-Of-Order Data" and 4.3): the tree's side of the three-step strategy.
//!
//! - Spare room in the flank leaf: [`TabTree::insert_late_in_flank`] puts a
//!   late event that falls into the DRAM flank leaf's time range there, in
//!   order. With the flank on PMem the in-place shift is not crash-atomic,
//!   so late events for a PMem flank always go to the queue.
//! - The queue itself belongs to the caller (`crate::stream`).
//! - The merge, [`TabTree::merge_ooo`], takes the queue's events in
//!   application-time order:
//!   1. the flank leaf is written out early (if it holds events), so every
//!      event older than the newest belongs in a completed leaf;
//!   2. each such event goes to its leaf (descending by key); the leaf is
//!      read, the events merged in (the leaf's own first on equal
//!      timestamps), and written back under its id (new physical location,
//!      translation update); the index entries on the path get the leaf's
//!      recomputed aggregates and key, completed index nodes are rewritten,
//!      flank index nodes updated (and persisted on PMem);
//!   3. a leaf over its capacity keeps its smallest events and hands the
//!      rest to its right neighbour ("carry", which may cascade; into the
//!      flank leaf by appending). No node splits: no node ids are added, so
//!      recovery's id rules are unchanged;
//!   4. events not older than the newest are appended;
//!   5. the flank leaf is written out again (merged events never sit in a
//!      DRAM flank) and the queue's generation recorded (PMem flank header
//!      `merged_ooo_generation`), after which the caller truncates the queue.
//!
//! A crash between 5 and the truncation is handled by the queue's
//! `discard_if_merged`. A crash inside 2-4 leaves a partial merge (see the
//! "left" list of the stream module).

use crate::aggregate::Aggregates;
use crate::event::timestamp_of;
use crate::ids::{EventError, NodeId};
use crate::node::{new_node_buffer, IndexNode, LeafNode};
use crate::ooo::EventList;

use super::ooo_path::{LeafPath, PathStep};
use super::storage::NodeStorage;
use super::{AppendOutcome, TabTree};

/// What one merge did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OooMergeReport {
    /// Events taken from the queue.
    pub events_merged: u64,
    /// Of them, inserted into completed leaves.
    pub events_into_leaves: u64,
    /// Of them, appended (not older than the tree's newest event).
    pub events_appended: u64,
    pub leaves_rewritten: u64,
    pub index_nodes_rewritten: u64,
    /// Events moved to a right neighbour by leaves at capacity.
    pub events_carried: u64,
    /// Early write-outs of the flank leaf (before and after).
    pub flank_write_outs: u64,
    /// The queue generation recorded.
    pub generation: u64,
}

impl TabTree {
    /// The out-of-order queue generation the durable tree holds (0: none);
    /// recovery passes it to the queue's `discard_if_merged`.
    pub fn merged_ooo_generation(&self) -> u64 {
        self.merged_ooo_generation
    }

    fn check_event_len(&self, event: &[u8]) -> Result<(), EventError> {
        if event.len() != self.leaf_layout.event_bytes() {
            return Err(EventError::invalid(format!(
                "an event of this stream has {} bytes, got {}",
                self.leaf_layout.event_bytes(),
                event.len()
            )));
        }
        Ok(())
    }

    /// Section 4.3's spare room for a late event: with a DRAM flank, an event
    /// inside the flank leaf's time range is inserted there in order.
    /// `None`: not taken (PMem flank, empty leaf, or older than the leaf).
    pub fn insert_late_in_flank(&mut self, event: &[u8]) -> Result<Option<AppendOutcome>, EventError> {
        self.check_event_len(event)?;
        if self.flank.is_pmem() || self.flank.count(0) == 0 {
            return Ok(None);
        }
        let ts = timestamp_of(event);
        if ts < self.flank.leaf().ts_min() {
            return Ok(None);
        }
        let full = self.flank.insert_event_ordered(event)?;
        let seq = self.events;
        self.events += 1;
        self.newest_ts = self.newest_ts.max(ts);
        self.stats.late_in_flank += 1;
        if full {
            self.settle()?;
        }
        Ok(Some(AppendOutcome::Appended { seq, durable_through: self.durable_through() }))
    }

    /// Writes out the flank leaf if it holds events (and full parents).
    fn write_out_flank_leaf(&mut self) -> Result<bool, EventError> {
        if self.flank.count(0) == 0 {
            return Ok(false);
        }
        self.complete_level(0)?;
        self.settle()?;
        Ok(true)
    }

    /// Merges `events` (in application-time order, ties in arrival order:
    /// the queue's `sorted()`) of queue generation `generation` into the
    /// tree and records the generation (module comment). The caller then
    /// truncates the queue.
    pub fn merge_ooo(&mut self, events: &EventList, generation: u64) -> Result<OooMergeReport, EventError> {
        if !events.is_empty() && events.event_bytes() != self.leaf_layout.event_bytes() {
            return Err(EventError::invalid("the queue's events belong to another schema"));
        }
        let mut report = OooMergeReport { generation, ..OooMergeReport::default() };
        let all: Vec<&[u8]> = events.iter().collect();
        if all.windows(2).any(|w| timestamp_of(w[0]) > timestamp_of(w[1])) {
            return Err(EventError::invalid("merge input is not in timestamp order"));
        }
        if !all.is_empty() {
            report.flank_write_outs += u64::from(self.write_out_flank_leaf()?);
        }
        let split = all.partition_point(|e| timestamp_of(e) < self.newest_ts);
        let (older, newer) = all.split_at(split);
        let mut i = 0;
        while i < older.len() {
            let path = self.path_for_ts(timestamp_of(older[i]))?;
            let mut j = i + 1;
            while j < older.len() && self.path_for_ts(timestamp_of(older[j]))?.leaf == path.leaf {
                j += 1;
            }
            self.merge_into_leaf(path, Vec::new(), &older[i..j], &mut report)?;
            self.events += (j - i) as u64;
            report.events_into_leaves += (j - i) as u64;
            i = j;
        }
        for e in newer {
            match self.append(e)? {
                AppendOutcome::Appended { .. } => report.events_appended += 1,
                AppendOutcome::Late { ts, newest_ts } => {
                    return Err(EventError::invalid(format!("merge append of {ts} late after {newest_ts}")))
                }
            }
        }
        report.flank_write_outs += u64::from(self.write_out_flank_leaf()?);
        self.flank.persist_pending(0)?;
        self.merged_ooo_generation = generation;
        self.flank.set_merged_ooo_generation(generation);
        report.events_merged = all.len() as u64;
        self.stats.ooo_merges += 1;
        self.stats.ooo_events_merged += report.events_merged;
        Ok(report)
    }

    /// Rewrites the completed leaf of `path` with `carry` (events from its
    /// left neighbour, first) and `add` merged in; hands what exceeds the
    /// capacity to the next leaf, cascading.
    fn merge_into_leaf(
        &mut self,
        mut path: LeafPath,
        mut carry: Vec<Vec<u8>>,
        mut add: &[&[u8]],
        report: &mut OooMergeReport,
    ) -> Result<(), EventError> {
        loop {
            if path.leaf == self.flank.id(0) {
                // The flank leaf (empty when the merge began): its events, the
                // carried ones and `add`, re-appended in order.
                let leaf = self.flank.leaf();
                let (id, prev) = (leaf.id(), leaf.prev());
                let mut mine: Vec<Vec<u8>> = carry;
                mine.extend(leaf.iter().map(<[u8]>::to_vec));
                let merged = merge_in(mine, add);
                self.flank.init_level(0, id, prev)?;
                for e in &merged {
                    if self.flank.append_event(e)? {
                        self.settle()?;
                    }
                }
                return Ok(());
            }
            let old = self.storage.read(path.leaf)?;
            let leaf = LeafNode::open(old.as_slice(), &self.leaf_layout)?;
            let mut mine: Vec<Vec<u8>> = carry;
            mine.extend(leaf.iter().map(<[u8]>::to_vec));
            let mut merged = merge_in(mine, add);
            let (prev, next) = (leaf.prev(), leaf.next());
            let capacity = self.leaf_layout.capacity();
            let overflow = if merged.len() > capacity { merged.split_off(capacity) } else { Vec::new() };
            let mut buf = new_node_buffer();
            {
                let mut fresh = LeafNode::init(buf.as_mut_slice(), &self.leaf_layout, path.leaf)?;
                for e in &merged {
                    fresh.insert_ordered(e)?;
                }
                fresh.set_prev(prev)?;
                fresh.set_next(next)?;
                fresh.seal();
            }
            let aggs = LeafNode::open(buf.as_slice(), &self.leaf_layout)?.aggregates(&self.config.spec)?;
            self.aggs.put(&self.config.spec, path.leaf, &aggs)?;
            self.storage.write_node(path.leaf, &buf)?;
            report.leaves_rewritten += 1;
            self.stats.leaves_rewritten += 1;
            self.refresh_path(&path.steps, path.leaf, aggs, report)?;
            if overflow.is_empty() {
                return Ok(());
            }
            report.events_carried += overflow.len() as u64;
            self.stats.events_carried += overflow.len() as u64;
            path = self.next_leaf_path(&path)?.ok_or_else(|| {
                EventError::corruption(
                    format!("leaf {}", path.leaf),
                    "a leaf at capacity has no right neighbour",
                )
            })?;
            carry = overflow;
            add = &[];
        }
    }

    /// Gives the entries on `steps` (bottom-up) the recomputed aggregates
    /// and key of their child, from `child` with `aggs` up to the first
    /// flank node.
    fn refresh_path(
        &mut self,
        steps: &[PathStep],
        mut child: NodeId,
        mut aggs: Aggregates,
        report: &mut OooMergeReport,
    ) -> Result<(), EventError> {
        for step in steps.iter().rev() {
            let Some(i) = step.entry else { return Ok(()) };
            let spec = self.config.spec.clone();
            let inline = self.aggs.is_inline();
            if !inline {
                self.aggs.put(&spec, child, &aggs)?;
            }
            let edit = |node: &mut IndexNode<&mut [u8]>| -> Result<(), EventError> {
                if node.child_at(i) != Some(child) {
                    return Err(EventError::corruption(
                        format!("index {}", node.id()),
                        format!("entry {i} does not lead to {child}"),
                    ));
                }
                if inline {
                    node.set_aggregates(i, &aggs)
                } else {
                    node.set_key(i, aggs.ts_min)?;
                    node.widen_ts_max(aggs.ts_max);
                    Ok(())
                }
            };
            if step.flank {
                self.flank.rewrite_entry(step.level, i, edit)?;
                self.running[step.level] = self.entries_aggregate(step.level)?;
                return Ok(());
            }
            let mut buf = self.storage.read(step.id)?.as_ref().clone();
            {
                let mut node = IndexNode::open(buf.as_mut_slice(), &self.index_layout)?;
                edit(&mut node)?;
                node.seal();
            }
            let node = IndexNode::open(buf.as_slice(), &self.index_layout)?;
            let mut total = Aggregates::empty(&spec);
            for k in 0..node.len() {
                total.merge(&self.aggs.of_entry(&spec, &node, k)?);
            }
            self.storage.write_node(step.id, &buf)?;
            report.index_nodes_rewritten += 1;
            child = step.id;
            aggs = total;
        }
        Ok(())
    }
}

/// `mine` (in order) with `add` (in order) merged in, `mine` first on ties.
fn merge_in(mine: Vec<Vec<u8>>, add: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(mine.len() + add.len());
    let mut add_iter = add.iter().peekable();
    for e in mine {
        let ts = timestamp_of(&e);
        while add_iter.peek().is_some_and(|a| timestamp_of(a) < ts) {
            out.push(add_iter.next().expect("peeked").to_vec());
        }
        out.push(e);
    }
    out.extend(add_iter.map(|a| a.to_vec()));
    out
}
