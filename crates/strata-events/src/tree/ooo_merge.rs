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
//!   2. the older events are merged in one pass (`ooo_pass`): cut into
//!      *runs* of consecutive leaves they and the carries of overflowing
//!      leaves reach, each leaf rewritten at most once, leaves nothing
//!      reaches untouched (the paper's RD1), no node splits;
//!   3. events not older than the newest are appended;
//!   4. the flank leaf is written out again (merged events never sit in a
//!      DRAM flank) and the queue's generation recorded (PMem flank header
//!      `merged_ooo_generation`), after which the caller truncates the queue.
//!
//! With the flank on PMem every phase of 2 and 3 is redoable: a redo record
//! in the flank header ([`super::merge_record`]) names the current step,
//! persisted before the step writes anything; recovery keeps an unfinished
//! merge pending ([`TabTree::pending_ooo_merge`]) until the caller passes
//! the queue's events again ([`TabTree::resume_ooo_merge`]), which redoes
//! the current step and runs the rest (a version-2 record with the
//! version-2 steps of `ooo_steps`). A crash between 4 and the truncation is
//! handled by the queue's `discard_if_merged`. With a DRAM flank nothing is
//! recorded (its events are not durable anyway).

use crate::event::timestamp_of;
use crate::ids::EventError;
use crate::ooo::EventList;

use super::merge_record::{record, MergeRecord, MergeStep};
use super::ooo_steps::StepOutcome;
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
    /// Rewrites of a leaf this merge had rewritten already.
    pub leaves_rewritten_twice: u64,
    /// Events moved to a right neighbour by leaves at capacity.
    pub events_carried: u64,
    /// Early write-outs of the flank leaf (before and after).
    pub flank_write_outs: u64,
    /// The queue generation recorded.
    pub generation: u64,
}

/// An out-of-order merge a crash interrupted (PMem flank): the tree is not
/// consistent until [`TabTree::resume_ooo_merge`] finishes it with the
/// queue's events of `generation`; until then appends and merges are refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PendingOooMerge {
    pub generation: u64,
    /// Events of the merge input (the queue's `sorted()`).
    pub input_events: u64,
}

/// A pending merge and the step to redo.
#[derive(Copy, Clone, Debug)]
pub(crate) struct MergeResume {
    pub(crate) generation: u64,
    pub(crate) input_events: u64,
    pub(crate) record: MergeRecord,
}

impl TabTree {
    /// The out-of-order queue generation the durable tree holds (0: none);
    /// recovery passes it to the queue's `discard_if_merged`.
    pub fn merged_ooo_generation(&self) -> u64 {
        self.merged_ooo_generation
    }

    pub(crate) fn check_event_len(&self, event: &[u8]) -> Result<(), EventError> {
        if event.len() != self.leaf_layout.event_bytes() {
            return Err(EventError::invalid(format!(
                "an event of this stream has {} bytes, got {}",
                self.leaf_layout.event_bytes(),
                event.len()
            )));
        }
        Ok(())
    }

    /// Whether [`TabTree::insert_late_in_flank`] would take a late event of
    /// timestamp `ts` (a DRAM flank whose leaf holds events not newer than it).
    pub fn flank_takes_late(&self, ts: i64) -> bool {
        !self.flank.is_pmem() && self.flank.count(0) > 0 && ts >= self.flank.leaf().ts_min()
    }

    /// Section 4.3's spare room for a late event: with a DRAM flank, an event
    /// inside the flank leaf's time range is inserted there in order.
    /// `None`: not taken (PMem flank, empty leaf, or older than the leaf).
    pub fn insert_late_in_flank(&mut self, event: &[u8]) -> Result<Option<AppendOutcome>, EventError> {
        self.check_event_len(event)?;
        let ts = timestamp_of(event);
        if !self.flank_takes_late(ts) {
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
    pub(crate) fn write_out_flank_leaf(&mut self) -> Result<bool, EventError> {
        if self.flank.count(0) == 0 {
            return Ok(false);
        }
        self.complete_level(0)?;
        self.settle()?;
        Ok(true)
    }

    /// Counts a rewrite of `leaf` by the merge in progress.
    pub(crate) fn note_leaf_rewritten(&mut self, leaf: crate::ids::NodeId, report: &mut OooMergeReport) {
        report.leaves_rewritten += 1;
        self.stats.leaves_rewritten += 1;
        if !self.merge_rewritten.insert(leaf) {
            report.leaves_rewritten_twice += 1;
            self.stats.leaves_rewritten_twice += 1;
        }
    }

    /// The merge a crash interrupted, if any (see [`PendingOooMerge`]).
    pub fn pending_ooo_merge(&self) -> Option<PendingOooMerge> {
        self.pending_merge.map(|p| PendingOooMerge { generation: p.generation, input_events: p.input_events })
    }

    /// `Err` while a merge is pending.
    pub(crate) fn check_no_pending_merge(&self) -> Result<(), EventError> {
        match self.pending_merge {
            None => Ok(()),
            Some(p) => Err(EventError::invalid(format!(
                "the out-of-order merge of generation {} was interrupted: resume it first",
                p.generation
            ))),
        }
    }

    /// The merge input as event slices, checked (schema, time order).
    fn merge_input<'e>(&self, events: &'e EventList) -> Result<Vec<&'e [u8]>, EventError> {
        if !events.is_empty() && events.event_bytes() != self.leaf_layout.event_bytes() {
            return Err(EventError::invalid("the queue's events belong to another schema"));
        }
        let all: Vec<&[u8]> = events.iter().collect();
        if all.windows(2).any(|w| timestamp_of(w[0]) > timestamp_of(w[1])) {
            return Err(EventError::invalid("merge input is not in timestamp order"));
        }
        Ok(all)
    }

