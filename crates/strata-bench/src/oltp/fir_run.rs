//! The variants of `strata bench oltp` on FIR's engine (fir.txt 5.1):
//! `fir` (the checkpoint thread taking the cost model's choice),
//! `fir-full` (full checkpoints only), `zen` (the same tuple heap with no
//! index checkpoints; recovery scans the whole heap), and the DRAM-DB
//! baselines `dram-nolog` and `dram-log` (the engine over DRAM tables,
//! without or with a serial redo log: [`DramDb`]).
//!
//! The child creates the tables (an emulated PMem region; a `volatile`
//! one for DRAM-DB), loads the workload's base rows, takes a full
//! checkpoint (FIR) and runs the procedures. After the SIGKILL the parent
//! recovers: FIR and `zen` reopen the region and are timed until the
//! first transaction commits; `dram-log` decodes its log and replays it
//! over a fresh load of the base rows (the stand-in for its checkpoint, as
//! for the Taurus variants: only decoding and replay are timed).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use strata_fir::layout::SLOTS_PER_BLOCK;
use strata_fir::{CheckpointKind, DramDb, FirDb, FirEngine, FirLoader, FirOptions, RunOptions};
use strata_pmem::{PmemMode, Region, RegionOptions};
use strata_txn::{
    LogDeviceKind, LoggingKind, RowAccess, RowKey, RowLoader, TableId, TxnDb, TxnDbOptions, TxnEngine,
    TxnError, WorkerId,
};

use super::run::{drive, OltpJob, Probe, RunFigures};
use super::workload::Bench;
use super::EngineKind;

/// Transactions of the dry run that sizes the region.
const DRY_RUN_TXNS: u64 = 20_000;
/// How much faster than one thread of the dry run (the workload on
/// unlogged DRAM tables, the fastest engine) a worker is sized to write.
const SIZING_MARGIN: f64 = 1.5;
/// What a run is sized for beyond its warm-up and window: the figures'
/// hand-over and the time before the kill.
const RUN_ON_MS: u64 = 1_000;

fn region_path(job: &OltpJob) -> PathBuf {
    job.pmem_dir.join("fir.pmem")
}

/// The child: the engine of the job's variant, loaded, driven until killed.
pub(crate) fn run_child(job: &OltpJob, bench: Arc<Bench>) -> anyhow::Result<()> {
    let engine = job.variant()?.engine;
    if engine.fir_storage() {
        let fir = Arc::new(open_loaded(job, &bench)?);
        return drive(job, bench, fir, probe());
    }
    let dram = Arc::new(open_dram(job, &bench, engine == EngineKind::DramLog)?);
    drive(job, bench, dram, |d: &DramDb| Probe { log_bytes: d.log_bytes(), ..Probe::default() })
}

/// Tables for `job` in a region of `mode` at `path`, sized by a dry run,
/// touched whole, created without a checkpoint thread and loaded with the
/// workload's base rows.
fn create_loaded(job: &OltpJob, bench: &Bench, mode: PmemMode, path: &Path) -> anyhow::Result<FirDb> {
    let schemas = bench.schemas();
    let options = fir_options(job, bench)?;
    let len = FirDb::region_bytes(&schemas, &options);
    let region = Region::open(path, &RegionOptions::new(mode, len))
        .with_context(|| format!("opening {} tables at {}", mode.name(), path.display()))?;
    crate::emulated_region::touch(&region)?;
    let engine = job.variant()?.engine;
    let loading = RunOptions { checkpoint_every: None, ..run_options(job, engine, false) };
    let db = FirDb::create_with(Arc::new(region), &schemas, &options, &loading)?;
    let mut loader = FirLoader::new(&db);
    bench.load(&mut loader).context("loading the base rows")?;
    loader.finish()?;
    Ok(db)
}

/// DRAM-DB: FIR's engine over a `volatile` region (DRAM), loaded, with
/// the job's serial redo log when `logged`.
fn open_dram(job: &OltpJob, bench: &Bench, logged: bool) -> anyhow::Result<DramDb> {
    let db = create_loaded(job, bench, PmemMode::Volatile, &job.pmem_dir.join("dram.tables"))?;
    let log = if logged { Some(strata_txn::open_redo_log(&job.db_options(true)?.logging)?) } else { None };
    Ok(DramDb::new(db, bench.procedures(), log))
}

/// Counts what a loader or a transaction writes, by table.
struct Counting<'a, T: ?Sized> {
    inner: &'a mut T,
    writes: &'a mut [u64],
}

