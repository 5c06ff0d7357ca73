//! FIR behind the transactional-table API: stored procedures written
//! against `RowAccess` run on `FirEngine` and on the DRAM-DB baseline
//! (`DramDb`, fir.txt 5.1), whose redo log recovery replays.

use std::sync::Arc;

use strata_fir::{DramDb, FirDb, FirEngine, FirLoader, FirOptions, RunOptions};
use strata_pmem::{PmemMode, Region, RegionOptions};
use strata_txn::{
    LogDeviceKind, LoggingKind, ProcId, Procedures, RowAccess, RowKey, RowLoader, TableId, TableSchema,
    TxnDb, TxnDbOptions, TxnEngine, TxnError, WorkerId,
};

const T: TableId = TableId(0);
const MOVE: ProcId = ProcId(1);
const ACCOUNTS: u64 = 16;

fn schemas() -> Vec<TableSchema> {
    vec![TableSchema { name: "accounts".into(), row_bytes: 8 }]
}

fn balance(r: Option<Vec<u8>>) -> u64 {
    u64::from_le_bytes(r.expect("an account").try_into().unwrap())
}

/// Moves 1 from account `a` to `b` (arguments: a, b as little-endian u64).
fn procedures() -> Procedures {
    let mut p = Procedures::new();
    p.register(MOVE, |txn: &mut dyn RowAccess, args: &[u8]| -> Result<(), TxnError> {
        let a = RowKey(u64::from_le_bytes(args[..8].try_into().unwrap()));
        let b = RowKey(u64::from_le_bytes(args[8..].try_into().unwrap()));
        let (x, y) = (balance(txn.get(T, a)?), balance(txn.get(T, b)?));
        txn.put(T, a, &(x - 1).to_le_bytes())?;
        txn.put(T, b, &(y + 1).to_le_bytes())
    });
    p
}

fn options() -> FirOptions {
    FirOptions { workers: 1, blocks_per_table: 16, table_blocks: Vec::new(), checkpoint_keys: 1024 }
}

fn load(db: &FirDb) {
    let mut loader = FirLoader::new(db);
    for k in 0..ACCOUNTS {
        loader.load_row(T, RowKey(k), &100u64.to_le_bytes()).unwrap();
    }
    loader.finish().unwrap();
}

fn args(i: u64) -> Vec<u8> {
    let (a, b) = (i % ACCOUNTS, (i * 7 + 3) % ACCOUNTS);
    let b = if a == b { (b + 1) % ACCOUNTS } else { b };
    [a.to_le_bytes(), b.to_le_bytes()].concat()
}

fn balances(db: &FirDb) -> Vec<u64> {
    let rows = db.rows(T).unwrap();
    (0..ACCOUNTS).map(|k| balance(rows.get(&RowKey(k)).cloned())).collect()
}

/// Runs `n` transfers on `engine`, waits for the last one and checks that
/// its ticket says committed and written.
fn run_transfers<E: TxnEngine>(engine: &E, n: u64) {
    let mut last = None;
    for i in 0..n {
        last = Some(engine.run(WorkerId(0), MOVE, &args(i)).unwrap());
    }
    let ticket = last.expect("at least one transfer");
    engine.wait_committed(&ticket).unwrap();
    assert!(engine.is_committed(&ticket) && engine.wrote(&ticket));
}

#[test]
fn a_procedure_runs_on_fir_s_engine_and_its_commits_survive_a_crash() {
    let region = Arc::new(Region::sim(4 << 20));
    let db = FirDb::create(region.clone(), &schemas(), &options()).unwrap();
    load(&db);
    let engine = FirEngine::new(db, procedures());
    run_transfers(&engine, 200);
    let live = balances(&engine.db);
    assert_eq!(live.iter().sum::<u64>(), 100 * ACCOUNTS, "money is conserved: {live:?}");
    assert_ne!(live, vec![100; ACCOUNTS as usize], "the transfers moved money");
    let image = region.as_sim().unwrap().persistent_image();
    drop(engine);
    let (db, _) = FirDb::open(Arc::new(Region::sim_from_image(image)), &schemas()).unwrap();
    assert_eq!(balances(&db), live, "every acknowledged transfer after recovery");
    let e = FirEngine::new(db, procedures()).run(WorkerId(0), ProcId(9), &[]).err();
    assert!(matches!(e, Some(TxnError::UnknownProcedure(9))), "{e:?}");
}

/// A DRAM-DB whose tables are in a `volatile` region, with a serial redo
/// log on a simulated PMem region.
fn dram_db(dir: &std::path::Path, log: Option<Arc<Region>>) -> (DramDb, TxnDbOptions) {
    let len = FirDb::region_bytes(&schemas(), &options());
    let tables = Region::open(&dir.join("tables"), &RegionOptions::new(PmemMode::Volatile, len)).unwrap();
    let run = RunOptions { commit_thread: false, ..RunOptions::default() };
    let db = FirDb::create_with(Arc::new(tables), &schemas(), &options(), &run).unwrap();
    load(&db);
    let kind = if log.is_some() { LoggingKind::Serial } else { LoggingKind::None };
    let mut o = TxnDbOptions::new(kind, LogDeviceKind::Regions(log.into_iter().collect()), 1);
    o.logging.capacity_bytes = 1 << 20;
    let redo = (kind == LoggingKind::Serial).then(|| strata_txn::open_redo_log(&o.logging).unwrap());
    (DramDb::new(db, procedures(), redo), o)
}

#[test]
fn dram_db_s_redo_log_replays_to_the_same_tables() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Region::sim(1 << 20));
    let (dram, o) = dram_db(dir.path(), Some(log.clone()));
    run_transfers(&dram, 150);
    assert!(dram.log_bytes() > 150 * 16, "one record per transfer: {} bytes", dram.log_bytes());
    let live = balances(&dram.db);
    drop(dram);
    let logs = TxnDb::committed_logs(&o).unwrap();
    assert_eq!(logs.iter().map(Vec::len).sum::<usize>(), 150, "every acknowledged transfer logged");
    let replay_dir = tempfile::tempdir().unwrap();
    let (fresh, _) = dram_db(replay_dir.path(), None);
    for (_, record) in logs.iter().flatten() {
        fresh.replay(&record.writes).unwrap();
    }
    assert_eq!(balances(&fresh.db), live);
    // Without a log, nothing is acknowledged as written.
    let t = fresh.run(WorkerId(0), MOVE, &args(1)).unwrap();
    assert!(fresh.is_committed(&t) && !fresh.wrote(&t));
}
