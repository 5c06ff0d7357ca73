//! A transaction with Taurus's LV tracking: its API, and the state every
//! concurrency control shares ([`TxnState`]). Writes are buffered and
//! installed at commit; the commit writes the record, sets `T.LV[i]` to
//! its LSN, installs the writes and updates the tuples' LVs as it releases
//! the locks (early lock release), and returns a [`CommitTicket`] to wait
//! on for durability. The locking itself is the database's
//! [`crate::cc::ConcurrencyControl`] (2PL NO_WAIT or OCC).

use crate::db::TxnDb;
use crate::error::TxnError;
use crate::ids::{RowKey, TableId, WorkerId};
use crate::log::{CommitTicket, LogMode, Payload};
use crate::lv::Lv;
use crate::record::{Command, RowWrite, WriteOp};
use crate::store::{LockMode, Release};

/// What a transaction carries whatever its concurrency control: `T.LV`,
/// the buffered writes, the locks it holds (2PL, and OCC during commit),
/// the rows it read with their versions (OCC).
pub(crate) struct TxnState<'db> {
    pub(crate) db: &'db TxnDb,
    pub(crate) worker: WorkerId,
    pub(crate) lv: Lv,
    pub(crate) held: Vec<(TableId, RowKey, LockMode)>,
    /// OCC's read set: each row read and the version it had.
    pub(crate) reads: Vec<(TableId, RowKey, u64)>,
    /// The range scans, with the keys the index gave, checked again at
    /// commit (taurus.txt 3.4, Silo's scan-twice).
    pub(crate) scans: Vec<Scan>,
    pub(crate) writes: Vec<RowWrite>,
    /// The stored procedure running it (logged instead of the writes in
    /// command mode).
    pub(crate) command: Option<Command>,
    pub(crate) finished: bool,
}

/// One range scan of a transaction.
pub(crate) struct Scan {
    pub table: TableId,
    pub from: RowKey,
    pub to: RowKey,
    pub limit: usize,
    pub keys: Vec<RowKey>,
}

impl TxnState<'_> {
    /// The phantom check before a commit writes its record: every scan
    /// finds the same keys again, else the transaction aborts.
    pub(crate) fn scans_unchanged(&self) -> Result<(), TxnError> {
        for s in &self.scans {
            let now = self.db.store.index_range(s.table, s.from, s.to, s.limit);
            if now != s.keys {
                let key = now.iter().zip(&s.keys).find(|(a, b)| a != b).map_or(s.from, |(a, _)| *a);
                return Err(TxnError::Conflict { table: s.table, key });
            }
        }
        Ok(())
    }

    pub(crate) fn held(&self, table: TableId, key: RowKey) -> Option<LockMode> {
        self.held.iter().find(|(t, k, _)| (*t, *k) == (table, key)).map(|(.., m)| *m)
    }

    pub(crate) fn buffered(&self, table: TableId, key: RowKey) -> Option<&WriteOp> {
        self.writes.iter().find(|w| (w.table, w.key) == (table, key)).map(|w| &w.op)
    }

    /// The row as this transaction's buffer has it, if it wrote it.
    pub(crate) fn buffered_row(&self, table: TableId, key: RowKey) -> Option<Option<Vec<u8>>> {
        self.buffered(table, key).map(|op| match op {
            WriteOp::Put(r) => Some(r.clone()),
            WriteOp::Delete => None,
        })
    }

    /// Algorithm 1, lines 8-11: writes the record (if the transaction
    /// wrote) with a copy of `T.LV`, then sets `T.LV[i]` to its LSN.
    pub(crate) fn append_record(&mut self) -> Result<Option<(crate::LogId, u64)>, TxnError> {
        if self.writes.is_empty() {
            return Ok(None);
        }
        let payload = match &self.command {
            Some(c) if self.db.mode == LogMode::Command => Payload::Command(c),
            _ => Payload::Data(&self.writes),
        };
        let record = self.db.logging.append(self.worker, &self.lv, payload)?;
        if let Some(r) = record {
            self.db.logging.stamp(self.worker, &mut self.lv, r);
        }
        Ok(record)
    }

    /// The end of every commit once its concurrency control holds what it
    /// must: the phantom check of its scans, the record, then the writes
    /// installed and the locks released with `T.LV` (early lock release).
    /// Any failure ends the transaction without writing.
    pub(crate) fn log_and_release(&mut self) -> Result<CommitTicket, TxnError> {
        let record = self.scans_unchanged().and_then(|()| self.append_record());
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                self.release_all(None);
                return Err(e);
            }
        };
        let lv = self.lv;
        self.release_all(Some(&lv));
        self.db.after_commit();
        Ok(CommitTicket { lv, record })
    }

    /// Releases every lock: with `lv` (a commit) installing the writes
    /// and updating the tuples' LVs (Algorithm 1, lines 13-19), without
    /// (an abort) dropping the writes.
    pub(crate) fn release_all(&mut self, lv: Option<&Lv>) {
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
        self.reads.clear();
        self.scans.clear();
        if lv.is_none() {
            self.writes.clear();
        }
    }
}

