//! Index-leaf checkpoints (fir.txt 4.3.1-4.3.2): every index shard's keys
//! with the address and txnId of their newest committed version, as one
//! sorted run per shard, in one of two halves of the checkpoint area; the
//! selector word names the half of the last checkpoint completed.
//!
//! A checkpoint's time `CT` is one below the oldest transaction not yet
//! durable (or the next txnId): every transaction at or below `CT` is
//! durable and visible when the scan starts, so the checkpoint holds all
//! of them, and recovery scans only versions above `CT`. A checkpoint may
//! also hold newer versions it met; recovery takes each key's newest.
//!
//! *Full*: every leaf. *Incremental* (Algorithm 2): the leaves under
//! nodes stamped above the previous checkpoint's `CT`, and for each
//! subtree stamped at or below it, the previous checkpoint's entries in
//! its key range (`MergeAndPersist`). An uncommitted newest version is
//! replaced by its last committed one; a key whose newest committed
//! version is a delete is left out.

use std::time::{Duration, Instant};

use strata_pmem::Region;

use crate::addr::VersionAddr;
use crate::cost::{estimate, gini, CheckpointCosts, CostEstimate};
use crate::db::{FirDb, Inner};
use crate::error::FirError;
use crate::index::shard::Changed;
use crate::layout::{
    Layout, CHECKPOINT_ENTRY_BYTES, CHECKPOINT_HEADER_BYTES, CHECKPOINT_MAGIC, SHARDS, VERSION,
};
use crate::tile::PENDING;

/// Which checkpoint.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CheckpointKind {
    Full,
    Incremental,
    /// Whichever the cost model ([`crate::cost`]) estimates cheaper.
    Auto,
}

/// One key of a checkpoint.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub table: u32,
    pub key: u64,
    /// The version's txnId.
    pub txn: u64,
    pub addr: VersionAddr,
}

impl Entry {
    pub fn encode(&self) -> [u8; CHECKPOINT_ENTRY_BYTES as usize] {
        let mut b = [0u8; CHECKPOINT_ENTRY_BYTES as usize];
        b[0..4].copy_from_slice(&self.table.to_le_bytes());
        b[8..16].copy_from_slice(&self.key.to_le_bytes());
        b[16..24].copy_from_slice(&self.txn.to_le_bytes());
        b[24..32].copy_from_slice(&self.addr.to_raw().to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Entry {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Entry {
            table: u32::from_le_bytes(b[0..4].try_into().expect("4 bytes")),
            key: u64_at(8),
            txn: u64_at(16),
            addr: VersionAddr::from_raw(u64_at(24)),
        }
    }
}

/// A checkpoint half's header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub ct: u64,
    pub generation: u64,
    /// Entries of each shard's run, in shard order.
    pub runs: Vec<u64>,
    /// CRC32C of the entries.
    pub entries_crc: u32,
}

impl Header {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; CHECKPOINT_HEADER_BYTES as usize];
        b[0..4].copy_from_slice(&CHECKPOINT_MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&VERSION.to_le_bytes());
        b[8..16].copy_from_slice(&self.ct.to_le_bytes());
        b[16..24].copy_from_slice(&self.generation.to_le_bytes());
        b[24..32].copy_from_slice(&self.runs.iter().sum::<u64>().to_le_bytes());
        b[32..36].copy_from_slice(&self.entries_crc.to_le_bytes());
        for (i, r) in self.runs.iter().enumerate() {
            b[64 + 8 * i..72 + 8 * i].copy_from_slice(&r.to_le_bytes());
        }
        let crc = header_crc(&b);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// None unless whole (magic, version, CRC, counts that add up).
    pub fn decode(b: &[u8]) -> Option<Header> {
        let b = b.get(..CHECKPOINT_HEADER_BYTES as usize)?;
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if u32_at(0) != CHECKPOINT_MAGIC || u32_at(4) != VERSION || u32_at(60) != header_crc(b) {
            return None;
        }
        let runs: Vec<u64> = (0..SHARDS).map(|i| u64_at(64 + 8 * i)).collect();
        let total = runs.iter().try_fold(0u64, |a, r| a.checked_add(*r))?;
        (total == u64_at(24)).then(|| Header {
            ct: u64_at(8),
            generation: u64_at(16),
            runs,
            entries_crc: u32_at(32),
        })
    }
}

