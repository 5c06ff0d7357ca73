//! A transaction under strict 2PL NO_WAIT with Taurus's LV tracking
//! (taurus.txt Algorithm 1). Writes are buffered and installed at commit;
//! the commit writes the record, sets `T.LV[i]` to its LSN, installs the
//! writes and updates the tuples' LVs as it releases the locks (early lock
//! release), and returns a [`CommitTicket`] to wait on for durability.

use crate::db::TxnDb;
use crate::error::TxnError;
use crate::ids::{RowKey, TableId, WorkerId};
use crate::log::{CommitTicket, LogMode, Payload};
use crate::lv::Lv;
use crate::record::{Command, RowWrite, WriteOp};
use crate::store::{LockMode, Release};

pub struct Txn<'db> {
    db: &'db TxnDb,
    worker: WorkerId,
    lv: Lv,
    held: Vec<(TableId, RowKey, LockMode)>,
    writes: Vec<RowWrite>,
    /// The stored procedure running it (logged instead of the writes in
    /// command mode).
    pub(crate) command: Option<Command>,
    /// Recovery re-running a command: no locks, no LVs, no log.
    replay: bool,
    finished: bool,
}

impl<'db> Txn<'db> {
    pub(crate) fn new(db: &'db TxnDb, worker: WorkerId) -> Self {
        Txn {
            db,
            worker,
            // Everything recovered at open is a dependency of every new
            // transaction (recovered rows carry no LVs of their own).
            lv: db.base_lv,
            held: Vec::new(),
            writes: Vec::new(),
            command: None,
            replay: false,
            finished: false,
        }
    }

    /// A transaction re-running a logged command at recovery: the LVs
    /// already ordered it after everything it depends on, so it takes no
    /// locks (taurus.txt 3.3: "no concurrency control algorithm is needed").
    pub(crate) fn replaying(db: &'db TxnDb) -> Self {
        let mut txn = Txn::new(db, WorkerId(0));
        txn.replay = true;
        txn
    }

    /// An ended transaction (aborted by an error) refuses further work:
    /// its locks are gone, so what it would read or write is unprotected.
    fn check_open(&self) -> Result<(), TxnError> {
        if self.finished {
            return Err(TxnError::Ended);
        }
        Ok(())
    }

    /// Declares that this transaction does what stored procedure `id` does
    /// with `args` (it must: recovery re-runs the procedure): in command
    /// mode its record is the invocation instead of its writes.
    pub fn log_as_command(&mut self, id: crate::ProcId, args: &[u8]) {
        self.command = Some(Command { procedure: id.0, args: args.to_vec() });
    }

    /// T.LV so far.
    pub fn lv(&self) -> &Lv {
        &self.lv
    }

    fn held(&self, table: TableId, key: RowKey) -> Option<LockMode> {
        self.held.iter().find(|(t, k, _)| (*t, *k) == (table, key)).map(|(.., m)| *m)
    }

    fn buffered(&self, table: TableId, key: RowKey) -> Option<&WriteOp> {
        self.writes.iter().find(|w| (w.table, w.key) == (table, key)).map(|w| &w.op)
    }

    /// Reads a row (a shared lock; the transaction's own write if it wrote it).
    pub fn get(&mut self, table: TableId, key: RowKey) -> Result<Option<Vec<u8>>, TxnError> {
        self.check_open()?;
        self.db.schema(table)?;
        if let Some(op) = self.buffered(table, key) {
            return Ok(match op {
                WriteOp::Put(r) => Some(r.clone()),
                WriteOp::Delete => None,
            });
        }
        if self.replay || self.held(table, key).is_some() {
            return Ok(self.db.store.row_locked(table, key));
        }
        let track = self.db.logging.tracks_lv();
        let row = self.lock_or_abort(table, key, LockMode::Shared, track)?;
        Ok(row)
    }

    fn lock_or_abort(
        &mut self,
        table: TableId,
        key: RowKey,
        mode: LockMode,
        track: bool,
    ) -> Result<Option<Vec<u8>>, TxnError> {
        match self.db.store.lock(table, key, mode, &mut self.lv, track) {
            Ok(row) => {
                self.held.push((table, key, mode));
                Ok(row)
            }
            Err(e) => {
                self.release_all(None);
                Err(e)
            }
        }
    }

