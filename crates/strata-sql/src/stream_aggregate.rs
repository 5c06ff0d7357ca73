//! Temporal aggregates of an event stream from its TAB+-tree (issue 19,
//! "Temporal aggregates go to the TAB+-tree's stored aggregates"; ChronicleDB
//! section 4: every index node keeps count, sum, min and max of its subtree).
//!
//! An optimizer rule, not a UDAF: a UDAF still receives every row, while the
//! point is not to read them. The rule runs after DataFusion has pushed the
//! time filters and the projection into the scan; it replaces
//!
//! ```text
//! Aggregate [date_bin|time_bucket(<fixed interval>, time [, origin])]? [count|sum|avg|min|max]
//!   TableScan <stream> (time filters only)
//! ```
//!
//! with a scan of [`StreamAggregateTable`] (`TableScan: tab_aggregates(<stream>)`
//! in `EXPLAIN`), one `EventQuery::Aggregate` that the store answers from
//! the tree's inner nodes, under a projection that keeps the aggregate's
//! column names. Anything else (another filter, a
//! `DISTINCT`, `FILTER (WHERE ...)`, another function, a grouping by an
//! attribute) keeps DataFusion's plan. `sum`, `min` and `max` are taken from
//! the tree for `double` attributes only, as the tree keeps them as
//! doubles (an integer sum beyond 2^53 would not be exact); `count` for any
//! attribute and `count(*)`, `avg` for numeric ones.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, RecordBatch, TimestampNanosecondArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::Transformed;
use datafusion::common::TableReference;
use datafusion::datasource::provider_as_source;
use datafusion::datasource::source_as_provider;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::functions::datetime::date_bin::DateBinFunc;
use datafusion::functions_aggregate::average::Avg;
use datafusion::functions_aggregate::count::Count;
use datafusion::functions_aggregate::min_max::{Max, Min};
use datafusion::functions_aggregate::sum::Sum;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{
    col, Aggregate, Expr, LogicalPlan, Projection, TableScan, TableScanBuilder, TableType,
};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::ExecutionPlan;
use strata_engine::tables::streams::{AggRow, EventAgg, EventQuery, EventRows, EventSelect, EventWindow};
use strata_engine::Tables;
use strata_series::{FieldType, FieldValue};

use crate::arrays::values_array;
use crate::error::df_err;
use crate::filters::{column_name, PushedFilters, TIME_COLUMN};
use crate::functions::TimeBucket;
use crate::literals::{stride_ns, timestamp_ns};
use crate::plan::{batches, scan_plan};
use crate::stream_table::{not_found, StreamTable};

/// See the module comment.
#[derive(Debug, Default)]
pub struct StreamAggregateRule;

impl OptimizerRule for StreamAggregateRule {
    fn name(&self) -> &str {
        "strata_stream_aggregate"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::BottomUp)
    }

    fn rewrite(&self, plan: LogicalPlan, _config: &dyn OptimizerConfig) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Aggregate(a) = &plan else { return Ok(Transformed::no(plan)) };
        let LogicalPlan::TableScan(scan) = a.input.as_ref() else { return Ok(Transformed::no(plan)) };
        match from_tree(a, scan)? {
            Some(replacement) => Ok(Transformed::yes(replacement)),
            None => Ok(Transformed::no(plan)),
        }
    }
}

/// The plan that reads `a` from the tree, if `a` over `scan` is one the tree answers.
fn from_tree(a: &Aggregate, scan: &TableScan) -> Result<Option<LogicalPlan>> {
    if scan.fetch.is_some() {
        return Ok(None);
    }
    let provider = source_as_provider(&scan.source)?;
    let Some(table) = provider.downcast_ref::<StreamTable>() else { return Ok(None) };
    let window = match a.group_expr.as_slice() {
        [] => None,
        [g] => match window_of(g) {
            Some(w) => Some(w),
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    let mut columns = Vec::with_capacity(a.aggr_expr.len());
    for e in &a.aggr_expr {
        match column_of(e, table) {
            Some(c) => columns.push(c),
            None => return Ok(None),
        }
    }
    // The stream scan takes time filters only: they are the range.
    let range = PushedFilters::from_exprs(&scan.filters, &[]).range;
    let select = EventSelect { range, filters: Vec::new(), query: EventQuery::Aggregate { columns, window } };
    let fields: Vec<Field> = a
        .schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| f.as_ref().clone().with_name(format!("c{i}")))
        .collect();
    let source = StreamAggregateTable {
        tables: table.tables.clone(),
        db: table.db.clone(),
        name: table.name.clone(),
        select,
        schema: Arc::new(Schema::new(fields)),
    };
    // The name EXPLAIN shows.
    let table_name = TableReference::bare(format!("tab_aggregates({})", scan.table_name.table()));
    let new_scan = TableScanBuilder::new(table_name.clone(), provider_as_source(Arc::new(source))).build()?;
    let expr = a
        .schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            col(datafusion::common::Column::new(Some(table_name.clone()), format!("c{i}"))).alias(f.name())
        })
        .collect();
    let projection = Projection::try_new(expr, Arc::new(LogicalPlan::TableScan(new_scan)))?;
    if projection.schema.has_equivalent_names_and_types(&a.schema).is_err() {
        return Ok(None);
    }
    Ok(Some(LogicalPlan::Projection(projection)))
}

