//! `INSERT INTO` (issue 19, "Writes over SQL"): the rows of one statement
//! become the points of one write request through the table catalog, the
//! same path line protocol takes, so they go through the configured commit
//! protocol and the statement returns once they are durable. The statement
//! is one transaction: its rows are gathered before the write.
//!
//! A NULL (or omitted) `time` is the server's clock at the write, as for a
//! line without a timestamp; NULL tags and fields are absent; a row with no
//! field is refused, as line protocol refuses it.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{
    Array, AsArray, BooleanArray, Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampNanosecondArray, UInt64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::datasource::sink::DataSink;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType};
use futures::StreamExt;
use strata_engine::Tables;
use strata_series::{FieldValue, Point};

use crate::error::{df_err, SqlError};

/// What a table column is to a point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnRole {
    Time,
    /// A tag with this key.
    Tag(String),
    /// A field (an event stream's attribute) with this key.
    Field(String),
}

/// Writes the rows of an `INSERT` as points of one measurement or stream.
pub struct PointSink {
    tables: Arc<dyn Tables>,
    db: String,
    measurement: String,
    schema: SchemaRef,
    roles: Vec<ColumnRole>,
}

impl std::fmt::Debug for PointSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PointSink({}.{})", self.db, self.measurement)
    }
}

impl DisplayAs for PointSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StrataInsert: {}.{}", self.db, self.measurement)
    }
}

impl PointSink {
    /// `roles` says what each column of `schema` is.
    pub fn new(
        tables: Arc<dyn Tables>,
        db: &str,
        measurement: &str,
        schema: SchemaRef,
        roles: Vec<ColumnRole>,
    ) -> PointSink {
        assert_eq!(schema.fields().len(), roles.len(), "one role per column");
        PointSink { tables, db: db.to_string(), measurement: measurement.to_string(), schema, roles }
    }

    /// The points of one batch, appended to `out`.
    fn points(&self, batch: &RecordBatch, now_ns: i64, out: &mut Vec<Point>) -> Result<()> {
        let columns: Vec<Column> =
            batch.columns().iter().map(|c| Column::of(c.as_ref())).collect::<Result<_>>()?;
        for row in 0..batch.num_rows() {
            let mut point = Point {
                measurement: self.measurement.clone(),
                tags: Vec::new(),
                fields: Vec::new(),
                timestamp_ns: now_ns,
            };
            for (role, column) in self.roles.iter().zip(&columns) {
                let Some(value) = column.value(row) else { continue };
                match (role, value) {
                    (ColumnRole::Time, FieldValue::Integer(t)) => point.timestamp_ns = t,
                    (ColumnRole::Tag(k), FieldValue::String(v)) => point.tags.push((k.clone(), v)),
                    (ColumnRole::Field(k), v) => point.fields.push((k.clone(), v)),
                    (role, v) => {
                        return Err(df_err(SqlError::Unfit(format!(
                            "row {}: {role:?} cannot hold {v:?}",
                            out.len() + 1
                        ))))
                    }
                }
            }
            if point.fields.is_empty() {
                return Err(df_err(SqlError::Unfit(format!(
                    "row {} of the INSERT into \"{}\" has no field value (every row needs at least one non-NULL field)",
                    out.len() + 1,
                    self.measurement
                ))));
            }
            out.push(point);
        }
        Ok(())
    }
}

/// One input column, read as engine values.
enum Column {
    Time(TimestampNanosecondArray),
    String(StringArray),
    Float(Float64Array),
    Float32(Float32Array),
    Integer(Int64Array),
    Integer32(Int32Array),
    Unsigned(UInt64Array),
    Boolean(BooleanArray),
}

impl Column {
    fn of(array: &dyn Array) -> Result<Column> {
        Ok(match array.data_type() {
            DataType::Timestamp(_, _) => {
                let ns = cast(
                    array,
                    &DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Nanosecond, None),
                )?;
                Column::Time(ns.as_primitive().clone())
            }
            DataType::Float64 => Column::Float(array.as_primitive().clone()),
            DataType::Float32 => Column::Float32(array.as_primitive().clone()),
            DataType::Int64 => Column::Integer(array.as_primitive().clone()),
            DataType::Int32 => Column::Integer32(array.as_primitive().clone()),
            DataType::UInt64 => Column::Unsigned(array.as_primitive().clone()),
            DataType::Boolean => Column::Boolean(array.as_boolean().clone()),
            _ => Column::String(cast(array, &DataType::Utf8)?.as_string::<i32>().clone()),
        })
    }

    fn value(&self, row: usize) -> Option<FieldValue> {
        macro_rules! at {
            ($a:expr, $f:expr) => {
                $a.is_valid(row).then(|| $f($a.value(row)))
            };
        }
        match self {
            Column::Time(a) => at!(a, FieldValue::Integer),
            Column::String(a) => at!(a, |v: &str| FieldValue::String(v.to_string())),
            Column::Float(a) => at!(a, FieldValue::Float),
            Column::Float32(a) => at!(a, |v: f32| FieldValue::Float(f64::from(v))),
            Column::Integer(a) => at!(a, FieldValue::Integer),
            Column::Integer32(a) => at!(a, |v: i32| FieldValue::Integer(i64::from(v))),
            Column::Unsigned(a) => at!(a, FieldValue::Unsigned),
            Column::Boolean(a) => at!(a, FieldValue::Boolean),
        }
    }
}

#[async_trait]
impl DataSink for PointSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let now_ns = now_ns();
        let mut points = Vec::new();
        while let Some(batch) = data.next().await {
            self.points(&batch?, now_ns, &mut points)?;
        }
        if points.is_empty() {
            return Ok(0);
        }
        let outcome = self.tables.write_request(&self.db, &points).map_err(df_err)?;
        if let Some((i, why)) = outcome.rejected.first() {
            return Err(df_err(SqlError::Rejected(format!(
                "{} of {} rows were rejected ({} written and durable); row {}: {why}",
                outcome.rejected.len(),
                points.len(),
                outcome.points_written,
                i + 1
            ))));
        }
        Ok(outcome.points_written as u64)
    }
}

fn now_ns() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
}
