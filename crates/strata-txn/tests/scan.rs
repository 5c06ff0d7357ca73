//! Range scans over the ordered index (taurus.txt 3.4): rows in key order
//! with the transaction's own writes, the scan-twice phantom check at
//! commit under 2PL and OCC, the index after recovery, and the refusal
//! under command logging.

use std::sync::Arc;

use strata_media::FaultFs;
use strata_txn::{
    CcKind, LogDeviceKind, LogMode, LoggingKind, RowKey, TableId, TableSchema, TxnDb, TxnDbOptions, TxnError,
    WorkerId,
};

const T: TableId = TableId(0);

fn options(fs: Arc<FaultFs>, cc: CcKind, mode: LogMode) -> TxnDbOptions {
    let mut o =
        TxnDbOptions::new(LoggingKind::Taurus { logs: 2 }, LogDeviceKind::Ssd { fs, dir: "/db".into() }, 2);
    o.cc = cc;
    o.logging.mode = mode;
    o
}

fn schemas() -> Vec<TableSchema> {
    vec![TableSchema { name: "t".into(), row_bytes: 1 }, TableSchema { name: "u".into(), row_bytes: 1 }]
}

fn open(fs: &Arc<FaultFs>, cc: CcKind) -> TxnDb {
    TxnDb::open(&options(fs.clone(), cc, LogMode::Data), schemas()).unwrap().0
}

fn keys(rows: &[(RowKey, Vec<u8>)]) -> Vec<u64> {
    rows.iter().map(|(k, _)| k.0).collect()
}

fn load(db: &TxnDb, ks: &[u64]) {
    let mut txn = db.begin(WorkerId(0));
    for &k in ks {
        txn.insert(T, RowKey(k), &[k as u8]).unwrap();
    }
    // A row of another table between them stays out of T's scans.
    txn.insert(TableId(1), RowKey(5), &[0]).unwrap();
    txn.commit_durably().unwrap();
}

#[test]
fn a_scan_returns_the_range_in_key_order_with_the_transaction_s_own_writes() {
    for cc in [CcKind::TwoPlNoWait, CcKind::Occ] {
        let fs = Arc::new(FaultFs::new());
        let db = open(&fs, cc);
        load(&db, &[9, 2, 7, 4]);
        let mut txn = db.begin(WorkerId(1));
        assert_eq!(keys(&txn.scan(T, RowKey(3), RowKey(8), 10).unwrap()), vec![4, 7], "{cc:?}");
        txn.insert(T, RowKey(5), &[5]).unwrap();
        txn.delete(T, RowKey(7)).unwrap();
        let rows = txn.scan(T, RowKey(0), RowKey(100), 10).unwrap();
        assert_eq!(keys(&rows), vec![2, 4, 5, 9], "{cc:?}: own insert in, own delete out");
        assert_eq!(rows[2].1, vec![5]);
        assert_eq!(keys(&txn.scan(T, RowKey(0), RowKey(100), 2).unwrap()), vec![2, 4], "{cc:?}: the limit");
        txn.commit_durably().unwrap();
        let mut after = db.begin(WorkerId(0));
        assert_eq!(
            keys(&after.scan(T, RowKey(0), RowKey(u64::MAX), 10).unwrap()),
            vec![2, 4, 5, 9],
            "{cc:?}"
        );
    }
}

#[test]
fn a_row_inserted_into_a_scanned_range_before_the_commit_aborts_the_scanner() {
    for cc in [CcKind::TwoPlNoWait, CcKind::Occ] {
        let fs = Arc::new(FaultFs::new());
        let db = open(&fs, cc);
        load(&db, &[1, 9]);
        let mut scanner = db.begin(WorkerId(0));
        assert_eq!(keys(&scanner.scan(T, RowKey(0), RowKey(10), 10).unwrap()), vec![1, 9]);
        scanner.put(TableId(1), RowKey(5), &[1]).unwrap();
        let mut inserter = db.begin(WorkerId(1));
        inserter.insert(T, RowKey(5), &[5]).unwrap();
        inserter.commit_durably().unwrap();
        let r = scanner.commit();
        assert!(matches!(r, Err(TxnError::Conflict { key: RowKey(5), .. })), "{cc:?}: a phantom: {r:?}");
        let mut check = db.begin(WorkerId(0));
        assert_eq!(
            check.get(TableId(1), RowKey(5)).unwrap(),
            Some(vec![0]),
            "{cc:?}: the scanner wrote nothing"
        );
    }
}

#[test]
fn under_2pl_a_scanned_row_cannot_be_deleted_until_the_scanner_ends() {
    let fs = Arc::new(FaultFs::new());
    let db = open(&fs, CcKind::TwoPlNoWait);
    load(&db, &[1, 2]);
    let mut scanner = db.begin(WorkerId(0));
    scanner.scan(T, RowKey(0), RowKey(10), 10).unwrap();
    let mut deleter = db.begin(WorkerId(1));
    assert!(
        matches!(deleter.delete(T, RowKey(2)), Err(TxnError::Conflict { .. })),
        "NO_WAIT on the shared lock"
    );
    scanner.commit_durably().unwrap();
    let mut deleter = db.begin(WorkerId(1));
    deleter.delete(T, RowKey(2)).unwrap();
    deleter.commit_durably().unwrap();
    let mut check = db.begin(WorkerId(0));
    assert_eq!(keys(&check.scan(T, RowKey(0), RowKey(10), 10).unwrap()), vec![1]);
}

#[test]
fn the_index_is_rebuilt_by_recovery() {
    let fs = Arc::new(FaultFs::new());
    let db = open(&fs, CcKind::TwoPlNoWait);
    load(&db, &[3, 1, 2]);
    let mut txn = db.begin(WorkerId(1));
    txn.delete(T, RowKey(2)).unwrap();
    txn.commit_durably().unwrap();
    drop(db);
    let crashed = Arc::new(fs.crash(strata_media::fs::Tear::None));
    let db = open(&crashed, CcKind::TwoPlNoWait);
    let mut txn = db.begin(WorkerId(0));
    assert_eq!(keys(&txn.scan(T, RowKey(0), RowKey(10), 10).unwrap()), vec![1, 3]);
}

#[test]
fn command_logging_refuses_scans() {
    let fs = Arc::new(FaultFs::new());
    let db = TxnDb::open(&options(fs, CcKind::TwoPlNoWait, LogMode::Command), schemas()).unwrap().0;
    let mut txn = db.begin(WorkerId(0));
    assert!(matches!(txn.scan(T, RowKey(0), RowKey(1), 1), Err(TxnError::Unsupported(_))));
    assert!(matches!(txn.get(T, RowKey(0)), Err(TxnError::Ended)), "the refusal ended it");
}
