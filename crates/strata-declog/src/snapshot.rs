//! Thread snapshots (declog.txt section 4.3.2): the m x n arrays N (update
//! entries of each log queue already persisted) and S (LSN of the update
//! entry of each queue not yet persisted, 0 if none), latch-free.
//!
//! N and S of one queue live in one atomic 64-bit word (N in the high 32 bits,
//! wrapping; S in the low 32), so a reader never sees a persisted entry's N
//! advanced while its S still shows it pending, or the reverse. Each queue
//! holds at most one update entry (it closes the queue), so S is 0 whenever a
//! new update entry is queued.
//!
//! The rule: an update entry with LSN k may have its tail persisted once, for
//! every queue of every *other* thread whose snapshot showed a pending update
//! with 0 < LSN < k, that queue's N has advanced past the snapshot (that
//! pending entry is persisted). Entries of the same LSN are independent
//! (section 4.1), so they never wait on each other; entries of the own thread
//! are ordered by the flushing pipeline.
//!
//! When the snapshot is taken: the paper reads it when the entry is about to
//! be persisted. We take it when the entry is queued, right before setting
//! its S. Everything the entry depends on was queued before it (the engine
//! queues a transaction's entries before releasing its locks), so it is in
//! that snapshot or already persisted; and an entry never waits for one
//! queued after it. The latter makes waiting deadlock-free: with a snapshot
//! read at persist time, thread A's LSN-3 entry could wait for thread B's
//! LSN-2 entry while B's LSN-2 entry waits, as seen at its persist time, for
//! an unrelated LSN-1 entry queued later in A behind the LSN-3 entry.
//!
//! Why before setting S: reading the cells is not one atomic step, so a
//! snapshot read after setting S could show an entry whose S was set while
//! it was being read, and the same cycle appears (found by
//! `tests/shuttle_sync.rs`): B sets S for R (LSN 2); A queues P (LSN 3),
//! whose snapshot shows R, then Q (LSN 1); R's snapshot, still being read,
//! now shows Q. P waits for R, R for Q, and Q, behind P in A's queues, for P.
//! Read first, every pending entry a snapshot shows had set its S before the
//! reader set its own; waits across threads (snapshots) and within a thread
//! (queue order) all point to entries whose S was set earlier, so they
//! cannot form a cycle.

use crate::sync::atomic::{AtomicU64, Ordering};

const S_MASK: u64 = 0xFFFF_FFFF;

/// The shared N/S table of all logging threads.
pub struct SnapshotTable {
    threads: usize,
    queues: usize,
    cells: Vec<AtomicU64>,
}

/// A copy of the table taken when an update entry was queued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    cells: Vec<u64>,
}

impl Snapshot {
    /// (N, S) of queue `queue` of thread `thread` in this snapshot.
    pub fn get(&self, queues: usize, thread: usize, queue: usize) -> (u32, u32) {
        split(self.cells[thread * queues + queue])
    }
}

fn split(cell: u64) -> (u32, u32) {
    ((cell >> 32) as u32, (cell & S_MASK) as u32)
}

impl SnapshotTable {
    pub fn new(threads: usize, queues: usize) -> Self {
        SnapshotTable { threads, queues, cells: (0..threads * queues).map(|_| AtomicU64::new(0)).collect() }
    }

    fn cell(&self, thread: usize, queue: usize) -> &AtomicU64 {
        &self.cells[thread * self.queues + queue]
    }

    /// Current (N, S) of one queue.
    pub fn get(&self, thread: usize, queue: usize) -> (u32, u32) {
        split(self.cell(thread, queue).load(Ordering::SeqCst))
    }

