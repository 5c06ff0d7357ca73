//! [`SeriesEngine`]: the durable time-series store (declog.txt sections 2.1
//! and 5.1, the Beringei-style engine DecLog runs on), made durable by any
//! [`CommitLog`] (serial on PMem, serial on SSD, or none).
//!
//! Write path (one request = one transaction = one WAL record):
//! 1. under the *order* mutex: check field types against the index (a
//!    conflicting point is rejected, the rest go on), assign ids to new
//!    series, encode the record, submit it to the log (which fixes its place
//!    in the replay order), publish the new series in the index, take a
//!    ticket;
//! 2. outside it: wait until the log says the record is durable (group
//!    commit on SSD lets concurrent requests share one fdatasync);
//! 3. apply in ticket order (= log order, so live state equals replayed
//!    state even for two requests overwriting the same point) under the
//!    exclusive *apply gate*; readers hold the gate shared while they copy
//!    data out, so a request is visible all at once or not at all;
//! 4. acknowledge.
//!
//! Deletes, drops and database creation are rare: they drain the applier
//! and commit synchronously under the order mutex. Checkpoints (module
//! `checkpoint`) and recovery (module `recovery`) complete the picture.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};
use strata_log::{CommitLog, LogError, Lsn};
use strata_media::TxnId;

use crate::block_file::BlockFile;
use crate::declog::DeclogSide;
use crate::error::EngineError;
use crate::index::SeriesIndex;
use crate::model::{FieldType, FieldValue, Point, SeriesId, SeriesKey, TimeRange, TimestampNs};
use crate::options::EngineOptions;
use crate::series_data::{SealedBlock, SeriesData};
use crate::store::{SeriesInfo, SeriesStore, WriteOutcome};
use crate::wal::{NewSeries, WalRecord};

/// A series created by the request being planned: (measurement, tags, field).
type NewSeriesRef<'a> = (&'a str, &'a [(String, String)], &'a str);

/// Series data is split into shards by series id.
pub const SHARD_COUNT: usize = 16;

/// State guarded by the order mutex.
pub(crate) struct OrderState {
    pub(crate) next_txn: u64,
    pub(crate) next_ticket: u64,
    /// DecLog: per series, the highest timestamp any planned write or
    /// delete touched (see `crate::declog::write_path`).
    pub(crate) planned_last: foldhash::HashMap<SeriesId, TimestampNs>,
}

/// Checkpoint bookkeeping (guarded by its own mutex, taken under `order`).
pub(crate) struct CheckpointState {
    pub(crate) checkpoint_seq: u64,
    pub(crate) checkpoint_lsn: Lsn,
    pub(crate) next_file_seq: u64,
    pub(crate) last_at: Instant,
    pub(crate) last_duration_s: f64,
}

/// Counters for `/metrics` and benchmarks.
#[derive(Default)]
pub struct EngineCounters {
    pub txns_committed: AtomicU64,
    pub points_written: AtomicU64,
    pub values_written: AtomicU64,
    pub log_bytes_written: AtomicU64,
    pub checkpoints: AtomicU64,
    pub checkpoint_seconds_total_us: AtomicU64,
}

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
    pub last_checkpoint_s: f64,
    pub checkpoint_lsn: u64,
}

pub struct SeriesEngine {
    pub(crate) opts: EngineOptions,
    pub(crate) log: Box<dyn CommitLog>,
    pub(crate) index: RwLock<SeriesIndex>,
    pub(crate) shards: Vec<Mutex<foldhash::HashMap<SeriesId, SeriesData>>>,
    pub(crate) gate: RwLock<()>,
    pub(crate) order: Mutex<OrderState>,
    pub(crate) applied: Mutex<u64>,
    pub(crate) applied_changed: Condvar,
    pub(crate) files: RwLock<BTreeMap<u64, Arc<BlockFile>>>,
    pub(crate) ckpt: Mutex<CheckpointState>,
    pub(crate) poisoned: Mutex<Option<String>>,
    /// Set when the engine runs DecLog (then `log` is unused).
    pub(crate) declog: Option<DeclogSide>,
    pub counters: EngineCounters,
}

