//! The execution-plan pieces every table kind's provider shares: which
//! columns a scan builds, a scan as a one-partition streaming plan, batches
//! from a fallible producer, and an `INSERT` plan over a [`PointSink`].

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::error::Result;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::ExecutionPlan;

use crate::insert::PointSink;

/// The table columns a scan builds: the projection, or all of them.
pub fn scan_columns(projection: Option<&Vec<usize>>, schema: &SchemaRef) -> Vec<usize> {
    match projection {
        Some(p) => p.clone(),
        None => (0..schema.fields().len()).collect(),
    }
}

/// A scan as DataFusion's streaming plan: one partition, stopped at `limit`.
pub fn scan_plan(
    scan: impl PartitionStream + 'static,
    limit: Option<usize>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let schema = scan.schema().clone();
    Ok(Arc::new(StreamingTableExec::try_new(schema, vec![Arc::new(scan)], None, [], false, limit)?))
}

/// The plan of an `INSERT` of `input`'s rows into `sink`'s table.
pub fn insert_plan(input: Arc<dyn ExecutionPlan>, sink: PointSink) -> Arc<dyn ExecutionPlan> {
    Arc::new(DataSinkExec::new(input, Arc::new(sink), None))
}

/// The batches `next` produces until it answers `None` or fails (the error
/// is the last item).
pub fn batches(
    mut next: impl FnMut() -> Result<Option<RecordBatch>>,
) -> impl Iterator<Item = Result<RecordBatch>> {
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let item = next().transpose();
        done = !matches!(item, Some(Ok(_)));
        item
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::RecordBatchOptions;
    use datafusion::error::DataFusionError;

    #[test]
    fn batches_end_at_none_or_after_the_first_error() {
        let schema = Arc::new(datafusion::arrow::datatypes::Schema::empty());
        let one = RecordBatch::try_new_with_options(
            schema,
            vec![],
            &RecordBatchOptions::new().with_row_count(Some(1)),
        )
        .unwrap();
        let mut calls = 0;
        let got: Vec<bool> = batches(|| {
            calls += 1;
            match calls {
                1 => Ok(Some(one.clone())),
                2 => Err(DataFusionError::Internal("boom".into())),
                _ => Ok(Some(one.clone())),
            }
        })
        .map(|b| b.is_ok())
        .collect();
        assert_eq!(got, [true, false]);
    }
}
