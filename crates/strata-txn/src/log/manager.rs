//! One log and its log manager (taurus.txt Algorithm 1's `WriteLogBuffer`
//! and Algorithm 2), shared by serial logging (one of them) and Taurus (N).
//!
//! Workers reserve space by advancing `logLSN` and copy their record into
//! the log buffer, a ring of 8-byte words, concurrently; each worker's
//! *slot* holds its `allocatedLSN` while it fills and [`IDLE`] once filled,
//! which is the paper's pair `allocatedLSN[j] ≥ filledLSN[j]` read in one
//! atomic load. The log manager thread flushes up to `readyLSN` (the
//! smallest busy slot, else `logLSN`), publishes `PLV[i]`, and then
//! *commits* the flushed records in log order: a record commits once every
//! record before it in this log has and its LV is at most the committed
//! vector `CLV` (every log's committed end). See [`super::Commits`] for why
//! the committed vector and not `PLV`.

use std::collections::VecDeque;
use std::sync::Arc;
use strata_sync::atomic::{AtomicBool, AtomicU64, Ordering::*};

use strata_sync::Mutex;

use super::device::LogDevice;
use super::Commits;
use crate::error::TxnError;
use crate::lv::{Lv, MAX_LOGS};
use crate::record::{peek_len, peek_lv, HEADER_BYTES, LV_MASK_BYTES};
use strata_pmem::{Region, RegionOffset};

/// Most bytes one flush of the ring writes (more only for one record).
pub(crate) const MAX_FLUSH_BYTES: u64 = 256 << 10;

/// How long an idle manager of logs that workers round themselves sleeps.
const HELPED_BACKSTOP_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1);

/// The next [`LogManager::id`].
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A slot whose worker is not filling the buffer.
const IDLE: u64 = u64::MAX;

pub(crate) struct LogManager {
    /// Unique in the process (a worker's list of its own records names
    /// the log it wrote them to by it).
    id: u64,
    index: usize,
    /// `logLSN`: the next position to allocate.
    log_lsn: AtomicU64,
    /// Per worker of this log: its `allocatedLSN` while filling, else IDLE.
    slots: Box<[AtomicU64]>,
    ring: Box<[AtomicU64]>,
    /// What is durable on the device (`PLV[i]`).
    flushed: AtomicU64,
    failed: AtomicBool,
    device: Box<dyn LogDevice>,
    /// A PMem device written in place: workers copy their record into the
    /// region at its LSN, flush its lines and fence, so the region is the
    /// log buffer and the manager only publishes (no ring, no copy).
    direct: Option<Arc<Region>>,
    /// The manager's own state: flushed records not yet committed, in log order.
    pending: Mutex<Pending>,
    /// `LPLV` (Algorithm 5): the last anchor placed in the buffer, which
    /// workers compress against; published only once the anchor's space
    /// is allocated, so a record compressed against it lies after it.
    lplv: [AtomicU64; MAX_LOGS],
    /// Where the last anchor ends; held by the worker placing the next one.
    anchor: Mutex<u64>,
    /// The same end, read without the lock by [`Self::anchor_due`].
    anchor_end: AtomicU64,
    /// The device's capacity (fixed while the log is open).
    capacity_bytes: u64,
    /// Flushed records commit once their LVs are covered (Taurus, serial),
    /// or at once (Silo-R, whose commit is by epoch).
    commit_by_lv: bool,
}

/// A (non-anchor) record a worker just wrote: where it lies, and its LV
/// and mask as its header stores them (`lv` may hold the masked-out
/// elements too: decompression replaces them).
pub(crate) struct Written {
    pub start: u64,
    pub end: u64,
    pub lv: Lv,
    pub mask: u32,
}

#[derive(Default)]
struct Pending {
    records: VecDeque<(u64, Lv)>,
    scratch: Vec<u8>,
    /// The last anchor flushed (Algorithm 5), for the records after it.
    last_anchor: Lv,
}

/// What one [`LogManager::flush_round`] did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RoundOutcome {
    pub flushed_bytes: u64,
    pub committed: bool,
}

