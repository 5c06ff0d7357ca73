//! One series in memory (declog.txt section 2.1, the Beringei layout): the
//! open block, Gorilla-compressed in DRAM and appended in time order; a patch
//! map for points that cannot be appended (out-of-order timestamps and
//! overwrites); references to its sealed blocks in block files; and the
//! delete tombstones that mask sealed points.
//!
//! A checkpoint first *freezes* the DRAM points (open block and patch move
//! aside, fresh ones start), then seals the frozen part while writes go on
//! (DecLog's checkpoint, declog.txt 4.5, does not block inserts), then
//! installs the sealed block in its place.
//!
//! Precedence when reading one timestamp, newest first: patch, open block,
//! frozen patch, frozen block, sealed blocks by descending file sequence. A tombstone masks only blocks
//! in files with sequence `<= upto_file_seq`, i.e. files sealed before the
//! delete; data written after a delete lives in newer files or in DRAM.

use std::collections::{BTreeMap, BTreeSet};

use crate::block_file::{BlockIndexEntry, BlockSummary};
use crate::error::EngineError;
use crate::gorilla::BlockWriter;
use crate::last_point::LastPointCache;
use crate::model::{FieldType, FieldValue, TimeRange, TimestampNs};

/// A sealed block: where it is and what it covers.
#[derive(Clone, Debug)]
pub struct SealedBlock {
    pub file_seq: u64,
    pub entry: BlockIndexEntry,
}

/// Masks the points of sealed blocks in files with seq `<= upto_file_seq`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tombstone {
    pub range: TimeRange,
    pub upto_file_seq: u64,
}

pub struct SeriesData {
    open: BlockWriter,
    patch: BTreeMap<TimestampNs, FieldValue>,
    /// DRAM points a running checkpoint is sealing.
    frozen: Option<Frozen>,
    /// Points deleted one by one (DecLog point deletes) since the last
    /// freeze: a delayed insert of such a point must not resurrect it.
    point_deletes: BTreeSet<TimestampNs>,
    pub sealed: Vec<SealedBlock>,
    pub tombstones: Vec<Tombstone>,
    /// The newest point, told of every change made here.
    last: LastPointCache,
}

/// The DRAM points of a series at a checkpoint's cut.
struct Frozen {
    open: BlockWriter,
    patch: BTreeMap<TimestampNs, FieldValue>,
}

impl Frozen {
    fn overlay(&self, range: TimeRange, out: &mut BTreeMap<TimestampNs, FieldValue>) {
        overlay_block(&self.open, range, out);
        for (t, v) in self.patch.range(range.min_ns..=range.max_ns) {
            out.insert(*t, v.clone());
        }
    }
}

/// Adds the points of `block` in `range` to `out`.
fn overlay_block(block: &BlockWriter, range: TimeRange, out: &mut BTreeMap<TimestampNs, FieldValue>) {
    let hit = match (block.first_ts(), block.last_ts()) {
        (Some(a), Some(b)) => range.overlaps(a, b),
        _ => false,
    };
    if hit {
        let decoded = block.decode();
        for (i, t) in decoded.timestamps.iter().enumerate() {
            if range.contains(*t) {
                out.insert(*t, decoded.value(i));
            }
        }
    }
}

/// Whether `block` holds a point at `ts` (decodes it only when `ts` is in
/// its time range).
fn block_holds(block: &BlockWriter, ts: TimestampNs) -> bool {
    match (block.first_ts(), block.last_ts()) {
        (Some(a), Some(b)) if (a..=b).contains(&ts) => block.decode().timestamps.binary_search(&ts).is_ok(),
        _ => false,
    }
}

/// `block` without its points in `range` (None if it has none there).
fn without_range(block: &BlockWriter, range: TimeRange) -> Option<BlockWriter> {
    match (block.first_ts(), block.last_ts()) {
        (Some(a), Some(b)) if range.overlaps(a, b) => {}
        _ => return None,
    }
    let mut kept = BlockWriter::new(block.field_type());
    for (t, v) in block.decode().into_points() {
        if !range.contains(t) {
            kept.push(t, &v).expect("same type");
        }
    }
    Some(kept)
}

