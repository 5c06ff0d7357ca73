//! Optimistic concurrency control with Taurus's LV tracking (taurus.txt
//! 4.3, Algorithm 6), Silo-style: reads take no lock, each reads the row,
//! its version and the tuple's `writeLV` atomically under the latch
//! (`Access`, lines 1-4). The commit locks the write set in key order
//! (NO_WAIT), validates every read against its version, writes the log
//! record, then installs the writes (`writeLV = T.LV`) and unlocks.
//!
//! WAR dependencies (command logging only, as with 2PL): Algorithm 6
//! raises the read set's `readLV`s before validating but before the
//! record exists, so with `T.LV` lacking T's own LSN; a writer of one of
//! those rows right after T's validation would then not be ordered after
//! T at replay, and T would re-run reading the writer's value. Here a
//! command-logging commit instead holds a shared lock on each row it only
//! read, from before validation until its record is written, and raises
//! the `readLV`s with the final `T.LV` as it releases them (the 2PL rule
//! for the commit's duration only); a writer in that window finds the
//! lock and aborts (NO_WAIT), and writers lock before folding `readLV`.
//! Data logging needs no WAR tracking: reads there leave no trace.

use super::ConcurrencyControl;
use crate::error::TxnError;
use crate::ids::{RowKey, TableId};
use crate::log::{CommitTicket, LogMode};
use crate::store::LockMode;
use crate::txn::TxnState;

pub struct Occ;

impl ConcurrencyControl for Occ {
    fn read(&self, t: &mut TxnState<'_>, table: TableId, key: RowKey) -> Result<Option<Vec<u8>>, TxnError> {
        let track = t.db.logging.tracks_lv();
        let (row, version) = t.db.store.access(table, key, &mut t.lv, track);
        match t.reads.iter().find(|(tb, k, _)| (*tb, *k) == (table, key)) {
            // Read again after a change: validation would fail; fail now.
            Some(&(.., seen)) if seen != version => {
                t.release_all(None);
                return Err(TxnError::Conflict { table, key });
            }
            Some(_) => {}
            None => t.reads.push((table, key, version)),
        }
        Ok(row)
    }

    fn write_intent(
        &self,
        t: &mut TxnState<'_>,
        table: TableId,
        key: RowKey,
    ) -> Result<Option<Vec<u8>>, TxnError> {
        // Whether the row exists decides put/insert/delete: a read to validate.
        match t.buffered_row(table, key) {
            Some(row) => Ok(row),
            None => self.read(t, table, key),
        }
    }

    fn commit(&self, t: &mut TxnState<'_>) -> Result<CommitTicket, TxnError> {
        let track = t.db.logging.tracks_lv();
        let war = t.db.mode == LogMode::Command;
        // Lines 6-7: the write set, locked in key order (NO_WAIT); a lock
        // folds the tuple's writeLV (WAW) and, for commands, its readLV (WAR).
        let mut write_set: Vec<(TableId, RowKey)> = t.writes.iter().map(|w| (w.table, w.key)).collect();
        write_set.sort_unstable();
        let mode = if war { LockMode::Exclusive } else { LockMode::ExclusiveNoWar };
        for &(table, key) in &write_set {
            if let Err(e) = t.db.store.lock(table, key, mode, &mut t.lv, track) {
                t.release_all(None);
                return Err(e);
            }
            t.held.push((table, key, mode));
        }
        // Commands: the rows only read stay unwritten until the record is in
        // the log (module comment).
        if war {
            let read_only: Vec<(TableId, RowKey)> = t
                .reads
                .iter()
                .map(|&(table, key, _)| (table, key))
                .filter(|k| write_set.binary_search(k).is_err())
                .collect();
            for (table, key) in read_only {
                if let Err(e) = t.db.store.lock(table, key, LockMode::Shared, &mut t.lv, false) {
                    t.release_all(None);
                    return Err(e);
                }
                t.held.push((table, key, LockMode::Shared));
            }
        }
        // Line 12: every read still sees the version it read.
        for &(table, key, version) in &t.reads {
            let own = write_set.binary_search(&(table, key)).is_ok() || war;
            if !t.db.store.still_valid(table, key, version, own) {
                t.release_all(None);
                return Err(TxnError::Conflict { table, key });
            }
        }
        // Scans: the same keys again (3.4's scan-twice; their rows are
        // reads); line 14, then lines 15-17 as the locks go.
        t.log_and_release()
    }

