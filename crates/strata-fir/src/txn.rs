//! A FIR transaction (fir.txt 4.2.1) under MVTO: its txnId is its
//! timestamp. A read sees the newest committed version that began at or
//! before it and raises that version's `read_ts`; a write appends a new
//! version to the worker's region (persisted at once, Algorithm 1) unless
//! a later transaction already read or wrote the key; commit queues the
//! transaction for group commit (`commit.rs`).
//!
//! Versions become visible only once durable, so a reader meeting another
//! transaction's uncommitted version of a key aborts (no wait) when that
//! version is older than the reader, and looks past it when it is newer.
//! Aborts turn the transaction's slots into holes (txnId 0) and fence, so
//! no later LCTT entry of the region can make them look committed.

use std::sync::atomic::Ordering::{Acquire, Relaxed};

use strata_txn::{RowKey, TableId, WorkerId};

use crate::addr::VersionAddr;
use crate::db::{FirDb, FirTicket, KeyState, PendingWrite};
use crate::error::FirError;
use crate::tile::{COMMITTING, OPEN, PENDING, TS_MASK};

/// What a write does.
enum Op<'r> {
    Put(&'r [u8]),
    Insert(&'r [u8]),
    Delete,
}

pub struct FirTxn<'a> {
    db: &'a FirDb,
    worker: WorkerId,
    ts: u64,
    /// The newest own version of each key written.
    writes: Vec<PendingWrite>,
    /// Every slot written (superseded own versions too), for an abort.
    slots: Vec<(usize, VersionAddr)>,
    ended: bool,
}

/// What a key holds at a timestamp.
enum Seen {
    Version(VersionAddr, bool),
    Absent,
}

/// Why a key cannot be read now.
enum Blocked {
    /// Another transaction's uncommitted version, older than the reader.
    Conflict,
    /// An older version whose writer committed and waits for its batch:
    /// (its worker, its txnId).
    Durability(u32, u64),
}

impl<'a> FirTxn<'a> {
    pub(crate) fn new(db: &'a FirDb, worker: WorkerId, ts: u64) -> Self {
        FirTxn { db, worker, ts, writes: Vec::new(), slots: Vec::new(), ended: false }
    }

    /// The transaction's txnId.
    pub fn txn_id(&self) -> u64 {
        self.ts
    }

    /// What `st` holds for this transaction; `Err` if an older version of
    /// another transaction that is not durable yet is in the way.
    fn seen(&self, t: usize, st: &KeyState) -> Result<Seen, Blocked> {
        let s = &self.db.inner.storage;
        let mut v = st.newest;
        while let Some(a) = v {
            let (begin, tomb, prev) = s.with_header(t, a, |h| {
                (h.begin(), h.tombstone.load(Relaxed) != 0, VersionAddr::unlink(h.prev.load(Relaxed)))
            });
            let writer = begin & TS_MASK;
            if begin & PENDING != 0 {
                if writer == self.ts {
                    return Ok(Seen::Version(a, tomb));
                }
                if writer < self.ts {
                    return Err(if begin & COMMITTING != 0 {
                        Blocked::Durability(u32::from(a.region), writer)
                    } else {
                        Blocked::Conflict
                    });
                }
            } else if writer <= self.ts {
                return Ok(Seen::Version(a, tomb));
            }
            v = prev;
        }
        Ok(Seen::Absent)
    }

    /// The row of `key` as of this transaction (its own writes included).
    /// Waits for an older version that is committing to become durable.
    pub fn get(&mut self, table: TableId, key: RowKey) -> Result<Option<Vec<u8>>, FirError> {
        self.check_open()?;
        let t = self.db.table(table)?;
        let inner = &self.db.inner;
        let mut shard = inner.shard(table.0, key.0).lock();
        let k = (table.0, key.0);
        // A key with versions is read without stamping its path (nothing
        // changes in the index); an absent key records the read.
        let st = match shard.get(&k) {
            Some(st) if st.newest.is_some() => st,
            _ => &*shard.entry(k, self.ts, KeyState::default),
        };
        match self.seen(t, st) {
            Err(Blocked::Durability(worker, txn)) => {
                drop(shard);
                inner.commits.wait(worker, txn);
                self.get(table, key)
            }
            Err(Blocked::Conflict) => {
                drop(shard);
                Err(self.abort_with(FirError::Conflict { table, key }))
            }
            Ok(Seen::Absent) => {
                let st = shard.entry(k, self.ts, KeyState::default);
                st.absent_read_ts = st.absent_read_ts.max(self.ts);
                Ok(None)
            }
            Ok(Seen::Version(a, tomb)) => {
                inner.storage.with_header(t, a, |h| h.read_ts.fetch_max(self.ts, Relaxed));
                if tomb {
                    return Ok(None);
                }
                Ok(Some(inner.storage.read_row(t, a)))
            }
        }
    }