/// What a compaction takes from a series (read under its shard lock): its
/// sealed blocks in the input files and the tombstones it had then.
#[derive(Clone, Debug)]
pub struct CompactionInput {
    pub field_type: FieldType,
    pub blocks: Vec<SealedBlock>,
    pub tombstones: Vec<Tombstone>,
}

/// One block a checkpoint or a compaction writes for a series: sorted
/// points, encoded, with their summary (`crate::core::cut`).
pub struct SealInput {
    pub min_ts: TimestampNs,
    pub max_ts: TimestampNs,
    pub point_count: u32,
    pub block: Vec<u8>,
    pub summary: Option<BlockSummary>,
}

impl SeriesData {
    pub fn new(field_type: FieldType) -> SeriesData {
        SeriesData {
            open: BlockWriter::new(field_type),
            patch: BTreeMap::new(),
            frozen: None,
            point_deletes: BTreeSet::new(),
            sealed: Vec::new(),
            tombstones: Vec::new(),
            last: LastPointCache::empty(),
        }
    }

    /// The last-point cache entry.
    pub fn last_point(&self) -> &LastPointCache {
        &self.last
    }

    /// The last-point cache entry, to fill or forget.
    pub fn last_point_mut(&mut self) -> &mut LastPointCache {
        &mut self.last
    }

    /// The newest DRAM point, if no sealed block reaches past it (then it
    /// is the series' newest point: DRAM wins over sealed blocks at equal
    /// times, and tombstones mask only sealed points). None when that
    /// takes I/O to know.
    pub fn newest_in_dram(&self) -> Option<(TimestampNs, FieldValue)> {
        let mut dram = BTreeMap::new();
        let newest_dram = self.max_dram_ts()?;
        if self.sealed.iter().any(|b| b.entry.max_ts > newest_dram) {
            return None;
        }
        self.overlay_dram(TimeRange { min_ns: newest_dram, max_ns: newest_dram }, &mut dram);
        dram.pop_last()
    }

    /// Whether the series holds no point at all, known without I/O.
    pub fn holds_nothing(&self) -> bool {
        self.sealed.is_empty() && self.max_dram_ts().is_none()
    }

    fn max_dram_ts(&self) -> Option<TimestampNs> {
        let frozen = self.frozen.as_ref();
        [
            self.open.last_ts(),
            self.patch.keys().next_back().copied(),
            frozen.and_then(|f| f.open.last_ts()),
            frozen.and_then(|f| f.patch.keys().next_back().copied()),
        ]
        .into_iter()
        .flatten()
        .max()
    }

    pub fn field_type(&self) -> FieldType {
        self.open.field_type()
    }

    /// Points held in DRAM (open block + patch, frozen ones included).
    pub fn dram_points(&self) -> usize {
        self.open.len() + self.patch.len() + self.frozen.as_ref().map_or(0, |f| f.open.len() + f.patch.len())
    }

    /// Compressed bytes of the open blocks plus a rough size of the patches.
    pub fn dram_bytes(&self) -> usize {
        let frozen = self.frozen.as_ref().map_or(0, |f| f.open.encoded_bytes() + f.patch.len() * 32);
        self.open.encoded_bytes() + self.patch.len() * 32 + frozen
    }

    /// The largest timestamp this series ever held that is still known
    /// (sealed blocks count their masked points too), if any.
    pub fn max_ts(&self) -> Option<TimestampNs> {
        self.max_dram_ts().into_iter().chain(self.sealed.iter().map(|b| b.entry.max_ts)).max()
    }

    /// The smallest and largest timestamps this series holds or masks
    /// (sealed blocks by their ranges), if any.
    pub fn ts_range(&self) -> Option<(TimestampNs, TimestampNs)> {
        let frozen = self.frozen.as_ref();
        let min = [
            self.open.first_ts(),
            self.patch.keys().next().copied(),
            frozen.and_then(|f| f.open.first_ts()),
            frozen.and_then(|f| f.patch.keys().next().copied()),
            self.sealed.iter().map(|b| b.entry.min_ts).min(),
            self.point_deletes.first().copied(),
        ]
        .into_iter()
        .flatten()
        .min()?;
        let max = self.max_ts().into_iter().chain(self.point_deletes.last().copied()).max()?;
        Some((min, max))
    }

