//! FIR's crash lines (issue 17; fir.txt 4.2-4.4) on the PMem crash
//! simulator: a seeded sequence of transactions of inserts, updates and
//! deletes on two workers' regions, each committed durably through group
//! commit (taken by the committing thread: one thread, deterministic) and
//! acknowledged when `commit_durably` returns; halfway, a clean restart.
//!
//! - `fir-commit`: content persisted in place, LCTT entries, group commit.
//! - `fir-checkpoint`: the same with a checkpoint (full, incremental or the
//!   cost model's choice, in turn) taken in the middle of every sixth
//!   transaction, between its writes and its end, so checkpoints meet
//!   uncommitted versions and recovery starts from them; every other such
//!   transaction then aborts instead of committing.
//!
//! Oracle (DESIGN.md section 3): transactions commit one after another,
//! so after a crash the rows must equal the model after the acknowledged
//! ones, or after one more (the one in flight). Equal to an earlier prefix:
//! `lost` (the acknowledged transactions missing); equal to none: `partial`
//! (a transaction partly present, or one that never committed). A
//! recovered database must also take a new transaction.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_fir::{CheckpointKind, FirDb, FirOptions, PlantedBug, RunOptions};
use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};
use strata_txn::{RowKey, TableId, TableSchema, WorkerId};

use crate::error::{CheckResult, CrashCheckError};
use crate::oracle::{AckLog, OracleCounts};
use crate::pmem_harness::PmemCrashProtocol;

const T: TableId = TableId(0);
const KEYS: u64 = 12;

/// Which line.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FirLine {
    Commit,
    Checkpoint,
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u64, u64),
    Put(u64, u64),
    Delete(u64),
}

/// One transaction of the workload.
#[derive(Clone, Debug)]
struct Step {
    worker: u32,
    ops: Vec<Op>,
    /// A checkpoint between its writes and its end.
    checkpoint: Option<CheckpointKind>,
    /// It aborts after its writes (and checkpoint) instead of committing.
    abort: bool,
}

pub struct FirPmemCrash {
    line: FirLine,
    seed: u64,
    steps: Vec<Step>,
    /// The rows after each prefix of the committed steps (`states[0]`:
    /// none); committed step c is acknowledged as `TxnId(c)`.
    states: Vec<BTreeMap<u64, u64>>,
    planted: PlantedBug,
}

fn schemas() -> Vec<TableSchema> {
    vec![TableSchema { name: "t".into(), row_bytes: 8 }]
}

fn options() -> FirOptions {
    FirOptions { workers: 2, blocks_per_table: 2, table_blocks: Vec::new(), checkpoint_keys: 64 }
}

fn run_options(planted: PlantedBug) -> RunOptions {
    RunOptions { commit_thread: false, rebuild_threads: 1, planted_bug: planted, ..RunOptions::default() }
}

impl FirPmemCrash {
    pub fn new(line: FirLine, seed: u64, txns: usize) -> Self {
        FirPmemCrash::with_planted_bug(line, seed, txns, PlantedBug::None)
    }

    /// The line with a bug planted in the engine (the oracle must catch it).
    pub fn with_planted_bug(line: FirLine, seed: u64, txns: usize, planted: PlantedBug) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut state = BTreeMap::new();
        let mut states = vec![state.clone()];
        let mut steps = Vec::with_capacity(txns);
        let kinds = [CheckpointKind::Full, CheckpointKind::Incremental, CheckpointKind::Auto];
        for i in 0..txns {
            let checkpoint = (line == FirLine::Checkpoint && i % 6 == 3).then(|| kinds[(i / 6) % 3]);
            let abort = checkpoint.is_some() && (i / 6) % 2 == 1;
            let mut next = state.clone();
            let mut ops = Vec::new();
            let mut touched = BTreeSet::new();
            for n in 0..rng.gen_range(1..=3u64) {
                let key = rng.gen_range(0..KEYS);
                if !touched.insert(key) {
                    continue;
                }
                let value = (i as u64 + 1) << 8 | n;
                let op = match (next.contains_key(&key), rng.gen_range(0..3)) {
                    (false, _) => Op::Insert(key, value),
                    (true, 0) => Op::Delete(key),
                    (true, _) => Op::Put(key, value),
                };
                match op {
                    Op::Insert(k, v) | Op::Put(k, v) => next.insert(k, v),
                    Op::Delete(k) => next.remove(&k),
                };
                ops.push(op);
            }
            steps.push(Step { worker: (i % 2) as u32, ops, checkpoint, abort });
            if !abort {
                state = next;
                states.push(state.clone());
            }
        }
        FirPmemCrash { line, seed, steps, states, planted }
    }
}

