//! The log flushing pipeline of one logging thread (declog.txt section 4.2,
//! "Log Flushing Pipeline", with the group commit of 4.4.2).
//!
//! One [`Pipeline::step`] does at most this, then one fence:
//!
//! 1. the tail of the oldest update entry whose batch body is already
//!    persisted, if every earlier update tail of this thread is persisted and
//!    its thread snapshot allows it ([`crate::snapshot`]): one 8-byte store and
//!    one line flush;
//! 2. the body of the next closed log queue: its entries merged into one batch
//!    padded to the alignment ([`crate::batch`]), written at the stream's end
//!    and flushed (clwb), insert entries with their tails, an update entry
//!    (always the last) without;
//! 3. one fence. It persists the body of step 2, which acknowledges that
//!    batch's insert entries (group commit: one persist for the whole aligned
//!    batch), and the tail of step 1, which acknowledges that update entry and
//!    advances N of its queue; a queue is reopened once everything in it is
//!    persisted.
//!
//! So in steady state the fence that persists queue k's body also persists
//! queue k-1's update tail, as in the paper's Fig. 7; insert entries need no
//! fence between them; and the only ordering fence is the one that puts an
//! update entry's tail after the bodies of its own and every earlier queue of
//! the thread (everything queued before it on this thread) and after every
//! earlier update tail. A body may be written while an earlier update tail is
//! still waiting for its snapshot, so a blocked update transaction does not
//! block later insert transactions. Only the batch written since the last
//! fence can be torn by a crash; parsing relies on that.
//!
//! A step is steps 1-2 ([`Pipeline::write_step`]), the fence, then the
//! acknowledgements ([`Pipeline::complete_after_fence`]). A thread that
//! steps every stream at once (a committer helping while it waits, or
//! `pump`) runs the first halves of all of them, one fence, then the
//! second halves: each stream still has at most one batch and one tail
//! unfenced, and a transaction whose entries lie in several streams pays
//! one fence, not one per stream.
//!
//! Strict ordering (the ablation baseline of Fig. 12(a), section 3.1): every
//! queue holds one entry (DecLog opens the queues with length 1), every
//! entry's tail is deferred like an update entry's (an insert's has no
//! snapshot to wait for), and a body is written only when nothing is in
//! flight. So each entry costs two fences, body then tail, and entries are
//! persisted one after the other.

use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::collections::VecDeque;
use std::time::Duration;

use crate::sync::{Condvar, Mutex};
use strata_pmem::{Region, RegionOffset};

use crate::batch::{batch_len, build_batch_into, wrap_header, BatchEntry, BATCH_HEADER_BYTES};
use crate::error::FailReason;
use crate::layout::Ring;
use crate::queues::{PendingEntry, QueueSet};
use crate::snapshot::{Snapshot, SnapshotTable};

/// Bugs the crash tests plant to show they would catch them (tests and the
/// `crashtest` feature only; see `crashtest_hooks`).
#[cfg(any(test, feature = "crashtest"))]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PlantedBug {
    None,
    /// Update tails never wait for their thread snapshot.
    IgnoreSnapshot,
    /// A step that wrote only a batch body (no update tail) skips its fence
    /// but acknowledges as if it had fenced.
    SkipBodyOnlyFence,
}

#[cfg(any(test, feature = "crashtest"))]
thread_local! {
    pub static PLANTED_BUG: std::cell::Cell<PlantedBug> = const { std::cell::Cell::new(PlantedBug::None) };
}

#[cfg(any(test, feature = "crashtest"))]
fn planted(bug: PlantedBug) -> bool {
    PLANTED_BUG.with(|b| b.get() == bug)
}

#[cfg(any(test, feature = "crashtest"))]
fn skip_fence_planted(wrote_tail: bool) -> bool {
    planted(PlantedBug::SkipBodyOnlyFence) && !wrote_tail
}

#[cfg(not(any(test, feature = "crashtest")))]
fn skip_fence_planted(_wrote_tail: bool) -> bool {
    false
}