    /// Whether the point at `ts` may exist, or was deleted one by one since
    /// the last freeze (DecLog's existence check, declog.txt 4.1.2 rule 2):
    /// exact for DRAM points, by time range for sealed blocks.
    pub fn may_hold(&self, ts: TimestampNs) -> bool {
        let frozen = self.frozen.as_ref();
        self.patch.contains_key(&ts)
            || self.point_deletes.contains(&ts)
            || block_holds(&self.open, ts)
            || frozen.is_some_and(|f| f.patch.contains_key(&ts) || block_holds(&f.open, ts))
            || self.sealed.iter().any(|b| (b.entry.min_ts..=b.entry.max_ts).contains(&ts))
    }

    /// DecLog's insert (LSN 0): a new point, unless a later transaction
    /// already updated or deleted it (then that one wins, as in replay,
    /// where LSN-0 entries go first).
    pub fn apply_insert(&mut self, ts: TimestampNs, value: FieldValue) {
        if !self.point_deletes.is_empty() && self.point_deletes.contains(&ts) {
            return;
        }
        // One descent of the patch (a load out of time order makes it
        // large): an entry at `ts` is the later update; else the point goes
        // to the open block when it extends it, or into the patch here.
        let appendable = self.open.last_ts().is_none_or(|last| ts > last);
        // The usual case, an append past everything in the patch, needs no
        // descent.
        if appendable && self.patch.last_key_value().is_none_or(|(last, _)| *last < ts) {
            self.open.push(ts, &value).expect("field type checked before apply");
            self.last.wrote_owned(ts, value);
            return;
        }
        match self.patch.entry(ts) {
            std::collections::btree_map::Entry::Occupied(_) => {}
            std::collections::btree_map::Entry::Vacant(slot) if !appendable => {
                self.last.wrote(ts, &value);
                slot.insert(value);
            }
            std::collections::btree_map::Entry::Vacant(_) => {
                self.open.push(ts, &value).expect("field type checked before apply");
                self.last.wrote_owned(ts, value);
            }
        }
    }

    /// DecLog's update: always lands in the patch, where a delayed insert of
    /// the same point (see [`SeriesData::apply_insert`]) finds it.
    pub fn apply_update(&mut self, ts: TimestampNs, value: FieldValue) {
        self.point_deletes.remove(&ts);
        self.last.wrote(ts, &value);
        self.patch.insert(ts, value);
    }

    /// DecLog's point delete (the tombstone bit of 4.1.1).
    pub fn apply_point_delete(&mut self, ts: TimestampNs, max_file_seq: u64) {
        self.delete(TimeRange { min_ns: ts, max_ns: ts }, max_file_seq);
        self.point_deletes.insert(ts);
    }

    /// Inserts or overwrites one point. The value's type was checked by the
    /// write path; a mismatch here is a bug.
    pub fn insert(&mut self, ts: TimestampNs, value: FieldValue) {
        let appendable = self.open.last_ts().is_none_or(|last| ts > last);
        if appendable {
            // A patch entry at `ts` (left by a delete of the open block's
            // tail) would otherwise hide the newer value.
            self.patch.remove(&ts);
            self.open.push(ts, &value).expect("field type checked before apply");
            self.last.wrote_owned(ts, value);
        } else {
            self.last.wrote(ts, &value);
            self.patch.insert(ts, value);
        }
    }

