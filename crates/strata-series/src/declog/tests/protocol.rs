//! Edge cases of the LSN protocol: insert-only and read-only transactions,
//! aborts (conflict, validation, dropped guard), waiting readers, overflow
//! and reset.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use super::super::lsn::{acquire, compute_lsn, lock_and_validate, DataLsn, LsnError, TxnAccess};
use super::{point, word, words};
use crate::declog::control_table::{ControlTable, PointRef, ResetRefused};
use crate::declog::ext_ts::{ExtTimestamp, UTS_MAX};

fn updates(points: &[PointRef]) -> TxnAccess {
    TxnAccess { updates: points.to_vec(), ..TxnAccess::default() }
}

/// Commits one update of `points` and returns its LSN.
fn commit_update(table: &ControlTable, points: &[PointRef]) -> u16 {
    let guard = acquire(table, &updates(points)).unwrap();
    let lsn = guard.lsn().get();
    guard.commit();
    lsn
}

#[test]
fn insert_only_transactions_get_lsn_zero_and_touch_nothing() {
    let table = ControlTable::new();
    let p = point(1, 1);
    let holder = acquire(&table, &updates(&[p])).unwrap();
    let before = (words(&table, &[p]), table.touched_points(), table.in_flight_transactions());

    // Would hang if insert-only transactions waited on a lock bit.
    let insert = acquire(&table, &TxnAccess { inserts: 3, ..TxnAccess::default() }).unwrap();
    assert_eq!(insert.lsn(), DataLsn::ZERO);
    assert_eq!(insert.modified_points().count(), 0);
    assert_eq!(table.in_flight_transactions(), 1, "only the holder counts");
    insert.commit();
    let empty = acquire(&table, &TxnAccess::default()).unwrap();
    assert_eq!(empty.lsn(), DataLsn::ZERO, "an empty transaction is insert-only");
    drop(empty);

    let after = (words(&table, &[p]), table.touched_points(), table.in_flight_transactions());
    assert_eq!(before, after);
    holder.commit();
}

#[test]
fn a_conflict_releases_every_lock_taken_and_keeps_uts() {
    let table = ControlTable::new();
    let [p1, p2, p3] = [point(1, 1), point(1, 2), point(2, 1)];
    assert_eq!(commit_update(&table, &[p1]), 1);
    assert_eq!(commit_update(&table, &[p1, p2]), 2);
    let before = words(&table, &[p1, p2]);
    assert_eq!(before, vec![word(2, false, false); 2]);

    // Step 1 waits on set lock bits, so the conflict arises when another
    // transaction locks p3 between our steps 1 and 2.
    let access = TxnAccess { updates: vec![p1, p3], deletes: vec![p2], ..TxnAccess::default() };
    let plan = compute_lsn(&table, &access).unwrap();
    assert_eq!(plan.lsn.get(), 3);
    let holder = acquire(&table, &updates(&[p3])).unwrap();
    let err = lock_and_validate(&table, &plan).unwrap_err();
    assert_eq!(err, LsnError::Conflict { point: p3 });
    assert!(err.is_conflict());
    assert!(err.to_string().contains("S2@1"), "the error names the point: {err}");
    assert_eq!(words(&table, &[p1, p2]), before, "locks on p1 and p2 released, uts and tombstone unchanged");
    assert_eq!(table.control(p3), word(1, false, true), "the holder's lock is untouched");
    assert_eq!(table.in_flight_transactions(), 1);
    holder.commit();
    assert_eq!(table.in_flight_transactions(), 0);
}

#[test]
fn dropping_or_aborting_a_guard_restores_the_control_words() {
    let table = ControlTable::new();
    let [p1, p2] = [point(1, 1), point(1, 2)];
    assert_eq!(commit_update(&table, &[p1]), 1);
    let before = words(&table, &[p1, p2]);

    let guard =
        acquire(&table, &TxnAccess { updates: vec![p1], deletes: vec![p2], ..TxnAccess::default() }).unwrap();
    assert_eq!(guard.lsn().get(), 2);
    assert_eq!(words(&table, &[p1, p2]), vec![word(2, false, true), word(2, true, true)]);
    drop(guard);
    assert_eq!(words(&table, &[p1, p2]), before, "drop = abort");

    let guard = acquire(&table, &updates(&[p1, p2])).unwrap();
    guard.abort();
    assert_eq!(words(&table, &[p1, p2]), before, "explicit abort");
    assert_eq!(table.in_flight_transactions(), 0);
}

#[test]
fn a_uts_changed_between_step_1_and_step_3_fails_validation() {
    let table = ControlTable::new();
    let [p, q] = [point(1, 1), point(2, 1)];
    let plan = compute_lsn(&table, &updates(&[p, q])).unwrap();
    assert_eq!(plan.lsn.get(), 1);

    // Another transaction updates q and commits between our steps 1 and 2.
    assert_eq!(commit_update(&table, &[q]), 1);

    let err = lock_and_validate(&table, &plan).unwrap_err();
    assert_eq!(err, LsnError::Validation { point: q, read_uts: 0, current_uts: 1 });
    assert!(err.is_conflict());
    assert_eq!(words(&table, &[p, q]), vec![ExtTimestamp::ZERO, word(1, false, false)], "nothing changed");
    assert_eq!(table.in_flight_transactions(), 0);

    // Re-executed, the transaction sees q.uts = 1.
    let guard = acquire(&table, &updates(&[p, q])).unwrap();
    assert_eq!(guard.lsn().get(), 2);
    guard.commit();
}