/// The fence after [`Pipeline::write_step`] flushed something (on one
/// stream or several), counted; `wrote_tail` if an update tail was among it.
pub(crate) fn fence_flushed(env: &StepEnv<'_>, wrote_tail: bool) {
    if !(cfg!(any(test, feature = "crashtest")) && skip_fence_planted(wrote_tail)) {
        env.region.fence();
        bump(&env.stats.fences, 1);
    }
}

/// What the first half of a step ([`Pipeline::write_step`]) did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// Flushed a batch or an update tail, not yet fenced.
    Flushed {
        /// An update tail was among what it flushed.
        wrote_tail: bool,
    },
    /// Nothing to flush: the step's outcome.
    Nothing(StepOutcome),
}

/// What one step did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// Wrote and fenced something.
    Progress,
    /// Batches are in flight but nothing could be written: an update tail
    /// waits for another thread's earlier update entries.
    Blocked,
    /// Nothing queued and nothing in flight.
    Idle,
}

/// DecLog's own counters (persist counts come from the region's stats).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DeclogStats {
    /// Transactions whose entries were all queued.
    pub txns_submitted: u64,
    pub entries: u64,
    /// Batches (flushed log queues) written.
    pub batches: u64,
    /// Wrap batches written at the end of a ring lap.
    pub wraps: u64,
    /// Deferred tails stored: update entries', and under strict ordering
    /// every entry's.
    pub update_tails: u64,
    /// Update entries that found their snapshot blocking at least once.
    pub snapshot_waits: u64,
    /// Fences issued by the pipelines.
    pub fences: u64,
    /// Bytes of batches written, header and padding included.
    pub batch_bytes: u64,
    /// Bytes of encoded entries written (so padding = batch_bytes - entry_bytes - 32 x batches).
    pub entry_bytes: u64,
    /// Payload bytes of the entries queued, as submitted (point payloads
    /// with compression) ...
    pub payload_bytes_submitted: u64,
    /// ... and as queued for the log, after compression.
    pub payload_bytes_logged: u64,
    /// Entries queued with the compression bit set (key known, by id).
    pub compressed_entries: u64,
}

#[derive(Default)]
pub(crate) struct StatCounters {
    pub txns_submitted: AtomicU64,
    pub entries: AtomicU64,
    batches: AtomicU64,
    wraps: AtomicU64,
    update_tails: AtomicU64,
    snapshot_waits: AtomicU64,
    fences: AtomicU64,
    batch_bytes: AtomicU64,
    entry_bytes: AtomicU64,
    pub payload_bytes_submitted: AtomicU64,
    pub payload_bytes_logged: AtomicU64,
    pub compressed_entries: AtomicU64,
}

fn bump(c: &AtomicU64, by: u64) {
    c.fetch_add(by, Ordering::Relaxed);
}

impl StatCounters {
    pub fn snapshot(&self) -> DeclogStats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        DeclogStats {
            txns_submitted: g(&self.txns_submitted),
            entries: g(&self.entries),
            batches: g(&self.batches),
            wraps: g(&self.wraps),
            update_tails: g(&self.update_tails),
            snapshot_waits: g(&self.snapshot_waits),
            fences: g(&self.fences),
            batch_bytes: g(&self.batch_bytes),
            entry_bytes: g(&self.entry_bytes),
            payload_bytes_submitted: g(&self.payload_bytes_submitted),
            payload_bytes_logged: g(&self.payload_bytes_logged),
            compressed_entries: g(&self.compressed_entries),
        }
    }
}

/// Set once when the log must stop writing (a stream is full).
#[derive(Default)]
pub(crate) struct Poison {
    flag: AtomicBool,
    reason: Mutex<Option<FailReason>>,
}

impl Poison {
    pub fn set(&self, reason: FailReason) {
        let mut r = self.reason.lock();
        if r.is_none() {
            *r = Some(reason);
        }
        self.flag.store(true, Ordering::SeqCst);
    }

