//! The transactional-table API every engine implements (issue 17: "FIR is a
//! second implementation of the same transactional-table API"):
//!
//! - [`RowAccess`]: what a stored procedure does inside one transaction
//!   (`get`/`put`/`insert`/`delete` by primary key). Procedures
//!   ([`crate::Procedures`]) are written against it, so the same YCSB and
//!   TPC-C code runs on [`crate::TxnDb`] (2PL/OCC with a logging scheme) and
//!   on FIR's MVTO tables (`strata-fir`);
//! - [`RowLoader`]: how a workload's base state goes in before a run;
//! - [`TxnEngine`]: an engine run by stored procedure with asynchronous
//!   commit: run a transaction, get a ticket, learn when it is durable.
//!
//! A new transactional engine implements these three traits in its own
//! crate; `strata bench oltp` drives it through them (ARCHITECTURE.md,
//! "Adding a design").

use crate::error::TxnError;
use crate::ids::{RowKey, TableId, WorkerId};
use crate::procedures::ProcId;

/// One transaction's row accesses. An error other than a missing row
/// (`NotFound`) or a duplicate (`Duplicate`) has aborted the transaction.
pub trait RowAccess {
    /// The row of `key` as this transaction sees it (its own writes included).
    fn get(&mut self, table: TableId, key: RowKey) -> Result<Option<Vec<u8>>, TxnError>;
    /// Replaces an existing row (`NotFound` if there is none).
    fn put(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError>;
    /// Adds a new row (`Duplicate` if the key has one).
    fn insert(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError>;
    /// Removes an existing row (`NotFound` if there is none).
    fn delete(&mut self, table: TableId, key: RowKey) -> Result<(), TxnError>;
}

/// Takes a workload's base rows before a run.
pub trait RowLoader {
    fn load_row(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError>;
}

/// A transactional engine driven by stored procedure, commits asynchronous.
pub trait TxnEngine: Send + Sync {
    /// What a committed transaction waits on.
    type Ticket: Send;

    /// Runs procedure `id` with `args` as one transaction of `worker` and
    /// commits it. `Conflict` means it aborted: run it again.
    fn run(&self, worker: WorkerId, id: ProcId, args: &[u8]) -> Result<Self::Ticket, TxnError>;
    /// Whether the ticket's transaction is durable.
    fn is_committed(&self, ticket: &Self::Ticket) -> bool;
    /// Blocks until the ticket's transaction is durable.
    fn wait_committed(&self, ticket: &Self::Ticket) -> Result<(), TxnError>;
    /// Whether the transaction left something recovery must find (a log
    /// record, or versions in place): false for a read-only one, and for
    /// any under a scheme that makes nothing durable.
    fn wrote(&self, ticket: &Self::Ticket) -> bool;
}

impl RowAccess for crate::Txn<'_> {
    fn get(&mut self, table: TableId, key: RowKey) -> Result<Option<Vec<u8>>, TxnError> {
        crate::Txn::get(self, table, key)
    }
    fn put(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        crate::Txn::put(self, table, key, row)
    }
    fn insert(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        crate::Txn::insert(self, table, key, row)
    }
    fn delete(&mut self, table: TableId, key: RowKey) -> Result<(), TxnError> {
        crate::Txn::delete(self, table, key)
    }
}

/// [`crate::TxnDb::bulk_load`]: rows installed unlogged (the base state).
impl RowLoader for &crate::TxnDb {
    fn load_row(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        self.bulk_load(table, key, row)
    }
}

impl TxnEngine for crate::TxnDb {
    type Ticket = crate::CommitTicket;

    fn run(&self, worker: WorkerId, id: ProcId, args: &[u8]) -> Result<Self::Ticket, TxnError> {
        crate::TxnDb::run(self, worker, id, args)
    }
    fn is_committed(&self, ticket: &Self::Ticket) -> bool {
        crate::TxnDb::is_committed(self, ticket)
    }
    fn wait_committed(&self, ticket: &Self::Ticket) -> Result<(), TxnError> {
        crate::TxnDb::wait_committed(self, ticket)
    }
    fn wrote(&self, ticket: &Self::Ticket) -> bool {
        ticket.record.is_some()
    }
}