impl<T: RowLoader + ?Sized> RowLoader for Counting<'_, T> {
    fn load_row(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        self.writes[table.0 as usize] += 1;
        self.inner.load_row(table, key, row)
    }
}

impl<T: RowAccess + ?Sized> RowAccess for Counting<'_, T> {
    fn get(&mut self, table: TableId, key: RowKey) -> Result<Option<Vec<u8>>, TxnError> {
        self.inner.get(table, key)
    }
    fn put(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        self.writes[table.0 as usize] += 1;
        self.inner.put(table, key, row)
    }
    fn insert(&mut self, table: TableId, key: RowKey, row: &[u8]) -> Result<(), TxnError> {
        self.writes[table.0 as usize] += 1;
        self.inner.insert(table, key, row)
    }
    fn delete(&mut self, table: TableId, key: RowKey) -> Result<(), TxnError> {
        self.writes[table.0 as usize] += 1;
        self.inner.delete(table, key)
    }
}

/// The region's shape for `job`: each table's blocks hold its base rows
/// and what the workers write into it over the run at [`SIZING_MARGIN`]
/// times the rate of a dry run (the workload on one thread over unlogged
/// DRAM tables, counting each table's writes). FIR keeps every version
/// (no garbage collection yet), so the region is sized to the run, and
/// only that much is touched before it.
fn fir_options(job: &OltpJob, bench: &Bench) -> anyhow::Result<FirOptions> {
    let schemas = bench.schemas();
    let options = TxnDbOptions::new(LoggingKind::None, LogDeviceKind::Regions(Vec::new()), job.workers);
    let (db, _) = TxnDb::open_with(&options, schemas.clone(), bench.procedures())?;
    let mut base = vec![0u64; schemas.len()];
    bench.load(&mut Counting { inner: &mut &db, writes: &mut base })?;
    let procedures = bench.procedures();
    let inputs = bench.inputs(WorkerId(0));
    let mut rng = ChaCha8Rng::seed_from_u64(0xd27 ^ job.round);
    let mut args = Vec::new();
    let mut writes = vec![0u64; schemas.len()];
    let started = Instant::now();
    for _ in 0..DRY_RUN_TXNS {
        let next = inputs.next(&mut rng, &mut args);
        let mut txn = db.begin(WorkerId(0));
        let f = procedures.get(next.proc)?;
        match f(&mut Counting { inner: &mut txn, writes: &mut writes }, &args) {
            Ok(()) => {
                txn.commit()?;
            }
            Err(e) if bench.is_rollback(&e) => txn.abort(),
            Err(e) => return Err(e).context("the dry run that sizes the FIR region"),
        }
    }
    let rate = DRY_RUN_TXNS as f64 / started.elapsed().as_secs_f64().max(1e-6);
    let run_s = (job.warmup_ms + job.window_ms + RUN_ON_MS) as f64 / 1e3;
    let txns = SIZING_MARGIN * rate * job.workers as f64 * run_s;
    let per_region_slack = 2 * job.workers as u64;
    let versions: Vec<u64> =
        base.iter().zip(&writes).map(|(b, w)| b + (*w as f64 / DRY_RUN_TXNS as f64 * txns) as u64).collect();
    Ok(FirOptions {
        workers: job.workers as u32,
        blocks_per_table: 0,
        table_blocks: versions
            .iter()
            .map(|v| v.div_ceil(SLOTS_PER_BLOCK as u64) + per_region_slack)
            .collect(),
        checkpoint_keys: versions.iter().sum::<u64>() + 1_024,
    })
}

/// How `engine` runs: no group-commit thread (each commit takes the queue
/// itself: on 2 cores a third busy thread would take a worker's core), the
/// checkpoint thread of its kind at the job's period.
fn run_options(job: &OltpJob, engine: EngineKind, recovering: bool) -> RunOptions {
    let every = Some(Duration::from_millis(job.fir_checkpoint_ms.max(1)));
    RunOptions {
        commit_thread: false,
        rebuild_threads: job.workers.max(1),
        scan_whole_heap: recovering && engine == EngineKind::Zen,
        checkpoint_every: match engine {
            EngineKind::Fir | EngineKind::FirFull => every,
            _ => None,
        },
        checkpoint_kind: if engine == EngineKind::FirFull {
            CheckpointKind::Full
        } else {
            CheckpointKind::Auto
        },
        ..RunOptions::default()
    }
}

