//! An event stream as a SQL table (issue 19, "Table providers: Event
//! streams"): columns `time` and one per attribute, typed as InfluxQL shows
//! them (integers `bigint`, floats `double`, `boolean`, strings `text`).
//! A scan reads the stream in time order in chunks of [`CHUNK_EVENTS`]
//! (each chunk one snapshot of the TAB+-tree), so a long stream streams with
//! flat memory; the time range is answered by the tree's index.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, TimestampNanosecondArray};
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::ExecutionPlan;
use strata_engine::tables::streams::{EventQuery, EventRows, EventSelect, StreamAttr, StreamError};
use strata_engine::Tables;
use strata_series::TimeRange;

use crate::arrays::values_array;
use crate::error::{df_err, SqlError};
use crate::filters::{pushdown, PushedFilters, TIME_COLUMN};
use crate::insert::{ColumnRole, PointSink};
use crate::plan::{batches, insert_plan, scan_columns, scan_plan};
use crate::series_table::{field_data_type, time_type};

/// Events one chunk of a scan reads.
pub const CHUNK_EVENTS: u64 = 8192;

/// A stream of a database as a DataFusion table.
pub struct StreamTable {
    pub(crate) tables: Arc<dyn Tables>,
    pub(crate) db: String,
    pub(crate) name: String,
    pub(crate) attrs: Vec<StreamAttr>,
    schema: SchemaRef,
}

impl std::fmt::Debug for StreamTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StreamTable({}.{})", self.db, self.name)
    }
}

impl StreamTable {
    /// The table of stream `name`, with its schema.
    pub fn open(tables: Arc<dyn Tables>, db: &str, name: &str) -> Result<StreamTable> {
        let streams = tables.stream_tables().ok_or_else(|| not_found(db, name))?;
        let attrs = streams.stream_schema(db, name).ok_or_else(|| not_found(db, name))?;
        let mut columns = vec![Field::new(TIME_COLUMN, time_type(), false)];
        columns.extend(attrs.iter().map(|a| Field::new(&a.name, field_data_type(a.ty.field_type()), true)));
        let schema = Arc::new(Schema::new(columns));
        Ok(StreamTable { tables, db: db.to_string(), name: name.to_string(), attrs, schema })
    }
}

pub(crate) fn not_found(db: &str, name: &str) -> datafusion::error::DataFusionError {
    df_err(SqlError::Stream(StreamError::NotFound(format!(
        "stream \"{name}\" not found in database \"{db}\""
    ))))
}

#[async_trait]
impl TableProvider for StreamTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> Result<Vec<TableProviderFilterPushDown>> {
        // Only the time range: attribute filters are DataFusion's.
        Ok(pushdown(filters, &[]))
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let columns = scan_columns(projection, &self.schema);
        let scan = StreamScan {
            tables: self.tables.clone(),
            db: self.db.clone(),
            name: self.name.clone(),
            attrs: self.attrs.clone(),
            schema: Arc::new(self.schema.project(&columns)?),
            columns,
            range: PushedFilters::from_exprs(filters, &[]).range,
        };
        scan_plan(scan, limit)
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        _op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let mut roles = vec![ColumnRole::Time];
        roles.extend(self.attrs.iter().map(|a| ColumnRole::Field(a.name.clone())));
        let sink = PointSink::new(self.tables.clone(), &self.db, &self.name, self.schema.clone(), roles);
        Ok(insert_plan(input, sink))
    }
}

/// The scan of one stream: projected columns and the time range.
struct StreamScan {
    tables: Arc<dyn Tables>,
    db: String,
    name: String,
    attrs: Vec<StreamAttr>,
    /// Indices into the table's schema (0 is `time`).
    columns: Vec<usize>,
    schema: SchemaRef,
    range: TimeRange,
}

impl std::fmt::Debug for StreamScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StreamScan({}.{}, {:?})", self.db, self.name, self.range)
    }
}

impl PartitionStream for StreamScan {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let mut chunks = StreamChunks {
            scan: StreamScan {
                tables: self.tables.clone(),
                db: self.db.clone(),
                name: self.name.clone(),
                attrs: self.attrs.clone(),
                columns: self.columns.clone(),
                schema: self.schema.clone(),
                range: self.range,
            },
            next_ns: self.range.min_ns,
            skip: 0,
            done: self.range.is_empty(),
        };
        let batches = batches(move || chunks.next_batch());
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), futures::stream::iter(batches)))
    }
}

/// Chunks of a stream in time order. A chunk ends at some timestamp `t`;
/// the next starts at `t` again and skips the events at `t` already sent
/// (events of one timestamp come in arrival order, so they are the first).
struct StreamChunks {
    scan: StreamScan,
    next_ns: i64,
    skip: u64,
    done: bool,
}

impl StreamChunks {
    fn chunk(&mut self) -> Result<Option<RecordBatch>> {
        let scan = &self.scan;
        let attrs: Vec<String> =
            scan.columns.iter().filter(|c| **c > 0).map(|c| scan.attrs[c - 1].name.clone()).collect();
        let want = CHUNK_EVENTS + self.skip;
        let select = EventSelect {
            range: TimeRange { min_ns: self.next_ns, max_ns: scan.range.max_ns },
            filters: Vec::new(),
            query: EventQuery::Raw { attrs, limit: Some(want), newest: false },
        };
        let streams = scan.tables.stream_tables().ok_or_else(|| not_found(&scan.db, &scan.name))?;
        let EventRows::Raw(rows) = streams.select_events(&scan.db, &scan.name, &select).map_err(df_err)?
        else {
            unreachable!("a raw select answers raw rows")
        };
        let skipped = (self.skip as usize).min(rows.len());
        match rows.last() {
            Some((last, _)) if rows.len() as u64 == want => {
                self.skip = rows.iter().rev().take_while(|(t, _)| t == last).count() as u64;
                self.next_ns = *last;
            }
            _ => self.done = true,
        }
        let rows = &rows[skipped..];
        if rows.is_empty() {
            return Ok(None);
        }
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(scan.columns.len());
        let mut value_index = 0;
        for &c in &scan.columns {
            if c == 0 {
                let times: Vec<i64> = rows.iter().map(|(t, _)| *t).collect();
                arrays.push(Arc::new(TimestampNanosecondArray::from(times).with_timezone("UTC")));
            } else {
                let attr = &scan.attrs[c - 1];
                let values = rows.iter().map(|(_, v)| Some(&v[value_index]));
                arrays.push(values_array(&attr.name, attr.ty.field_type(), values)?);
                value_index += 1;
            }
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows.len()));
        Ok(Some(RecordBatch::try_new_with_options(scan.schema.clone(), arrays, &options)?))
    }
}

impl StreamChunks {
    /// The next non-empty chunk, `None` at the end.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        while !self.done {
            if let Some(batch) = self.chunk()? {
                return Ok(Some(batch));
            }
        }
        Ok(None)
    }
}
