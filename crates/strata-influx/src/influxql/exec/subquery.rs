//! Subqueries (`SELECT mean(max) FROM (SELECT max(usage) FROM cpu GROUP
//! BY time(1m), host) GROUP BY time(5m)`, InfluxDB 1.8): the inner
//! statement runs first; each of its output series becomes a series of an
//! in-memory store (the measurement's name, the GROUP BY tags as tags, each
//! non-null column a field, at the row's time), and the outer statement
//! runs over that store. A subquery is the only source of its statement.

use serde_json::Value;
use strata_engine::Tables;
use strata_series::reference::MemStore;
use strata_series::{FieldValue, Point, SeriesStore};

use super::condition::split_time;
use super::error::StatementError;
use super::sources::run_select_sources;
use crate::influxql::ast::{BinaryOp, Dimension, Expr, MeasurementRef, SelectStatement};
use crate::influxql::response::{Epoch, SeriesOut};
use crate::influxql::QueryParams;

/// The in-memory database the inner rows are written to.
const SUBQUERY_DB: &str = "subquery";

fn field_value(cell: &Value) -> Option<FieldValue> {
    Some(match cell {
        Value::Bool(b) => FieldValue::Boolean(*b),
        Value::String(s) => FieldValue::String(s.clone()),
        Value::Number(n) if n.is_i64() => FieldValue::Integer(n.as_i64()?),
        Value::Number(n) if n.is_u64() => FieldValue::Unsigned(n.as_u64()?),
        Value::Number(n) => FieldValue::Float(n.as_f64()?),
        _ => return None,
    })
}

/// The points of the inner statement's output (times in nanoseconds).
pub(crate) fn points_of(series: &[SeriesOut]) -> Vec<Point> {
    let mut points = Vec::new();
    for s in series {
        let tags: Vec<(String, String)> = s.tags.clone().unwrap_or_default().into_iter().collect();
        for row in &s.values {
            let Some(timestamp_ns) = row.first().and_then(Value::as_i64) else { continue };
            let fields: Vec<(String, FieldValue)> = s.columns[1..]
                .iter()
                .zip(&row[1..])
                .filter_map(|(name, cell)| Some((name.clone(), field_value(cell)?)))
                .collect();
            if !fields.is_empty() {
                points.push(Point {
                    measurement: s.name.clone().unwrap_or_default(),
                    tags: tags.clone(),
                    fields,
                    timestamp_ns,
                });
            }
        }
    }
    points
}

/// The inner statement as it runs: the outer time range added to its
/// WHERE (as InfluxDB does, so an unbounded inner GROUP BY time does not
/// run to the first point), and a raw inner statement without GROUP BY
/// tags grouped by every tag, so its points keep their tags (and two
/// series' points at one time stay apart).
fn narrowed(
    inner: &SelectStatement,
    outer: &SelectStatement,
    params: &QueryParams,
) -> Result<SelectStatement, StatementError> {
    let mut inner = inner.clone();
    if let Some(condition) = &outer.condition {
        let (_, bounds) = split_time(condition, params.now_ns)?;
        let clamp = |t: i128| Expr::Integer(t.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64);
        let mut add = |op: BinaryOp, t: i128| {
            let bound = Expr::binary(op, Expr::var("time"), clamp(t));
            inner.condition = Some(match inner.condition.take() {
                Some(c) => Expr::binary(BinaryOp::And, Expr::Paren(Box::new(c)), bound),
                None => bound,
            });
        };
        if let Some(min) = bounds.min_ns {
            add(BinaryOp::Gte, min);
        }
        if let Some(max) = bounds.max_ns {
            add(BinaryOp::Lte, max);
        }
    }
    let raw = !inner.fields.iter().any(|f| matches!(f.expr, Expr::Call { .. }));
    let by_tags = inner.dimensions.iter().any(|d| !matches!(d, Dimension::Time { .. }));
    if raw && !by_tags {
        inner.dimensions.push(Dimension::AllTags);
    }
    Ok(inner)
}

/// Runs `outer` over the rows of `inner`.
pub fn run_over_subquery(
    tables: &dyn Tables,
    inner: &SelectStatement,
    outer: &mut SelectStatement,
    params: &QueryParams,
    epoch: Epoch,
) -> Result<Vec<SeriesOut>, StatementError> {
    let inner = narrowed(inner, outer, params)?;
    let inner_series = run_select_sources(tables, &inner, params, Epoch::Integer { ns_per_unit: 1 })?;
    let store = MemStore::new();
    store.create_database(SUBQUERY_DB)?;
    let points = points_of(&inner_series);
    store.write(SUBQUERY_DB, &points)?;
    let mut names: Vec<String> = points.iter().map(|p| p.measurement.clone()).collect();
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for name in names {
        outer.from = MeasurementRef { database: Some(SUBQUERY_DB.to_string()), retention_policy: None, name };
        out.extend(run_select_sources(&store, outer, params, epoch)?);
    }
    Ok(out)
}
