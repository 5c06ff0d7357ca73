//! Rows of every table by primary key (the hash index), each tuple with its
//! 2PL NO_WAIT lock and its `readLV`/`writeLV` (taurus.txt 3.2: kept in the
//! lock table, updated atomically with the lock release under the shard
//! latch). A deleted or never-written key keeps its tuple while locked or
//! while its LVs carry dependencies, so a later insert of the key orders
//! after the delete (3.4).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use parking_lot::{Mutex, RwLock};

use crate::error::TxnError;
use crate::ids::{RowKey, TableId};
use crate::lv::{Lv, MAX_LOGS};

const SHARDS: usize = 64;

/// A lock a transaction holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LockMode {
    Shared,
    Exclusive,
    /// Exclusive, without folding the tuple's `readLV` into `T.LV` (data
    /// logging needs no WAR dependencies).
    ExclusiveNoWar,
}

impl LockMode {
    fn exclusive(self) -> bool {
        self != LockMode::Shared
    }
}

#[derive(Default)]
struct Tuple {
    row: Option<Box<[u8]>>,
    readers: u32,
    writer: bool,
    /// Changes with every write (OCC validates against it): drawn from
    /// the shard's counter, so a key deleted, dropped and inserted again
    /// never shows a version a reader saw before. 0: never written.
    version: u64,
    lvs: TupleLvs,
}

/// A tuple's `readLV` and `writeLV`, element j of both side by side: the
/// used elements (one per log) sit next to the lock, on its cache line for
/// up to 3 logs, instead of two 128-byte vectors spread over five lines.
#[derive(Copy, Clone, Default)]
struct TupleLvs {
    /// `[readLV[j], writeLV[j]]`.
    elems: [[u64; 2]; MAX_LOGS],
}

const READ: usize = 0;
const WRITE: usize = 1;

impl TupleLvs {
    /// `lv = ElemWiseMax(lv, this tuple's readLV or writeLV)` over `n` logs.
    fn fold_into(&self, which: usize, lv: &mut Lv, n: usize) {
        for (j, e) in self.elems[..n].iter().enumerate() {
            if e[which] > lv.get(j) {
                lv.set(j, e[which]);
            }
        }
    }

    fn set_write(&mut self, lv: &Lv, n: usize) {
        for (j, e) in self.elems[..n].iter_mut().enumerate() {
            e[WRITE] = lv.get(j);
        }
    }

    fn max_read(&mut self, lv: &Lv, n: usize) {
        for (j, e) in self.elems[..n].iter_mut().enumerate() {
            e[READ] = e[READ].max(lv.get(j));
        }
    }

    fn is_zero(&self, n: usize) -> bool {
        self.elems[..n].iter().all(|e| *e == [0, 0])
    }
}

/// What a committing transaction does to one tuple it locked.
pub(crate) struct Release<'a> {
    pub table: TableId,
    pub key: RowKey,
    pub mode: LockMode,
    /// `Some(new row or None for a delete)` if it wrote the tuple.
    pub write: Option<Option<&'a [u8]>>,
}

/// One latch's tuples.
type Shard = Mutex<ShardMap>;

#[derive(Default)]
struct ShardMap {
    tuples: HashMap<(TableId, RowKey), Tuple>,
    /// The last version handed out.
    versions: u64,
}

impl ShardMap {
    fn next_version(&mut self) -> u64 {
        self.versions += 1;
        self.versions
    }
}

pub struct Store {
    shards: Box<[Shard]>,
    /// The ordered index of every table: the keys with a committed row
    /// (taurus.txt 3.4: an insert enters it as its commit releases the
    /// row's lock, a delete leaves it then). Updated under the row's latch
    /// (lock order: latch, then index); scans read it alone.
    index: RwLock<BTreeSet<(TableId, RowKey)>>,
    /// False only with the planted bug `ReadSkipsWriteLv`.
    pub(crate) fold_write_lv_on_read: bool,
    /// False only with the planted bug `WriteSkipsReadLv`.
    pub(crate) fold_read_lv_on_write: bool,
    /// Elements of the LVs in use: the number of logs.
    pub(crate) lv_len: usize,
}

impl Default for Store {
    fn default() -> Self {
        Store::new(MAX_LOGS)
    }
}

impl Store {
    /// A store whose LVs have `lv_len` elements (one per log).
    pub(crate) fn new(lv_len: usize) -> Self {
        assert!(lv_len <= MAX_LOGS, "an LV has at most {MAX_LOGS} elements");
        Store {
            shards: (0..SHARDS).map(|_| Mutex::new(ShardMap::default())).collect(),
            index: RwLock::new(BTreeSet::new()),
            fold_write_lv_on_read: true,
            fold_read_lv_on_write: true,
            lv_len,
        }
    }
}

