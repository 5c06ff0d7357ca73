//! Aggregate SELECTs answered from the store's partial aggregates per
//! window (`SeriesStore::window_aggregates`: the engine answers a block
//! inside a window from its summary, without reading it) instead of from
//! every point: the decomposable functions (count, sum, mean, min, max,
//! first, last, spread) of numeric fields, grouped by time (UTC windows)
//! and/or tags, with a WHERE on time and tags only. Each series' partials
//! are merged into the group's accumulators ([`Acc`]), and the output is
//! made by the same code as for rows ([`aggregate_buckets`]).
//!
//! Everything else reads points (`super::select`): other functions,
//! transformations, a field in WHERE, `tz()` windows, and a lone selector
//! without GROUP BY time (its row carries the selected point's time, which
//! a partial's min or max does not know).
//!
//! The answers are the row path's, except that a float sum (and so a mean)
//! may differ in its last bits: partials add a block's sum at once, and the
//! series of a group one after the other, where rows add point by point in
//! time order.

use std::collections::BTreeMap;

use strata_series::{FieldType, PartialAggregate, SeriesStore, WindowSpec};

use super::aggregate::{add_value, fresh_accs, Acc, Buckets};
use super::condition::TagsOnly;
use super::error::StatementError;
use super::plan::{AggColumn, AggFunc, Projection, SelectPlan};
use super::select::group_key;

/// The windows to ask the store for when `plan` can be answered from
/// partial aggregates (`Some(None)`: no GROUP BY time), else None.
pub fn answerable(plan: &SelectPlan) -> Option<Option<WindowSpec>> {
    let Projection::Aggregate(columns) = &plan.projection else { return None };
    if super::select::newest_points_suffice(plan) {
        return None; // the newest points (the last-point cache) answer it
    }
    let decomposable = |c: &AggColumn| {
        matches!(
            c.func,
            AggFunc::Count
                | AggFunc::Sum
                | AggFunc::Mean
                | AggFunc::Min
                | AggFunc::Max
                | AggFunc::First
                | AggFunc::Last
                | AggFunc::Spread
        ) && c.transform.is_none()
            && c.slot.is_some()
            && matches!(c.field_type, Some(FieldType::Float | FieldType::Integer | FieldType::Unsigned))
    };
    if columns.is_empty() || !columns.iter().all(decomposable) {
        return None;
    }
    if plan.condition.as_ref().is_some_and(|c| c.references_fields()) {
        return None;
    }
    match plan.window {
        Some(w) if w.zone.is_none() => {
            Some(Some(WindowSpec { every_ns: w.interval_ns, offset_ns: w.offset_ns }))
        }
        Some(_) => None,
        None if columns.len() == 1 && columns[0].func.is_selector() => None,
        None => Some(None),
    }
}

/// Reads the partials of the plan's series in one call and merges them
/// into accumulators per group (GROUP BY tag values) and window start
/// (0 without GROUP BY time).
pub fn read_partials(
    store: &dyn SeriesStore,
    plan: &SelectPlan,
    window: Option<WindowSpec>,
) -> Result<BTreeMap<Vec<String>, Buckets>, StatementError> {
    let Projection::Aggregate(columns) = &plan.projection else { unreachable!("answerable plans aggregate") };
    let mut groups: BTreeMap<Vec<String>, Buckets> = BTreeMap::new();
    let mut ids = Vec::new();
    // (group, column) of each id read.
    let mut targets: Vec<(Vec<String>, usize)> = Vec::new();
    for tagset in &plan.tagsets {
        let visible = TagsOnly { tags: &tagset.tags, fields_unknown: false };
        if plan.condition.as_ref().is_some_and(|c| c.decide(&visible) != Some(true)) {
            continue;
        }
        let key = group_key(plan, tagset);
        groups.entry(key.clone()).or_default();
        for (i, column) in columns.iter().enumerate() {
            if let Some(id) = column.slot.and_then(|s| tagset.ids[s]) {
                ids.push(id);
                targets.push((key.clone(), i));
            }
        }
    }
    if ids.is_empty() || plan.range.is_empty() {
        return Ok(groups);
    }
    let partials = store.window_aggregates(&plan.db, &ids, plan.range, window)?;
    for ((key, column), series) in targets.into_iter().zip(partials) {
        let buckets = groups.entry(key).or_default();
        for p in &series {
            let start = if window.is_some() { p.window_start } else { 0 };
            let accs = buckets.entry(start).or_insert_with(|| fresh_accs(columns));
            merge(&mut accs[column], p);
        }
    }
    Ok(groups)
}

/// Adds a series' partial of one window to an accumulator of one of the
/// functions [`answerable`] accepts.
fn merge(acc: &mut Acc, p: &PartialAggregate) {
    if p.count == 0 {
        return;
    }
    // Min and max of a partial have no time of their own; with GROUP BY
    // time, or beside other columns, no time is reported for them.
    let time = p.first.as_ref().map_or(0, |(t, _)| *t);
    match acc {
        Acc::Count(n) => *n += p.count as i64,
        Acc::Sum(total) => {
            if let Some(sum) = &p.sum {
                *total = Some(add_value(total.take(), sum));
            }
        }
        Acc::Mean { sum, n } => {
            if p.sum.is_some() {
                *sum += p.sum_f64;
                *n += p.count;
            }
        }
        Acc::Range(_) => {
            for v in [&p.min, &p.max].into_iter().flatten() {
                acc.add(time, v);
            }
        }
        Acc::Pick { func, .. } => {
            let picked = match func {
                AggFunc::Min => p.min.clone().map(|v| (time, v)),
                AggFunc::Max => p.max.clone().map(|v| (time, v)),
                AggFunc::First => p.first.clone(),
                AggFunc::Last => p.last.clone(),
                _ => None,
            };
            if let Some((t, v)) = picked {
                acc.add(t, &v);
            }
        }
        Acc::Moments { .. } | Acc::All { .. } => unreachable!("not a decomposable function"),
    }
}
