//! One series in memory (declog.txt section 2.1, the Beringei layout): the
//! open block, Gorilla-compressed in DRAM and appended in time order; a patch
//! map for points that cannot be appended (out-of-order timestamps and
//! overwrites); references to its sealed blocks in block files; and the
//! delete tombstones that mask sealed points.
//!
//! Precedence when reading one timestamp, newest first: patch, open block,
//! sealed blocks by descending file sequence. A tombstone masks only blocks
//! in files with sequence `<= upto_file_seq`, i.e. files sealed before the
//! delete; data written after a delete lives in newer files or in DRAM.

use std::collections::BTreeMap;

use crate::block_file::BlockIndexEntry;
use crate::error::EngineError;
use crate::gorilla::{encode_points, BlockWriter};
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
    pub sealed: Vec<SealedBlock>,
    pub tombstones: Vec<Tombstone>,
}

/// What a checkpoint takes from a series: its DRAM points as one sorted block.
pub struct SealInput {
    pub min_ts: TimestampNs,
    pub max_ts: TimestampNs,
    pub point_count: u32,
    pub block: Vec<u8>,
}

impl SeriesData {
    pub fn new(field_type: FieldType) -> SeriesData {
        SeriesData {
            open: BlockWriter::new(field_type),
            patch: BTreeMap::new(),
            sealed: Vec::new(),
            tombstones: Vec::new(),
        }
    }

    pub fn field_type(&self) -> FieldType {
        self.open.field_type()
    }

    /// Points held in DRAM (open block + patch).
    pub fn dram_points(&self) -> usize {
        self.open.len() + self.patch.len()
    }

    /// Compressed bytes of the open block plus a rough size of the patch.
    pub fn dram_bytes(&self) -> usize {
        self.open.encoded_bytes() + self.patch.len() * 32
    }

    /// Inserts or overwrites one point. The value's type was checked by the
    /// write path; a mismatch here is a bug.
    pub fn insert(&mut self, ts: TimestampNs, value: FieldValue) {
        let appendable = self.open.last_ts().is_none_or(|last| ts > last);
        if appendable {
            self.open.push(ts, &value).expect("field type checked before apply");
        } else {
            self.patch.insert(ts, value);
        }
    }

    /// Deletes the points in `range`. DRAM points are removed; sealed points
    /// are masked by a tombstone covering files up to `max_file_seq`.
    pub fn delete(&mut self, range: TimeRange, max_file_seq: u64) {
        if range.is_empty() {
            return;
        }
        let open_hit = match (self.open.first_ts(), self.open.last_ts()) {
            (Some(a), Some(b)) => range.overlaps(a, b),
            _ => false,
        };
        if open_hit {
            let kept: Vec<_> =
                self.open.decode().into_points().into_iter().filter(|(t, _)| !range.contains(*t)).collect();
            let mut open = BlockWriter::new(self.field_type());
            for (t, v) in &kept {
                open.push(*t, v).expect("same type");
            }
            self.open = open;
        }
        let doomed: Vec<TimestampNs> =
            self.patch.range(range.min_ns..=range.max_ns).map(|(t, _)| *t).collect();
        for t in doomed {
            self.patch.remove(&t);
        }
        if self.sealed.iter().any(|b| range.overlaps(b.entry.min_ts, b.entry.max_ts)) {
            self.tombstones.push(Tombstone { range, upto_file_seq: max_file_seq });
        }
    }

    /// Sealed blocks that may hold points in `range`, oldest file first.
    pub fn sealed_in(&self, range: TimeRange) -> impl Iterator<Item = &SealedBlock> {
        self.sealed.iter().filter(move |b| range.overlaps(b.entry.min_ts, b.entry.max_ts))
    }

    /// Whether a tombstone masks the point `ts` of a block in file `file_seq`.
    pub fn masked(&self, ts: TimestampNs, file_seq: u64) -> bool {
        self.tombstones.iter().any(|t| t.upto_file_seq >= file_seq && t.range.contains(ts))
    }

    /// Adds the DRAM points in `range` to `out`, newer over older.
    pub fn overlay_dram(&self, range: TimeRange, out: &mut BTreeMap<TimestampNs, FieldValue>) {
        let open_hit = match (self.open.first_ts(), self.open.last_ts()) {
            (Some(a), Some(b)) => range.overlaps(a, b),
            _ => false,
        };
        if open_hit {
            let decoded = self.open.decode();
            for (i, t) in decoded.timestamps.iter().enumerate() {
                if range.contains(*t) {
                    out.insert(*t, decoded.value(i));
                }
            }
        }
        for (t, v) in self.patch.range(range.min_ns..=range.max_ns) {
            out.insert(*t, v.clone());
        }
    }

    /// The DRAM points merged into one sorted block, or None if there are none.
    pub fn seal_input(&self) -> Result<Option<SealInput>, EngineError> {
        if self.dram_points() == 0 {
            return Ok(None);
        }
        let mut merged = BTreeMap::new();
        self.overlay_dram(TimeRange::ALL, &mut merged);
        let points: Vec<(TimestampNs, FieldValue)> = merged.into_iter().collect();
        let (min_ts, max_ts) = (points[0].0, points[points.len() - 1].0);
        let point_count = u32::try_from(points.len())
            .map_err(|_| EngineError::Other(format!("{} points in one series block", points.len())))?;
        let block =
            encode_points(self.field_type(), &points).map_err(|e| EngineError::Other(e.to_string()))?;
        Ok(Some(SealInput { min_ts, max_ts, point_count, block }))
    }

    /// After a checkpoint made the DRAM points durable in `sealed`: drops
    /// them from DRAM and references the block instead.
    pub fn install_sealed(&mut self, sealed: SealedBlock) {
        self.open = BlockWriter::new(self.field_type());
        self.patch.clear();
        self.sealed.push(sealed);
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
