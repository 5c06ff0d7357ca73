//! The newest point of each series (issue 21, item 2): answered from the
//! last-point cache ([`crate::last_point`]) under one snapshot when it
//! knows every series; a series it does not know (after a delete of its
//! newest point, or after recovery) is read once, outside the apply gate,
//! and the cache filled; then the lookup is taken again, so the answer is
//! still one snapshot. A range ending before a series' newest point is
//! answered by an ordinary read.

use super::data::LastLookup;
use super::SeriesCore;
use crate::error::EngineError;
use crate::model::{FieldValue, SeriesId, TimeRange, TimestampNs};

/// Lookups that fill the cache before the answer falls back to a read.
const MAX_LOOKUPS: usize = 3;

impl SeriesCore {
    /// The newest point of each series of `ids` in `range` (None: none
    /// there), from one snapshot.
    pub fn read_last(
        &self,
        ids: &[SeriesId],
        range: TimeRange,
    ) -> Result<Vec<Option<(TimestampNs, FieldValue)>>, EngineError> {
        for _ in 0..MAX_LOOKUPS {
            let mut out = Vec::with_capacity(ids.len());
            let mut unknown = Vec::new();
            for (id, lookup) in ids.iter().zip(self.data().last_lookup(ids)) {
                match lookup {
                    LastLookup::Known(Some((t, _))) if t > range.max_ns => {
                        return self.read_last_by_scan(ids, range)
                    }
                    LastLookup::Known(Some((t, v))) if t >= range.min_ns => out.push(Some((t, v))),
                    LastLookup::Known(_) => out.push(None),
                    LastLookup::Read { epoch, from_ns } => unknown.push((*id, epoch, from_ns)),
                }
            }
            if unknown.is_empty() {
                return Ok(out);
            }
            for (id, epoch, from_ns) in unknown {
                let newest = self.newest_by_read(id, from_ns)?;
                self.data().fill_last(id, epoch, newest);
            }
        }
        self.read_last_by_scan(ids, range)
    }

    /// The newest point of one series at or after `from_ns`, or anywhere
    /// when there is none there.
    fn newest_by_read(
        &self,
        id: SeriesId,
        from_ns: TimestampNs,
    ) -> Result<Option<(TimestampNs, FieldValue)>, EngineError> {
        let tail = TimeRange { min_ns: from_ns, max_ns: TimestampNs::MAX };
        let newest = self.read_series(&[id], tail)?.pop().and_then(|mut points| points.pop());
        if newest.is_some() || from_ns == TimestampNs::MIN {
            return Ok(newest);
        }
        Ok(self.read_series(&[id], TimeRange::ALL)?.pop().and_then(|mut points| points.pop()))
    }

    /// [`SeriesCore::read_last`] by reading the whole range.
    fn read_last_by_scan(
        &self,
        ids: &[SeriesId],
        range: TimeRange,
    ) -> Result<Vec<Option<(TimestampNs, FieldValue)>>, EngineError> {
        Ok(self.read_series(ids, range)?.into_iter().map(|mut points| points.pop()).collect())
    }
}
