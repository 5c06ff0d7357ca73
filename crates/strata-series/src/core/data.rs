//! [`DataPart`]: the series' points in memory (declog.txt section 2.1, the
//! Beringei layout): one [`SeriesData`] per series, sharded by series id,
//! behind the *apply gate*. A commit protocol applies a transaction's points
//! with the gate held exclusively; readers hold it shared while they copy
//! data out, so a transaction is visible all at once or not at all.
//!
//! Owns: the shards and the gate. Knows nothing of the index, the block
//! files or the log: callers pass what it needs (field types, the newest
//! block-file sequence a delete masks).

use std::collections::{BTreeMap, BTreeSet};

use parking_lot::{Mutex, RwLock, RwLockWriteGuard};

use crate::block_file::BlockIndexEntry;
use crate::error::EngineError;
use crate::last_point::LastPoint;
use crate::model::{FieldType, FieldValue, SeriesId, TimeRange, TimestampNs};
use crate::series_data::{CompactionInput, SealInput, SealedBlock, SeriesData, Tombstone};

/// Series data is split into shards by series id.
pub const SHARD_COUNT: usize = 16;

type Shard = foldhash::HashMap<SeriesId, SeriesData>;

/// One change a commit protocol applies to one point.
#[derive(Clone, Debug)]
pub enum PointChange {
    /// Write unless a later update of the point was applied first (DecLog
    /// inserts: replay puts LSN-0 entries first, so a later update wins).
    Insert(FieldValue),
    /// Overwrite.
    Update(FieldValue),
    /// Delete the point.
    Delete,
}

/// DRAM totals for [`crate::EngineStats`].
#[derive(Copy, Clone, Debug, Default)]
pub struct DataTotals {
    pub dram_points: u64,
    pub dram_bytes: u64,
    pub sealed_blocks: u64,
}

/// A copy of one series' readable state under the gate: its sealed blocks
/// in `range`, its tombstones and its DRAM points in `range`.
pub struct SeriesCopy {
    pub sealed: Vec<SealedBlock>,
    pub tombstones: Vec<Tombstone>,
    pub dram: BTreeMap<TimestampNs, FieldValue>,
}

/// What the last-point cache gave for one series.
#[derive(Clone, Debug, PartialEq)]
pub enum LastLookup {
    /// Known without I/O: the newest point, or None (no point, or no such
    /// series).
    Known(Option<(TimestampNs, FieldValue)>),
    /// A read must find it: the newest point is at or after `from_ns` (the
    /// start of the sealed block reaching furthest), unless deletes masked
    /// everything there. Fill the cache with `epoch`.
    Read { epoch: u64, from_ns: TimestampNs },
}

pub struct DataPart {
    shards: Vec<Mutex<Shard>>,
    gate: RwLock<()>,
}

/// The apply gate held exclusively: changes made through it become visible
/// together when it drops.
pub struct ApplyBatch<'a> {
    part: &'a DataPart,
    _gate: RwLockWriteGuard<'a, ()>,
}

impl Default for DataPart {
    fn default() -> Self {
        DataPart {
            shards: (0..SHARD_COUNT).map(|_| Mutex::new(Shard::default())).collect(),
            gate: RwLock::new(()),
        }
    }
}

impl DataPart {
    fn shard(&self, id: SeriesId) -> &Mutex<Shard> {
        &self.shards[(id.0 % SHARD_COUNT as u64) as usize]
    }

