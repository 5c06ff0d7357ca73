//! Insertion as continuous bulk loading on the right flank
//! (chronicledb-pmem.txt sections 2.2 and 4.1): an event is appended to the
//! flank leaf; a node that reaches its fill limit is written out and its
//! entry `(min ts, id, aggregates)` appended to its parent, recursively, with
//! a new root when the root fills.
//!
//! The write-out of the full node `x` at level `l` (steps named as in
//! `docs/format/events-flank.md`):
//! - W0: allocate its successor `y` (and a new root `r` if `x` is the root),
//!   reserve their storage slots, persist `x`'s pending entries, commit the
//!   journal record `(l, x, y, r)` (PMem flank);
//! - W1: store `x`'s aggregates (PMem array placement), then `x` itself,
//!   sealed with `next = y`, durably;
//! - W2: create the root `r` if any (slot, then height), append the entry
//!   for `x` to the parent in DRAM;
//! - W3 and W4 ([`super::flank::Flank::end_write_out`]): persist the entry,
//!   re-initialize the slot of level `l` as `y` with `prev = x`, end the
//!   journal (flank format 4: two fences, E1 and E2; formats 2 and 3: four).
//!
//! [`TabTree::redo_write_out`] runs W1-W4 and skips what a crash left done
//! (parent's last entry is `x`: W1 and W2 done; `x` complete in storage: W1
//! done, and the entry is made from the stored node, since E1 may have
//! re-initialized the slot), so recovery redoes a journal record
//! idempotently.

use crate::aggregate::Aggregates;
use crate::event::{self, timestamp_of};
use crate::ids::{EventError, NodeId, NodeKind};
use crate::node::{new_node_buffer, IndexNode, LeafNode, NODE_HEADER_BYTES};

use super::flank_pmem::FlankJournal;
use super::storage::NodeStorage;
use super::{AppendOutcome, TabTree};

fn kind_of(level: usize) -> NodeKind {
    if level == 0 {
        NodeKind::Leaf
    } else {
        NodeKind::Index
    }
}

impl TabTree {
    /// Appends an encoded event. In timestamp order (equal timestamps are
    /// fine); an event older than the newest gets [`AppendOutcome::Late`].
    /// A leaf that reaches its fill limit is written out before this returns.
    pub fn append(&mut self, event: &[u8]) -> Result<AppendOutcome, EventError> {
        self.check_no_pending_merge()?;
        self.check_event_len(event)?;
        let ts = timestamp_of(event);
        if ts < self.newest_ts {
            self.stats.late_events += 1;
            return Ok(AppendOutcome::Late { ts, newest_ts: self.newest_ts });
        }
        self.push_event(event)
    }

    /// Appends `event` to the flank leaf, which must not hold a newer one;
    /// it may be older than the tree's newest (a one-pass merge's carried
    /// events go into the emptied flank leaf this way).
    pub(crate) fn push_event(&mut self, event: &[u8]) -> Result<AppendOutcome, EventError> {
        let ts = timestamp_of(event);
        let full = match self.flank.append_event(event) {
            Err(EventError::Full { .. }) => {
                // A write-out failed earlier: finish it, then append.
                self.settle()?;
                self.flank.append_event(event)?
            }
            r => r?,
        };
        let seq = self.events;
        self.events += 1;
        self.newest_ts = self.newest_ts.max(ts);
        self.stats.events_appended += 1;
        if full {
            match self.settle() {
                // The event is in the tree: a write-out that finds the tree
                // at its capacity is retried, and reported, by the next append
                // (before that event goes in), so this one is not reported
                // as rejected while it is stored.
                Err(EventError::Full { .. }) => {}
                r => r?,
            }
        }
        Ok(AppendOutcome::Appended { seq, durable_through: self.durable_through() })
    }

    /// Encodes and appends an event.
    pub fn append_event(&mut self, e: &event::Event) -> Result<AppendOutcome, EventError> {
        let bytes = event::encode(self.leaf_layout.schema(), e)?;
        self.append(&bytes)
    }

    /// Persists the flank leaf's partial batch (PMem flank); returns
    /// [`TabTree::durable_through`]. With a DRAM flank nothing more can be
    /// made durable: the flank leaf's events are lost in a crash.
    pub fn sync(&mut self) -> Result<u64, EventError> {
        self.flank.persist_pending(0)?;
        Ok(self.durable_through())
    }

    /// Writes out every full flank node, bottom-up.
    pub(crate) fn settle(&mut self) -> Result<(), EventError> {
        let mut level = 0;
        while level < self.flank.height() {
            if self.flank.is_full(level) {
                self.complete_level(level)?;
            }
            level += 1;
        }
        Ok(())
    }

    /// A fresh header of node `id` at `level` (what a reserved slot holds).
    fn fresh_header(&self, id: NodeId, level: usize) -> Result<Vec<u8>, EventError> {
        let mut buf = new_node_buffer();
        if level == 0 {
            LeafNode::init(buf.as_mut_slice(), &self.leaf_layout, id)?;
        } else {
            IndexNode::init(buf.as_mut_slice(), &self.index_layout, id, level as u16)?;
        }
        buf.truncate(NODE_HEADER_BYTES);
        Ok(buf)
    }

