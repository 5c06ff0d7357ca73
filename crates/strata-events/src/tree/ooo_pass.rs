//! The one-pass out-of-order merge (chronicledb-pmem.txt section 4.3, third
//! step, and research direction RD1 of section 6, "merging only certain OOO
//! regions"; protocol: `docs/format/events-flank.md`, "Out-of-order merges").
//!
//! The merge input's events older than the tree's newest are cut into
//! *runs*. A run starts at the completed leaf `a` its first event belongs in
//! and covers the leaves after it for as long as the leaves overflow: leaf
//! `k` receives what the leaves before it in the run could not hold
//! (`carry_in`), its own events and the input events that belong in it, keeps
//! at most its capacity (the spare room fills first) and hands the rest on.
//! A run ends at the first leaf with room for everything, or at the flank,
//! whose leaf then receives the rest (the *tail*). Leaves no late event
//! reaches are not touched, and no leaf is rewritten twice in one merge. No
//! node splits: the paper's time-ordered, sequential node layout stays.
//!
//! The events of a run, in order, are one sequence `S`: the stable merge of
//! its leaves' events (before the pass) with its input events, a leaf's own
//! events first on equal timestamps (they arrived earlier). Leaf `k`'s new
//! contents are `keep_k` events of `S`. A run runs in three phases, each
//! redoable from its step record because every phase reads only leaf
//! versions from before the pass:
//!
//! 1. *Refresh* (one record): walking the run left to right, `S` is merged
//!    forwards and each leaf's index entries get the key and aggregates of
//!    its new contents (keys are only lowered, so the index stays sorted
//!    and the path search by timestamp finds every leaf also when half
//!    refreshed). The leaves themselves are untouched. This walk also finds
//!    where the run ends and how many events reach the flank (the *tail*).
//! 2. *Tail*: those events are appended to the flank leaf. They are not
//!    older than the last run leaf's new key, so write-outs append sorted
//!    index entries.
//! 3. *Shift*, right to left: leaf `e` (the run's last), `e - 1`, ..., `a`
//!    are rewritten. When leaf `k` is written every leaf left of it still
//!    holds its version from before the pass, so `k`'s contents are read
//!    backwards from those versions and the input: the last `skip + keep`
//!    events of `S` through `k`, minus the last `skip`. A step record names
//!    the leaf, its version's address, `keep`, `skip` and the input end; the
//!    next step's record follows from the leaf's version before the pass:
//!    `carry_in = keep + skip - own events - input events at or after its
//!    first timestamp`. A run's first leaf is the first one, walking left,
//!    whose first timestamp is not after the run's first input event (the
//!    leaf the index routes that event to).

use crate::block_store::PhysAddr;
use crate::event::timestamp_of;
use crate::ids::{EventError, NodeId};
use crate::node::{new_node_buffer, LeafNode};

use super::merge_record::{record, MergeRecord, MergeStep, MERGE_KEEP_MAX};
use super::ooo_merge::OooMergeReport;
use super::ooo_steps::merge_in;
use super::storage::NodeStorage;
use super::TabTree;

/// What a shift step needs of a leaf's version before the pass.
#[derive(Copy, Clone, Debug)]
struct LeafMeta {
    id: NodeId,
    addr: PhysAddr,
    /// Its events before the pass.
    count: usize,
    prev: Option<NodeId>,
    next: Option<NodeId>,
    ts_min: i64,
    /// The run's first leaf (module comment).
    first: bool,
}

/// Reads a run's sequence `S` backwards: the old versions of its leaves
/// right to left, merged with its input events (`input_start..input_end`).
struct RunReader {
    input_start: usize,
    input_end: usize,
    /// Timestamp of the run's first input event: the leaf whose first
    /// timestamp is not after it is the run's first.
    first_ts: i64,
    /// The unread events of the leaf being read (the last of `loaded`).
    events: Vec<Vec<u8>>,
    /// Every leaf loaded, right to left.
    loaded: Vec<LeafMeta>,
}

impl RunReader {
    fn current(&self) -> &LeafMeta {
        self.loaded.last().expect("a reader holds a leaf")
    }

    fn meta(&self, id: NodeId) -> Result<LeafMeta, EventError> {
        self.loaded
            .iter()
            .rev()
            .find(|m| m.id == id)
            .copied()
            .ok_or_else(|| corrupt(format!("the shift of leaf {id} did not find it reading backwards")))
    }
}

fn corrupt(what: impl Into<String>) -> EventError {
    EventError::corruption("out-of-order merge", what.into())
}