impl LogManager {
    /// A log whose device holds `start` bytes already (the recovered prefix).
    pub(crate) fn new(
        index: usize,
        device: Box<dyn LogDevice>,
        workers: usize,
        ring_bytes: usize,
        start: u64,
    ) -> Self {
        let direct = device.region();
        let capacity_bytes = device.capacity_bytes();
        // In place on PMem the ring is not used.
        let words = if direct.is_some() { 1 } else { (ring_bytes / 8).max(1) };
        LogManager {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            index,
            log_lsn: AtomicU64::new(start),
            slots: (0..workers.max(1)).map(|_| AtomicU64::new(IDLE)).collect(),
            ring: (0..words).map(|_| AtomicU64::new(0)).collect(),
            flushed: AtomicU64::new(start),
            failed: AtomicBool::new(false),
            device,
            direct,
            pending: Mutex::new(Pending::default()),
            lplv: std::array::from_fn(|_| AtomicU64::new(0)),
            anchor: Mutex::new(start),
            anchor_end: AtomicU64::new(start),
            capacity_bytes,
            commit_by_lv: true,
        }
    }

    /// A log whose flushed records commit at once (the scheme decides
    /// durability itself: Silo-R's epochs).
    pub(crate) fn without_lv_commit(mut self) -> Self {
        self.commit_by_lv = false;
        self
    }

    /// `LPLV` as workers read it (an element may be newer than another:
    /// every value read belongs to an anchor allocated before the reader's
    /// record, and the anchor before the record is at least as large).
    pub(crate) fn lplv(&self, logs: usize) -> Lv {
        let mut lv = Lv::ZERO;
        for (j, a) in self.lplv[..logs].iter().enumerate() {
            lv.set(j, a.load(Acquire));
        }
        lv
    }

    /// Whether the log has grown `every_bytes` past its last anchor (false
    /// while another worker places one).
    pub(crate) fn anchor_due(&self, every_bytes: u64) -> bool {
        self.log_lsn.load(Relaxed) >= self.anchor_end.load(Relaxed) + every_bytes
            && self.anchor.try_lock().is_some_and(|end| self.log_lsn.load(Relaxed) >= *end + every_bytes)
    }

