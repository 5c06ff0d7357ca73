//! Reads from one consistent snapshot (the query side of the Beringei-style
//! store, declog.txt section 2.1): under the apply gate, the DRAM
//! points of each series and which immutable sealed blocks to read (with
//! their open files); block I/O and decoding happen after the gate is
//! released, so a long scan never holds up acknowledgements.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::data::SeriesCopy;
use super::SeriesCore;
use crate::block_file::BlockFile;
use crate::error::EngineError;
use crate::model::{FieldValue, SeriesId, TimeRange, TimestampNs};
use crate::series_data::{SealedBlock, Tombstone};
use crate::txn::ValueRef;

/// The points of one series, sorted by time.
pub type SeriesPoints = Vec<(TimestampNs, FieldValue)>;

impl SeriesCore {
    /// Reads the points of `ids` in `range` from one snapshot.
    pub fn read_series(&self, ids: &[SeriesId], range: TimeRange) -> Result<Vec<SeriesPoints>, EngineError> {
        // Files are resolved under the gate: a checkpoint removes a file
        // only after no series references it.
        let snapshots = self.data().copy_for_read(ids, range, |id, copy| self.snapshot(id, copy));
        ids.iter()
            .zip(snapshots)
            .map(|(id, snap)| match snap {
                None => Ok(Vec::new()),
                Some(snap) => snap?.materialize(*id, range),
            })
            .collect()
    }

    /// One point's value (DRAM and sealed), or None.
    pub fn read_point(&self, id: SeriesId, ts: TimestampNs) -> Result<Option<FieldValue>, EngineError> {
        let mut got = self.read_series(&[id], TimeRange { min_ns: ts, max_ns: ts })?;
        Ok(got.pop().and_then(|mut pts| pts.pop()).map(|(_, v)| v))
    }

    /// The value of one point named by its series parts, or None.
    pub fn read_value(
        &self,
        db: &str,
        value: &ValueRef,
        ts: TimestampNs,
    ) -> Result<Option<FieldValue>, EngineError> {
        let id = self.index().read().lookup_parts(db, &value.measurement, &value.tags, &value.field);
        match id {
            Some(id) => self.read_point(id, ts),
            None => Ok(None),
        }
    }

    /// Pairs each sealed block of a copy with its file (under the gate, so a
    /// missing file is a broken invariant).
    fn snapshot(&self, id: SeriesId, copy: SeriesCopy) -> Result<SeriesSnapshot, EngineError> {
        let sealed = copy
            .sealed
            .into_iter()
            .map(|b| match self.blocks().file(b.file_seq) {
                Some(f) => Ok((f, b)),
                None => Err(EngineError::corruption(
                    crate::block_file::block_file_name(b.file_seq),
                    format!("block file of {id} is not open"),
                )),
            })
            .collect::<Result<_, _>>()?;
        Ok(SeriesSnapshot { sealed, tombstones: copy.tombstones, dram: copy.dram })
    }
}

/// One series' part of a read snapshot: the sealed blocks to read (with
/// their files, immutable), its tombstones and a copy of its DRAM points.
struct SeriesSnapshot {
    sealed: Vec<(Arc<BlockFile>, SealedBlock)>,
    tombstones: Vec<Tombstone>,
    dram: BTreeMap<TimestampNs, FieldValue>,
}

impl SeriesSnapshot {
    /// Reads the blocks, oldest file first, masks tombstoned points, then
    /// lays the DRAM points over them (newest wins).
    fn materialize(mut self, id: SeriesId, range: TimeRange) -> Result<SeriesPoints, EngineError> {
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