pub struct Txn<'db> {
    state: TxnState<'db>,
    /// Recovery re-running a logged command: no locks, no LVs, no log.
    replay: bool,
}

impl<'db> Txn<'db> {
    pub(crate) fn new(db: &'db TxnDb, worker: WorkerId) -> Self {
        Txn {
            state: TxnState {
                db,
                worker,
                // Everything recovered at open is a dependency of every new
                // transaction (recovered rows carry no LVs of their own).
                lv: db.base_lv,
                held: Vec::new(),
                reads: Vec::new(),
                scans: Vec::new(),
                writes: Vec::new(),
                command: None,
                finished: false,
            },
            replay: false,
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
        if self.state.finished {
            return Err(TxnError::Ended);
        }
        Ok(())
    }

    /// Declares that this transaction does what stored procedure `id` does
    /// with `args` (it must: recovery re-runs the procedure): in command
    /// mode its record is the invocation instead of its writes.
    pub fn log_as_command(&mut self, id: crate::ProcId, args: &[u8]) {
        self.state.command = Some(Command { procedure: id.0, args: args.to_vec() });
    }

    /// T.LV so far.
    pub fn lv(&self) -> &Lv {
        &self.state.lv
    }

    /// Reads a row (the transaction's own write if it wrote it).
    pub fn get(&mut self, table: TableId, key: RowKey) -> Result<Option<Vec<u8>>, TxnError> {
        self.check_open()?;
        self.state.db.schema(table)?;
        if let Some(row) = self.state.buffered_row(table, key) {
            return Ok(row);
        }
        if self.replay {
            return Ok(self.state.db.store.row_locked(table, key));
        }
        let db = self.state.db;
        db.cc.read(&mut self.state, table, key)
    }

    /// The row's image before a write, as this transaction sees it.
    fn before_write(&mut self, table: TableId, key: RowKey) -> Result<Option<Vec<u8>>, TxnError> {
        if self.replay {
            return Ok(match self.state.buffered_row(table, key) {
                Some(row) => row,
                None => self.state.db.store.row_locked(table, key),
            });
        }
        let db = self.state.db;
        db.cc.write_intent(&mut self.state, table, key)
    }

    fn buffer(&mut self, table: TableId, key: RowKey, op: WriteOp) {
        match self.state.writes.iter_mut().find(|w| (w.table, w.key) == (table, key)) {
            Some(w) => w.op = op,
            None => self.state.writes.push(RowWrite { table, key, op }),
        }
    }

    /// The error to report for `e`, which the transaction's own logic
    /// raised: under OCC, a conflict if a row it read changed since (its
    /// logic may have run on stale rows).
    pub fn cause(&self, e: TxnError) -> TxnError {
        if self.replay || self.state.finished || matches!(e, TxnError::Conflict { .. }) {
            return e;
        }
        self.state.db.cc.cause(&self.state, e)
    }

    fn fail(&mut self, e: TxnError) -> Result<(), TxnError> {
        let e = self.cause(e);
        self.end_without_writing();
        Err(e)
    }

    fn end_without_writing(&mut self) {
        if self.replay {
            self.state.finished = true;
            return;
        }
        let db = self.state.db;
        db.cc.abort(&mut self.state);
    }

    /// The committed rows of `table` with keys in `from..=to` (at most
    /// `limit`, in key order), with this transaction's own writes: each row
    /// read as `get` reads it. The commit scans again and aborts if the
    /// keys changed (phantoms; taurus.txt 3.4).
    ///
    /// Not under command logging: a re-run scan at recovery would also
    /// need every row that entered or left the range after it ordered
    /// after it (a WAR on the range, which row LVs do not carry).
    pub fn scan(
        &mut self,
        table: TableId,
        from: RowKey,
        to: RowKey,
        limit: usize,
    ) -> Result<Vec<(RowKey, Vec<u8>)>, TxnError> {
        self.check_open()?;
        self.state.db.schema(table)?;
        if self.state.db.mode == LogMode::Command && !self.replay {
            self.end_without_writing();
            return Err(TxnError::Unsupported("range scans under command logging"));
        }
        let keys = self.state.db.store.index_range(table, from, to, limit);
        let mut out = Vec::with_capacity(keys.len());
        for &k in &keys {
            if let Some(row) = self.get(table, k)? {
                out.push((k, row));
            }
        }
        for w in &self.state.writes {
            if w.table == table && (from..=to).contains(&w.key) && !keys.contains(&w.key) {
                if let WriteOp::Put(r) = &w.op {
                    out.push((w.key, r.clone()));
                }
            }
        }
        out.sort_by_key(|(k, _)| *k);
        out.truncate(limit);
        if !self.replay {
            self.state.scans.push(Scan { table, from, to, limit, keys });
        }
        Ok(out)
    }

    /// Updates an existing row.
    pub fn put(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        self.check_open()?;
        self.state.db.check_row(table, row)?;
        if self.before_write(table, key)?.is_none() {
            return self.fail(TxnError::NotFound { table, key });
        }
        self.buffer(table, key, WriteOp::Put(row.to_vec()));
        Ok(())
    }

    /// Inserts a new row.
    pub fn insert(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        self.check_open()?;
        self.state.db.check_row(table, row)?;
        if self.before_write(table, key)?.is_some() {
            return self.fail(TxnError::Duplicate { table, key });
        }
        self.buffer(table, key, WriteOp::Put(row.to_vec()));
        Ok(())
    }

    /// Deletes an existing row.
    pub fn delete(&mut self, table: TableId, key: RowKey) -> Result<(), TxnError> {
        self.check_open()?;
        self.state.db.schema(table)?;
        if self.before_write(table, key)?.is_none() {
            return self.fail(TxnError::NotFound { table, key });
        }
        self.buffer(table, key, WriteOp::Delete);
        Ok(())
    }

    /// Commits: the record (none if read-only), the writes installed, the
    /// LVs updated and the locks released (early lock release). Durable
    /// once [`TxnDb::wait_committed`] returns for the ticket.
    pub fn commit(mut self) -> Result<CommitTicket, TxnError> {
        self.check_open()?;
        if self.replay {
            self.state.finished = true;
            for w in &self.state.writes {
                let row = match &w.op {
                    WriteOp::Put(r) => Some(r.as_slice()),
                    WriteOp::Delete => None,
                };
                self.state.db.store.install(w.table, w.key, row);
            }
            return Ok(CommitTicket { lv: Lv::ZERO, record: None });
        }
        let db = self.state.db;
        let ticket = db.cc.commit(&mut self.state);
        debug_assert!(self.state.finished && self.state.held.is_empty(), "a commit ends the transaction");
        ticket
    }

    /// Commits and waits until it is durable.
    pub fn commit_durably(self) -> Result<CommitTicket, TxnError> {
        let db = self.state.db;
        let ticket = self.commit()?;
        db.wait_committed(&ticket)?;
        Ok(ticket)
    }

    /// Ends the transaction without writing.
    pub fn abort(mut self) {
        self.end_without_writing();
    }
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if !self.state.finished {
            self.end_without_writing();
        }
    }
}