    /// Deletes the points in `range`. DRAM points are removed; sealed points
    /// are masked by a tombstone covering files up to `max_file_seq`.
    pub fn delete(&mut self, range: TimeRange, max_file_seq: u64) {
        if range.is_empty() {
            return;
        }
        self.last.deleted(range);
        if let Some(kept) = without_range(&self.open, range) {
            self.open = kept;
        }
        remove_range(&mut self.patch, range);
        if let Some(f) = &mut self.frozen {
            if let Some(kept) = without_range(&f.open, range) {
                f.open = kept;
            }
            remove_range(&mut f.patch, range);
        }
        if self.sealed.iter().any(|b| range.overlaps(b.entry.min_ts, b.entry.max_ts)) {
            self.tombstones.push(Tombstone { range, upto_file_seq: max_file_seq });
        }
    }

    /// Sealed blocks that may hold points in `range`, oldest file first.
    pub fn sealed_in(&self, range: TimeRange) -> impl Iterator<Item = &SealedBlock> {
        self.sealed.iter().filter(move |b| range.overlaps(b.entry.min_ts, b.entry.max_ts))
    }

    /// At least the number of points this series holds in `range`: every
    /// point of the sealed and DRAM blocks whose time range overlaps it
    /// (no block is decoded), plus the patch points in it.
    pub fn count_bound(&self, range: TimeRange) -> u64 {
        let block = |b: &BlockWriter| match (b.first_ts(), b.last_ts()) {
            (Some(a), Some(z)) if range.overlaps(a, z) => b.len() as u64,
            _ => 0,
        };
        let patch =
            |p: &BTreeMap<TimestampNs, FieldValue>| p.range(range.min_ns..=range.max_ns).count() as u64;
        let sealed: u64 = self.sealed_in(range).map(|b| u64::from(b.entry.point_count)).sum();
        let frozen = self.frozen.as_ref().map_or(0, |f| block(&f.open) + patch(&f.patch));
        sealed + frozen + block(&self.open) + patch(&self.patch)
    }

    /// Whether a tombstone masks the point `ts` of a block in file `file_seq`.
    pub fn masked(&self, ts: TimestampNs, file_seq: u64) -> bool {
        self.tombstones.iter().any(|t| t.upto_file_seq >= file_seq && t.range.contains(ts))
    }

    /// Adds the DRAM points in `range` to `out`, newer over older.
    pub fn overlay_dram(&self, range: TimeRange, out: &mut BTreeMap<TimestampNs, FieldValue>) {
        if let Some(f) = &self.frozen {
            f.overlay(range, out);
        }
        overlay_block(&self.open, range, out);
        for (t, v) in self.patch.range(range.min_ns..=range.max_ns) {
            out.insert(*t, v.clone());
        }
    }

    /// A checkpoint's cut: the DRAM points move aside to be sealed, fresh
    /// ones start. Frozen points not yet installed (a failed checkpoint)
    /// are merged into the new frozen set, newer over older.
    pub fn freeze(&mut self) {
        let ft = self.field_type();
        let open = std::mem::replace(&mut self.open, BlockWriter::new(ft));
        let patch = std::mem::take(&mut self.patch);
        self.point_deletes.clear();
        self.frozen = Some(match self.frozen.take() {
            None => Frozen { open, patch },
            Some(mut older) => {
                let mut merged = BTreeMap::new();
                older.overlay(TimeRange::ALL, &mut merged);
                Frozen { open, patch }.overlay(TimeRange::ALL, &mut merged);
                older.patch = merged;
                older.open = BlockWriter::new(ft);
                older
            }
        });
    }

    /// The frozen points merged and cut into sorted blocks at the edges of
    /// spans of `span_ns` (`crate::core::cut`), or None if there are none.
    /// Runs in the checkpoint, off the write path.
    pub fn seal_input(&self, span_ns: Option<i64>) -> Result<Option<Vec<SealInput>>, EngineError> {
        let Some(frozen) = &self.frozen else { return Ok(None) };
        let mut merged = BTreeMap::new();
        frozen.overlay(TimeRange::ALL, &mut merged);
        if merged.is_empty() {
            return Ok(None);
        }
        let points: Vec<(TimestampNs, FieldValue)> = merged.into_iter().collect();
        crate::core::cut::cut_blocks(self.field_type(), &points, span_ns).map(Some)
    }

