//! The log queues of one logging thread (declog.txt section 4.2, "Log
//! Queues"): n queues of capacity l used circularly. Entries go to the open
//! queue; an entry with LSN > 0 closes it, and so does reaching l entries or
//! the largest batch, and subsequent entries go to the next queue. The
//! flushing pipeline takes closed queues in closing order and reopens a queue
//! once everything in it is persisted. When every queue is closed or in
//! flight, producers wait (back-pressure).
//!
//! Group commit: when the pipeline finds no closed queue but the open one
//! holds entries, it closes it and flushes it at once, so a commit never waits
//! for its queue to fill; whatever arrived during the previous flush forms the
//! next batch. While a producer holds the flush ([`crate::DecLog::hold_flush`]:
//! it is queueing several transactions and waits for none of them yet) the
//! open queue is left open, so their entries go in one batch.

use std::collections::VecDeque;

use crate::batch::BATCH_HEADER_BYTES;
use crate::entry::{entry_len, EntryMeta};
use crate::snapshot::{Snapshot, SnapshotTable};
use crate::ticket::Ticket;

/// An entry waiting in a log queue.
pub(crate) struct PendingEntry {
    pub meta: EntryMeta,
    pub payload: Vec<u8>,
    pub ticket: Ticket,
    /// For an update entry: the thread snapshot taken when it was queued.
    pub snapshot: Option<Snapshot>,
}

