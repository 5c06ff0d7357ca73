//! The physical plan of gap filling: it reads its input (an aggregate's
//! rows, one per group and non-empty bucket) into one partition, sorts it
//! by group and time, and streams each group with every bucket present,
//! filled by [`super::fill`]'s rules, in batches of about
//! [`BATCH_ROWS`] rows.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, Float64Array, RecordBatch, TimestampNanosecondArray, UInt32Array,
};
use datafusion::arrow::compute::kernels::zip::zip;
use datafusion::arrow::compute::{
    cast, concat_batches, lexsort_to_indices, take, take_record_batch, SortColumn,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{exec_err, internal_err};
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::{StreamExt, TryStreamExt};

use super::fill::{interpolated, shown_rows, slots, Buckets, Slot};
use super::node::GapFillParams;
use super::udfs::FillMarker;
use super::MAX_FILLED_ROWS;

/// Rows an output batch aims at (a group is never split).
pub const BATCH_ROWS: usize = 8192;

/// See the module comment.
#[derive(Debug)]
pub struct GapFillExec {
    input: Arc<dyn ExecutionPlan>,
    params: GapFillParams,
    buckets: Buckets,
    properties: Arc<PlanProperties>,
}

impl GapFillExec {
    pub fn new(input: Arc<dyn ExecutionPlan>, params: GapFillParams, buckets: Buckets) -> GapFillExec {
        let fields: Vec<Field> = input
            .schema()
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| f.as_ref().clone().with_nullable(f.is_nullable() || params.is_filled(i)))
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(fields, input.schema().metadata().clone()));
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        GapFillExec { input, params, buckets, properties: Arc::new(properties) }
    }
}

impl DisplayAs for GapFillExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let b = &self.buckets;
        write!(f, "GapFillExec: buckets=[{}, {}) every {} ns", b.first_ns, b.end_ns, b.stride_ns)
    }
}

impl ExecutionPlan for GapFillExec {
    fn name(&self) -> &str {
        "GapFillExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        vec![Distribution::SinglePartition]
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return internal_err!("GapFillExec has one input, not {}", children.len());
        }
        Ok(Arc::new(GapFillExec::new(children.swap_remove(0), self.params.clone(), self.buckets)))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!("GapFillExec has one partition, not {partition}");
        }
        let input = self.input.execute(0, context)?;
        let schema = self.schema();
        let (params, buckets) = (self.params.clone(), self.buckets);
        let filled = futures::stream::once(async move {
            let batches: Vec<RecordBatch> = input.try_collect().await?;
            let groups = Groups::new(&schema, params, buckets, &batches)?;
            Ok::<_, datafusion::error::DataFusionError>(futures::stream::iter(groups))
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema(), filled.boxed())))
    }
}

/// The sorted input and the groups still to send.
struct Groups {
    sorted: RecordBatch,
    times: Vec<i64>,
    /// `interpolate` columns as numbers.
    numbers: Vec<Option<Float64Array>>,
    ranges: std::vec::IntoIter<Range<usize>>,
    params: GapFillParams,
    buckets: Buckets,
}

