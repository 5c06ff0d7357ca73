//! The workload of the transactional-table crash lines (`strata-txn`,
//! taurus.txt): sessions of transactions generated from a seed, each with
//! the model's account of what it reads, writes and depends on, so the
//! oracle (`crate::txn_oracle`) judges a recovered database from its rows
//! alone, without reading the logs.
//!
//! Tables: counters (value, last writer), items (inserted, updated,
//! deleted, inserted again after a delete) and receipts (one per
//! transaction, keyed by its id, holding a digest of what it read; some
//! transactions delete an earlier one's). Transaction `k` of a session runs
//! on worker `k % workers` (two workers per log), so consecutive
//! transactions land in different logs, and most pick rows the previous
//! ones wrote: the dependencies (read-after-write, write-after-write) cross
//! logs. Dependencies are what Taurus tracks for data logging: the last
//! writer of every row a transaction reads or writes (no write-after-read).
//!
//! A session is cut into waves: runs of one to `logs` consecutive
//! transactions, one per log, whose records are in flight together (see
//! `crate::txn_driver`); half-way through, the database is closed and
//! reopened. Every third session of a Taurus line is anchored: after the
//! load, bulk transactions (three 2 KiB blobs each, in a fourth table) take
//! every log past the size where `strata-txn` places an LV anchor, so the
//! rest of the session logs records compressed against it (taurus.txt 4.1,
//! Algorithm 5).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Range;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_txn::{TableId, TableSchema};

use crate::txn_lines::TxnLogging;

pub(crate) const COUNTERS: TableId = TableId(0);
pub(crate) const ITEMS: TableId = TableId(1);
pub(crate) const RECEIPTS: TableId = TableId(2);
pub(crate) const BLOBS: TableId = TableId(3);
pub(crate) const TABLES: [TableId; 4] = [COUNTERS, ITEMS, RECEIPTS, BLOBS];
const TABLE_NAMES: [&str; 4] = ["counters", "items", "receipts", "blobs"];
/// Row bytes per table: counter (value, writer); item (writer, version,
/// key, filler); receipt (id, digest of its reads, receipt it deleted);
/// blob (writer, then filler: few rows, many bytes).
const ROW_BYTES: [usize; 4] = [16, 40, 24, BLOB_BYTES];
const BLOB_BYTES: usize = 2048;
const N_COUNTERS: u64 = 6;
/// Item keys start here (apart from receipt ids, though in another table).
const FIRST_ITEM: u64 = 1 << 40;
/// How many earlier transactions' rows a new one prefers.
const RECENT_TXNS: usize = 3;
/// A receipt a transaction deletes is one of the last this many.
const RECEIPT_WINDOW: u64 = 8;
/// Blobs a bulk transaction inserts: a record of about 6 KB.
const BULK_BLOBS: u64 = 3;
/// Bulk transactions per log in an anchored session: enough to take every
/// log past [`strata_txn::log::ANCHOR_EVERY_BYTES`] (64 KiB), where
/// `strata-txn` places its first LV anchor, so the records after it are
/// compressed against an anchor.
const BULK_PER_LOG: usize = 12;

pub(crate) fn schemas() -> Vec<TableSchema> {
    TABLE_NAMES
        .iter()
        .zip(ROW_BYTES)
        .map(|(name, row_bytes)| TableSchema { name: name.to_string(), row_bytes })
        .collect()
}

/// A row: its table and primary key.
pub(crate) type Key = (TableId, u64);

/// One step of a transaction, as the driver runs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// A read, and what it must return.
    Get {
        key: Key,
        expect: Option<Vec<u8>>,
    },
    Put {
        key: Key,
        row: Vec<u8>,
    },
    Insert {
        key: Key,
        row: Vec<u8>,
    },
    Delete {
        key: Key,
    },
}

#[derive(Clone, Debug)]
pub(crate) struct TxnSpec {
    /// Its `TxnId`, also its receipt's key.
    pub id: u64,
    pub worker: u32,
    pub ops: Vec<Op>,
    /// Last writers of the rows it reads or writes.
    pub deps: BTreeSet<u64>,
    /// The earlier transaction whose receipt it deletes.
    pub deletes_receipt: Option<u64>,
}

impl TxnSpec {
    /// Its writes in order: the row, and its new image (None: deleted).
    pub fn writes(&self) -> impl Iterator<Item = (Key, Option<&[u8]>)> {
        self.ops.iter().filter_map(|op| match op {
            Op::Get { .. } => None,
            Op::Put { key, row } | Op::Insert { key, row } => Some((*key, Some(row.as_slice()))),
            Op::Delete { key } => Some((*key, None)),
        })
    }
}

