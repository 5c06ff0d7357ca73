//! The LSN computation protocol for one transaction (declog.txt section
//! 4.1.2, rules 1-5 and the Fig. 5 walk-through), over a [`ControlTable`].
//!
//! [`acquire`] runs the paper's three steps:
//! 1. read the control words of every point the transaction accesses
//!    (reads, updates, deletes; inserts of new points do not count), waiting
//!    while a lock bit is set, and compute `LSN = max(uts) + 1` (rule 3), or
//!    `LSN = 0` for an insert-only transaction (rule 2), which touches
//!    nothing. If the LSN would exceed [`UTS_MAX`] nothing changes and
//!    [`LsnError::UtsOverflow`] tells the caller to checkpoint
//!    ([`ControlTable::reset`], rule 5) and retry;
//! 2. take the lock bits of the modified points one by one (CAS, in point
//!    order); a lock already set aborts the transaction with
//!    [`LsnError::Conflict`] (no waiting, hence no deadlock), releasing the
//!    locks taken so far;
//! 3. validate: every modified point's `uts` must still be what step 1 read,
//!    else abort with [`LsnError::Validation`]; then set `uts = LSN` (rule
//!    4), set the tombstone of deleted points and clear it for updated ones.
//!
//! The locks stay held in the returned [`LsnGuard`] until the caller has
//! made the log entry durable and applied it, then calls
//! [`LsnGuard::commit`] ("once X commits, it resets the lock bit"), which
//! clears the lock bits and keeps `uts`/tombstone. Dropping the guard instead
//! aborts: every control word goes back to what it was before step 2.
//!
//! Decisions beyond the paper:
//! - A point listed both as updated and deleted is deleted; duplicates
//!   count once.
//! - An update clears the tombstone, so writing a deleted point again
//!   re-creates it. A write at a point that already has a control entry
//!   (overwrite, or re-insert after a delete) must be passed as an update,
//!   not as an insert: only genuinely new points may take rule 1's zero.
//! - Read points raise the LSN (they are in the paper's DP) but are neither
//!   locked nor validated, as in the paper's step 3; a read-only
//!   transaction gets `max(uts) + 1` and takes no locks.
//! - Never run a transaction touching a point that a guard of the same
//!   thread still holds: step 1 would wait for itself.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::Ordering;

use super::control_table::{ControlCell, ControlTable, PointRef};
use super::ext_ts::{ExtTimestamp, LOCK_BIT, UTS_MAX};

/// A data-driven LSN: `0` for insert-only transactions, else one more than
/// the largest `uts` the transaction saw. Never exceeds [`UTS_MAX`], so it
/// always fits the `uts` field. Equal LSNs mean independent transactions;
/// replaying log entries in ascending LSN order (ties in any order) rebuilds
/// the state.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DataLsn(u16);

impl DataLsn {
    /// The LSN of insert-only transactions (rule 2).
    pub const ZERO: DataLsn = DataLsn(0);

    /// `None` above [`UTS_MAX`].
    pub const fn new(value: u16) -> Option<Self> {
        if value <= UTS_MAX {
            Some(DataLsn(value))
        } else {
            None
        }
    }

    pub const fn get(self) -> u16 {
        self.0
    }
}

impl fmt::Display for DataLsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dlsn:{}", self.0)
    }
}

/// The points one transaction accesses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxnAccess {
    /// Existing points read.
    pub reads: Vec<PointRef>,
    /// Existing points written (overwrites and re-inserts included).
    pub updates: Vec<PointRef>,
    /// Points deleted.
    pub deletes: Vec<PointRef>,
    /// Number of new points inserted (they do not take part in the protocol).
    pub inserts: usize,
}

impl TxnAccess {
    /// No reads, updates or deletes (rule 2).
    pub fn is_insert_only(&self) -> bool {
        self.reads.is_empty() && self.updates.is_empty() && self.deletes.is_empty()
    }
}

/// Why [`acquire`] gave no LSN.
#[derive(Copy, Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LsnError {
    /// Step 2: another transaction holds the lock of `point`. Nothing was
    /// changed; abort and re-execute the transaction.
    #[error("point {point} is locked by another transaction; abort and retry")]
    Conflict { point: PointRef },
    /// Step 3: another transaction modified `point` after step 1 read it.
    /// Nothing was changed; abort and re-execute the transaction.
    #[error(
        "point {point} was modified concurrently (uts {read_uts} became {current_uts}); abort and retry"
    )]
    Validation { point: PointRef, read_uts: u16, current_uts: u16 },
    /// Step 1: the LSN would exceed the 10-bit `uts`. Nothing was changed;
    /// run a checkpoint (which resets the table, rule 5) and retry.
    #[error("data-driven LSN {needed_lsn} exceeds the uts maximum {UTS_MAX}; checkpoint to reset extended timestamps and retry")]
    UtsOverflow { needed_lsn: u16 },
}

impl LsnError {
    /// A concurrency abort that re-executing the transaction can cure
    /// (`UtsOverflow` needs a checkpoint first).
    pub fn is_conflict(&self) -> bool {
        matches!(self, LsnError::Conflict { .. } | LsnError::Validation { .. })
    }
}

/// A modified point as step 1 saw it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct PlannedWrite {
    pub(super) point: PointRef,
    pub(super) delete: bool,
    pub(super) read_uts: u16,
}

/// The outcome of step 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    pub(super) lsn: DataLsn,
    /// Sorted by point, no duplicates.
    pub(super) writes: Vec<PlannedWrite>,
}

/// Runs the protocol's three steps for `access`; see the module comment.
pub fn acquire<'t>(table: &'t ControlTable, access: &TxnAccess) -> Result<LsnGuard<'t>, LsnError> {
    let plan = compute_lsn(table, access)?;
    lock_and_validate(table, &plan)
}