impl TabTree {
    /// Loads the version of leaf `id` at `addr` into the reader.
    fn reader_load(&self, r: &mut RunReader, id: NodeId, addr: PhysAddr) -> Result<(), EventError> {
        let (stored, bytes) = self.storage.read_leaf_at(addr)?;
        if stored != id {
            return Err(corrupt(format!("the version of leaf {id} at {addr} belongs to {stored}")));
        }
        let node = LeafNode::open(bytes.as_slice(), &self.leaf_layout)?;
        if node.is_empty() {
            return Err(EventError::corruption(format!("leaf {id} at {addr}"), "a completed leaf is empty"));
        }
        r.events = node.iter().map(<[u8]>::to_vec).collect();
        r.loaded.push(LeafMeta {
            id,
            addr,
            count: node.len(),
            prev: node.prev(),
            next: node.next(),
            ts_min: node.ts_min(),
            first: node.ts_min() <= r.first_ts || node.prev().is_none(),
        });
        Ok(())
    }

    fn reader_at(
        &self,
        id: NodeId,
        addr: PhysAddr,
        input_start: usize,
        input_end: usize,
        first_ts: i64,
    ) -> Result<RunReader, EventError> {
        let mut r = RunReader { input_start, input_end, first_ts, events: Vec::new(), loaded: Vec::new() };
        self.reader_load(&mut r, id, addr)?;
        Ok(r)
    }

    /// Moves the reader to the previous leaf once its leaf is read (never
    /// past the run's first leaf). Leaves left of the one being written
    /// still hold their versions from before the pass.
    fn reader_step_left(&self, r: &mut RunReader) -> Result<(), EventError> {
        let current = *r.current();
        if !r.events.is_empty() || current.first {
            return Ok(());
        }
        let prev =
            current.prev.ok_or_else(|| corrupt(format!("leaf {} has no left neighbour", current.id)))?;
        let addr = self.storage.leaf_addr(prev)?;
        self.reader_load(r, prev, addr)
    }

    /// The next event of `S` from the back (input events last on ties).
    fn reader_next_back(&self, r: &mut RunReader, all: &[&[u8]]) -> Result<Vec<u8>, EventError> {
        let input = (r.input_end > r.input_start).then(|| all[r.input_end - 1]);
        let take_input = match (r.events.last(), input) {
            (None, None) => return Err(corrupt("a run's sequence ended before its leaves were filled")),
            (Some(own), Some(i)) => timestamp_of(i) >= timestamp_of(own),
            (own, _) => own.is_none(),
        };
        let event = if take_input {
            r.input_end -= 1;
            all[r.input_end].to_vec()
        } else {
            r.events.pop().expect("checked")
        };
        self.reader_step_left(r)?;
        Ok(event)
    }

    /// The first record of the run starting at input event `start` (older
    /// than the newest): its refresh, from the leaf the index routes that
    /// event to.
    pub(crate) fn first_run_record(&self, all: &[&[u8]], start: usize) -> Result<MergeRecord, EventError> {
        let first = self.path_for_ts(timestamp_of(all[start]))?.leaf;
        record(start, 0, MergeStep::RefreshRun { first, newest_ts: self.newest_ts })
    }

