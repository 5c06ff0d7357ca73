//! [`SeriesEngine`]: the durable time-series store (declog.txt sections 2.1
//! and 5.1, the Beringei-style engine DecLog runs on): the engine's parts
//! ([`SeriesCore`]: index, series data, block files and checkpoint state)
//! and one commit protocol behind [`SeriesProtocol`] (`none`, serial on
//! PMem or SSD, DecLog on PMem or SSD). Every call is the protocol's; this
//! type only routes, and answers the metadata reads the index serves alone.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crate::core::checkpoint::CheckpointReport;
use crate::core::compact::{CompactMode, CompactionReport};
use crate::core::read::SeriesPoints;
use crate::core::{EngineCounters, SeriesCore};
use crate::declog::{DeclogProtocol, DeclogSide};
use crate::error::EngineError;
use crate::model::{FieldValue, Point, SeriesId, TimeRange, TimestampNs};
use crate::options::EngineOptions;
use crate::protocol::{ProtocolOpener, Recovered, SeriesProtocol};
use crate::recovery::{RecoveryPhase, RecoveryReport};
use crate::retention::{DbRetention, RetentionCatalog, RetentionChange, RetentionFile};
use crate::store::{SeriesInfo, SeriesStore, WriteOutcome};
use crate::tag_index::{MeasurementTags, MeasurementTagsCache};
use crate::txn::{TxnOp, TxnOutcome, ValueRef};
use crate::wal::WalRecord;

/// A point-in-time view of the engine's size and activity.
#[derive(Clone, Debug, Default)]
pub struct EngineStats {
    pub protocol: &'static str,
    pub databases: usize,
    pub series: usize,
    pub dram_points: u64,
    pub dram_bytes: u64,
    pub sealed_blocks: u64,
    pub block_files: u64,
    pub block_file_bytes: u64,
    pub log_bytes_since_checkpoint: u64,
    pub txns_committed: u64,
    pub values_written: u64,
    pub points_written: u64,
    pub log_bytes_written: u64,
    pub checkpoints: u64,
    /// Compactions that merged block files, the files and bytes they merged.
    pub compactions: u64,
    pub compacted_files: u64,
    pub compacted_input_bytes: u64,
    /// Writers held back for lack of log room (DecLog), and for how long.
    pub log_throttles: u64,
    pub log_throttled_ns: u64,
    pub last_checkpoint_s: f64,
    pub checkpoint_lsn: u64,
}

pub struct SeriesEngine {
    core: SeriesCore,
    protocol: Box<dyn SeriesProtocol>,
    /// Retention policies, in the `RETENTION` file beside the manifest.
    retention: RetentionCatalog,
    /// Tag indexes of measurements, by series version.
    tags_cache: MeasurementTagsCache,
}

impl SeriesEngine {
    /// Opens the engine: loads the checkpoint (manifest, block files), then
    /// `opener` replays its log past it and becomes the running protocol.
    /// `progress(phase, done, total)` is called as work proceeds.
    pub fn open(
        opts: EngineOptions,
        opener: Box<dyn ProtocolOpener>,
        progress: &dyn Fn(RecoveryPhase, u64, u64),
    ) -> Result<(Arc<SeriesEngine>, RecoveryReport), EngineError> {
        let started = Instant::now();
        let mut report = RecoveryReport { protocol: opener.name().to_string(), ..Default::default() };
        let (core, manifest) = SeriesCore::load(opts, &mut report, progress)?;
        let Recovered { protocol, checkpoint_now } =
            opener.recover(&core, manifest.as_ref(), &mut report, progress)?;
        let databases = core.index().read().databases();
        let file = RetentionFile { fs: core.options().fs.clone(), dir: core.options().dir.clone() };
        let retention = RetentionCatalog::open(file, &databases)?;
        let engine =
            Arc::new(SeriesEngine { core, protocol, retention, tags_cache: MeasurementTagsCache::default() });
        if checkpoint_now {
            engine.checkpoint()?;
        }
        let index = engine.core.index().read();
        report.databases = index.databases().len();
        report.series = index.total_series();
        drop(index);
        report.total_s = started.elapsed().as_secs_f64();
        Ok((engine, report))
    }

    pub fn options(&self) -> &EngineOptions {
        self.core.options()
    }