/// The child's engine: a fresh region, the base rows loaded, a full
/// checkpoint of them (the state every later checkpoint merges into), the
/// checkpoint thread started.
pub(crate) fn open_loaded(job: &OltpJob, bench: &Bench) -> anyhow::Result<FirEngine> {
    let engine = job.variant()?.engine;
    let db = create_loaded(job, bench, PmemMode::Emulated, &region_path(job))?;
    if engine != EngineKind::Zen {
        db.checkpoint(CheckpointKind::Full)?;
    }
    let region = db.region().clone();
    drop(db);
    let (db, _) = FirDb::open_with(region, &bench.schemas(), &run_options(job, engine, false))?;
    Ok(FirEngine::new(db, bench.procedures()))
}

/// Counts the checkpoint thread's reports as they come.
pub(crate) fn probe() -> impl FnMut(&FirEngine) -> Probe {
    let mut seen = Probe::default();
    move |e: &FirEngine| {
        for r in e.db.take_checkpoint_reports() {
            seen.checkpoints += 1;
            seen.incremental_checkpoints += u64::from(r.kind == CheckpointKind::Incremental);
            seen.checkpoint_s += r.elapsed.as_secs_f64();
        }
        seen
    }
}

/// The parent's recovery of the killed child's region: open it (FIR: the
/// checkpoint and the tail past it; `zen`: the whole heap), then run one
/// transaction of the workload until it commits. The time until then is
/// the recovery time (issue 17: "time until the first transaction commits").
pub(crate) fn recover(job: &OltpJob, f: &mut RunFigures) -> anyhow::Result<()> {
    let v = job.variant()?;
    match v.engine {
        EngineKind::DramLog => return replay_dram_log(job, f),
        EngineKind::DramNoLog | EngineKind::Logged => return Ok(()),
        EngineKind::Fir | EngineKind::FirFull | EngineKind::Zen => {}
    }
    let bench = job.bench()?;
    let path = region_path(job);
    let len = std::fs::metadata(&path).with_context(|| format!("the region {}", path.display()))?.len();
    let started = Instant::now();
    let region = Region::open(&path, &RegionOptions::new(PmemMode::Emulated, len))
        .with_context(|| format!("reopening {}", path.display()))?;
    let run = RunOptions { checkpoint_every: None, ..run_options(job, v.engine, true) };
    let (db, report) = FirDb::open_with(Arc::new(region), &bench.schemas(), &run)?;
    let engine = FirEngine::new(db, bench.procedures());
    let inputs = bench.inputs(WorkerId(0));
    let mut rng = ChaCha8Rng::seed_from_u64(0x5ec0_7e41 ^ job.round);
    let mut args = Vec::new();
    loop {
        let next = inputs.next(&mut rng, &mut args);
        match engine.run(WorkerId(0), next.proc, &args) {
            Ok(ticket) => {
                engine.wait_committed(&ticket)?;
                break;
            }
            Err(TxnError::Conflict { .. }) => continue,
            Err(e) if bench.is_rollback(&e) => continue,
            Err(e) => return Err(e).context("the first transaction after recovery"),
        }
    }
    f.recovery_s = started.elapsed().as_secs_f64();
    f.recovery_data_s = report.data_phase.as_secs_f64();
    f.recovery_index_s = report.index_phase.as_secs_f64();
    f.recovery_versions_scanned = report.versions_scanned;
    f.recovered_txns = report.versions_kept;
    f.recovery_threads = run.rebuild_threads;
    f.recovery_txn_per_s = report.versions_kept as f64 / f.recovery_s.max(1e-9);
    Ok(())
}

/// DRAM-DB (Log)'s recovery: its log's committed records decoded and
/// replayed, one transaction each, over the base rows loaded into fresh
/// DRAM tables (the load, a checkpoint's stand-in, is not timed).
fn replay_dram_log(job: &OltpJob, f: &mut RunFigures) -> anyhow::Result<()> {
    let bench = job.bench()?;
    let dram = open_dram(job, &bench, false)?;
    let started = Instant::now();
    let logs = TxnDb::committed_logs(&job.db_options(false)?)?;
    let mut replayed = 0u64;
    for log in &logs {
        for (_, record) in log {
            dram.replay(&record.writes)?;
            replayed += 1;
        }
    }
    f.recovery_s = started.elapsed().as_secs_f64();
    f.recovered_txns = replayed;
    f.recovery_threads = 1;
    f.recovery_txn_per_s = replayed as f64 / f.recovery_s.max(1e-9);
    anyhow::ensure!(
        replayed >= f.logged,
        "dram-log: replayed {replayed} transactions, fewer than the {} acknowledged read-write ones",
        f.logged
    );
    Ok(())
}