/// Step 1: read (waiting on lock bits) and compute the LSN.
pub(super) fn compute_lsn(table: &ControlTable, access: &TxnAccess) -> Result<Plan, LsnError> {
    if access.is_insert_only() {
        return Ok(Plan { lsn: DataLsn::ZERO, writes: Vec::new() });
    }
    let mut modified: BTreeMap<PointRef, bool> = BTreeMap::new();
    for &point in &access.updates {
        modified.entry(point).or_insert(false);
    }
    for &point in &access.deletes {
        modified.insert(point, true);
    }
    let mut max_uts = 0u16;
    for &point in &access.reads {
        max_uts = max_uts.max(table.wait_until_unlocked(point).uts());
    }
    let mut writes = Vec::with_capacity(modified.len());
    for (point, delete) in modified {
        let read_uts = table.wait_until_unlocked(point).uts();
        max_uts = max_uts.max(read_uts);
        writes.push(PlannedWrite { point, delete, read_uts });
    }
    let needed_lsn = max_uts + 1;
    let lsn = DataLsn::new(needed_lsn).ok_or(LsnError::UtsOverflow { needed_lsn })?;
    Ok(Plan { lsn, writes })
}

/// Steps 2 and 3: lock every modified point, validate, install the LSN.
pub(super) fn lock_and_validate<'t>(table: &'t ControlTable, plan: &Plan) -> Result<LsnGuard<'t>, LsnError> {
    let mut guard = LsnGuard {
        table,
        lsn: plan.lsn,
        locked: Vec::with_capacity(plan.writes.len()),
        counted_in_flight: false,
        finished: false,
    };
    if plan.writes.is_empty() {
        return Ok(guard);
    }
    // Keeps `reset` out while entries are created and locks taken; once the
    // guard counts as in flight, `reset` refuses until it finishes.
    let _gate = table.hold_reset_gate();
    table.begin_in_flight();
    guard.counted_in_flight = true;

    // Step 2: lock one by one; on error the guard's drop releases what it holds.
    for write in &plan.writes {
        let cell = table.cell(write.point);
        let before = lock_cell(&cell).ok_or(LsnError::Conflict { point: write.point })?;
        guard.locked.push(LockedPoint { point: write.point, cell, before, delete: write.delete });
    }

    // Step 3: validate against step 1, then install uts = LSN (and tombstones).
    for (write, held) in plan.writes.iter().zip(&guard.locked) {
        if held.before.uts() != write.read_uts {
            return Err(LsnError::Validation {
                point: write.point,
                read_uts: write.read_uts,
                current_uts: held.before.uts(),
            });
        }
    }
    for held in &guard.locked {
        let after = held.before.with_lsn(plan.lsn).with_tombstone(held.delete).with_lock(true);
        held.cell.store(after.raw(), Ordering::SeqCst);
    }
    Ok(guard)
}

/// Sets the lock bit of `cell` by CAS; returns the word before (lock clear),
/// or `None` if another transaction holds the lock.
fn lock_cell(cell: &ControlCell) -> Option<ExtTimestamp> {
    let mut current = cell.load(Ordering::SeqCst);
    loop {
        if current & LOCK_BIT != 0 {
            return None;
        }
        match cell.compare_exchange(current, current | LOCK_BIT, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return Some(ExtTimestamp::from_raw(current)),
            Err(actual) => current = actual,
        }
    }
}

/// A point whose lock this transaction holds.
struct LockedPoint {
    point: PointRef,
    cell: ControlCell,
    /// The control word before step 2 (lock clear), restored on abort.
    before: ExtTimestamp,
    delete: bool,
}

/// The LSN of a transaction that passed the protocol, holding the lock bits
/// of its modified points (with `uts = LSN` already installed).
/// [`commit`](LsnGuard::commit) once the log entry is durable; dropping it
/// aborts and restores every control word.
#[must_use = "dropping the guard aborts the transaction; call commit() once its log entry is durable"]
pub struct LsnGuard<'t> {
    table: &'t ControlTable,
    lsn: DataLsn,
    locked: Vec<LockedPoint>,
    counted_in_flight: bool,
    finished: bool,
}

impl LsnGuard<'_> {
    /// The LSN to write in the transaction's log entry.
    pub fn lsn(&self) -> DataLsn {
        self.lsn
    }

    /// The modified points whose locks are held, in lock order.
    pub fn modified_points(&self) -> impl Iterator<Item = PointRef> + '_ {
        self.locked.iter().map(|held| held.point)
    }

    /// The transaction committed: clear the lock bits, keep `uts` and tombstones.
    pub fn commit(mut self) {
        self.finish(true);
    }

    /// The transaction aborted: restore the control words of before step 2.
    pub fn abort(mut self) {
        self.finish(false);
    }

    fn finish(&mut self, committed: bool) {
        if self.finished {
            return;
        }
        self.finished = true;
        for held in &self.locked {
            if committed {
                held.cell.fetch_and(!LOCK_BIT, Ordering::SeqCst);
            } else {
                held.cell.store(held.before.raw(), Ordering::SeqCst);
            }
        }
        if !self.locked.is_empty() {
            self.table.wake_parked_readers();
        }
        if self.counted_in_flight {
            self.table.end_in_flight();
        }
    }
}

impl Drop for LsnGuard<'_> {
    fn drop(&mut self) {
        self.finish(false);
    }
}

impl fmt::Debug for LsnGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LsnGuard")
            .field("lsn", &self.lsn)
            .field("locked", &self.locked.iter().map(|held| held.point).collect::<Vec<_>>())
            .field("finished", &self.finished)
            .finish()
    }
}