    pub fn get(&self) -> Option<FailReason> {
        if self.flag.load(Ordering::SeqCst) {
            self.reason.lock().clone()
        } else {
            None
        }
    }
}

/// Wakes logging threads blocked on a snapshot when any update tail persists.
#[derive(Default)]
pub(crate) struct ProgressSignal {
    m: Mutex<()>,
    cv: Condvar,
}

impl ProgressSignal {
    pub fn notify(&self) {
        let _g = self.m.lock();
        self.cv.notify_all();
    }

    pub fn wait(&self, timeout: Duration) {
        let mut g = self.m.lock();
        self.cv.wait_for(&mut g, timeout);
    }
}

/// What a step needs besides its own pipeline.
pub(crate) struct StepEnv<'a> {
    pub region: &'a Region,
    pub snapshots: &'a SnapshotTable,
    pub poison: &'a Poison,
    pub progress: &'a ProgressSignal,
    pub stats: &'a StatCounters,
    pub queues: &'a Mutex<QueueSet>,
    /// Producers waiting for a free queue.
    pub space_cv: &'a Condvar,
    /// Whether the open queue may be closed and flushed (no flush hold).
    pub close_open: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum TailState {
    Pending,
    Written,
    Durable,
}

/// The deferred tail of a batch's last entry: an update entry's, or under
/// strict ordering any entry's.
struct UpdateTail {
    lsn: u32,
    offset: RegionOffset,
    word: u64,
    /// The thread snapshot of an update entry; `None` for an insert entry.
    snapshot: Option<Snapshot>,
    state: TailState,
    waited: bool,
}

struct InflightBatch {
    queue: usize,
    entries: Vec<PendingEntry>,
    body_durable: bool,
    update: Option<UpdateTail>,
}

impl InflightBatch {
    fn done(&self) -> bool {
        self.body_durable && self.update.as_ref().is_none_or(|u| u.state == TailState::Durable)
    }

    /// Whether entry `i` is acknowledged by its deferred tail (not the body).
    fn tail_acks(&self, i: usize) -> bool {
        self.update.is_some() && i + 1 == self.entries.len()
    }
}

/// The writer side of one stream.
pub(crate) struct Pipeline {
    stream: usize,
    ring: Ring,
    epoch: u32,
    /// Stream position of the live log's start (the persisted head).
    head: u64,
    /// Where the next batch goes.
    end: u64,
    inflight: VecDeque<InflightBatch>,
    /// Strict ordering (module comment).
    strict: bool,
    /// The batch being built, kept from batch to batch.
    batch_bytes: Vec<u8>,
}

impl Pipeline {
    pub fn new(stream: usize, ring: Ring, epoch: u32, head: u64, end: u64, strict: bool) -> Self {
        Pipeline {
            stream,
            ring,
            epoch,
            head,
            end,
            inflight: VecDeque::new(),
            strict,
            batch_bytes: Vec::new(),
        }
    }

    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    pub fn head(&self) -> u64 {
        self.head
    }

    pub fn end(&self) -> u64 {
        self.end
    }

    pub fn is_idle(&self) -> bool {
        self.inflight.is_empty()
    }

    pub fn free_bytes(&self) -> u64 {
        self.ring.capacity_bytes - (self.end - self.head)
    }

    /// Frees the whole stream (after a checkpoint): the caller persists the new head.
    pub fn truncate_to_end(&mut self) -> u64 {
        debug_assert!(self.inflight.is_empty());
        self.head = self.end;
        self.head
    }

    /// Frees the stream before `head` (within `[head, end]`), after the caller
    /// persisted it as the new head; batches after it are untouched.
    pub fn advance_head(&mut self, head: u64) {
        debug_assert!(self.head <= head && head <= self.end);
        self.head = self.head.max(head);
    }

    /// Runs one pipeline step (module comment).
    pub fn step(&mut self, env: &StepEnv<'_>) -> StepOutcome {
        match self.write_step(env) {
            Written::Flushed { wrote_tail } => {
                fence_flushed(env, wrote_tail);
                self.complete_after_fence(env);
                StepOutcome::Progress
            }
            Written::Nothing(outcome) => outcome,
        }
    }

