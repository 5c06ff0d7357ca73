//! Reads from one consistent snapshot (the query side of the Beringei-style
//! store, declog.txt section 2.1): under the apply gate, the DRAM
//! points of each series and which immutable sealed blocks to read (with
//! their open files); block I/O and decoding happen after the gate is
//! released, so a long scan never holds up acknowledgements. A pruned read
//! leaves out the blocks whose summaries show that no value passes the
//! caller's condition.

use std::collections::BTreeMap;
use std::sync::Arc;

use rayon::prelude::*;

use super::data::SeriesCopy;
use super::SeriesCore;
use crate::block_file::BlockFile;
use crate::error::EngineError;
use crate::gorilla::CodecError;
use crate::model::{FieldType, FieldValue, SeriesId, TimeRange, TimestampNs};
use crate::series_data::{SealedBlock, Tombstone};
use crate::store::{any_time_within, keep_at_times};
use crate::txn::ValueRef;

/// The points of one series, sorted by time.
pub type SeriesPoints = Vec<(TimestampNs, FieldValue)>;

/// One series' snapshot as [`SeriesCore::snapshot`] resolved it.
type SnapshotResult = Result<SeriesSnapshot, EngineError>;

/// Sealed blocks a read must hold before its series are decoded in
/// parallel (below that, handing work to the pool costs more than it saves).
const PARALLEL_READ_BLOCKS_MIN: usize = 8;

impl SeriesCore {
    /// Reads the points of `ids` in `range` from one snapshot.
    pub fn read_series(&self, ids: &[SeriesId], range: TimeRange) -> Result<Vec<SeriesPoints>, EngineError> {
        self.read_each(ids, range, |snap, _, id| snap.materialize(id, range))
    }

    /// [`SeriesCore::read_series`], except that a sealed block of the i-th
    /// series whose values range over `[min, max]` is not read when
    /// `may_pass(i, min, max)` is false, its summary known and no other
    /// block or DRAM point overlapping it (so no point it hides shows).
    /// For a caller that drops the points failing a condition anyway.
    pub fn read_series_pruned(
        &self,
        ids: &[SeriesId],
        range: TimeRange,
        may_pass: &(dyn Fn(usize, &FieldValue, &FieldValue) -> bool + Sync),
    ) -> Result<Vec<SeriesPoints>, EngineError> {
        self.read_each(ids, range, |mut snap, i, id| {
            let isolated = snap.isolated();
            let blocks = std::mem::take(&mut snap.sealed);
            snap.sealed = blocks
                .into_iter()
                .zip(isolated)
                .filter(|((_, b), isolated)| {
                    let skip = b.entry.summary.as_ref().filter(|_| *isolated).is_some_and(|s| {
                        matches!(s.field_type(), FieldType::Float | FieldType::Integer | FieldType::Unsigned)
                            && !may_pass(i, &s.min(), &s.max())
                    });
                    !skip
                })
                .map(|(block, _)| block)
                .collect();
            snap.materialize(id, range)
        })
    }

    /// [`SeriesCore::read_series`] at the times of `times[i]` only
    /// (sorted): a sealed block holding none of them is not read.
    pub fn read_series_at_times(
        &self,
        ids: &[SeriesId],
        range: TimeRange,
        times: &[&[TimestampNs]],
    ) -> Result<Vec<SeriesPoints>, EngineError> {
        self.read_each(ids, range, |mut snap, i, id| {
            let wanted = times[i];
            // A block left out holds no wanted time, so neither do the
            // points of older blocks it would hide: those are dropped below.
            snap.sealed.retain(|(_, b)| any_time_within(wanted, b.entry.min_ts, b.entry.max_ts));
            let mut points = snap.materialize(id, range)?;
            keep_at_times(&mut points, wanted);
            Ok(points)
        })
    }