/// CRC32C of a header's bytes 0..60 and its run counts.
fn header_crc(b: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&b[..60]), &b[64..64 + 8 * SHARDS])
}

/// What a checkpoint did.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointReport {
    pub kind: CheckpointKind,
    pub ct: u64,
    pub generation: u64,
    /// Entries written.
    pub entries: u64,
    /// Entries taken from the index's changed leaves (all, for a full one).
    pub from_index: u64,
    /// Entries copied from the previous checkpoint (skipped subtrees).
    pub copied: u64,
    /// Subtrees skipped.
    pub skipped_subtrees: u64,
    /// The cost model's estimate, for an `Auto` checkpoint.
    pub estimate: Option<CostEstimate>,
    pub elapsed: Duration,
}

/// The last checkpoint completed, as the next incremental one needs it.
#[derive(Debug, Default)]
pub(crate) struct LastCheckpoint {
    /// `generation << 1 | half` (0: none).
    pub selector: u64,
    pub ct: u64,
    /// Its runs per shard, as written (None: read them from the region,
    /// after recovery).
    pub runs: Option<Vec<Vec<Entry>>>,
    /// Buffers of earlier checkpoints, reused: a checkpoint allocates
    /// nothing of its own size (fresh pages cost a fault each).
    pub spare_runs: Vec<Vec<Entry>>,
    pub spare_bytes: Vec<u8>,
}

impl LastCheckpoint {
    /// The checkpoint `(selector, ct)`, its runs not in DRAM.
    pub fn at(selector: u64, ct: u64) -> LastCheckpoint {
        LastCheckpoint { selector, ct, ..LastCheckpoint::default() }
    }
}

/// A checkpoint read back: its selector word, header and per-shard runs.
pub(crate) type ActiveCheckpoint = (u64, Header, Vec<Vec<Entry>>);

/// The checkpoint the selector names, if any: its header and runs.
pub(crate) fn read_active(region: &Region, layout: &Layout) -> Result<Option<ActiveCheckpoint>, FirError> {
    let selector = region.load_u64(layout.checkpoint_selector());
    if selector == 0 {
        return Ok(None);
    }
    let half = selector & 1;
    let at = layout.checkpoint_half(half);
    let header = Header::decode(&region.read_vec(at, CHECKPOINT_HEADER_BYTES as usize))
        .ok_or_else(|| FirError::Format(format!("checkpoint half {half}: a damaged header")))?;
    if header.generation != selector >> 1 {
        return Err(FirError::Format(format!(
            "checkpoint half {half}: generation {} against the selector's {}",
            header.generation,
            selector >> 1
        )));
    }
    let total: u64 = header.runs.iter().sum();
    if total > layout.checkpoint_keys {
        return Err(FirError::Format(format!(
            "a checkpoint of {total} entries in room for {}",
            layout.checkpoint_keys
        )));
    }
    let bytes = region.read_vec(at + CHECKPOINT_HEADER_BYTES, (total * CHECKPOINT_ENTRY_BYTES) as usize);
    if crc32c::crc32c(&bytes) != header.entries_crc {
        return Err(FirError::Format(format!("checkpoint half {half}: entries fail their CRC")));
    }
    let mut runs = Vec::with_capacity(SHARDS);
    let mut chunks = bytes.chunks_exact(CHECKPOINT_ENTRY_BYTES as usize);
    for n in &header.runs {
        runs.push(chunks.by_ref().take(*n as usize).map(Entry::decode).collect());
    }
    Ok(Some((selector, header, runs)))
}

/// The newest committed version of a key (4.3.2: past uncommitted ones)
/// from `newest` down, as an entry; None if it has none or it is a
/// delete. Read without the key's latch: `newest` was read under it, and
/// every version a checkpoint must keep (txnId at most `CT`) was committed
/// before. A key whose newest version is not committed yet goes in
/// `pending` with that version's txnId: its path is stamped with it after
/// the shard is read, so the next checkpoint visits the key again (its
/// writer may have skipped the stamp, txn.rs).
fn committed(
    inner: &Inner,
    (table, key): (u32, u64),
    newest: Option<VersionAddr>,
    pending: &mut Vec<((u32, u64), u64)>,
) -> Option<Entry> {
    let s = &inner.storage;
    let mut v = newest;
    let mut head = true;
    while let Some(a) = v {
        let (begin, tomb, prev) = s.peek_header(table as usize, a);
        if begin & PENDING == 0 || inner.planted_bug == crate::db::PlantedBug::CheckpointKeepsUncommitted {
            return (!tomb).then_some(Entry { table, key, txn: begin & crate::tile::TS_MASK, addr: a });
        }
        if head {
            pending.push(((table, key), begin & crate::tile::TS_MASK));
            head = false;
        }
        v = prev;
    }
    None
}