    pub fn protocol(&self) -> &'static str {
        self.protocol.name()
    }

    /// The DecLog side, when the engine runs DecLog.
    pub fn declog(&self) -> Option<&DeclogSide> {
        self.protocol.as_any().downcast_ref::<DeclogProtocol>().map(DeclogProtocol::side)
    }

    /// `Some(reason)` once a log failure stopped writes.
    pub fn writes_stopped(&self) -> Option<String> {
        self.core.health().stopped_because()
    }

    pub fn counters(&self) -> &EngineCounters {
        self.core.counters()
    }

    /// Writes one request as one transaction.
    pub fn write_points(&self, db: &str, points: &[Point]) -> Result<WriteOutcome, EngineError> {
        self.protocol.write(&self.core, db, points)
    }

    /// Runs `ops` as one transaction in `db`.
    pub fn execute(&self, db: &str, ops: &[TxnOp]) -> Result<TxnOutcome, EngineError> {
        self.protocol.execute(&self.core, db, ops)
    }

    /// Runs independent transactions submitted together, as concurrent
    /// clients would: each is atomic and acknowledged on its own, the
    /// result of each at its index, and each sees every earlier one.
    pub fn execute_group(&self, db: &str, txns: &[Vec<TxnOp>]) -> Vec<Result<TxnOutcome, EngineError>> {
        self.protocol.execute_group(&self.core, db, txns)
    }

    /// The value of one point, or None.
    pub fn read_value(
        &self,
        db: &str,
        value: &ValueRef,
        ts: TimestampNs,
    ) -> Result<Option<FieldValue>, EngineError> {
        self.core.read_value(db, value, ts)
    }

    /// Reads the points of `ids` in `range` from one snapshot.
    pub fn read_series(&self, ids: &[SeriesId], range: TimeRange) -> Result<Vec<SeriesPoints>, EngineError> {
        self.core.read_series(ids, range)
    }

    /// Takes a checkpoint now (also called on graceful shutdown).
    pub fn checkpoint(&self) -> Result<CheckpointReport, EngineError> {
        self.protocol.checkpoint(&self.core)
    }

    /// Merges the newest block files when more than `compact_above_files`
    /// are open, with a manifest of its own (`core::compact`). What the
    /// background checkpointer runs after each checkpoint; never part of a
    /// checkpoint, so commits do not wait for it.
    pub fn compact(&self) -> Result<CompactionReport, EngineError> {
        self.core.compact(CompactMode::Tiered)
    }

    /// Merges every block file into one, dropping overwritten and deleted
    /// points (points in DRAM stay there: checkpoint first to include them).
    pub fn compact_all(&self) -> Result<CompactionReport, EngineError> {
        self.core.compact(CompactMode::All)
    }

    /// Bytes of log written since the last checkpoint.
    pub fn log_bytes_since_checkpoint(&self) -> u64 {
        self.protocol.log_bytes_since_checkpoint(&self.core)
    }

    /// Whether the commit protocol asks for a checkpoint now (its log is
    /// getting full); a background checkpointer polls it.
    pub fn checkpoint_wanted(&self) -> bool {
        self.protocol.checkpoint_wanted()
    }

    fn commit_barrier(&self, rec: WalRecord) -> Result<(), EngineError> {
        self.protocol.commit_barrier(&self.core, rec)
    }

    pub fn stats(&self) -> EngineStats {
        let index = self.core.index().read();
        let mut s = EngineStats {
            protocol: self.protocol(),
            databases: index.databases().len(),
            series: index.total_series(),
            ..Default::default()
        };
        drop(index);
        let totals = self.core.data().totals();
        s.dram_points = totals.dram_points;
        s.dram_bytes = totals.dram_bytes;
        s.sealed_blocks = totals.sealed_blocks;
        (s.block_files, s.block_file_bytes) = self.core.blocks().file_totals();
        s.checkpoint_lsn = self.core.blocks().mark().checkpoint_lsn.0;
        s.last_checkpoint_s = self.core.blocks().last_duration_s();
        s.log_bytes_since_checkpoint = self.log_bytes_since_checkpoint();
        let c = self.core.counters();
        s.txns_committed = c.txns_committed.load(Ordering::Relaxed);
        s.points_written = c.points_written.load(Ordering::Relaxed);
        s.values_written = c.values_written.load(Ordering::Relaxed);
        s.log_bytes_written =
            self.protocol.log_device_bytes().unwrap_or_else(|| c.log_bytes_written.load(Ordering::Relaxed));
        s.checkpoints = c.checkpoints.load(Ordering::Relaxed);
        s.compactions = c.compactions.load(Ordering::Relaxed);
        s.compacted_files = c.compacted_files.load(Ordering::Relaxed);
        s.compacted_input_bytes = c.compacted_input_bytes.load(Ordering::Relaxed);
        (s.log_throttles, s.log_throttled_ns) = self.protocol.log_throttles();
        s
    }

    fn known_database(&self, db: &str) -> Result<(), EngineError> {
        match self.core.index().read().has_database(db) {
            true => Ok(()),
            false => Err(EngineError::UnknownDatabase(db.to_string())),
        }
    }
}

impl SeriesStore for SeriesEngine {
    fn databases(&self) -> Vec<String> {
        self.core.index().read().databases()
    }

    fn create_database(&self, name: &str) -> Result<(), EngineError> {
        crate::model::validate_database_name(name)?;
        if self.core.index().read().has_database(name) {
            return Ok(());
        }
        self.commit_barrier(WalRecord::CreateDatabase { db: name.to_string() })
    }

    fn measurements(&self, db: &str) -> Result<Vec<String>, EngineError> {
        self.core.index().read().measurements(db).ok_or_else(|| EngineError::UnknownDatabase(db.to_string()))
    }

