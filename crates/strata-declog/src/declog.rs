//! [`DecLog`]: the facade. Formats and opens the area, routes each entry to a
//! logging thread by key hash (key-based partitioning, declog.txt 4.3.1:
//! thread = key_hash mod m), queues it, and acknowledges a transaction when
//! all its entries are persisted. In [`FlushMode::Threads`] one logging
//! thread per stream runs the flushing pipeline; in [`FlushMode::Inline`] the
//! caller's thread runs it (crash tests). The submission path (checks,
//! routing, compression, queueing, the flush hold) is in `declog/submit.rs`;
//! the checkpoint's cut and truncation in `declog/cut.rs`.
//!
//! Contract with the engine (what makes the ordering argument of
//! [`crate::snapshot`] hold):
//! - an update transaction's entries are submitted before it releases its
//!   write locks (the lock bits of section 4.1), so everything a later update
//!   depends on is queued before it; waiting for durability may come after
//!   (early lock release);
//! - data inserted by an insert-only transaction becomes visible (may be
//!   updated) only once that transaction is acknowledged (section 3.1,
//!   step 4), so no update depends on a not-yet-durable insert;
//! - all entries of one transaction carry the same LSN; transaction ids do
//!   not repeat within a log between truncations (use
//!   [`Recovered::max_txn_id`] after a restart);
//! - no commits run concurrently with [`DecLog::truncate_all`], which is
//!   called after a checkpoint covers everything committed, nor with
//!   [`DecLog::cut`]; [`DecLog::truncate_to`] may run with commits;
//! - with compression, payloads are point payloads
//!   ([`crate::compress::point_payload`]) and the key hash is
//!   [`crate::compress::key_hash`] of the series key, so all points of a
//!   series go to one stream (DecLog's key tables are per stream, so this is
//!   for locality, not correctness).
//!
//! The checkpoint of section 4.5, as DecLog's half of it: [`DecLog::cut`]
//! makes everything queued durable, records where each stream ends (the cut
//! record, the paper's "offsets of log blocks"), copies each stream's key
//! table to its checkpoint copy and clears the key states; once the engine's
//! checkpoint covers every transaction before the cut,
//! [`DecLog::truncate_to`] moves the heads to the cut (one head-generation
//! switch), with later transactions running meanwhile. After a crash between
//! the two, parsing starts at the older heads and passes the cut: entries
//! after it decompress because each key's first entry after the clear is
//! self-describing ([`crate::compress::codec`]).

mod cut;
mod submit;

pub use submit::FlushHold;

use crate::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::sync::{Condvar, Mutex, MutexGuard};
use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use crate::batch::BATCH_HEADER_BYTES;
use crate::compress::key_table::KeyTable;
use crate::compress::log_codec::COMPRESSION_SLACK_BYTES;
use crate::config::{DeclogConfig, FlushMode};
use crate::entry::{EntryIn, MIN_ENTRY_BYTES};
use crate::error::DeclogError;
use crate::layout::{format_area, persist_epoch, read_area, Control, Layout};
use crate::pipeline::{
    fence_flushed, DeclogStats, Pipeline, Poison, ProgressSignal, StatCounters, StepEnv, StepOutcome, Written,
};
use crate::queues::QueueSet;
use crate::recovery::{parse_area, Recovered};
use crate::snapshot::SnapshotTable;

struct Stream {
    queues: Mutex<QueueSet>,
    /// The logging thread waits here for entries.
    work_cv: Condvar,
    /// Producers wait here for a free queue.
    space_cv: Condvar,
    pipeline: Mutex<Pipeline>,
    /// The stream's key table with compression (locked after `pipeline`,
    /// before `queues`).
    keys: Mutex<Option<KeyTable>>,
}