    /// Merges `events` (in application-time order, ties in arrival order:
    /// the queue's `sorted()`) of queue generation `generation` into the
    /// tree and records the generation (module comment). The caller then
    /// truncates the queue.
    pub fn merge_ooo(&mut self, events: &EventList, generation: u64) -> Result<OooMergeReport, EventError> {
        self.check_no_pending_merge()?;
        let all = self.merge_input(events)?;
        let mut report = OooMergeReport { generation, ..OooMergeReport::default() };
        self.merge_rewritten.clear();
        let mut recorded = false;
        if !all.is_empty() {
            report.flank_write_outs += u64::from(self.write_out_flank_leaf()?);
            let first = self.next_chunk(&all, 0)?;
            #[cfg(any(test, feature = "crashtest"))]
            let skip = super::ooo_steps::merge_bug(super::ooo_steps::MergeBug::NoRedoRecord);
            #[cfg(not(any(test, feature = "crashtest")))]
            let skip = false;
            recorded = self.flank.is_pmem() && !skip;
            if recorded {
                self.flank.begin_merge(generation, all.len() as u64, &first);
            }
            self.run_steps(&all, first, recorded, &mut report)?;
        }
        self.finish_merge(generation, all.len(), recorded, &mut report)?;
        Ok(report)
    }

    /// Finishes the merge a crash interrupted ([`TabTree::pending_ooo_merge`])
    /// with `events`, the queue's `sorted()` of the pending generation:
    /// redoes the recorded step, runs the rest, records the generation.
    pub fn resume_ooo_merge(&mut self, events: &EventList) -> Result<OooMergeReport, EventError> {
        let Some(pending) = self.pending_merge else {
            return Err(EventError::invalid("no out-of-order merge is pending"));
        };
        let all = self.merge_input(events)?;
        if all.len() as u64 != pending.input_events {
            return Err(EventError::invalid(format!(
                "the pending merge of generation {} has {} input events; {} were passed",
                pending.generation,
                pending.input_events,
                all.len()
            )));
        }
        self.pending_merge = None;
        self.merge_rewritten.clear();
        let mut report = OooMergeReport { generation: pending.generation, ..OooMergeReport::default() };
        let done = self
            .run_steps(&all, pending.record, true, &mut report)
            .and_then(|()| self.finish_merge(pending.generation, all.len(), true, &mut report));
        if let Err(e) = done {
            self.pending_merge = Some(pending);
            return Err(e);
        }
        Ok(report)
    }

    /// Runs steps from `rec` until the input is in the tree, recording each
    /// step before it runs (if `recorded`).
    fn run_steps(
        &mut self,
        all: &[&[u8]],
        mut rec: MergeRecord,
        recorded: bool,
        report: &mut OooMergeReport,
    ) -> Result<(), EventError> {
        loop {
            let (from, to) = (rec.done as usize, rec.done as usize + rec.chunk as usize);
            let chunk = all.get(from..to).ok_or_else(|| {
                EventError::corruption(
                    "out-of-order merge",
                    format!("step of input events {from}..{to} in an input of {}", all.len()),
                )
            })?;
            let outcome = match rec.step {
                MergeStep::Leaf { leaf, before, carry } => {
                    self.run_leaf_step(leaf, before, carry, chunk, report)?
                }
                MergeStep::Append { events_before, carry } => {
                    self.run_append_step(events_before, carry, chunk, report)?
                }
                MergeStep::ShiftTail { .. } | MergeStep::ShiftLeaf { .. } => {
                    StepOutcome::RunDone(self.run_shift(all, rec, recorded, report)?)
                }
                MergeStep::RefreshRun { first, newest_ts } => {
                    StepOutcome::Record(self.refresh_run(all, rec.done as usize, first, newest_ts, report)?)
                }
            };
            rec = match outcome {
                StepOutcome::Next(step) => MergeRecord { step, ..rec },
                StepOutcome::Record(next) => next,
                StepOutcome::ChunkDone if to == all.len() => return Ok(()),
                StepOutcome::ChunkDone => self.next_chunk(all, to)?,
                StepOutcome::RunDone(end) if end == all.len() => return Ok(()),
                StepOutcome::RunDone(end) => self.next_chunk(all, end)?,
            };
            if recorded {
                self.flank.write_merge_record(&rec)?;
            }
        }
    }

    /// The first step of the chunk starting at input event `done`: the
    /// run of the one-pass merge (`ooo_pass`) that starts there, or all the
    /// rest to append once the rest is not older than the newest.
    fn next_chunk(&self, all: &[&[u8]], done: usize) -> Result<MergeRecord, EventError> {
        if timestamp_of(all[done]) >= self.newest_ts {
            return record(
                done,
                all.len() - done,
                MergeStep::Append { events_before: self.events, carry: None },
            );
        }
        self.first_run_record(all, done)
    }

    /// Step 5 (module comment) and the end of the redo record.
    fn finish_merge(
        &mut self,
        generation: u64,
        input_events: usize,
        recorded: bool,
        report: &mut OooMergeReport,
    ) -> Result<(), EventError> {
        report.flank_write_outs += u64::from(self.write_out_flank_leaf()?);
        self.flank.persist_pending(0)?;
        self.merged_ooo_generation = generation;
        self.flank.set_merged_ooo_generation(generation);
        if recorded {
            self.flank.end_merge();
        }
        report.events_merged = input_events as u64;
        report.events_into_leaves = report.events_merged.saturating_sub(report.events_appended);
        self.stats.ooo_merges += 1;
        self.stats.ooo_events_merged += report.events_merged;
        Ok(())
    }
}
