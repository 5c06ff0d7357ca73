//! [`DecLog`]: the facade. Formats and opens the area, routes each entry to a
//! logging thread by key hash (key-based partitioning, declog.txt 4.3.1:
//! thread = key_hash mod m), queues it, and acknowledges a transaction when
//! all its entries are persisted. In [`FlushMode::Threads`] one logging
//! thread per stream runs the flushing pipeline; in [`FlushMode::Inline`] the
//! caller's thread runs it (crash tests).
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
//!   called after a checkpoint covers everything committed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use crate::batch::BATCH_HEADER_BYTES;
use crate::config::{DeclogConfig, FlushMode, MAX_TXN_ENTRIES};
use crate::entry::{EntryIn, EntryMeta, MIN_ENTRY_BYTES};
use crate::error::DeclogError;
use crate::layout::{format_area, persist_epoch, persist_heads, read_area, Control, Layout};
use crate::pipeline::{DeclogStats, Pipeline, Poison, ProgressSignal, StatCounters, StepEnv, StepOutcome};
use crate::queues::{PendingEntry, QueueSet};
use crate::recovery::{parse_area, Recovered};
use crate::snapshot::SnapshotTable;
use crate::ticket::Ticket;

struct Stream {
    queues: Mutex<QueueSet>,
    /// The logging thread waits here for entries.
    work_cv: Condvar,
    /// Producers wait here for a free queue.
    space_cv: Condvar,
    pipeline: Mutex<Pipeline>,
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
    control: Mutex<Control>,
}

impl Shared {
    fn step(&self, s: usize) -> StepOutcome {
        let stream = &self.streams[s];
        let mut p = stream.pipeline.lock();
        p.step(&StepEnv {
            region: &self.region,
            snapshots: &self.snapshots,
            poison: &self.poison,
            progress: &self.progress,
            stats: &self.stats,
            queues: &stream.queues,
            space_cv: &stream.space_cv,
        })
    }

