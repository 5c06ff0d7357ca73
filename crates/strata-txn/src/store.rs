//! Rows of every table by primary key (the hash index), each tuple with its
//! 2PL NO_WAIT lock, and the lock table's `readLV`/`writeLV` (taurus.txt
//! 3.2: updated atomically with the lock release under the shard latch).
//!
//! Tuple LV compression (taurus.txt 4.1): only tuples with recent LVs keep
//! an entry, its LVs beside the tuple's lock (one hash lookup per access
//! finds both; up to two logs inline, more boxed, so a tuple without
//! recent LVs holds no vectors). [`Store::evict_lvs`] raises each shard's
//! *floor* to `PLV - δ` and drops every entry at or below it; a tuple
//! without an entry has the floor as both LVs, so a transaction touching
//! it again depends on at most what was already durable (never less than
//! its true LVs: the floor only rises, and an entry goes only once the
//! floor covers it). An entry may go while its tuple is locked (the
//! release puts it back). A deleted or never-written key keeps its tuple,
//! without a row, while it has an entry, so a later insert of the key
//! orders after the delete (3.4); eviction drops such tuples with their
//! entries.

use std::collections::{BTreeMap, BTreeSet};

use parking_lot::{Mutex, RwLock};

use crate::error::TxnError;
use crate::ids::{RowKey, TableId};
use crate::lv::{Lv, MAX_LOGS};

const SHARDS: usize = 64;

/// The shards' maps: keys are ids, not attacker-chosen strings, so a fast
/// non-cryptographic hash (foldhash) instead of SipHash, which took a
/// tenth of a YCSB transaction's time.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

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
    /// Its lock-table entry: LVs above the shard's floor.
    lvs: LvEntry,
}

impl Tuple {
    /// Kept in the map: it has a row, a lock holder or a lock-table entry.
    fn in_use(&self) -> bool {
        self.row.is_some() || self.writer || self.readers > 0 || self.lvs.is_some()
    }
}

/// A tuple's `readLV` and `writeLV`, element j of both side by side
/// (`[readLV[j], writeLV[j]]`), one pair per log: an entry is 16 bytes a
/// log, so up to 4 logs share one cache line.
type LvPairs = [[u64; 2]];

const READ: usize = 0;
const WRITE: usize = 1;

/// `lv = ElemWiseMax(lv, the tuple's readLV or writeLV)`.
fn fold_into(pairs: &LvPairs, which: usize, lv: &mut Lv) {
    for (j, e) in pairs.iter().enumerate() {
        if e[which] > lv.get(j) {
            lv.set(j, e[which]);
        }
    }
}

fn set_write(pairs: &mut LvPairs, lv: &Lv) {
    for (j, e) in pairs.iter_mut().enumerate() {
        e[WRITE] = lv.get(j);
    }
}

fn max_read(pairs: &mut LvPairs, lv: &Lv) {
    for (j, e) in pairs.iter_mut().enumerate() {
        e[READ] = e[READ].max(lv.get(j));
    }
}

/// Both LVs at or below `floor` (taurus.txt 4.1's eviction test).
fn within(pairs: &LvPairs, floor: &LvPairs) -> bool {
    pairs.iter().zip(floor).all(|(e, f)| e[READ] <= f[READ] && e[WRITE] <= f[WRITE])
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
    /// The LVs of a tuple without an entry (`PLV - δ` at the last eviction).
    floor: [[u64; 2]; MAX_LOGS],
    /// The last version handed out.
    versions: u64,
}

impl ShardMap {
    fn next_version(&mut self) -> u64 {
        self.versions += 1;
        self.versions
    }
}

/// Logs whose LV pairs an entry holds inline, in the tuple: 32 bytes, no
/// more than a pointer and its allocation, and no pointer for a lookup to
/// chase (a dependent cache miss per access). More logs: boxed, sized to
/// the log count.
const INLINE_LOGS: usize = 2;

/// A tuple's lock-table entry.
#[derive(Default)]
enum LvEntry {
    /// None: the tuple's LVs are the shard's floor.
    #[default]
    Floor,
    Inline([[u64; 2]; INLINE_LOGS]),
    Boxed(Box<LvPairs>),
}

impl LvEntry {
    fn is_some(&self) -> bool {
        !matches!(self, LvEntry::Floor)
    }

    /// The entry's `n` pairs, if it has them.
    fn pairs(&self, n: usize) -> Option<&LvPairs> {
        match self {
            LvEntry::Floor => None,
            LvEntry::Inline(p) => Some(&p[..n]),
            LvEntry::Boxed(p) => Some(p),
        }
    }
}

/// A tuple's LVs (`n` pairs): its entry, else the floor.
fn lvs_of<'a>(t: &'a Tuple, floor: &'a [[u64; 2]; MAX_LOGS], n: usize) -> &'a LvPairs {
    t.lvs.pairs(n).unwrap_or(&floor[..n])
}

