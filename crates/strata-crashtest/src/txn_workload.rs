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
//! reopened. Every third session of a Taurus data line is anchored: after
//! the load, bulk transactions (three 2 KiB blobs each, in a fourth table)
//! take every log past the size where `strata-txn` places an LV anchor, so
//! the rest of the session logs records compressed against it (taurus.txt
//! 4.1, Algorithm 5). Command records are small: the command lines place
//! anchors every KiB instead (`crate::txn_driver::db_options`).
//!
//! Command logging: a transaction is a list of [`Step`]s (read a row; read
//! it and write it one higher; insert a fresh row; delete one; then its
//! receipt with the digest of what it read) that [`run_steps`] carries out
//! against anything with [`Rows`]. The generator runs the steps against the
//! model, which gives the spec's ops and rows; the command lines run the
//! same steps as the stored procedure [`WORKLOAD`] (the steps encoded in
//! its arguments), live and again at recovery. What a step writes depends
//! on what it read (a counter's value, an item's version, the receipt's
//! digest), so a command re-run against other rows than the model's
//! (a write-after-read dependency not honoured) leaves rows the oracle
//! counts as partial. The model also records, per transaction, the
//! readers since the last write of every row it writes (`TxnSpec::war`):
//! dependencies under command logging only.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Range;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_txn::{
    LogMode, LoggingKind, ProcId, Procedures, RowAccess, RowKey, TableId, TableSchema, TxnError,
};

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

/// One step of a transaction as its command states it (see [`run_steps`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Read the row (into the receipt's digest).
    Get(Key),
    /// Read the row, write it one higher: a counter's value, an item's version.
    Bump(Key),
    /// Insert the row its table starts with (counter 0, item version 0, a blob).
    Insert(Key),
    Delete(Key),
}

#[derive(Clone, Debug)]
pub(crate) struct TxnSpec {
    /// Its `TxnId`, also its receipt's key.
    pub id: u64,
    pub worker: u32,
    /// What it does, as its command states it.
    pub steps: Vec<Step>,
    /// What it does to the rows, as the model saw it: `steps` run against it.
    pub ops: Vec<Op>,
    /// Last writers of the rows it reads or writes (read-after-write,
    /// write-after-write).
    pub deps: BTreeSet<u64>,
    /// Transactions that read a row it writes since that row's last write
    /// (write-after-read: a dependency when commands are logged).
    pub war: BTreeSet<u64>,
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
    /// Whether write-after-read dependencies count (command logging).
    pub counts_war: bool,
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

    /// Whether session `index` is anchored: Taurus data lines only, every third.
    pub fn anchored(logging: TxnLogging, index: usize) -> bool {
        matches!(logging.kind(), LoggingKind::Taurus { .. })
            && logging.mode() == LogMode::Data
            && index % 3 == 2
    }