    /// N and S as the paper's two m x n arrays (rows: threads).
    pub fn arrays(&self) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
        let rows = |f: fn((u32, u32)) -> u32| {
            (0..self.threads).map(|t| (0..self.queues).map(|q| f(self.get(t, q))).collect()).collect()
        };
        (rows(|c| c.0), rows(|c| c.1))
    }

    /// An update entry with `lsn` is queued in `queue` of `thread`: returns a
    /// snapshot of every queue read just before S = lsn is set (module
    /// comment: the order keeps the waits free of cycles).
    pub fn queue_update(&self, thread: usize, queue: usize, lsn: u32) -> Snapshot {
        debug_assert!(lsn > 0);
        let snapshot = Snapshot { cells: self.cells.iter().map(|c| c.load(Ordering::SeqCst)).collect() };
        let prev = self.cell(thread, queue).fetch_add(lsn as u64, Ordering::SeqCst);
        debug_assert_eq!(prev & S_MASK, 0, "a queue holds one update entry");
        snapshot
    }

    /// The update entry of `queue` of `thread` (with `lsn`) is persisted:
    /// N += 1 and S = 0 in one atomic step.
    pub fn persisted(&self, thread: usize, queue: usize, lsn: u32) {
        let delta = (1u64 << 32).wrapping_sub(lsn as u64);
        let prev = self.cell(thread, queue).fetch_add(delta, Ordering::SeqCst);
        debug_assert_eq!(prev & S_MASK, lsn as u64, "persisted entry was the pending one");
    }

    /// A queued update entry failed (the log is poisoned): S = 0, N unchanged.
    pub fn abandoned(&self, thread: usize, queue: usize, lsn: u32) {
        self.cell(thread, queue).fetch_sub(lsn as u64, Ordering::SeqCst);
    }

    /// Whether the update entry of `thread` with `lsn` and `snapshot` may be
    /// persisted now; otherwise the first queue it waits for.
    pub fn blocker(&self, thread: usize, lsn: u32, snapshot: &Snapshot) -> Option<(usize, usize)> {
        for t in (0..self.threads).filter(|&t| t != thread) {
            for q in 0..self.queues {
                let (n0, s0) = snapshot.get(self.queues, t, q);
                if s0 != 0 && s0 < lsn && self.get(t, q).0 == n0 {
                    return Some((t, q));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's Fig. 8 example: three threads of two queues.
    #[test]
    fn paper_figure_8_waits_then_proceeds() {
        let t = SnapshotTable::new(3, 2);
        // L_{i+2}^A (LSN 1) in q11, already persisted.
        t.queue_update(0, 0, 1);
        t.persisted(0, 0, 1);
        // L_{i+2}^D (LSN 1) pending in q21, L_{i+4}^D (LSN 2) pending in q22.
        t.queue_update(1, 0, 1);
        t.queue_update(1, 1, 2);
        // L_{i+4}^B (LSN 2) queued in q12: its snapshot is state 1.
        let snap = t.queue_update(0, 1, 2);
        let (n, s) = t.arrays();
        assert_eq!((n[0].clone(), s[0].clone(), s[1].clone()), (vec![1, 0], vec![0, 2], vec![1, 2]));
        assert_eq!(t.blocker(0, 2, &snap), Some((1, 0)), "waits for the LSN-1 entry in q21");
        // L_{i+2}^D is persisted; L_{i+5}^C (LSN 1) arrives in q21 (state 2).
        t.persisted(1, 0, 1);
        t.queue_update(1, 0, 1);
        assert_eq!(t.get(1, 0), (1, 1));
        assert_eq!(t.blocker(0, 2, &snap), None, "N21 advanced: the later LSN-1 entry is independent");
    }

    #[test]
    fn equal_lsns_and_own_thread_never_block() {
        let t = SnapshotTable::new(2, 2);
        t.queue_update(1, 0, 3);
        t.queue_update(0, 1, 1);
        let snap = t.queue_update(0, 0, 3);
        assert_eq!(
            t.blocker(0, 3, &snap),
            None,
            "same LSN in thread 1; own thread's LSN 1 is the pipeline's job"
        );
        let snap = t.queue_update(1, 1, 4);
        assert_eq!(t.blocker(1, 4, &snap), Some((0, 0)));
    }

    #[test]
    fn the_snapshot_is_read_before_the_entry_sets_its_s() {
        let t = SnapshotTable::new(2, 2);
        t.queue_update(1, 0, 1);
        let snap = t.queue_update(0, 1, 2);
        assert_eq!(snap.get(2, 0, 1), (0, 0), "not its own S");
        assert_eq!(snap.get(2, 1, 0), (0, 1), "an entry queued before it");
        assert_eq!(t.get(0, 1), (0, 2), "S set once the snapshot is read");
    }

    #[test]
    fn entries_queued_after_the_snapshot_are_not_waited_for() {
        let t = SnapshotTable::new(2, 2);
        let snap = t.queue_update(0, 0, 5);
        t.queue_update(1, 0, 1);
        assert_eq!(t.blocker(0, 5, &snap), None);
        t.abandoned(1, 0, 1);
        assert_eq!(t.get(1, 0), (0, 0));
    }
}
