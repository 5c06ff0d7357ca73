//! [`EventStream`]: one event stream as the store, server and benchmarks use
//! it (chronicledb-pmem.txt sections 2.2 "Out-Of-Order Data" and 4.3): a
//! TAB+-tree plus an out-of-order queue, with section 4.3's three steps:
//!
//! 1. an event not older than the tree's newest is appended;
//! 2. a late event inside the DRAM flank leaf's range goes there in order
//!    (spare room; never with a PMem flank, where the shift is not
//!    crash-atomic), unless the queue holds an event with the same
//!    timestamp (it arrived first, so it must stay first);
//! 3. any other late event is pushed to the queue; a full queue is merged
//!    into the tree ([`crate::tree::TabTree::merge_ooo`]) following the
//!    queue's merge protocol: read `g` and `sorted()`, merge and make the
//!    tree durable recording `g` (PMem flank header, or
//!    [`merged_generation`] with a DRAM flank), then `truncate()`; recovery
//!    calls `discard_if_merged(recorded g)`.
//!
//! Queries see both: the tree's answer merged with the queue's in time
//! order (tree first on equal timestamps), aggregates merged (decomposable).
//!
//! Crash safety of a merge (PMem flank, format document
//! `docs/format/events-flank.md`): the tree keeps a redo record of the
//! merge's current step; a crash anywhere inside the merge leaves it
//! pending, and [`EventStream::recover`] resumes it with the queue's events
//! (still in the queue: it is truncated only after the tree recorded the
//! generation), so every queued event ends up in the tree exactly once. The
//! queue must still hold the generation after a crash: true for the PMem
//! queue (each push durable) and the flash queue (synced before a merge).
//! The DRAM queue loses its events, so with a DRAM queue and a PMem flank
//! the merge input is first written to a file ([`merge_input`]) and
//! recovery resumes from it.
//! `strata_crashtest::events_stream::StreamOooPmemCrash` checks this under
//! the PMem crash simulator.

pub mod config;
pub mod merge_input;
pub mod merged_generation;

mod queries;
#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use strata_pmem::RegionOffset;

use crate::event::{self, timestamp_of, Event};
use crate::ids::EventError;
use crate::ooo::{DramOooQueue, FlashOooConfig, FlashOooQueue, OooQueue, OooRecovery, PmemOooQueue};
use crate::tree::{AppendOutcome, FlankPlacement, OooMergeReport, TabTree, TreeRecoveryReport, TreeStats};

pub use config::{QueuePlacement, StreamConfig, StreamMedia};

/// Where [`EventStream::append`] put an event.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Placed {
    /// Appended to the tree in time order.
    Tree,
    /// Late, inserted in order into the DRAM flank leaf.
    FlankLeaf,
    /// Late, pushed to the out-of-order queue (durable on return for the
    /// PMem queue).
    Queue,
}

/// What an append did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StreamAppend {
    pub placed: Placed,
    /// The tree's [`TabTree::durable_through`] after the append (events of
    /// the tree that survive a crash).
    pub durable_through: u64,
    /// A queue merge ran during this append.
    pub merged: Option<OooMergeReport>,
}

/// What a stream did since it was created or recovered.
#[derive(Clone, Debug)]
pub struct StreamStats {
    pub tree: TreeStats,
    pub queue_variant: String,
    pub queue_events: u64,
    pub events_appended: u64,
    pub late_to_flank_leaf: u64,
    pub late_to_queue: u64,
    pub merges: u64,
    pub merge_time: Duration,
}

/// What a recovery found and how long it took.
#[derive(Clone, Debug)]
pub struct StreamRecoveryReport {
    pub tree: TreeRecoveryReport,
    pub queue: OooRecovery,
    /// The generation the tree had recorded as merged.
    pub merged_generation: u64,
    /// The queue held that generation (crash between merge and truncate) and was truncated.
    pub queue_discarded: bool,
    /// A merge the crash interrupted, finished by the recovery.
    pub merge_resumed: Option<OooMergeReport>,
    pub queue_duration: Duration,
    pub duration: Duration,
}