/// What a checkpoint copies from a shard under its latch.
enum Seen {
    /// A key to resolve, with its newest version.
    Key((u32, u64), Option<VersionAddr>),
    /// An untouched subtree's key range: the previous checkpoint's entries.
    Skip((u32, u64), (u32, u64)),
}

impl FirDb {
    /// Takes a checkpoint of `kind` (an incremental one without a previous
    /// checkpoint is full), one shard at a time while transactions run.
    pub fn checkpoint(&self, kind: CheckpointKind) -> Result<CheckpointReport, FirError> {
        self.inner.checkpoint(kind)
    }

    /// The cost model's inputs now: `α` from the sampled keys' updates
    /// since the last checkpoint, the index's nodes and entries.
    pub fn estimate_costs(&self) -> CostEstimate {
        self.inner.estimate_costs()
    }
}

impl Inner {
    pub(crate) fn checkpoint(&self, kind: CheckpointKind) -> Result<CheckpointReport, FirError> {
        let started = Instant::now();
        let inner = self;
        let mut last = inner.checkpoint.lock();
        let ct = self.checkpoint_time();
        // Before any shard is read: a write after this that finds its key
        // stamped above `ct` may skip the stamp (txn.rs).
        self.checkpoint_begun_ct.fetch_max(ct, std::sync::atomic::Ordering::AcqRel);
        let s = &inner.storage;
        let layout = s.layout;
        let model = (kind == CheckpointKind::Auto).then(|| self.estimate_costs());
        let kind = match model {
            Some(m) if m.incremental => CheckpointKind::Incremental,
            Some(_) => CheckpointKind::Full,
            None => kind,
        };
        // An incremental checkpoint merges into the previous one's runs (kept
        // in DRAM, else read back after recovery); a full one only reuses
        // their buffers.
        let cached = last.runs.take();
        let (previous, retired) = match kind {
            CheckpointKind::Incremental if last.selector != 0 => {
                let runs = match cached {
                    Some(runs) => Some(runs),
                    None => read_active(&s.region, &layout)?.map(|(_, _, runs)| runs),
                };
                (runs, None)
            }
            _ => (None, cached),
        };
        let kind = if previous.is_some() { CheckpointKind::Incremental } else { CheckpointKind::Full };
        let mut report = CheckpointReport {
            kind,
            ct,
            generation: (last.selector >> 1) + 1,
            entries: 0,
            from_index: 0,
            copied: 0,
            skipped_subtrees: 0,
            estimate: model,
            elapsed: Duration::ZERO,
        };
        let half = if last.selector == 0 { 0 } else { 1 - (last.selector & 1) };
        let at = layout.checkpoint_half(half);
        let mut runs = Vec::with_capacity(SHARDS);
        let mut new_runs: Vec<Vec<Entry>> = Vec::with_capacity(SHARDS);
        let mut spare = std::mem::take(&mut last.spare_runs);
        let mut bytes = std::mem::take(&mut last.spare_bytes);
        bytes.clear();
        let mut seen = Vec::new();
        for (i, shard) in inner.shards.iter().enumerate() {
            // Under the latch only a copy of what to resolve: transactions
            // on the shard wait for no header walk (fir.txt 4.3.1: the
            // checkpoint does not block the index's readers and writers).
            seen.clear();
            {
                let tree = shard.lock();
                match &previous {
                    None => seen.extend(tree.iter().map(|(k, st)| Seen::Key(k, st.newest))),
                    Some(_) => {
                        let mut items = Vec::new();
                        tree.changed_since(last.ct + 1, &mut items);
                        seen.extend(items.into_iter().map(|item| match item {
                            Changed::Entry(k, st) => Seen::Key(k, st.newest),
                            Changed::Skip(lo, hi) => Seen::Skip(lo, hi),
                        }));
                    }
                }
            }
            let mut run: Vec<Entry> = spare.pop().unwrap_or_default();
            run.clear();
            let mut pending = Vec::new();
            for item in seen.drain(..) {
                match item {
                    Seen::Key(k, newest) => {
                        if let Some(e) = committed(inner, k, newest, &mut pending) {
                            run.push(e);
                            report.from_index += 1;
                        }
                    }
                    Seen::Skip(lo, hi) => {
                        let old = &previous.as_ref().expect("a skip comes from an incremental traversal")[i];
                        report.skipped_subtrees += 1;
                        let from = old.partition_point(|e| (e.table, e.key) < lo);
                        let to = old.partition_point(|e| (e.table, e.key) <= hi);
                        run.extend_from_slice(&old[from..to]);
                        report.copied += (to - from) as u64;
                    }
                }
            }
            if !pending.is_empty() {
                let mut tree = shard.lock();
                for (k, txn) in pending {
                    if let Some(st) = tree.get_mut(&k, txn) {
                        st.stamped = st.stamped.max(txn);
                    }
                }
            }
            report.entries += run.len() as u64;
            if report.entries > layout.checkpoint_keys {
                return Err(FirError::CheckpointFull { keys: report.entries, room: layout.checkpoint_keys });
            }
            for e in &run {
                bytes.extend_from_slice(&e.encode());
            }
            runs.push(run.len() as u64);
            new_runs.push(run);
        }
        let header = Header { ct, generation: report.generation, runs, entries_crc: crc32c::crc32c(&bytes) };
        s.region.write(at + CHECKPOINT_HEADER_BYTES, &bytes);
        s.region.flush(at + CHECKPOINT_HEADER_BYTES, bytes.len() as u64);
        s.region.write(at, &header.encode());
        s.region.flush(at, CHECKPOINT_HEADER_BYTES);
        s.region.fence();
        let selector = (report.generation << 1) | half;
        s.region.store_u64_persist(layout.checkpoint_selector(), selector);
        let mut spare_runs: Vec<Vec<Entry>> = previous.into_iter().chain(retired).flatten().collect();
        spare_runs.extend(spare);
        spare_runs.truncate(SHARDS);
        *last = LastCheckpoint { selector, ct, runs: Some(new_runs), spare_runs, spare_bytes: bytes };
        for samples in inner.samples.iter() {
            samples.lock().values_mut().for_each(|c| *c = 0);
        }
        report.elapsed = started.elapsed();
        Ok(report)
    }

