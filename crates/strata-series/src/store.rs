//! The series table kind's trait: implemented by the durable
//! [`crate::SeriesEngine`] and by the reference model
//! ([`crate::reference::MemStore`]); the engine facade's table catalog
//! (`strata_engine::Tables::series`) hands it to the query and write paths.
//! Each call is one consistent snapshot or one transaction.

use std::sync::Arc;

use crate::error::EngineError;
use crate::model::{FieldType, FieldValue, Point, SeriesId, TimeRange, TimestampNs};
use crate::retention::{DbRetention, RetentionChange};
use crate::tag_index::MeasurementTags;
use crate::window_agg::{fold_points, PartialAggregate, WindowSpec};

/// One series as the index knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesInfo {
    pub id: SeriesId,
    pub measurement: String,
    /// Sorted by key.
    pub tags: Vec<(String, String)>,
    pub field: String,
    pub field_type: FieldType,
}

/// Result of one write request (one transaction).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WriteOutcome {
    /// Points (lines) committed together in one transaction.
    pub points_written: usize,
    /// Field values committed.
    pub values_written: usize,
    /// Points rejected, by index into the request, with the reason (e.g. a
    /// field type conflict). Rejected points are not part of the transaction.
    pub rejected: Vec<(usize, LineRejection)>,
}

/// Why one point (line) of a write was rejected.
#[derive(Clone, Debug, PartialEq)]
pub enum LineRejection {
    /// The point breaks the data model (no fields, a repeated field, ...).
    Malformed(String),
    /// A field's type differs from the type it has in the measurement.
    FieldTypeConflict { field: String, measurement: String, input: FieldType, existing: FieldType },
    /// The line does not fit the table it names (an event stream's schema).
    Unfit(String),
    /// The table has no room for it (an event stream is full).
    TableFull(String),
    /// The table went away (was dropped) during the write.
    TableDropped(String),
    /// An earlier line of the same table failed to be written (an I/O
    /// error): this one was not written either, and may be retried.
    NotAttempted(String),
}

impl std::fmt::Display for LineRejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineRejection::Malformed(why)
            | LineRejection::Unfit(why)
            | LineRejection::TableFull(why)
            | LineRejection::NotAttempted(why) => f.write_str(why),
            LineRejection::TableDropped(name) => write!(f, "stream '{name}' was dropped during the write"),
            LineRejection::FieldTypeConflict { field, measurement, input, existing } => {
                f.write_str(&crate::model::field_type_conflict_message(field, measurement, *input, *existing))
            }
        }
    }
}