    /// The timestamps of `ids` in `range` from one snapshot: as
    /// [`SeriesCore::read_series`], without decoding any value.
    pub fn read_timestamps(
        &self,
        ids: &[SeriesId],
        range: TimeRange,
    ) -> Result<Vec<Vec<TimestampNs>>, EngineError> {
        self.read_each(ids, range, |snap, _, id| snap.timestamps(id, range))
    }

    /// `read` of each series' snapshot (with its index in `ids`), taken
    /// together (an unknown series reads as empty).
    pub(super) fn read_each<T: Send>(
        &self,
        ids: &[SeriesId],
        range: TimeRange,
        read: impl Fn(SeriesSnapshot, usize, SeriesId) -> Result<Vec<T>, EngineError> + Sync,
    ) -> Result<Vec<Vec<T>>, EngineError> {
        // Files are resolved under the gate: a checkpoint removes a file
        // only after no series references it.
        let snapshots = self.data().copy_for_read(ids, range, |id, copy| self.snapshot(id, copy));
        let read_one = |(i, (id, snap)): (usize, (&SeriesId, Option<SnapshotResult>))| match snap {
            None => Ok(Vec::new()),
            Some(snap) => read(snap?, i, *id),
        };
        // Decoding is the cost of a long read: series are decoded on every
        // core (issue 21, item 5) once there is enough to share.
        let blocks: usize = snapshots.iter().flatten().flatten().map(|s| s.sealed.len()).sum();
        if ids.len() < 2 || blocks < PARALLEL_READ_BLOCKS_MIN {
            return ids.iter().zip(snapshots).enumerate().map(read_one).collect();
        }
        ids.par_iter().zip(snapshots).enumerate().map(read_one).collect()
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
pub(super) struct SeriesSnapshot {
    pub(super) sealed: Vec<(Arc<BlockFile>, SealedBlock)>,
    pub(super) tombstones: Vec<Tombstone>,
    pub(super) dram: BTreeMap<TimestampNs, FieldValue>,
}

impl SeriesSnapshot {
    /// Per sealed block (by index into `sealed`), whether no other block
    /// and no DRAM point of the copy overlaps its time span: then no point
    /// of it is hidden by another, nor hides one, and it can be answered
    /// from its summary or left out whole.
    pub(super) fn isolated(&self) -> Vec<bool> {
        let n = self.sealed.len();
        let mut by_time: Vec<usize> = (0..n).collect();
        by_time.sort_by_key(|i| self.sealed[*i].1.entry.min_ts);
        // A block overlaps another iff it overlaps its neighbour after it
        // in `min_ts` order or one before it reaches it (the running max
        // of ends).
        let mut isolated = vec![false; n];
        let mut reach: Option<TimestampNs> = None;
        for (k, &i) in by_time.iter().enumerate() {
            let e = &self.sealed[i].1.entry;
            let next_starts = by_time.get(k + 1).map(|j| self.sealed[*j].1.entry.min_ts);
            let overlapped =
                reach.is_some_and(|r| r >= e.min_ts) || next_starts.is_some_and(|s| s <= e.max_ts);
            isolated[i] = !overlapped && self.dram.range(e.min_ts..=e.max_ts).next().is_none();
            reach = Some(reach.map_or(e.max_ts, |r| r.max(e.max_ts)));
        }
        isolated
    }

    /// The points in `range`: the sealed blocks' (a newer file's over an
    /// older's, tombstones masking), then the DRAM points over them.
    pub(super) fn materialize(self, id: SeriesId, range: TimeRange) -> Result<SeriesPoints, EngineError> {
        let decode = |bytes: &[u8]| {
            let block = crate::gorilla::decode_block(bytes)?;
            Ok(block.timestamps.iter().enumerate().map(|(i, t)| (*t, block.value(i))).collect())
        };
        self.collect(id, range, decode, |v| v)
    }

    /// The timestamps [`SeriesSnapshot::materialize`] would return, without
    /// decoding a value.
    fn timestamps(self, id: SeriesId, range: TimeRange) -> Result<Vec<TimestampNs>, EngineError> {
        let decode = |bytes: &[u8]| {
            Ok(crate::gorilla::decode_timestamps(bytes)?.into_iter().map(|t| (t, ())).collect())
        };
        Ok(self.collect(id, range, decode, |_| ())?.into_iter().map(|(t, ())| t).collect())
    }

    /// The common part of both reads: `decode` gives a block's points.
    /// Blocks disjoint in time (the usual case: one per checkpoint of an
    /// in-order series) are concatenated in time order; overlapping ones go
    /// through a map, oldest file first, so the newest value wins.
    fn collect<T>(
        self,
        id: SeriesId,
        range: TimeRange,
        decode: impl Fn(&[u8]) -> Result<Vec<(TimestampNs, T)>, CodecError>,
        from_dram: impl Fn(FieldValue) -> T,
    ) -> Result<Vec<(TimestampNs, T)>, EngineError> {
        let tombstones = &self.tombstones;
        let read = |(file, b): &(Arc<BlockFile>, SealedBlock)| -> Result<Vec<(TimestampNs, T)>, EngineError> {
            let bytes = file.read_block(&b.entry)?;
            let mut points = decode(&bytes).map_err(|e| {
                EngineError::corruption(file.path().display().to_string(), format!("block of {id}: {e}"))
            })?;
            let masks: Vec<TimeRange> =
                tombstones.iter().filter(|x| x.upto_file_seq >= b.file_seq).map(|x| x.range).collect();
            points.retain(|(t, _)| range.contains(*t) && !masks.iter().any(|m| m.contains(*t)));
            Ok(points)
        };
        let mut by_time: Vec<&(Arc<BlockFile>, SealedBlock)> = self.sealed.iter().collect();
        by_time.sort_by_key(|(_, b)| b.entry.min_ts);
        let disjoint = by_time.windows(2).all(|w| w[0].1.entry.max_ts < w[1].1.entry.min_ts);
        let sealed: Vec<(TimestampNs, T)> = if disjoint {
            let mut out = Vec::new();
            for block in by_time {
                out.extend(read(block)?);
            }
            out
        } else {
            let mut points = BTreeMap::new();
            for block in &self.sealed {
                points.extend(read(block)?);
            }
            points.into_iter().collect()
        };
        Ok(overlay(sealed, self.dram.into_iter().map(|(t, v)| (t, from_dram(v)))))
    }
}

/// `base` with `top`'s points over it (both sorted by time; `top` wins a tie).
fn overlay<T>(
    base: Vec<(TimestampNs, T)>,
    top: impl Iterator<Item = (TimestampNs, T)>,
) -> Vec<(TimestampNs, T)> {
    let mut top = top.peekable();
    if top.peek().is_none() {
        return base;
    }
    let mut out = Vec::with_capacity(base.len());
    let mut base = base.into_iter().peekable();
    loop {
        match (base.peek(), top.peek()) {
            (Some((b, _)), Some((t, _))) if b < t => out.push(base.next().expect("peeked")),
            (Some((b, _)), Some((t, _))) if b == t => {
                base.next();
                out.push(top.next().expect("peeked"));
            }
            (_, Some(_)) => out.push(top.next().expect("peeked")),
            (Some(_), None) => out.push(base.next().expect("peeked")),
            (None, None) => return out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::overlay;

    #[test]
    fn overlay_keeps_time_order_and_the_top_wins_ties() {
        let base = vec![(1, 'a'), (3, 'a'), (5, 'a')];
        let top = vec![(0, 'b'), (3, 'b'), (6, 'b')];
        assert_eq!(
            overlay(base.clone(), top.into_iter()),
            vec![(0, 'b'), (1, 'a'), (3, 'b'), (5, 'a'), (6, 'b')]
        );
        assert_eq!(overlay(base.clone(), std::iter::empty()), base);
        assert_eq!(overlay(Vec::new(), vec![(2, 'b')].into_iter()), vec![(2, 'b')]);
    }
}
