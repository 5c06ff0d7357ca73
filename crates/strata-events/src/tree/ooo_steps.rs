//! The steps of a flank-format-2 out-of-order merge (chronicledb-pmem.txt
//! section 4.3, third step, made redoable; protocol:
//! `docs/format/events-flank.md`, "Version 2 merges"), kept to finish a merge
//! a version-2 build left pending: merges now run in one pass (`ooo_pass`),
//! and only append steps without a carry are still started here. Each step is
//! a function of what it read before it began, named by its [`MergeRecord`],
//! so running it again after a crash writes the same result:
//!
//! - a leaf step reads the leaf's previous version at its recorded address
//!   (never the current one), merges in the carried events or the chunk,
//!   writes the leaf back under its id (a new version at a new address),
//!   aggregates first with the PMem array, then gives the entries on its
//!   path their child's recomputed key and aggregates (completed index
//!   nodes rewritten: out of place on SSD; in place in the PMem array, where
//!   only the entry and header words change and the step's redo rewrites
//!   them from the child; the flank entry through the entry journal);
//! - an append step appends the events past the tree's count at its start.
//!
//! Events past a leaf's capacity are carried: the next step's record names
//! the source version and how many of its last events move.

use crate::aggregate::Aggregates;
use crate::event::timestamp_of;
use crate::ids::{EventError, NodeId};
use crate::node::{new_node_buffer, IndexNode, LeafNode};

use super::merge_record::{MergeCarry, MergeStep};
use super::ooo_merge::OooMergeReport;
use super::ooo_path::PathStep;
use super::storage::NodeStorage;
use super::{AppendOutcome, TabTree};

/// What follows a step.
pub(crate) enum StepOutcome {
    /// Another step of the same chunk.
    Next(MergeStep),
    /// The next record, of the same run (one-pass merge).
    Record(super::merge_record::MergeRecord),
    /// A run is in the tree; its input ended at this input event.
    RunDone(usize),
    /// The chunk is in the tree.
    ChunkDone,
}

impl TabTree {
    /// The events a step receives from `carry`: the last `count` of the
    /// source's previous version, with `chunk` merged in first if the
    /// source was the chunk's first leaf.
    pub(crate) fn carried_events(
        &self,
        carry: &MergeCarry,
        chunk: &[&[u8]],
    ) -> Result<Vec<Vec<u8>>, EventError> {
        let (id, bytes) = self.storage.read_leaf_at(carry.source)?;
        let source = LeafNode::open(bytes.as_slice(), &self.leaf_layout)?;
        let mine: Vec<Vec<u8>> = source.iter().map(<[u8]>::to_vec).collect();
        let mut all = if carry.source_first { merge_in(&mine, chunk) } else { mine };
        let count = carry.count as usize;
        if count == 0 || count > all.len() {
            return Err(EventError::corruption(
                format!("merge carry from {id} at {}", carry.source),
                format!("{count} events carried from a version of {}", all.len()),
            ));
        }
        Ok(all.split_off(all.len() - count))
    }

    /// A leaf step (module comment).
    pub(crate) fn run_leaf_step(
        &mut self,
        leaf: NodeId,
        before: crate::block_store::PhysAddr,
        carry: Option<MergeCarry>,
        chunk: &[&[u8]],
        report: &mut OooMergeReport,
    ) -> Result<StepOutcome, EventError> {
        #[cfg(any(test, feature = "crashtest"))]
        let old = if merge_bug(MergeBug::RedoFromCurrentLeaf) {
            self.storage.read(leaf)?.as_ref().clone()
        } else {
            self.leaf_version(leaf, before)?
        };
        #[cfg(not(any(test, feature = "crashtest")))]
        let old = self.leaf_version(leaf, before)?;
        let old_leaf = LeafNode::open(old.as_slice(), &self.leaf_layout)?;
        if old_leaf.is_empty() {
            return Err(EventError::corruption(
                format!("leaf {leaf} at {before}"),
                "a completed leaf is empty",
            ));
        }
        let mut mine = match &carry {
            Some(c) => self.carried_events(c, chunk)?,
            None => Vec::new(),
        };
        let carried_in = mine.len();
        mine.extend(old_leaf.iter().map(<[u8]>::to_vec));
        let add: &[&[u8]] = if carry.is_none() { chunk } else { &[] };
        let mut merged = merge_in(&mine, add);
        let capacity = self.leaf_layout.capacity();
        let overflow = merged.len().saturating_sub(capacity);
        if carry.is_some() && overflow > old_leaf.len() {
            return Err(EventError::invalid(format!(
                "{carried_in} events carried into leaf {leaf} of {} would carry its carry on",
                old_leaf.len()
            )));
        }
        merged.truncate(capacity);
        let mut buf = new_node_buffer();
        {
            let mut fresh = LeafNode::init(buf.as_mut_slice(), &self.leaf_layout, leaf)?;
            for e in &merged {
                fresh.insert_ordered(e)?;
            }
            fresh.set_prev(old_leaf.prev())?;
            fresh.set_next(old_leaf.next())?;
            fresh.seal();
        }
        let hint = old_leaf.ts_min();
        let aggs = LeafNode::open(buf.as_slice(), &self.leaf_layout)?.aggregates(&self.config.spec)?;
        self.aggs.put(&self.config.spec, leaf, &aggs)?;
        self.storage.write_node(leaf, &buf)?;
        self.note_leaf_rewritten(leaf, report);
        let path = self.path_to_leaf(leaf, hint)?;
        self.refresh_path(&path.steps, leaf, aggs, report)?;
        self.recount()?;
        if overflow == 0 {
            return Ok(StepOutcome::ChunkDone);
        }
        report.events_carried += overflow as u64;
        self.stats.events_carried += overflow as u64;
        let next = self.next_leaf_path(&path)?.ok_or_else(|| {
            EventError::corruption(format!("leaf {leaf}"), "a leaf at capacity has no right neighbour")
        })?;
        let carry =
            Some(MergeCarry { source: before, source_first: carry.is_none(), count: overflow as u32 });
        Ok(StepOutcome::Next(if next.leaf == self.flank.id(0) {
            MergeStep::Append { events_before: self.events, carry }
        } else {
            MergeStep::Leaf { leaf: next.leaf, before: self.storage.leaf_addr(next.leaf)?, carry }
        }))
    }