pub trait SeriesStore: Send + Sync {
    /// Database names, sorted.
    fn databases(&self) -> Vec<String>;
    /// Creates a database (no error if it exists).
    fn create_database(&self, name: &str) -> Result<(), EngineError>;
    /// Measurement names of a database, sorted.
    fn measurements(&self, db: &str) -> Result<Vec<String>, EngineError>;
    /// Every series of a measurement, sorted by (tags, field).
    fn series(&self, db: &str, measurement: &str) -> Result<Vec<SeriesInfo>, EngineError>;
    /// Points of each series in `ids` within `range`, sorted by time, one
    /// value per timestamp (the latest write wins), from one snapshot: a
    /// concurrent write is wholly visible or not at all.
    fn read(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
    ) -> Result<Vec<Vec<(TimestampNs, FieldValue)>>, EngineError>;
    /// The smallest and largest timestamps the series of `ids` hold, `None`
    /// when they hold none. A bound, not an answer: deleted points may
    /// widen it. Long scans (SQL) cut their reads into time windows by it.
    fn time_span(&self, db: &str, ids: &[SeriesId]) -> Result<Option<TimeRange>, EngineError> {
        let points = self.read(db, ids, TimeRange::ALL)?;
        Ok(span_of(points.iter().flat_map(|series| series.iter().map(|(t, _)| *t))))
    }
    /// The timestamps of each series in `ids` within `range` (what
    /// [`SeriesStore::read`] would return, without the values), from one
    /// snapshot. Engines skip decoding values; SQL reads the fields a query
    /// does not name this way, to know which rows exist.
    fn read_timestamps(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
    ) -> Result<Vec<Vec<TimestampNs>>, EngineError> {
        let points = self.read(db, ids, range)?;
        Ok(points.into_iter().map(|series| series.into_iter().map(|(t, _)| t).collect()).collect())
    }
    /// The newest point of each series in `ids` within `range` (None: it
    /// has none there), from one snapshot: the last point
    /// [`SeriesStore::read`] would return. Engines answer it from a
    /// last-point cache without reading blocks (`last(*)`, TSBS lastpoint).
    fn read_last(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
    ) -> Result<Vec<Option<(TimestampNs, FieldValue)>>, EngineError> {
        Ok(self.read(db, ids, range)?.into_iter().map(|mut points| points.pop()).collect())
    }
    /// For each series in `ids`, a bound of how many points it holds in
    /// `range`: at least the true count, cheap to compute (block indexes,
    /// not data). Long scans (SQL) size their time windows by it.
    fn point_count_bounds(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
    ) -> Result<Vec<u64>, EngineError> {
        let points = self.read(db, ids, range)?;
        Ok(points.iter().map(|series| series.len() as u64).collect())
    }
    /// For each series in `ids`, the partial aggregates (count, sum, min,
    /// max, first, last) of its points in `range`, one per window of
    /// `window` that holds points (None: one for the whole range), by
    /// window start, from one snapshot. What a query combines over a group
    /// of series; equal to folding [`SeriesStore::read`]'s points, except
    /// that a float sum may round differently (engines add a block's summed
    /// sum at once: `crate::window_agg`).
    fn window_aggregates(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
        window: Option<WindowSpec>,
    ) -> Result<Vec<Vec<PartialAggregate>>, EngineError> {
        let points = self.read(db, ids, range)?;
        Ok(points.iter().map(|p| fold_points(p, range, window)).collect())
    }
    /// [`SeriesStore::read`], except that points of the i-th series may be
    /// left out where `may_pass(i, min, max)` is false for a range
    /// `[min, max]` of numeric values holding them: engines leave out
    /// sealed blocks by their summaries without reading them. For a caller
    /// that drops the points failing a condition anyway (`WHERE usage > 90`
    /// needs no block whose largest value is 90).
    fn read_pruned(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
        _may_pass: &(dyn Fn(usize, &FieldValue, &FieldValue) -> bool + Sync),
    ) -> Result<Vec<Vec<(TimestampNs, FieldValue)>>, EngineError> {
        self.read(db, ids, range)
    }
    /// The points of each series of `ids` in `range` at the times of
    /// `times[i]` (sorted, distinct) only: [`SeriesStore::read`] with the
    /// other points left out. Engines skip the sealed blocks that hold none
    /// of those times without reading them (a filtered scan reads its
    /// other fields only where the filtered one passed).
    fn read_at_times(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
        times: &[&[TimestampNs]],
    ) -> Result<Vec<Vec<(TimestampNs, FieldValue)>>, EngineError> {
        let mut data = self.read(db, ids, range)?;
        for (points, wanted) in data.iter_mut().zip(times) {
            keep_at_times(points, wanted);
        }
        Ok(data)
    }
    /// A version of a measurement's set of series: it changes whenever a
    /// series is added or removed and never returns to an earlier value, so
    /// what was built from [`SeriesStore::series`] under one version stays
    /// valid while it holds. `None`: the store does not tell (or the
    /// measurement does not exist); callers then list the series anew.
    fn series_version(&self, _db: &str, _measurement: &str) -> Option<u64> {
        None
    }
    /// The tag index of a measurement (its tag sets, field types and tag
    /// postings, [`crate::tag_index`]); empty when it has no series.
    /// Engines keep it while [`SeriesStore::series_version`] stays the same.
    fn measurement_tags(&self, db: &str, measurement: &str) -> Result<Arc<MeasurementTags>, EngineError> {
        Ok(Arc::new(MeasurementTags::from_series(&self.series(db, measurement)?)))
    }
    /// Writes `points` as one transaction and returns once it is durable
    /// under the configured commit protocol. Points whose field type
    /// conflicts with the established type are rejected (listed in the
    /// outcome); the rest commit together.
    fn write(&self, db: &str, points: &[Point]) -> Result<WriteOutcome, EngineError>;
    /// Deletes the points of `ids` within `range` (one transaction); returns
    /// how many series it touched.
    fn delete(&self, db: &str, ids: &[SeriesId], range: TimeRange) -> Result<u64, EngineError>;
    /// Removes a measurement, its series and their data (one transaction).
    fn drop_measurement(&self, db: &str, measurement: &str) -> Result<(), EngineError>;
    /// Removes a database, its series and their data (one transaction); a
    /// database that does not exist is no error (InfluxDB 1.x).
    fn drop_database(&self, db: &str) -> Result<(), EngineError>;
    /// Removes the series `ids` of `db` from the index with their data (one
    /// transaction); a measurement left without series goes too. Returns
    /// how many series it removed.
    fn drop_series(&self, db: &str, ids: &[SeriesId]) -> Result<u64, EngineError>;
    /// The retention policies of `db` (`crate::retention`).
    fn retention_policies(&self, db: &str) -> Result<DbRetention, EngineError>;
    /// Applies one retention policy change to `db`; returns once it is
    /// durable (a refused change is `EngineError::Retention`).
    fn change_retention(&self, db: &str, change: &RetentionChange) -> Result<(), EngineError>;
}

