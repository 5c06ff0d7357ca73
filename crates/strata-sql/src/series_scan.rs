//! The scan of a measurement (issue 19, "Output: results stream as Arrow
//! record batches"): tag set by tag set, each read in time windows sized so
//! a window holds about [`TARGET_ROWS`] rows, so memory stays flat however
//! long a series is. The first window is sized from the engine's point-count
//! bounds (block indexes), so a tag set that fits is read at once; later
//! ones adapt to the rows the last one held.
//!
//! Within a window the field series are merged by timestamp into rows. Only
//! the fields the query names are read with their values; the others are
//! read as timestamps only (no value is decoded), because a row exists
//! wherever any field has a value. A window is two snapshot reads (those
//! timestamps, then the named fields' points); a scan as a whole is not one
//! snapshot (a write landing during a long scan may show in later windows
//! and not in earlier ones).

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, DictionaryArray, Int32Array, RecordBatch, RecordBatchOptions, TimestampNanosecondArray,
};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::{Int32Type, SchemaRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use strata_engine::Tables;
use strata_series::{FieldValue, SeriesId, TimeRange, TimestampNs};

use crate::arrays::values_array;
use crate::error::df_err;
use crate::filters::PushedFilters;
use crate::plan::batches;
use crate::series_table::{FieldColumn, SeriesLayout, TagSet};

/// Rows a time window aims at, and the size of the batches handed on.
pub const TARGET_ROWS: usize = 8192;
/// A window's width changes by at most this factor from one read to the next.
const WIDTH_STEP: i128 = 16;

/// A scan of one measurement: the columns asked for, the tag sets the
/// equality filters admit, the time range.
pub struct SeriesScan {
    tables: Arc<dyn Tables>,
    db: String,
    layout: Arc<SeriesLayout>,
    /// Indices into the layout's schema, in output order.
    columns: Vec<usize>,
    tag_sets: Vec<usize>,
    range: TimeRange,
    schema: SchemaRef,
}

impl std::fmt::Debug for SeriesScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SeriesScan({}, {} tag sets, {:?})", self.db, self.tag_sets.len(), self.range)
    }
}

impl SeriesScan {
    pub fn new(
        tables: Arc<dyn Tables>,
        db: &str,
        layout: Arc<SeriesLayout>,
        columns: Vec<usize>,
        filters: PushedFilters,
    ) -> Result<SeriesScan> {
        let schema = Arc::new(layout.schema.project(&columns)?);
        let tag_sets =
            (0..layout.tag_sets.len()).filter(|i| admits(&layout.tag_sets[*i], &filters.equal)).collect();
        Ok(SeriesScan { tables, db: db.to_string(), layout, columns, tag_sets, range: filters.range, schema })
    }
}

/// Whether a tag set passes every `tag IN (values)` filter (a missing tag is
/// NULL and equals nothing).
fn admits(set: &TagSet, equal: &[(String, Vec<String>)]) -> bool {
    equal.iter().all(|(k, values)| set.tags.iter().any(|(tk, tv)| tk == k && values.contains(tv)))
}

impl PartitionStream for SeriesScan {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let mut rows = SeriesRows {
            tables: self.tables.clone(),
            db: self.db.clone(),
            layout: self.layout.clone(),
            columns: self.columns.clone(),
            schema: self.schema.clone(),
            tag_sets: self.tag_sets.clone().into_iter(),
            range: self.range,
            window: None,
        };
        let batches = Coalesce::new(batches(move || rows.next_batch()));
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), futures::stream::iter(batches)))
    }
}

/// Where a tag set's scan is.
struct Window {
    set: usize,
    /// Series of the fields the scan shows, read with their values.
    shown: Vec<SeriesId>,
    /// The other series of the tag set, read as timestamps.
    hidden: Vec<SeriesId>,
    next_ns: i128,
    last_ns: i64,
    width_ns: i128,
}