struct Shared {
    region: Arc<Region>,
    layout: Layout,
    mode: FlushMode,
    streams: Vec<Stream>,
    snapshots: SnapshotTable,
    poison: Poison,
    progress: ProgressSignal,
    stats: StatCounters,
    shutdown: AtomicBool,
    /// Pipeline steps that made progress, by any thread (inline `pump` tells
    /// a stall from another stepper's progress with it).
    steps_progressed: AtomicU64,
    /// Live [`FlushHold`]s: while any exists the logging threads leave the
    /// open queues open (logging-thread mode only).
    flush_holds: AtomicUsize,
    control: Mutex<Control>,
}

impl Shared {
    /// Whether a pipeline may close the open queue to flush it now.
    fn close_open(&self) -> bool {
        self.mode == FlushMode::Inline || self.flush_holds.load(Ordering::SeqCst) == 0
    }

    fn step(&self, s: usize) -> StepOutcome {
        let p = self.streams[s].pipeline.lock();
        self.step_locked(s, p)
    }

    fn step_locked(&self, s: usize, mut p: MutexGuard<'_, Pipeline>) -> StepOutcome {
        let outcome = p.step(&self.env(s));
        if outcome == StepOutcome::Progress {
            self.steps_progressed.fetch_add(1, Ordering::SeqCst);
        }
        outcome
    }

    fn env(&self, s: usize) -> StepEnv<'_> {
        let stream = &self.streams[s];
        StepEnv {
            region: &self.region,
            snapshots: &self.snapshots,
            poison: &self.poison,
            progress: &self.progress,
            stats: &self.stats,
            queues: &stream.queues,
            space_cv: &stream.space_cv,
            close_open: self.close_open(),
        }
    }

    /// One step of every stream together: the first half of a step
    /// ([`Pipeline::write_step`]) on each, *one* fence for all that flushed,
    /// then their second halves. A transaction's entries lie in several
    /// streams; a logging thread per stream fences each (the paper's
    /// design), a thread that flushes them together needs one fence. With
    /// `skip_busy` a stream another thread is stepping is skipped (a
    /// waiting committer: that thread makes its progress). Returns whether
    /// it made progress and whether a stream was blocked.
    fn step_together(&self, skip_busy: bool) -> (bool, bool) {
        let mut locked: Vec<(usize, MutexGuard<'_, Pipeline>)> = (0..self.streams.len())
            .filter_map(|s| {
                let p = &self.streams[s].pipeline;
                Some((s, if skip_busy { p.try_lock()? } else { p.lock() }))
            })
            .collect();
        if self.layout.strict_ordering {
            // Strict ordering (Fig. 12(a)'s baseline) persists one entry
            // after another: a fence per stream step, nothing shared.
            let outcomes: Vec<StepOutcome> =
                locked.into_iter().map(|(s, p)| self.step_locked(s, p)).collect();
            return (outcomes.contains(&StepOutcome::Progress), outcomes.contains(&StepOutcome::Blocked));
        }
        let (mut wrote_tail, mut blocked) = (false, false);
        let mut flushed = Vec::with_capacity(locked.len());
        for (i, (s, p)) in locked.iter_mut().enumerate() {
            match p.write_step(&self.env(*s)) {
                Written::Flushed { wrote_tail: tail } => {
                    wrote_tail |= tail;
                    flushed.push(i);
                }
                Written::Nothing(StepOutcome::Blocked) => blocked = true,
                Written::Nothing(_) => {}
            }
        }
        let Some(&first) = flushed.first() else { return (false, blocked) };
        fence_flushed(&self.env(locked[first].0), wrote_tail);
        for i in flushed {
            let (s, p) = &mut locked[i];
            p.complete_after_fence(&self.env(*s));
            self.steps_progressed.fetch_add(1, Ordering::SeqCst);
        }
        (true, blocked)
    }

    /// Inline mode: steps every stream round-robin until all are idle.
    fn pump(&self) -> Result<(), DeclogError> {
        loop {
            let before = self.steps_progressed.load(Ordering::SeqCst);
            let (progressed, busy) = self.step_together(false);
            if !progressed {
                if !busy {
                    return Ok(());
                }
                if self.steps_progressed.load(Ordering::SeqCst) == before {
                    return Err(DeclogError::Stalled);
                }
                // Another thread stepped meanwhile: what blocked us may be done.
                std::thread::yield_now();
            }
        }
    }

    fn logging_thread(&self, s: usize) {
        let stream = &self.streams[s];
        loop {
            match self.step(s) {
                StepOutcome::Progress => {}
                StepOutcome::Blocked => self.progress.wait(Duration::from_micros(200)),
                StepOutcome::Idle => {
                    let mut qs = stream.queues.lock();
                    if qs.has_work(self.close_open()) {
                        continue;
                    }
                    if self.shutdown.load(Ordering::SeqCst) {
                        return;
                    }
                    stream.work_cv.wait_for(&mut qs, Duration::from_millis(20));
                }
            }
        }
    }

    fn all_idle(&self) -> bool {
        self.streams.iter().all(|st| st.pipeline.lock().is_idle() && st.queues.lock().is_idle())
    }
}