/// One session: a fresh database, its transactions and waves.
#[derive(Clone, Debug)]
pub(crate) struct SessionPlan {
    pub index: usize,
    /// `txns[0]` loads the counters.
    pub txns: Vec<TxnSpec>,
    /// Consecutive ranges of `txns`, each at most one transaction per log.
    pub waves: Vec<Range<usize>>,
    /// The database is closed and reopened after this wave.
    pub reopen_after_wave: usize,
}

impl SessionPlan {
    /// The ids of its transactions.
    pub fn ids(&self) -> Range<u64> {
        let first = self.txns.first().map_or(0, |t| t.id);
        first..first + self.txns.len() as u64
    }

    pub fn txn(&self, id: u64) -> Option<&TxnSpec> {
        let first = self.txns.first()?.id;
        self.txns.get(usize::try_from(id.checked_sub(first)?).ok()?)
    }

    /// `sessions` sessions of seed `seed`, numbered on from transaction 1.
    pub fn sessions(seed: u64, logging: TxnLogging, sessions: usize, txns: usize) -> Vec<SessionPlan> {
        let mut plans: Vec<SessionPlan> = Vec::with_capacity(sessions);
        for s in 0..sessions {
            let first_id = plans.last().map_or(1, |p| p.ids().end);
            plans.push(SessionPlan::generate(seed, logging, s, first_id, txns));
        }
        plans
    }

    /// Whether session `index` is anchored: Taurus only, every third.
    pub fn anchored(logging: TxnLogging, index: usize) -> bool {
        logging.logs() > 1 && index % 3 == 2
    }

    /// Session `index` of seed `seed`: `txns` transactions (at least 2)
    /// numbered from `first_id`; an anchored one has bulk transactions
    /// first (after the load).
    pub fn generate(seed: u64, logging: TxnLogging, index: usize, first_id: u64, txns: usize) -> Self {
        let mut rng =
            ChaCha8Rng::seed_from_u64(seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut model = Model { next_item: FIRST_ITEM, ..Default::default() };
        let workers = logging.workers() as u64;
        let logs = logging.logs();
        let bulk = if SessionPlan::anchored(logging, index) { BULK_PER_LOG * logs } else { 0 };
        let total = txns.max(2) + bulk;
        let specs: Vec<TxnSpec> = (0..total as u64)
            .map(|k| {
                let b = TxnBuilder::new(&model, first_id + k, (k % workers) as u32);
                let spec = match k as usize {
                    0 => load(b),
                    k if k <= bulk => bulk_insert(b, &mut rng),
                    _ => random_txn(b, &mut rng),
                };
                model.apply(&spec);
                spec
            })
            .collect();
        // The load alone first.
        let mut waves = Vec::new();
        waves.push(0..1);
        let mut next = 1;
        while next < specs.len() {
            let size = if logs == 1 || rng.gen_bool(0.3) { 1 } else { rng.gen_range(2..=logs) };
            let end = (next + size).min(specs.len());
            waves.push(next..end);
            next = end;
        }
        // Half-way through the transactions after the bulk ones.
        let half = 1 + bulk + (total - 1 - bulk) / 2;
        let reopen_after_wave = waves.iter().position(|w| w.end >= half).unwrap_or(waves.len() - 1);
        SessionPlan { index, txns: specs, waves, reopen_after_wave }
    }
}

/// The database as the transactions so far left it.
#[derive(Default)]
struct Model {
    rows: BTreeMap<Key, Vec<u8>>,
    last_writer: BTreeMap<Key, u64>,
    /// Rows written by the last few transactions, newest first.
    recent: VecDeque<Vec<Key>>,
    deleted_items: Vec<u64>,
    next_item: u64,
}

impl Model {
    fn apply(&mut self, spec: &TxnSpec) {
        let mut written = Vec::new();
        for (key, row) in spec.writes() {
            match row {
                Some(r) => {
                    self.rows.insert(key, r.to_vec());
                    if key.0 == ITEMS {
                        self.deleted_items.retain(|k| *k != key.1);
                        self.next_item = self.next_item.max(key.1 + 1);
                    }
                }
                None => {
                    self.rows.remove(&key);
                    if key.0 == ITEMS {
                        self.deleted_items.push(key.1);
                    }
                }
            }
            self.last_writer.insert(key, spec.id);
            written.push(key);
        }
        self.recent.push_front(written);
        self.recent.truncate(RECENT_TXNS);
    }

    fn existing(&self, table: TableId) -> Vec<u64> {
        self.rows.range((table, 0)..=(table, u64::MAX)).map(|((_, k), _)| *k).collect()
    }

