//! Opening the series engine: load the manifest (the persistent series
//! index), open the block files it lists, then replay the log records the
//! checkpoint does not cover. Each phase is timed for `strata recover`.
//!
//! Records with LSN <= the manifest's checkpoint LSN are skipped when the log
//! is the one the manifest was written with and has not been re-created (a
//! re-created log's records are all new). A log of another protocol than the
//! manifest names is not replayed at all (the facade erased it when it last
//! switched away from it). In both cases the engine checkpoints right after
//! opening, so the manifest names the current log and its position.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use strata_log::{CommitLog, LogRecord, Lsn};

use crate::block_file::{parse_block_file_name, BlockFile};
use crate::engine::SeriesEngine;
use crate::error::EngineError;
use crate::index::SeriesIndex;
use crate::manifest::{read_manifest, Manifest};
use crate::model::TimeRange;
use crate::options::EngineOptions;
use crate::series_data::{SealedBlock, SeriesData, Tombstone};
use crate::wal::WalRecord;

/// Phases reported to a progress callback: (phase, done, total).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RecoveryPhase {
    Manifest,
    BlockFiles,
    Replay,
}

/// What recovery found and how long each phase took.
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    pub protocol: String,
    pub manifest_found: bool,
    pub checkpoint_seq: u64,
    pub checkpoint_lsn: u64,
    pub databases: usize,
    pub series: usize,
    pub block_files: usize,
    pub sealed_blocks: u64,
    pub tombstones: usize,
    pub log_records: usize,
    pub log_records_skipped: usize,
    pub points_replayed: u64,
    pub orphan_files_removed: usize,
    pub manifest_s: f64,
    pub block_files_s: f64,
    pub replay_s: f64,
    pub total_s: f64,
}

impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "protocol            {}", self.protocol)?;
        if self.manifest_found {
            writeln!(f, "checkpoint          #{} at LSN {}", self.checkpoint_seq, self.checkpoint_lsn)?;
        } else {
            writeln!(f, "checkpoint          none (fresh data directory or never checkpointed)")?;
        }
        writeln!(f, "databases           {}", self.databases)?;
        writeln!(f, "series              {}", self.series)?;
        writeln!(
            f,
            "block files         {} ({} sealed blocks, {} tombstones)",
            self.block_files, self.sealed_blocks, self.tombstones
        )?;
        if self.orphan_files_removed > 0 {
            writeln!(
                f,
                "orphan block files  {} removed (from an unfinished checkpoint)",
                self.orphan_files_removed
            )?;
        }
        writeln!(
            f,
            "log records         {} replayed ({} points), {} already checkpointed",
            self.log_records.saturating_sub(self.log_records_skipped),
            self.points_replayed,
            self.log_records_skipped
        )?;
        writeln!(f, "phase manifest      {:.3} s", self.manifest_s)?;
        writeln!(f, "phase block files   {:.3} s", self.block_files_s)?;
        writeln!(f, "phase log replay    {:.3} s", self.replay_s)?;
        write!(f, "total               {:.3} s", self.total_s)
    }
}

/// Phases 1 and 2 done: the engine with its checkpointed state.
pub(crate) struct Loaded {
    pub(crate) engine: SeriesEngine,
    pub(crate) manifest: Option<Manifest>,
    pub(crate) report: RecoveryReport,
    /// The manifest names this log (by protocol, and for the serial logs,
    /// the log reaches its checkpoint LSN).
    pub(crate) same_log: bool,
    pub(crate) started: Instant,
}

impl SeriesEngine {
    /// Opens the engine over `log`, whose committed records (in LSN order)
    /// are `replay`. `progress(phase, done, total)` is called as work proceeds.
    pub fn open(
        opts: EngineOptions,
        log: Box<dyn CommitLog>,
        replay: Vec<LogRecord>,
        progress: &dyn Fn(RecoveryPhase, u64, u64),
    ) -> Result<(Arc<SeriesEngine>, RecoveryReport), EngineError> {
        let name = log.name();
        let end = log.end();
        let Loaded { engine, manifest, mut report, same_log, started } =
            Self::load_checkpoint(opts, log, name, Some(end), progress)?;
        let checkpoint_lsn = Lsn(manifest.as_ref().map_or(0, |m| m.checkpoint_lsn));

        // Phase 3: replay.
        let t = Instant::now();
        report.log_records = replay.len();
        let total = replay.len() as u64;
        for (i, r) in replay.into_iter().enumerate() {
            if i % 1024 == 0 {
                progress(RecoveryPhase::Replay, i as u64, total);
            }
            // A log the manifest does not name holds nothing to replay: the
            // facade refuses to switch protocols while the old log holds
            // uncovered records and erases what it holds when it switches.
            let foreign = manifest.as_ref().is_some_and(|m| m.protocol != report.protocol);
            if foreign || (same_log && manifest.is_some() && r.lsn <= checkpoint_lsn) {
                report.log_records_skipped += 1;
                continue;
            }
            let rec = WalRecord::decode(&r.payload).map_err(|why| {
                EngineError::corruption("commit log", format!("record at LSN {} ({}): {why}", r.lsn.0, r.txn))
            })?;
            report.points_replayed += engine.apply_record(&rec, true);
        }
        report.replay_s = t.elapsed().as_secs_f64();
        progress(RecoveryPhase::Replay, total, total);
        Self::finish_open(engine, manifest.is_some() && !same_log, report, started)
    }

