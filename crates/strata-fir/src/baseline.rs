//! fir.txt 5.1's DRAM-DB baselines, in FIR's own engine: the same MVTO
//! transactions, index and version layout over tables in DRAM (a
//! `volatile` region, whose flushes and fences do nothing), so what they
//! measure against FIR is persistence and recovery, not a different
//! concurrency control:
//!
//! - `DRAM-DB (No Log)`: nothing else; survives nothing;
//! - `DRAM-DB (Log)`: each read-write transaction's writes go to a redo
//!   log as one data record (strata-txn's serial logging, on emulated
//!   PMem or SSD) before its versions become visible, and it is
//!   acknowledged once the record is durable. Recovery replays the
//!   committed records over the base state ([`DramDb::replay`]).

use strata_txn::log::{Payload, TxnLogging};
use strata_txn::record::{RowWrite, WriteOp};
use strata_txn::{
    CommitTicket, Lv, ProcId, Procedures, RowAccess, RowKey, TableId, TxnEngine, TxnError, WorkerId,
};

use crate::db::{FirDb, FirTicket};
use crate::txn::FirTxn;

/// FIR's engine over DRAM tables, with or without a redo log.
pub struct DramDb {
    pub db: FirDb,
    procedures: Procedures,
    log: Option<Box<dyn TxnLogging>>,
}

/// What a DRAM-DB transaction waits on: its log record, if it wrote one.
pub struct DramTicket {
    pub fir: FirTicket,
    pub log: Option<CommitTicket>,
}

/// A transaction's accesses, its writes kept as the redo record's rows.
struct Recording<'t, 'db> {
    txn: &'t mut FirTxn<'db>,
    writes: Vec<RowWrite>,
}

impl RowAccess for Recording<'_, '_> {
    fn get(&mut self, table: TableId, key: RowKey) -> Result<Option<Vec<u8>>, TxnError> {
        Ok(self.txn.get(table, key)?)
    }
    fn put(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        self.txn.put(table, key, row)?;
        self.writes.push(RowWrite { table, key, op: WriteOp::Put(row.to_vec()) });
        Ok(())
    }
    fn insert(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        self.txn.insert(table, key, row)?;
        self.writes.push(RowWrite { table, key, op: WriteOp::Put(row.to_vec()) });
        Ok(())
    }
    fn delete(&mut self, table: TableId, key: RowKey) -> Result<(), TxnError> {
        self.txn.delete(table, key)?;
        self.writes.push(RowWrite { table, key, op: WriteOp::Delete });
        Ok(())
    }
}

impl DramDb {
    /// `db` over a `volatile` region; `log` the redo log (None: no log).
    pub fn new(db: FirDb, procedures: Procedures, log: Option<Box<dyn TxnLogging>>) -> DramDb {
        DramDb { db, procedures, log }
    }

    /// Bytes the redo log wrote to its devices.
    pub fn log_bytes(&self) -> u64 {
        self.log.as_ref().map_or(0, |l| l.device_bytes())
    }

    /// Recovery of one logged transaction: its rows installed in a
    /// transaction of worker 0 (a put of a key with no row inserts it).
    pub fn replay(&self, writes: &[RowWrite]) -> Result<(), TxnError> {
        let mut txn = self.db.begin(WorkerId(0))?;
        for w in writes {
            match &w.op {
                WriteOp::Put(row) => match txn.get(w.table, w.key)? {
                    Some(_) => txn.put(w.table, w.key, row)?,
                    None => txn.insert(w.table, w.key, row)?,
                },
                WriteOp::Delete => txn.delete(w.table, w.key)?,
            }
        }
        txn.commit_durably()?;
        Ok(())
    }
}

impl Drop for DramDb {
    fn drop(&mut self) {
        if let Some(log) = &self.log {
            log.shutdown();
        }
    }
}

impl TxnEngine for DramDb {
    type Ticket = DramTicket;

    /// Runs the procedure; with a log, appends the writes as one record
    /// before committing, so the log's order is the order in which the
    /// versions become visible (a later writer of a key meets this one's
    /// version pending until then and aborts).
    fn run(&self, worker: WorkerId, id: ProcId, args: &[u8]) -> Result<DramTicket, TxnError> {
        let f = self.procedures.get(id)?;
        let mut txn = self.db.begin(worker)?;
        let mut rec = Recording { txn: &mut txn, writes: Vec::new() };
        f(&mut rec, args)?;
        let writes = rec.writes;
        let log = match &self.log {
            Some(log) if !writes.is_empty() => {
                let record = log.append(worker, &Lv::ZERO, Payload::Data(&writes))?;
                let mut lv = Lv::ZERO;
                if let Some(r) = record {
                    log.stamp(worker, &mut lv, r);
                }
                Some(CommitTicket { lv, record })
            }
            _ => None,
        };
        Ok(DramTicket { fir: txn.commit()?, log })
    }
    fn is_committed(&self, t: &DramTicket) -> bool {
        self.db.is_committed(&t.fir)
            && match (&self.log, &t.log) {
                (Some(log), Some(c)) => log.is_committed(c),
                _ => true,
            }
    }
    fn wait_committed(&self, t: &DramTicket) -> Result<(), TxnError> {
        self.db.wait_committed(&t.fir);
        match (&self.log, &t.log) {
            (Some(log), Some(c)) => log.wait_committed(c),
            _ => Ok(()),
        }
    }
    fn wrote(&self, t: &DramTicket) -> bool {
        t.log.as_ref().is_some_and(|c| c.record.is_some())
    }
}
