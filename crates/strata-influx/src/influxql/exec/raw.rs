//! Raw SELECT output: one output row per (tag set, timestamp) with the
//! selected fields (null where a field has no value at that time) and tag
//! columns. Rows whose selected fields are all null are left out, as
//! InfluxDB does; ORDER BY, OFFSET and LIMIT apply per output series.

use serde_json::Value;

use super::plan::{ColumnSource, SelectPlan};
use super::row::Row;
use crate::influxql::response::{cell_json, limit_rows, Epoch};

pub fn raw_rows(
    plan: &SelectPlan,
    columns: &[ColumnSource],
    rows: &[Row<'_>],
    epoch: Epoch,
) -> Vec<Vec<Value>> {
    let mut out: Vec<Vec<Value>> = rows.iter().filter_map(|row| raw_row(columns, row, epoch)).collect();
    if plan.order_desc {
        out.reverse();
    }
    limit_rows(out, plan.limit, plan.offset)
}

/// One output row of `row`: its time then `columns`; `None` when every
/// selected field is null there (the row is left out).
pub fn raw_row(columns: &[ColumnSource], row: &Row<'_>, epoch: Epoch) -> Option<Vec<Value>> {
    let has_field_value =
        columns.iter().any(|c| matches!(c, ColumnSource::Field(slot) if row.values[*slot].is_some()));
    if !has_field_value {
        return None;
    }
    let mut cells = Vec::with_capacity(columns.len() + 1);
    cells.push(epoch.time(row.time_ns));
    for column in columns {
        cells.push(match column {
            ColumnSource::Field(slot) => cell_json(row.values[*slot].as_ref()),
            ColumnSource::Tag(key) => match row.tags.binary_search_by(|(k, _)| k.as_str().cmp(key)) {
                Ok(i) => Value::String(row.tags[i].1.clone()),
                Err(_) => Value::Null,
            },
            ColumnSource::Missing => Value::Null,
        });
    }
    Some(cells)
}
