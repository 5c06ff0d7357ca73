//! Group commit (fir.txt 4.2.1, step 8): committing transactions queue
//! `(worker, txnId)`; a group-commit thread takes the queue, stores each
//! worker's newest txnId in its LCTT entry, flushes the entries and fences
//! once for the batch (the commit signals of many transactions in one
//! persist), and only then makes the batch's versions visible and wakes
//! the waiters. A version is visible only once durable, so a committed
//! transaction never depends on one a crash could lose: the versions
//! recovery keeps (txnId at most their region's LCTT entry) are closed
//! under dependencies.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// A committed transaction waiting for its batch.
pub(crate) struct Queued {
    pub worker: u32,
    pub txn: u64,
    /// What to make visible once durable: (table, key) of each write.
    pub writes: Vec<crate::db::PendingWrite>,
}

/// The queue and what the thread published.
pub(crate) struct GroupCommit {
    pub queue: Mutex<VecDeque<Queued>>,
    pub queued: Condvar,
    /// Per worker: the newest txnId made durable and visible.
    pub durable: Box<[AtomicU64]>,
    pub done: Condvar,
    pub done_lock: Mutex<()>,
    pub stop: AtomicBool,
    /// Held by whoever takes and commits a batch.
    pub leader: Mutex<()>,
}

/// Checks of [`GroupCommit::wait`] before it sleeps (the first half spin,
/// the second yield).
const SPINS_BEFORE_SLEEP: u32 = 256;

/// How long the thread sleeps when nothing is queued.
pub(crate) const IDLE_WAIT: Duration = Duration::from_millis(1);

impl GroupCommit {
    pub fn new(workers: u32, lctt: &[u64]) -> GroupCommit {
        GroupCommit {
            queue: Mutex::new(VecDeque::new()),
            queued: Condvar::new(),
            durable: (0..workers as usize).map(|w| AtomicU64::new(lctt[w])).collect(),
            done: Condvar::new(),
            done_lock: Mutex::new(()),
            stop: AtomicBool::new(false),
            leader: Mutex::new(()),
        }
    }

    pub fn push(&self, q: Queued) {
        self.queue.lock().push_back(q);
        self.queued.notify_one();
    }

    /// The next batch: everything queued (waits up to [`IDLE_WAIT`]).
    pub fn take(&self) -> Vec<Queued> {
        let mut q = self.queue.lock();
        if q.is_empty() {
            self.queued.wait_for(&mut q, IDLE_WAIT);
        }
        q.drain(..).collect()
    }

    /// Everything queued, without waiting.
    pub fn take_now(&self) -> Vec<Queued> {
        self.queue.lock().drain(..).collect()
    }

    pub fn publish(&self, worker: u32, txn: u64) {
        self.durable[worker as usize].fetch_max(txn, Release);
    }

    pub fn wake(&self) {
        let _g = self.done_lock.lock();
        self.done.notify_all();
    }

    pub fn is_durable(&self, worker: u32, txn: u64) -> bool {
        self.durable[worker as usize].load(Acquire) >= txn
    }

    /// Blocks until `(worker, txn)` is durable. A transaction in a batch
    /// is usually durable within microseconds (its committer is running
    /// the batch), so the wait spins, then yields, before it sleeps: a
    /// reader of a hot row should not pay a sleep and a wake-up.
    pub fn wait(&self, worker: u32, txn: u64) {
        for i in 0..SPINS_BEFORE_SLEEP {
            if self.is_durable(worker, txn) {
                return;
            }
            if i < SPINS_BEFORE_SLEEP / 2 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        let mut g = self.done_lock.lock();
        while !self.is_durable(worker, txn) {
            self.done.wait_for(&mut g, IDLE_WAIT);
        }
    }
}
