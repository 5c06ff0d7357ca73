//! FIR behind the transactional-table API (`strata_txn::access`), so the
//! stored procedures written for `TxnDb` (YCSB, TPC-C) run unchanged on
//! FIR's MVTO tables (fir.txt 5.1 runs every engine on the same
//! workloads): [`FirTxn`] is a [`RowAccess`], [`FirEngine`] a
//! [`TxnEngine`], [`FirLoader`] a [`RowLoader`].

use strata_txn::{ProcId, Procedures, RowAccess, RowKey, RowLoader, TableId, TxnEngine, TxnError, WorkerId};

use crate::db::{FirDb, FirTicket};
use crate::error::FirError;
use crate::txn::FirTxn;

impl From<FirError> for TxnError {
    fn from(e: FirError) -> TxnError {
        match e {
            FirError::Conflict { table, key } => TxnError::Conflict { table, key },
            FirError::NotFound { table, key } => TxnError::NotFound { table, key },
            FirError::Duplicate { table, key } => TxnError::Duplicate { table, key },
            FirError::NoSuchTable(t) => TxnError::UnknownTable(t),
            FirError::RowSize { table, got, want } => TxnError::RowSize { table, got, want },
            FirError::Ended => TxnError::Ended,
            FirError::Pmem(e) => TxnError::Pmem(e),
            other => TxnError::Engine(Box::new(other)),
        }
    }
}

impl RowAccess for FirTxn<'_> {
    fn get(&mut self, table: TableId, key: RowKey) -> Result<Option<Vec<u8>>, TxnError> {
        Ok(FirTxn::get(self, table, key)?)
    }
    fn put(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        Ok(FirTxn::put(self, table, key, row)?)
    }
    fn insert(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        Ok(FirTxn::insert(self, table, key, row)?)
    }
    fn delete(&mut self, table: TableId, key: RowKey) -> Result<(), TxnError> {
        Ok(FirTxn::delete(self, table, key)?)
    }
}

/// A FIR database with the stored procedures it runs.
pub struct FirEngine {
    pub db: FirDb,
    procedures: Procedures,
}

impl FirEngine {
    pub fn new(db: FirDb, procedures: Procedures) -> FirEngine {
        FirEngine { db, procedures }
    }
}

impl TxnEngine for FirEngine {
    type Ticket = FirTicket;

    /// Begins a transaction, runs the procedure in it and commits it; an
    /// error of the procedure rolls it back (its versions become holes).
    fn run(&self, worker: WorkerId, id: ProcId, args: &[u8]) -> Result<FirTicket, TxnError> {
        let f = self.procedures.get(id)?;
        let mut txn = self.db.begin(worker)?;
        f(&mut txn, args)?;
        Ok(txn.commit()?)
    }
    fn is_committed(&self, ticket: &FirTicket) -> bool {
        self.db.is_committed(ticket)
    }
    fn wait_committed(&self, ticket: &FirTicket) -> Result<(), TxnError> {
        self.db.wait_committed(ticket);
        Ok(())
    }
    fn wrote(&self, ticket: &FirTicket) -> bool {
        ticket.txn != 0
    }
}

/// Rows a loader puts in one transaction.
const LOAD_BATCH_ROWS: usize = 1_024;

/// Loads base rows as inserts of worker 0, [`LOAD_BATCH_ROWS`] to a
/// durable transaction; [`FirLoader::finish`] commits the last batch.
pub struct FirLoader<'a> {
    db: &'a FirDb,
    txn: Option<FirTxn<'a>>,
    rows_in_txn: usize,
}

impl<'a> FirLoader<'a> {
    pub fn new(db: &'a FirDb) -> FirLoader<'a> {
        FirLoader { db, txn: None, rows_in_txn: 0 }
    }

    /// Commits what is loaded and waits until it is durable.
    pub fn finish(mut self) -> Result<(), FirError> {
        if let Some(t) = self.txn.take() {
            t.commit_durably()?;
        }
        Ok(())
    }
}

impl RowLoader for FirLoader<'_> {
    fn load_row(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        let txn = match &mut self.txn {
            Some(t) => t,
            None => self.txn.insert(self.db.begin(WorkerId(0))?),
        };
        txn.insert(table, key, row)?;
        self.rows_in_txn += 1;
        if self.rows_in_txn == LOAD_BATCH_ROWS {
            self.rows_in_txn = 0;
            self.txn.take().expect("a batch").commit_durably()?;
        }
        Ok(())
    }
}