    /// After a checkpoint made the frozen points durable in `sealed`: drops
    /// them from DRAM and references the block instead.
    pub fn install_sealed(&mut self, sealed: SealedBlock) {
        self.frozen = None;
        self.sealed.push(sealed);
    }

    /// The sealed blocks in files `is_input` accepts, with the tombstones
    /// (None if there are no such blocks).
    pub fn compaction_input(&self, is_input: impl Fn(u64) -> bool) -> Option<CompactionInput> {
        let blocks: Vec<SealedBlock> = self.sealed.iter().filter(|b| is_input(b.file_seq)).cloned().collect();
        (!blocks.is_empty()).then(|| CompactionInput {
            field_type: self.field_type(),
            blocks,
            tombstones: self.tombstones.clone(),
        })
    }

    /// After a compaction wrote `merged` (blocks of file `merged_seq`):
    /// references them instead of `input`'s blocks. Refused (false, nothing
    /// changed) only if an input block is gone (never for a live series:
    /// compactions and checkpoints run one at a time, and only a drop
    /// removes blocks).
    ///
    /// A tombstone added since `input` was read that masks an input block
    /// was taken with a newest file sequence read before the compaction
    /// took `merged_seq` (a delete planned just before, applied just after
    /// the read), so it may not reach the merged blocks, which lack its
    /// delete: it is copied with `upto_file_seq = merged_seq`. That is the
    /// delete's meaning: it came after every point of the inputs (they were
    /// sealed by an earlier checkpoint), and no file sealed since (the
    /// sequences between) exists while a compaction runs.
    pub fn replace_compacted(
        &mut self,
        input: &CompactionInput,
        merged: Vec<SealedBlock>,
        merged_seq: u64,
    ) -> bool {
        // A block is named by its file and offset (files are immutable); a
        // series may have thousands (a block per hour), so look them up.
        let inputs: std::collections::HashMap<(u64, u64), &BlockIndexEntry> =
            input.blocks.iter().map(|i| ((i.file_seq, i.entry.offset), &i.entry)).collect();
        let is_input =
            |b: &SealedBlock| inputs.get(&(b.file_seq, b.entry.offset)).is_some_and(|e| **e == b.entry);
        if self.sealed.iter().filter(|b| is_input(b)).count() != input.blocks.len() {
            return false;
        }
        let late: Vec<Tombstone> = self
            .tombstones
            .iter()
            .filter(|t| t.upto_file_seq < merged_seq && !input.tombstones.contains(t))
            .filter(|t| {
                input.blocks.iter().any(|b| {
                    t.upto_file_seq >= b.file_seq && t.range.overlaps(b.entry.min_ts, b.entry.max_ts)
                })
            })
            .map(|t| Tombstone { range: t.range, upto_file_seq: merged_seq })
            .collect();
        self.tombstones.extend(late);
        self.sealed.retain(|b| !is_input(b));
        self.sealed.extend(merged);
        // Reads rank blocks by file sequence, oldest first.
        self.sealed.sort_by_key(|b| b.file_seq);
        true
    }

    /// A checkpoint found nothing to seal here: forget the (empty) frozen set.
    pub fn drop_empty_frozen(&mut self) {
        if self.frozen.as_ref().is_some_and(|f| f.open.is_empty() && f.patch.is_empty()) {
            self.frozen = None;
        }
    }

    /// Drops tombstones that no longer mask any sealed block.
    pub fn prune_tombstones(&mut self) {
        let sealed = &self.sealed;
        self.tombstones.retain(|t| {
            sealed
                .iter()
                .any(|b| b.file_seq <= t.upto_file_seq && t.range.overlaps(b.entry.min_ts, b.entry.max_ts))
        });
    }
}