    /// Inline mode: steps every stream round-robin until all are idle.
    fn pump(&self) -> Result<(), DeclogError> {
        loop {
            let mut progressed = false;
            let mut busy = false;
            for s in 0..self.streams.len() {
                match self.step(s) {
                    StepOutcome::Progress => progressed = true,
                    StepOutcome::Blocked => busy = true,
                    StepOutcome::Idle => {}
                }
            }
            if !progressed {
                return if busy { Err(DeclogError::Stalled) } else { Ok(()) };
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
                    if qs.has_work() {
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
    /// Bytes a DecLog with `threads` streams of `stream_capacity_bytes` needs.
    pub fn footprint_bytes(threads: usize, stream_capacity_bytes: u64) -> u64 {
        Layout::footprint_bytes(threads, stream_capacity_bytes)
    }

    /// Writes an empty DecLog into `bytes` bytes at `base` (256-byte aligned)
    /// and opens it. The streams share the space equally.
    pub fn format(
        region: Arc<Region>,
        base: RegionOffset,
        bytes: u64,
        cfg: DeclogConfig,
    ) -> Result<DecLog, DeclogError> {
        let (layout, control) = format_area(&region, base, bytes, &cfg)?;
        let ends = vec![0; layout.threads];
        Ok(Self::start(region, layout, control, &ends, cfg.flush_mode))
    }

    /// Opens an existing DecLog with logging threads and parses it.
    pub fn open(region: Arc<Region>, base: RegionOffset) -> Result<(DecLog, Recovered), DeclogError> {
        Self::open_with_mode(region, base, FlushMode::Threads)
    }

    /// Opens an existing DecLog: parses every stream, seals a torn last
    /// batch, persists the next writer epoch, and resumes writing at each
    /// stream's end.
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
        Ok((Self::start(region, layout, control, &ends, mode), recovered))
    }

    fn start(region: Arc<Region>, layout: Layout, control: Control, ends: &[u64], mode: FlushMode) -> DecLog {
        let max_batch = layout.max_batch_bytes();
        let streams = (0..layout.threads)
            .map(|s| Stream {
                queues: Mutex::new(QueueSet::new(s, layout.queues_per_thread, layout.queue_len, max_batch)),
                work_cv: Condvar::new(),
                space_cv: Condvar::new(),
                pipeline: Mutex::new(Pipeline::new(
                    s,
                    layout.ring(s),
                    control.epoch,
                    control.heads[s],
                    ends[s],
                )),
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

    /// The largest payload one entry may carry.
    pub fn max_payload_bytes(&self) -> u64 {
        self.shared.layout.max_batch_bytes() - BATCH_HEADER_BYTES - MIN_ENTRY_BYTES
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

    fn validate(&self, entries: &[EntryIn<'_>]) -> Result<(), DeclogError> {
        if let Some(reason) = self.shared.poison.get() {
            return Err(DeclogError::Poisoned(reason.describe()));
        }
        if entries.is_empty() || entries.len() > MAX_TXN_ENTRIES {
            return Err(DeclogError::InvalidInput(format!(
                "a transaction logs 1..={MAX_TXN_ENTRIES} entries, not {}",
                entries.len()
            )));
        }
        let lsn = entries[0].lsn;
        if entries.iter().any(|e| e.lsn != lsn) {
            return Err(DeclogError::InvalidInput(
                "all entries of a transaction carry the transaction's LSN".into(),
            ));
        }
        let max = self.max_payload_bytes();
        if let Some(e) = entries.iter().find(|e| e.payload.len() as u64 > max) {
            return Err(DeclogError::TooLarge { len_bytes: e.payload.len() as u64, max_bytes: max });
        }
        Ok(())
    }

    /// Queues a transaction's entries and returns its ticket without waiting
    /// for durability (then [`Ticket::wait`], or in inline mode
    /// [`DecLog::pump`]). Entries are queued stream by stream in `entries`
    /// order. Blocks (or, inline, runs the pipeline) while every queue of a
    /// stream is in flight.
    pub fn submit(&self, txn: TxnId, entries: &[EntryIn<'_>]) -> Result<Ticket, DeclogError> {
        self.validate(entries)?;
        let m = self.shared.layout.threads;
        let ticket = Ticket::new(txn, entries.len() as u32);
        let mut per_stream: Vec<Vec<PendingEntry>> = (0..m).map(|_| Vec::new()).collect();
        for (i, e) in entries.iter().enumerate() {
            per_stream[self.stream_of(e.key_hash)].push(PendingEntry {
                meta: EntryMeta {
                    txn,
                    key_hash: e.key_hash,
                    lsn: e.lsn,
                    entry_count: entries.len() as u32,
                    op_index: i as u32,
                    compressed: e.compressed,
                },
                payload: e.payload.to_vec(),
                ticket: ticket.clone(),
                snapshot: None,
            });
        }
        for (s, group) in per_stream.into_iter().enumerate() {
            if !group.is_empty() {
                self.push_group(s, group)?;
            }
        }
        self.shared.stats.txns_submitted.fetch_add(1, Ordering::Relaxed);
        self.shared.stats.entries.fetch_add(entries.len() as u64, Ordering::Relaxed);
        Ok(ticket)
    }

    /// Queues one transaction's entries for stream `s`, all under one lock
    /// unless the queues fill up on the way, so a batch rarely splits them.
    fn push_group(&self, s: usize, group: Vec<PendingEntry>) -> Result<(), DeclogError> {
        let stream = &self.shared.streams[s];
        let mut rest = group.into_iter();
        let mut next = rest.next();
        while let Some(first) = next.take() {
            if let Some(reason) = self.shared.poison.get() {
                first.ticket.fail(reason.clone());
                return Err(DeclogError::Poisoned(reason.describe()));
            }
            let mut qs = stream.queues.lock();
            let mut entry = Some(first);
            while let Some(e) = entry.take() {
                match qs.push(e, &self.shared.snapshots) {
                    Ok(()) => entry = rest.next(),
                    Err(back) => {
                        next = Some(back);
                        break;
                    }
                }
            }
            stream.work_cv.notify_one();
            if next.is_none() {
                return Ok(());
            }
            match self.shared.mode {
                FlushMode::Threads => {
                    stream.space_cv.wait_for(&mut qs, Duration::from_millis(20));
                }
                FlushMode::Inline => {
                    drop(qs);
                    if self.shared.step(s) != StepOutcome::Progress {
                        // This stream waits for another one: run them all.
                        self.shared.pump()?;
                    }
                }
            }
        }
        Ok(())
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

    /// Runs one pipeline step of stream `stream` on this thread (inline mode;
    /// crash tests use it to interleave streams in a chosen order).
    pub fn step(&self, stream: usize) -> StepOutcome {
        self.shared.step(stream)
    }

    /// After a checkpoint covering every committed transaction: waits until
    /// nothing is queued or in flight, then frees every stream at once (one
    /// atomic switch of the head generation).
    pub fn truncate_all(&self) -> Result<(), DeclogError> {
        self.pump()?;
        let pipelines: Vec<_> = self.shared.streams.iter().map(|s| s.pipeline.lock()).collect();
        let queues: Vec<_> = self.shared.streams.iter().map(|s| s.queues.lock()).collect();
        if !pipelines.iter().all(|p| p.is_idle()) || !queues.iter().all(|q| q.is_idle()) {
            return Err(DeclogError::InvalidInput("truncate_all ran concurrently with commits".into()));
        }
        drop(queues);
        let mut pipelines = pipelines;
        let heads: Vec<u64> = pipelines.iter_mut().map(|p| p.truncate_to_end()).collect();
        let mut control = self.shared.control.lock();
        control.generation += 1;
        persist_heads(&self.shared.region, &self.shared.layout, control.generation, &heads);
        control.heads = heads;
        Ok(())
    }
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
