//! [`TxnDb`]: fixed-schema tables with transactions, opened over its logs
//! (recovering what they hold), in the shape of redb or RocksDB's
//! `TransactionDB`: `begin`, `get`/`put`/`insert`/`delete`, `commit` to a
//! ticket, a blocking wait for durability, `abort`.
//!
//! ```
//! use strata_txn::{LogDeviceKind, LoggingKind, RowKey, TableId, TableSchema, TxnDb, TxnDbOptions, WorkerId};
//! let dir = tempfile::tempdir().unwrap();
//! let device = LogDeviceKind::Ssd { fs: std::sync::Arc::new(strata_media::RealFs::new()), dir: dir.path().into() };
//! let options = TxnDbOptions::new(LoggingKind::Taurus { logs: 2 }, device, 2);
//! let accounts = TableId(0);
//! let schemas = vec![TableSchema { name: "accounts".into(), row_bytes: 8 }];
//! let (db, _) = TxnDb::open(&options, schemas.clone()).unwrap();
//! let mut txn = db.begin(WorkerId(0));
//! txn.insert(accounts, RowKey(1), &100u64.to_le_bytes()).unwrap();
//! txn.commit_durably().unwrap();
//! drop(db);
//! let (db, report) = TxnDb::open(&options, schemas).unwrap();
//! assert_eq!(report.transactions, 1);
//! let mut txn = db.begin(WorkerId(1));
//! assert_eq!(txn.get(accounts, RowKey(1)).unwrap(), Some(100u64.to_le_bytes().to_vec()));
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_pmem::{Region, RegionOptions};

use crate::error::TxnError;
use crate::ids::{TableId, WorkerId};
use crate::log::device::{FileLogDevice, LogDevice, PmemLogDevice, Throttled};
use crate::log::{
    open_logging, CommitTicket, LogDeviceKind, LogMode, LoggingKind, LoggingOptions, NoLogging, TxnLogging,
};
use crate::procedures::{ProcId, Procedures};
use crate::record::{Record, WriteOp};
use crate::recovery::{committed_prefixes, decode_log, replay};
use crate::store::Store;
use crate::txn::Txn;

/// A table: its name and the bytes of each row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSchema {
    pub name: String,
    pub row_bytes: usize,
}

/// How to open a [`TxnDb`].
#[derive(Clone)]
pub struct TxnDbOptions {
    pub logging: LoggingOptions,
    /// Concurrency control (2PL NO_WAIT by default).
    pub cc: crate::cc::CcKind,
    /// Threads applying records at recovery.
    pub recovery_threads: usize,
    /// A bug to plant (crash lines only).
    #[cfg(any(test, feature = "crashtest"))]
    pub planted_bug: crate::planted::PlantedBug,
}

impl TxnDbOptions {
    /// `workers` workers; 50 MB log buffers (the authors' default), 1 GiB
    /// per log, an idle log manager sleeping 50 µs.
    pub fn new(kind: LoggingKind, device: LogDeviceKind, workers: usize) -> Self {
        TxnDbOptions {
            logging: LoggingOptions {
                kind,
                mode: LogMode::Data,
                device,
                workers,
                log_mbps: None,
                buffer_bytes: 50 << 20,
                capacity_bytes: 1 << 30,
                flush_interval: Duration::from_micros(50),
                anchor_every_bytes: crate::log::ANCHOR_EVERY_BYTES,
                tuple_lv_delta: Some(crate::log::TUPLE_LV_DELTA_BYTES),
                epoch_clock: Default::default(),
            },
            cc: crate::cc::CcKind::default(),
            recovery_threads: workers.max(1),
            #[cfg(any(test, feature = "crashtest"))]
            planted_bug: Default::default(),
        }
    }
}

/// What opening found in the logs.
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    /// Transactions replayed.
    pub transactions: u64,
    /// Records after each log's committed prefix, cut.
    pub dropped_records: u64,
    /// LV anchors read (taurus.txt Algorithm 5).
    pub anchors: u64,
    pub decode_time: Duration,
    pub replay_time: Duration,
    /// Threads that replayed: `recovery_threads`, or 1 when the logs'
    /// parallelism was too low for more to help (the serial fallback).
    pub replay_threads: usize,
    /// Transactions over the longest LV chain of the kept records: the
    /// signal the serial fallback decides on.
    pub parallelism: f64,
}