    fn series(&self, db: &str, measurement: &str) -> Result<Vec<SeriesInfo>, EngineError> {
        self.core
            .index()
            .read()
            .series_of(db, measurement)
            .ok_or_else(|| EngineError::UnknownDatabase(db.to_string()))
    }

    fn series_version(&self, db: &str, measurement: &str) -> Option<u64> {
        self.core.index().read().measurement_version(db, measurement)
    }

    fn measurement_tags(&self, db: &str, measurement: &str) -> Result<Arc<MeasurementTags>, EngineError> {
        let index = self.core.index().read();
        match index.measurement_version(db, measurement) {
            Some(version) => Ok(self.tags_cache.get_or_build(db, measurement, version, || {
                MeasurementTags::from_series(&index.series_of(db, measurement).unwrap_or_default())
            })),
            None => {
                drop(index);
                Ok(Arc::new(MeasurementTags::from_series(&self.series(db, measurement)?)))
            }
        }
    }

    fn read(&self, db: &str, ids: &[SeriesId], range: TimeRange) -> Result<Vec<SeriesPoints>, EngineError> {
        self.known_database(db)?;
        self.read_series(ids, range)
    }

    fn read_last(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
    ) -> Result<Vec<Option<(TimestampNs, FieldValue)>>, EngineError> {
        self.known_database(db)?;
        self.core.read_last(ids, range)
    }

    fn read_at_times(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
        times: &[&[TimestampNs]],
    ) -> Result<Vec<SeriesPoints>, EngineError> {
        self.known_database(db)?;
        self.core.read_series_at_times(ids, range, times)
    }

    fn read_pruned(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
        may_pass: &(dyn Fn(usize, &FieldValue, &FieldValue) -> bool + Sync),
    ) -> Result<Vec<SeriesPoints>, EngineError> {
        self.known_database(db)?;
        self.core.read_series_pruned(ids, range, may_pass)
    }

    fn window_aggregates(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
        window: Option<crate::window_agg::WindowSpec>,
    ) -> Result<Vec<Vec<crate::window_agg::PartialAggregate>>, EngineError> {
        self.known_database(db)?;
        self.core.window_aggregates(ids, range, window)
    }

    fn time_span(&self, db: &str, ids: &[SeriesId]) -> Result<Option<TimeRange>, EngineError> {
        self.known_database(db)?;
        let data = self.core.data();
        let ends = ids.iter().filter_map(|id| data.ts_range(*id)).flat_map(|(min, max)| [min, max]);
        Ok(crate::store::span_of(ends))
    }

    fn read_timestamps(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
    ) -> Result<Vec<Vec<TimestampNs>>, EngineError> {
        self.known_database(db)?;
        self.core.read_timestamps(ids, range)
    }

    fn point_count_bounds(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
    ) -> Result<Vec<u64>, EngineError> {
        self.known_database(db)?;
        Ok(self.core.data().count_bounds(ids, range))
    }

    fn write(&self, db: &str, points: &[Point]) -> Result<WriteOutcome, EngineError> {
        self.write_points(db, points)
    }

    fn delete(&self, db: &str, ids: &[SeriesId], range: TimeRange) -> Result<u64, EngineError> {
        let series: Vec<SeriesId> = {
            let index = self.core.index().read();
            if !index.has_database(db) {
                return Err(EngineError::UnknownDatabase(db.to_string()));
            }
            ids.iter().copied().filter(|id| index.entry(*id).is_some_and(|e| e.db == db)).collect()
        };
        if series.is_empty() || range.is_empty() {
            return Ok(0);
        }
        let n = series.len() as u64;
        self.commit_barrier(WalRecord::Delete { db: db.to_string(), series, range })?;
        Ok(n)
    }

    fn drop_measurement(&self, db: &str, measurement: &str) -> Result<(), EngineError> {
        self.known_database(db)?;
        self.commit_barrier(WalRecord::DropMeasurement {
            db: db.to_string(),
            measurement: measurement.to_string(),
        })
    }

    fn drop_database(&self, db: &str) -> Result<(), EngineError> {
        if !self.core.index().read().has_database(db) {
            return Ok(());
        }
        self.commit_barrier(WalRecord::DropDatabase { db: db.to_string() })?;
        self.retention.forget(db)
    }

    fn drop_series(&self, db: &str, ids: &[SeriesId]) -> Result<u64, EngineError> {
        let series: Vec<SeriesId> = {
            let index = self.core.index().read();
            if !index.has_database(db) {
                return Err(EngineError::UnknownDatabase(db.to_string()));
            }
            ids.iter().copied().filter(|id| index.entry(*id).is_some_and(|e| e.db == db)).collect()
        };
        if series.is_empty() {
            return Ok(0);
        }
        let n = series.len() as u64;
        self.commit_barrier(WalRecord::DropSeries { db: db.to_string(), series })?;
        Ok(n)
    }

    fn retention_policies(&self, db: &str) -> Result<DbRetention, EngineError> {
        self.known_database(db)?;
        Ok(self.retention.get(db))
    }

    fn change_retention(&self, db: &str, change: &RetentionChange) -> Result<(), EngineError> {
        self.known_database(db)?;
        self.retention.change(db, change)
    }
}