/// A tuple's LVs (`n` pairs) to update: its entry, created at the floor.
fn lvs_mut<'a>(t: &'a mut Tuple, floor: &[[u64; 2]; MAX_LOGS], n: usize) -> &'a mut LvPairs {
    if !t.lvs.is_some() {
        t.lvs = if n <= INLINE_LOGS {
            LvEntry::Inline(std::array::from_fn(|j| floor[j]))
        } else {
            LvEntry::Boxed(Box::from(&floor[..n]))
        };
    }
    match &mut t.lvs {
        LvEntry::Inline(p) => &mut p[..n],
        LvEntry::Boxed(p) => p,
        LvEntry::Floor => unreachable!("the entry was just created"),
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
        let ShardMap { tuples, floor, .. } = &mut *shard;
        let t = tuples.entry((table, key)).or_default();
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
        let row = t.row.as_deref().map(<[u8]>::to_vec);
        if track {
            let lvs = lvs_of(t, floor, self.lv_len);
            if mode.exclusive() || self.fold_write_lv_on_read {
                fold_into(lvs, WRITE, lv);
            }
            if mode == LockMode::Exclusive && self.fold_read_lv_on_write {
                fold_into(lvs, READ, lv);
            }
        }
        Ok(row)
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
        let ShardMap { tuples, floor, .. } = &mut *shard;
        let t = tuples.get_mut(&(table, key)).expect("the caller holds a shared lock");
        assert!(t.readers >= 1 && !t.writer, "upgrade without a shared lock");
        if t.readers > 1 {
            return Err(TxnError::Conflict { table, key });
        }
        t.readers = 0;
        t.writer = true;
        if war && self.fold_read_lv_on_write {
            fold_into(lvs_of(t, floor, self.lv_len), READ, lv);
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
        let ShardMap { tuples, floor, .. } = &mut *shard;
        let t = tuples.get_mut(&(r.table, r.key)).expect("a locked tuple exists");
        if let Some(lv) = lv.filter(|_| self.lv_len > 0) {
            match r.write {
                Some(_) => set_write(lvs_mut(t, floor, self.lv_len), lv),
                None => max_read(lvs_mut(t, floor, self.lv_len), lv),
            }
        }
        if let (Some(_), Some(row)) = (lv, r.write) {
            if t.row.is_some() != row.is_some() {
                self.index_set(r.table, r.key, row.is_some());
            }
            t.row = row.map(Box::from);
            t.version = version;
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
        // A tuple without a row (a missing key read, an insert aborted, a
        // row deleted) goes once unlocked, unless it keeps LVs (until evicted).
        if !t.in_use() {
            tuples.remove(&(r.table, r.key));
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
        let t = shard.tuples.get(&(table, key));
        if track && self.fold_write_lv_on_read {
            let lvs = t.and_then(|t| t.lvs.pairs(self.lv_len)).unwrap_or(&shard.floor[..self.lv_len]);
            fold_into(lvs, WRITE, lv);
        }
        match t {
            Some(t) => (t.row.as_deref().map(<[u8]>::to_vec), t.version),
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
        let ShardMap { tuples, floor, .. } = &mut *shard;
        let t = tuples.entry((table, key)).or_default();
        let lvs = lvs_mut(t, floor, 1);
        if lvs[0][WRITE] < tid {
            lvs[0][WRITE] = tid;
            if t.row.is_some() != row.is_some() {
                self.index_set(table, key, row.is_some());
            }
            t.row = row.map(Box::from);
            t.version = version;
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
                if let Some(t) = shard.tuples.get_mut(&(table, key)) {
                    t.row = None;
                    if !t.in_use() {
                        shard.tuples.remove(&(table, key));
                    }
                }
                self.index_set(table, key, false);
            }
        }
    }

    /// Tuple LV compression (taurus.txt 4.1): raises every shard's floor
    /// to `below` (`PLV - δ`; never lowers it) and evicts each lock-table
    /// entry whose `readLV` and `writeLV` are both at or below it.
    /// Returns the entries left. Not for Silo-R, whose one element is a
    /// TID and no LSN.
    pub(crate) fn evict_lvs(&self, below: &Lv) -> usize {
        let n = self.lv_len;
        let mut left = 0;
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            for (j, f) in shard.floor[..n].iter_mut().enumerate() {
                let to = f[READ].max(below.get(j));
                *f = [to, to];
            }
            let floor = shard.floor;
            shard.tuples.retain(|_, t| {
                if t.lvs.pairs(n).is_some_and(|lvs| within(lvs, &floor[..n])) {
                    t.lvs = LvEntry::Floor;
                }
                left += usize::from(t.lvs.is_some());
                t.in_use()
            });
        }
        left
    }

    /// Entries in the lock table (tuples with LVs above the floor).
    pub(crate) fn lv_entries(&self) -> usize {
        self.shards.iter().map(|s| s.lock().tuples.values().filter(|t| t.lvs.is_some()).count()).sum()
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

#[cfg(test)]
mod eviction_tests {
    use super::*;

    fn commit_write(s: &Store, key: u64, lv: &[u64]) {
        let (t, k) = (TableId(0), RowKey(key));
        let mut seen = Lv::ZERO;
        s.lock(t, k, LockMode::Exclusive, &mut seen, true).unwrap();
        let lv = Lv::from_slice(lv);
        s.release(
            &Release { table: t, key: k, mode: LockMode::Exclusive, write: Some(Some(&[1])) },
            Some(&lv),
        );
    }

    fn read_lv(s: &Store, key: u64) -> Lv {
        let (t, k) = (TableId(0), RowKey(key));
        let mut lv = Lv::ZERO;
        s.lock(t, k, LockMode::Exclusive, &mut lv, true).unwrap();
        s.release(&Release { table: t, key: k, mode: LockMode::Exclusive, write: None }, None);
        lv
    }

    #[test]
    fn eviction_drops_lvs_below_the_floor_and_evicted_tuples_read_as_the_floor() {
        let s = Store::new(2);
        commit_write(&s, 1, &[10, 20]);
        commit_write(&s, 2, &[100, 5]);
        commit_write(&s, 3, &[300, 300]);
        assert_eq!(s.lv_entries(), 3);
        // Floor (150, 50): tuples 1 and 2 are at or under it in every
        // element, tuple 3 is not.
        assert_eq!(s.evict_lvs(&Lv::from_slice(&[150, 50])), 1, "only tuple 3 stays");
        assert_eq!(read_lv(&s, 1), Lv::from_slice(&[150, 50]), "an evicted tuple has the floor");
        assert_eq!(read_lv(&s, 2), Lv::from_slice(&[150, 50]));
        assert_eq!(read_lv(&s, 3), Lv::from_slice(&[300, 300]), "a recent tuple keeps its LVs");
        // The floor never falls.
        assert_eq!(s.evict_lvs(&Lv::from_slice(&[0, 0])), 1);
        assert_eq!(read_lv(&s, 9), Lv::from_slice(&[150, 50]), "a new key starts at the floor");
        // An entry created after an eviction starts at the floor and
        // takes the write's LV.
        commit_write(&s, 1, &[160, 40]);
        assert_eq!(read_lv(&s, 1), Lv::from_slice(&[160, 50]), "readLV stays at the floor");
        assert_eq!(s.lv_entries(), 2);
    }

    #[test]
    fn entries_beyond_the_inline_log_count_are_boxed_and_evict_alike() {
        let s = Store::new(4);
        commit_write(&s, 1, &[10, 20, 30, 40]);
        commit_write(&s, 2, &[100, 100, 100, 100]);
        for (key, boxed) in [(1, true), (2, true)] {
            let shard = s.shard(TableId(0), RowKey(key)).lock();
            let t = &shard.tuples[&(TableId(0), RowKey(key))];
            assert_eq!(matches!(t.lvs, LvEntry::Boxed(_)), boxed, "4 logs: a boxed entry");
            assert_eq!(t.lvs.pairs(4).map(<[_]>::len), Some(4), "sized to the log count");
        }
        assert_eq!(read_lv(&s, 1), Lv::from_slice(&[10, 20, 30, 40]));
        assert_eq!(s.evict_lvs(&Lv::from_slice(&[50, 50, 50, 50])), 1, "tuple 2 is above the floor");
        assert_eq!(read_lv(&s, 1), Lv::from_slice(&[50, 50, 50, 50]), "evicted: the floor");
        assert_eq!(read_lv(&s, 2), Lv::from_slice(&[100, 100, 100, 100]));
        let small = Store::new(2);
        commit_write(&small, 1, &[7, 8]);
        let shard = small.shard(TableId(0), RowKey(1)).lock();
        assert!(matches!(shard.tuples[&(TableId(0), RowKey(1))].lvs, LvEntry::Inline(_)), "2 logs: inline");
    }

    #[test]
    fn a_deleted_key_keeps_its_lvs_until_evicted_so_an_insert_orders_after_the_delete() {
        let s = Store::new(1);
        let (t, k) = (TableId(0), RowKey(7));
        commit_write(&s, 7, &[40]);
        let mut lv = Lv::ZERO;
        s.lock(t, k, LockMode::Exclusive, &mut lv, true).unwrap();
        s.release(
            &Release { table: t, key: k, mode: LockMode::Exclusive, write: Some(None) },
            Some(&Lv::from_slice(&[90])),
        );
        assert!(s.rows(t).is_empty(), "the row is gone");
        assert_eq!(read_lv(&s, 7), Lv::from_slice(&[90]), "the delete's LV is still there");
        s.evict_lvs(&Lv::from_slice(&[95]));
        assert_eq!(read_lv(&s, 7), Lv::from_slice(&[95]), "evicted: the floor, still after the delete");
        assert_eq!(s.lv_entries(), 0);
    }
}