/// DecLog on one PMem area: m streams, their logging threads and log queues.
pub struct DecLog {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl DecLog {
    /// Bytes a DecLog with `threads` streams of `stream_capacity_bytes` needs
    /// *without compression*; with it use [`DecLog::footprint_bytes_for`].
    pub fn footprint_bytes(threads: usize, stream_capacity_bytes: u64) -> u64 {
        Layout::footprint_bytes(threads, stream_capacity_bytes)
    }

    /// Bytes a DecLog formatted with `cfg` and streams of
    /// `stream_capacity_bytes` needs (key tables included with compression).
    pub fn footprint_bytes_for(cfg: &DeclogConfig, stream_capacity_bytes: u64) -> u64 {
        Layout::footprint_bytes_for(cfg, stream_capacity_bytes)
    }

    /// Writes an empty DecLog into `bytes` bytes at `base` (256-byte aligned)
    /// and opens it. With compression the key tables take their share
    /// ([`DecLog::footprint_bytes_for`]); the streams share the rest equally.
    pub fn format(
        region: Arc<Region>,
        base: RegionOffset,
        bytes: u64,
        cfg: DeclogConfig,
    ) -> Result<DecLog, DeclogError> {
        let (layout, control) = format_area(&region, base, bytes, &cfg)?;
        let ends = vec![0; layout.threads];
        let tables = open_key_tables(&region, &layout)?;
        Ok(Self::start(region, layout, control, &ends, cfg.flush_mode, tables))
    }

    /// Opens an existing DecLog with logging threads and parses it.
    pub fn open(region: Arc<Region>, base: RegionOffset) -> Result<(DecLog, Recovered), DeclogError> {
        Self::open_with_mode(region, base, FlushMode::Threads)
    }

    /// Opens an existing DecLog: parses every stream, seals a torn last
    /// batch, persists the next writer epoch, and resumes writing at each
    /// stream's end. With compression the key tables are reopened (ids kept)
    /// with every key's state cleared, so each key's next entry is
    /// self-describing.
    pub fn open_with_mode(
        region: Arc<Region>,
        base: RegionOffset,
        mode: FlushMode,
    ) -> Result<(DecLog, Recovered), DeclogError> {
        let (layout, mut control) = read_area(&region, base)?;
        let recovered = parse_area(&region, &layout, &control)?;
        for (s, parse) in recovered.streams.iter().enumerate() {
            if let Some((pos, header)) = parse.torn_last {
                let at = layout.ring(s).offset_of(pos);
                region.store_u64_persist(at, crate::batch::sealed_first_word(&header));
            }
        }
        control.epoch = control
            .epoch
            .checked_add(1)
            .ok_or_else(|| DeclogError::corruption(base.0, "writer epoch exhausted"))?;
        persist_epoch(&region, &layout, control.epoch);
        let ends: Vec<u64> = recovered.streams.iter().map(|p| p.end).collect();
        let tables = open_key_tables(&region, &layout)?;
        Ok((Self::start(region, layout, control, &ends, mode, tables), recovered))
    }