impl Store {
    fn shard(&self, table: TableId, key: RowKey) -> &Shard {
        let h = key.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(table.0);
        &self.shards[(h >> 58) as usize % SHARDS]
    }

    /// `Lock` of Algorithm 1: takes the lock (NO_WAIT: a conflict is an
    /// error), folds the tuple's `writeLV` (and for a write its `readLV`)
    /// into `lv` when `track`, and returns the row.
    pub(crate) fn lock(
        &self,
        table: TableId,
        key: RowKey,
        mode: LockMode,
        lv: &mut Lv,
        track: bool,
    ) -> Result<Option<Vec<u8>>, TxnError> {
        let mut shard = self.shard(table, key).lock();
        let t = shard.tuples.entry((table, key)).or_default();
        let granted = match mode {
            LockMode::Shared if !t.writer => {
                t.readers += 1;
                true
            }
            LockMode::Exclusive | LockMode::ExclusiveNoWar if !t.writer && t.readers == 0 => {
                t.writer = true;
                true
            }
            _ => false,
        };
        if !granted {
            return Err(TxnError::Conflict { table, key });
        }
        if track {
            if mode.exclusive() || self.fold_write_lv_on_read {
                t.lvs.fold_into(WRITE, lv, self.lv_len);
            }
            if mode == LockMode::Exclusive && self.fold_read_lv_on_write {
                t.lvs.fold_into(READ, lv, self.lv_len);
            }
        }
        Ok(t.row.as_deref().map(<[u8]>::to_vec))
    }

    /// Upgrades the caller's shared lock to exclusive (NO_WAIT: fails if
    /// another reader holds it too); `war`: fold the tuple's `readLV` in.
    pub(crate) fn upgrade(
        &self,
        table: TableId,
        key: RowKey,
        lv: &mut Lv,
        war: bool,
    ) -> Result<(), TxnError> {
        let mut shard = self.shard(table, key).lock();
        let t = shard.tuples.get_mut(&(table, key)).expect("the caller holds a shared lock");
        assert!(t.readers >= 1 && !t.writer, "upgrade without a shared lock");
        if t.readers > 1 {
            return Err(TxnError::Conflict { table, key });
        }
        t.readers = 0;
        t.writer = true;
        if war && self.fold_read_lv_on_write {
            t.lvs.fold_into(READ, lv, self.lv_len);
        }
        Ok(())
    }

    /// The row of a tuple the caller holds locked.
    pub(crate) fn row_locked(&self, table: TableId, key: RowKey) -> Option<Vec<u8>> {
        let shard = self.shard(table, key).lock();
        shard.tuples.get(&(table, key)).and_then(|t| t.row.as_deref().map(<[u8]>::to_vec))
    }

    /// Commit (Algorithm 1, lines 13-19) or abort (`lv` None: no LV
    /// updates, no writes) of one tuple: install the write, update the
    /// LVs, release the lock, all under the latch.
    pub(crate) fn release(&self, r: &Release<'_>, lv: Option<&Lv>) {
        let mut shard = self.shard(r.table, r.key).lock();
        let version = if lv.is_some() && r.write.is_some() { shard.next_version() } else { 0 };
        let t = shard.tuples.get_mut(&(r.table, r.key)).expect("a locked tuple exists");
        if let Some(lv) = lv {
            match r.write {
                Some(row) => {
                    if t.row.is_some() != row.is_some() {
                        self.index_set(r.table, r.key, row.is_some());
                    }
                    t.row = row.map(Box::from);
                    t.version = version;
                    t.lvs.set_write(lv, self.lv_len);
                }
                None => t.lvs.max_read(lv, self.lv_len),
            }
        }
        match r.mode {
            LockMode::Shared => {
                assert!(t.readers > 0, "releasing a shared lock nobody holds");
                t.readers -= 1;
            }
            LockMode::Exclusive | LockMode::ExclusiveNoWar => {
                assert!(t.writer, "releasing an exclusive lock nobody holds");
                t.writer = false;
            }
        }
        // An untouched placeholder (a read or an aborted insert of a missing key) goes.
        if t.row.is_none() && !t.writer && t.readers == 0 && t.lvs.is_zero(self.lv_len) {
            shard.tuples.remove(&(r.table, r.key));
        }
    }

    /// OCC's `Access` (taurus.txt Algorithm 6, lines 1-4): the row and its
    /// version read atomically under the latch, without a lock; folds the
    /// tuple's `writeLV` into `lv` when `track`. `(None, 0)` for a key
    /// never written.
    pub(crate) fn access(
        &self,
        table: TableId,
        key: RowKey,
        lv: &mut Lv,
        track: bool,
    ) -> (Option<Vec<u8>>, u64) {
        let shard = self.shard(table, key).lock();
        match shard.tuples.get(&(table, key)) {
            Some(t) => {
                if track && self.fold_write_lv_on_read {
                    t.lvs.fold_into(WRITE, lv, self.lv_len);
                }
                (t.row.as_deref().map(<[u8]>::to_vec), t.version)
            }
            None => (None, 0),
        }
    }