pub struct TxnDb {
    schemas: Vec<TableSchema>,
    pub(crate) store: Store,
    pub(crate) logging: Box<dyn TxnLogging>,
    pub(crate) cc: Box<dyn crate::cc::ConcurrencyControl>,
    pub(crate) mode: LogMode,
    procedures: Procedures,
    /// Each log's kept end at open: the LV every transaction starts from,
    /// since the recovered rows carry no LVs of their own.
    pub(crate) base_lv: crate::lv::Lv,
    /// δ of tuple LV compression (None: no eviction).
    tuple_lv_delta: Option<u64>,
    #[cfg(any(test, feature = "crashtest"))]
    planted_bug: crate::planted::PlantedBug,
}

/// A log of the scheme `o.kind` for another engine's transactions (FIR's
/// DRAM-DB baseline, fir.txt 5.1, logs its writes as data records): the
/// devices opened and cut after their committed prefix, new records
/// following it. [`TxnDb::committed_logs`] reads what it logged.
pub fn open_redo_log(o: &LoggingOptions) -> Result<Box<dyn TxnLogging>, TxnError> {
    let devices = open_devices(o)?;
    let decoded = read_logs(&devices)?;
    let (_, ends) = committed_prefixes(&decoded);
    for (d, end) in devices.iter().zip(&ends) {
        d.truncate(*end)?;
    }
    open_logging(o, devices, &ends)
}

fn open_devices(o: &LoggingOptions) -> Result<Vec<Box<dyn LogDevice>>, TxnError> {
    let logs = o.kind.logs();
    let mut devices: Vec<Box<dyn LogDevice>> = Vec::with_capacity(logs);
    for i in 0..logs {
        let d: Box<dyn LogDevice> = match &o.device {
            LogDeviceKind::Ssd { fs, dir } => {
                fs.create_dir_all(dir)?;
                Box::new(FileLogDevice::open(fs.as_ref(), &dir.join(format!("log-{i}")), o.capacity_bytes)?)
            }
            LogDeviceKind::Pmem { mode, dir } => {
                std::fs::create_dir_all(dir)?;
                let region = Region::open(
                    &dir.join(format!("log-{i}.pmem")),
                    &RegionOptions::new(*mode, o.capacity_bytes),
                )?;
                Box::new(PmemLogDevice::new(Arc::new(region)))
            }
            LogDeviceKind::Regions(regions) => {
                let r = regions.get(i).ok_or_else(|| TxnError::Options(format!("no region for log {i}")))?;
                Box::new(PmemLogDevice::new(r.clone()))
            }
        };
        devices.push(match o.log_mbps {
            Some(mbps) => Box::new(Throttled::new(d, mbps)?),
            None => d,
        });
    }
    Ok(devices)
}

/// Below this many transactions per chain link and thread, recovery runs
/// on one thread (the serial fallback).
pub const SERIAL_FALLBACK_PARALLELISM_PER_THREAD: f64 = 2.0;

/// Threads recovery uses: `threads`, unless the logs' `parallelism` could
/// not keep them busy (fewer than [`SERIAL_FALLBACK_PARALLELISM_PER_THREAD`]
/// transactions per link of the longest chain per thread).
pub fn recovery_threads_for(parallelism: f64, threads: usize) -> usize {
    if threads > 1 && parallelism < SERIAL_FALLBACK_PARALLELISM_PER_THREAD * threads as f64 {
        1
    } else {
        threads.max(1)
    }
}

/// Reads and decodes every log, one reader thread per log (Algorithm 3's
/// log manager recovery threads: with a bandwidth limit per device, N logs
/// read N times as fast as one).
fn read_logs(devices: &[Box<dyn LogDevice>]) -> Result<Vec<crate::recovery::DecodedLog>, TxnError> {
    std::thread::scope(|s| {
        let readers: Vec<_> =
            devices.iter().map(|d| s.spawn(move || d.read_log().map(|b| decode_log(&b)))).collect();
        readers.into_iter().map(|r| r.join().expect("a log reader panicked")).collect()
    })
}

impl TxnDb {
    /// Opens the tables `schemas` over the logs of `options`, replaying
    /// what committed before the last close or crash.
    pub fn open(
        options: &TxnDbOptions,
        schemas: Vec<TableSchema>,
    ) -> Result<(TxnDb, RecoveryReport), TxnError> {
        TxnDb::open_with(options, schemas, Procedures::new())
    }