impl PendingEntry {
    pub fn encoded_len(&self) -> u64 {
        entry_len(self.payload.len() as u64)
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum SlotState {
    Free,
    Open,
    Closed,
    InFlight,
}

struct Slot {
    state: SlotState,
    entries: Vec<PendingEntry>,
    entries_bytes: u64,
}

/// The n log queues of one logging thread.
pub(crate) struct QueueSet {
    thread: usize,
    slots: Vec<Slot>,
    /// The open queue, or the one to open next.
    cur: usize,
    /// Closed queues in closing order.
    closed: VecDeque<usize>,
    queue_len: usize,
    max_entries_bytes: u64,
}

impl QueueSet {
    pub fn new(thread: usize, queues: usize, queue_len: usize, max_batch_bytes: u64) -> Self {
        QueueSet {
            thread,
            slots: (0..queues)
                .map(|_| Slot { state: SlotState::Free, entries: Vec::new(), entries_bytes: 0 })
                .collect(),
            cur: 0,
            closed: VecDeque::new(),
            queue_len,
            max_entries_bytes: max_batch_bytes - BATCH_HEADER_BYTES,
        }
    }

    fn ensure_open(&mut self) -> bool {
        let slot = &mut self.slots[self.cur];
        match slot.state {
            SlotState::Open => true,
            SlotState::Free => {
                slot.state = SlotState::Open;
                true
            }
            SlotState::Closed | SlotState::InFlight => false,
        }
    }

    fn close_cur(&mut self) {
        let slot = &mut self.slots[self.cur];
        debug_assert_eq!(slot.state, SlotState::Open);
        slot.state = SlotState::Closed;
        self.closed.push_back(self.cur);
        self.cur = (self.cur + 1) % self.slots.len();
    }

    /// Appends `entry` to the open queue, closing queues as the rules say.
    /// Gives the entry back when no queue is free; the caller waits for the
    /// pipeline to release one and retries.
    pub fn push(&mut self, mut entry: PendingEntry, snapshots: &SnapshotTable) -> Result<(), PendingEntry> {
        let len = entry.encoded_len();
        debug_assert!(len <= self.max_entries_bytes, "oversized entries are rejected at submit");
        if !self.ensure_open() {
            return Err(entry);
        }
        let slot = &self.slots[self.cur];
        if !slot.entries.is_empty() && slot.entries_bytes + len > self.max_entries_bytes {
            self.close_cur();
            if !self.ensure_open() {
                return Err(entry);
            }
        }
        let lsn = entry.meta.lsn;
        if lsn > 0 {
            entry.snapshot = Some(snapshots.queue_update(self.thread, self.cur, lsn));
        }
        let slot = &mut self.slots[self.cur];
        slot.entries.push(entry);
        slot.entries_bytes += len;
        if lsn > 0 || slot.entries.len() >= self.queue_len {
            self.close_cur();
        }
        Ok(())
    }

    /// Whether the pipeline has a queue to flush (`close_open`: whether it
    /// may close the open queue, i.e. nobody holds the flush).
    pub fn has_work(&self, close_open: bool) -> bool {
        !self.closed.is_empty()
            || close_open
                && self.slots[self.cur].state == SlotState::Open
                && !self.slots[self.cur].entries.is_empty()
    }

    /// The next queue to flush, in closing order (closing the open queue when
    /// nothing else is waiting and `close_open`): its index and entries.
    pub fn take_next(&mut self, close_open: bool) -> Option<(usize, Vec<PendingEntry>)> {
        if close_open
            && self.closed.is_empty()
            && self.slots[self.cur].state == SlotState::Open
            && !self.slots[self.cur].entries.is_empty()
        {
            self.close_cur();
        }
        let q = self.closed.pop_front()?;
        let slot = &mut self.slots[q];
        slot.state = SlotState::InFlight;
        slot.entries_bytes = 0;
        // The next fill is likely as large: room for it now, not a run of
        // doublings (each a copy of the entries so far) while producers push.
        let room = slot.entries.len();
        Some((q, std::mem::replace(&mut slot.entries, Vec::with_capacity(room))))
    }

    /// Everything of queue `q` is persisted: it may be reopened.
    pub fn release(&mut self, q: usize) {
        debug_assert_eq!(self.slots[q].state, SlotState::InFlight);
        self.slots[q].state = SlotState::Free;
    }

    /// Removes every entry not yet taken by the pipeline (the log failed).
    pub fn drain_unflushed(&mut self) -> Vec<(usize, PendingEntry)> {
        let mut out = Vec::new();
        for (q, slot) in self.slots.iter_mut().enumerate() {
            if matches!(slot.state, SlotState::Open | SlotState::Closed) {
                out.extend(slot.entries.drain(..).map(|e| (q, e)));
                slot.entries_bytes = 0;
                slot.state = SlotState::Free;
            }
        }
        self.closed.clear();
        out
    }

    /// No entry queued and no queue in flight.
    pub fn is_idle(&self) -> bool {
        self.slots
            .iter()
            .all(|s| s.entries.is_empty() && s.state != SlotState::InFlight && s.state != SlotState::Closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_media::TxnId;

    fn entry(txn: u64, lsn: u32) -> PendingEntry {
        PendingEntry {
            meta: EntryMeta {
                txn: TxnId(txn),
                key_hash: 0,
                lsn,
                entry_count: 1,
                op_index: 0,
                compressed: false,
                raw: false,
                form: crate::entry::PayloadForm::Single,
            },
            payload: vec![0; 8],
            ticket: Ticket::new(TxnId(txn), 1),
            snapshot: None,
        }
    }

    fn txns(entries: &[PendingEntry]) -> Vec<u64> {
        entries.iter().map(|e| e.meta.txn.0).collect()
    }

    /// The paper's Fig. 7: L_i, L_{i+1} (LSN 0) and L_{i+2} (LSN 1) fill q1;
    /// L_{i+3}, L_{i+4} (LSN 2) fill q2; L_{i+5} goes to q3.
    #[test]
    fn update_entries_close_their_queue() {
        let snaps = SnapshotTable::new(1, 3);
        let mut qs = QueueSet::new(0, 3, 300, 4096);
        for (t, lsn) in [(0, 0), (1, 0), (2, 1), (3, 0), (4, 2), (5, 1)] {
            assert!(qs.push(entry(t, lsn), &snaps).is_ok());
        }
        let (q1, e1) = qs.take_next(true).unwrap();
        let (q2, e2) = qs.take_next(true).unwrap();
        let (q3, e3) = qs.take_next(true).unwrap();
        assert_eq!((q1, txns(&e1)), (0, vec![0, 1, 2]));
        assert_eq!((q2, txns(&e2)), (1, vec![3, 4]));
        assert_eq!((q3, txns(&e3)), (2, vec![5]));
        assert!(e1[2].snapshot.is_some() && e1[0].snapshot.is_none());
        assert!(qs.take_next(true).is_none());
    }

    #[test]
    fn full_queues_push_back_until_released() {
        let snaps = SnapshotTable::new(1, 2);
        let mut qs = QueueSet::new(0, 2, 2, 4096);
        for t in 0..4 {
            assert!(qs.push(entry(t, 0), &snaps).is_ok(), "txn {t}");
        }
        let back = qs.push(entry(9, 0), &snaps).unwrap_err();
        assert_eq!(back.meta.txn, TxnId(9));
        let (q, e) = qs.take_next(true).unwrap();
        assert_eq!((q, txns(&e)), (0, vec![0, 1]));
        assert!(qs.push(entry(9, 0), &snaps).is_err(), "taken but not yet persisted");
        qs.release(q);
        assert!(qs.push(entry(9, 0), &snaps).is_ok());
        assert!(!qs.is_idle());
    }

    #[test]
    fn batch_byte_limit_closes_a_queue_and_drain_empties() {
        let snaps = SnapshotTable::new(1, 2);
        let mut qs = QueueSet::new(0, 2, 300, BATCH_HEADER_BYTES + 3 * 56);
        for t in 0..4 {
            qs.push(entry(t, 0), &snaps).map_err(|_| ()).unwrap();
        }
        let (_, e) = qs.take_next(true).unwrap();
        assert_eq!(txns(&e), vec![0, 1, 2], "three 56-byte entries fill the batch");
        assert_eq!(qs.drain_unflushed().len(), 1);
        assert!(!qs.has_work(true));
    }
}