impl Groups {
    fn new(
        schema: &SchemaRef,
        params: GapFillParams,
        buckets: Buckets,
        batches: &[RecordBatch],
    ) -> Result<Groups> {
        let batch = concat_batches(schema, batches)?;
        let mut keys: Vec<SortColumn> = params
            .groups
            .iter()
            .map(|&c| SortColumn { values: batch.column(c).clone(), options: None })
            .collect();
        keys.push(SortColumn { values: batch.column(params.time).clone(), options: None });
        let sorted = if batch.num_rows() == 0 {
            batch
        } else {
            take_record_batch(&batch, &lexsort_to_indices(&keys, None)?)?
        };
        let time = sorted.column(params.time);
        let Some(times) = time.as_any().downcast_ref::<TimestampNanosecondArray>() else {
            return exec_err!("date_bin_gapfill() needs nanosecond timestamps, not {}", time.data_type());
        };
        if times.null_count() > 0 {
            return exec_err!("date_bin_gapfill() met a NULL time");
        }
        let times = times.values().to_vec();
        let ranges = if sorted.num_rows() == 0 {
            Vec::new()
        } else if params.groups.is_empty() {
            std::iter::once(0..sorted.num_rows()).collect()
        } else {
            let columns: Vec<ArrayRef> = params.groups.iter().map(|&c| sorted.column(c).clone()).collect();
            datafusion::arrow::compute::partition(&columns)?.ranges()
        };
        let rows =
            (ranges.len() as u64).saturating_mul(buckets.count()).saturating_add(sorted.num_rows() as u64);
        if rows > MAX_FILLED_ROWS {
            return exec_err!(
                "gap filling would make about {rows} rows (more than {MAX_FILLED_ROWS}): narrow the time range or widen the buckets"
            );
        }
        let numbers = (0..sorted.num_columns())
            .map(|c| match params.fill_of(c) {
                Some(FillMarker::Interpolate) => {
                    let n = cast(sorted.column(c), &DataType::Float64)?;
                    Ok(Some(n.as_any().downcast_ref::<Float64Array>().expect("cast to Float64").clone()))
                }
                _ => Ok(None),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Groups { sorted, times, numbers, ranges: ranges.into_iter(), params, buckets })
    }

    /// One group with every bucket.
    fn group(&self, range: Range<usize>) -> Result<RecordBatch> {
        let rows: Vec<(usize, i64)> = range.clone().map(|i| (i, self.times[i])).collect();
        let slots = slots(&rows, &self.buckets);
        let own: Vec<Option<usize>> = shown_rows(&slots, false, |_| true);
        let mut columns = Vec::with_capacity(self.sorted.num_columns());
        for (c, column) in self.sorted.columns().iter().enumerate() {
            let array: ArrayRef = if c == self.params.time {
                let tz = match column.data_type() {
                    DataType::Timestamp(TimeUnit::Nanosecond, tz) => tz.clone(),
                    _ => None,
                };
                let times = slots.iter().map(|s| match *s {
                    Slot::Row(i) => self.times[i],
                    Slot::Gap(t) => t,
                });
                Arc::new(TimestampNanosecondArray::from_iter_values(times).with_timezone_opt(tz))
            } else if self.params.groups.contains(&c) {
                take(column, &UInt32Array::from(vec![index(range.start)?; slots.len()]), None)?
            } else {
                match self.params.fill_of(c) {
                    None => take_rows(column, &own)?,
                    Some(FillMarker::Locf) => {
                        take_rows(column, &shown_rows(&slots, true, |i| column.is_valid(i)))?
                    }
                    Some(FillMarker::Interpolate) => {
                        let numbers = self.numbers[c].as_ref().expect("cast in new");
                        let value = |i: usize| numbers.is_valid(i).then(|| numbers.value(i));
                        let gaps = Float64Array::from(interpolated(&slots, |i| self.times[i], value));
                        let is_row =
                            BooleanArray::from_iter(slots.iter().map(|s| Some(matches!(s, Slot::Row(_)))));
                        zip(&is_row, &take_rows(column, &own)?, &cast(&gaps, column.data_type())?)?
                    }
                }
            };
            columns.push(array);
        }
        Ok(RecordBatch::try_new(self.sorted.schema(), columns)?)
    }
}

impl Iterator for Groups {
    type Item = Result<RecordBatch>;

    /// Whole groups until about [`BATCH_ROWS`] rows.
    fn next(&mut self) -> Option<Result<RecordBatch>> {
        let mut parts = Vec::new();
        let mut rows = 0;
        while rows < BATCH_ROWS {
            let Some(range) = self.ranges.next() else { break };
            match self.group(range) {
                Ok(b) => {
                    rows += b.num_rows();
                    parts.push(b);
                }
                Err(e) => return Some(Err(e)),
            }
        }
        if parts.is_empty() {
            return None;
        }
        Some(concat_batches(&self.sorted.schema(), &parts).map_err(Into::into))
    }
}

fn index(i: usize) -> Result<u32> {
    match u32::try_from(i) {
        Ok(i) => Ok(i),
        Err(_) => exec_err!("gap filling reads at most {} rows", u32::MAX),
    }
}

/// `column`'s values at `rows` (NULL where `None`).
fn take_rows(column: &ArrayRef, rows: &[Option<usize>]) -> Result<ArrayRef> {
    let indices = rows.iter().map(|r| r.map(index).transpose()).collect::<Result<UInt32Array>>()?;
    Ok(take(column, &indices, None)?)
}