    /// Wraps up an open: checkpoints if the manifest names another log, and
    /// fills in the report.
    pub(crate) fn finish_open(
        engine: SeriesEngine,
        checkpoint_now: bool,
        mut report: RecoveryReport,
        started: Instant,
    ) -> Result<(Arc<SeriesEngine>, RecoveryReport), EngineError> {
        let engine = Arc::new(engine);
        if checkpoint_now {
            // The manifest names another log: checkpoint so it names this one.
            engine.checkpoint()?;
        }
        let index = engine.index.read();
        report.databases = index.databases().len();
        report.series = index.total_series();
        drop(index);
        report.total_s = started.elapsed().as_secs_f64();
        Ok((engine, report))
    }

    /// Phases 1 (manifest and series index) and 2 (block files and
    /// tombstones). `log_end`: the serial log's end (None for DecLog).
    pub(crate) fn load_checkpoint(
        opts: EngineOptions,
        log: Box<dyn CommitLog>,
        protocol: &str,
        log_end: Option<Lsn>,
        progress: &dyn Fn(RecoveryPhase, u64, u64),
    ) -> Result<Loaded, EngineError> {
        let started = Instant::now();
        let mut report = RecoveryReport { protocol: protocol.to_string(), ..Default::default() };
        opts.fs.create_dir_all(&opts.dir)?;

        // Phase 1: the manifest and the series index.
        progress(RecoveryPhase::Manifest, 0, 1);
        let manifest = read_manifest(opts.fs.as_ref(), &opts.dir)?;
        let mut index = SeriesIndex::new(0);
        let (checkpoint_lsn, same_log) = match &manifest {
            Some(m) => {
                report.manifest_found = true;
                report.checkpoint_seq = m.checkpoint_seq;
                report.checkpoint_lsn = m.checkpoint_lsn;
                for db in &m.databases {
                    index.create_database(db);
                }
                for s in &m.series {
                    index.insert(&s.db, s.id, s.key.clone(), s.field_type);
                }
                index = SeriesIndex::max_next_id(index, m.next_series_id);
                let same = m.protocol == protocol && log_end.is_none_or(|end| end.0 >= m.checkpoint_lsn);
                (Lsn(m.checkpoint_lsn), same)
            }
            None => (Lsn(0), true),
        };
        let engine = SeriesEngine::empty(opts.clone(), log, index);
        if let Some(m) = &manifest {
            let mut ck = engine.ckpt.lock();
            ck.checkpoint_seq = m.checkpoint_seq;
            ck.checkpoint_lsn = if same_log { checkpoint_lsn } else { Lsn(0) };
            ck.next_file_seq = m.next_file_seq.max(1);
        }
        report.manifest_s = started.elapsed().as_secs_f64();
        progress(RecoveryPhase::Manifest, 1, 1);

        // Phase 2: block files and tombstones.
        let t = Instant::now();
        let listed: Vec<u64> = manifest.as_ref().map(|m| m.block_files.clone()).unwrap_or_default();
        for name in opts.fs.list_dir(&opts.dir)? {
            let Some(seq) = name.file_name().and_then(|n| n.to_str()).and_then(parse_block_file_name) else {
                continue;
            };
            if listed.binary_search(&seq).is_err() {
                opts.fs.remove(&name)?;
                report.orphan_files_removed += 1;
            }
        }
        for (i, seq) in listed.iter().enumerate() {
            progress(RecoveryPhase::BlockFiles, i as u64, listed.len() as u64);
            let path = opts.dir.join(crate::block_file::block_file_name(*seq));
            let file = Arc::new(BlockFile::open(opts.fs.clone(), &path)?);
            {
                let index = engine.index.read();
                for entry in file.entries() {
                    let Some(e) = index.entry(entry.series) else { continue };
                    let mut shard = engine.shard(entry.series).lock();
                    let data = shard.entry(entry.series).or_insert_with(|| SeriesData::new(e.field_type));
                    data.sealed.push(SealedBlock { file_seq: *seq, entry: entry.clone() });
                    report.sealed_blocks += 1;
                }
            }
            engine.files.write().insert(*seq, file);
        }
        if let Some(m) = &manifest {
            let index = engine.index.read();
            for t in &m.tombstones {
                let Some(e) = index.entry(t.series) else { continue };
                let mut shard = engine.shard(t.series).lock();
                let data = shard.entry(t.series).or_insert_with(|| SeriesData::new(e.field_type));
                data.tombstones.push(Tombstone {
                    range: TimeRange { min_ns: t.min_ts, max_ns: t.max_ts },
                    upto_file_seq: t.upto_file_seq,
                });
                report.tombstones += 1;
            }
        }
        report.block_files = listed.len();
        report.block_files_s = t.elapsed().as_secs_f64();
        progress(RecoveryPhase::BlockFiles, listed.len() as u64, listed.len() as u64);

        Ok(Loaded { engine, manifest, report, same_log, started })
    }
}
