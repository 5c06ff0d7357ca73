//! The selectors `top(field[, tag...], N)` and `bottom(field[, tag...], N)`
//! (InfluxDB 1.8): the N largest (smallest) values of each group, per
//! GROUP BY time window when there is one, each row stamped with its own
//! point's time (also under GROUP BY time) and the rows of a window in
//! time order. Ties go to the earlier point. With tag keys, only the best
//! point of each distinct combination of their values competes, and the
//! tag values are extra columns. Windows without points report nothing
//! (fill does not apply). Checked against Debian's InfluxDB 1.6.7.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::Value;
use strata_series::FieldValue;

use super::aggregate::order;
use super::error::StatementError;
use super::plan::{AggColumn, AggFunc, SelectPlan};
use super::row::Row;
use crate::influxql::ast::Expr;
use crate::influxql::response::{cell_json, limit_rows, Epoch};

/// A parsed `top`/`bottom` call.
pub struct TopCall<'a> {
    /// [`AggFunc::Top`] with its N.
    pub func: AggFunc,
    /// The field argument.
    pub field: &'a Expr,
    /// The tag keys between the field and N.
    pub tags: Vec<String>,
}

/// A `top`/`bottom` call's parts; `None` when `name` is neither.
pub fn parse_top_call<'a>(name: &str, args: &'a [Expr]) -> Result<Option<TopCall<'a>>, StatementError> {
    let bottom = match name {
        "top" => false,
        "bottom" => true,
        _ => return Ok(None),
    };
    if args.len() < 2 {
        return Err(StatementError::ArgumentCount { func: name.to_string(), expected: 2, got: args.len() });
    }
    let n = match &args[args.len() - 1] {
        Expr::Integer(n) if *n >= 1 => *n as u64,
        Expr::Integer(n) => {
            return Err(StatementError::BadArgument(format!(
                "limit ({n}) in {name} function must be at least 1"
            )))
        }
        other => {
            return Err(StatementError::BadArgument(format!(
                "expected integer as last argument in {name}(), found {other}"
            )))
        }
    };
    let mut tags = Vec::new();
    for arg in &args[1..args.len() - 1] {
        match arg {
            Expr::VarRef { name: tag, .. } => tags.push(tag.clone()),
            other => {
                return Err(StatementError::BadArgument(format!(
                    "only fields or tags are allowed in {name}(), found {other}"
                )))
            }
        }
    }
    Ok(Some(TopCall { func: AggFunc::Top { n, bottom }, field: &args[0], tags }))
}

/// Whether `a` ranks before `b` for `top` (larger first) or `bottom`
/// (smaller first), ties to the earlier point.
fn ranks_before(bottom: bool, a: &(i64, FieldValue), b: &(i64, FieldValue)) -> Ordering {
    let by_value = if bottom { order(&a.1, &b.1) } else { order(&b.1, &a.1) };
    by_value.then(a.0.cmp(&b.0))
}

/// One chosen point: its time, value and the values of the tag keys.
type Chosen<'r> = (i64, FieldValue, Vec<&'r str>);

/// The N best points of `rows` (one window or the whole group), in time order.
fn choose<'r>(column: &AggColumn, tags: &[String], rows: &[&'r Row<'_>]) -> Vec<Chosen<'r>> {
    let (AggFunc::Top { n, bottom }, Some(slot)) = (column.func, column.slot) else {
        return Vec::new();
    };
    let mut candidates: Vec<Chosen<'r>> = Vec::new();
    let mut best_of_tags: BTreeMap<Vec<&'r str>, usize> = BTreeMap::new();
    for row in rows {
        let Some(value) = &row.values[slot] else { continue };
        let tag_values: Vec<&'r str> =
            tags.iter().map(|k| super::condition::tag_value(row.tags, k)).collect();
        let point = (row.time_ns, value.clone(), tag_values.clone());
        if tags.is_empty() {
            candidates.push(point);
            continue;
        }
        match best_of_tags.get(&tag_values) {
            None => {
                best_of_tags.insert(tag_values, candidates.len());
                candidates.push(point);
            }
            Some(&i) => {
                let held = (candidates[i].0, candidates[i].1.clone());
                if ranks_before(bottom, &(point.0, point.1.clone()), &held) == Ordering::Less {
                    candidates[i] = point;
                }
            }
        }
    }
    candidates.sort_by(|a, b| ranks_before(bottom, &(a.0, a.1.clone()), &(b.0, b.1.clone())));
    candidates.truncate(usize::try_from(n).unwrap_or(usize::MAX));
    candidates.sort_by_key(|c| c.0);
    candidates
}

/// Output rows of one group for a lone `top`/`bottom` column: time, value,
/// then one column per tag key of the call.
pub fn top_rows(plan: &SelectPlan, column: &AggColumn, rows: &[Row<'_>], epoch: Epoch) -> Vec<Vec<Value>> {
    let mut windows: BTreeMap<i128, Vec<&Row<'_>>> = BTreeMap::new();
    for row in rows {
        let start = plan.window.map_or(0, |w| w.start(row.time_ns));
        windows.entry(start).or_default().push(row);
    }
    let mut out = Vec::new();
    for window_rows in windows.values() {
        for (time_ns, value, tag_values) in choose(column, &plan.selector_tags, window_rows) {
            let mut cells = vec![epoch.time(time_ns), cell_json(Some(&value))];
            cells.extend(tag_values.into_iter().map(|v| Value::String(v.to_string())));
            out.push(cells);
        }
    }
    if plan.order_desc {
        out.reverse();
    }
    limit_rows(out, plan.limit, plan.offset)
}
