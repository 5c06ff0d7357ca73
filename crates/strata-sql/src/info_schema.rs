//! `information_schema` with PostgreSQL's type names (issue 19, "the
//! catalog queries Grafana and DBeaver send"). DataFusion's own
//! `information_schema.columns` names Arrow types (`Float64`,
//! `Timestamp(ns, "UTC")`), which Grafana's query builder does not know; this
//! schema is DataFusion's (`InformationSchemaProvider`) with the `columns`
//! table's `data_type` in PostgreSQL's spelling (`double precision`,
//! `timestamp with time zone`). Sessions register it on every database
//! instead of turning DataFusion's on.

use std::str::FromStr;
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::catalog::information_schema::InformationSchemaProvider;
use datafusion::catalog::{CatalogProviderList, SchemaProvider, Session, TableProvider};
use datafusion::common::{plan_err, DataFusionError};
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::ExecutionPlan;
use futures::StreamExt;

use crate::catalog::DatabaseList;
use crate::plan::scan_plan;

/// The schema's name.
pub const INFORMATION_SCHEMA: &str = "information_schema";

/// See the module comment. Holds the catalog list weakly: the list holds
/// the databases, which hold this schema.
#[derive(Debug)]
pub struct PgInformationSchema {
    databases: Weak<DatabaseList>,
}

impl PgInformationSchema {
    pub fn new(databases: &Arc<DatabaseList>) -> PgInformationSchema {
        PgInformationSchema { databases: Arc::downgrade(databases) }
    }

    fn inner(&self) -> Result<InformationSchemaProvider> {
        match self.databases.upgrade() {
            Some(list) => Ok(InformationSchemaProvider::new(list as Arc<dyn CatalogProviderList>)),
            None => plan_err!("the server's catalog is gone"),
        }
    }
}

#[async_trait]
impl SchemaProvider for PgInformationSchema {
    fn table_names(&self) -> Vec<String> {
        self.inner().map(|i| i.table_names()).unwrap_or_default()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let Some(table) = self.inner()?.table(name).await? else { return Ok(None) };
        if name.eq_ignore_ascii_case("columns") {
            return Ok(Some(Arc::new(PgTypedColumns { inner: table })));
        }
        Ok(Some(table))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.inner().is_ok_and(|i| i.table_exist(name))
    }
}

/// `information_schema.columns` with `data_type` renamed.
#[derive(Debug)]
struct PgTypedColumns {
    inner: Arc<dyn TableProvider>,
}

#[async_trait]
impl TableProvider for PgTypedColumns {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = self.inner.schema();
        let stream = Renamed {
            inner: self.inner.scan(state, None, &[], None).await?,
            data_type: schema.index_of("data_type")?,
            projection: projection.cloned(),
            schema: match projection {
                Some(p) => Arc::new(schema.project(p)?),
                None => schema,
            },
        };
        scan_plan(stream, limit)
    }
}

/// The inner table's rows, `data_type` renamed, then projected.
#[derive(Debug)]
struct Renamed {
    inner: Arc<dyn ExecutionPlan>,
    data_type: usize,
    projection: Option<Vec<usize>>,
    schema: SchemaRef,
}

impl PartitionStream for Renamed {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let (column, projection) = (self.data_type, self.projection.clone());
        let batches = match self.inner.execute(0, ctx) {
            Ok(stream) => stream
                .map(move |batch| {
                    let batch = batch?;
                    let mut columns = batch.columns().to_vec();
                    columns[column] = pg_type_names(&columns[column]);
                    let renamed = RecordBatch::try_new(batch.schema(), columns)?;
                    Ok::<_, DataFusionError>(match &projection {
                        Some(p) => renamed.project(p)?,
                        None => renamed,
                    })
                })
                .boxed(),
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
        };
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), batches))
    }
}

fn pg_type_names(arrow_names: &ArrayRef) -> ArrayRef {
    let names = arrow_names.as_string::<i32>();
    Arc::new(
        (0..names.len())
            .map(|i| names.is_valid(i).then(|| pg_type_name(names.value(i))))
            .collect::<StringArray>(),
    )
}

/// PostgreSQL's name (as its `information_schema.columns.data_type` spells
/// it) for an Arrow type's name; a type with no counterpart keeps its name.
pub fn pg_type_name(arrow: &str) -> String {
    fn of(t: &DataType) -> Option<&'static str> {
        Some(match t {
            DataType::Boolean => "boolean",
            DataType::Int8 | DataType::Int16 | DataType::UInt8 => "smallint",
            DataType::Int32 | DataType::UInt16 => "integer",
            DataType::Int64 | DataType::UInt32 => "bigint",
            DataType::UInt64 | DataType::Decimal128(..) | DataType::Decimal256(..) => "numeric",
            DataType::Float16 | DataType::Float32 => "real",
            DataType::Float64 => "double precision",
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "text",
            DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_) => "bytea",
            DataType::Timestamp(_, Some(_)) => "timestamp with time zone",
            DataType::Timestamp(_, None) => "timestamp without time zone",
            DataType::Date32 | DataType::Date64 => "date",
            DataType::Time32(_) | DataType::Time64(_) => "time without time zone",
            DataType::Interval(_) | DataType::Duration(_) => "interval",
            DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => "ARRAY",
            DataType::Dictionary(_, values) => return of(values),
            _ => return None,
        })
    }
    DataType::from_str(arrow).ok().as_ref().and_then(of).map_or_else(|| arrow.to_string(), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrow_type_names_become_postgres_names() {
        let cases = [
            ("Float64", "double precision"),
            ("Int64", "bigint"),
            ("UInt64", "numeric"),
            ("Boolean", "boolean"),
            ("Utf8", "text"),
            ("Dictionary(Int32, Utf8)", "text"),
            (
                &DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Nanosecond, Some("UTC".into()))
                    .to_string(),
                "timestamp with time zone",
            ),
            (
                &DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Microsecond, None).to_string(),
                "timestamp without time zone",
            ),
            ("Date32", "date"),
            ("Null", "Null"),
        ];
        for (arrow, pg) in cases {
            assert_eq!(pg_type_name(arrow), pg, "{arrow}");
        }
    }
}