    /// Updates an existing row.
    pub fn put(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), FirError> {
        self.write(table, key, Op::Put(row))
    }

    /// Inserts a new row.
    pub fn insert(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), FirError> {
        self.write(table, key, Op::Insert(row))
    }

    /// Deletes an existing row.
    pub fn delete(&mut self, table: TableId, key: RowKey) -> Result<(), FirError> {
        self.write(table, key, Op::Delete)
    }

    fn write(&mut self, table: TableId, key: RowKey, op: Op<'_>) -> Result<(), FirError> {
        self.check_open()?;
        let t = match op {
            Op::Put(r) | Op::Insert(r) => self.db.check_row(table, r)?,
            Op::Delete => self.db.table(table)?,
        };
        let inner = &self.db.inner;
        let s = &inner.storage;
        let mut shard = inner.shard(table.0, key.0).lock();
        // MarkNode: the path is stamped with the writer's txnId, unless the
        // key was stamped above the `CT` of the newest checkpoint begun
        // (read under the shard's latch, so a checkpoint that read this
        // shard before is seen): then every checkpoint still to read the
        // shard visits the key already (fir.txt Algorithm 2 stamps a node
        // only when its stamp is below the current checkpoint's time; this
        // skips the descent as well when the whole path is known stamped).
        let begun = inner.checkpoint_begun_ct.load(Acquire);
        let k = (table.0, key.0);
        let st = match shard.get_mut_unstamped(&k) {
            Some(st) if st.stamped > begun => st,
            _ => {
                let st = shard.entry(k, self.ts, KeyState::default);
                st.stamped = st.stamped.max(self.ts);
                st
            }
        };
        // MVTO's write rule: no later transaction read or wrote the key.
        let (exists, own, prev) = match st.newest {
            Some(n) => {
                let (begin, read, tomb, nprev) = s.with_header(t, n, |h| {
                    (h.begin(), h.read_ts.load(Relaxed), h.tombstone.load(Relaxed) != 0, h.prev.load(Relaxed))
                });
                if begin & PENDING != 0 && begin & TS_MASK == self.ts {
                    (!tomb, true, VersionAddr::unlink(nprev))
                } else if begin & COMMITTING != 0 && begin & TS_MASK < self.ts {
                    // Committing and older: wait for its batch, then decide.
                    drop(shard);
                    inner.commits.wait(u32::from(n.region), begin & TS_MASK);
                    return self.write(table, key, op);
                } else if begin & PENDING != 0 || begin > self.ts || read > self.ts {
                    drop(shard);
                    return Err(self.abort_with(FirError::Conflict { table, key }));
                } else {
                    (!tomb, false, Some(n))
                }
            }
            None if st.absent_read_ts > self.ts => {
                drop(shard);
                return Err(self.abort_with(FirError::Conflict { table, key }));
            }
            None => (false, false, None),
        };
        let (row, missing) = match op {
            Op::Put(r) => (Some(r), !exists),
            Op::Insert(r) => (Some(r), false),
            Op::Delete => (None, !exists),
        };
        if missing {
            drop(shard);
            return Err(self.abort_with(FirError::NotFound { table, key }));
        }
        if matches!(op, Op::Insert(_)) && exists {
            drop(shard);
            return Err(self.abort_with(FirError::Duplicate { table, key }));
        }
        let durable = inner.planted_bug != crate::db::PlantedBug::LcttBeforeContent;
        let addr = match s.append(t, self.worker.0 as usize, self.ts, key.0, row, durable) {
            Ok(a) => a,
            Err(e) => {
                drop(shard);
                return Err(self.abort_with(e));
            }
        };
        s.init_header(t, addr, |h| {
            h.begin_ts.store(self.ts | PENDING, Relaxed);
            h.end_ts.store(OPEN, Relaxed);
            h.read_ts.store(self.ts, Relaxed);
            h.prev.store(VersionAddr::link(prev), Relaxed);
            h.next.store(0, Relaxed);
            h.tombstone.store(u64::from(row.is_none()), Relaxed);
        });
        if let (Some(p), false) = (prev, own) {
            s.with_header(t, p, |h| h.next.store(VersionAddr::link(Some(addr)), Relaxed));
        }
        st.newest = Some(addr);
        drop(shard);
        inner.count_update(table.0, key.0);
        self.slots.push((t, addr));
        match self.writes.iter_mut().find(|w| w.table == table.0 && w.key == key.0) {
            Some(w) => w.addr = addr,
            None => self.writes.push(PendingWrite { table: table.0, key: key.0, addr }),
        }
        Ok(())
    }