/// The batches of a scan, one per non-empty window.
struct SeriesRows {
    tables: Arc<dyn Tables>,
    db: String,
    layout: Arc<SeriesLayout>,
    columns: Vec<usize>,
    schema: SchemaRef,
    tag_sets: std::vec::IntoIter<usize>,
    range: TimeRange,
    window: Option<Window>,
}

impl SeriesRows {
    /// The next non-empty window's rows, `None` at the end.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            let Some(w) = self.window.as_mut() else {
                let Some(set) = self.tag_sets.next() else { return Ok(None) };
                self.window = self.start(set)?;
                continue;
            };
            if w.next_ns > i128::from(w.last_ns) {
                self.window = None;
                continue;
            }
            let min_ns = w.next_ns as i64;
            let max_ns = (w.next_ns + w.width_ns - 1).min(i128::from(w.last_ns)) as i64;
            let window = TimeRange { min_ns, max_ns };
            let store = self.tables.series_store();
            let hidden = match w.hidden.is_empty() {
                true => Vec::new(),
                false => store.read_timestamps(&self.db, &w.hidden, window).map_err(df_err)?,
            };
            let points = store.read(&self.db, &w.shown, window).map_err(df_err)?;
            let (set, width) = (w.set, w.width_ns);
            let batch = self.rows(set, &points, &hidden)?;
            let w = self.window.as_mut().expect("a window is open");
            w.next_ns = i128::from(max_ns) + 1;
            w.width_ns = next_width(width, batch.num_rows());
            if batch.num_rows() > 0 {
                return Ok(Some(batch));
            }
        }
    }

    /// The first window of tag set `set`, `None` if it holds nothing in range.
    fn start(&self, set: usize) -> Result<Option<Window>> {
        let series = &self.layout.tag_sets[set].series;
        let ids: Vec<SeriesId> = series.iter().map(|(_, id)| *id).collect();
        let store = self.tables.series_store();
        let Some(span) = store.time_span(&self.db, &ids).map_err(df_err)? else {
            return Ok(None);
        };
        let (first, last) = (span.min_ns.max(self.range.min_ns), span.max_ns.min(self.range.max_ns));
        if first > last {
            return Ok(None);
        }
        // Rows are at least the largest series' points: size the first window by that.
        let in_range = TimeRange { min_ns: first, max_ns: last };
        let rows = store.point_count_bounds(&self.db, &ids, in_range).map_err(df_err)?.into_iter().max();
        let span_ns = i128::from(last) - i128::from(first) + 1;
        let width_ns =
            (span_ns * TARGET_ROWS as i128 / i128::from(rows.unwrap_or(1).max(1))).clamp(1, span_ns);
        let shown_fields = self.shown_fields();
        let (shown, hidden): (Vec<_>, Vec<_>) = series.iter().partition(|(f, _)| shown_fields.contains(f));
        Ok(Some(Window {
            set,
            shown: shown.into_iter().map(|(_, id)| id).collect(),
            hidden: hidden.into_iter().map(|(_, id)| id).collect(),
            next_ns: i128::from(first),
            last_ns: last,
            width_ns,
        }))
    }

    /// The layout's indices of the fields among the scan's columns.
    fn shown_fields(&self) -> Vec<usize> {
        let ntags = self.layout.tags.len();
        self.columns.iter().filter(|c| **c > ntags).map(|c| c - 1 - ntags).collect()
    }

    /// The rows of one window of tag set `set`: the union of its series'
    /// timestamps (`points` of the shown fields, `hidden` of the others),
    /// each shown field where its series has that timestamp.
    fn rows(
        &self,
        set: usize,
        points: &[Vec<(TimestampNs, FieldValue)>],
        hidden: &[Vec<TimestampNs>],
    ) -> Result<RecordBatch> {
        let shown: Vec<Vec<TimestampNs>> =
            points.iter().map(|p| p.iter().map(|(t, _)| *t).collect()).collect();
        let times = union_of(shown.iter().chain(hidden).map(Vec::as_slice));
        let tag_set = &self.layout.tag_sets[set];
        let shown_series: Vec<usize> = {
            let fields = self.shown_fields();
            tag_set.series.iter().filter(|(f, _)| fields.contains(f)).map(|(f, _)| *f).collect()
        };
        let ntags = self.layout.tags.len();
        let mut arrays: Vec<Option<ArrayRef>> = Vec::with_capacity(self.columns.len());
        for &c in &self.columns {
            arrays.push(if c == 0 {
                None // built last, from `times` itself
            } else if c <= ntags {
                Some(constant_tag(tag_set.tag_keys[c - 1], &self.layout.tag_values[c - 1], times.len()))
            } else {
                let field = c - 1 - ntags;
                let series = shown_series.iter().position(|f| *f == field);
                Some(field_array(&self.layout.fields[field], series.map(|i| points[i].as_slice()), &times)?)
            });
        }
        let rows = times.len();
        let mut times = Some(times);
        let arrays = arrays
            .into_iter()
            .map(|a| {
                a.unwrap_or_else(|| {
                    let times = times.take().expect("one time column");
                    Arc::new(TimestampNanosecondArray::from(times).with_timezone("UTC"))
                })
            })
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(self.schema.clone(), arrays, &options)?)
    }
}

