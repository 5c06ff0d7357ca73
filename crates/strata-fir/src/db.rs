//! [`FirDb`]: FIR's transactional tables (fir.txt section 4) on one PMem
//! region, and recovery (4.4.1).
//!
//! Open creates or recovers. Recovery reads each worker's LCTT entry, walks
//! every region's chain and keeps each slot whose txnId is at most its
//! region's entry (redo), turning the others into holes (undo); the index
//! is rebuilt from the kept versions, each key's newest one. Without an
//! index checkpoint (4.3, not built yet) every block is a "tail", so this
//! recovery scans all versions (O(n), like Zen's); with checkpoints it
//! will scan only the versions after the last one (O(m)).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use strata_pmem::halloc::Halloc;
use strata_pmem::{Region, RegionOffset};
use strata_txn::{RowKey, TableId, TableSchema, WorkerId};

use crate::addr::VersionAddr;
use crate::commit::{GroupCommit, Queued};
use crate::error::FirError;
use crate::index::btree::BTree;
use crate::layout::{Layout, MAGIC, MEDIA_BLOCK_BYTES, VERSION};
use crate::storage::Storage;
use crate::tile::OPEN;
use crate::txn::FirTxn;

/// Index shards (latches).
const SHARDS: usize = 64;
/// Most tables a superblock describes.
pub const MAX_TABLES: usize = 48;

type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// One latch's keys: (table, key) to its state, in a B+-tree whose nodes
/// carry the access stamps incremental checkpoints skip by.
pub(crate) type IndexShard = Mutex<BTree<(u32, u64), KeyState>>;

/// The index shard of a key.
fn shard_of(table: u32, key: u64) -> usize {
    let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(table);
    (h >> 58) as usize % SHARDS
}

/// How to create a database.
#[derive(Clone, Debug)]
pub struct FirOptions {
    /// Workers, and regions per table (one each).
    pub workers: u32,
    /// Blocks of 2,048 versions each table may use.
    pub blocks_per_table: u64,
}

/// A key's entry in the index: its newest version, and the largest txnId
/// that found it absent (so an insert below that txnId is refused, MVTO).
#[derive(Default)]
pub(crate) struct KeyState {
    pub newest: Option<VersionAddr>,
    pub absent_read_ts: u64,
}

/// A write waiting for its transaction's batch.
#[derive(Copy, Clone, Debug)]
pub(crate) struct PendingWrite {
    pub table: u32,
    pub key: u64,
    pub addr: VersionAddr,
}

/// What [`FirDb::open`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FirRecoveryReport {
    /// Slots holding a version (kept or discarded).
    pub versions_scanned: u64,
    /// Versions of committed transactions (redo).
    pub versions_kept: u64,
    /// Versions of transactions that had not committed (undo: now holes).
    pub versions_discarded: u64,
    /// Keys in the rebuilt index (deleted ones included).
    pub keys: u64,
    pub elapsed: Duration,
}

/// What a committed transaction waits on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FirTicket {
    pub worker: WorkerId,
    /// Its txnId; 0 for a read-only transaction (nothing to wait for).
    pub txn: u64,
}

pub(crate) struct Inner {
    pub storage: Storage,
    pub shards: Box<[IndexShard]>,
    pub next_ts: AtomicU64,
    pub commits: GroupCommit,
}

/// FIR's tables: no log; versions persisted in place, commits by LCTT.
pub struct FirDb {
    pub(crate) inner: Arc<Inner>,
    thread: Option<JoinHandle<()>>,
}

impl Inner {
    pub fn shard(&self, table: u32, key: u64) -> &IndexShard {
        &self.shards[shard_of(table, key)]
    }

    /// One batch of group commit: LCTT entries, one fence, then visibility.
    fn commit_batch(&self, batch: Vec<Queued>) {
        let s = &self.storage;
        let mut newest: BTreeMap<u32, u64> = BTreeMap::new();
        for q in &batch {
            let e = newest.entry(q.worker).or_default();
            *e = (*e).max(q.txn);
        }
        for (&w, &txn) in &newest {
            let at = s.layout.lctt(w);
            s.region.store_u64(at, txn);
            s.region.flush(at, 8);
        }
        s.region.fence();
        for q in &batch {
            for w in &q.writes {
                let _g = self.shard(w.table, w.key).lock();
                let t = w.table as usize;
                let prev = s.with_header(t, w.addr, |h| {
                    h.begin_ts.store(q.txn, Relaxed);
                    VersionAddr::unlink(h.prev.load(Relaxed))
                });
                if let Some(p) = prev {
                    s.with_header(t, p, |h| h.end_ts.store(q.txn, Relaxed));
                    s.mark_obsolete(t, p);
                }
            }
        }
        for (w, txn) in newest {
            self.commits.publish(w, txn);
        }
        self.commits.wake();
    }
}