    /// Places `anchor_and_record` (an anchor of LV `anchor`, then a record
    /// compressed against it) in one allocation and publishes the anchor as
    /// `LPLV`, one worker at a time (the others compress against the
    /// previous anchor meanwhile, which is safe: their records decompress
    /// with the newer, larger one). The record's LSN, or `None` if another
    /// worker is placing an anchor.
    pub(crate) fn write_with_anchor(
        &self,
        slot: usize,
        anchor: &Lv,
        anchor_and_record: &[u8],
        anchor_bytes: usize,
    ) -> Option<Result<u64, TxnError>> {
        let mut end = self.anchor.try_lock()?;
        let r = self.write(slot, anchor_and_record);
        if let Ok(lsn) = r {
            for (j, a) in self.lplv.iter().enumerate() {
                a.fetch_max(anchor.get(j), Release);
            }
            *end = lsn - (anchor_and_record.len() - anchor_bytes) as u64;
            self.anchor_end.store(*end, Relaxed);
        }
        Some(r)
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    fn ring_bytes(&self) -> u64 {
        self.ring.len() as u64 * 8
    }

    pub(crate) fn flushed(&self) -> u64 {
        self.flushed.load(Acquire)
    }

    /// `WriteLogBuffer` (Algorithm 1, lines 22-27) for the worker in `slot`:
    /// returns the record's LSN, its end position.
    pub(crate) fn write(&self, slot: usize, record: &[u8]) -> Result<u64, TxnError> {
        let len = record.len() as u64;
        debug_assert_eq!(len % 8, 0, "records are padded to 8 bytes");
        let log = self.index as u32;
        if self.direct.is_none() && len > self.ring_bytes() {
            return Err(TxnError::Options(format!("a record of {len} bytes exceeds the log buffer")));
        }
        let capacity_bytes = self.capacity_bytes;
        let slot = &self.slots[slot];
        // allocatedLSN[j] = logLSN, then the fetch-and-add (a CAS, so a full
        // log refuses the record without leaving a hole). Release/acquire
        // suffices, no full barrier: the slot's store precedes the CAS, so
        // a round whose (acquire) load of `logLSN` sees the CAS, or a later
        // allocation, sees this slot's value or a later one; a round that
        // sees an older `logLSN` stops at or before this record anyway.
        let lsn = loop {
            let current = self.log_lsn.load(Acquire);
            slot.store(current, Release);
            if current + len > capacity_bytes {
                slot.store(IDLE, Release);
                return Err(TxnError::LogFull { log, capacity_bytes });
            }
            if self.log_lsn.compare_exchange(current, current + len, AcqRel, Acquire).is_ok() {
                break current;
            }
        };
        if let Some(region) = &self.direct {
            // The record persisted in place before its slot clears: all
            // below `readyLSN` is durable when the manager reads it.
            region.write_flush(RegionOffset(lsn), record);
            region.fence();
            slot.store(IDLE, Release);
            return Ok(lsn + len);
        }
        // Room in the ring: the manager must have flushed what this overwrites.
        while lsn + len - self.flushed.load(Acquire) > self.ring_bytes() {
            if self.failed.load(Acquire) {
                slot.store(IDLE, Release);
                return Err(TxnError::LogFailed { log });
            }
            strata_sync::thread::yield_now();
        }
        let words = self.ring.len() as u64;
        for (k, chunk) in record.chunks_exact(8).enumerate() {
            let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            self.ring[((lsn / 8 + k as u64) % words) as usize].store(w, Relaxed);
        }
        // filledLSN[j] = lsn + size.
        slot.store(IDLE, Release);
        Ok(lsn + len)
    }

    /// The last record boundary in `[from, ready]` at most
    /// [`MAX_FLUSH_BYTES`] past `from` (at least one record): a flush is
    /// bounded, so a slow device commits steadily instead of in one long
    /// write of everything the workers buffered.
    fn bounded(&self, from: u64, ready: u64) -> u64 {
        let words = self.ring.len() as u64;
        let mut at = from;
        while at < ready {
            let head = self.ring[((at / 8) % words) as usize].load(Relaxed).to_le_bytes();
            let len = u64::from(peek_len(&head));
            assert!(len >= 8 && at + len <= ready, "log {}: whole records below readyLSN", self.index);
            if at > from && at + len > from + MAX_FLUSH_BYTES {
                break;
            }
            at += len;
        }
        at
    }

    /// Algorithm 2, then the commit step: flush up to `readyLSN`, publish
    /// it, commit the flushed records whose LVs `commits` covers.
    pub(crate) fn flush_round(&self, commits: &Commits) -> Result<RoundOutcome, TxnError> {
        self.round(&mut self.pending.lock(), commits, &[])
    }

    /// Whether workers run rounds themselves ([`Self::help_round`]): on a
    /// PMem log written in place, where a round only reads headers and
    /// publishes (no device write a worker would wait on).
    pub(crate) fn workers_help(&self) -> bool {
        self.direct.is_some()
    }

    /// A round by a worker, unless one is under way (then that round, or
    /// the next, covers what this one would have done). Only where
    /// [`Self::workers_help`]: on 2 cores, a manager thread woken for every
    /// record costs the workers more than the round itself.
    /// `written` describes the helper's own records, in log order, which
    /// the round then need not read back from the region (a cache miss
    /// each: they were streamed past the cache).
    pub(crate) fn help_round(
        &self,
        commits: &Commits,
        written: &[Written],
    ) -> Option<Result<RoundOutcome, TxnError>> {
        debug_assert!(self.workers_help());
        let mut pending = self.pending.try_lock()?;
        Some(self.round(&mut pending, commits, written))
    }

    fn round(
        &self,
        pending: &mut Pending,
        commits: &Commits,
        written: &[Written],
    ) -> Result<RoundOutcome, TxnError> {
        let mut outcome = RoundOutcome::default();
        let mut ready = self.log_lsn.load(Acquire);
        for s in self.slots.iter() {
            let allocated = s.load(Acquire);
            if allocated != IDLE {
                ready = ready.min(allocated);
            }
        }
        let from = self.flushed.load(Acquire);
        if self.direct.is_none() {
            ready = self.bounded(from, ready);
        }
        if ready > from {
            let Pending { records, scratch, last_anchor } = &mut *pending;
            if let Some(region) = &self.direct {
                // Already durable: read each record's header and LV only.
                let mut at = from;
                let mut head_buf = [0u8; HEADER_BYTES + LV_MASK_BYTES + 8 * MAX_LOGS];
                // The helper's records before `from` were published already.
                let mut own = written.iter().skip_while(|w| w.start < from).peekable();
                while at < ready {
                    while own.next_if(|w| w.start < at).is_some() {}
                    if let Some(w) = own.next_if(|w| w.start == at && w.end <= ready) {
                        // As the header would read: the stored LV and its mask.
                        #[cfg(debug_assertions)]
                        {
                            region.read(RegionOffset(at), &mut head_buf);
                            let (anchor, lv, mask) = peek_lv(&head_buf).expect("a whole record has its LV");
                            assert!(!anchor && mask == w.mask, "log {}: the record at {at}", self.index);
                            assert_eq!(
                                lv.decompressed(mask, last_anchor, MAX_LOGS),
                                w.lv.decompressed(mask, last_anchor, MAX_LOGS),
                                "log {}: the record at {at}",
                                self.index
                            );
                        }
                        push_flushed(records, last_anchor, w.end, false, w.lv, w.mask);
                        at = w.end;
                        continue;
                    }
                    let head_len = head_buf.len().min((ready - at) as usize);
                    let head = &mut head_buf[..head_len];
                    region.read(RegionOffset(at), head);
                    let len = peek_len(head) as u64;
                    assert!(
                        len >= 8 && at + len <= ready,
                        "log {}: whole records below readyLSN",
                        self.index
                    );
                    let (anchor, lv, mask) = peek_lv(head).expect("a whole record has its LV");
                    push_flushed(records, last_anchor, at + len, anchor, lv, mask);
                    at += len;
                }
                self.flushed.store(ready, Release);
                commits.set_flushed(self.index, ready);
                outcome.flushed_bytes = ready - from;
                return self.commit_step(pending, commits, outcome);
            }
            scratch.clear();
            let words = self.ring.len() as u64;
            for p in (from..ready).step_by(8) {
                scratch.extend_from_slice(&self.ring[((p / 8) % words) as usize].load(Relaxed).to_le_bytes());
            }
            if let Err(e) = self.device.append_durable(from, scratch) {
                self.failed.store(true, Release);
                return Err(e);
            }
            let mut at = 0usize;
            while at < scratch.len() {
                let len = peek_len(&scratch[at..]) as usize;
                assert!(
                    len >= 8 && at + len <= scratch.len(),
                    "log {}: the buffer holds whole records",
                    self.index
                );
                let (anchor, lv, mask) = peek_lv(&scratch[at..]).expect("a whole record has its LV");
                push_flushed(records, last_anchor, from + (at + len) as u64, anchor, lv, mask);
                at += len;
            }
            self.flushed.store(ready, Release);
            commits.set_flushed(self.index, ready);
            outcome.flushed_bytes = ready - from;
        }
        self.commit_step(pending, commits, outcome)
    }

    /// The commit step of a round: commit in log order while each flushed
    /// record's dependencies are committed.
    fn commit_step(
        &self,
        pending: &mut Pending,
        commits: &Commits,
        mut outcome: RoundOutcome,
    ) -> Result<RoundOutcome, TxnError> {
        // Commit in log order while each record's dependencies are committed.
        let clv = commits.committed_lv();
        let mut committed_to = None;
        while let Some((end, lv)) = pending.records.front() {
            if self.commit_by_lv && !lv.le(&clv) {
                break;
            }
            committed_to = Some(*end);
            pending.records.pop_front();
        }
        if let Some(end) = committed_to {
            commits.set_committed(self.index, end);
            outcome.committed = true;
        }
        Ok(outcome)
    }
}

/// Queues a flushed record (ending at `end`) for the commit step, its LV
/// decompressed with the last anchor; an anchor becomes the last anchor
/// and commits at once.
fn push_flushed(
    records: &mut VecDeque<(u64, Lv)>,
    last_anchor: &mut Lv,
    end: u64,
    anchor: bool,
    lv: Lv,
    mask: u32,
) {
    if anchor {
        *last_anchor = lv;
        records.push_back((end, Lv::ZERO));
    } else {
        records.push_back((end, lv.decompressed(mask, last_anchor, MAX_LOGS)));
    }
}

/// A log manager thread's loop over the logs `which`: a round each, again
/// at once after progress, else after `interval`; returns once `stop` is set.
pub(crate) fn run_managers(
    managers: Arc<Vec<LogManager>>,
    which: Vec<usize>,
    commits: Arc<Commits>,
    stop: Arc<AtomicBool>,
    interval: std::time::Duration,
) {
    while !stop.load(Acquire) {
        let mut progress = false;
        for &i in &which {
            match managers[i].flush_round(&commits) {
                Ok(o) => progress |= o.flushed_bytes > 0 || o.committed,
                Err(e) => commits.fail(i, e),
            }
        }
        if !progress {
            // Logs that workers round themselves need the thread only as a
            // backstop (a record no later worker's round covers).
            let helped = which.iter().all(|&i| managers[i].workers_help());
            strata_sync::thread::sleep(if helped {
                interval.max(HELPED_BACKSTOP_INTERVAL)
            } else {
                interval
            });
        }
    }
}
