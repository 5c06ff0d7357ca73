//! The scan of a measurement (issue 19, "Output: results stream as Arrow
//! record batches"): tag set by tag set, each read in time windows sized so
//! a window holds about [`TARGET_ROWS`] rows, so memory stays flat however
//! long a series is. Within a window the field series are merged by
//! timestamp into rows. Each window is one snapshot read of the engine; a
//! scan as a whole is not one snapshot (a write landing during a long scan
//! may show in later windows and not in earlier ones).

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, DictionaryArray, Int32Array, RecordBatch, RecordBatchOptions, StringArray,
    TimestampNanosecondArray,
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
/// A tag set's first window is its time span divided by this.
const FIRST_WINDOW_DIVISOR: i128 = 1024;

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

/// Whether a tag set passes every `tag = value` filter (a missing tag is NULL
/// and equals nothing).
fn admits(set: &TagSet, equal: &[(String, String)]) -> bool {
    equal.iter().all(|(k, v)| set.tags.iter().any(|(tk, tv)| tk == k && tv == v))
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
    ids: Vec<SeriesId>,
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
            let points = self
                .tables
                .series_store()
                .read(&self.db, &w.ids, TimeRange { min_ns, max_ns })
                .map_err(df_err)?;
            let (set, width) = (w.set, w.width_ns);
            let batch = self.rows(set, &points)?;
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
        let ids: Vec<SeriesId> = self.layout.tag_sets[set].series.iter().map(|(_, id)| *id).collect();
        let Some(span) = self.tables.series_store().time_span(&self.db, &ids).map_err(df_err)? else {
            return Ok(None);
        };
        let (first, last) = (span.min_ns.max(self.range.min_ns), span.max_ns.min(self.range.max_ns));
        if first > last {
            return Ok(None);
        }
        let width_ns = ((i128::from(last) - i128::from(first) + 1) / FIRST_WINDOW_DIVISOR).max(1);
        Ok(Some(Window { set, ids, next_ns: i128::from(first), last_ns: last, width_ns }))
    }

    /// The rows of one window of tag set `set`: the union of its series'
    /// timestamps, each field where its series has that timestamp.
    fn rows(&self, set: usize, points: &[Vec<(TimestampNs, FieldValue)>]) -> Result<RecordBatch> {
        let mut times: Vec<TimestampNs> = points.iter().flat_map(|p| p.iter().map(|(t, _)| *t)).collect();
        times.sort_unstable();
        times.dedup();
        let tag_set = &self.layout.tag_sets[set];
        let ntags = self.layout.tags.len();
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        for &c in &self.columns {
            arrays.push(if c == 0 {
                Arc::new(TimestampNanosecondArray::from(times.clone()).with_timezone("UTC"))
            } else if c <= ntags {
                let key = &self.layout.tags[c - 1];
                let value = tag_set.tags.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
                constant_tag(value, times.len())
            } else {
                let field = c - 1 - ntags;
                let series = tag_set.series.iter().position(|(f, _)| *f == field);
                field_array(&self.layout.fields[field], series.map(|i| points[i].as_slice()), &times)?
            });
        }
        let options = RecordBatchOptions::new().with_row_count(Some(times.len()));
        Ok(RecordBatch::try_new_with_options(self.schema.clone(), arrays, &options)?)
    }
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

/// A tag column of one tag set: the same value (or NULL) on every row.
fn constant_tag(value: Option<&str>, rows: usize) -> ArrayRef {
    let keys = match value {
        Some(_) => Int32Array::from(vec![0; rows]),
        None => Int32Array::from(vec![None; rows]),
    };
    let values = StringArray::from(vec![value.unwrap_or_default()]);
    Arc::new(DictionaryArray::<Int32Type>::try_new(keys, Arc::new(values)).expect("key 0 indexes one value"))
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
