//! Bugs the crash lines plant (feature `crashtest`, and unit tests) to
//! show that the oracle catches them (issue 16: a transaction acknowledged
//! before it committed, a read that does not fold the tuple's `writeLV`
//! into `T.LV`, and under command logging a write that does not fold its
//! `readLV`). Set per database in `TxnDbOptions::planted_bug`.

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum PlantedBug {
    #[default]
    None,
    /// `wait_committed` returns once the record is in the log buffer,
    /// before `CLV` covers it.
    AckBeforeCommitted,
    /// A shared lock leaves the tuple's `writeLV` out of `T.LV` (RAW
    /// dependencies are lost).
    ReadSkipsWriteLv,
    /// Under command logging, a write lock leaves the tuple's `readLV`
    /// out of `T.LV` (WAR dependencies are lost: a re-run command may read
    /// a later transaction's write, or its overwriter survive without it).
    WriteSkipsReadLv,
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use strata_pmem::Region;

    use super::PlantedBug;
    use crate::{
        LogDeviceKind, LogMode, LoggingKind, RowKey, TableId, TableSchema, TxnDb, TxnDbOptions, WorkerId,
    };

    /// Under command logging a writer of a row another transaction read
    /// takes the reader's LSN into its LV (WAR); `WriteSkipsReadLv` drops it.
    #[test]
    fn write_skips_read_lv_drops_the_war_dependency() {
        for (bug, war) in [(PlantedBug::None, true), (PlantedBug::WriteSkipsReadLv, false)] {
            let regions = (0..2).map(|_| Arc::new(Region::sim(1 << 16))).collect();
            let mut o =
                TxnDbOptions::new(LoggingKind::Taurus { logs: 2 }, LogDeviceKind::Regions(regions), 2);
            o.logging.mode = LogMode::Command;
            o.logging.capacity_bytes = 1 << 16;
            o.planted_bug = bug;
            let (db, _) = TxnDb::open(&o, vec![TableSchema { name: "t".into(), row_bytes: 1 }]).unwrap();
            db.bulk_load(TableId(0), RowKey(0), &[0]).unwrap();
            // The reader (log 0) reads row 0 and writes row 1.
            let mut r = db.begin(WorkerId(0));
            r.get(TableId(0), RowKey(0)).unwrap();
            r.insert(TableId(0), RowKey(1), &[1]).unwrap();
            let (_, lsn) = r.commit().unwrap().record.expect("a record");
            // The writer (log 1) reads and overwrites row 0 (a shared lock upgraded).
            let mut w = db.begin(WorkerId(1));
            w.get(TableId(0), RowKey(0)).unwrap();
            w.put(TableId(0), RowKey(0), &[2]).unwrap();
            let ticket = w.commit().unwrap();
            assert_eq!(
                ticket.lv.get(0) >= lsn,
                war,
                "{bug:?}: {:?} against the reader's LSN {lsn}",
                ticket.lv
            );
        }
    }
}