    /// Session `index` of seed `seed`: `txns` transactions (at least 2)
    /// numbered from `first_id`; an anchored one has bulk transactions
    /// first (after the load).
    pub fn generate(seed: u64, logging: TxnLogging, index: usize, first_id: u64, txns: usize) -> Self {
        let mut rng =
            ChaCha8Rng::seed_from_u64(seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let recent_reads = logging.mode() == LogMode::Command;
        let mut model = Model { next_item: FIRST_ITEM, recent_reads, ..Default::default() };
        let workers = logging.workers() as u64;
        let logs = logging.logs();
        let bulk = if SessionPlan::anchored(logging, index) { BULK_PER_LOG * logs } else { 0 };
        let total = txns.max(2) + bulk;
        let specs: Vec<TxnSpec> = (0..total as u64)
            .map(|k| {
                let id = first_id + k;
                let steps = match k as usize {
                    0 => load(),
                    k if k <= bulk => bulk_insert(&model, id, &mut rng),
                    _ => random_txn(&model, id, &mut rng),
                };
                let spec = TxnBuilder::run(&model, id, (k % workers) as u32, steps);
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
        let counts_war = logging.mode() == LogMode::Command;
        SessionPlan { index, txns: specs, waves, reopen_after_wave, counts_war }
    }
}

/// The database as the transactions so far left it.
#[derive(Default)]
struct Model {
    rows: BTreeMap<Key, Vec<u8>>,
    last_writer: BTreeMap<Key, u64>,
    /// Per row: the transactions that read it since its last write.
    readers: BTreeMap<Key, BTreeSet<u64>>,
    /// Rows written (and, with `recent_reads`, read) by the last few
    /// transactions, newest first.
    recent: VecDeque<Vec<Key>>,
    /// Command lines: a transaction prefers rows recent ones read as well
    /// as wrote, so that writes after reads (WAR) fall within a wave.
    recent_reads: bool,
    deleted_items: Vec<u64>,
    next_item: u64,
}

impl Model {
    fn apply(&mut self, spec: &TxnSpec) {
        let mut written = Vec::new();
        for op in &spec.ops {
            if let Op::Get { key, .. } = op {
                self.readers.entry(*key).or_default().insert(spec.id);
                if self.recent_reads {
                    written.push(*key);
                }
            }
        }
        for (key, row) in spec.writes() {
            self.readers.remove(&key);
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

    /// One of `candidates`: mostly a row a recent transaction wrote (or read).
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

/// Where [`run_steps`] reads and writes rows: the model (generating a
/// spec) or a transaction (the stored procedure).
pub(crate) trait Rows {
    type Error;
    fn get(&mut self, key: Key) -> Result<Option<Vec<u8>>, Self::Error>;
    fn put(&mut self, key: Key, row: Vec<u8>) -> Result<(), Self::Error>;
    fn insert(&mut self, key: Key, row: Vec<u8>) -> Result<(), Self::Error>;
    fn delete(&mut self, key: Key) -> Result<(), Self::Error>;
}

const DIGEST_START: u64 = 0xcbf2_9ce4_8422_2325;

fn mix(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn words(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn word(row: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(row[8 * at..8 * at + 8].try_into().expect("8 bytes"))
}

/// A counter row of transaction `id`.
fn counter_row(id: u64, value: u64) -> Vec<u8> {
    words(&[value, id])
}

/// An item row of transaction `id`.
fn item_row(id: u64, key: u64, version: u64) -> Vec<u8> {
    let filler = mix(id, &key.to_le_bytes());
    words(&[id, version, key, filler, !filler])
}

/// The row [`Step::Insert`] gives `key` in transaction `id`.
fn fresh_row(id: u64, (table, key): Key) -> Vec<u8> {
    match table {
        COUNTERS => counter_row(id, 0),
        BLOBS => {
            let filler = mix(key, &id.to_le_bytes());
            let mut row = words(&[id]);
            row.extend((0..BLOB_BYTES - 8).map(|i| (filler >> (i % 8 * 8)) as u8 ^ i as u8));
            row
        }
        _ => item_row(id, key, 0),
    }
}

/// The row [`Step::Bump`] writes over `old` in transaction `id`: a counter
/// one higher, an item one version later (from 0 if the read found none).
fn bumped_row(id: u64, (table, key): Key, old: Option<&[u8]>) -> Vec<u8> {
    match table {
        COUNTERS => counter_row(id, old.map_or(0, |r| word(r, 0)) + 1),
        _ => item_row(id, key, old.map_or(0, |r| word(r, 1)) + 1),
    }
}

/// The receipt a transaction whose `steps` are these deletes, if any.
fn deleted_receipt(steps: &[Step]) -> Option<u64> {
    steps.iter().find_map(|s| match s {
        Step::Delete((RECEIPTS, r)) => Some(*r),
        _ => None,
    })
}

/// Carries out transaction `id`'s `steps` against `rows`, then inserts its
/// receipt: its id, the digest of every row it read (key and image), the
/// receipt it deleted. What it writes is a function of `id`, the steps
/// and what it read: deterministic, as a stored procedure must be.
pub(crate) fn run_steps<R: Rows>(rows: &mut R, id: u64, steps: &[Step]) -> Result<(), R::Error> {
    let mut digest = DIGEST_START;
    let mut read = |rows: &mut R, key: Key| -> Result<Option<Vec<u8>>, R::Error> {
        let value = rows.get(key)?;
        digest = mix(digest, &key.1.to_le_bytes());
        digest = mix(digest, value.as_deref().unwrap_or(b"none"));
        Ok(value)
    };
    for &step in steps {
        match step {
            Step::Get(key) => {
                read(rows, key)?;
            }
            Step::Bump(key) => {
                let old = read(rows, key)?;
                rows.put(key, bumped_row(id, key, old.as_deref()))?;
            }
            Step::Insert(key) => rows.insert(key, fresh_row(id, key))?,
            Step::Delete(key) => rows.delete(key)?,
        }
    }
    let deleted = deleted_receipt(steps).unwrap_or(0);
    rows.insert((RECEIPTS, id), words(&[id, digest, deleted]))
}

/// The workload's one stored procedure: [`run_steps`] with the arguments
/// of [`command_args`].
pub(crate) const WORKLOAD: ProcId = ProcId(0x7a16);

/// The procedures every database of the lines opens with.
pub(crate) fn procedures() -> Procedures {
    let mut p = Procedures::new();
    p.register(WORKLOAD, |txn, args| {
        let (id, steps) =
            decode_command(args).map_err(|why| TxnError::Options(format!("workload command: {why}")))?;
        run_steps(&mut TxnRows(txn), id, &steps)
    });
    p
}

const STEP_GET: u64 = 1;
const STEP_BUMP: u64 = 2;
const STEP_INSERT: u64 = 3;
const STEP_DELETE: u64 = 4;

/// The arguments of [`WORKLOAD`] for transaction `id`: words `id`, the
/// number of steps, then per step its kind and table (`kind | table << 8`)
/// and its key.
pub(crate) fn command_args(id: u64, steps: &[Step]) -> Vec<u8> {
    let mut w = vec![id, steps.len() as u64];
    for step in steps {
        let (kind, (table, key)) = match *step {
            Step::Get(k) => (STEP_GET, k),
            Step::Bump(k) => (STEP_BUMP, k),
            Step::Insert(k) => (STEP_INSERT, k),
            Step::Delete(k) => (STEP_DELETE, k),
        };
        w.extend([kind | u64::from(table.0) << 8, key]);
    }
    words(&w)
}

/// Why [`decode_command`] refused the arguments of [`WORKLOAD`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum CommandArgsError {
    /// Not a whole number of words, or shorter than the id and the count.
    Length { bytes: usize },
    /// The step count does not match the length.
    StepCount { steps: u64, bytes: usize },
    /// A step of no known kind.
    StepKind { step: usize, kind: u64 },
}

impl std::fmt::Display for CommandArgsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandArgsError::Length { bytes } => write!(f, "{bytes} bytes of arguments"),
            CommandArgsError::StepCount { steps, bytes } => write!(f, "{steps} steps in {bytes} bytes"),
            CommandArgsError::StepKind { step, kind } => write!(f, "step {step} of kind {kind}"),
        }
    }
}

fn decode_command(args: &[u8]) -> Result<(u64, Vec<Step>), CommandArgsError> {
    if args.len() < 16 || !args.len().is_multiple_of(8) {
        return Err(CommandArgsError::Length { bytes: args.len() });
    }
    let (id, n) = (word(args, 0), word(args, 1));
    if u64::try_from(args.len() / 16 - 1).ok() != Some(n) {
        return Err(CommandArgsError::StepCount { steps: n, bytes: args.len() });
    }
    (0..n as usize)
        .map(|i| {
            let (head, key) = (word(args, 2 + 2 * i), word(args, 3 + 2 * i));
            let k = (TableId((head >> 8) as u32), key);
            match head & 0xff {
                STEP_GET => Ok(Step::Get(k)),
                STEP_BUMP => Ok(Step::Bump(k)),
                STEP_INSERT => Ok(Step::Insert(k)),
                STEP_DELETE => Ok(Step::Delete(k)),
                kind => Err(CommandArgsError::StepKind { step: i, kind }),
            }
        })
        .collect::<Result<_, _>>()
        .map(|steps| (id, steps))
}

/// A transaction as [`Rows`].
pub(crate) struct TxnRows<'t>(pub &'t mut dyn RowAccess);

impl Rows for TxnRows<'_> {
    type Error = TxnError;
    fn get(&mut self, (table, key): Key) -> Result<Option<Vec<u8>>, TxnError> {
        self.0.get(table, RowKey(key))
    }
    fn put(&mut self, (table, key): Key, row: Vec<u8>) -> Result<(), TxnError> {
        self.0.put(table, RowKey(key), &row)
    }
    fn insert(&mut self, (table, key): Key, row: Vec<u8>) -> Result<(), TxnError> {
        self.0.insert(table, RowKey(key), &row)
    }
    fn delete(&mut self, (table, key): Key) -> Result<(), TxnError> {
        self.0.delete(table, RowKey(key))
    }
}

/// A transaction being generated against the model: its steps run
/// against the model's rows, recording the ops and dependencies.
struct TxnBuilder<'m> {
    model: &'m Model,
    spec: TxnSpec,
    staged: BTreeMap<Key, Option<Vec<u8>>>,
}

impl Rows for TxnBuilder<'_> {
    type Error = std::convert::Infallible;