    /// W0 and then W1-W4 for the full flank node of `level`.
    pub(crate) fn complete_level(&mut self, level: usize) -> Result<(), EventError> {
        let height = self.flank.height();
        let top = level + 1 == height;
        if top && height as u32 >= self.config.max_levels {
            return Err(EventError::Full {
                what: "TAB+-tree",
                detail: format!(
                    "the root at level {level} is full and the tree has {height} levels, the limit"
                ),
            });
        }
        let old_id = self.flank.id(level);
        let new_id = self.ids.alloc(kind_of(level))?;
        let root_id = if top { Some(self.ids.alloc(NodeKind::Index)?) } else { None };
        let header = self.fresh_header(new_id, level)?;
        self.storage.reserve(new_id, &header)?;
        if let Some(r) = root_id {
            let header = self.fresh_header(r, level + 1)?;
            self.storage.reserve(r, &header)?;
        }
        self.flank.persist_pending(level)?;
        let journal = FlankJournal { level: level as u32, old_id, new_id, root_id };
        self.flank.begin_journal(&journal)?;
        self.redo_write_out(&journal, false)
    }

    /// Whether the parent of `level` already ends with the entry for `id`.
    pub(crate) fn parent_ends_with(&self, level: usize, id: NodeId) -> bool {
        if level + 1 >= self.flank.height() {
            return false;
        }
        let parent = self.flank.index(level + 1);
        parent.len().checked_sub(1).and_then(|i| parent.child_at(i)) == Some(id)
    }

    /// The node of flank `level`, sealed with `next`, and its aggregates.
    pub(crate) fn sealed_copy(
        &self,
        level: usize,
        next: NodeId,
    ) -> Result<(Vec<u8>, Aggregates), EventError> {
        let mut buf = self.flank.bytes(level).to_vec();
        let aggs = if level == 0 {
            let mut leaf = LeafNode::open(buf.as_mut_slice(), &self.leaf_layout)?;
            leaf.set_next(Some(next))?;
            let aggs = leaf.aggregates(&self.config.spec)?;
            leaf.seal();
            aggs
        } else {
            let mut node = IndexNode::open(buf.as_mut_slice(), &self.index_layout)?;
            node.set_next(Some(next))?;
            node.seal();
            self.running[level].clone()
        };
        Ok((buf, aggs))
    }

    /// W1-W4 of a write-out (module comment). `recovering` checks what a
    /// crash may have left done; the insert path knows nothing was.
    pub(crate) fn redo_write_out(&mut self, j: &FlankJournal, recovering: bool) -> Result<(), EventError> {
        let level = j.level as usize;
        let x = j.old_id;
        if !(recovering && self.parent_ends_with(level, x)) {
            let aggs = if recovering && self.storage.is_complete(x)? {
                // W1 is done: the slot may already be re-initialized (flank
                // format 4 writes the successor's header with the parent's
                // entry), so the entry comes from the stored node.
                self.stored_aggregates(x)?
            } else {
                self.store_written_out(level, j.new_id, recovering)?
            };
            if let Some(r) = j.root_id {
                if self.flank.height() == level + 1 {
                    self.flank.init_level(level + 1, r, None)?;
                    self.flank.persist_height()?;
                    self.running.push(Aggregates::empty(&self.config.spec));
                    self.stats.levels_added += 1;
                }
            }
            if level + 1 >= self.flank.height() {
                return Err(EventError::corruption(
                    format!("flank level {level}"),
                    format!("the root {x} is written out without a new root"),
                ));
            }
            self.flank.stage_entry(level + 1, aggs.ts_min, x, &aggs)?;
            self.running[level + 1].merge(&aggs);
        }
        self.flank.end_write_out(level, j.new_id, Some(x))?;
        self.running[level] = Aggregates::empty(&self.config.spec);
        Ok(())
    }

    /// W1: the flank node of `level`, sealed with `next`, stored durably
    /// after its aggregates (PMem array placement); returns them.
    fn store_written_out(
        &mut self,
        level: usize,
        next: NodeId,
        recovering: bool,
    ) -> Result<Aggregates, EventError> {
        let x = self.flank.id(level);
        let (bytes, aggs) = self.sealed_copy(level, next)?;
        if aggs.count == 0 {
            return Err(EventError::corruption(
                format!("flank node {x}"),
                "an empty node is being written out",
            ));
        }
        self.aggs.put(&self.config.spec, x, &aggs)?;
        if !(recovering && self.storage.is_complete(x)?) {
            self.storage.write_node(x, &bytes)?;
        }
        match x.kind {
            NodeKind::Leaf => self.stats.leaves_written += 1,
            NodeKind::Index => self.stats.index_nodes_written += 1,
        }
        Ok(aggs)
    }

    /// The aggregates of the completed node `id` as storage holds it: a
    /// leaf's from its events, an index node's merged from its entries.
    pub(crate) fn stored_aggregates(&self, id: NodeId) -> Result<Aggregates, EventError> {
        let bytes = self.storage.read(id)?;
        match id.kind {
            NodeKind::Leaf => {
                LeafNode::open(bytes.as_slice(), &self.leaf_layout)?.aggregates(&self.config.spec)
            }
            NodeKind::Index => {
                let node = IndexNode::open(bytes.as_slice(), &self.index_layout)?;
                self.index_aggregate(&node)
            }
        }
    }
}
