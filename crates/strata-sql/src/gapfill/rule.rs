//! The analyzer rule that plans gap filling: an aggregate grouped by
//! `date_bin_gapfill(stride, time [, origin])` becomes one grouped by
//! `date_bin(...)` under a [`GapFill`] node; `locf(a)` and `interpolate(a)`
//! in the projection over it become `a` and set how `a`'s column fills.
//!
//! It is an analyzer rule, so it runs before the optimizer: the optimizer
//! then sees the filled columns as nullable (it would otherwise simplify
//! `coalesce(count(x), 0)` to `count(x)`). The buckets are fixed later, at
//! physical planning, from the optimized filters below the node
//! ([`GapFill::buckets`]): by then `now() - INTERVAL '1 hour'` is a
//! timestamp and the time filters may sit in the table scan itself.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::plan_err;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::Result;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Aggregate, Expr, Extension, LogicalPlan, Projection};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::optimizer::AnalyzerRule;

use super::node::{Fills, GapFill, GapFillParams};
use super::udfs::{DateBinGapfill, FillFunction, FillMarker};
use crate::filters::{column_name, TIME_COLUMN};
use crate::literals::{stride_ns, timestamp_ns};

/// See the module comment.
#[derive(Debug, Default)]
pub struct GapFillRule;

impl AnalyzerRule for GapFillRule {
    fn name(&self) -> &str {
        "strata_gap_fill"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        Ok(plan.transform_down_with_subqueries(rewrite)?.data)
    }
}

fn rewrite(plan: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    match &plan {
        LogicalPlan::Projection(p) => match p.input.as_ref() {
            LogicalPlan::Aggregate(a) if gapfill_position(a)?.is_some() => {
                let (expr, fills) = unmark_fills(&p.expr, a)?;
                let gapfill = gapfill(a, fills)?;
                Ok(Transformed::yes(LogicalPlan::Projection(Projection::try_new(expr, Arc::new(gapfill))?)))
            }
            _ => Ok(Transformed::no(plan)),
        },
        LogicalPlan::Aggregate(a) if gapfill_position(a)?.is_some() => {
            Ok(Transformed::yes(gapfill(a, Vec::new())?))
        }
        _ => Ok(Transformed::no(plan)),
    }
}

fn as_gapfill(expr: &Expr) -> Option<&ScalarFunction> {
    match expr {
        Expr::ScalarFunction(f) if f.func.inner().is::<DateBinGapfill>() => Some(f),
        Expr::Alias(a) => as_gapfill(&a.expr),
        _ => None,
    }
}

fn as_fill(expr: &Expr) -> Option<(FillMarker, &Expr)> {
    match expr {
        Expr::ScalarFunction(f) => {
            let marker = f.func.inner().downcast_ref::<FillFunction>()?.marker();
            Some((marker, f.args.first()?))
        }
        _ => None,
    }
}

/// Which grouping expression is `date_bin_gapfill`, if one is.
fn gapfill_position(a: &Aggregate) -> Result<Option<usize>> {
    let nested =
        |e: &Expr| as_gapfill(e).is_none() && e.exists(|sub| Ok(as_gapfill(sub).is_some())).unwrap_or(false);
    if let Some(e) = a.group_expr.iter().find(|e| nested(e)) {
        return plan_err!(
            "GROUP BY date_bin_gapfill(...) itself, not an expression of it ({e}); cast or format it in SELECT"
        );
    }
    let mut found = a.group_expr.iter().enumerate().filter(|(_, e)| as_gapfill(e).is_some());
    match (found.next(), found.next()) {
        (Some(_), Some(_)) => plan_err!("a query groups by one date_bin_gapfill(), not more"),
        (first, None) => Ok(first.map(|(i, _)| i)),
        (None, Some(_)) => unreachable!("a second match follows a first"),
    }
}