    /// Takes the apply gate exclusively.
    pub fn batch(&self) -> ApplyBatch<'_> {
        ApplyBatch { part: self, _gate: self.gate.write() }
    }

    /// Copies out what a read of `ids` in `range` needs, from one snapshot
    /// (the gate held shared), and passes each copy through `with` while the
    /// gate is still held. `None` for a series with no data.
    pub fn copy_for_read<T>(
        &self,
        ids: &[SeriesId],
        range: TimeRange,
        mut with: impl FnMut(SeriesId, SeriesCopy) -> T,
    ) -> Vec<Option<T>> {
        let _gate = self.gate.read();
        ids.iter()
            .map(|id| {
                let shard = self.shard(*id).lock();
                let data = shard.get(id)?;
                let mut dram = BTreeMap::new();
                data.overlay_dram(range, &mut dram);
                let copy = SeriesCopy {
                    sealed: data.sealed_in(range).cloned().collect(),
                    tombstones: data.tombstones.clone(),
                    dram,
                };
                drop(shard);
                Some(with(*id, copy))
            })
            .collect()
    }

    /// What the last-point cache knows of each series, from one snapshot
    /// (the gate held shared). An unknown entry that DRAM answers is filled
    /// here; the others need a read ([`LastLookup::Read`]).
    pub fn last_lookup(&self, ids: &[SeriesId]) -> Vec<LastLookup> {
        let _gate = self.gate.read();
        ids.iter()
            .map(|id| {
                let mut shard = self.shard(*id).lock();
                let Some(data) = shard.get_mut(id) else { return LastLookup::Known(None) };
                let epoch = data.last_point().epoch();
                let known = match data.last_point().state() {
                    LastPoint::Point(t, v) => return LastLookup::Known(Some((*t, v.clone()))),
                    LastPoint::Empty => return LastLookup::Known(None),
                    LastPoint::Unknown if data.holds_nothing() => None,
                    LastPoint::Unknown => match data.newest_in_dram() {
                        Some(point) => Some(point),
                        None => {
                            let newest_block = data.sealed.iter().max_by_key(|b| b.entry.max_ts);
                            let from_ns = newest_block.map_or(TimestampNs::MIN, |b| b.entry.min_ts);
                            return LastLookup::Read { epoch, from_ns };
                        }
                    },
                };
                data.last_point_mut().fill(epoch, known.clone());
                LastLookup::Known(known)
            })
            .collect()
    }

    /// Keeps what a read found as a series' newest point, if nothing
    /// changed since the lookup that gave `epoch`.
    pub fn fill_last(&self, id: SeriesId, epoch: u64, newest: Option<(TimestampNs, FieldValue)>) {
        let _gate = self.gate.read();
        if let Some(data) = self.shard(id).lock().get_mut(&id) {
            data.last_point_mut().fill(epoch, newest);
        }
    }

    /// Per series, at least its number of points in `range`
    /// ([`SeriesData::count_bound`]; 0 for an unknown series).
    pub fn count_bounds(&self, ids: &[SeriesId], range: TimeRange) -> Vec<u64> {
        ids.iter().map(|id| self.shard(*id).lock().get(id).map_or(0, |d| d.count_bound(range))).collect()
    }

    /// The newest timestamp of a series' data (DRAM and sealed), if any.
    pub fn max_ts(&self, id: SeriesId) -> Option<TimestampNs> {
        self.shard(id).lock().get(&id).and_then(|d| d.max_ts())
    }

    /// The range of timestamps a series holds or masks
    /// ([`SeriesData::ts_range`]).
    pub fn ts_range(&self, id: SeriesId) -> Option<(TimestampNs, TimestampNs)> {
        self.shard(id).lock().get(&id).and_then(|d| d.ts_range())
    }

    /// Whether a series may hold the point at `ts` ([`SeriesData::may_hold`]).
    pub fn may_hold(&self, id: SeriesId, ts: TimestampNs) -> bool {
        self.shard(id).lock().get(&id).is_some_and(|d| d.may_hold(ts))
    }

    /// Loads a sealed block of a checkpoint (recovery).
    pub fn load_sealed(&self, id: SeriesId, field_type: FieldType, block: SealedBlock) {
        let mut shard = self.shard(id).lock();
        let data = shard.entry(id).or_insert_with(|| SeriesData::new(field_type));
        data.sealed.push(block);
        data.last_point_mut().forget();
    }

    /// Loads a tombstone of a checkpoint (recovery).
    pub fn load_tombstone(&self, id: SeriesId, field_type: FieldType, tombstone: Tombstone) {
        let mut shard = self.shard(id).lock();
        let data = shard.entry(id).or_insert_with(|| SeriesData::new(field_type));
        data.tombstones.push(tombstone);
        data.last_point_mut().forget();
    }

    /// Moves every series' DRAM points aside for sealing (under the gate,
    /// so readers see them before, during and after).
    pub fn freeze_all(&self) {
        let _gate = self.gate.write();
        for shard in &self.shards {
            for data in shard.lock().values_mut() {
                data.freeze();
            }
        }
    }

    /// Every series with data, shard by shard, each shard's ids sorted.
    pub fn ids_by_shard(&self) -> Vec<Vec<SeriesId>> {
        self.shards
            .iter()
            .map(|s| {
                let mut ids: Vec<_> = s.lock().keys().copied().collect();
                ids.sort();
                ids
            })
            .collect()
    }

    /// The sealing input of one series' frozen points, cut at the edges of
    /// spans of `span_ns` (None: nothing frozen, and its empty frozen state
    /// is dropped).
    pub fn seal_input(
        &self,
        id: SeriesId,
        span_ns: Option<i64>,
    ) -> Result<Option<Vec<SealInput>>, EngineError> {
        let mut shard = self.shard(id).lock();
        let Some(data) = shard.get_mut(&id) else { return Ok(None) };
        let input = data.seal_input(span_ns)?;
        if input.is_none() {
            data.drop_empty_frozen();
        }
        Ok(input)
    }

    /// Installs sealed blocks in place of the frozen points they hold, and
    /// prunes tombstones no block needs any more (gate held exclusively).
    pub fn install_sealed(&self, blocks: impl IntoIterator<Item = (SeriesId, SealedBlock)>) {
        let _gate = self.gate.write();
        for (id, block) in blocks {
            if let Some(data) = self.shard(id).lock().get_mut(&id) {
                data.install_sealed(block);
            }
        }
        for shard in &self.shards {
            for data in shard.lock().values_mut() {
                data.prune_tombstones();
            }
        }
    }

    /// What a compaction merges of one series: its blocks in files
    /// `is_input` accepts (None: none there, or no such series).
    pub fn compaction_input(&self, id: SeriesId, is_input: impl Fn(u64) -> bool) -> Option<CompactionInput> {
        self.shard(id).lock().get(&id)?.compaction_input(is_input)
    }

    /// Installs merged blocks of file `file_seq` in place of each series'
    /// input blocks (gate held exclusively), then prunes tombstones no block
    /// needs any more. Returns how many series kept their old blocks
    /// ([`SeriesData::replace_compacted`] refused: only a series dropped
    /// meanwhile, whose data is gone).
    pub fn install_compacted(
        &self,
        file_seq: u64,
        items: impl IntoIterator<Item = (SeriesId, CompactionInput, Vec<BlockIndexEntry>)>,
    ) -> u64 {
        let _gate = self.gate.write();
        let mut kept = 0;
        for (id, input, entries) in items {
            let mut shard = self.shard(id).lock();
            let merged = entries.into_iter().map(|entry| SealedBlock { file_seq, entry }).collect();
            if !shard.get_mut(&id).is_some_and(|data| data_replaced(data, &input, merged, file_seq)) {
                kept += 1;
            }
        }
        kept
    }

    /// For the manifest: the block files the series in `live` reference,
    /// and their tombstones.
    pub fn manifest_parts(
        &self,
        live: impl Fn(SeriesId) -> bool,
    ) -> (BTreeSet<u64>, Vec<(SeriesId, Tombstone)>) {
        let mut files = BTreeSet::new();
        let mut tombstones = Vec::new();
        for shard in &self.shards {
            for (id, data) in shard.lock().iter() {
                if !live(*id) {
                    continue;
                }
                files.extend(data.sealed.iter().map(|b| b.file_seq));
                tombstones.extend(data.tombstones.iter().map(|t| (*id, *t)));
            }
        }
        (files, tombstones)
    }

    /// Whether any series has a tombstone (masks points of some block).
    pub fn any_tombstone(&self) -> bool {
        self.shards.iter().any(|s| s.lock().values().any(|d| !d.tombstones.is_empty()))
    }

    pub fn totals(&self) -> DataTotals {
        let mut t = DataTotals::default();
        for shard in &self.shards {
            for data in shard.lock().values() {
                t.dram_points += data.dram_points() as u64;
                t.dram_bytes += data.dram_bytes() as u64;
                t.sealed_blocks += data.sealed.len() as u64;
            }
        }
        t
    }

    /// Applies one change without the gate (recovery, single-threaded per
    /// series: nothing reads yet).
    pub fn replay_change(
        &self,
        id: SeriesId,
        field_type: FieldType,
        ts: TimestampNs,
        change: PointChange,
        max_file_seq: u64,
    ) {
        let mut shard = self.shard(id).lock();
        let data = shard.entry(id).or_insert_with(|| SeriesData::new(field_type));
        apply_change(data, ts, change, max_file_seq, true);
    }
}