    /// An exclusive lock on the row; its current image as this transaction sees it.
    fn exclusive(&mut self, table: TableId, key: RowKey) -> Result<Option<Vec<u8>>, TxnError> {
        // WAR dependencies matter only when commands are re-run (taurus.txt
        // 2.2): data logging's writers skip the tuples' readLVs.
        let track = self.db.logging.tracks_lv();
        let war = self.db.mode == LogMode::Command;
        match self.held(table, key) {
            _ if self.replay => {}
            Some(LockMode::Exclusive | LockMode::ExclusiveNoWar) => {}
            Some(LockMode::Shared) => {
                if let Err(e) = self.db.store.upgrade(table, key, &mut self.lv, track && war) {
                    self.release_all(None);
                    return Err(e);
                }
                for h in &mut self.held {
                    if (h.0, h.1) == (table, key) {
                        h.2 = LockMode::Exclusive;
                    }
                }
            }
            None => {
                let mode = if war { LockMode::Exclusive } else { LockMode::ExclusiveNoWar };
                let row = self.lock_or_abort(table, key, mode, track)?;
                return Ok(row);
            }
        }
        Ok(match self.buffered(table, key) {
            Some(WriteOp::Put(r)) => Some(r.clone()),
            Some(WriteOp::Delete) => None,
            None => self.db.store.row_locked(table, key),
        })
    }

    fn buffer(&mut self, table: TableId, key: RowKey, op: WriteOp) {
        match self.writes.iter_mut().find(|w| (w.table, w.key) == (table, key)) {
            Some(w) => w.op = op,
            None => self.writes.push(RowWrite { table, key, op }),
        }
    }

    fn fail(&mut self, e: TxnError) -> Result<(), TxnError> {
        self.release_all(None);
        Err(e)
    }

    /// Updates an existing row.
    pub fn put(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        self.check_open()?;
        self.db.check_row(table, row)?;
        if self.exclusive(table, key)?.is_none() {
            return self.fail(TxnError::NotFound { table, key });
        }
        self.buffer(table, key, WriteOp::Put(row.to_vec()));
        Ok(())
    }

    /// Inserts a new row.
    pub fn insert(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        self.check_open()?;
        self.db.check_row(table, row)?;
        if self.exclusive(table, key)?.is_some() {
            return self.fail(TxnError::Duplicate { table, key });
        }
        self.buffer(table, key, WriteOp::Put(row.to_vec()));
        Ok(())
    }

    /// Deletes an existing row.
    pub fn delete(&mut self, table: TableId, key: RowKey) -> Result<(), TxnError> {
        self.check_open()?;
        self.db.schema(table)?;
        if self.exclusive(table, key)?.is_none() {
            return self.fail(TxnError::NotFound { table, key });
        }
        self.buffer(table, key, WriteOp::Delete);
        Ok(())
    }

    /// Commits (Algorithm 1, `Commit`): the record (none if read-only), the
    /// writes installed, the LVs updated and the locks released. Durable
    /// once [`TxnDb::wait_committed`] returns for the ticket.
    pub fn commit(mut self) -> Result<CommitTicket, TxnError> {
        self.check_open()?;
        self.finished = true;
        if self.replay {
            for w in &self.writes {
                let row = match &w.op {
                    WriteOp::Put(r) => Some(r.as_slice()),
                    WriteOp::Delete => None,
                };
                self.db.store.install(w.table, w.key, row);
            }
            return Ok(CommitTicket { lv: Lv::ZERO, record: None });
        }
        let mut record = None;
        if !self.writes.is_empty() {
            let payload = match &self.command {
                Some(c) if self.db.mode == LogMode::Command => Payload::Command(c),
                _ => Payload::Data(&self.writes),
            };
            match self.db.logging.append(self.worker, &self.lv, payload) {
                Ok(r) => record = r,
                Err(e) => {
                    self.release_all(None);
                    return Err(e);
                }
            }
            if let Some((log, lsn)) = record {
                self.lv.set(log.index(), lsn);
            }
        }
        let lv = self.lv;
        self.release_all(Some(&lv));
        Ok(CommitTicket { lv, record })
    }

    /// Commits and waits until it is durable.
    pub fn commit_durably(self) -> Result<CommitTicket, TxnError> {
        let db = self.db;
        let ticket = self.commit()?;
        db.wait_committed(&ticket)?;
        Ok(ticket)
    }

    /// Releases every lock without writing.
    pub fn abort(mut self) {
        self.release_all(None);
    }

    fn release_all(&mut self, lv: Option<&Lv>) {
        self.finished = true;
        for (table, key, mode) in std::mem::take(&mut self.held) {
            let write = match lv {
                Some(_) => self.buffered(table, key).map(|op| match op {
                    WriteOp::Put(r) => Some(r.as_slice()),
                    WriteOp::Delete => None,
                }),
                None => None,
            };
            self.db.store.release(&Release { table, key, mode, write }, lv);
        }
        if lv.is_none() {
            self.writes.clear();
        }
    }
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.release_all(None);
        }
    }
}