/// `expr` without its `locf`/`interpolate` marks, and how each marked
/// column of the aggregate fills.
fn unmark_fills(expr: &[Expr], a: &Aggregate) -> Result<(Vec<Expr>, Fills)> {
    let mut fills = Vec::new();
    let mut out = Vec::with_capacity(expr.len());
    for e in expr {
        let name = e.schema_name().to_string();
        let unmarked = e.clone().transform_up(|sub| {
            let Some((marker, arg)) = as_fill(&sub) else { return Ok(Transformed::no(sub)) };
            let column = match arg {
                Expr::Column(c) => a.schema.index_of_column(c).ok().map(|i| (i, c.clone())),
                _ => None,
            };
            let Some((index, column)) = column.filter(|(i, _)| *i >= a.group_expr.len()) else {
                return plan_err!(
                    "{}() takes an aggregate of the query, as in {}(max(x)), not {arg}",
                    marker.name(),
                    marker.name()
                );
            };
            fills.push((index, marker));
            Ok(Transformed::yes(Expr::Column(column)))
        })?;
        out.push(if unmarked.transformed { unmarked.data.alias_if_changed(name)? } else { unmarked.data });
    }
    // A column fills one way: DataFusion computes `max(x)` once however
    // often the query names it, so `max(x)` beside `locf(max(x))` would be
    // filled too.
    let plain = plain_columns(expr, a);
    for (i, (index, marker)) in fills.iter().enumerate() {
        let other = fills[..i].iter().find(|(j, m)| j == index && m != marker).map(|(_, m)| m.name());
        if other.is_some() || plain.contains(index) {
            return plan_err!(
                "{} is filled one way per query: {}() here, {} elsewhere in the same SELECT",
                a.schema.field(*index).name(),
                marker.name(),
                other.map_or("no fill".to_string(), |m| format!("{m}()"))
            );
        }
    }
    Ok((out, fills))
}

/// The aggregate's columns `expr` reads outside `locf`/`interpolate`.
fn plain_columns(expr: &[Expr], a: &Aggregate) -> Vec<usize> {
    let mut out = Vec::new();
    for e in expr {
        let _ = e.apply(|sub| {
            if as_fill(sub).is_some() {
                return Ok(TreeNodeRecursion::Jump);
            }
            if let Expr::Column(c) = sub {
                out.extend(a.schema.index_of_column(c).ok());
            }
            Ok(TreeNodeRecursion::Continue)
        });
    }
    out
}

/// The aggregate grouped by `date_bin` under a gap-filling node.
fn gapfill(a: &Aggregate, fills: Fills) -> Result<LogicalPlan> {
    let Some(position) = gapfill_position(a)? else { unreachable!("called on a gap-filled aggregate") };
    let call = as_gapfill(&a.group_expr[position]).expect("found above");
    let (stride, time, origin) = match call.args.as_slice() {
        [stride, time] => (stride, time, None),
        [stride, time, origin] => (stride, time, Some(origin)),
        _ => return plan_err!("date_bin_gapfill(stride, time [, origin]) takes two or three arguments"),
    };
    if column_name(time) != Some(TIME_COLUMN) {
        return plan_err!("date_bin_gapfill() bins the table's {TIME_COLUMN} column, not {time}");
    }
    // Constants as literals (the optimizer has not folded them yet).
    let simplifier = ExprSimplifier::new(SimplifyContext::default());
    let stride_ns = match stride_ns(&simplifier.simplify(stride.clone())?) {
        Some(ns) if ns > 0 => ns,
        _ => {
            return plan_err!(
            "date_bin_gapfill() needs a positive fixed interval (days, hours, ... not months), not {stride}"
        )
        }
    };
    let origin_ns = match origin {
        None => 0,
        Some(o) => match timestamp_ns(&simplifier.simplify(o.clone())?) {
            Some(ns) => ns,
            None => return plan_err!("date_bin_gapfill()'s origin must be a constant timestamp, not {o}"),
        },
    };
    let date_bin = datafusion::functions::datetime::date_bin();
    let mut group_expr = a.group_expr.clone();
    let name = group_expr[position].schema_name().to_string();
    group_expr[position] =
        Expr::ScalarFunction(ScalarFunction::new_udf(date_bin, call.args.clone())).alias(name);
    let aggregate = Aggregate::try_new(a.input.clone(), group_expr, a.aggr_expr.clone())?;
    if aggregate.schema.field_names() != a.schema.field_names() {
        return plan_err!("gap filling changed the aggregate's columns");
    }
    let groups = (0..a.group_expr.len()).filter(|i| *i != position).collect();
    let params = GapFillParams { time: position, groups, fills, stride_ns, origin_ns };
    let node = GapFill::try_new(LogicalPlan::Aggregate(aggregate), params)?;
    Ok(LogicalPlan::Extension(Extension { node: Arc::new(node) }))
}