/// The sorted union of sorted timestamp lists. Lists equal to the union so
/// far (every field of a row-shaped write) cost one comparison.
fn union_of<'a>(lists: impl Iterator<Item = &'a [TimestampNs]>) -> Vec<TimestampNs> {
    let mut union: Vec<TimestampNs> = Vec::new();
    for list in lists {
        if list == union.as_slice() || list.is_empty() {
            continue;
        }
        if union.is_empty() {
            union = list.to_vec();
            continue;
        }
        let mut merged = Vec::with_capacity(union.len().max(list.len()));
        let (mut a, mut b) = (union.iter().peekable(), list.iter().peekable());
        loop {
            match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x < y => merged.push(*a.next().expect("peeked")),
                (Some(x), Some(y)) if x > y => merged.push(*b.next().expect("peeked")),
                (Some(_), Some(_)) => {
                    merged.push(*a.next().expect("peeked"));
                    b.next();
                }
                (Some(_), None) => merged.push(*a.next().expect("peeked")),
                (None, Some(_)) => merged.push(*b.next().expect("peeked")),
                (None, None) => break,
            }
        }
        union = merged;
    }
    union
}

/// The next window's width: scaled so it would have held [`TARGET_ROWS`],
/// by at most [`WIDTH_STEP`] either way.
fn next_width(width_ns: i128, rows: usize) -> i128 {
    let scaled =
        if rows == 0 { width_ns * WIDTH_STEP } else { width_ns * TARGET_ROWS as i128 / rows as i128 };
    scaled
        .clamp((width_ns / WIDTH_STEP).max(1), width_ns.saturating_mul(WIDTH_STEP))
        .min(i128::from(u64::MAX))
}

/// A tag column of one tag set: the same value (or NULL) on every row, as
/// keys into the column's shared dictionary `values`.
fn constant_tag(key: Option<i32>, values: &ArrayRef, rows: usize) -> ArrayRef {
    let keys = match key {
        Some(k) => Int32Array::from(vec![k; rows]),
        None => Int32Array::from(vec![None; rows]),
    };
    Arc::new(DictionaryArray::<Int32Type>::try_new(keys, values.clone()).expect("keys index the values"))
}

/// A field column over `times`: the series' value where it has one, NULL
/// elsewhere (and everywhere when the tag set lacks the field).
fn field_array(
    field: &FieldColumn,
    points: Option<&[(TimestampNs, FieldValue)]>,
    times: &[TimestampNs],
) -> Result<ArrayRef> {
    let points = points.unwrap_or_default();
    let mut next = 0;
    let values = times.iter().map(|t| {
        while next < points.len() && points[next].0 < *t {
            next += 1;
        }
        points.get(next).filter(|(pt, _)| pt == t).map(|(_, v)| v)
    });
    values_array(&field.key, field.ty, values)
}