    fn abort(&self, t: &mut TxnState<'_>) {
        t.release_all(None);
    }

    /// Unlocked reads may be stale: a "not found" or "already exists"
    /// drawn from them is a conflict if any read no longer validates.
    fn cause(&self, t: &TxnState<'_>, e: TxnError) -> TxnError {
        let own = |table, key| t.writes.iter().any(|w| (w.table, w.key) == (table, key));
        match t.reads.iter().find(|&&(table, key, v)| !t.db.store.still_valid(table, key, v, own(table, key)))
        {
            Some(&(table, key, _)) => TxnError::Conflict { table, key },
            None => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use strata_pmem::Region;

    use crate::cc::CcKind;
    use crate::{
        LogDeviceKind, LogMode, LoggingKind, RowKey, TableId, TableSchema, TxnDb, TxnDbOptions, TxnError,
        WorkerId,
    };

    const T: TableId = TableId(0);

    /// Taurus with two logs on simulated PMem, under OCC.
    fn db(mode: LogMode) -> TxnDb {
        let regions = (0..2).map(|_| Arc::new(Region::sim(1 << 20))).collect();
        let mut o = TxnDbOptions::new(LoggingKind::Taurus { logs: 2 }, LogDeviceKind::Regions(regions), 2);
        o.cc = CcKind::Occ;
        o.logging.mode = mode;
        o.logging.capacity_bytes = 1 << 20;
        let (db, _) = TxnDb::open(&o, vec![TableSchema { name: "t".into(), row_bytes: 1 }]).unwrap();
        for k in 0..3 {
            db.bulk_load(T, RowKey(k), &[k as u8]).unwrap();
        }
        db
    }

    #[test]
    fn a_read_overwritten_before_the_commit_fails_validation() {
        let db = db(LogMode::Data);
        let mut t1 = db.begin(WorkerId(0));
        assert_eq!(t1.get(T, RowKey(0)).unwrap(), Some(vec![0]));
        // Reads take no lock: another transaction writes the row meanwhile.
        let mut t2 = db.begin(WorkerId(1));
        t2.put(T, RowKey(0), &[9]).unwrap();
        t2.commit_durably().unwrap();
        t1.put(T, RowKey(1), &[7]).unwrap();
        assert!(matches!(t1.commit(), Err(TxnError::Conflict { key: RowKey(0), .. })));
        assert_eq!(db.rows(T)[&RowKey(1)], vec![1], "the failed transaction installed nothing");
        assert_eq!(db.rows(T)[&RowKey(0)], vec![9]);
    }

    #[test]
    fn an_absent_row_inserted_meanwhile_fails_validation_and_a_reread_change_aborts_at_once() {
        let db = db(LogMode::Data);
        let mut t1 = db.begin(WorkerId(0));
        assert_eq!(t1.get(T, RowKey(5)).unwrap(), None);
        let mut t2 = db.begin(WorkerId(1));
        t2.insert(T, RowKey(5), &[5]).unwrap();
        t2.commit_durably().unwrap();
        t1.insert(T, RowKey(6), &[6]).unwrap();
        assert!(matches!(t1.commit(), Err(TxnError::Conflict { key: RowKey(5), .. })));

        let mut t3 = db.begin(WorkerId(0));
        t3.get(T, RowKey(2)).unwrap();
        let mut t4 = db.begin(WorkerId(1));
        t4.delete(T, RowKey(2)).unwrap();
        t4.commit_durably().unwrap();
        assert!(matches!(t3.get(T, RowKey(2)), Err(TxnError::Conflict { .. })));
        assert!(matches!(t3.get(T, RowKey(0)), Err(TxnError::Ended)), "the conflict ended it");
    }

    #[test]
    fn readers_pick_up_the_writer_s_lv_and_read_only_commits_write_no_record() {
        let db = db(LogMode::Data);
        let mut w = db.begin(WorkerId(1));
        w.put(T, RowKey(0), &[3]).unwrap();
        let written = w.commit_durably().unwrap();
        let (log, lsn) = written.record.expect("a record");
        assert_eq!(log.index(), 1);
        let mut r = db.begin(WorkerId(0));
        assert_eq!(r.get(T, RowKey(0)).unwrap(), Some(vec![3]));
        assert_eq!(r.lv().get(1), lsn, "RAW: the reader depends on the writer's record");
        let ticket = r.commit().unwrap();
        assert!(ticket.record.is_none(), "read-only: no record");
        assert_eq!(ticket.lv.get(1), lsn);
    }

    #[test]
    fn under_command_logging_a_later_writer_depends_on_an_earlier_reader() {
        let db = db(LogMode::Command);
        // T1 reads row 0 and writes row 1 on log 0.
        let mut t1 = db.begin(WorkerId(0));
        t1.get(T, RowKey(0)).unwrap();
        t1.put(T, RowKey(1), &[8]).unwrap();
        let (log, lsn) = t1.commit_durably().unwrap().record.expect("a record");
        assert_eq!(log.index(), 0);
        // T2 overwrites row 0 on log 1: replaying it before T1 would feed T1
        // the new value (WAR), so its LV must cover T1's record.
        let mut t2 = db.begin(WorkerId(1));
        t2.put(T, RowKey(0), &[4]).unwrap();
        assert_eq!(t2.lv().get(0), 0, "no dependency before the write lock");
        let t2_ticket = t2.commit_durably().unwrap();
        assert!(t2_ticket.lv.get(0) >= lsn, "WAR: {:?} does not cover T1's LSN {lsn}", t2_ticket.lv);
    }

    #[test]
    fn an_error_drawn_from_a_stale_read_is_reported_as_a_conflict() {
        let db = db(LogMode::Data);
        // T1 reads row 0 (value 0) and will insert key 10 + value.
        let mut t1 = db.begin(WorkerId(0));
        let v = t1.get(T, RowKey(0)).unwrap().unwrap()[0];
        // T2 does the same from the same value, and commits first.
        let mut t2 = db.begin(WorkerId(1));
        assert_eq!(t2.get(T, RowKey(0)).unwrap(), Some(vec![v]));
        t2.put(T, RowKey(0), &[v + 1]).unwrap();
        t2.insert(T, RowKey(10 + u64::from(v)), &[1]).unwrap();
        t2.commit_durably().unwrap();
        // T1's insert finds T2's row: the cause is T1's stale read.
        assert!(matches!(
            t1.insert(T, RowKey(10 + u64::from(v)), &[1]),
            Err(TxnError::Conflict { key: RowKey(0), .. })
        ));
        // Without a stale read the error stands.
        let mut t3 = db.begin(WorkerId(0));
        assert!(matches!(t3.insert(T, RowKey(1), &[1]), Err(TxnError::Duplicate { .. })));
    }

    #[test]
    fn under_data_logging_a_later_writer_takes_no_war_dependency() {
        let db = db(LogMode::Data);
        let mut t1 = db.begin(WorkerId(0));
        t1.get(T, RowKey(0)).unwrap();
        t1.put(T, RowKey(1), &[8]).unwrap();
        t1.commit_durably().unwrap();
        let mut t2 = db.begin(WorkerId(1));
        t2.put(T, RowKey(0), &[4]).unwrap();
        let ticket = t2.commit_durably().unwrap();
        assert_eq!(ticket.lv.get(0), 0, "data logging orders only RAW and WAW");
    }
}