    fn start(
        region: Arc<Region>,
        layout: Layout,
        control: Control,
        ends: &[u64],
        mode: FlushMode,
        tables: Vec<Option<KeyTable>>,
    ) -> DecLog {
        let max_batch = layout.max_batch_bytes();
        // Strict ordering: every entry closes its queue.
        let queue_len = if layout.strict_ordering { 1 } else { layout.queue_len };
        let streams = tables
            .into_iter()
            .enumerate()
            .map(|(s, keys)| Stream {
                queues: Mutex::new(QueueSet::new(s, layout.queues_per_thread, queue_len, max_batch)),
                work_cv: Condvar::new(),
                space_cv: Condvar::new(),
                pipeline: Mutex::new(Pipeline::new(
                    s,
                    layout.ring(s),
                    control.epoch,
                    control.heads[s],
                    ends[s],
                    layout.strict_ordering,
                )),
                keys: Mutex::new(keys),
            })
            .collect();
        let shared = Arc::new(Shared {
            region,
            snapshots: SnapshotTable::new(layout.threads, layout.queues_per_thread),
            layout,
            mode,
            streams,
            poison: Poison::default(),
            progress: ProgressSignal::default(),
            stats: StatCounters::default(),
            shutdown: AtomicBool::new(false),
            steps_progressed: AtomicU64::new(0),
            flush_holds: AtomicUsize::new(0),
            control: Mutex::new(control),
        });
        let threads = match mode {
            FlushMode::Inline => Vec::new(),
            FlushMode::Threads => (0..layout.threads)
                .map(|s| {
                    let shared = shared.clone();
                    std::thread::Builder::new()
                        .name(format!("declog-{s}"))
                        .spawn(move || shared.logging_thread(s))
                        .expect("spawn declog logging thread")
                })
                .collect(),
        };
        DecLog { shared, threads }
    }

    /// The configuration in force (from the superblock, and the flush mode).
    pub fn config(&self) -> DeclogConfig {
        let l = &self.shared.layout;
        DeclogConfig {
            threads: l.threads,
            queues_per_thread: l.queues_per_thread,
            queue_len: l.queue_len,
            align_bytes: l.align_bytes,
            flush_mode: self.shared.mode,
            compression: l.compression,
            key_slots: l.key_slots,
            strict_ordering: l.strict_ordering,
        }
    }

    pub fn layout(&self) -> Layout {
        self.shared.layout
    }

    pub fn region(&self) -> &Arc<Region> {
        &self.shared.region
    }

    /// The stream (logging thread) that logs entries with this key hash.
    pub fn stream_of(&self, key_hash: u64) -> usize {
        (key_hash % self.shared.layout.threads as u64) as usize
    }

    /// The largest payload one entry may carry (with compression: the
    /// largest point payload, [`COMPRESSION_SLACK_BYTES`] below the largest
    /// entry payload, since compression may grow a tiny point by that much).
    pub fn max_payload_bytes(&self) -> u64 {
        let max = self.shared.layout.max_batch_bytes() - BATCH_HEADER_BYTES - MIN_ENTRY_BYTES;
        if self.shared.layout.compression {
            max - COMPRESSION_SLACK_BYTES
        } else {
            max
        }
    }

    /// (head, end) stream positions of each stream: where parsing would start
    /// and where the next batch goes.
    pub fn stream_positions(&self) -> Vec<(u64, u64)> {
        self.shared
            .streams
            .iter()
            .map(|s| {
                let p = s.pipeline.lock();
                (p.head(), p.end())
            })
            .collect()
    }

    /// Bytes still free in each stream.
    pub fn free_bytes(&self) -> Vec<u64> {
        self.shared.streams.iter().map(|s| s.pipeline.lock().free_bytes()).collect()
    }

    pub fn stats(&self) -> DeclogStats {
        self.shared.stats.snapshot()
    }