#[test]
fn readers_wait_while_a_lock_bit_is_set_and_proceed_after_commit() {
    let table = ControlTable::new();
    let [p, q] = [point(1, 1), point(1, 2)];
    let writer = acquire(&table, &updates(&[p])).unwrap();
    assert_eq!(writer.lsn().get(), 1);
    let reader_done = AtomicBool::new(false);
    let txn_done = AtomicBool::new(false);

    thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let seen = table.wait_until_unlocked(p);
            reader_done.store(true, Ordering::SeqCst);
            seen
        });
        // A read-only transaction on p waits in step 1 as well.
        let txn = scope.spawn(|| {
            let access = TxnAccess { reads: vec![p, q], ..TxnAccess::default() };
            let guard = acquire(&table, &access).unwrap();
            txn_done.store(true, Ordering::SeqCst);
            let lsn = guard.lsn();
            assert_eq!(guard.modified_points().count(), 0, "read points are not locked");
            guard.commit();
            lsn
        });
        while table.parked_readers() < 2 {
            assert!(!reader_done.load(Ordering::SeqCst), "reader passed a set lock bit");
            assert!(!txn_done.load(Ordering::SeqCst), "transaction read past a set lock bit");
            thread::yield_now();
        }
        assert_eq!(table.control(p), word(1, false, true), "still locked while both are parked");
        writer.commit();

        assert_eq!(reader.join().unwrap(), word(1, false, false), "reader saw the committed word");
        assert_eq!(txn.join().unwrap().get(), 2, "read-only LSN = p.uts + 1");
    });
    assert_eq!(table.parked_readers(), 0);
}

#[test]
fn read_points_raise_the_lsn_without_being_locked() {
    let table = ControlTable::new();
    let [p, q] = [point(1, 1), point(2, 2)];
    for expected in 1..=5 {
        assert_eq!(commit_update(&table, &[p]), expected);
    }
    let guard =
        acquire(&table, &TxnAccess { reads: vec![p], updates: vec![q], ..TxnAccess::default() }).unwrap();
    assert_eq!(guard.lsn().get(), 6);
    assert_eq!(guard.modified_points().collect::<Vec<_>>(), vec![q]);
    assert_eq!(words(&table, &[p, q]), vec![word(5, false, false), word(6, false, true)]);
    guard.commit();
}

#[test]
fn duplicates_count_once_deletes_win_and_updates_clear_tombstones() {
    let table = ControlTable::new();
    let p = point(3, 3);
    let access = TxnAccess { updates: vec![p, p], deletes: vec![p, p], ..TxnAccess::default() };
    let guard = acquire(&table, &access).unwrap();
    assert_eq!(guard.modified_points().collect::<Vec<_>>(), vec![p], "one lock, no self-conflict");
    guard.commit();
    assert_eq!(table.control(p), word(1, true, false));
    assert_eq!(commit_update(&table, &[p]), 2, "re-creating a deleted point is an update");
    assert_eq!(table.control(p), word(2, false, false));
}

#[test]
fn overflow_at_uts_max_is_reported_and_reset_clears_everything() {
    let table = ControlTable::new();
    let [p, q] = [point(1, 1), point(2, 2)];
    for expected in 1..=UTS_MAX {
        assert_eq!(commit_update(&table, &[p]), expected);
    }
    assert_eq!(table.control(p), word(UTS_MAX, false, false));

    let err = acquire(&table, &TxnAccess { updates: vec![q], deletes: vec![p], ..TxnAccess::default() })
        .unwrap_err();
    assert_eq!(err, LsnError::UtsOverflow { needed_lsn: UTS_MAX + 1 });
    assert!(!err.is_conflict(), "overflow needs a checkpoint, not a retry");
    let err = acquire(&table, &TxnAccess { reads: vec![p], ..TxnAccess::default() }).unwrap_err();
    assert_eq!(err, LsnError::UtsOverflow { needed_lsn: UTS_MAX + 1 });
    assert_eq!(
        words(&table, &[p, q]),
        vec![word(UTS_MAX, false, false), ExtTimestamp::ZERO],
        "nothing changed"
    );
    assert_eq!(table.touched_points(), 1);
    assert_eq!(table.in_flight_transactions(), 0);
    assert_eq!(commit_update(&table, &[q]), 1, "independent points are unaffected");

    // Rule 5: the checkpoint resets every extended timestamp.
    assert_eq!(table.reset(), Ok(2));
    assert_eq!(table.touched_points(), 0);
    assert_eq!(words(&table, &[p, q]), vec![ExtTimestamp::ZERO; 2]);
    assert_eq!(commit_update(&table, &[p]), 1, "the retried transaction gets LSN 1");
}

#[test]
fn reset_is_refused_while_a_guard_holds_locks() {
    let table = ControlTable::new();
    let p = point(1, 1);
    let guard = acquire(&table, &updates(&[p])).unwrap();
    let refused = table.reset().unwrap_err();
    assert_eq!(refused, ResetRefused { in_flight: 1 });
    assert!(refused.to_string().contains("1 update transactions"), "{refused}");
    assert_eq!(table.control(p), word(1, false, true), "a refused reset changes nothing");
    guard.commit();
    assert_eq!(table.reset(), Ok(1));
    assert_eq!(table.control(p), ExtTimestamp::ZERO);
}