fn remove_range(map: &mut BTreeMap<TimestampNs, FieldValue>, range: TimeRange) {
    let doomed: Vec<TimestampNs> = map.range(range.min_ns..=range.max_ns).map(|(t, _)| *t).collect();
    for t in doomed {
        map.remove(&t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A patch entry left behind when a delete shortens the open block must
    /// not hide a later append at the same timestamp (found by the DecLog
    /// crash lines; it affected the serial engine too).
    #[test]
    fn an_append_replaces_a_stale_patch_entry_at_its_timestamp() {
        let mut d = SeriesData::new(FieldType::Float);
        d.insert(10, FieldValue::Float(1.0));
        d.insert(20, FieldValue::Float(2.0));
        d.insert(15, FieldValue::Float(3.0)); // out of order: patch
        d.delete(TimeRange { min_ns: 20, max_ns: 20 }, 0);
        d.insert(15, FieldValue::Float(4.0)); // now appendable
        let mut out = BTreeMap::new();
        d.overlay_dram(TimeRange::ALL, &mut out);
        assert_eq!(out.get(&15), Some(&FieldValue::Float(4.0)));
        assert_eq!(out.len(), 2);
    }

    fn sealed(file_seq: u64, min_ts: TimestampNs, max_ts: TimestampNs) -> SealedBlock {
        let entry = BlockIndexEntry {
            series: crate::model::SeriesId(1),
            min_ts,
            max_ts,
            point_count: 2,
            offset: 16,
            len_bytes: 8,
            crc32c: file_seq as u32,
            summary: None,
        };
        SealedBlock { file_seq, entry }
    }

    /// A compaction's blocks replace its inputs unless an input is gone; a
    /// delete applied after the inputs were read that masks one of them,
    /// with a file sequence below the merged file's, is carried over to
    /// the merged file (else its points would come back).
    #[test]
    fn compacted_blocks_replace_their_inputs_and_a_late_delete_masks_the_merged_file() {
        let mut d = SeriesData::new(FieldType::Float);
        d.sealed = vec![sealed(1, 0, 10), sealed(2, 20, 30), sealed(3, 40, 50)];
        let input = d.compaction_input(|s| s >= 2).expect("blocks in files 2 and 3");
        assert_eq!(input.blocks.len(), 2);

        let mut late = SeriesData::new(FieldType::Float);
        late.sealed = d.sealed.clone();
        late.delete(TimeRange { min_ns: 25, max_ns: 25 }, 3);
        assert!(late.replace_compacted(&input, vec![sealed(4, 20, 50)], 4), "a late delete is carried over");
        let seqs: Vec<u64> = late.sealed.iter().map(|b| b.file_seq).collect();
        assert_eq!(seqs, vec![1, 4]);
        let raised = Tombstone { range: TimeRange { min_ns: 25, max_ns: 25 }, upto_file_seq: 4 };
        assert!(late.tombstones.contains(&raised), "the delete masks the merged file: {:?}", late.tombstones);

        // A late delete that already reaches the merged file is left as it is.
        let mut reaching = SeriesData::new(FieldType::Float);
        reaching.sealed = d.sealed.clone();
        reaching.delete(TimeRange { min_ns: 45, max_ns: 45 }, 4);
        assert!(reaching.replace_compacted(&input, vec![sealed(4, 20, 50)], 4));
        assert_eq!(reaching.tombstones.len(), 1, "{:?}", reaching.tombstones);

        // A delete that masks only the file left alone does not matter.
        let mut old_only = SeriesData::new(FieldType::Float);
        old_only.sealed = d.sealed.clone();
        old_only.delete(TimeRange { min_ns: 5, max_ns: 5 }, 1);
        assert!(old_only.replace_compacted(&input, vec![sealed(4, 20, 50)], 4));
        assert_eq!(old_only.tombstones.len(), 1, "{:?}", old_only.tombstones);
        assert_eq!(old_only.tombstones[0].upto_file_seq, 1, "not raised");

        assert!(d.replace_compacted(&input, vec![sealed(4, 20, 50)], 4));
        let seqs: Vec<u64> = d.sealed.iter().map(|b| b.file_seq).collect();
        assert_eq!(seqs, vec![1, 4], "inputs replaced, oldest file first");
        assert!(!d.replace_compacted(&input, vec![sealed(5, 20, 50)], 5), "inputs already gone");
    }
}
