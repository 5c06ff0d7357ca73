//! The LSN computation walk-through of declog.txt Fig. 5, step by step.
//! The text does not say which points X_{i+5} updates, only that they are
//! untouched by X_{i+2} and X_{i+4}; C and E are used here.

use super::super::lsn::{acquire, compute_lsn, lock_and_validate, DataLsn, LsnError, TxnAccess};
use super::{point, word, words};
use crate::declog::control_table::ControlTable;
use crate::declog::ext_ts::ExtTimestamp;

#[test]
fn fig5_walk_through() {
    let table = ControlTable::new();
    let [a, b, c, d, e, f] =
        [point(1, 100), point(1, 200), point(1, 300), point(2, 100), point(2, 200), point(2, 300)];
    let all = [a, b, c, d, e, f];

    // X_i, X_{i+1}, X_{i+3} insert A..F: insert-only, LSN 0 (rule 2), zero words (rule 1).
    for _ in 0..3 {
        let insert = acquire(&table, &TxnAccess { inserts: 2, ..TxnAccess::default() }).unwrap();
        assert_eq!(insert.lsn(), DataLsn::ZERO);
        insert.commit();
    }
    assert_eq!(words(&table, &all), vec![ExtTimestamp::ZERO; 6], "state 1");
    assert_eq!(table.touched_points(), 0);

    // X_{i+4} (delete B, update D) runs concurrently with X_{i+2}: its step 1
    // happens before X_{i+2} locks, sees B.uts = D.uts = 0 and computes LSN 1.
    let x4_access = TxnAccess { updates: vec![d], deletes: vec![b], ..TxnAccess::default() };
    let x4_first_plan = compute_lsn(&table, &x4_access).unwrap();
    assert_eq!(x4_first_plan.lsn.get(), 1);

    // X_{i+2} updates A and D: LSN = max{A.uts, D.uts} + 1 = 1; state 2.
    let x2 = acquire(&table, &TxnAccess { updates: vec![a, d], ..TxnAccess::default() }).unwrap();
    assert_eq!(x2.lsn().get(), 1);
    assert_eq!(table.control(a), word(1, false, true), "state 2: A.uts = 1, locked");
    assert_eq!(table.control(d), word(1, false, true), "state 2: D.uts = 1, locked");

    // X_{i+4} finds D's lock bit set in step 2 and aborts; the lock it took
    // on B (B sorts before D) is released.
    let err = lock_and_validate(&table, &x4_first_plan).unwrap_err();
    assert_eq!(err, LsnError::Conflict { point: d });
    assert_eq!(table.control(b), ExtTimestamp::ZERO, "the aborted X_{{i+4}} left B as it was");
    assert_eq!(table.control(d), word(1, false, true), "D still belongs to X_{{i+2}}");

    // X_{i+2} commits: lock bits reset, uts kept.
    x2.commit();
    assert_eq!(words(&table, &[a, d]), vec![word(1, false, false); 2]);

    // X_{i+4} re-executes and X_{i+5} runs concurrently with it.
    let x4 = acquire(&table, &x4_access).unwrap();
    assert_eq!(x4.lsn().get(), 2, "max{{B.uts, D.uts}} + 1 = max{{0, 1}} + 1");
    let x5 = acquire(&table, &TxnAccess { updates: vec![c, e], ..TxnAccess::default() }).unwrap();
    assert_eq!(x5.lsn().get(), 1, "X_{{i+5}} touches fresh data, like X_{{i+2}}");

    // State 3 (locks still held until commit).
    assert_eq!(
        words(&table, &all),
        vec![
            word(1, false, false), // A
            word(2, true, true),   // B: deleted by X_{i+4}
            word(1, false, true),  // C
            word(2, false, true),  // D
            word(1, false, true),  // E
            ExtTimestamp::ZERO,    // F
        ],
        "state 3"
    );
    x4.commit();
    x5.commit();
    assert_eq!(
        words(&table, &all),
        vec![
            word(1, false, false),
            word(2, true, false),
            word(1, false, false),
            word(2, false, false),
            word(1, false, false),
            ExtTimestamp::ZERO,
        ],
        "all locks released after the commits"
    );
    assert_eq!(table.in_flight_transactions(), 0);
    assert_eq!(table.touched_points(), 5, "F was never locked; B was locked by the aborted attempt too");
}
