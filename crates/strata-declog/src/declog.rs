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

use crate::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::sync::{Condvar, Mutex};
use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use crate::batch::{decode_header, BATCH_HEADER_BYTES};
use crate::compress::key_table::KeyTable;
use crate::compress::log_codec::{compress_point, register_key, undo_compression, COMPRESSION_SLACK_BYTES};
use crate::compress::point_payload;
use crate::config::{DeclogConfig, FlushMode, MAX_TXN_ENTRIES};
use crate::entry::{EntryIn, EntryMeta, EntryOwned, MIN_ENTRY_BYTES};
use crate::error::DeclogError;
use crate::layout::{
    format_area, persist_cut_record, persist_epoch, persist_heads, read_area, Control, CutRecord, Layout,
    Ring,
};
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
    /// The stream's key table with compression (locked after `queues`).
    keys: Mutex<Option<KeyTable>>,
}

/// Where a checkpoint cut the log ([`DecLog::cut`]): every stream's end
/// position at the cut, in stream order. [`DecLog::truncate_to`] takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutPoint {
    pub ends: Vec<u64>,
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
        let stream = &self.streams[s];
        let mut p = stream.pipeline.lock();
        let outcome = p.step(&StepEnv {
            region: &self.region,
            snapshots: &self.snapshots,
            poison: &self.poison,
            progress: &self.progress,
            stats: &self.stats,
            queues: &stream.queues,
            space_cv: &stream.space_cv,
            close_open: self.close_open(),
        });
        if outcome == StepOutcome::Progress {
            self.steps_progressed.fetch_add(1, Ordering::SeqCst);
        }
        outcome
    }

    /// Inline mode: steps every stream round-robin until all are idle.
    fn pump(&self) -> Result<(), DeclogError> {
        loop {
            let mut progressed = false;
            let mut busy = false;
            let before = self.steps_progressed.load(Ordering::SeqCst);
            for s in 0..self.streams.len() {
                match self.step(s) {
                    StepOutcome::Progress => progressed = true,
                    StepOutcome::Blocked => busy = true,
                    StepOutcome::Idle => {}
                }
            }
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

/// A hold on the flush of the open queues ([`DecLog::hold_flush`]).
#[must_use = "the hold ends when dropped"]
pub struct FlushHold {
    shared: Arc<Shared>,
}

impl Drop for FlushHold {
    fn drop(&mut self) {
        if self.shared.flush_holds.fetch_sub(1, Ordering::SeqCst) == 1 {
            for stream in &self.shared.streams {
                // Under the queue lock: a logging thread that saw the hold
                // is then already waiting, so this wakes it.
                let _queues = stream.queues.lock();
                stream.work_cv.notify_one();
            }
        }
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
        if self.shared.layout.compression {
            for (i, e) in entries.iter().enumerate() {
                if e.compressed {
                    return Err(DeclogError::InvalidInput(format!(
                        "entry {i}: with compression on, DecLog compresses; submit point payloads with \
                         compressed = false"
                    )));
                }
                let p = point_payload::decode(e.payload).map_err(|why| {
                    DeclogError::InvalidInput(format!(
                        "entry {i}: with compression on, every payload must be a point payload: {why}"
                    ))
                })?;
                // A key the table cannot take is logged raw (ENTRY_FLAG_RAW_POINT).
                let _ = p;
            }
        }
        Ok(())
    }

    /// With compression: every key of `entries` in its stream's key table
    /// (new ones inserted and persisted), before anything is queued.
    fn register_keys(&self, entries: &[EntryIn<'_>]) -> Result<(), DeclogError> {
        if !self.shared.layout.compression {
            return Ok(());
        }
        for (s, stream) in self.shared.streams.iter().enumerate() {
            if !entries.iter().any(|e| self.stream_of(e.key_hash) == s) {
                continue;
            }
            let mut keys = stream.keys.lock();
            let Some(table) = keys.as_mut() else { return Ok(()) };
            for e in entries.iter().filter(|e| self.stream_of(e.key_hash) == s) {
                let p = point_payload::decode(e.payload).map_err(DeclogError::InvalidInput)?;
                match register_key(table, p.key) {
                    // Too long, or the table is full: its entries are logged raw.
                    Ok(()) | Err(DeclogError::InvalidInput(_)) => {}
                    Err(other) => return Err(other),
                }
            }
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
        self.register_keys(entries)?;
        self.enqueue(txn, entries.iter().map(EntryOwned::from).collect())
    }

    /// [`DecLog::submit`] taking the payloads by value, so they are queued
    /// without a copy.
    pub fn submit_owned(&self, txn: TxnId, entries: Vec<EntryOwned>) -> Result<Ticket, DeclogError> {
        {
            let borrowed: Vec<EntryIn<'_>> = entries.iter().map(EntryOwned::as_entry_in).collect();
            self.validate(&borrowed)?;
            self.register_keys(&borrowed)?;
        }
        self.enqueue(txn, entries)
    }

    /// Queues validated entries whose keys are registered.
    fn enqueue(&self, txn: TxnId, entries: Vec<EntryOwned>) -> Result<Ticket, DeclogError> {
        let m = self.shared.layout.threads;
        let count = entries.len() as u32;
        let ticket = Ticket::new(txn, count);
        let submitted: u64 = entries.iter().map(|e| e.payload.len() as u64).sum();
        let mut per_stream: Vec<Vec<PendingEntry>> = (0..m).map(|_| Vec::new()).collect();
        for (i, e) in entries.into_iter().enumerate() {
            per_stream[self.stream_of(e.key_hash)].push(PendingEntry {
                meta: EntryMeta {
                    txn,
                    key_hash: e.key_hash,
                    lsn: e.lsn,
                    entry_count: count,
                    op_index: i as u32,
                    compressed: e.compressed,
                    raw: false,
                },
                payload: e.payload,
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
        self.shared.stats.entries.fetch_add(u64::from(count), Ordering::Relaxed);
        self.shared.stats.payload_bytes_submitted.fetch_add(submitted, Ordering::Relaxed);
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
            let mut keys = stream.keys.lock();
            let mut entry = Some(first);
            while let Some(mut e) = entry.take() {
                // Compress under the queue lock, so stream order is compression order.
                let undo = match keys.as_mut() {
                    Some(table) if !key_registered(table, &e.payload) => {
                        e.meta.raw = true;
                        None
                    }
                    Some(table) => {
                        let (c, before) = compress_point(table, &e.payload, e.meta.txn.0)?;
                        e.meta.compressed = c.compressed;
                        Some((std::mem::replace(&mut e.payload, c.payload), before))
                    }
                    None => None,
                };
                let (logged, compressed) = (e.payload.len() as u64, e.meta.compressed);
                match qs.push(e, &self.shared.snapshots) {
                    Ok(()) => {
                        let stats = &self.shared.stats;
                        stats.payload_bytes_logged.fetch_add(logged, Ordering::Relaxed);
                        stats.compressed_entries.fetch_add(compressed as u64, Ordering::Relaxed);
                        entry = rest.next();
                    }
                    Err(mut back) => {
                        // No free queue: undo the compression, retry later as submitted.
                        if let (Some(table), Some((original, before))) = (keys.as_mut(), undo) {
                            undo_compression(table, &original, before);
                            back.payload = original;
                            back.meta.compressed = false;
                        }
                        back.meta.raw = false;
                        next = Some(back);
                        break;
                    }
                }
            }
            drop(keys);
            if qs.has_work(self.shared.close_open()) {
                stream.work_cv.notify_one();
            }
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

    /// Holds the flush until the returned guard drops: the logging threads
    /// leave their open queues open meanwhile (a queue still closes when full
    /// or after an update entry), so that the entries of several
    /// transactions a producer queues one after the other go into one batch
    /// and one fence (group commit across transactions, section 4.4.2).
    /// Drop the hold before waiting for any ticket. No effect in inline mode.
    pub fn hold_flush(&self) -> FlushHold {
        self.shared.flush_holds.fetch_add(1, Ordering::SeqCst);
        FlushHold { shared: self.shared.clone() }
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
    /// atomic switch of the head generation). With compression every key's
    /// state is cleared (in DRAM), so entries after the new heads decompress
    /// from them.
    pub fn truncate_all(&self) -> Result<(), DeclogError> {
        self.pump()?;
        let mut control = self.shared.control.lock();
        let mut pipelines: Vec<_> = self.shared.streams.iter().map(|s| s.pipeline.lock()).collect();
        let queues: Vec<_> = self.shared.streams.iter().map(|s| s.queues.lock()).collect();
        if !pipelines.iter().all(|p| p.is_idle()) || !queues.iter().all(|q| q.is_idle()) {
            return Err(DeclogError::InvalidInput("truncate_all ran concurrently with commits".into()));
        }
        for stream in &self.shared.streams {
            if let Some(table) = stream.keys.lock().as_mut() {
                table.reset_states();
            }
        }
        drop(queues);
        let heads: Vec<u64> = pipelines.iter_mut().map(|p| p.truncate_to_end()).collect();
        control.generation += 1;
        persist_heads(&self.shared.region, &self.shared.layout, control.generation, &heads);
        control.heads = heads;
        Ok(())
    }

    /// The checkpoint cut (declog.txt 4.5, steps 2 and 4), called while the
    /// engine lets no transaction submit: makes everything queued durable
    /// (like [`DecLog::pump`]), then with compression copies each stream's
    /// key table to its checkpoint copy and clears the key states (ids and
    /// strings kept, persisted), then persists the cut record (sequence
    /// number and every stream's end) and returns the ends. Every
    /// transaction submitted before the cut lies before the returned
    /// positions, every later one after them. `InvalidInput` if a commit ran
    /// concurrently.
    pub fn cut(&self) -> Result<CutPoint, DeclogError> {
        self.pump()?;
        let mut control = self.shared.control.lock();
        let pipelines: Vec<_> = self.shared.streams.iter().map(|s| s.pipeline.lock()).collect();
        let queues: Vec<_> = self.shared.streams.iter().map(|s| s.queues.lock()).collect();
        if !pipelines.iter().all(|p| p.is_idle()) || !queues.iter().all(|q| q.is_idle()) {
            return Err(DeclogError::InvalidInput("cut ran concurrently with commits".into()));
        }
        let ends: Vec<u64> = pipelines.iter().map(|p| p.end()).collect();
        let region = &self.shared.region;
        for (s, stream) in self.shared.streams.iter().enumerate() {
            if let Some(table) = stream.keys.lock().as_mut() {
                table.snapshot_to(region, self.shared.layout.key_table_copy(s))?;
                table.clear_for_checkpoint();
            }
        }
        let record = CutRecord { seq: control.cut.as_ref().map_or(1, |c| c.seq + 1), ends: ends.clone() };
        persist_cut_record(region, &self.shared.layout, &record);
        control.cut = Some(record);
        drop(queues);
        drop(pipelines);
        Ok(CutPoint { ends })
    }

    /// The last cut recorded in this log (also after a restart), if any.
    pub fn last_cut(&self) -> Option<CutPoint> {
        self.shared.control.lock().cut.as_ref().map(|c| CutPoint { ends: c.ends.clone() })
    }

    /// After the engine's checkpoint covers everything before `heads`: moves
    /// every stream's head to `heads[stream]` at once (one head-generation
    /// switch, like [`DecLog::truncate_all`]), freeing the space before them.
    /// Commits may run meanwhile; entries after the heads are untouched.
    ///
    /// Each position must lie in the stream's `[head, end]`, and be its
    /// current head, or with compression the last cut's position for that
    /// stream ([`DecLog::cut`], also one recorded before a restart: there
    /// every key's state was cleared, so parsing can decompress from it), or
    /// without compression any batch boundary (a position where a batch
    /// starts, or the end). Otherwise `InvalidInput`, and nothing moves.
    pub fn truncate_to(&self, heads: &[u64]) -> Result<(), DeclogError> {
        let layout = &self.shared.layout;
        if heads.len() != layout.threads {
            return Err(DeclogError::InvalidInput(format!(
                "truncate_to got {} heads for {} streams",
                heads.len(),
                layout.threads
            )));
        }
        let mut control = self.shared.control.lock();
        for (s, &pos) in heads.iter().enumerate() {
            let p = self.shared.streams[s].pipeline.lock();
            let (head, end) = (p.head(), p.end());
            let bad = |why: String| {
                Err(DeclogError::InvalidInput(format!("truncate_to stream {s} at {pos}: {why}")))
            };
            if pos < head || pos > end {
                return bad(format!("outside the live log [{head}, {end}]"));
            }
            if pos == head {
                continue;
            }
            if layout.compression {
                if control.cut.as_ref().is_none_or(|c| c.ends[s] != pos) {
                    return bad(format!(
                        "with compression a head moves only to the last cut's position ({:?})",
                        control.cut.as_ref().map(|c| c.ends[s])
                    ));
                }
            } else if !pos.is_multiple_of(layout.align_bytes) || !self.is_batch_start(p.ring(), pos, end) {
                return bad("not a batch boundary".into());
            }
        }
        control.generation += 1;
        persist_heads(&self.shared.region, layout, control.generation, heads);
        control.heads = heads.to_vec();
        // Only now may the writers reuse the space before the new heads.
        for (stream, &pos) in self.shared.streams.iter().zip(heads) {
            stream.pipeline.lock().advance_head(pos);
        }
        Ok(())
    }

    /// Whether a batch starts at `pos` (< `end`) of a ring, or after the lap
    /// rest too short for a header.
    fn is_batch_start(&self, ring: &Ring, pos: u64, end: u64) -> bool {
        let rest = ring.lap_remaining(pos);
        let at = if rest < BATCH_HEADER_BYTES { pos + rest } else { pos };
        if at >= end {
            return true;
        }
        let header = self.shared.region.read_vec(ring.offset_of(at), BATCH_HEADER_BYTES as usize);
        decode_header(&header, at).is_ok()
    }

    /// A private copy of stream `stream`'s key table as the last cut copied
    /// it (the checkpoint log's hash table, section 4.5 step 4).
    pub fn checkpoint_key_table(&self, stream: usize) -> Result<KeyTable, DeclogError> {
        let layout = &self.shared.layout;
        if !layout.compression || stream >= layout.threads {
            return Err(DeclogError::InvalidInput(format!(
                "no key table copy for stream {stream} (compression {}, {} streams)",
                layout.compression, layout.threads
            )));
        }
        KeyTable::open_detached(&self.shared.region, layout.key_table_copy(stream))
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

/// Whether the key of a point payload is in the stream's key table (else
/// the entry is logged raw).
fn key_registered(table: &KeyTable, payload: &[u8]) -> bool {
    point_payload::decode(payload).is_ok_and(|p| table.get(p.key).is_some())
}
