//! FIR against a `BTreeMap` model, with crash-restarts: random
//! transactions of inserts, updates, deletes and reads on one worker,
//! committed durably, committed without waiting, or aborted; at random
//! points a full or incremental checkpoint, or a crash (the persisted
//! image) and a reopen. After each restart
//! the tables equal the model after some prefix of the commits that
//! includes every acknowledged one. Seeded; the seed is printed on failure.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_fir::{CheckpointKind, FirDb, FirError, FirOptions};
use strata_pmem::Region;
use strata_txn::{RowKey, TableId, TableSchema, WorkerId};

const TABLES: u32 = 2;
const KEYS: u64 = 24;

fn schemas() -> Vec<TableSchema> {
    vec![TableSchema { name: "a".into(), row_bytes: 8 }, TableSchema { name: "b".into(), row_bytes: 20 }]
}

type Model = BTreeMap<(u32, u64), Vec<u8>>;

fn state(db: &FirDb) -> Model {
    let mut m = Model::new();
    for t in 0..TABLES {
        for (k, r) in db.rows(TableId(t)).unwrap() {
            m.insert((t, k.0), r);
        }
    }
    m
}

/// What one seeded run did and saw.
#[derive(Debug, Default)]
struct Stats {
    /// Crash-restarts whose recovered rows matched a prefix of the commits.
    restarts: u32,
    /// Of those, restarts that kept some unacknowledged commits.
    restarts_keeping_unacked: u32,
    checkpoints: u32,
    acked_commits: u32,
    /// Rows at the end, once every commit is durable: the newest model's.
    final_rows: usize,
    final_matches: bool,
}

/// The commit prefix (newest first, the acknowledged model last) `got`
/// equals, as an index into that order.
fn matching_prefix(got: &Model, model: &Model, unacked: &[Model]) -> Option<usize> {
    unacked.iter().rev().chain(std::iter::once(model)).position(|m| m == got)
}