    /// Commits: queues the transaction for group commit. Durable (and its
    /// writes visible) once [`FirDb::wait_committed`] returns for the ticket.
    pub fn commit(mut self) -> Result<FirTicket, FirError> {
        self.check_open()?;
        self.ended = true;
        if self.writes.is_empty() {
            self.db.inner.open[self.worker.0 as usize].lock().remove(&self.ts);
            return Ok(FirTicket { worker: self.worker, txn: 0 });
        }
        let writes = std::mem::take(&mut self.writes);
        let inner = &self.db.inner;
        // Every version this transaction wrote was flushed by this thread
        // (Algorithm 1): one fence makes them all durable before the
        // commit signal, whichever thread writes the LCTT entry.
        inner.storage.region.fence();
        for w in &writes {
            let _g = inner.shard(w.table, w.key).lock();
            inner.storage.with_header(w.table as usize, w.addr, |h| h.begin_ts.fetch_or(COMMITTING, Relaxed));
        }
        inner.commits.push(crate::commit::Queued { worker: self.worker.0, txn: self.ts, writes });
        if !inner.commit_thread {
            inner.commit_queued(false);
        }
        Ok(FirTicket { worker: self.worker, txn: self.ts })
    }

    /// Commits and waits until it is durable.
    pub fn commit_durably(self) -> Result<FirTicket, FirError> {
        let db = self.db;
        let ticket = self.commit()?;
        db.wait_committed(&ticket);
        Ok(ticket)
    }

    /// Rolls the transaction back.
    pub fn abort(mut self) {
        self.rollback();
    }

    fn abort_with(&mut self, e: FirError) -> FirError {
        self.rollback();
        e
    }

    /// Unlinks every own version from its key and turns its slot into a
    /// hole, then fences.
    fn rollback(&mut self) {
        if self.ended {
            return;
        }
        self.ended = true;
        let inner = &self.db.inner;
        inner.open[self.worker.0 as usize].lock().remove(&self.ts);
        let s = &inner.storage;
        for w in self.writes.drain(..) {
            let t = w.table as usize;
            let mut shard = inner.shard(w.table, w.key).lock();
            if let Some(st) = shard.get_mut(&(w.table, w.key), self.ts) {
                if st.newest == Some(w.addr) {
                    let prev = s.with_header(t, w.addr, |h| VersionAddr::unlink(h.prev.load(Relaxed)));
                    if let Some(p) = prev {
                        s.with_header(t, p, |h| h.next.store(0, Relaxed));
                    }
                    st.newest = prev;
                }
            }
        }
        if !self.slots.is_empty() {
            for (t, a) in self.slots.drain(..) {
                s.clear_slot(t, a);
            }
            s.region.fence();
        }
    }

    fn check_open(&self) -> Result<(), FirError> {
        if self.ended {
            Err(FirError::Ended)
        } else {
            Ok(())
        }
    }
}

impl Drop for FirTxn<'_> {
    fn drop(&mut self) {
        self.rollback();
    }
}