/// Keeps the points of `points` (sorted by time) at the times of `times`
/// (sorted, distinct): one merge of the two lists.
pub fn keep_at_times(points: &mut Vec<(TimestampNs, FieldValue)>, times: &[TimestampNs]) {
    let mut wanted = times.iter().peekable();
    points.retain(|(t, _)| {
        while wanted.next_if(|w| **w < *t).is_some() {}
        wanted.peek().is_some_and(|w| **w == *t)
    });
}

/// Whether some time of `times` (sorted) lies in `[min_ns, max_ns]`.
pub fn any_time_within(times: &[TimestampNs], min_ns: TimestampNs, max_ns: TimestampNs) -> bool {
    let at = times.partition_point(|t| *t < min_ns);
    times.get(at).is_some_and(|t| *t <= max_ns)
}

/// The range spanned by `timestamps`, `None` when there are none.
pub fn span_of(timestamps: impl IntoIterator<Item = TimestampNs>) -> Option<TimeRange> {
    timestamps.into_iter().fold(None, |span, t| match span {
        None => Some(TimeRange { min_ns: t, max_ns: t }),
        Some(r) => Some(TimeRange { min_ns: r.min_ns.min(t), max_ns: r.max_ns.max(t) }),
    })
}

#[cfg(test)]
mod time_filter_tests {
    use super::*;

    #[test]
    fn points_are_kept_at_the_wanted_times_only() {
        let f = FieldValue::Float;
        let mut points = vec![(1, f(1.0)), (3, f(3.0)), (5, f(5.0)), (7, f(7.0))];
        keep_at_times(&mut points, &[0, 3, 4, 7, 9]);
        assert_eq!(points, vec![(3, f(3.0)), (7, f(7.0))]);
        keep_at_times(&mut points, &[]);
        assert!(points.is_empty());
        assert!(any_time_within(&[2, 10], 5, 10) && any_time_within(&[2, 10], 2, 2));
        assert!(!any_time_within(&[2, 10], 3, 9) && !any_time_within(&[], 0, 100));
    }
}