    /// One of `candidates`: mostly a row a recent transaction wrote.
    fn pick(&self, rng: &mut ChaCha8Rng, table: TableId, candidates: &[u64]) -> Option<u64> {
        if candidates.is_empty() {
            return None;
        }
        if rng.gen_bool(0.75) {
            for written in &self.recent {
                let hits: Vec<u64> = written
                    .iter()
                    .filter(|(t, k)| *t == table && candidates.contains(k))
                    .map(|(_, k)| *k)
                    .collect();
                if !hits.is_empty() {
                    return Some(hits[rng.gen_range(0..hits.len())]);
                }
            }
        }
        Some(candidates[rng.gen_range(0..candidates.len())])
    }
}

/// A transaction being generated against the model.
struct TxnBuilder<'m> {
    model: &'m Model,
    spec: TxnSpec,
    staged: BTreeMap<Key, Option<Vec<u8>>>,
    digest: u64,
}

fn mix(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn words(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

impl<'m> TxnBuilder<'m> {
    fn new(model: &'m Model, id: u64, worker: u32) -> Self {
        let spec = TxnSpec { id, worker, ops: Vec::new(), deps: BTreeSet::new(), deletes_receipt: None };
        TxnBuilder { model, spec, staged: BTreeMap::new(), digest: 0xcbf2_9ce4_8422_2325 }
    }

    fn current(&self, key: Key) -> Option<Vec<u8>> {
        match self.staged.get(&key) {
            Some(staged) => staged.clone(),
            None => self.model.rows.get(&key).cloned(),
        }
    }

    fn touch(&mut self, key: Key) {
        if let Some(w) = self.model.last_writer.get(&key) {
            self.spec.deps.insert(*w);
        }
    }

    fn get(&mut self, key: Key) -> Option<Vec<u8>> {
        self.touch(key);
        let value = self.current(key);
        self.digest = mix(self.digest, &key.1.to_le_bytes());
        self.digest = mix(self.digest, value.as_deref().unwrap_or(b"none"));
        self.spec.ops.push(Op::Get { key, expect: value.clone() });
        value
    }

    fn put(&mut self, key: Key, row: Vec<u8>) {
        assert!(self.current(key).is_some(), "T{}: put of a missing row {key:?}", self.spec.id);
        self.touch(key);
        self.staged.insert(key, Some(row.clone()));
        self.spec.ops.push(Op::Put { key, row });
    }

    fn insert(&mut self, key: Key, row: Vec<u8>) {
        assert!(self.current(key).is_none(), "T{}: insert of an existing row {key:?}", self.spec.id);
        self.touch(key);
        self.staged.insert(key, Some(row.clone()));
        self.spec.ops.push(Op::Insert { key, row });
    }

    fn delete(&mut self, key: Key) {
        assert!(self.current(key).is_some(), "T{}: delete of a missing row {key:?}", self.spec.id);
        self.touch(key);
        self.staged.insert(key, None);
        self.spec.ops.push(Op::Delete { key });
    }

    fn counter_row(&self, value: u64) -> Vec<u8> {
        words(&[value, self.spec.id])
    }

    fn item_row(&self, key: u64, version: u64) -> Vec<u8> {
        let filler = mix(self.spec.id, &key.to_le_bytes());
        words(&[self.spec.id, version, key, filler, !filler])
    }

    /// Reads counter `c` and writes it one higher.
    fn bump(&mut self, c: u64) {
        let v = self.get((COUNTERS, c)).map_or(0, |r| u64::from_le_bytes(r[..8].try_into().expect("8")));
        let row = self.counter_row(v + 1);
        self.put((COUNTERS, c), row);
    }

    fn insert_new_item(&mut self, next_item: &mut u64) {
        let key = *next_item;
        *next_item += 1;
        let row = self.item_row(key, 0);
        self.insert((ITEMS, key), row);
    }

    /// Inserts its receipt and returns the transaction.
    fn finish(mut self) -> TxnSpec {
        let deleted = self.spec.deletes_receipt.unwrap_or(0);
        let row = words(&[self.spec.id, self.digest, deleted]);
        self.insert((RECEIPTS, self.spec.id), row);
        self.spec
    }
}

fn load(mut b: TxnBuilder<'_>) -> TxnSpec {
    for c in 0..N_COUNTERS {
        let row = b.counter_row(0);
        b.insert((COUNTERS, c), row);
    }
    b.finish()
}

/// Reads a counter, inserts `BULK_BLOBS` blobs (keyed by its id).
fn bulk_insert(mut b: TxnBuilder<'_>, rng: &mut ChaCha8Rng) -> TxnSpec {
    let m = b.model;
    let counters: Vec<u64> = (0..N_COUNTERS).collect();
    b.get((COUNTERS, m.pick(rng, COUNTERS, &counters).expect("counters")));
    for j in 0..BULK_BLOBS {
        let key = b.spec.id * BULK_BLOBS + j;
        let filler = mix(key, &b.spec.id.to_le_bytes());
        let mut row = words(&[b.spec.id]);
        row.extend((0..BLOB_BYTES - 8).map(|i| (filler >> (i % 8 * 8)) as u8 ^ i as u8));
        b.insert((BLOBS, key), row);
    }
    b.finish()
}

fn random_txn(mut b: TxnBuilder<'_>, rng: &mut ChaCha8Rng) -> TxnSpec {
    let m = b.model;
    let counters: Vec<u64> = (0..N_COUNTERS).collect();
    let items = m.existing(ITEMS);
    let mut next_item = m.next_item;
    let kind = rng.gen_range(0..100);
    match kind {
        // Read two counters, write both: RAW and WAW on their last writers.
        0..30 => {
            let a = m.pick(rng, COUNTERS, &counters).expect("counters");
            let b2 = (a + rng.gen_range(1..N_COUNTERS)) % N_COUNTERS;
            b.bump(a);
            b.bump(b2);
        }
        // Only reads (and its receipt): a pure read-after-write dependency.
        30..50 => {
            let c = m.pick(rng, COUNTERS, &counters).expect("counters");
            b.get((COUNTERS, c));
            if let Some(i) = m.pick(rng, ITEMS, &items) {
                b.get((ITEMS, i));
            }
        }
        // Update an item after reading it.
        50..65 if !items.is_empty() => {
            let i = m.pick(rng, ITEMS, &items).expect("items");
            let version =
                b.get((ITEMS, i)).map_or(0, |r| u64::from_le_bytes(r[8..16].try_into().expect("8")));
            let row = b.item_row(i, version + 1);
            b.put((ITEMS, i), row);
        }
        // Delete an item without reading it, and maybe an earlier receipt.
        65..82 if !items.is_empty() => {
            let i = m.pick(rng, ITEMS, &items).expect("items");
            b.delete((ITEMS, i));
            let id = b.spec.id;
            let receipts: Vec<u64> =
                m.existing(RECEIPTS).into_iter().filter(|r| *r + RECEIPT_WINDOW >= id).collect();
            if rng.gen_bool(0.6) {
                if let Some(r) = m.pick(rng, RECEIPTS, &receipts) {
                    b.delete((RECEIPTS, r));
                    b.spec.deletes_receipt = Some(r);
                }
            }
        }
        // Insert again an item deleted earlier: ordered after the delete.
        82..90 if !m.deleted_items.is_empty() => {
            let i = m.deleted_items[rng.gen_range(0..m.deleted_items.len())];
            b.get((COUNTERS, m.pick(rng, COUNTERS, &counters).expect("counters")));
            let row = b.item_row(i, 0);
            b.insert((ITEMS, i), row);
        }
        // Insert new items after reading a counter.
        _ => {
            b.get((COUNTERS, m.pick(rng, COUNTERS, &counters).expect("counters")));
            for _ in 0..rng.gen_range(1..=2) {
                b.insert_new_item(&mut next_item);
            }
        }
    }
    let spec = b.finish();
    debug_assert!(spec.deps.iter().all(|d| *d < spec.id));
    spec
}

/// The rows `present` transactions of `plan` leave, applied in commit
/// order: per table, key to row.
pub(crate) fn expected_rows(plan: &SessionPlan, present: &BTreeSet<u64>) -> Vec<BTreeMap<u64, Vec<u8>>> {
    let mut tables = vec![BTreeMap::new(); TABLES.len()];
    for t in plan.txns.iter().filter(|t| present.contains(&t.id)) {
        for ((table, key), row) in t.writes() {
            let rows: &mut BTreeMap<u64, Vec<u8>> = &mut tables[table.0 as usize];
            match row {
                Some(r) => rows.insert(key, r.to_vec()),
                None => rows.remove(&key),
            };
        }
    }
    tables
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_deterministic_and_waves_put_one_transaction_per_log() {
        let logging = TxnLogging::Taurus { logs: 4 };
        let a = SessionPlan::generate(7, logging, 1, 100, 60);
        let b = SessionPlan::generate(7, logging, 1, 100, 60);
        assert_eq!(format!("{:?}", a.txns), format!("{:?}", b.txns));
        assert_eq!(a.ids(), 100..160);
        for w in &a.waves {
            let logs: BTreeSet<usize> = w.clone().map(|k| k % logging.logs()).collect();
            assert_eq!(logs.len(), w.len(), "one transaction per log in wave {w:?}");
        }
        let cross_log = a.txns.iter().filter(|t| t.deps.iter().any(|d| (t.id - d) % 4 != 0)).count();
        assert!(cross_log > 40, "most transactions depend on another log's: {cross_log}");
        let deletes = a.txns.iter().filter(|t| t.ops.iter().any(|o| matches!(o, Op::Delete { .. }))).count();
        assert!(deletes > 3, "{deletes} transactions delete");
    }
}