/// `date_bin(<fixed interval>, time [, <origin>])` as the tree's window.
fn window_of(group: &Expr) -> Option<EventWindow> {
    let f = match group {
        Expr::Alias(a) => return window_of(&a.expr),
        Expr::ScalarFunction(f) => f,
        _ => return None,
    };
    if !(f.func.inner().is::<DateBinFunc>() || f.func.inner().is::<TimeBucket>()) {
        return None;
    }
    let (stride, time, origin) = match f.args.as_slice() {
        [s, t] => (s, t, 0),
        [s, t, o] => (s, t, timestamp_ns(o)?),
        _ => return None,
    };
    let interval_ns = stride_ns(stride).filter(|ns| *ns > 0)?;
    (column_name(time) == Some(TIME_COLUMN))
        .then_some(EventWindow { interval_ns, offset_ns: origin.rem_euclid(interval_ns) })
}

/// One aggregate the tree answers exactly, as `(function, attribute)`.
fn column_of(e: &Expr, table: &StreamTable) -> Option<(EventAgg, String)> {
    let Expr::AggregateFunction(AggregateFunction { func, params }) = e.clone().unalias() else {
        return None;
    };
    if params.distinct
        || params.filter.is_some()
        || !params.order_by.is_empty()
        || params.null_treatment.is_some()
    {
        return None;
    }
    let [arg] = params.args.as_slice() else { return None };
    let f = func.inner();
    let attr = |arg: &Expr| {
        let name = match arg {
            Expr::Cast(c) if c.field.data_type() == &DataType::Float64 => column_name(&c.expr)?,
            other => column_name(other)?,
        };
        table.attrs.iter().find(|a| a.name == name)
    };
    if f.is::<Count>() {
        return match arg {
            // count(*) is count(1): every event.
            Expr::Literal(v, _) if !v.is_null() => {
                table.attrs.first().map(|a| (EventAgg::Count, a.name.clone()))
            }
            _ => attr(arg).map(|a| (EventAgg::Count, a.name.clone())),
        };
    }
    let a = attr(arg)?;
    let double = a.ty.field_type() == FieldType::Float;
    let numeric = double || a.ty.field_type() == FieldType::Integer;
    let func = if f.is::<Avg>() && numeric {
        EventAgg::Mean
    } else if f.is::<Sum>() && double {
        EventAgg::Sum
    } else if f.is::<Min>() && double {
        EventAgg::Min
    } else if f.is::<Max>() && double {
        EventAgg::Max
    } else {
        return None;
    };
    Some((func, a.name.clone()))
}

/// One aggregate query of a stream as a table: columns `c0...` typed as
/// the aggregate it replaces (the window start first when grouped).
#[derive(Clone)]
pub struct StreamAggregateTable {
    tables: Arc<dyn Tables>,
    db: String,
    name: String,
    select: EventSelect,
    schema: SchemaRef,
}

impl std::fmt::Debug for StreamAggregateTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StreamAggregateTable({}.{}, {:?})", self.db, self.name, self.select)
    }
}

#[async_trait]
impl TableProvider for StreamAggregateTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = match projection {
            Some(p) => Arc::new(self.schema.project(p)?),
            None => self.schema.clone(),
        };
        scan_plan(AggregateScan { table: self.clone(), projection: projection.cloned(), schema }, limit)
    }
}

impl StreamAggregateTable {
    /// The aggregate's rows as one batch of the full schema.
    fn batch(&self) -> Result<RecordBatch> {
        let streams = self.tables.stream_tables().ok_or_else(|| not_found(&self.db, &self.name))?;
        let EventRows::Aggregate(mut rows) =
            streams.select_events(&self.db, &self.name, &self.select).map_err(df_err)?
        else {
            unreachable!("an aggregate select answers aggregate rows")
        };
        let EventQuery::Aggregate { columns, window } = &self.select.query else {
            unreachable!("built as one")
        };
        if window.is_none() && rows.is_empty() {
            // SQL's aggregate of no rows: count 0, the others NULL.
            let values = columns
                .iter()
                .map(|(f, _)| (*f == EventAgg::Count).then_some(FieldValue::Integer(0)))
                .collect();
            rows.push(AggRow { start_ns: 0, values, selected_ns: None });
        }
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        let fields = self.schema.fields();
        let mut next = 0;
        if window.is_some() {
            let starts = TimestampNanosecondArray::from_iter_values(rows.iter().map(|r| r.start_ns));
            arrays.push(cast(&starts, fields[0].data_type())?);
            next = 1;
        }
        for (i, (func, attr)) in columns.iter().enumerate() {
            // The store answers counts as integers, the rest (of doubles) as doubles.
            let ty = if *func == EventAgg::Count { FieldType::Integer } else { FieldType::Float };
            let values = values_array(attr, ty, rows.iter().map(|r| r.values[i].as_ref()))?;
            arrays.push(cast(&values, fields[next + i].data_type())?);
        }
        Ok(RecordBatch::try_new(self.schema.clone(), arrays)?)
    }
}

/// The scan of a [`StreamAggregateTable`]: one batch, queried when run.
struct AggregateScan {
    table: StreamAggregateTable,
    projection: Option<Vec<usize>>,
    schema: SchemaRef,
}

impl std::fmt::Debug for AggregateScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.table.fmt(f)
    }
}

impl PartitionStream for AggregateScan {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let (table, projection) = (self.table.clone(), self.projection.clone());
        let mut done = false;
        let batches = batches(move || {
            if std::mem::replace(&mut done, true) {
                return Ok(None);
            }
            let batch = table.batch()?;
            Ok(Some(match &projection {
                Some(p) => batch.project(p)?,
                None => batch,
            }))
        });
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), futures::stream::iter(batches)))
    }
}
