//! Reading for a SELECT whose WHERE requires comparisons of fields with
//! literals (`usage_user > 90`, on its top-level AND chain), in two phases
//! (late materialization, issue 21 items 1 and 5):
//! 1. the series of the compared fields are read, the store leaving out
//!    the sealed blocks none of whose values can pass
//!    (`SeriesStore::read_pruned`, answered from the blocks' summaries);
//!    per tag set, the times where every required comparison passes are
//!    the only times a row can pass (a row without the field fails too);
//! 2. the other fields' series are read at those times only
//!    (`SeriesStore::read_at_times`, which skips the blocks holding none).
//!
//! Points at other times are left out, so the rows joined are the rows
//! that can pass; the whole condition is still evaluated on each of them.

use std::collections::BTreeSet;

use strata_series::{EngineError, FieldValue, SeriesId, SeriesStore, TimeRange, TimestampNs};

use super::condition::{compare, range_may_pass, Val};
use super::plan::SelectPlan;
use crate::influxql::ast::BinaryOp;

/// The points of `ids` (each at `where_read`'s tag set and field slot) in
/// `range`, as [`SeriesStore::read`], less the points at times where the
/// plan's required comparisons fail.
pub fn read(
    store: &dyn SeriesStore,
    plan: &SelectPlan,
    ids: &[SeriesId],
    where_read: &[(usize, usize)],
    range: TimeRange,
) -> Result<Vec<Vec<(TimestampNs, FieldValue)>>, EngineError> {
    let required = plan.condition.as_ref().map(|c| c.required_comparisons()).unwrap_or_default();
    if required.is_empty() {
        return store.read(&plan.db, ids, range);
    }
    let compared: BTreeSet<usize> = required.iter().map(|(slot, ..)| *slot).collect();
    let comparisons_of = |slot: usize| required.iter().filter(move |(s, ..)| *s == slot);

    // Phase 1: the compared fields, blocks pruned by their summaries.
    let first: Vec<usize> = (0..ids.len()).filter(|i| compared.contains(&where_read[*i].1)).collect();
    let first_ids: Vec<SeriesId> = first.iter().map(|i| ids[*i]).collect();
    let may_pass = |k: usize, min: &FieldValue, max: &FieldValue| {
        comparisons_of(where_read[first[k]].1).all(|(_, op, lit)| range_may_pass(*op, lit, min, max))
    };
    let first_data = store.read_pruned(&plan.db, &first_ids, range, &may_pass)?;

    // Per tag set, the times where every compared field passes.
    let tagsets = where_read.iter().map(|(t, _)| t + 1).max().unwrap_or(0);
    let mut passing: Vec<Option<Vec<TimestampNs>>> = vec![None; tagsets];
    let mut compared_present = vec![0usize; tagsets];
    for (k, points) in first.iter().zip(&first_data) {
        let (tagset, slot) = where_read[*k];
        compared_present[tagset] += 1;
        let passes = |v: &FieldValue| comparisons_of(slot).all(|(_, op, lit)| value_passes(*op, v, lit));
        let times = points.iter().filter(|(_, v)| passes(v)).map(|(t, _)| *t);
        passing[tagset] = Some(match passing[tagset].take() {
            None => times.collect(),
            Some(before) => intersect_sorted(&before, times),
        });
    }
    let passing: Vec<Vec<TimestampNs>> = passing
        .into_iter()
        .zip(compared_present)
        .map(
            |(times, present)| if present == compared.len() { times.unwrap_or_default() } else { Vec::new() },
        )
        .collect();

    // Phase 2: the other fields at those times; the compared ones keep
    // their points there.
    let rest: Vec<usize> = (0..ids.len()).filter(|i| !compared.contains(&where_read[*i].1)).collect();
    let rest_ids: Vec<SeriesId> = rest.iter().map(|i| ids[*i]).collect();
    let rest_times: Vec<&[TimestampNs]> = rest.iter().map(|i| passing[where_read[*i].0].as_slice()).collect();
    let rest_data = if rest_times.iter().all(|t| t.is_empty()) {
        vec![Vec::new(); rest.len()]
    } else {
        store.read_at_times(&plan.db, &rest_ids, range, &rest_times)?
    };
    let mut out: Vec<Vec<(TimestampNs, FieldValue)>> = vec![Vec::new(); ids.len()];
    for (i, mut points) in first.into_iter().zip(first_data) {
        strata_series::store::keep_at_times(&mut points, &passing[where_read[i].0]);
        out[i] = points;
    }
    for (i, points) in rest.into_iter().zip(rest_data) {
        out[i] = points;
    }
    Ok(out)
}

/// Whether a field's value `v` passes `v op lit`.
fn value_passes(op: BinaryOp, v: &FieldValue, lit: &Val) -> bool {
    compare(op, &Val::from(v), lit)
}

/// The times of `a` that `b` (sorted) holds too.
fn intersect_sorted(a: &[TimestampNs], b: impl Iterator<Item = TimestampNs>) -> Vec<TimestampNs> {
    let mut a = a.iter().peekable();
    b.filter(|t| {
        while a.next_if(|x| *x < t).is_some() {}
        a.peek().is_some_and(|x| *x == t)
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intersections_keep_the_common_times_in_order() {
        assert_eq!(intersect_sorted(&[1, 3, 5, 9], [0, 3, 4, 5, 10].into_iter()), vec![3, 5]);
        assert_eq!(intersect_sorted(&[], [1, 2].into_iter()), Vec::<i64>::new());
    }

    #[test]
    fn a_value_passes_as_the_condition_compares_it() {
        assert!(value_passes(BinaryOp::Gt, &FieldValue::Float(90.5), &Val::Float(90.0)));
        assert!(!value_passes(BinaryOp::Gt, &FieldValue::Float(90.0), &Val::Float(90.0)));
        assert!(value_passes(BinaryOp::Lte, &FieldValue::Integer(3), &Val::Float(3.0)));
    }
}