    /// [`TxnDb::open`] with the stored procedures of [`TxnDb::run`] (the
    /// logged commands' procedures must be among them).
    pub fn open_with(
        options: &TxnDbOptions,
        schemas: Vec<TableSchema>,
        procedures: Procedures,
    ) -> Result<(TxnDb, RecoveryReport), TxnError> {
        TxnDb::open_over(options, schemas, procedures, |_| Ok(()))
    }

    /// [`TxnDb::open_with`] over a base state: `base` runs before the logs
    /// are replayed, typically [`TxnDb::bulk_load`]ing the rows the logged
    /// transactions started from (what a checkpoint would hold; the
    /// benchmarks load their tables this way and time only the replay).
    pub fn open_over(
        options: &TxnDbOptions,
        schemas: Vec<TableSchema>,
        procedures: Procedures,
        base: impl FnOnce(&TxnDb) -> Result<(), TxnError>,
    ) -> Result<(TxnDb, RecoveryReport), TxnError> {
        let o = &options.logging;
        let devices = open_devices(o)?;
        if let LoggingKind::SiloR { .. } = o.kind {
            return TxnDb::open_silo(options, TxnDb::unlogged(options, schemas, procedures), base, devices);
        }
        let started = Instant::now();
        let decoded = read_logs(&devices)?;
        let (kept, ends) = committed_prefixes(&decoded);
        let anchors = decoded.iter().map(|d| d.anchors).sum();
        let mut report = RecoveryReport { decode_time: started.elapsed(), anchors, ..Default::default() };
        let mut db = TxnDb::unlogged(options, schemas, procedures);
        base(&db)?;
        let logs: Vec<_> = decoded
            .into_iter()
            .zip(&kept)
            .map(|(d, &k)| {
                report.dropped_records += (d.records.len() - k) as u64;
                let mut r = d.records;
                r.truncate(k);
                r
            })
            .collect();
        // Serial fallback (taurus.txt 3.5, 5.6): under high contention the
        // chains are long and threads wait on each other's RLV updates; one
        // thread scanning every pool has no such delay. The paper picks it by
        // the workload's known theta; recovery sees the logs instead: their
        // parallelism (transactions over the longest chain).
        let p = crate::recovery::parallelism(&logs);
        report.parallelism = p.lv_ratio();
        report.replay_threads = recovery_threads_for(report.parallelism, options.recovery_threads);
        let replayed = replay(logs, &ends, report.replay_threads, &|r: &Record| db.apply_logged(r))?;
        report.transactions = replayed.transactions;
        report.replay_time = replayed.time;
        for (d, end) in devices.iter().zip(&ends) {
            d.truncate(*end)?;
        }
        db.base_lv = crate::lv::Lv::from_slice(&ends);
        db.logging = open_logging(o, devices, &ends)?;
        Ok((db, report))
    }

    /// The database before its logs: tables, store, procedures.
    fn unlogged(options: &TxnDbOptions, schemas: Vec<TableSchema>, procedures: Procedures) -> TxnDb {
        #[allow(unused_mut)]
        let mut store = Store::new(options.logging.kind.lv_len());
        #[cfg(any(test, feature = "crashtest"))]
        {
            use crate::planted::PlantedBug;
            store.fold_write_lv_on_read = options.planted_bug != PlantedBug::ReadSkipsWriteLv;
            store.fold_read_lv_on_write = options.planted_bug != PlantedBug::WriteSkipsReadLv;
        }
        TxnDb {
            schemas,
            store,
            logging: Box::new(NoLogging),
            cc: crate::cc::open(options.cc),
            mode: options.logging.mode,
            procedures,
            base_lv: crate::lv::Lv::ZERO,
            tuple_lv_delta: options.logging.tuple_lv_delta,
            #[cfg(any(test, feature = "crashtest"))]
            planted_bug: options.planted_bug,
        }
    }