    /// The version of `leaf` at `before`, checked to be that leaf's.
    fn leaf_version(
        &self,
        leaf: NodeId,
        before: crate::block_store::PhysAddr,
    ) -> Result<Vec<u8>, EventError> {
        let (id, bytes) = self.storage.read_leaf_at(before)?;
        if id != leaf {
            return Err(EventError::corruption(
                format!("merge step of leaf {leaf}"),
                format!("its previous version at {before} belongs to {id}"),
            ));
        }
        Ok(bytes)
    }

    /// An append step (module comment); carried events are followed by a
    /// write-out of the flank leaf, so it is empty for the next chunk.
    pub(crate) fn run_append_step(
        &mut self,
        events_before: u64,
        carry: Option<MergeCarry>,
        chunk: &[&[u8]],
        report: &mut OooMergeReport,
    ) -> Result<StepOutcome, EventError> {
        let events: Vec<Vec<u8>> = match &carry {
            Some(c) => self.carried_events(c, chunk)?,
            None => chunk.iter().map(|e| e.to_vec()).collect(),
        };
        let already =
            self.events.checked_sub(events_before).filter(|&a| a <= events.len() as u64).ok_or_else(
                || {
                    EventError::corruption(
                        "out-of-order merge",
                        format!(
                            "an append step of {} events began at {events_before} events; the tree holds {}",
                            events.len(),
                            self.events
                        ),
                    )
                },
            )?;
        for e in &events[already as usize..] {
            // Carried events may be older than the newest (it may be among
            // them): they go into the emptied flank leaf in order.
            let outcome = if carry.is_some() { self.push_event(e)? } else { self.append(e)? };
            match outcome {
                AppendOutcome::Appended { .. } => {
                    if carry.is_none() {
                        report.events_appended += 1;
                    }
                }
                AppendOutcome::Late { ts, newest_ts } => {
                    return Err(EventError::invalid(format!("merge append of {ts} late after {newest_ts}")))
                }
            }
        }
        if carry.is_some() {
            report.flank_write_outs += u64::from(self.write_out_flank_leaf()?);
        }
        Ok(StepOutcome::ChunkDone)
    }

    /// Gives the entries on `steps` (bottom-up) the recomputed aggregates
    /// and key of their child, from `child` with `aggs` up to the first
    /// flank node.
    pub(crate) fn refresh_path(
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
pub(crate) fn merge_in<E: AsRef<[u8]>>(mine: &[E], add: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(mine.len() + add.len());
    let mut add_iter = add.iter().peekable();
    for e in mine {
        let ts = timestamp_of(e.as_ref());
        while add_iter.peek().is_some_and(|a| timestamp_of(a) < ts) {
            out.push(add_iter.next().expect("peeked").to_vec());
        }
        out.push(e.as_ref().to_vec());
    }
    out.extend(add_iter.map(|a| a.to_vec()));
    out
}

/// Broken merge protocols the crash tests must catch (planted by them only,
/// per thread: the crash harness sets it around each run and recovery).
#[cfg(any(test, feature = "crashtest"))]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MergeBug {
    None,
    /// Merge without the redo record: a crash leaves a partial merge.
    NoRedoRecord,
    /// Leaf steps read the leaf's current version, so a redone step merges
    /// its events a second time.
    RedoFromCurrentLeaf,
    /// Flank entries rewritten in place without the entry journal.
    NoEntryJournal,
    /// The stream truncates the queue before the tree records the merge.
    TruncateFirst,
    /// A one-pass run's tail is left in the flank leaf's unpersisted batch
    /// while its leaves are rewritten without it.
    TailNotPersisted,
    /// A redone refresh takes the newest timestamp the recovered index
    /// shows (lowered by the refresh) instead of the recorded one.
    RefreshUsesIndexNewest,
}

#[cfg(any(test, feature = "crashtest"))]
thread_local! {
    pub static MERGE_BUG: std::cell::Cell<MergeBug> = const { std::cell::Cell::new(MergeBug::None) };
}

#[cfg(any(test, feature = "crashtest"))]
pub(crate) fn merge_bug(bug: MergeBug) -> bool {
    MERGE_BUG.with(|b| b.get()) == bug
}
