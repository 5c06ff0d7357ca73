//! The side table of extended-timestamp control words (declog.txt sections
//! 4.1.1 and 4.5; why a side table: see [`super::ext_ts`]).
//!
//! One entry per point touched since the last checkpoint, keyed by
//! [`PointRef`] and sharded by series id; each entry is an `AtomicU64`
//! holding lock, tombstone and `uts` at the bit positions of
//! [`ExtTimestamp`] (timestamp bits zero). An absent entry reads as all
//! zeros (rule 1). Entries are created by the LSN protocol (module `lsn`)
//! when it locks a point and are never removed one by one: removing an entry
//! another transaction is about to lock would give two transactions "the"
//! lock of one point. They all go at once in [`ControlTable::reset`] (rule 5),
//! which refuses while any transaction holds locks.
//!
//! Readers honour the lock bit with [`ControlTable::wait_until_unlocked`]:
//! spin, then yield, each a bounded number of times, then park on one
//! table-wide condition variable that every lock release signals (only when
//! someone is parked).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, RwLock};

use super::ext_ts::ExtTimestamp;
use crate::model::{SeriesId, TimestampNs};

/// Default number of shards of a [`ControlTable`].
pub const DEFAULT_SHARD_COUNT: usize = 16;
/// Lock-bit checks a waiting reader makes with `spin_loop` between them.
pub const WAIT_SPIN_LIMIT: u32 = 64;
/// Further checks with `yield_now` between them before the reader parks.
pub const WAIT_YIELD_LIMIT: u32 = 16;

/// One data point: a series and a timestamp in it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PointRef {
    pub series: SeriesId,
    pub ts: TimestampNs,
}

impl PointRef {
    pub fn new(series: SeriesId, ts: TimestampNs) -> Self {
        PointRef { series, ts }
    }
}

impl fmt::Display for PointRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.series, self.ts)
    }
}

/// [`ControlTable::reset`] was called while transactions hold locks.
#[derive(Copy, Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot reset extended timestamps: {in_flight} update transactions hold locks; block update transactions and let them finish first")]
pub struct ResetRefused {
    pub in_flight: usize,
}

/// A control word shared between the table and the guards that lock it.
pub(crate) type ControlCell = Arc<AtomicU64>;

type Shard = RwLock<HashMap<PointRef, ControlCell>>;

/// The concurrent side table of control words (see the module comment).
pub struct ControlTable {
    shards: Box<[Shard]>,
    /// Held shared by the LSN protocol while it creates entries and takes
    /// locks, exclusively by `reset`.
    reset_gate: RwLock<()>,
    /// Update transactions between their first lock and commit/abort.
    in_flight: AtomicUsize,
    parked_readers: AtomicUsize,
    park_mutex: Mutex<()>,
    unlocked: Condvar,
}

impl Default for ControlTable {
    fn default() -> Self {
        ControlTable::new()
    }
}

impl fmt::Debug for ControlTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControlTable")
            .field("shards", &self.shards.len())
            .field("touched_points", &self.touched_points())
            .field("in_flight", &self.in_flight_transactions())
            .finish()
    }
}

impl ControlTable {
    /// An empty table with [`DEFAULT_SHARD_COUNT`] shards.
    pub fn new() -> Self {
        ControlTable::with_shard_count(DEFAULT_SHARD_COUNT)
    }

    /// An empty table with `shard_count` shards (at least one).
    pub fn with_shard_count(shard_count: usize) -> Self {
        ControlTable {
            shards: (0..shard_count.max(1)).map(|_| RwLock::new(HashMap::new())).collect(),
            reset_gate: RwLock::new(()),
            in_flight: AtomicUsize::new(0),
            parked_readers: AtomicUsize::new(0),
            park_mutex: Mutex::new(()),
            unlocked: Condvar::new(),
        }
    }

    fn shard(&self, series: SeriesId) -> &Shard {
        &self.shards[(series.0 % self.shards.len() as u64) as usize]
    }

    /// The control bits of `point` now (all zero if it has no entry); does not wait.
    pub fn control(&self, point: PointRef) -> ExtTimestamp {
        match self.shard(point.series).read().get(&point) {
            Some(cell) => ExtTimestamp::from_raw(cell.load(Ordering::SeqCst)),
            None => ExtTimestamp::ZERO,
        }
    }