/// Merges small batches (a window of a small tag set) into ones of about
/// [`TARGET_ROWS`], so a high-cardinality measurement is not sent as
/// thousands of tiny batches.
pub(crate) struct Coalesce<I> {
    inner: I,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
}

impl<I> Coalesce<I> {
    pub(crate) fn new(inner: I) -> Coalesce<I> {
        Coalesce { inner, pending: Vec::new(), pending_rows: 0 }
    }

    fn flush(&mut self) -> Option<Result<RecordBatch>> {
        let batches = std::mem::take(&mut self.pending);
        self.pending_rows = 0;
        match batches.len() {
            0 => None,
            1 => batches.into_iter().next().map(Ok),
            _ => Some(concat_batches(&batches[0].schema(), &batches).map_err(DataFusionError::from)),
        }
    }
}

impl<I: Iterator<Item = Result<RecordBatch>>> Iterator for Coalesce<I> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.inner.next() {
                Some(Ok(b)) => {
                    self.pending_rows += b.num_rows();
                    self.pending.push(b);
                    if self.pending_rows >= TARGET_ROWS {
                        return self.flush();
                    }
                }
                Some(Err(e)) => return Some(Err(e)),
                None => return self.flush(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_series::FieldType;

    #[test]
    fn window_width_follows_the_row_count_within_one_step() {
        assert_eq!(next_width(1000, TARGET_ROWS), 1000);
        assert_eq!(next_width(1000, TARGET_ROWS * 2), 500);
        assert_eq!(next_width(1000, 0), 16_000);
        assert_eq!(next_width(1000, 1), 16_000);
        assert_eq!(next_width(1000, TARGET_ROWS * 1000), 62);
        assert_eq!(next_width(1, TARGET_ROWS * 1000), 1);
    }

    #[test]
    fn the_union_of_timestamp_lists_is_sorted_and_without_repeats() {
        let lists = [vec![1, 3, 5], vec![1, 3, 5], vec![], vec![0, 3, 6], vec![2]];
        assert_eq!(union_of(lists.iter().map(Vec::as_slice)), vec![0, 1, 2, 3, 5, 6]);
        assert!(union_of(std::iter::empty()).is_empty());
    }

    #[test]
    fn a_field_column_is_null_where_its_series_has_no_point() {
        let field = FieldColumn { column: "v".into(), key: "v".into(), ty: FieldType::Integer };
        let points = vec![(2, FieldValue::Integer(20)), (5, FieldValue::Integer(50))];
        let a = field_array(&field, Some(&points), &[1, 2, 3, 5]).unwrap();
        let a = a.as_any().downcast_ref::<datafusion::arrow::array::Int64Array>().unwrap();
        let got: Vec<Option<i64>> = a.iter().collect();
        assert_eq!(got, vec![None, Some(20), None, Some(50)]);
        let none = field_array(&field, None, &[1, 2]).unwrap();
        assert_eq!(none.null_count(), 2);
    }

    #[test]
    fn coalesce_merges_small_batches_up_to_the_target() {
        let schema = Arc::new(datafusion::arrow::datatypes::Schema::empty());
        let options = RecordBatchOptions::new().with_row_count(Some(TARGET_ROWS / 4 + 1));
        let small = RecordBatch::try_new_with_options(schema, vec![], &options).unwrap();
        let batches: Vec<RecordBatch> =
            Coalesce::new((0..10).map(|_| Ok(small.clone()))).collect::<Result<_>>().unwrap();
        let rows: Vec<usize> = batches.iter().map(|b| b.num_rows()).collect();
        assert_eq!(rows.iter().sum::<usize>(), 10 * (TARGET_ROWS / 4 + 1));
        assert_eq!(rows.len(), 3, "batches of {rows:?}");
    }
}
