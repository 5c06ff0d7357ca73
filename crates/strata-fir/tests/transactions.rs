//! FIR transactions: the table API, MVTO's rules, aborts, and recovery
//! after a crash (the oracle of DESIGN.md section 3: every acknowledged
//! transaction present, none partial, what is present closed under
//! dependencies).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_fir::{CheckpointKind, FirDb, FirError, FirOptions, RunOptions};
use strata_pmem::Region;
use strata_txn::{RowKey, TableId, TableSchema, WorkerId};

const T: TableId = TableId(0);

fn schemas() -> Vec<TableSchema> {
    vec![TableSchema { name: "accounts".into(), row_bytes: 8 }]
}

fn create(workers: u32) -> FirDb {
    let region = Arc::new(Region::sim(32 << 20));
    FirDb::create(
        region,
        &schemas(),
        &FirOptions { workers, blocks_per_table: 64, table_blocks: Vec::new(), checkpoint_keys: 4096 },
    )
    .unwrap()
}

fn row(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

fn val(r: Option<Vec<u8>>) -> Option<u64> {
    r.map(|r| u64::from_le_bytes(r.try_into().unwrap()))
}

#[test]
fn inserts_updates_deletes_and_own_writes() {
    let db = create(1);
    let w = WorkerId(0);
    let mut t = db.begin(w).unwrap();
    t.insert(T, RowKey(1), &row(10)).unwrap();
    t.insert(T, RowKey(2), &row(20)).unwrap();
    t.put(T, RowKey(1), &row(11)).unwrap();
    assert_eq!(val(t.get(T, RowKey(1)).unwrap()), Some(11), "its own newest write");
    t.commit_durably().unwrap();

    let mut t = db.begin(w).unwrap();
    t.delete(T, RowKey(2)).unwrap();
    assert_eq!(t.get(T, RowKey(2)).unwrap(), None, "its own delete");
    t.commit_durably().unwrap();
    assert_eq!(db.rows(T).unwrap().into_iter().collect::<Vec<_>>(), vec![(RowKey(1), row(11).to_vec())]);

    let mut t = db.begin(w).unwrap();
    assert!(matches!(t.put(T, RowKey(2), &row(1)), Err(FirError::NotFound { .. })));
    let mut t = db.begin(w).unwrap();
    assert!(matches!(t.insert(T, RowKey(1), &row(1)), Err(FirError::Duplicate { .. })));
    assert!(matches!(t.get(T, RowKey(1)), Err(FirError::Ended)), "a failed write aborts");
    let mut t = db.begin(w).unwrap();
    assert!(matches!(t.put(T, RowKey(1), &[0; 3]), Err(FirError::RowSize { got: 3, want: 8, .. })));
    t.put(T, RowKey(1), &row(99)).unwrap();
    t.abort();
    assert_eq!(db.rows(T).unwrap()[&RowKey(1)], row(11), "an abort leaves the committed row");
    assert!(matches!(db.begin(WorkerId(1)), Err(FirError::NoSuchWorker { worker: 1, workers: 1 })));
}

#[test]
fn mvto_orders_by_txn_id() {
    let db = create(2);
    let mut setup = db.begin(WorkerId(0)).unwrap();
    setup.insert(T, RowKey(1), &row(1)).unwrap();
    setup.commit_durably().unwrap();

    // An older reader keeps reading the version of its time while a newer
    // transaction's write is pending, and is not blocked by it.
    let mut old = db.begin(WorkerId(0)).unwrap();
    let mut new = db.begin(WorkerId(1)).unwrap();
    assert!(old.txn_id() < new.txn_id());
    new.put(T, RowKey(1), &row(2)).unwrap();
    assert_eq!(val(old.get(T, RowKey(1)).unwrap()), Some(1), "the older version");
    // The newer writer cannot also be overtaken: a later reader than the
    // write's txnId would need its uncommitted version, so it aborts.
    let mut later = db.begin(WorkerId(0)).unwrap();
    assert!(matches!(later.get(T, RowKey(1)), Err(FirError::Conflict { .. })));
    new.commit_durably().unwrap();
    assert_eq!(val(old.get(T, RowKey(1)).unwrap()), Some(1), "still its time's version");
    old.commit().unwrap();

    // A write below a newer read is refused (MVTO's write rule).
    let mut writer = db.begin(WorkerId(0)).unwrap();
    let mut reader = db.begin(WorkerId(1)).unwrap();
    assert_eq!(val(reader.get(T, RowKey(1)).unwrap()), Some(2));
    assert!(matches!(writer.put(T, RowKey(1), &row(3)), Err(FirError::Conflict { .. })));
    reader.commit().unwrap();
    // And an insert below a newer "absent" read.
    let mut writer = db.begin(WorkerId(0)).unwrap();
    let mut reader = db.begin(WorkerId(1)).unwrap();
    assert_eq!(reader.get(T, RowKey(5)).unwrap(), None);
    assert!(matches!(writer.insert(T, RowKey(5), &row(5)), Err(FirError::Conflict { .. })));
    reader.commit().unwrap();
    // A newer writer than the reader may insert.
    let mut writer = db.begin(WorkerId(0)).unwrap();
    writer.insert(T, RowKey(5), &row(5)).unwrap();
    writer.commit_durably().unwrap();
    assert_eq!(db.rows(T).unwrap()[&RowKey(5)], row(5));
}

#[test]
fn read_only_transactions_write_nothing_and_need_no_wait() {
    let db = create(1);
    let mut t = db.begin(WorkerId(0)).unwrap();
    assert_eq!(t.get(T, RowKey(4)).unwrap(), None);
    let ticket = t.commit().unwrap();
    assert_eq!(ticket.txn, 0);
    assert!(db.is_committed(&ticket));
}

/// Transfers between accounts on `workers` threads until stopped; the
/// acknowledged transfers (by txnId) go to `acked`.
fn transfers(
    db: &FirDb,
    workers: u32,
    accounts: u64,
    seed: u64,
    stop: &AtomicBool,
    acked: &Mutex<Vec<(u32, u64)>>,
) {
    std::thread::scope(|s| {
        for w in 0..workers {
            s.spawn(move || {
                let mut rng = ChaCha8Rng::seed_from_u64(seed ^ u64::from(w));
                while !stop.load(Ordering::Acquire) {
                    let (a, b) = (rng.gen_range(0..accounts), rng.gen_range(0..accounts));
                    if a == b {
                        continue;
                    }
                    let mut t = db.begin(WorkerId(w)).unwrap();
                    let mut step = || -> Result<(), FirError> {
                        let va = val(t.get(T, RowKey(a))?).unwrap();
                        let vb = val(t.get(T, RowKey(b))?).unwrap();
                        t.put(T, RowKey(a), &row(va - 1))?;
                        t.put(T, RowKey(b), &row(vb + 1))?;
                        Ok(())
                    };
                    match step() {
                        Ok(()) => {
                            let ticket = t.commit().unwrap();
                            db.wait_committed(&ticket);
                            acked.lock().unwrap().push((w, ticket.txn));
                        }
                        Err(FirError::Conflict { .. }) => {}
                        Err(e) => panic!("seed {seed}: {e}"),
                    }
                }
            });
        }
    });
}

#[test]
fn a_crash_keeps_every_acknowledged_transfer_and_no_partial_one() {
    for seed in [1u64, 2, 3] {
        let accounts = 20u64;
        let region = Arc::new(Region::sim(32 << 20));
        let db = FirDb::create(
            region.clone(),
            &schemas(),
            &FirOptions { workers: 2, blocks_per_table: 64, table_blocks: Vec::new(), checkpoint_keys: 4096 },
        )
        .unwrap();
        let mut t = db.begin(WorkerId(0)).unwrap();
        for k in 0..accounts {
            t.insert(T, RowKey(k), &row(1000)).unwrap();
        }
        t.commit_durably().unwrap();
        let stop = AtomicBool::new(false);
        let acked = Mutex::new(Vec::new());
        let image = std::thread::scope(|s| {
            s.spawn(|| transfers(&db, 2, accounts, seed, &stop, &acked));
            std::thread::sleep(std::time::Duration::from_millis(150));
            // The crash: what is persisted now, while transfers run.
            let acked_before: Vec<(u32, u64)> = acked.lock().unwrap().clone();
            let image = region.as_sim().unwrap().persistent_image();
            stop.store(true, Ordering::Release);
            (image, acked_before)
        });
        drop(db);
        let (image, acked_before) = image;
        assert!(acked_before.len() > 10, "seed {seed}: only {} transfers acknowledged", acked_before.len());
        let crashed = Arc::new(Region::sim_from_image(image));
        let (db, report) = FirDb::open(crashed.clone(), &schemas()).unwrap();
        let rows = db.rows(T).unwrap();
        assert_eq!(rows.len() as u64, accounts, "seed {seed}");
        let sum: u64 = rows.values().map(|r| u64::from_le_bytes(r[..].try_into().unwrap())).sum();
        assert_eq!(sum, 1000 * accounts, "seed {seed}: a transfer is partly present ({report:?})");
        // Every acknowledged transfer is kept: its worker's LCTT entry covers it.
        let lctt: Vec<u64> =
            (0..2).map(|w| crashed.load_u64(strata_pmem::RegionOffset(256 * (1 + w)))).collect();
        for (w, txn) in &acked_before {
            assert!(
                *txn <= lctt[*w as usize],
                "seed {seed}: acknowledged txn {txn} of worker {w} above its LCTT entry {lctt:?}"
            );
        }
        assert!(report.versions_kept >= acked_before.len() as u64 * 2, "seed {seed}: {report:?}");
        // The recovered database runs on, and recovers again.
        let mut t = db.begin(WorkerId(1)).unwrap();
        let v = val(t.get(T, RowKey(0)).unwrap()).unwrap();
        t.put(T, RowKey(0), &row(v + 5)).unwrap();
        t.commit_durably().unwrap();
        drop(db);
        let (db, _) = FirDb::open(crashed, &schemas()).unwrap();
        let sum: u64 =
            db.rows(T).unwrap().values().map(|r| u64::from_le_bytes(r[..].try_into().unwrap())).sum();
        assert_eq!(sum, 1000 * accounts + 5, "seed {seed}");
    }
}

fn crash(db: FirDb) -> FirDb {
    let image = db.region().as_sim().unwrap().persistent_image();
    drop(db);
    FirDb::open(Arc::new(Region::sim_from_image(image)), &schemas()).unwrap().0
}

#[test]
fn versions_span_blocks_and_recovery_walks_the_chain() {
    let db = create(1);
    let mut t = db.begin(WorkerId(0)).unwrap();
    t.insert(T, RowKey(1), &row(0)).unwrap();
    t.commit_durably().unwrap();
    // 5,000 versions of one key: three blocks of 2,048 in the region.
    for v in 1..5000u64 {
        let mut t = db.begin(WorkerId(0)).unwrap();
        t.put(T, RowKey(1), &row(v)).unwrap();
        if v % 500 == 0 {
            t.commit_durably().unwrap();
        } else {
            t.commit().unwrap();
        }
    }
    let mut t = db.begin(WorkerId(0)).unwrap();
    t.insert(T, RowKey(2), &row(7)).unwrap();
    t.commit_durably().unwrap();
    let image = db.region().as_sim().unwrap().persistent_image();
    drop(db);
    let (db, report) = FirDb::open(Arc::new(Region::sim_from_image(image)), &schemas()).unwrap();
    assert_eq!(report.versions_kept, 5001, "{report:?}");
    assert_eq!(report.keys, 2);
    let rows = db.rows(T).unwrap();
    assert_eq!((rows[&RowKey(1)].clone(), rows[&RowKey(2)].clone()), (row(4999).to_vec(), row(7).to_vec()));
}

#[test]
fn a_block_an_aborted_transaction_took_stays_usable_across_restarts() {
    // The first write of a region takes a block whose floor is its txnId;
    // after the abort and a restart, new txnIds must still reach that floor.
    let db = create(1);
    let mut t = db.begin(WorkerId(0)).unwrap();
    for _ in 0..10 {
        let mut ro = db.begin(WorkerId(0)).unwrap();
        ro.get(T, RowKey(9)).unwrap();
        ro.commit().unwrap();
    }
    let mut late = db.begin(WorkerId(0)).unwrap();
    late.insert(T, RowKey(1), &row(1)).unwrap();
    late.abort();
    t.get(T, RowKey(1)).unwrap();
    drop(t);
    let db = crash(db);
    let mut t = db.begin(WorkerId(0)).unwrap();
    t.insert(T, RowKey(1), &row(5)).unwrap();
    t.commit_durably().unwrap();
    let db = crash(db);
    assert_eq!(db.rows(T).unwrap()[&RowKey(1)], row(5), "the version in the aborted transaction's block");
}

#[test]
fn recovery_after_a_checkpoint_reads_only_the_versions_after_it() {
    let region = Arc::new(Region::sim(32 << 20));
    let options =
        FirOptions { workers: 2, blocks_per_table: 64, table_blocks: Vec::new(), checkpoint_keys: 10_000 };
    let db = FirDb::create(region, &schemas(), &options).unwrap();
    let mut t = db.begin(WorkerId(0)).unwrap();
    for k in 0..5000u64 {
        t.insert(T, RowKey(k), &row(k)).unwrap();
    }
    t.commit_durably().unwrap();
    let full = db.checkpoint(CheckpointKind::Full).unwrap();
    assert_eq!((full.kind, full.entries, full.copied), (CheckpointKind::Full, 5000, 0));
    // Ten updates, then an incremental checkpoint: their leaves from the
    // index, the rest copied from the full one.
    for k in 0..10u64 {
        let mut t = db.begin(WorkerId((k % 2) as u32)).unwrap();
        t.put(T, RowKey(k * 400), &row(1_000_000 + k)).unwrap();
        t.commit_durably().unwrap();
    }
    let inc = db.checkpoint(CheckpointKind::Incremental).unwrap();
    assert_eq!(inc.kind, CheckpointKind::Incremental);
    assert_eq!(inc.entries, 5000);
    assert!(inc.copied >= 5000 - 10 * 64 && inc.from_index <= 10 * 64, "{inc:?}");
    assert!(inc.ct > full.ct);
    // Three more updates and a delete after it; then a crash.
    for k in 0..3u64 {
        let mut t = db.begin(WorkerId(0)).unwrap();
        t.put(T, RowKey(k + 1), &row(7)).unwrap();
        t.commit_durably().unwrap();
    }
    let mut t = db.begin(WorkerId(1)).unwrap();
    t.delete(T, RowKey(4999)).unwrap();
    t.commit_durably().unwrap();
    let image = db.region().as_sim().unwrap().persistent_image();
    drop(db);
    for threads in [1, 2] {
        let region = Arc::new(Region::sim_from_image(image.clone()));
        let run = RunOptions { rebuild_threads: threads, ..RunOptions::default() };
        let (db, report) = FirDb::open_with(region, &schemas(), &run).unwrap();
        assert_eq!(report.checkpoint_ct, inc.ct);
        assert_eq!(report.checkpoint_entries, 5000);
        assert_eq!(report.versions_scanned, 4, "only the versions after the checkpoint: {report:?}");
        let rows = db.rows(T).unwrap();
        assert_eq!(rows.len(), 4999, "the delete after the checkpoint");
        assert_eq!(rows[&RowKey(400)], row(1_000_001));
        assert_eq!(rows[&RowKey(2)], row(7));
        assert_eq!(rows[&RowKey(10)], row(10));
        // The next incremental checkpoint lists what recovery found above CT.
        let next = db.checkpoint(CheckpointKind::Incremental).unwrap();
        assert_eq!(next.entries, 4999, "{next:?}");
    }
    // The Zen-style recovery scans every version and finds the same rows.
    let region = Arc::new(Region::sim_from_image(image));
    let run = RunOptions { scan_whole_heap: true, ..RunOptions::default() };
    let (db, report) = FirDb::open_with(region, &schemas(), &run).unwrap();
    assert_eq!((report.checkpoint_ct, report.checkpoint_entries), (0, 0));
    assert_eq!(report.versions_scanned, 5000 + 10 + 4, "{report:?}");
    let rows = db.rows(T).unwrap();
    assert_eq!((rows.len(), rows[&RowKey(400)].clone()), (4999, row(1_000_001).to_vec()));
}

#[test]
fn the_cost_model_takes_full_checkpoints_after_uniform_updates_and_incremental_after_skewed_ones() {
    let region = Arc::new(Region::sim(64 << 20));
    let options =
        FirOptions { workers: 1, blocks_per_table: 64, table_blocks: Vec::new(), checkpoint_keys: 20_000 };
    let db = FirDb::create(region, &schemas(), &options).unwrap();
    let keys = 8000u64;
    let mut t = db.begin(WorkerId(0)).unwrap();
    for k in 0..keys {
        t.insert(T, RowKey(k), &row(k)).unwrap();
    }
    t.commit_durably().unwrap();
    db.checkpoint(CheckpointKind::Full).unwrap();
    // Uniform: every key updated once.
    let mut t = db.begin(WorkerId(0)).unwrap();
    for k in 0..keys {
        t.put(T, RowKey(k), &row(k + 1)).unwrap();
    }
    t.commit_durably().unwrap();
    let uniform = db.checkpoint(CheckpointKind::Auto).unwrap();
    let m = uniform.estimate.unwrap();
    assert!(m.alpha < 0.1 && !m.incremental, "{uniform:?}");
    assert_eq!(uniform.kind, CheckpointKind::Full);
    // Skewed: three sampled keys take every update.
    let hot: Vec<u64> = (0..keys).filter(|k| strata_fir::cost::sampled(0, *k)).take(3).collect();
    for i in 0..300u64 {
        let mut t = db.begin(WorkerId(0)).unwrap();
        t.put(T, RowKey(hot[(i % 3) as usize]), &row(i)).unwrap();
        t.commit_durably().unwrap();
    }
    let skewed = db.checkpoint(CheckpointKind::Auto).unwrap();
    let m = skewed.estimate.unwrap();
    assert!(m.alpha > 0.9 && m.incremental, "{skewed:?}");
    assert_eq!(skewed.kind, CheckpointKind::Incremental);
    assert_eq!(skewed.entries, keys);
    assert!(skewed.copied > keys - 3 * 64, "{skewed:?}");
}

#[test]
fn after_a_clean_shutdown_recovery_reads_no_version() {
    let db = create(2);
    for k in 0..300u64 {
        let mut t = db.begin(WorkerId((k % 2) as u32)).unwrap();
        t.insert(T, RowKey(k), &row(k)).unwrap();
        t.commit().unwrap();
    }
    let region = db.region().clone();
    let closing = db.close().unwrap();
    assert_eq!(closing.entries, 300, "every queued commit waited for: {closing:?}");
    let (db, report) = FirDb::open(region, &schemas()).unwrap();
    assert_eq!((report.versions_scanned, report.checkpoint_entries), (0, 300), "{report:?}");
    assert_eq!(db.rows(T).unwrap().len(), 300);
}

#[test]
fn the_checkpoint_thread_checkpoints_while_transactions_run() {
    let region = Arc::new(Region::sim(32 << 20));
    let options =
        FirOptions { workers: 1, blocks_per_table: 64, table_blocks: Vec::new(), checkpoint_keys: 4096 };
    let run =
        RunOptions { checkpoint_every: Some(std::time::Duration::from_millis(5)), ..RunOptions::default() };
    let db = FirDb::create_with(region, &schemas(), &options, &run).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut k = 0u64;
    // Until a checkpoint holds some rows and more were committed after it.
    loop {
        let mut t = db.begin(WorkerId(0)).unwrap();
        t.insert(T, RowKey(k), &row(k)).unwrap();
        t.commit_durably().unwrap();
        k += 1;
        let image = db.region().as_sim().unwrap().persistent_image();
        let (reopened, report) = FirDb::open(Arc::new(Region::sim_from_image(image)), &schemas()).unwrap();
        assert_eq!(reopened.rows(T).unwrap().len() as u64, k, "every committed row after recovery");
        if report.checkpoint_entries > 0 && report.versions_scanned > 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no checkpoint in 10 s: {report:?}");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(db.take_checkpoint_error().is_none());
}

/// Two workers update hot keys, committing without waiting, while a third
/// thread takes incremental and full checkpoints back to back (writers
/// skip stamping keys stamped since the newest checkpoint began; a
/// checkpoint restamps the keys it finds pending). Once every commit is
/// durable, recovery from the last checkpoint and the versions after it
/// finds exactly the rows a transaction reads before the crash.
#[test]
fn concurrent_checkpoints_lose_no_update_of_a_running_transaction() {
    for seed in 0..12u64 {
        let region = Arc::new(Region::sim(64 << 20));
        let options =
            FirOptions { workers: 2, blocks_per_table: 256, table_blocks: Vec::new(), checkpoint_keys: 4096 };
        let db = FirDb::create(region, &schemas(), &options).unwrap();
        for k in 0..64 {
            let mut t = db.begin(WorkerId(0)).unwrap();
            t.insert(T, RowKey(k), &row(0)).unwrap();
            t.commit_durably().unwrap();
        }
        let stop = AtomicBool::new(false);
        let checkpoints = std::thread::scope(|s| {
            let checkpointer = s.spawn(|| {
                let mut n = 0u64;
                while !stop.load(Ordering::Acquire) {
                    let kind = if n % 5 == 4 { CheckpointKind::Full } else { CheckpointKind::Incremental };
                    db.checkpoint(kind).unwrap();
                    n += 1;
                }
                n
            });
            let workers: Vec<_> = (0..2u32)
                .map(|w| {
                    let db = &db;
                    s.spawn(move || {
                        let mut rng = ChaCha8Rng::seed_from_u64(seed << 8 | u64::from(w));
                        let mut last = None;
                        for i in 0..1_500u64 {
                            let mut t = db.begin(WorkerId(w)).unwrap();
                            let ok = (0..rng.gen_range(1..4)).all(|_| {
                                // Hot keys: most writes go to the first eight.
                                let k = if rng.gen_bool(0.7) {
                                    rng.gen_range(0..8)
                                } else {
                                    rng.gen_range(0..64)
                                };
                                t.put(T, RowKey(k), &row(u64::from(w) << 32 | i)).is_ok()
                            });
                            if ok {
                                last = Some(t.commit().unwrap());
                            }
                        }
                        if let Some(ticket) = last {
                            db.wait_committed(&ticket);
                        }
                    })
                })
                .collect();
            for h in workers {
                h.join().unwrap();
            }
            stop.store(true, Ordering::Release);
            checkpointer.join().unwrap()
        });
        let mut reader = db.begin(WorkerId(0)).unwrap();
        let live: Vec<_> = (0..64).map(|k| val(reader.get(T, RowKey(k)).unwrap())).collect();
        reader.commit().unwrap();
        let image = db.region().as_sim().unwrap().persistent_image();
        drop(db);
        let (db, report) = FirDb::open(Arc::new(Region::sim_from_image(image)), &schemas()).unwrap();
        let mut reader = db.begin(WorkerId(0)).unwrap();
        let recovered: Vec<_> = (0..64).map(|k| val(reader.get(T, RowKey(k)).unwrap())).collect();
        assert_eq!(recovered, live, "seed {seed}: after {checkpoints} checkpoints ({report:?})");
        assert!(checkpoints > 0, "seed {seed}: no checkpoint ran");
    }
}