fn run(seed: u64) -> Stats {
    let mut stats = Stats::default();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let region = Arc::new(Region::sim(8 << 20));
    let mut db = FirDb::create(
        region,
        &schemas(),
        &FirOptions { workers: 1, blocks_per_table: 8, table_blocks: Vec::new(), checkpoint_keys: 4096 },
    )
    .unwrap();
    let rows = [8usize, 20];
    let mut model = Model::new();
    // The model after each commit since the last acknowledged one.
    let mut unacked: Vec<Model> = Vec::new();
    let mut last_ticket = None;
    for step in 0..400 {
        if rng.gen_bool(0.04) {
            let image = db.region().as_sim().unwrap().persistent_image();
            drop(db);
            let (reopened, report) =
                FirDb::open(Arc::new(Region::sim_from_image(image)), &schemas()).unwrap();
            db = reopened;
            let got = state(&db);
            let k = matching_prefix(&got, &model, &unacked).unwrap_or_else(|| {
                let diff: Vec<_> = got
                    .iter()
                    .filter(|(k, v)| model.get(k) != Some(v))
                    .map(|(k, _)| *k)
                    .chain(model.keys().filter(|k| !got.contains_key(k)).copied())
                    .collect();
                panic!(
                    "seed {seed} step {step}: recovered state matches no prefix of the {} unacknowledged commits; keys differing from the acknowledged model: {diff:?} ({report:?})",
                    unacked.len()
                )
            });
            stats.restarts += 1;
            stats.restarts_keeping_unacked += u32::from(k < unacked.len());
            model = got;
            unacked.clear();
            // A ticket of the crashed instance names a transaction the
            // reopened one may never reach: waiting on it would hang.
            last_ticket = None;
            continue;
        }
        if rng.gen_bool(0.05) {
            let kind = if rng.gen_bool(0.5) { CheckpointKind::Full } else { CheckpointKind::Incremental };
            db.checkpoint(kind).unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
            stats.checkpoints += 1;
            continue;
        }
        let mut t = db.begin(WorkerId(0)).unwrap();
        let mut next = unacked.last().unwrap_or(&model).clone();
        let mut ok = true;
        for _ in 0..rng.gen_range(1..5) {
            let table = rng.gen_range(0..TABLES);
            let key = rng.gen_range(0..KEYS);
            let row: Vec<u8> = (0..rows[table as usize]).map(|_| rng.gen()).collect();
            let (tid, rk) = (TableId(table), RowKey(key));
            let r = match rng.gen_range(0..4) {
                0 => t
                    .get(tid, rk)
                    .map(|got| assert_eq!(got.as_ref(), next.get(&(table, key)), "seed {seed} step {step}")),
                1 => t.insert(tid, rk, &row).map(|()| {
                    next.insert((table, key), row.clone());
                }),
                2 => t.put(tid, rk, &row).map(|()| {
                    next.insert((table, key), row.clone());
                }),
                _ => t.delete(tid, rk).map(|()| {
                    next.remove(&(table, key));
                }),
            };
            match r {
                Ok(()) => {}
                Err(FirError::NotFound { .. }) => {
                    assert!(!next.contains_key(&(table, key)), "seed {seed} step {step}")
                }
                Err(FirError::Duplicate { .. }) => {
                    assert!(next.contains_key(&(table, key)), "seed {seed} step {step}")
                }
                Err(e) => panic!("seed {seed} step {step}: {e}"),
            }
            if r.is_err() {
                ok = false;
                break;
            }
        }
        if !ok {
            continue;
        }
        match rng.gen_range(0..10) {
            0 => t.abort(),
            1..=4 => {
                let ticket = t.commit().unwrap();
                // A read-only one's ticket (txnId 0) waits for nothing.
                if ticket.txn != 0 {
                    last_ticket = Some(ticket);
                }
                unacked.push(next);
            }
            _ => {
                // A read-only transaction's acknowledgement says nothing of
                // the unacknowledged commits before it (it read none of
                // their writes: it would have waited for them).
                if t.commit_durably().unwrap().txn != 0 {
                    model = next;
                    unacked.clear();
                    stats.acked_commits += 1;
                }
            }
        }
    }
    // A transaction begun after every commit reads the newest model (its
    // reads wait for commits still in their group-commit batch).
    if let Some(ticket) = last_ticket.filter(|_| !unacked.is_empty()) {
        db.wait_committed(&ticket);
    }
    let mut reader = db.begin(WorkerId(0)).unwrap();
    let mut got = Model::new();
    for table in 0..TABLES {
        for key in 0..KEYS {
            if let Some(row) = reader.get(TableId(table), RowKey(key)).unwrap() {
                got.insert((table, key), row);
            }
        }
    }
    reader.commit().unwrap();
    stats.final_rows = got.len();
    stats.final_matches = got == *unacked.last().unwrap_or(&model);
    stats
}

#[test]
fn fir_matches_a_btreemap_across_crash_restarts() {
    let mut keeping_unacked = 0;
    for seed in (0..40u64).map(|s| 0xF1_0000 + s) {
        let stats = run(seed);
        assert!(stats.final_matches, "seed {seed}: the live tables differ from the model: {stats:?}");
        assert!(stats.restarts > 0, "seed {seed}: no crash-restart was checked: {stats:?}");
        assert!(stats.checkpoints > 0 && stats.acked_commits > 0, "seed {seed}: {stats:?}");
        assert!(stats.final_rows > 0, "seed {seed}: the run ended with empty tables: {stats:?}");
        keeping_unacked += stats.restarts_keeping_unacked;
    }
    // Some restart recovered commits nobody had waited for (durable by a
    // batch before the crash): the prefix rule, not only the acknowledged
    // model, was exercised.
    assert!(keeping_unacked > 0, "no restart kept an unacknowledged commit");
}