    /// OCC validation of one read: the tuple still has the version the
    /// transaction read, and no other transaction holds its write lock
    /// (`own_lock`: the caller holds it itself).
    pub(crate) fn still_valid(&self, table: TableId, key: RowKey, seen_version: u64, own_lock: bool) -> bool {
        let shard = self.shard(table, key).lock();
        match shard.tuples.get(&(table, key)) {
            Some(t) => t.version == seen_version && (own_lock || !t.writer),
            None => seen_version == 0,
        }
    }

    /// Silo-R recovery: installs the write of TID `tid` unless the row
    /// holds a later one (`writeLV[0]` is its writer's TID); a delete
    /// leaves a tombstone with its TID, so an older image cannot return.
    pub(crate) fn install_if_newer(&self, table: TableId, key: RowKey, tid: u64, row: Option<&[u8]>) {
        assert_eq!(self.lv_len, 1, "Silo-R tuples carry one LV element, the TID");
        let mut shard = self.shard(table, key).lock();
        let version = shard.next_version();
        let t = shard.tuples.entry((table, key)).or_default();
        if t.lvs.elems[0][WRITE] < tid {
            if t.row.is_some() != row.is_some() {
                self.index_set(table, key, row.is_some());
            }
            t.row = row.map(Box::from);
            t.version = version;
            t.lvs.elems[0][WRITE] = tid;
        }
    }

    /// Recovery: installs a row (or deletes it) without locks.
    pub(crate) fn install(&self, table: TableId, key: RowKey, row: Option<&[u8]>) {
        let mut shard = self.shard(table, key).lock();
        match row {
            Some(r) => {
                let version = shard.next_version();
                let t = shard.tuples.entry((table, key)).or_default();
                t.row = Some(Box::from(r));
                t.version = version;
                self.index_set(table, key, true);
            }
            None => {
                shard.tuples.remove(&(table, key));
                self.index_set(table, key, false);
            }
        }
    }

    fn index_set(&self, table: TableId, key: RowKey, present: bool) {
        let mut index = self.index.write();
        if present {
            index.insert((table, key));
        } else {
            index.remove(&(table, key));
        }
    }

    /// The keys of `table` in `from..=to` with a committed row, in order
    /// (at most `limit`).
    pub(crate) fn index_range(&self, table: TableId, from: RowKey, to: RowKey, limit: usize) -> Vec<RowKey> {
        if from > to {
            return Vec::new();
        }
        self.index.read().range((table, from)..=(table, to)).take(limit).map(|(_, k)| *k).collect()
    }

    /// Every row of `table`, by key (a consistent copy only when no
    /// transaction runs).
    pub fn rows(&self, table: TableId) -> BTreeMap<RowKey, Vec<u8>> {
        let mut out = BTreeMap::new();
        for shard in self.shards.iter() {
            for ((t, k), tuple) in shard.lock().tuples.iter() {
                if *t == table {
                    if let Some(r) = &tuple.row {
                        out.insert(*k, r.to_vec());
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_wait_refuses_conflicting_locks_and_lvs_flow_through_the_tuple() {
        let s = Store::default();
        let (t, k) = (TableId(0), RowKey(1));
        let mut lv1 = Lv::ZERO;
        assert_eq!(s.lock(t, k, LockMode::Exclusive, &mut lv1, true).unwrap(), None);
        let mut lv2 = Lv::ZERO;
        assert!(matches!(s.lock(t, k, LockMode::Shared, &mut lv2, true), Err(TxnError::Conflict { .. })));
        lv1.set(0, 16);
        s.release(
            &Release { table: t, key: k, mode: LockMode::Exclusive, write: Some(Some(&[7])) },
            Some(&lv1),
        );
        assert_eq!(s.lock(t, k, LockMode::Shared, &mut lv2, true).unwrap(), Some(vec![7]));
        assert_eq!(lv2, lv1, "a reader picks up the writer's LV");
        let mut lv3 = Lv::from_slice(&[0, 21]);
        assert_eq!(s.lock(t, k, LockMode::Shared, &mut lv3, true).unwrap(), Some(vec![7]));
        let mut lv4 = Lv::ZERO;
        assert!(s.upgrade(t, k, &mut lv4, true).is_err(), "two readers: no upgrade");
        s.release(&Release { table: t, key: k, mode: LockMode::Shared, write: None }, Some(&lv3));
        s.release(&Release { table: t, key: k, mode: LockMode::Shared, write: None }, Some(&lv2));
        let mut lv5 = Lv::ZERO;
        s.lock(t, k, LockMode::Exclusive, &mut lv5, true).unwrap();
        assert_eq!(lv5, Lv::from_slice(&[16, 21]), "a writer picks up the readers' LVs");
    }
}