impl FirDb {
    /// Formats `region` for `schemas` and opens it empty.
    pub fn create(
        region: Arc<Region>,
        schemas: &[TableSchema],
        options: &FirOptions,
    ) -> Result<FirDb, FirError> {
        if schemas.is_empty() || schemas.len() > MAX_TABLES {
            return Err(FirError::Schema(format!("{} tables (1 to {MAX_TABLES})", schemas.len())));
        }
        if options.workers == 0 || options.workers > u32::from(u16::MAX) {
            return Err(FirError::Schema(format!("{} workers", options.workers)));
        }
        let layout = Layout { workers: options.workers, tables: schemas.len() as u32 };
        region.store_u64_persist(RegionOffset(0), 0);
        for w in 0..layout.workers {
            region.store_u64(layout.lctt(w), 0);
        }
        for t in 0..layout.tables {
            for r in 0..layout.workers {
                region.store_u64(layout.last_block(t, r), 0);
            }
        }
        let base = layout.halloc_base();
        region.persist(RegionOffset(MEDIA_BLOCK_BYTES), base.0 - MEDIA_BLOCK_BYTES);
        let config = Storage::halloc_config(schemas, options.blocks_per_table);
        let halloc_len = Halloc::required_len_bytes(&config);
        let halloc = Halloc::format(&region, base, halloc_len, &config)?;
        let mut sb = vec![0u8; MEDIA_BLOCK_BYTES as usize];
        sb[8..12].copy_from_slice(&VERSION.to_le_bytes());
        sb[12..16].copy_from_slice(&layout.workers.to_le_bytes());
        sb[16..20].copy_from_slice(&layout.tables.to_le_bytes());
        for (i, s) in schemas.iter().enumerate() {
            sb[24 + 4 * i..28 + 4 * i].copy_from_slice(&(s.row_bytes as u32).to_le_bytes());
        }
        region.write_persist(RegionOffset(8), &sb[8..]);
        region.store_u64_persist(RegionOffset(0), MAGIC);
        let storage = Storage::new(region, halloc, layout, schemas);
        Ok(FirDb::start(storage, &vec![0; options.workers as usize], 1))
    }

    /// Opens a region [`FirDb::create`] formatted, recovering what a crash left.
    pub fn open(
        region: Arc<Region>,
        schemas: &[TableSchema],
    ) -> Result<(FirDb, FirRecoveryReport), FirError> {
        let started = Instant::now();
        if region.len() < MEDIA_BLOCK_BYTES {
            return Err(FirError::Format(format!("a region of {} bytes", region.len())));
        }
        let sb = region.read_vec(RegionOffset(0), MEDIA_BLOCK_BYTES as usize);
        let u32_at = |i: usize| u32::from_le_bytes(sb[i..i + 4].try_into().expect("4 bytes"));
        if u64::from_le_bytes(sb[..8].try_into().expect("8 bytes")) != MAGIC {
            return Err(FirError::Format("no FIR superblock (magic)".into()));
        }
        if u32_at(8) != VERSION {
            return Err(FirError::Format(format!("superblock version {}", u32_at(8))));
        }
        let layout = Layout { workers: u32_at(12), tables: u32_at(16) };
        if layout.workers == 0 || layout.workers > u32::from(u16::MAX) || layout.tables as usize > MAX_TABLES
        {
            return Err(FirError::Format(format!("{} workers, {} tables", layout.workers, layout.tables)));
        }
        if layout.halloc_base().0 >= region.len() {
            return Err(FirError::Format(format!("a region of {} bytes for {layout:?}", region.len())));
        }
        if layout.tables as usize != schemas.len()
            || schemas.iter().enumerate().any(|(i, s)| u32_at(24 + 4 * i) as usize != s.row_bytes)
        {
            return Err(FirError::Schema(format!("created with {} tables", layout.tables)));
        }
        let (halloc, _) = Halloc::open(&region, layout.halloc_base())?;
        let lctt: Vec<u64> = (0..layout.workers).map(|w| region.load_u64(layout.lctt(w))).collect();
        let storage = Storage::new(region, halloc, layout, schemas);
        let mut report = FirRecoveryReport::default();
        let mut max_txn = lctt.iter().copied().max().unwrap_or(0);
        let mut newest: Map<(u32, u64), (VersionAddr, bool, u64)> = Map::default();
        for t in 0..layout.tables as usize {
            for (r, &committed) in lctt.iter().enumerate() {
                let (slots, max_floor) = storage.recover_chain(t, r)?;
                max_txn = max_txn.max(max_floor);
                for (addr, slot) in slots {
                    report.versions_scanned += 1;
                    max_txn = max_txn.max(slot.txn);
                    if slot.txn <= committed {
                        report.versions_kept += 1;
                        let e =
                            newest.entry((t as u32, slot.key)).or_insert((addr, slot.tombstone, slot.txn));
                        if slot.txn >= e.2 {
                            *e = (addr, slot.tombstone, slot.txn);
                        }
                    } else {
                        report.versions_discarded += 1;
                        storage.clear_slot(t, addr);
                    }
                }
            }
        }
        storage.region.fence();
        let db = FirDb::start(storage, &lctt, max_txn + 1);
        report.keys = newest.len() as u64;
        // Each shard's tree built bottom-up from its sorted keys (4.4.2),
        // stamped after every txnId so far: changed since any checkpoint.
        let mut per_shard: Vec<Vec<((u32, u64), KeyState)>> = (0..SHARDS).map(|_| Vec::new()).collect();
        for ((table, key), (addr, tombstone, txn)) in newest {
            db.inner.storage.with_header(table as usize, addr, |h| {
                h.begin_ts.store(txn, Relaxed);
                h.end_ts.store(OPEN, Relaxed);
                h.read_ts.store(txn, Relaxed);
                h.tombstone.store(u64::from(tombstone), Relaxed);
            });
            per_shard[shard_of(table, key)]
                .push(((table, key), KeyState { newest: Some(addr), absent_read_ts: 0 }));
        }
        for (shard, mut entries) in db.inner.shards.iter().zip(per_shard) {
            entries.sort_unstable_by_key(|(k, _)| *k);
            *shard.lock() = BTree::from_sorted(entries, max_txn + 1);
        }
        report.elapsed = started.elapsed();
        Ok((db, report))
    }