    /// Phase 1 of the run starting at input event `start` and leaf `first`
    /// (module comment); returns the record of its first shift step.
    pub(crate) fn refresh_run(
        &mut self,
        all: &[&[u8]],
        start: usize,
        first: NodeId,
        newest_ts: i64,
        report: &mut OooMergeReport,
    ) -> Result<MergeRecord, EventError> {
        let first_ts = timestamp_of(all[start]);
        #[cfg(any(test, feature = "crashtest"))]
        let newest_ts = if super::ooo_steps::merge_bug(super::ooo_steps::MergeBug::RefreshUsesIndexNewest) {
            self.newest_ts
        } else {
            newest_ts
        };
        let older_end = start + all[start..].partition_point(|e| timestamp_of(e) < newest_ts);
        let capacity = self.leaf_layout.capacity();
        let mut path = self.path_to_leaf(first, first_ts)?;
        let mut input = start;
        // Events of `S` read but not yet placed in a leaf.
        let mut pending: std::collections::VecDeque<Vec<u8>> = std::collections::VecDeque::new();
        loop {
            let leaf = path.leaf;
            if leaf == self.flank.id(0) {
                return Err(corrupt(format!(
                    "an event older than the newest belongs in the flank leaf {leaf}"
                )));
            }
            let bytes = self.storage.read(leaf)?;
            let node = LeafNode::open(bytes.as_slice(), &self.leaf_layout)?;
            let starts_run = node.ts_min() <= first_ts || node.prev().is_none();
            if node.is_empty() || starts_run != (leaf == first) {
                return Err(corrupt(format!(
                    "leaf {leaf} (first timestamp {}, {} events) disagrees with the index about timestamp {first_ts}",
                    node.ts_min(),
                    node.len()
                )));
            }
            let next = self.next_leaf_path(&path)?.filter(|p| p.leaf != self.flank.id(0));
            let end = match &next {
                None => older_end,
                Some(p) => {
                    let next_min =
                        LeafNode::open(self.storage.read(p.leaf)?.as_slice(), &self.leaf_layout)?.ts_min();
                    input + all[input..older_end].partition_point(|e| timestamp_of(e) < next_min)
                }
            };
            let own: Vec<&[u8]> = node.iter().collect();
            pending.extend(merge_in(&own, &all[input..end]));
            let keep = pending.len().min(capacity);
            let aggs = crate::aggregate::Aggregates::of_events(
                &self.config.spec,
                pending.iter().take(keep).map(Vec::as_slice),
            )?;
            self.aggs.put(&self.config.spec, leaf, &aggs)?;
            self.refresh_path(&path.steps, leaf, aggs, report)?;
            pending.drain(..keep);
            input = end;
            let fit =
                |n: usize| u32::try_from(n).map_err(|_| EventError::invalid(format!("a run of {n} events")));
            let before = self.storage.leaf_addr(leaf)?;
            if next.is_none() || pending.is_empty() {
                // The entries now count the run's new contents: the tail's
                // events are counted once appended (as after a recovery).
                self.recount()?;
            }
            match next {
                Some(p) if !pending.is_empty() => path = p,
                None if !pending.is_empty() => {
                    let count = fit(pending.len())?;
                    let step = MergeStep::ShiftTail {
                        last: leaf,
                        source: before,
                        events_before: self.events,
                        count,
                    };
                    return record(start, end - start, step);
                }
                _ => {
                    let (keep, to_flank) = (fit(keep)?, next.is_none());
                    let step = MergeStep::ShiftLeaf { leaf, before, keep, skip: 0, last: leaf, to_flank };
                    return record(start, end - start, step);
                }
            }
        }
    }

    /// Runs phases 2 and 3 of a run from `rec` (a shift-tail or shift-leaf
    /// record) to its first leaf, recording each step before it writes
    /// (if `recorded`); returns the input event where the run's input ends.
    pub(crate) fn run_shift(
        &mut self,
        all: &[&[u8]],
        mut rec: MergeRecord,
        recorded: bool,
        report: &mut OooMergeReport,
    ) -> Result<usize, EventError> {
        let start = rec.done as usize;
        let first_ts =
            timestamp_of(all.get(start).ok_or_else(|| corrupt(format!("a run at input event {start}")))?);
        let (leaf, before, skip, last) = match rec.step {
            MergeStep::ShiftTail { last, source, count, .. } => (last, source, count, last),
            MergeStep::ShiftLeaf { leaf, before, skip, last, .. } => (leaf, before, skip, last),
            _ => return Err(corrupt("a shift was asked to run another step")),
        };
        let input_end = start + rec.chunk as usize;
        if input_end > all.len() {
            return Err(corrupt(format!("a run ending at input event {input_end} of {}", all.len())));
        }
        // The planted bug reads the leaf's current version, as if it were
        // the one before the pass: a redone step then merges twice.
        #[cfg(any(test, feature = "crashtest"))]
        let before = if super::ooo_steps::merge_bug(super::ooo_steps::MergeBug::RedoFromCurrentLeaf) {
            let current = self.storage.leaf_addr(leaf)?;
            if let MergeStep::ShiftLeaf { before, .. } = &mut rec.step {
                *before = current;
            }
            current
        } else {
            before
        };
        let mut reader = self.reader_at(leaf, before, start, input_end, first_ts)?;
        let mut moved = Vec::with_capacity(skip as usize);
        for _ in 0..skip {
            moved.push(self.reader_next_back(&mut reader, all)?);
        }
        if let MergeStep::ShiftTail { events_before, count, .. } = rec.step {
            moved.reverse();
            self.append_tail(&moved, events_before)?;
            let keep = self.leaf_layout.capacity() as u32;
            rec.step = MergeStep::ShiftLeaf { leaf, before, keep, skip: count, last, to_flank: true };
            if recorded {
                self.flank.write_merge_record(&rec)?;
            }
        }
        loop {
            let MergeStep::ShiftLeaf { leaf, before, keep, skip, last, to_flank } = rec.step else {
                unreachable!("set above")
            };
            let own = reader.meta(leaf)?;
            if own.addr != before {
                return Err(corrupt(format!(
                    "leaf {leaf}'s version at {} is not the recorded {before}",
                    own.addr
                )));
            }
            let mut events = Vec::with_capacity(keep as usize);
            for _ in 0..keep {
                events.push(self.reader_next_back(&mut reader, all)?);
            }
            events.reverse();
            self.write_shifted_leaf(leaf, own.prev, own.next, &events)?;
            self.note_leaf_rewritten(leaf, report);
            report.events_carried += u64::from(skip);
            self.stats.events_carried += u64::from(skip);
            // The input events that belong in this leaf: from its first
            // timestamp on (the run's first leaf: all that are left).
            let input_end = start + rec.chunk as usize;
            let own_input_from = if own.first {
                start
            } else {
                start + all[start..input_end].partition_point(|e| timestamp_of(e) < own.ts_min)
            };
            let carry_in = (keep as usize + skip as usize)
                .checked_sub(own.count + (input_end - own_input_from))
                .ok_or_else(|| corrupt(format!("leaf {leaf} kept {keep} and moved {skip} of more events")))?;
            if own.first {
                if carry_in != 0 {
                    return Err(corrupt(format!(
                        "the run's first leaf {leaf} would receive {carry_in} events"
                    )));
                }
                self.recount()?;
                return self.run_input_end(all, start, last, to_flank);
            }
            if carry_in == 0 {
                return Err(corrupt(format!("leaf {leaf} of a run receives nothing from its left")));
            }
            let skip =
                u32::try_from(carry_in).map_err(|_| corrupt(format!("a carry of {carry_in} events")))?;
            let capacity = self.leaf_layout.capacity() as u32;
            debug_assert!(capacity <= MERGE_KEEP_MAX);
            let prev = own.prev.ok_or_else(|| corrupt(format!("leaf {leaf} has no left neighbour")))?;
            let step = MergeStep::ShiftLeaf {
                leaf: prev,
                before: reader.meta(prev)?.addr,
                keep: capacity,
                skip,
                last,
                to_flank,
            };
            rec = record(start, own_input_from - start, step)?;
            if recorded {
                self.flank.write_merge_record(&rec)?;
            }
            // The reader stands where the next leaf's contents end: nothing
            // to skip again.
        }
    }