    /// The thread snapshot arrays (N, S) as they are now (rows: threads).
    pub fn snapshot_arrays(&self) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
        self.shared.snapshots.arrays()
    }

    /// Logs one transaction and returns once it is durable: all its entries'
    /// tails are persisted.
    pub fn commit(&self, txn: TxnId, entries: &[EntryIn<'_>]) -> Result<(), DeclogError> {
        let ticket = self.submit(txn, entries)?;
        match self.shared.mode {
            FlushMode::Threads => ticket.wait(),
            FlushMode::Inline => {
                self.shared.pump()?;
                ticket.outcome().unwrap_or(Err(DeclogError::Stalled))
            }
        }
    }

    /// Inline mode: runs the pipelines until nothing is queued or in flight.
    /// With logging threads it only waits for them to get there.
    pub fn pump(&self) -> Result<(), DeclogError> {
        match self.shared.mode {
            FlushMode::Inline => self.shared.pump(),
            FlushMode::Threads => {
                while !self.shared.all_idle() {
                    if let Some(reason) = self.shared.poison.get() {
                        return Err(reason.to_error());
                    }
                    self.shared.progress.wait(Duration::from_micros(500));
                }
                Ok(())
            }
        }
    }

    /// Waits until `ticket` resolves, running pipeline steps on this thread
    /// meanwhile (with logging threads; inline mode pumps). On a machine
    /// with fewer cores than committers plus logging threads, a committer
    /// that would sleep until a logging thread is scheduled does the flush
    /// itself: the step code is the same, under the same per-stream lock,
    /// so the persist order is unchanged, except that the streams it
    /// flushes together share one fence (`step_together`, which `pump` runs
    /// too, so the crash lines check it). A step that cannot progress (its
    /// queue is still held open, or an update tail waits for another stream)
    /// leaves the rest to the logging threads; a stream another thread is
    /// stepping is skipped.
    pub fn wait_helping(&self, ticket: &crate::ticket::Ticket) -> Result<(), DeclogError> {
        if self.shared.mode == FlushMode::Inline {
            self.shared.pump()?;
            return if ticket.is_resolved() { ticket.wait() } else { Err(DeclogError::Stalled) };
        }
        while !ticket.is_resolved() {
            // Streams another thread is stepping are skipped: that thread
            // makes their progress; queueing behind it would not.
            if !self.shared.step_together(true).0 {
                break;
            }
        }
        ticket.wait()
    }

    /// Runs one pipeline step of stream `stream` on this thread (inline mode;
    /// crash tests use it to interleave streams in a chosen order).
    pub fn step(&self, stream: usize) -> StepOutcome {
        self.shared.step(stream)
    }
}

/// The writers' key tables of an opened area: with compression each
/// stream's active table, every key's state cleared (module comment).
fn open_key_tables(region: &Arc<Region>, layout: &Layout) -> Result<Vec<Option<KeyTable>>, DeclogError> {
    (0..layout.threads)
        .map(|s| {
            if !layout.compression {
                return Ok(None);
            }
            let mut table = KeyTable::open(region.clone(), layout.key_table(s))?;
            if table.slot_count() != layout.key_slots {
                return Err(DeclogError::corruption(
                    layout.key_table(s).0,
                    format!(
                        "key table of {} slots, the superblock says {}",
                        table.slot_count(),
                        layout.key_slots
                    ),
                ));
            }
            table.reset_states();
            Ok(Some(table))
        })
        .collect()
}

impl Drop for DecLog {
    /// Flushes everything queued, then stops the logging threads.
    fn drop(&mut self) {
        match self.shared.mode {
            FlushMode::Inline => {
                let _ = self.shared.pump();
            }
            FlushMode::Threads => {
                self.shared.shutdown.store(true, Ordering::SeqCst);
                for s in &self.shared.streams {
                    let _g = s.queues.lock();
                    s.work_cv.notify_all();
                }
                for t in self.threads.drain(..) {
                    let _ = t.join();
                }
            }
        }
    }
}