    /// The first half of a step: writes and flushes (no fence) a pending
    /// update tail whose body is durable and the next closed queue's batch.
    /// After a `Flushed`, the caller fences, then calls
    /// [`Pipeline::complete_after_fence`] (a helper flushing several
    /// streams fences once for all of them).
    pub fn write_step(&mut self, env: &StepEnv<'_>) -> Written {
        if let Some(reason) = env.poison.get() {
            self.fail_all(env, &reason, None);
            return Written::Nothing(StepOutcome::Idle);
        }
        let mut flushed = false;
        let mut wrote_tail = false;
        if let Some(b) = self
            .inflight
            .iter_mut()
            .find(|b| b.update.as_ref().is_some_and(|u| u.state != TailState::Durable))
        {
            let u = b.update.as_mut().expect("found by its update");
            if b.body_durable && u.state == TailState::Pending {
                let blocker =
                    u.snapshot.as_ref().and_then(|snap| env.snapshots.blocker(self.stream, u.lsn, snap));
                #[cfg(any(test, feature = "crashtest"))]
                let blocker = if planted(PlantedBug::IgnoreSnapshot) { None } else { blocker };
                match blocker {
                    None => {
                        env.region.store_u64(u.offset, u.word);
                        env.region.flush(u.offset, 8);
                        u.state = TailState::Written;
                        bump(&env.stats.update_tails, 1);
                        flushed = true;
                        wrote_tail = true;
                    }
                    Some(_) if !u.waited => {
                        u.waited = true;
                        bump(&env.stats.snapshot_waits, 1);
                    }
                    Some(_) => {}
                }
            }
        }
        // Strict ordering: nothing new while anything is in flight.
        let next = if self.strict && !self.inflight.is_empty() {
            None
        } else {
            env.queues.lock().take_next(env.close_open)
        };
        if let Some((queue, entries)) = next {
            match self.write_body(env, queue, entries) {
                Ok(batch) => {
                    self.inflight.push_back(batch);
                    flushed = true;
                }
                Err((reason, queue, entries)) => {
                    env.poison.set(reason.clone());
                    self.fail_all(env, &reason, Some((queue, entries)));
                    return Written::Nothing(StepOutcome::Idle);
                }
            }
        }
        if !flushed {
            return Written::Nothing(if self.inflight.is_empty() {
                StepOutcome::Idle
            } else {
                StepOutcome::Blocked
            });
        }
        Written::Flushed { wrote_tail }
    }

    /// Places, builds, writes and flushes one batch (and a wrap batch before
    /// it when it does not fit the rest of the lap).
    #[allow(clippy::type_complexity)]
    fn write_body(
        &mut self,
        env: &StepEnv<'_>,
        queue: usize,
        entries: Vec<PendingEntry>,
    ) -> Result<InflightBatch, (FailReason, usize, Vec<PendingEntry>)> {
        let entries_bytes: u64 = entries.iter().map(PendingEntry::encoded_len).sum();
        let len = batch_len(entries_bytes, self.ring.align_bytes);
        let mut pos = self.end;
        let mut wrap = None;
        let rest = self.ring.lap_remaining(pos);
        if rest < len {
            if rest >= BATCH_HEADER_BYTES {
                wrap = Some((pos, rest));
            }
            pos += rest;
        }
        let new_end = pos + len;
        if new_end - self.head > self.ring.capacity_bytes {
            let reason = FailReason::Full {
                stream: self.stream,
                needed_bytes: new_end - self.end,
                free_bytes: self.free_bytes(),
            };
            return Err((reason, queue, entries));
        }
        let parts: Vec<BatchEntry<'_>> =
            entries.iter().map(|e| BatchEntry { meta: e.meta, payload: &e.payload }).collect();
        let update_tail = build_batch_into(
            &parts,
            pos,
            self.epoch,
            self.ring.align_bytes,
            self.strict,
            &mut self.batch_bytes,
        );
        debug_assert_eq!(self.batch_bytes.len() as u64, len);
        if let Some((wpos, wlen)) = wrap {
            let at = self.ring.offset_of(wpos);
            env.region.write(at, &wrap_header(wpos, self.epoch, wlen));
            env.region.flush(at, BATCH_HEADER_BYTES);
            bump(&env.stats.wraps, 1);
        }
        let at = self.ring.offset_of(pos);
        env.region.write(at, &self.batch_bytes);
        env.region.flush(at, len);
        self.end = new_end;
        bump(&env.stats.batches, 1);
        bump(&env.stats.batch_bytes, len);
        bump(&env.stats.entry_bytes, entries_bytes);
        let update = update_tail.map(|(tail_at, word)| {
            let last = entries.last().expect("a deferred tail is the last entry's");
            debug_assert!(
                last.meta.lsn == 0 || last.snapshot.is_some(),
                "update entries carry their snapshot"
            );
            UpdateTail {
                lsn: last.meta.lsn,
                offset: at + tail_at,
                word,
                snapshot: last.snapshot.clone(),
                state: TailState::Pending,
                waited: false,
            }
        });
        Ok(InflightBatch { queue, entries, body_durable: false, update })
    }