    /// Silo-R's open (`log::silo`): the durable epochs' records applied,
    /// one thread per log, each row keeping its highest TID.
    fn open_silo(
        options: &TxnDbOptions,
        mut db: TxnDb,
        base: impl FnOnce(&TxnDb) -> Result<(), TxnError>,
        devices: Vec<Box<dyn LogDevice>>,
    ) -> Result<(TxnDb, RecoveryReport), TxnError> {
        if options.logging.mode != LogMode::Data {
            return Err(TxnError::Options("silo-r logs data only".into()));
        }
        let started = Instant::now();
        // One reader per log, as for Taurus (Algorithm 3's log threads).
        let scans = std::thread::scope(|s| {
            let readers: Vec<_> = devices
                .iter()
                .map(|d| s.spawn(move || d.read_log().map(|b| crate::log::silo::scan_log(&b))))
                .collect();
            readers
                .into_iter()
                .map(|r| r.join().expect("a log reader panicked"))
                .collect::<Result<Vec<_>, _>>()
        })?;
        let found = crate::log::silo::decide(scans);
        let mut report = RecoveryReport {
            decode_time: started.elapsed(),
            anchors: found.marks,
            dropped_records: found.dropped,
            replay_threads: found.records.len().max(1),
            ..Default::default()
        };
        base(&db)?;
        let started = Instant::now();
        std::thread::scope(|s| {
            for log in &found.records {
                let db = &db;
                s.spawn(move || {
                    for r in log {
                        for w in &r.writes {
                            let row = match &w.op {
                                WriteOp::Put(row) => Some(row.as_slice()),
                                WriteOp::Delete => None,
                            };
                            db.store.install_if_newer(w.table, w.key, r.lv.get(0), row);
                        }
                    }
                });
            }
        });
        report.replay_time = started.elapsed();
        report.transactions = found.records.iter().map(|l| l.len() as u64).sum();
        // No order among the records: each is its own chain.
        report.parallelism = report.transactions as f64;
        for (d, end) in devices.iter().zip(&found.valid_ends) {
            d.truncate(*end)?;
        }
        db.logging = Box::new(crate::log::silo::SiloLogging::start(
            &options.logging,
            devices,
            &found.valid_ends,
            &found,
        )?);
        Ok((db, report))
    }

    /// Installs a row outside any transaction and without logging it: the
    /// base state of [`TxnDb::open_over`], or a table loaded before a
    /// logged run. Not durable on its own.
    pub fn bulk_load(&self, table: TableId, key: crate::RowKey, row: &[u8]) -> Result<(), TxnError> {
        self.check_row(table, row)?;
        self.store.install(table, key, Some(row));
        Ok(())
    }

    /// The records of each log that recovery would replay (its committed
    /// prefix), without opening the database: for measuring what the logs
    /// allow (`recovery::parallelism`).
    pub fn committed_logs(options: &TxnDbOptions) -> Result<Vec<Vec<(u64, Record)>>, TxnError> {
        let devices = open_devices(&options.logging)?;
        let decoded = read_logs(&devices)?;
        let (kept, _) = committed_prefixes(&decoded);
        Ok(decoded
            .into_iter()
            .zip(kept)
            .map(|(d, k)| {
                let mut r = d.records;
                r.truncate(k);
                r
            })
            .collect())
    }

    /// Recovery of one record: install its rows, or re-run its command.
    fn apply_logged(&self, r: &Record) -> Result<(), TxnError> {
        if let Some(c) = &r.command {
            let f = self.procedures.get(ProcId(c.procedure))?;
            let mut txn = Txn::replaying(self);
            f(&mut txn, &c.args).map_err(|e| TxnError::Replay(format!("procedure {}: {e}", c.procedure)))?;
            txn.commit()?;
            return Ok(());
        }
        for w in &r.writes {
            self.schema(w.table)?;
            match &w.op {
                WriteOp::Put(row) => self.store.install(w.table, w.key, Some(row)),
                WriteOp::Delete => self.store.install(w.table, w.key, None),
            }
        }
        Ok(())
    }

    /// Runs stored procedure `id` with `args` as one transaction of
    /// `worker` and commits it (in command mode its record is the
    /// invocation). A lock conflict aborts it: run it again.
    pub fn run(&self, worker: WorkerId, id: ProcId, args: &[u8]) -> Result<CommitTicket, TxnError> {
        let f = self.procedures.get(id)?;
        let mut txn = self.begin(worker);
        txn.log_as_command(id, args);
        if let Err(e) = f(&mut txn, args) {
            return Err(txn.cause(e));
        }
        txn.commit()
    }