    fn start(storage: Storage, lctt: &[u64], next_ts: u64) -> FirDb {
        let inner = Arc::new(Inner {
            commits: GroupCommit::new(storage.layout.workers, lctt),
            storage,
            shards: (0..SHARDS).map(|_| Mutex::new(BTree::default())).collect(),
            next_ts: AtomicU64::new(next_ts),
        });
        let i = inner.clone();
        let thread = std::thread::Builder::new()
            .name("fir-group-commit".into())
            .spawn(move || loop {
                let batch = i.commits.take();
                if batch.is_empty() {
                    if i.commits.stop.load(Acquire) && i.commits.queue.lock().is_empty() {
                        return;
                    }
                    continue;
                }
                i.commit_batch(batch);
            })
            .expect("spawning the group-commit thread");
        FirDb { inner, thread: Some(thread) }
    }

    /// Starts a transaction on `worker` (its region is where its versions go).
    pub fn begin(&self, worker: WorkerId) -> Result<FirTxn<'_>, FirError> {
        let workers = self.inner.storage.layout.workers;
        if worker.0 >= workers {
            return Err(FirError::NoSuchWorker { worker: worker.0, workers });
        }
        Ok(FirTxn::new(self, worker, self.inner.next_ts.fetch_add(1, AcqRel)))
    }

    pub fn is_committed(&self, ticket: &FirTicket) -> bool {
        ticket.txn == 0 || self.inner.commits.is_durable(ticket.worker.0, ticket.txn)
    }

    /// Blocks until the ticket's transaction is durable (and visible).
    pub fn wait_committed(&self, ticket: &FirTicket) {
        if ticket.txn != 0 {
            self.inner.commits.wait(ticket.worker.0, ticket.txn);
        }
    }

    /// Every committed row of `table` by key (a consistent copy only when
    /// no transaction runs).
    pub fn rows(&self, table: TableId) -> Result<BTreeMap<RowKey, Vec<u8>>, FirError> {
        let t = self.table(table)?;
        let mut out = BTreeMap::new();
        for shard in self.inner.shards.iter() {
            for ((tk, key), st) in shard.lock().iter() {
                if *tk != table.0 {
                    continue;
                }
                let mut v = st.newest;
                while let Some(a) = v {
                    let (begin, tomb, prev) = self.inner.storage.with_header(t, a, |h| {
                        (h.begin(), h.tombstone.load(Relaxed) != 0, VersionAddr::unlink(h.prev.load(Relaxed)))
                    });
                    if begin & crate::tile::PENDING == 0 {
                        if !tomb {
                            out.insert(RowKey(*key), self.inner.storage.read_row(t, a));
                        }
                        break;
                    }
                    v = prev;
                }
            }
        }
        Ok(out)
    }

    pub(crate) fn table(&self, table: TableId) -> Result<usize, FirError> {
        let t = table.0 as usize;
        if t < self.inner.storage.row_bytes.len() {
            Ok(t)
        } else {
            Err(FirError::NoSuchTable(table))
        }
    }

    pub(crate) fn check_row(&self, table: TableId, row: &[u8]) -> Result<usize, FirError> {
        let t = self.table(table)?;
        let want = self.inner.storage.row_bytes[t];
        if row.len() != want {
            return Err(FirError::RowSize { table, got: row.len(), want });
        }
        Ok(t)
    }

    /// The region (for crash tests and tools).
    pub fn region(&self) -> &Arc<Region> {
        &self.inner.storage.region
    }
}

impl Drop for FirDb {
    fn drop(&mut self) {
        self.inner.commits.stop.store(true, Release);
        self.inner.commits.queued.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