/// A TAB+-tree and its out-of-order queue.
pub struct EventStream {
    config: StreamConfig,
    media: StreamMedia,
    tree: TabTree,
    queue: Box<dyn OooQueue>,
    /// Time span of the queue's events (`None` if empty), for the tie check.
    queue_span: Option<(i64, i64)>,
    stats: StreamStats,
}

impl EventStream {
    /// Opens the queue; a DRAM queue (empty after any restart) starts at
    /// generation `merged + 1`.
    fn open_queue(
        config: &StreamConfig,
        media: &StreamMedia,
        create: bool,
        merged: u64,
    ) -> Result<(Box<dyn OooQueue>, OooRecovery), EventError> {
        let event_bytes = config.tree.schema.event_bytes();
        Ok(match config.queue {
            QueuePlacement::Dram => (
                Box::new(
                    DramOooQueue::new(event_bytes, config.queue_capacity_bytes)?.starting_at(merged + 1),
                ),
                OooRecovery::default(),
            ),
            QueuePlacement::Pmem(indexing) => {
                let region = media
                    .region
                    .clone()
                    .ok_or_else(|| EventError::invalid("the PMem out-of-order queue needs a region"))?;
                let (start, bytes) = config.queue_area(media.pmem_base)?;
                if create {
                    let q = PmemOooQueue::format(region, RegionOffset(start), bytes, event_bytes, indexing)?;
                    (Box::new(q), OooRecovery::default())
                } else {
                    let (q, r) = PmemOooQueue::open(region, RegionOffset(start), indexing)?;
                    (Box::new(q), r)
                }
            }
            QueuePlacement::Flash(indexing) => {
                let dir = media.queue_dir();
                if create && media.fs.exists(&dir) {
                    for f in media.fs.list_dir(&dir)? {
                        media.fs.remove(&f)?;
                    }
                }
                let fc =
                    FlashOooConfig { event_bytes, capacity_bytes: config.queue_capacity_bytes, indexing };
                let (q, r) = FlashOooQueue::open(media.fs.clone(), &dir, fc)?;
                (Box::new(q), r)
            }
        })
    }

    fn new(config: StreamConfig, media: StreamMedia, tree: TabTree, queue: Box<dyn OooQueue>) -> Self {
        let stats = StreamStats {
            tree: TreeStats::default(),
            queue_variant: queue.variant(),
            queue_events: 0,
            events_appended: 0,
            late_to_flank_leaf: 0,
            late_to_queue: 0,
            merges: 0,
            merge_time: Duration::ZERO,
        };
        EventStream { config, media, tree, queue, queue_span: None, stats }
    }

    fn check_media(config: &StreamConfig, media: &StreamMedia) -> Result<(), EventError> {
        if let (true, Some(region)) = (config.needs_pmem(), &media.region) {
            let end = config.pmem_end(media.pmem_base)?;
            if region.len() < end {
                return Err(EventError::invalid(format!(
                    "stream '{}' needs PMem up to {end}; the region has {}",
                    config.name(),
                    region.len()
                )));
            }
        }
        Ok(())
    }

    /// Creates an empty stream (replacing what `media` held).
    pub fn create(config: StreamConfig, media: StreamMedia) -> Result<EventStream, EventError> {
        Self::check_media(&config, &media)?;
        let tree = TabTree::create(config.tree.clone(), media.tree_media())?;
        if !tree_keeps_generation(&config) {
            merged_generation::write(media.fs.as_ref(), &media.dir, 0)?;
        }
        let (queue, _) = Self::open_queue(&config, &media, true, 0)?;
        Ok(Self::new(config, media, tree, queue))
    }