    /// Where the input of the run starting at input event `start` and ending
    /// at leaf `last` ends: at the first event not older than the newest if
    /// `last` is the last completed leaf, else at the first event that
    /// belongs in the (untouched) leaf after `last`.
    fn run_input_end(
        &self,
        all: &[&[u8]],
        start: usize,
        last: NodeId,
        to_flank: bool,
    ) -> Result<usize, EventError> {
        let bound = if to_flank {
            self.newest_ts
        } else {
            let bytes = self.storage.read(last)?;
            let next = LeafNode::open(bytes.as_slice(), &self.leaf_layout)?
                .next()
                .ok_or_else(|| corrupt(format!("leaf {last} ends a run but has no right neighbour")))?;
            LeafNode::open(self.storage.read(next)?.as_slice(), &self.leaf_layout)?.ts_min()
        };
        Ok(start + all[start..].partition_point(|e| timestamp_of(e) < bound))
    }

    /// Writes leaf `id` anew with `events` (in order), its neighbours kept:
    /// aggregates first (PMem array placement), then the node.
    fn write_shifted_leaf(
        &mut self,
        id: NodeId,
        prev: Option<NodeId>,
        next: Option<NodeId>,
        events: &[Vec<u8>],
    ) -> Result<(), EventError> {
        let mut buf = new_node_buffer();
        {
            let mut fresh = LeafNode::init(buf.as_mut_slice(), &self.leaf_layout, id)?;
            for e in events {
                fresh.insert_ordered(e)?;
            }
            fresh.set_prev(prev)?;
            fresh.set_next(next)?;
            fresh.seal();
        }
        let aggs = LeafNode::open(buf.as_slice(), &self.leaf_layout)?.aggregates(&self.config.spec)?;
        self.aggs.put(&self.config.spec, id, &aggs)?;
        self.storage.write_node(id, &buf)
    }

    /// Appends a run's tail to the flank leaf; after a crash the events
    /// beyond `events_before` are the ones already appended.
    fn append_tail(&mut self, tail: &[Vec<u8>], events_before: u64) -> Result<(), EventError> {
        let already =
            self.events.checked_sub(events_before).filter(|&a| a <= tail.len() as u64).ok_or_else(|| {
                corrupt(format!(
                    "a tail of {} events began at {events_before} events; the tree holds {}",
                    tail.len(),
                    self.events
                ))
            })?;
        for e in &tail[already as usize..] {
            self.push_event(e)?;
        }
        // The shift steps that follow drop these events from the leaves:
        // they must be durable in the flank leaf first (the partial batch).
        #[cfg(any(test, feature = "crashtest"))]
        if super::ooo_steps::merge_bug(super::ooo_steps::MergeBug::TailNotPersisted) {
            return Ok(());
        }
        self.flank.persist_pending(0)
    }
}