    /// Rule for readers (section 4.1.1, case 2): returns the control bits of
    /// `point` once its lock bit is clear, waiting while it is set. Never call
    /// it for a point locked by a guard of the calling thread: it would wait
    /// for itself.
    pub fn wait_until_unlocked(&self, point: PointRef) -> ExtTimestamp {
        for attempt in 0..WAIT_SPIN_LIMIT + WAIT_YIELD_LIMIT {
            let word = self.control(point);
            if !word.is_locked() {
                return word;
            }
            if attempt < WAIT_SPIN_LIMIT {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        let mut park = self.park_mutex.lock();
        // Announce before re-checking: a releaser clears the bit, then reads
        // this count (both SeqCst), so either it sees us and signals under
        // the mutex, or we see the cleared bit.
        self.parked_readers.fetch_add(1, Ordering::SeqCst);
        let word = loop {
            let word = self.control(point);
            if !word.is_locked() {
                break word;
            }
            self.unlocked.wait(&mut park);
        };
        self.parked_readers.fetch_sub(1, Ordering::SeqCst);
        word
    }

    /// Readers parked in [`Self::wait_until_unlocked`] right now.
    pub fn parked_readers(&self) -> usize {
        self.parked_readers.load(Ordering::SeqCst)
    }

    /// Points with an entry: those locked at least once since the last reset
    /// (including by transactions that then aborted, whose entries hold zero).
    pub fn touched_points(&self) -> usize {
        self.shards.iter().map(|shard| shard.read().len()).sum()
    }

    /// Update transactions holding locks (acquired, not yet committed or aborted).
    pub fn in_flight_transactions(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Rule 5, at a checkpoint: every extended timestamp becomes 0 (the table
    /// is emptied). Returns how many entries were dropped. Refused while any
    /// update transaction holds locks; the checkpoint blocks new update
    /// transactions and waits for running ones first (section 4.5 step 3).
    pub fn reset(&self) -> Result<usize, ResetRefused> {
        let _gate = self.reset_gate.write();
        let in_flight = self.in_flight.load(Ordering::SeqCst);
        if in_flight > 0 {
            return Err(ResetRefused { in_flight });
        }
        let mut dropped = 0;
        for shard in self.shards.iter() {
            let mut map = shard.write();
            dropped += map.len();
            *map = HashMap::new();
        }
        Ok(dropped)
    }

    /// Shared hold on the reset gate, for the LSN protocol's locking steps.
    pub(crate) fn hold_reset_gate(&self) -> parking_lot::RwLockReadGuard<'_, ()> {
        self.reset_gate.read()
    }

    /// The entry of `point`, created (zero) if absent. Call with the reset gate held.
    pub(crate) fn cell(&self, point: PointRef) -> ControlCell {
        let shard = self.shard(point.series);
        if let Some(cell) = shard.read().get(&point) {
            return Arc::clone(cell);
        }
        Arc::clone(shard.write().entry(point).or_default())
    }

    /// Counts an update transaction that is about to take locks. Call with the reset gate held.
    pub(crate) fn begin_in_flight(&self) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
    }

    /// Counts an update transaction whose locks are all released.
    pub(crate) fn end_in_flight(&self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }

    /// Wakes parked readers after lock bits were cleared (SeqCst stores).
    pub(crate) fn wake_parked_readers(&self) {
        if self.parked_readers.load(Ordering::SeqCst) > 0 {
            let _park = self.park_mutex.lock();
            self.unlocked.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(series: u64, ts: i64) -> PointRef {
        PointRef::new(SeriesId(series), ts)
    }

    #[test]
    fn absent_points_read_as_zero_and_entries_are_counted() {
        let table = ControlTable::with_shard_count(4);
        assert_eq!(table.control(point(1, 10)), ExtTimestamp::ZERO);
        assert_eq!(table.touched_points(), 0);
        let _gate = table.hold_reset_gate();
        let cell = table.cell(point(1, 10));
        cell.store(ExtTimestamp::control(5, true, false).unwrap().raw(), Ordering::SeqCst);
        let again = table.cell(point(1, 10));
        assert!(Arc::ptr_eq(&cell, &again), "one entry per point");
        table.cell(point(6, 10));
        assert_eq!(table.touched_points(), 2);
        let word = table.control(point(1, 10));
        assert_eq!((word.uts(), word.is_tombstone(), word.is_locked()), (5, true, false));
        assert_eq!(table.control(point(6, 10)), ExtTimestamp::ZERO);
        assert_eq!(table.control(point(1, 11)), ExtTimestamp::ZERO, "same series, other timestamp");
    }

    #[test]
    fn reset_drops_everything_unless_transactions_are_in_flight() {
        let table = ControlTable::new();
        {
            let _gate = table.hold_reset_gate();
            table
                .cell(point(1, 1))
                .store(ExtTimestamp::control(9, false, false).unwrap().raw(), Ordering::SeqCst);
            table.cell(point(2, 1));
            table.begin_in_flight();
        }
        assert_eq!(table.reset(), Err(ResetRefused { in_flight: 1 }));
        assert_eq!(table.control(point(1, 1)).uts(), 9, "a refused reset changes nothing");
        table.end_in_flight();
        assert_eq!(table.reset(), Ok(2));
        assert_eq!(table.touched_points(), 0);
        assert_eq!(table.control(point(1, 1)), ExtTimestamp::ZERO);
    }

    #[test]
    fn unlocked_points_are_returned_without_waiting() {
        let table = ControlTable::new();
        assert_eq!(table.wait_until_unlocked(point(3, 3)), ExtTimestamp::ZERO);
        let _gate = table.hold_reset_gate();
        table
            .cell(point(3, 3))
            .store(ExtTimestamp::control(4, false, false).unwrap().raw(), Ordering::SeqCst);
        assert_eq!(table.wait_until_unlocked(point(3, 3)).uts(), 4);
        assert_eq!(table.parked_readers(), 0);
    }

    #[test]
    fn point_refs_display_series_and_timestamp() {
        assert_eq!(point(7, -5).to_string(), "S7@-5");
    }
}