    fn estimate_costs(&self) -> CostEstimate {
        let inner = self;
        let mut counts: Vec<u64> =
            inner.samples.iter().flat_map(|s| s.lock().values().copied().collect::<Vec<_>>()).collect();
        let alpha = gini(&mut counts);
        let (mut nodes, mut entries) = (0, 0);
        for shard in inner.shards.iter() {
            let tree = shard.lock();
            nodes += tree.node_count();
            entries += tree.len() as u64;
        }
        estimate(alpha, nodes, entries, &CheckpointCosts::default())
    }
}

impl FirDb {
    /// A clean shutdown: waits for the queued commits, takes a checkpoint
    /// (the cost model's choice), and closes, so the next open reads the
    /// checkpoint and (with no transaction running) no version after it.
    pub fn close(self) -> Result<CheckpointReport, FirError> {
        let inner = &self.inner;
        // No transaction can run (it would borrow the database): what is
        // open is committed and queued.
        for (w, open) in inner.open.iter().enumerate() {
            let queued: Vec<u64> = open.lock().iter().copied().collect();
            for txn in queued {
                inner.commits.wait(w as u32, txn);
            }
        }
        self.checkpoint(CheckpointKind::Auto)
    }
}

impl Inner {
    /// `CT`: one below the oldest transaction that may not be durable yet.
    fn checkpoint_time(&self) -> u64 {
        let inner = self;
        let mut oldest = inner.next_ts.load(std::sync::atomic::Ordering::Acquire);
        for open in inner.open.iter() {
            if let Some(t) = open.lock().first() {
                oldest = oldest.min(*t);
            }
        }
        oldest - 1
    }
}
