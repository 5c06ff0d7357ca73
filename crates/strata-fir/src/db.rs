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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use strata_pmem::halloc::Halloc;
use strata_pmem::{Region, RegionOffset};
use strata_txn::{RowKey, TableId, TableSchema, WorkerId};

use crate::addr::VersionAddr;
use crate::checkpoint::{read_active, CheckpointKind, CheckpointReport, Entry, LastCheckpoint};
use crate::commit::{GroupCommit, Queued};
use crate::error::FirError;
use crate::index::shard::ShardIndex;
use crate::layout::{Layout, CHECKPOINT_ENTRY_BYTES, MAGIC, MEDIA_BLOCK_BYTES, SHARDS, VERSION};
use crate::storage::Storage;
use crate::txn::FirTxn;

/// Most tables a superblock describes.
pub const MAX_TABLES: usize = 48;

type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// One latch's keys: (table, key) to its state, in a B+-tree whose nodes
/// carry the access stamps incremental checkpoints skip by.
pub(crate) type IndexShard = Mutex<ShardIndex<KeyState>>;

/// The index shard of a key.
fn shard_of(table: u32, key: u64) -> usize {
    let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(table);
    (h >> 58) as usize % SHARDS
}

/// The checkpoint thread's niceness, as `thread-priority` maps it (about
/// nice 9): a background job. fir.txt runs it beside 30-40 workers on a
/// machine with cores to spare; where every core runs a worker (2 cores,
/// 2 workers here) it takes a small share of theirs (about a tenth of a
/// worker's) plus their idle time, and a checkpoint takes longer instead.
const CHECKPOINT_THREAD_PRIORITY: u8 = 25;

/// Lowers the calling thread's priority to [`CHECKPOINT_THREAD_PRIORITY`].
/// Lowering needs no privilege; if it fails anyway, the thread runs at
/// the normal priority (slower transactions, never a wrong checkpoint).
fn lower_priority() {
    use thread_priority::unix::{
        set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy, ThreadSchedulePolicy,
    };
    use thread_priority::{ThreadPriority, ThreadPriorityValue};
    if let Ok(p) = ThreadPriorityValue::try_from(CHECKPOINT_THREAD_PRIORITY) {
        let policy = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Other);
        let _ = set_thread_priority_and_policy(thread_native_id(), ThreadPriority::Crossplatform(p), policy);
    }
}

/// How to create a database.
#[derive(Clone, Debug)]
pub struct FirOptions {
    /// Workers, and regions per table (one each).
    pub workers: u32,
    /// Blocks of 2,048 versions each table may use...
    pub blocks_per_table: u64,
    /// ...unless given here by table (index = table id): a workload whose
    /// tables differ in what they receive sizes each (Halloc records each
    /// pool's count; the region's format does not change).
    pub table_blocks: Vec<u64>,
    /// Keys a checkpoint may hold (over all tables).
    pub checkpoint_keys: u64,
}

impl FirOptions {
    /// Blocks table `t` may use.
    pub fn blocks_of(&self, t: usize) -> u64 {
        self.table_blocks.get(t).copied().unwrap_or(self.blocks_per_table)
    }
}

/// A key's entry in the index: its newest version, and the largest txnId
/// that found it absent (so an insert below that txnId is refused, MVTO).
#[derive(Default)]
pub(crate) struct KeyState {
    pub newest: Option<VersionAddr>,
    pub absent_read_ts: u64,
    /// A txnId the key's path in the tree was stamped with (0: not known
    /// to be stamped). A write finding it above the `CT` of the newest
    /// checkpoint begun skips `MarkNode` (txn.rs).
    pub stamped: u64,
}

/// A write waiting for its transaction's batch.
#[derive(Copy, Clone, Debug)]
pub(crate) struct PendingWrite {
    pub table: u32,
    pub key: u64,
    pub addr: VersionAddr,
}