impl PmemCrashProtocol for FirPmemCrash {
    fn name(&self) -> String {
        match self.line {
            FirLine::Commit => "fir-commit".into(),
            FirLine::Checkpoint => "fir-checkpoint".into(),
        }
    }

    fn region_len(&self) -> u64 {
        FirDb::region_bytes(&schemas(), &options())
    }

    fn run(&self, region: &Arc<Region>, acks: &AckLog) {
        let seed = self.seed;
        let run = run_options(self.planted);
        let mut db = FirDb::create_with(region.clone(), &schemas(), &options(), &run)
            .unwrap_or_else(|e| panic!("seed {seed}: create: {e}"));
        let mut committed = 0;
        for (i, step) in self.steps.iter().enumerate() {
            if i == self.steps.len() / 2 {
                drop(db);
                db = FirDb::open_with(region.clone(), &schemas(), &run)
                    .unwrap_or_else(|e| panic!("seed {seed}: reopen: {e}"))
                    .0;
            }
            let mut t = db.begin(WorkerId(step.worker)).expect("a worker");
            for op in &step.ops {
                let r = match *op {
                    Op::Insert(k, v) => t.insert(T, RowKey(k), &v.to_le_bytes()),
                    Op::Put(k, v) => t.put(T, RowKey(k), &v.to_le_bytes()),
                    Op::Delete(k) => t.delete(T, RowKey(k)),
                };
                r.unwrap_or_else(|e| panic!("seed {seed} step {i}: {op:?}: {e}"));
            }
            if let Some(kind) = step.checkpoint {
                db.checkpoint(kind).unwrap_or_else(|e| panic!("seed {seed} step {i}: checkpoint: {e}"));
            }
            if step.abort {
                t.abort();
                continue;
            }
            t.commit_durably().unwrap_or_else(|e| panic!("seed {seed} step {i}: commit: {e}"));
            committed += 1;
            acks.ack(TxnId(committed));
        }
    }

    fn recover_and_check(&self, region: &Arc<Region>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let k = acked.len();
        if acked.iter().map(|t| t.0).ne(1..=k as u64) {
            return Err(CrashCheckError::inconsistent(format!("acknowledgements out of order: {acked:?}")));
        }
        if region.load_u64(RegionOffset(0)) != strata_fir::layout::MAGIC {
            // The crash came before the format finished: nothing acknowledged yet.
            let lost = k as u64;
            return Ok((
                OracleCounts { lost, ..Default::default() },
                (lost > 0).then(|| "no database".to_string()),
            ));
        }
        let (db, _) = FirDb::open_with(region.clone(), &schemas(), &run_options(PlantedBug::None))
            .map_err(CrashCheckError::step("FirDb::open"))?;
        let rows = db.rows(T).map_err(CrashCheckError::step("rows"))?;
        let got: BTreeMap<u64, u64> = rows
            .iter()
            .map(|(k, v)| (k.0, u64::from_le_bytes(v[..].try_into().expect("8-byte rows"))))
            .collect();
        let mut counts = OracleCounts::default();
        let mut detail = None;
        if got != self.states[k] && self.states.get(k + 1) != Some(&got) {
            match self.states[..k].iter().rposition(|s| *s == got) {
                Some(j) => counts.lost = (k - j) as u64,
                None => counts.partial = 1,
            }
            detail = Some(format!("after {k} acknowledged transactions the rows are {got:?}"));
        }
        // The recovered database takes a new transaction.
        let mut t = db.begin(WorkerId(0)).map_err(CrashCheckError::step("begin"))?;
        let key = RowKey(KEYS + 1);
        t.insert(T, key, &7u64.to_le_bytes()).map_err(CrashCheckError::step("insert after recovery"))?;
        t.commit_durably().map_err(CrashCheckError::step("commit after recovery"))?;
        if db.rows(T).map_err(CrashCheckError::step("rows"))?.get(&key) != Some(&7u64.to_le_bytes().to_vec())
        {
            return Err(CrashCheckError::inconsistent("a transaction after recovery is missing"));
        }
        Ok((counts, detail))
    }
}