    pub fn begin(&self, worker: WorkerId) -> Txn<'_> {
        Txn::new(self, worker)
    }

    /// Silo-R: advances the global epoch now and marks every log (under
    /// [`crate::EpochClock::OnDemand`], with waiting commits, the only
    /// advances); the durable epoch after it. Other schemes have no epochs
    /// ([`TxnError::Unsupported`]).
    pub fn advance_epoch(&self) -> Result<u64, TxnError> {
        self.logging.advance_epoch()
    }

    /// Blocks until the ticket's transaction is durable (committed).
    pub fn wait_committed(&self, ticket: &CommitTicket) -> Result<(), TxnError> {
        #[cfg(any(test, feature = "crashtest"))]
        if self.planted_bug == crate::planted::PlantedBug::AckBeforeCommitted {
            return Ok(());
        }
        self.logging.wait_committed(ticket)
    }

    pub fn is_committed(&self, ticket: &CommitTicket) -> bool {
        self.logging.is_committed(ticket)
    }

    /// The logging scheme's name.
    pub fn logging_name(&self) -> &'static str {
        self.logging.name()
    }

    /// Bytes written to the log devices since open.
    pub fn log_bytes(&self) -> u64 {
        self.logging.device_bytes()
    }

    /// Every row of `table` (consistent when no transaction runs).
    pub fn rows(&self, table: TableId) -> std::collections::BTreeMap<crate::RowKey, Vec<u8>> {
        self.store.rows(table)
    }

    pub(crate) fn schema(&self, table: TableId) -> Result<&TableSchema, TxnError> {
        self.schemas.get(table.0 as usize).ok_or(TxnError::UnknownTable(table))
    }

    pub(crate) fn check_row(&self, table: TableId, row: &[u8]) -> Result<(), TxnError> {
        let want = self.schema(table)?.row_bytes;
        if row.len() != want {
            return Err(TxnError::RowSize { table, got: row.len(), want });
        }
        Ok(())
    }
}

/// Commits a thread makes between two evictions of the lock table's LVs.
const EVICT_EVERY_COMMITS: u32 = 1 << 14;

std::thread_local! {
    /// This thread's commits since it last evicted.
    static COMMITS_SINCE_EVICTION: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

impl TxnDb {
    /// After each commit: every [`EVICT_EVERY_COMMITS`] of a thread, the
    /// lock table evicts the LVs `δ` below the committed ends.
    pub(crate) fn after_commit(&self) {
        if self.tuple_lv_delta.is_none() {
            return;
        }
        let due = COMMITS_SINCE_EVICTION.with(|c| {
            let n = c.get() + 1;
            c.set(n % EVICT_EVERY_COMMITS);
            n == EVICT_EVERY_COMMITS
        });
        if due {
            self.evict_tuple_lvs();
        }
    }

    /// Tuple LV compression (taurus.txt 4.1): evicts from the lock table
    /// every tuple whose `readLV` and `writeLV` are `δ` or more below the
    /// committed ends in every element. Returns the tuples still holding
    /// LVs, or None where the scheme keeps no LSN vectors or δ is off.
    pub fn evict_tuple_lvs(&self) -> Option<usize> {
        let delta = self.tuple_lv_delta?;
        let committed = self.logging.evictable_below()?;
        let mut below = crate::lv::Lv::ZERO;
        for j in 0..self.store.lv_len {
            below.set(j, committed.get(j).saturating_sub(delta));
        }
        Some(self.store.evict_lvs(&below))
    }

    /// Tuples whose LVs the lock table holds (above the eviction floor).
    pub fn tuples_with_lvs(&self) -> usize {
        self.store.lv_entries()
    }
}

impl Drop for TxnDb {
    fn drop(&mut self) {
        self.logging.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_falls_back_to_one_thread_when_the_chains_are_long() {
        assert_eq!(recovery_threads_for(1.0, 4), 1, "one chain: serial");
        assert_eq!(recovery_threads_for(7.9, 4), 1);
        assert_eq!(recovery_threads_for(8.0, 4), 4);
        assert_eq!(recovery_threads_for(500.0, 4), 4);
        assert_eq!(recovery_threads_for(1.0, 1), 1);
        assert_eq!(recovery_threads_for(1.0, 0), 1);
    }
}