    /// Recovers the stream `create` made: the tree, then the queue, then
    /// the merge protocol's recovery step.
    pub fn recover(
        config: StreamConfig,
        media: StreamMedia,
    ) -> Result<(EventStream, StreamRecoveryReport), EventError> {
        let started = Instant::now();
        Self::check_media(&config, &media)?;
        let (tree, tree_report) = TabTree::recover(config.tree.clone(), media.tree_media())?;
        let merged = if tree_keeps_generation(&config) {
            tree.merged_ooo_generation()
        } else {
            merged_generation::read(media.fs.as_ref(), &media.dir)?
        };
        let queue_started = Instant::now();
        let (mut queue, queue_report) = Self::open_queue(&config, &media, false, merged)?;
        let mut tree = tree;
        let mut merged = merged;
        let merge_resumed = match tree.pending_ooo_merge() {
            None => None,
            Some(pending) => {
                let input = if spills_merge_input(&config) {
                    let event_bytes = config.tree.schema.event_bytes();
                    merge_input::read(media.fs.as_ref(), &media.dir, pending.generation, event_bytes)?
                } else {
                    (queue.generation() == pending.generation).then(|| queue.sorted()).transpose()?
                };
                let Some(input) = input else {
                    return Err(EventError::corruption(
                        format!("stream '{}'", config.name()),
                        format!(
                            "an out-of-order merge of queue generation {} was interrupted, but neither the \
                             queue (generation {}) nor a merge input file holds its events",
                            pending.generation,
                            queue.generation()
                        ),
                    ));
                };
                let report = tree.resume_ooo_merge(&input)?;
                merged = tree.merged_ooo_generation();
                Some(report)
            }
        };
        if spills_merge_input(&config) {
            merge_input::remove(media.fs.as_ref(), &media.dir)?;
        }
        let queue_discarded = merged != 0 && queue.discard_if_merged(merged)?;
        let queue_duration = queue_started.elapsed();
        let mut stream = Self::new(config, media, tree, queue);
        stream.refresh_queue_span()?;
        let report = StreamRecoveryReport {
            tree: tree_report,
            queue: queue_report,
            merged_generation: merged,
            queue_discarded,
            merge_resumed,
            queue_duration,
            duration: started.elapsed(),
        };
        Ok((stream, report))
    }

    fn refresh_queue_span(&mut self) -> Result<(), EventError> {
        let all = self.queue.sorted()?;
        self.queue_span = all.timestamps().next().zip(all.timestamps().last());
        Ok(())
    }

    pub fn config(&self) -> &StreamConfig {
        &self.config
    }

    pub fn tree(&self) -> &TabTree {
        &self.tree
    }

    pub fn queue(&self) -> &dyn OooQueue {
        self.queue.as_ref()
    }