impl ApplyBatch<'_> {
    /// Applies one change to one point. `field_type` creates the series'
    /// data if it has none. False when the value's type differs from the
    /// series' (only a damaged or foreign log gets there).
    pub fn apply(
        &mut self,
        id: SeriesId,
        field_type: FieldType,
        ts: TimestampNs,
        change: PointChange,
        max_file_seq: u64,
    ) -> bool {
        let mut shard = self.part.shard(id).lock();
        let data = shard.entry(id).or_insert_with(|| SeriesData::new(field_type));
        apply_change(data, ts, change, max_file_seq, false)
    }

    /// Applies changes to the points of one series in order, under one
    /// lock of its shard. False if any did not apply (see [`Self::apply`]).
    pub fn apply_run(
        &mut self,
        id: SeriesId,
        field_type: FieldType,
        changes: impl IntoIterator<Item = (TimestampNs, PointChange)>,
        max_file_seq: u64,
    ) -> bool {
        let mut shard = self.part.shard(id).lock();
        let data = shard.entry(id).or_insert_with(|| SeriesData::new(field_type));
        changes
            .into_iter()
            .fold(true, |ok, (ts, change)| apply_change(data, ts, change, max_file_seq, false) && ok)
    }

    /// Writes a point as the serial log's replay order does (newest write wins).
    pub fn write(&mut self, id: SeriesId, ts: TimestampNs, value: FieldValue) -> bool {
        let mut shard = self.part.shard(id).lock();
        let data = shard.entry(id).or_insert_with(|| SeriesData::new(value.field_type()));
        if data.field_type() != value.field_type() {
            return false;
        }
        data.insert(ts, value);
        true
    }

    /// Range delete of every series in `ids` (files up to `max_file_seq`).
    pub fn delete_range(&mut self, ids: &[SeriesId], range: TimeRange, max_file_seq: u64) {
        for id in ids {
            if let Some(data) = self.part.shard(*id).lock().get_mut(id) {
                data.delete(range, max_file_seq);
            }
        }
    }

    /// Forgets the data of dropped series.
    pub fn remove(&mut self, ids: &[SeriesId]) {
        for id in ids {
            self.part.shard(*id).lock().remove(id);
        }
    }
}

/// [`SeriesData::replace_compacted`], then prunes its tombstones if it took.
fn data_replaced(
    data: &mut SeriesData,
    input: &CompactionInput,
    merged: Vec<SealedBlock>,
    merged_seq: u64,
) -> bool {
    let replaced = data.replace_compacted(input, merged, merged_seq);
    if replaced {
        data.prune_tombstones();
    }
    replaced
}

fn apply_change(
    data: &mut SeriesData,
    ts: TimestampNs,
    change: PointChange,
    max_file_seq: u64,
    replay: bool,
) -> bool {
    match change {
        PointChange::Insert(v) | PointChange::Update(v) if v.field_type() != data.field_type() => false,
        PointChange::Insert(v) if replay => {
            data.insert(ts, v);
            true
        }
        PointChange::Insert(v) => {
            data.apply_insert(ts, v);
            true
        }
        PointChange::Update(v) if replay => {
            data.insert(ts, v);
            true
        }
        PointChange::Update(v) => {
            data.apply_update(ts, v);
            true
        }
        PointChange::Delete => {
            data.apply_point_delete(ts, max_file_seq);
            true
        }
    }
}