    /// The second half of a step, after the fence that persisted what
    /// [`Pipeline::write_step`] flushed: acknowledges it.
    pub fn complete_after_fence(&mut self, env: &StepEnv<'_>) {
        let mut tail_persisted = false;
        for b in self.inflight.iter_mut() {
            if !b.body_durable {
                b.body_durable = true;
                for (i, e) in b.entries.iter().enumerate() {
                    if !b.tail_acks(i) {
                        e.ticket.entry_durable();
                    }
                }
            }
            if let Some(u) = b.update.as_mut().filter(|u| u.state == TailState::Written) {
                u.state = TailState::Durable;
                if u.lsn > 0 {
                    env.snapshots.persisted(self.stream, b.queue, u.lsn);
                }
                b.entries.last().expect("deferred-tail entry").ticket.entry_durable();
                tail_persisted = true;
            }
        }
        let mut released = Vec::new();
        self.inflight.retain(|b| {
            let done = b.done();
            if done {
                released.push(b.queue);
            }
            !done
        });
        if !released.is_empty() {
            let mut qs = env.queues.lock();
            for q in released {
                qs.release(q);
            }
            env.space_cv.notify_all();
        }
        if tail_persisted {
            env.progress.notify();
        }
    }

    /// The log is poisoned: every transaction with an entry not yet persisted
    /// here fails, pending update entries leave S, and all queues reopen.
    fn fail_all(
        &mut self,
        env: &StepEnv<'_>,
        reason: &FailReason,
        in_hand: Option<(usize, Vec<PendingEntry>)>,
    ) {
        let mut qs = env.queues.lock();
        let mut failed: Vec<(usize, PendingEntry)> = qs.drain_unflushed();
        if let Some((queue, entries)) = in_hand {
            qs.release(queue);
            failed.extend(entries.into_iter().map(|e| (queue, e)));
        }
        for b in self.inflight.drain(..) {
            qs.release(b.queue);
            let tail_durable = b.update.as_ref().is_some_and(|u| u.state == TailState::Durable);
            let tail_acked = (0..b.entries.len()).map(|i| b.tail_acks(i)).collect::<Vec<_>>();
            for (e, by_tail) in b.entries.into_iter().zip(tail_acked) {
                let durable = if by_tail { tail_durable } else { b.body_durable };
                if !durable {
                    failed.push((b.queue, e));
                }
            }
        }
        drop(qs);
        for (queue, e) in failed {
            if e.meta.lsn > 0 {
                env.snapshots.abandoned(self.stream, queue, e.meta.lsn);
            }
            e.ticket.fail(reason.clone());
        }
        env.space_cv.notify_all();
        env.progress.notify();
    }
}