/// How an open database runs (not stored in the region).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// A group-commit thread takes the queue (else each commit takes it
    /// itself before returning: one thread, deterministic; the crash lines).
    pub commit_thread: bool,
    /// Threads rebuilding the index at recovery.
    pub rebuild_threads: usize,
    /// A bug the crash lines plant (never set it otherwise).
    pub planted_bug: PlantedBug,
    /// The Zen-style baseline's recovery (fir.txt 5.1): ignore the
    /// checkpoint and scan every version of the tuple heap, building the
    /// index from what the scan finds.
    pub scan_whole_heap: bool,
    /// The index checkpoint thread (fir.txt 4.1): a checkpoint of the cost
    /// model's choice this often (None: only when asked).
    pub checkpoint_every: Option<Duration>,
    /// What the checkpoint thread takes: `Auto` (the cost model's choice),
    /// or `Full` only (the `fir-full` baseline of fir.txt 5.1).
    pub checkpoint_kind: CheckpointKind,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            commit_thread: true,
            rebuild_threads: 2,
            planted_bug: PlantedBug::None,
            scan_whole_heap: false,
            checkpoint_every: None,
            checkpoint_kind: CheckpointKind::Auto,
        }
    }
}

/// Bugs the crash lines plant to show the oracle catches them (issue 17).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum PlantedBug {
    #[default]
    None,
    /// A version's slot is written without its flush and fence, which come
    /// only after its transaction's LCTT entry is persisted.
    LcttBeforeContent,
    /// A checkpoint takes a key's newest version even if uncommitted.
    CheckpointKeepsUncommitted,
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
    /// The last checkpoint's time (0: none): versions at or below it were
    /// not scanned.
    pub checkpoint_ct: u64,
    /// Entries the checkpoint held.
    pub checkpoint_entries: u64,
    /// Redo and undo of the versions above `CT`.
    pub data_phase: Duration,
    /// The index rebuilt from the checkpoint and those versions.
    pub index_phase: Duration,
    /// Of it, the parallel part: the shards' trees built.
    pub rebuild: Duration,
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
    /// Per worker: the txnIds begun and not yet durable or ended (a
    /// checkpoint's `CT` stays below them).
    pub open: Box<[Mutex<BTreeSet<u64>>]>,
    pub checkpoint: Mutex<LastCheckpoint>,
    /// The `CT` of the newest checkpoint begun (set before it reads any
    /// shard): a key stamped above it needs no stamp for the next one.
    pub checkpoint_begun_ct: AtomicU64,
    /// Per index shard: the sampled keys (cost model, 4.3.3) and the
    /// updates each received since the last checkpoint.
    pub samples: Box<[SampleShard]>,
    pub planted_bug: PlantedBug,
    /// Whether a thread takes the group-commit queue (else each commit does).
    pub commit_thread: bool,
    /// Set when the database closes: the checkpoint thread's stop.
    pub closing: Mutex<bool>,
    pub closing_changed: Condvar,
    /// The last checkpoint the checkpoint thread failed to take.
    pub checkpoint_error: Mutex<Option<FirError>>,
    /// What the checkpoint thread took, in order.
    pub checkpoints_taken: Mutex<Vec<CheckpointReport>>,
}

/// FIR's tables: no log; versions persisted in place, commits by LCTT.
pub struct FirDb {
    pub(crate) inner: Arc<Inner>,
    thread: Option<JoinHandle<()>>,
    checkpointer: Option<JoinHandle<()>>,
}

impl Inner {
    pub fn shard(&self, table: u32, key: u64) -> &IndexShard {
        &self.shards[shard_of(table, key)]
    }

    /// Counts a write to a key if the cost model samples it.
    pub fn count_update(&self, table: u32, key: u64) {
        if crate::cost::sampled(table, key) {
            *self.samples[shard_of(table, key)].lock().entry((table, key)).or_default() += 1;
        }
    }

    /// Takes the queue and commits it as one batch, one caller at a time
    /// (so a worker's LCTT entry only rises): the group-commit thread's
    /// loop, or a commit without that thread.
    pub(crate) fn commit_queued(&self, wait: bool) -> bool {
        let _leader = self.commits.leader.lock();
        let batch = if wait { self.commits.take() } else { self.commits.take_now() };
        let any = !batch.is_empty();
        if any {
            self.commit_batch(batch);
        }
        any
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
        if self.planted_bug == PlantedBug::LcttBeforeContent {
            for w in batch.iter().flat_map(|q| &q.writes) {
                s.flush_slot(w.table as usize, w.addr);
            }
            s.region.fence();
        }
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
        // Out of the open sets before the waiters learn of it: a clean
        // shutdown's checkpoint, taken once they return, must not see the
        // batch as open.
        for q in &batch {
            self.open[q.worker as usize].lock().remove(&q.txn);
        }
        for (w, txn) in newest {
            self.commits.publish(w, txn);
        }
        self.commits.wake();
    }
}