    fn get(&mut self, key: Key) -> Result<Option<Vec<u8>>, Self::Error> {
        self.touch(key);
        let value = self.current(key);
        self.spec.ops.push(Op::Get { key, expect: value.clone() });
        Ok(value)
    }

    fn put(&mut self, key: Key, row: Vec<u8>) -> Result<(), Self::Error> {
        assert!(self.current(key).is_some(), "T{}: put of a missing row {key:?}", self.spec.id);
        self.write(key, Some(row.clone()));
        self.spec.ops.push(Op::Put { key, row });
        Ok(())
    }

    fn insert(&mut self, key: Key, row: Vec<u8>) -> Result<(), Self::Error> {
        assert!(self.current(key).is_none(), "T{}: insert of an existing row {key:?}", self.spec.id);
        self.write(key, Some(row.clone()));
        self.spec.ops.push(Op::Insert { key, row });
        Ok(())
    }

    fn delete(&mut self, key: Key) -> Result<(), Self::Error> {
        assert!(self.current(key).is_some(), "T{}: delete of a missing row {key:?}", self.spec.id);
        self.write(key, None);
        self.spec.ops.push(Op::Delete { key });
        Ok(())
    }
}

impl<'m> TxnBuilder<'m> {
    /// Transaction `id` of `worker` doing `steps` against `model`.
    fn run(model: &'m Model, id: u64, worker: u32, steps: Vec<Step>) -> TxnSpec {
        let spec = TxnSpec {
            id,
            worker,
            steps: Vec::new(),
            ops: Vec::new(),
            deps: BTreeSet::new(),
            war: BTreeSet::new(),
            deletes_receipt: deleted_receipt(&steps),
        };
        let mut b = TxnBuilder { model, spec, staged: BTreeMap::new() };
        match run_steps(&mut b, id, &steps) {
            Ok(()) => {}
            Err(never) => match never {},
        }
        b.spec.steps = steps;
        debug_assert!(b.spec.deps.iter().chain(&b.spec.war).all(|d| *d < id));
        b.spec
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

    /// A write: after the row's last writer (WAW) and, under command
    /// logging, after the row's readers since (WAR).
    fn write(&mut self, key: Key, row: Option<Vec<u8>>) {
        self.touch(key);
        if let Some(readers) = self.model.readers.get(&key) {
            self.spec.war.extend(readers.iter().filter(|r| **r != self.spec.id));
        }
        self.staged.insert(key, row);
    }
}

/// The first transaction: every counter at 0.
fn load() -> Vec<Step> {
    (0..N_COUNTERS).map(|c| Step::Insert((COUNTERS, c))).collect()
}

/// Reads a counter, inserts `BULK_BLOBS` blobs (keyed by its id).
fn bulk_insert(m: &Model, id: u64, rng: &mut ChaCha8Rng) -> Vec<Step> {
    let counters: Vec<u64> = (0..N_COUNTERS).collect();
    let mut steps = vec![Step::Get((COUNTERS, m.pick(rng, COUNTERS, &counters).expect("counters")))];
    steps.extend((0..BULK_BLOBS).map(|j| Step::Insert((BLOBS, id * BULK_BLOBS + j))));
    steps
}

fn random_txn(m: &Model, id: u64, rng: &mut ChaCha8Rng) -> Vec<Step> {
    let counters: Vec<u64> = (0..N_COUNTERS).collect();
    let items = m.existing(ITEMS);
    let mut next_item = m.next_item;
    let mut steps = Vec::new();
    let kind = rng.gen_range(0..100);
    match kind {
        // Read two counters, write both: RAW and WAW on their last writers.
        0..30 => {
            let a = m.pick(rng, COUNTERS, &counters).expect("counters");
            let b2 = (a + rng.gen_range(1..N_COUNTERS)) % N_COUNTERS;
            steps.extend([Step::Bump((COUNTERS, a)), Step::Bump((COUNTERS, b2))]);
        }
        // Only reads (and its receipt): a pure read-after-write dependency.
        30..50 => {
            let c = m.pick(rng, COUNTERS, &counters).expect("counters");
            steps.push(Step::Get((COUNTERS, c)));
            if let Some(i) = m.pick(rng, ITEMS, &items) {
                steps.push(Step::Get((ITEMS, i)));
            }
        }
        // Update an item after reading it.
        50..65 if !items.is_empty() => {
            steps.push(Step::Bump((ITEMS, m.pick(rng, ITEMS, &items).expect("items"))));
        }
        // Delete an item without reading it, and maybe an earlier receipt.
        65..82 if !items.is_empty() => {
            steps.push(Step::Delete((ITEMS, m.pick(rng, ITEMS, &items).expect("items"))));
            let receipts: Vec<u64> =
                m.existing(RECEIPTS).into_iter().filter(|r| *r + RECEIPT_WINDOW >= id).collect();
            if rng.gen_bool(0.6) {
                if let Some(r) = m.pick(rng, RECEIPTS, &receipts) {
                    steps.push(Step::Delete((RECEIPTS, r)));
                }
            }
        }
        // Insert again an item deleted earlier: ordered after the delete.
        82..90 if !m.deleted_items.is_empty() => {
            let i = m.deleted_items[rng.gen_range(0..m.deleted_items.len())];
            steps.push(Step::Get((COUNTERS, m.pick(rng, COUNTERS, &counters).expect("counters"))));
            steps.push(Step::Insert((ITEMS, i)));
        }
        // Insert new items after reading a counter.
        _ => {
            steps.push(Step::Get((COUNTERS, m.pick(rng, COUNTERS, &counters).expect("counters"))));
            for _ in 0..rng.gen_range(1..=2) {
                steps.push(Step::Insert((ITEMS, next_item)));
                next_item += 1;
            }
        }
    }
    steps
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

    /// A transaction's command re-run as the stored procedure (here on a
    /// database without a log, one transaction after the other) writes
    /// exactly the rows the model gave its spec, and the arguments decode
    /// to its steps.
    #[test]
    fn the_procedure_writes_what_the_model_says() {
        use strata_txn::{LogDeviceKind, TxnDb, TxnDbOptions, WorkerId};
        let logging = TxnLogging::TaurusCommand { logs: 2 };
        let plan = SessionPlan::generate(11, logging, 0, 1, 80);
        let mut o = TxnDbOptions::new(LoggingKind::None, LogDeviceKind::Regions(Vec::new()), 4);
        o.logging.mode = LogMode::Command;
        let (db, _) = TxnDb::open_with(&o, schemas(), procedures()).unwrap();
        for t in &plan.txns {
            let args = command_args(t.id, &t.steps);
            assert_eq!(decode_command(&args).unwrap(), (t.id, t.steps.clone()));
            db.run(WorkerId(t.worker), WORKLOAD, &args).unwrap();
        }
        let want = expected_rows(&plan, &plan.ids().collect());
        for (i, table) in TABLES.iter().enumerate() {
            let got: BTreeMap<u64, Vec<u8>> = db.rows(*table).into_iter().map(|(k, v)| (k.0, v)).collect();
            assert_eq!(got, want[i], "table {i}");
        }
        assert!(
            matches!(decode_command(&args_with_kind(9)), Err(CommandArgsError::StepKind { kind: 9, .. })),
            "an unknown step kind is refused"
        );
    }

    fn args_with_kind(kind: u64) -> Vec<u8> {
        words(&[1, 1, kind, 0])
    }

    /// Command lines: within waves, transactions overwrite rows that an
    /// earlier one of another log only read (a write-after-read and no
    /// other dependency), so a lost WAR dependency shows in the images.
    #[test]
    fn command_sessions_put_writes_after_reads_in_one_wave() {
        let logging = TxnLogging::TaurusCommand { logs: 2 };
        for seed in [3, 0x5eed_0016] {
            let plan = SessionPlan::generate(seed, logging, 0, 1, 120);
            assert!(plan.counts_war);
            let pure_war = plan
                .waves
                .iter()
                .filter(|w| w.start <= plan.waves[plan.reopen_after_wave].start)
                .flat_map(|w| w.clone().flat_map(move |a| (a + 1..w.end).map(move |b| (a, b))))
                .filter(|&(a, b)| {
                    let (r, w) = (&plan.txns[a], &plan.txns[b]);
                    w.war.contains(&r.id) && !w.deps.contains(&r.id)
                })
                .count();
            assert!(pure_war >= 3, "seed {seed}: {pure_war} pure WAR pairs within waves before the reopen");
        }
        let data = SessionPlan::generate(3, TxnLogging::Taurus { logs: 2 }, 0, 1, 60);
        assert!(!data.counts_war && data.txns.iter().any(|t| !t.war.is_empty()), "recorded, not counted");
    }
}