    /// Events in the stream (tree and queue).
    pub fn len(&self) -> u64 {
        self.tree.len() + self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the queue may hold an event with timestamp `ts`.
    fn queue_may_hold(&self, ts: i64) -> Result<bool, EventError> {
        match self.queue_span {
            Some((lo, hi)) if (lo..=hi).contains(&ts) => Ok(!self.queue.point(ts)?.is_empty()),
            _ => Ok(false),
        }
    }

    /// Appends an encoded event (section 4.3's three steps, module comment).
    pub fn append(&mut self, event: &[u8]) -> Result<StreamAppend, EventError> {
        let outcome = self.tree.append(event)?;
        self.stats.events_appended += 1;
        let AppendOutcome::Late { ts, .. } = outcome else {
            return Ok(StreamAppend {
                placed: Placed::Tree,
                durable_through: self.tree.durable_through(),
                merged: None,
            });
        };
        // The flank check first: it is O(1), while `queue_may_hold` is a
        // point query (a scan of a pure queue).
        if self.tree.flank_takes_late(ts)
            && !self.queue_may_hold(ts)?
            && self.tree.insert_late_in_flank(event)?.is_some()
        {
            self.stats.late_to_flank_leaf += 1;
            return Ok(StreamAppend {
                placed: Placed::FlankLeaf,
                durable_through: self.tree.durable_through(),
                merged: None,
            });
        }
        let mut merged = None;
        if self.queue.is_full() {
            merged = Some(self.merge()?);
        }
        self.queue.push(event)?;
        self.stats.late_to_queue += 1;
        self.queue_span = Some(match self.queue_span {
            Some((lo, hi)) => (lo.min(ts), hi.max(ts)),
            None => (ts, ts),
        });
        if self.queue.is_full() {
            merged = Some(self.merge()?);
        }
        Ok(StreamAppend { placed: Placed::Queue, durable_through: self.tree.durable_through(), merged })
    }

    /// Encodes and appends an event.
    pub fn append_event(&mut self, e: &Event) -> Result<StreamAppend, EventError> {
        let bytes = event::encode(&self.config.tree.schema, e)?;
        self.append(&bytes)
    }

    /// Merges the queue into the tree now (the merge protocol).
    pub fn merge(&mut self) -> Result<OooMergeReport, EventError> {
        let started = Instant::now();
        // The queue is the merge's redo log: everything in it must be durable.
        self.queue.sync()?;
        let generation = self.queue.generation();
        let sorted = self.queue.sorted()?;
        let spill = spills_merge_input(&self.config);
        if spill {
            merge_input::write(self.media.fs.as_ref(), &self.media.dir, generation, &sorted)?;
            self.tree.notify_ssd_sync();
        }
        #[cfg(any(test, feature = "crashtest"))]
        if crate::tree::merge_bug_truncate_first() {
            self.queue.truncate()?;
        }
        let report = self.tree.merge_ooo(&sorted, generation)?;
        if !tree_keeps_generation(&self.config) {
            merged_generation::write(self.media.fs.as_ref(), &self.media.dir, generation)?;
        }
        if spill {
            merge_input::remove(self.media.fs.as_ref(), &self.media.dir)?;
        }
        #[cfg(any(test, feature = "crashtest"))]
        let truncated = crate::tree::merge_bug_truncate_first();
        #[cfg(not(any(test, feature = "crashtest")))]
        let truncated = false;
        if !truncated {
            self.queue.truncate()?;
        }
        self.queue_span = None;
        self.stats.merges += 1;
        self.stats.merge_time += started.elapsed();
        Ok(report)
    }

    /// Makes the flank leaf's partial batch and the queue durable; returns
    /// the tree's [`TabTree::durable_through`].
    pub fn sync(&mut self) -> Result<u64, EventError> {
        self.queue.sync()?;
        self.tree.sync()
    }

    /// [`EventStream::sync`], then `msync` of the stream's PMem region: with
    /// PMem emulated on a file the point at which the flank, translation and
    /// queue survive power loss as well as a process crash (a no-op on real
    /// PMem and in the simulator).
    pub fn sync_to_media(&mut self) -> Result<u64, EventError> {
        let durable = self.sync()?;
        if let Some(region) = &self.media.region {
            region.sync_to_media()?;
        }
        Ok(durable)
    }

    /// Called after every block-store sync of the tree (crash tests take
    /// file-system snapshots there); see [`TabTree::set_ssd_sync_observer`].
    pub fn set_ssd_sync_observer(&mut self, observer: Option<crate::tree::SyncObserver>) {
        self.tree.set_ssd_sync_observer(observer);
    }

    pub fn stats(&self) -> StreamStats {
        StreamStats { tree: self.tree.stats(), queue_events: self.queue.len(), ..self.stats.clone() }
    }

    /// Checks the tree's invariants ([`TabTree::verify`]) and that the
    /// queue's events are in time order.
    pub fn verify(&self) -> Result<crate::tree::TreeCheck, EventError> {
        let check = self.tree.verify()?;
        let q = self.queue.sorted()?;
        let ts: Vec<i64> = q.timestamps().collect();
        if ts.windows(2).any(|w| w[0] > w[1]) {
            return Err(EventError::corruption("out-of-order queue", "sorted() is not in time order"));
        }
        let _ = q.iter().map(timestamp_of).count();
        Ok(check)
    }
}

/// Whether merges spill their input to [`merge_input`]: a queue that is
/// not durable under a tree that resumes interrupted merges (PMem flank).
fn spills_merge_input(config: &StreamConfig) -> bool {
    config.queue == QueuePlacement::Dram && tree_keeps_generation(config)
}

/// Whether the tree records the merged generation itself (PMem flank header).
fn tree_keeps_generation(config: &StreamConfig) -> bool {
    matches!(config.tree.flank, FlankPlacement::Pmem { .. })
}