impl SeriesEngine {
    pub(crate) fn empty(opts: EngineOptions, log: Box<dyn CommitLog>, index: SeriesIndex) -> SeriesEngine {
        SeriesEngine {
            opts,
            log,
            index: RwLock::new(index),
            shards: (0..SHARD_COUNT).map(|_| Mutex::new(foldhash::HashMap::default())).collect(),
            gate: RwLock::new(()),
            order: Mutex::new(OrderState {
                next_txn: 1,
                next_ticket: 0,
                planned_last: foldhash::HashMap::default(),
            }),
            applied: Mutex::new(0),
            applied_changed: Condvar::new(),
            files: RwLock::new(BTreeMap::new()),
            ckpt: Mutex::new(CheckpointState {
                checkpoint_seq: 0,
                checkpoint_lsn: Lsn(0),
                next_file_seq: 1,
                last_at: Instant::now(),
                last_duration_s: 0.0,
            }),
            poisoned: Mutex::new(None),
            declog: None,
            counters: EngineCounters::default(),
        }
    }

    pub fn options(&self) -> &EngineOptions {
        &self.opts
    }

    pub fn protocol(&self) -> &'static str {
        match &self.declog {
            Some(dl) => dl.options.name,
            None => self.log.name(),
        }
    }

    /// The DecLog side, when the engine runs DecLog.
    pub fn declog(&self) -> Option<&DeclogSide> {
        self.declog.as_ref()
    }

    pub(crate) fn shard(&self, id: SeriesId) -> &Mutex<foldhash::HashMap<SeriesId, SeriesData>> {
        &self.shards[(id.0 % SHARD_COUNT as u64) as usize]
    }

    /// `Err(reason)` once a log failure stopped writes.
    pub fn health(&self) -> Result<(), String> {
        match &*self.poisoned.lock() {
            Some(why) => Err(format!("writes stopped after a log failure: {why}")),
            None => Ok(()),
        }
    }

    pub(crate) fn check_poisoned(&self) -> Result<(), EngineError> {
        match &*self.poisoned.lock() {
            Some(why) => Err(EngineError::Other(format!(
                "the engine stopped accepting writes after a log failure ({why}); restart to recover"
            ))),
            None => Ok(()),
        }
    }

    pub(crate) fn poison(&self, why: &LogError) {
        self.poisoned.lock().get_or_insert_with(|| why.to_string());
    }

    /// Waits until every ticket handed out has been applied (or skipped).
    pub(crate) fn drain(&self, order: &OrderState) {
        let mut applied = self.applied.lock();
        while *applied < order.next_ticket {
            self.applied_changed.wait(&mut applied);
        }
    }

    /// Runs `apply` when it is `ticket`'s turn, then passes the turn on.
    fn apply_in_order(&self, ticket: u64, apply: impl FnOnce()) {
        let mut applied = self.applied.lock();
        while *applied != ticket {
            self.applied_changed.wait(&mut applied);
        }
        apply();
        *applied += 1;
        self.applied_changed.notify_all();
    }

    /// Submits a record under the order mutex; a full PMem ring checkpoints
    /// (emptying the log) and retries once.
    fn submit_locked(
        &self,
        order: &mut MutexGuard<'_, OrderState>,
        payload: &[u8],
    ) -> Result<Lsn, EngineError> {
        let txn = TxnId(order.next_txn);
        order.next_txn += 1;
        let lsn = match self.log.submit(txn, payload) {
            Err(LogError::Full { .. }) => {
                self.checkpoint_locked(order)?;
                self.log.submit(txn, payload)?
            }
            other => other.inspect_err(|e| {
                if matches!(e, LogError::Poisoned(_)) {
                    self.poison(e);
                }
            })?,
        };
        self.counters
            .log_bytes_written
            .fetch_add(strata_log::record::record_len(payload.len() as u64), Ordering::Relaxed);
        Ok(lsn)
    }

    /// Commits a rare operation synchronously under the order mutex, after
    /// draining the applier, and applies it.
    fn commit_sync(&self, rec: WalRecord) -> Result<(), EngineError> {
        if let Some(dl) = &self.declog {
            return self.declog_barrier(dl, &rec);
        }
        let mut order = self.order.lock();
        self.check_poisoned()?;
        self.drain(&order);
        let payload = rec.encode();
        let lsn = self.submit_locked(&mut order, &payload)?;
        if let Err(e) = self.log.wait(lsn) {
            self.poison(&e);
            return Err(e.into());
        }
        self.apply_record(&rec, false);
        let mut applied = self.applied.lock();
        *applied += 1;
        order.next_ticket += 1;
        self.counters.txns_committed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Applies one record to the index and the series data. Used live (after
    /// the record is durable) and by replay. `replay`: skip points of series
    /// the index does not know (dropped by a later record of the log).
    pub(crate) fn apply_record(&self, rec: &WalRecord, replay: bool) -> u64 {
        match rec {
            WalRecord::CreateDatabase { db } => {
                self.index.write().create_database(db);
                0
            }
            WalRecord::Write { db, new_series, points } => {
                if replay {
                    let mut index = self.index.write();
                    for s in new_series {
                        index.insert(db, s.id, s.key.clone(), s.field_type);
                    }
                }
                let index = self.index.read();
                let _gate = self.gate.write();
                let mut applied = 0;
                for (id, ts, value) in points {
                    if replay && index.entry(*id).is_none_or(|e| e.field_type != value.field_type()) {
                        continue;
                    }
                    let mut shard = self.shard(*id).lock();
                    let data = shard.entry(*id).or_insert_with(|| SeriesData::new(value.field_type()));
                    if data.field_type() != value.field_type() {
                        // Only a damaged or foreign log can get here: the write
                        // path type-checks against the index before logging.
                        debug_assert!(replay, "live apply of a mistyped point to {id}");
                        continue;
                    }
                    data.insert(*ts, value.clone());
                    applied += 1;
                }
                applied
            }
            WalRecord::Delete { series, range, .. } => {
                let max_file_seq = self.ckpt.lock().next_file_seq.saturating_sub(1);
                let _gate = self.gate.write();
                for id in series {
                    if let Some(data) = self.shard(*id).lock().get_mut(id) {
                        data.delete(*range, max_file_seq);
                    }
                }
                0
            }
            WalRecord::DropMeasurement { db, measurement } => {
                let ids = self.index.write().drop_measurement(db, measurement);
                let _gate = self.gate.write();
                for id in ids {
                    self.shard(id).lock().remove(&id);
                }
                0
            }
        }
    }

    /// Type-checks a request and assigns ids to new series (index read only).
    pub(crate) fn plan_write(
        &self,
        db: &str,
        points: &[Point],
    ) -> Result<(WalRecord, WriteOutcome), EngineError> {
        let index = self.index.read();
        if !index.has_database(db) {
            return Err(EngineError::UnknownDatabase(db.to_string()));
        }
        let mut outcome = WriteOutcome::default();
        let mut new_series: Vec<NewSeries> = Vec::new();
        let mut new_ids: HashMap<NewSeriesRef<'_>, SeriesId> = HashMap::new();
        let mut new_types: HashMap<(&str, &str), FieldType> = HashMap::new();
        let mut out_points = Vec::new();
        let mut next_id = index.next_id();
        for (i, p) in points.iter().enumerate() {
            if let Some(why) = malformed(p) {
                outcome.rejected.push((i, why));
                continue;
            }
            let view = index.point_view(db, &p.measurement, &p.tags);
            let conflict = p.fields.iter().find_map(|(f, v)| {
                let have = view
                    .field_type(f)
                    .or_else(|| new_types.get(&(p.measurement.as_str(), f.as_str())).copied())?;
                (have != v.field_type()).then(|| {
                    crate::model::field_type_conflict_message(f, &p.measurement, v.field_type(), have)
                })
            });
            if let Some(why) = conflict {
                outcome.rejected.push((i, why));
                continue;
            }
            for (f, v) in &p.fields {
                let known = view.series(f);
                let id = match known {
                    Some(id) => id,
                    None => *new_ids.entry((&p.measurement, &p.tags, f)).or_insert_with(|| {
                        let id = SeriesId(next_id);
                        next_id += 1;
                        new_types.insert((&p.measurement, f), v.field_type());
                        new_series.push(NewSeries {
                            id,
                            key: SeriesKey {
                                measurement: p.measurement.clone(),
                                tags: p.tags.clone(),
                                field: f.clone(),
                            },
                            field_type: v.field_type(),
                        });
                        id
                    }),
                };
                out_points.push((id, p.timestamp_ns, v.clone()));
            }
            outcome.points_written += 1;
            outcome.values_written += p.fields.len();
        }
        if let Some(limit) = self.opts.max_series_per_database {
            if index.series_count(db) + new_series.len() as u64 > limit {
                return Err(EngineError::SeriesLimit { db: db.to_string(), limit });
            }
        }
        Ok((WalRecord::Write { db: db.to_string(), new_series, points: out_points }, outcome))
    }

    /// Writes one request as one transaction (see the module comment).
    pub fn write_points(&self, db: &str, points: &[Point]) -> Result<WriteOutcome, EngineError> {
        if let Some(dl) = &self.declog {
            return self.run_declog_txn(dl, db, points, &[]).map(|o| o.write);
        }
        let mut order = self.order.lock();
        self.check_poisoned()?;
        let (rec, outcome) = self.plan_write(db, points)?;
        if outcome.points_written == 0 {
            return Ok(outcome);
        }
        let payload = rec.encode();
        let max_bytes = self.log.max_payload_bytes();
        if payload.len() as u64 > max_bytes {
            return Err(EngineError::RequestTooLarge { record_bytes: payload.len() as u64, max_bytes });
        }
        let lsn = self.submit_locked(&mut order, &payload)?;
        if let WalRecord::Write { db, new_series, .. } = &rec {
            let mut index = self.index.write();
            for s in new_series {
                index.insert(db, s.id, s.key.clone(), s.field_type);
            }
        }
        let ticket = order.next_ticket;
        order.next_ticket += 1;
        drop(order);
        let durable = self.log.wait(lsn);
        if let Err(e) = &durable {
            self.poison(e);
        }
        self.apply_in_order(ticket, || {
            if durable.is_ok() {
                self.apply_record(&rec, false);
            }
        });
        durable?;
        self.counters.txns_committed.fetch_add(1, Ordering::Relaxed);
        self.counters.points_written.fetch_add(outcome.points_written as u64, Ordering::Relaxed);
        self.counters.values_written.fetch_add(outcome.values_written as u64, Ordering::Relaxed);
        Ok(outcome)
    }

    /// Reads the points of `ids` in `range` from one snapshot.
    pub fn read_series(
        &self,
        ids: &[SeriesId],
        range: TimeRange,
    ) -> Result<Vec<Vec<(TimestampNs, FieldValue)>>, EngineError> {
        // Under the gate: the DRAM points, and which immutable blocks to read
        // (with the open files). Block I/O and decoding happen after it is
        // released, so a long scan never holds up acknowledgements.
        let snapshots: Vec<Option<SeriesSnapshot>> = {
            let _gate = self.gate.read();
            let files = self.files.read();
            ids.iter()
                .map(|id| {
                    let shard = self.shard(*id).lock();
                    let data = shard.get(id)?;
                    let sealed = data
                        .sealed_in(range)
                        .map(|b| {
                            Ok((
                                files.get(&b.file_seq).cloned().ok_or_else(|| {
                                    EngineError::Other(format!(
                                        "block file {} of {id} is not open",
                                        b.file_seq
                                    ))
                                })?,
                                b.clone(),
                            ))
                        })
                        .collect::<Result<Vec<_>, EngineError>>();
                    let mut dram = BTreeMap::new();
                    data.overlay_dram(range, &mut dram);
                    Some(sealed.map(|sealed| SeriesSnapshot {
                        sealed,
                        tombstones: data.tombstones.clone(),
                        dram,
                    }))
                })
                .map(|s| s.transpose())
                .collect::<Result<_, EngineError>>()?
        };
        ids.iter()
            .zip(snapshots)
            .map(|(id, snap)| match snap {
                None => Ok(Vec::new()),
                Some(snap) => snap.materialize(*id, range),
            })
            .collect()
    }

    pub fn stats(&self) -> EngineStats {
        let index = self.index.read();
        let mut s = EngineStats {
            protocol: self.protocol(),
            databases: index.databases().len(),
            series: index.total_series(),
            ..Default::default()
        };
        drop(index);
        for shard in &self.shards {
            for data in shard.lock().values() {
                s.dram_points += data.dram_points() as u64;
                s.dram_bytes += data.dram_bytes() as u64;
                s.sealed_blocks += data.sealed.len() as u64;
            }
        }
        for f in self.files.read().values() {
            s.block_files += 1;
            s.block_file_bytes += f.len_bytes();
        }
        let ck = self.ckpt.lock();
        s.checkpoint_lsn = ck.checkpoint_lsn.0;
        s.last_checkpoint_s = ck.last_duration_s;
        drop(ck);
        s.log_bytes_since_checkpoint = self.log_bytes_since_checkpoint();
        let c = &self.counters;
        s.txns_committed = c.txns_committed.load(Ordering::Relaxed);
        s.points_written = c.points_written.load(Ordering::Relaxed);
        s.values_written = c.values_written.load(Ordering::Relaxed);
        s.log_bytes_written = c.log_bytes_written.load(Ordering::Relaxed);
        s.checkpoints = c.checkpoints.load(Ordering::Relaxed);
        s
    }
}

/// One series' part of a read snapshot: the sealed blocks to read (with
/// their files, immutable), its tombstones and a copy of its DRAM points.
struct SeriesSnapshot {
    sealed: Vec<(Arc<BlockFile>, SealedBlock)>,
    tombstones: Vec<crate::series_data::Tombstone>,
    dram: BTreeMap<TimestampNs, FieldValue>,
}

impl SeriesSnapshot {
    /// Reads the blocks, oldest file first, masks tombstoned points, then
    /// lays the DRAM points over them (newest wins).
    fn materialize(
        mut self,
        id: SeriesId,
        range: TimeRange,
    ) -> Result<Vec<(TimestampNs, FieldValue)>, EngineError> {
        let mut points = BTreeMap::new();
        for (file, b) in &self.sealed {
            let bytes = file.read_block(&b.entry)?;
            let block = crate::gorilla::decode_block(&bytes).map_err(|e| {
                EngineError::corruption(file.path().display().to_string(), format!("block of {id}: {e}"))
            })?;
            for (i, t) in block.timestamps.iter().enumerate() {
                let masked =
                    self.tombstones.iter().any(|x| x.upto_file_seq >= b.file_seq && x.range.contains(*t));
                if range.contains(*t) && !masked {
                    points.insert(*t, block.value(i));
                }
            }
        }
        points.append(&mut self.dram);
        Ok(points.into_iter().collect())
    }
}

/// A point the model does not allow (the line protocol parser never
/// produces one; in-process callers might).
fn malformed(p: &Point) -> Option<String> {
    if p.measurement.is_empty() {
        return Some("empty measurement name".into());
    }
    if p.fields.is_empty() {
        return Some(format!("point of measurement \"{}\" has no fields", p.measurement));
    }
    if p.tags.windows(2).any(|w| w[0].0 >= w[1].0) {
        return Some(format!(
            "tags of a point of \"{}\" are not sorted by key with unique keys",
            p.measurement
        ));
    }
    let mut keys: Vec<&str> = p.fields.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    if keys.windows(2).any(|w| w[0] == w[1]) {
        return Some(format!("a point of \"{}\" has the same field twice", p.measurement));
    }
    None
}

impl SeriesStore for SeriesEngine {
    fn databases(&self) -> Vec<String> {
        self.index.read().databases()
    }

    fn create_database(&self, name: &str) -> Result<(), EngineError> {
        crate::model::validate_database_name(name)?;
        if self.index.read().has_database(name) {
            return Ok(());
        }
        self.commit_sync(WalRecord::CreateDatabase { db: name.to_string() })
    }

    fn measurements(&self, db: &str) -> Result<Vec<String>, EngineError> {
        self.index.read().measurements(db).ok_or_else(|| EngineError::UnknownDatabase(db.to_string()))
    }

    fn series(&self, db: &str, measurement: &str) -> Result<Vec<SeriesInfo>, EngineError> {
        self.index
            .read()
            .series_of(db, measurement)
            .ok_or_else(|| EngineError::UnknownDatabase(db.to_string()))
    }

    fn read(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
    ) -> Result<Vec<Vec<(TimestampNs, FieldValue)>>, EngineError> {
        if !self.index.read().has_database(db) {
            return Err(EngineError::UnknownDatabase(db.to_string()));
        }
        self.read_series(ids, range)
    }

    fn write(&self, db: &str, points: &[Point]) -> Result<WriteOutcome, EngineError> {
        self.write_points(db, points)
    }

    fn delete(&self, db: &str, ids: &[SeriesId], range: TimeRange) -> Result<u64, EngineError> {
        let series: Vec<SeriesId> = {
            let index = self.index.read();
            if !index.has_database(db) {
                return Err(EngineError::UnknownDatabase(db.to_string()));
            }
            ids.iter().copied().filter(|id| index.entry(*id).is_some_and(|e| e.db == db)).collect()
        };
        if series.is_empty() || range.is_empty() {
            return Ok(0);
        }
        let n = series.len() as u64;
        self.commit_sync(WalRecord::Delete { db: db.to_string(), series, range })?;
        Ok(n)
    }

    fn drop_measurement(&self, db: &str, measurement: &str) -> Result<(), EngineError> {
        if !self.index.read().has_database(db) {
            return Err(EngineError::UnknownDatabase(db.to_string()));
        }
        self.commit_sync(WalRecord::DropMeasurement {
            db: db.to_string(),
            measurement: measurement.to_string(),
        })
    }
}
