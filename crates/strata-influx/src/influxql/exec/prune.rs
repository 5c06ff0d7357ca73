//! Reading for a SELECT whose WHERE requires comparisons of fields with
//! literals (`usage_user > 90`, on its top-level AND chain): the store may
//! leave out the sealed blocks none of whose values can pass
//! (`SeriesStore::read_pruned`, which the engine answers from the blocks'
//! summaries without reading them), since the condition drops the rows of
//! those points anyway (a row without the field fails the comparison too).
//! The condition is still evaluated on every row read.

use strata_series::{EngineError, FieldValue, SeriesId, SeriesStore, TimeRange, TimestampNs};

use super::condition::range_may_pass;
use super::plan::SelectPlan;

/// The points of `ids` (the field slot of each in `slots`) in `range`, as
/// [`SeriesStore::read`], blocks pruned by the plan's required comparisons.
pub fn read(
    store: &dyn SeriesStore,
    plan: &SelectPlan,
    ids: &[SeriesId],
    slots: &[usize],
    range: TimeRange,
) -> Result<Vec<Vec<(TimestampNs, FieldValue)>>, EngineError> {
    let required = plan.condition.as_ref().map(|c| c.required_comparisons()).unwrap_or_default();
    if required.is_empty() {
        return store.read(&plan.db, ids, range);
    }
    let may_pass = |i: usize, min: &FieldValue, max: &FieldValue| {
        required
            .iter()
            .filter(|(slot, ..)| *slot == slots[i])
            .all(|(_, op, lit)| range_may_pass(*op, lit, min, max))
    };
    store.read_pruned(&plan.db, ids, range, &may_pass)
}