/// One index shard's sampled keys and their update counts.
pub(crate) type SampleShard = Mutex<Map<(u32, u64), u64>>;

/// One shard's index.
type ShardTree = ShardIndex<KeyState>;

/// One shard's recovery input: its index, checkpoint run and tail versions.
type ShardInput = (usize, Vec<Entry>, Vec<TailVersion>);

/// A version recovery found above the checkpoint's `CT`.
struct TailVersion {
    key: (u32, u64),
    addr: VersionAddr,
    txn: u64,
}

/// Builds every shard's tree from its checkpoint run and its tail
/// versions (each key's newest wins), shards spread over `threads`
/// threads; the keys indexed.
fn rebuild(
    db: &FirDb,
    runs: Vec<Vec<Entry>>,
    tails: Vec<Vec<TailVersion>>,
    threads: usize,
) -> Result<u64, FirError> {
    let threads = threads.max(1);
    // Blocks per (table, region), read once: the builders check every
    // address against them.
    let blocks: Vec<Vec<usize>> =
        db.inner.storage.chains.iter().map(|regions| regions.iter().map(|c| c.len()).collect()).collect();
    let blocks = &blocks;
    let mut work: Vec<Vec<ShardInput>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, (run, tail)) in runs.into_iter().zip(tails).enumerate() {
        work[i % threads].push((i, run, tail));
    }
    let built: Vec<Result<Vec<(usize, ShardTree)>, FirError>> = std::thread::scope(|s| {
        let handles: Vec<_> = work
            .into_iter()
            .map(|shards| {
                s.spawn(move || {
                    shards
                        .into_iter()
                        .map(|(i, run, tail)| Ok((i, build_shard(db, blocks, run, tail)?)))
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("an index rebuild thread panicked")).collect()
    });
    let mut keys = 0;
    for part in built {
        for (i, tree) in part? {
            keys += tree.len() as u64;
            *db.inner.shards[i].lock() = tree;
        }
    }
    Ok(keys)
}

/// The Zen-style baseline's index: every key the heap scan found inserted
/// one at a time (top-down, splitting as it goes), on one thread.
fn build_top_down(db: &FirDb, tails: Vec<Vec<TailVersion>>) -> Result<u64, FirError> {
    let s = &db.inner.storage;
    let mut keys = 0;
    for (shard, tail) in db.inner.shards.iter().zip(tails) {
        let mut tree = shard.lock();
        for v in tail {
            if !s.holds(v.key.0 as usize, v.addr) {
                return Err(FirError::Format(format!("a version of {:?} at {:?}", v.key, v.addr)));
            }
            tree.entry(v.key, v.txn, KeyState::default).newest = Some(v.addr);
            keys += 1;
        }
    }
    Ok(keys)
}

/// One shard's tree: the run and the tail merged by key, newest first,
/// each version's header set, built bottom-up (stamp 0: as old as the
/// checkpoint), then the tail keys' paths stamped with their txnIds so
/// the next incremental checkpoint lists them.
fn build_shard(
    db: &FirDb,
    blocks: &[Vec<usize>],
    run: Vec<Entry>,
    mut tail: Vec<TailVersion>,
) -> Result<ShardTree, FirError> {
    tail.sort_unstable_by_key(|v| v.key);
    let mut keys: Vec<(u32, u64)> = Vec::with_capacity(run.len() + tail.len());
    let mut states: Vec<KeyState> = Vec::with_capacity(run.len() + tail.len());
    let mut sampled = Vec::new();
    let (mut r, mut t) = (run.iter().peekable(), tail.iter().peekable());
    loop {
        // The next key's newest version: from the run, the tail, or both.
        let (key, addr) = match (r.peek(), t.peek()) {
            (None, None) => break,
            (Some(e), Some(v)) if (e.table, e.key) == v.key => {
                let (e, v) = (r.next().expect("peeked"), t.next().expect("peeked"));
                if v.txn >= e.txn {
                    (v.key, v.addr)
                } else {
                    ((e.table, e.key), e.addr)
                }
            }
            (Some(e), Some(v)) if (e.table, e.key) > v.key => {
                let v = t.next().expect("peeked");
                (v.key, v.addr)
            }
            (Some(_), _) => {
                let e = r.next().expect("peeked");
                ((e.table, e.key), e.addr)
            }
            (None, Some(_)) => {
                let v = t.next().expect("peeked");
                (v.key, v.addr)
            }
        };
        if keys.last().is_some_and(|k| *k >= key) {
            return Err(FirError::Format(format!("checkpoint keys out of order at {key:?}")));
        }
        let in_chain =
            blocks.get(key.0 as usize).and_then(|t| t.get(addr.region as usize)).is_some_and(|n| {
                (addr.block as usize) < *n && (addr.slot as usize) < crate::layout::SLOTS_PER_BLOCK
            });
        if !in_chain {
            return Err(FirError::Format(format!(
                "key {key:?} points at {addr:?}, outside its table's regions"
            )));
        }
        // The version's header is loaded from its slot on first use.
        keys.push(key);
        states.push(KeyState { newest: Some(addr), absent_read_ts: 0, stamped: 0 });
        if crate::cost::sampled(key.0, key.1) {
            sampled.push(key);
        }
    }
    if let Some(first) = sampled.first() {
        let mut samples = db.inner.samples[shard_of(first.0, first.1)].lock();
        samples.extend(sampled.into_iter().map(|k| (k, 0)));
    }
    let mut tree = ShardIndex::from_sorted_parts(keys, states, 0);
    for v in &tail {
        tree.get_mut(&v.key, v.txn);
    }
    Ok(tree)
}

impl FirDb {
    /// Formats `region` for `schemas` and opens it empty.
    pub fn create(
        region: Arc<Region>,
        schemas: &[TableSchema],
        options: &FirOptions,
    ) -> Result<FirDb, FirError> {
        FirDb::create_with(region, schemas, options, &RunOptions::default())
    }

    /// Bytes a region needs for `schemas` and `options`.
    pub fn region_bytes(schemas: &[TableSchema], options: &FirOptions) -> u64 {
        let layout = Layout {
            workers: options.workers,
            tables: schemas.len() as u32,
            checkpoint_keys: options.checkpoint_keys,
        };
        let config = Storage::halloc_config(schemas, options);
        layout.halloc_base().0 + Halloc::required_len_bytes(&config)
    }

    /// [`FirDb::create`], run as `run` says.
    pub fn create_with(
        region: Arc<Region>,
        schemas: &[TableSchema],
        options: &FirOptions,
        run: &RunOptions,
    ) -> Result<FirDb, FirError> {
        if schemas.is_empty() || schemas.len() > MAX_TABLES {
            return Err(FirError::Schema(format!("{} tables (1 to {MAX_TABLES})", schemas.len())));
        }
        if options.workers == 0 || options.workers > u32::from(u16::MAX) {
            return Err(FirError::Schema(format!("{} workers", options.workers)));
        }
        let layout = Layout {
            workers: options.workers,
            tables: schemas.len() as u32,
            checkpoint_keys: options.checkpoint_keys,
        };
        region.store_u64_persist(RegionOffset(0), 0);
        region.store_u64(layout.checkpoint_selector(), 0);
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
        let config = Storage::halloc_config(schemas, options);
        let halloc_len = Halloc::required_len_bytes(&config);
        let halloc = Halloc::format(&region, base, halloc_len, &config)?;
        let mut sb = vec![0u8; MEDIA_BLOCK_BYTES as usize];
        sb[8..12].copy_from_slice(&VERSION.to_le_bytes());
        sb[12..16].copy_from_slice(&layout.workers.to_le_bytes());
        sb[16..20].copy_from_slice(&layout.tables.to_le_bytes());
        for (i, s) in schemas.iter().enumerate() {
            sb[24 + 4 * i..28 + 4 * i].copy_from_slice(&(s.row_bytes as u32).to_le_bytes());
        }
        sb[216..224].copy_from_slice(&options.checkpoint_keys.to_le_bytes());
        region.write_persist(RegionOffset(8), &sb[8..]);
        region.store_u64_persist(RegionOffset(0), MAGIC);
        let storage = Storage::new(region, halloc, layout, schemas);
        Ok(FirDb::start(storage, &vec![0; options.workers as usize], 1, run))
    }

    /// Opens a region [`FirDb::create`] formatted, recovering what a crash
    /// left, with the index rebuilt on 2 threads.
    pub fn open(
        region: Arc<Region>,
        schemas: &[TableSchema],
    ) -> Result<(FirDb, FirRecoveryReport), FirError> {
        FirDb::open_with(region, schemas, &RunOptions::default())
    }

    /// [`FirDb::open`], run as `run` says; the index rebuilt on
    /// `run.rebuild_threads` threads (4.4):
    /// the last checkpoint's entries, then every region's versions above
    /// its `CT` (redo those at or below the region's LCTT entry, undo the
    /// rest), each key's newest winning; each shard's tree built
    /// bottom-up, shards spread over the threads.
    pub fn open_with(
        region: Arc<Region>,
        schemas: &[TableSchema],
        run: &RunOptions,
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
        let checkpoint_keys = u64::from_le_bytes(sb[216..224].try_into().expect("8 bytes"));
        let layout = Layout { workers: u32_at(12), tables: u32_at(16), checkpoint_keys };
        if layout.workers == 0
            || layout.workers > u32::from(u16::MAX)
            || layout.tables as usize > MAX_TABLES
            || checkpoint_keys > region.len() / CHECKPOINT_ENTRY_BYTES
        {
            return Err(FirError::Format(format!("a superblock of {layout:?}")));
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
        let checkpoint = if run.scan_whole_heap { None } else { read_active(&region, &layout)? };
        let storage = Storage::new(region, halloc, layout, schemas);
        let mut report = FirRecoveryReport::default();
        let ct = checkpoint.as_ref().map_or(0, |(_, h, _)| h.ct);
        report.checkpoint_ct = ct;
        let mut max_txn = lctt.iter().copied().max().unwrap_or(0).max(ct);
        // Data: the versions above CT (4.4.1).
        let mut tail: Map<(u32, u64), (VersionAddr, u64)> = Map::default();
        for t in 0..layout.tables as usize {
            for (r, &committed) in lctt.iter().enumerate() {
                let (slots, max_floor) = storage.recover_chain(t, r, ct)?;
                max_txn = max_txn.max(max_floor);
                for (addr, slot) in slots {
                    report.versions_scanned += 1;
                    max_txn = max_txn.max(slot.txn);
                    if slot.txn <= committed {
                        report.versions_kept += 1;
                        let e = tail.entry((t as u32, slot.key)).or_insert((addr, slot.txn));
                        if slot.txn >= e.1 {
                            *e = (addr, slot.txn);
                        }
                    } else {
                        report.versions_discarded += 1;
                        storage.clear_slot(t, addr);
                    }
                }
            }
        }
        storage.region.fence();
        report.data_phase = started.elapsed();
        // Index: the checkpoint's runs with the tail over them, per shard.
        let index_started = Instant::now();
        let (selector, runs) = match checkpoint {
            Some((selector, _, runs)) => (selector, runs),
            // Without one read (none, or the Zen-style scan), the next
            // checkpoint still goes to the half the selector does not name.
            None => (
                storage.region.load_u64(layout.checkpoint_selector()),
                (0..SHARDS).map(|_| Vec::new()).collect(),
            ),
        };
        report.checkpoint_entries = runs.iter().map(|r| r.len() as u64).sum();
        let mut tails: Vec<Vec<TailVersion>> = (0..SHARDS).map(|_| Vec::new()).collect();
        for (k, (addr, txn)) in tail {
            tails[shard_of(k.0, k.1)].push(TailVersion { key: k, addr, txn });
        }
        let db = FirDb::start(storage, &lctt, max_txn + 1, run);
        *db.inner.checkpoint.lock() = LastCheckpoint::at(selector, ct);
        let rebuild_started = Instant::now();
        let built = if run.scan_whole_heap {
            build_top_down(&db, tails)?
        } else {
            rebuild(&db, runs, tails, run.rebuild_threads)?
        };
        report.rebuild = rebuild_started.elapsed();
        report.keys = built;
        report.index_phase = index_started.elapsed();
        report.elapsed = started.elapsed();
        Ok((db, report))
    }

    fn start(storage: Storage, lctt: &[u64], next_ts: u64, run: &RunOptions) -> FirDb {
        let workers = storage.layout.workers as usize;
        let inner = Arc::new(Inner {
            commits: GroupCommit::new(storage.layout.workers, lctt),
            storage,
            shards: (0..SHARDS).map(|_| Mutex::new(ShardIndex::default())).collect(),
            next_ts: AtomicU64::new(next_ts),
            open: (0..workers).map(|_| Mutex::new(BTreeSet::new())).collect(),
            checkpoint: Mutex::new(LastCheckpoint::default()),
            checkpoint_begun_ct: AtomicU64::new(0),
            samples: (0..SHARDS).map(|_| Mutex::new(Map::default())).collect(),
            planted_bug: run.planted_bug,
            commit_thread: run.commit_thread,
            closing: Mutex::new(false),
            closing_changed: Condvar::new(),
            checkpoint_error: Mutex::new(None),
            checkpoints_taken: Mutex::new(Vec::new()),
        });
        let thread = run.commit_thread.then(|| {
            let i = inner.clone();
            std::thread::Builder::new()
                .name("fir-group-commit".into())
                .spawn(move || loop {
                    if !i.commit_queued(true)
                        && i.commits.stop.load(Acquire)
                        && i.commits.queue.lock().is_empty()
                    {
                        return;
                    }
                })
                .expect("spawning the group-commit thread")
        });
        let kind = run.checkpoint_kind;
        let checkpointer = run.checkpoint_every.map(|every| {
            let i = inner.clone();
            std::thread::Builder::new()
                .name("fir-checkpoint".into())
                .spawn(move || {
                    lower_priority();
                    loop {
                        let mut closing = i.closing.lock();
                        if !*closing {
                            i.closing_changed.wait_for(&mut closing, every);
                        }
                        if *closing {
                            return;
                        }
                        drop(closing);
                        match i.checkpoint(kind) {
                            Ok(report) => i.checkpoints_taken.lock().push(report),
                            Err(e) => *i.checkpoint_error.lock() = Some(e),
                        }
                    }
                })
                .expect("spawning the checkpoint thread")
        });
        FirDb { inner, thread, checkpointer }
    }

    /// The reports of the checkpoints the checkpoint thread took since the
    /// last call (taken).
    pub fn take_checkpoint_reports(&self) -> Vec<CheckpointReport> {
        std::mem::take(&mut *self.inner.checkpoints_taken.lock())
    }

    /// The last error of the checkpoint thread, if any (taken).
    pub fn take_checkpoint_error(&self) -> Option<FirError> {
        self.inner.checkpoint_error.lock().take()
    }

    /// Starts a transaction on `worker` (its region is where its versions go).
    pub fn begin(&self, worker: WorkerId) -> Result<FirTxn<'_>, FirError> {
        let workers = self.inner.storage.layout.workers;
        if worker.0 >= workers {
            return Err(FirError::NoSuchWorker { worker: worker.0, workers });
        }
        // The txnId is drawn under the worker's open set's lock, so a
        // checkpoint that read the next txnId before finds it there.
        let mut open = self.inner.open[worker.0 as usize].lock();
        let ts = self.inner.next_ts.fetch_add(1, AcqRel);
        open.insert(ts);
        drop(open);
        Ok(FirTxn::new(self, worker, ts))
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
                if tk != table.0 {
                    continue;
                }
                let mut v = st.newest;
                while let Some(a) = v {
                    let (begin, tomb, prev) = self.inner.storage.with_header(t, a, |h| {
                        (h.begin(), h.tombstone.load(Relaxed) != 0, VersionAddr::unlink(h.prev.load(Relaxed)))
                    });
                    if begin & crate::tile::PENDING == 0 {
                        if !tomb {
                            out.insert(RowKey(key), self.inner.storage.read_row(t, a));
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
        *self.inner.closing.lock() = true;
        self.inner.closing_changed.notify_all();
        if let Some(t) = self.checkpointer.take() {
            let _ = t.join();
        }
        self.inner.commits.stop.store(true, Release);
        self.inner.commits.queued.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
