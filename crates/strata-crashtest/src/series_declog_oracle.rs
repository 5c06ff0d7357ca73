//! The DESIGN.md section 3 oracle over a recovered series engine state, for
//! the DecLog crash lines (`crate::series_declog`).
//!
//! The recovered state must equal the state after applying, in commit order,
//! exactly a set S of steps that holds every acknowledged step and is closed
//! under dependencies (a step depends on every earlier step that touched one
//! of its points). The workload runs on one thread and a group of
//! transactions returns only once all of them are durable, so at any crash
//! point the acknowledged steps are 1..=a and at most the `window` steps
//! a+1..=a+window of the next group are in flight: S is 1..=a plus a
//! dependency-closed subset of them (at most 2^window candidates; with a
//! window of 1 that is the prefix 1..=a or 1..=a+1).
//!
//! When neither matches, the diagnosis explains the state point by point
//! with each point's history of writers (values are unique, so a recovered
//! value names its writer; an absent point is explained by the latest
//! delete, or no write, that fits): acknowledged steps whose effect is
//! missing are `lost`; a step seen on one point and missing on another, or a
//! value nobody wrote, is `partial`; a step seen while a step it depends on
//! is missing is an `order_violation`.

use std::collections::{BTreeMap, BTreeSet};

use crate::oracle::OracleCounts;
use strata_media::TxnId;

use crate::series_declog_workload::{DeclogPlan, Model, PointKey};

/// At most this many point explanations go into a failure description.
const MAX_DETAILS: usize = 4;

/// Most steps that may be in flight at once (the subsets tried grow as 2^n).
pub const MAX_WINDOW: usize = 8;

/// Checks `recovered` against `plan` given the steps acknowledged at the
/// crash and how many steps after them may have been in flight (`window(a)`
/// for `a` acknowledged steps, at least 1).
pub fn check(
    plan: &DeclogPlan,
    recovered: &Model,
    acked: &BTreeSet<TxnId>,
    window: impl Fn(usize) -> usize,
) -> (OracleCounts, Option<String>) {
    let a = acked.iter().next_back().map_or(0, |t| t.0 as usize).min(plan.steps.len());
    if acked.len() != a {
        let c = OracleCounts { lost: (a - acked.len()) as u64, ..Default::default() };
        return (c, Some(format!("the acknowledged steps are not 1..={a}: {} of them", acked.len())));
    }
    let w = if a < plan.steps.len() { window(a).clamp(1, MAX_WINDOW).min(plan.steps.len() - a) } else { 0 };
    if plan.states[a] == *recovered || (1..1usize << w).any(|mask| applies(plan, a, mask, recovered)) {
        return (OracleCounts::default(), None);
    }
    diagnose(plan, recovered, a, w.max(1))
}

/// Whether `mask` (bit i: step a+1+i) is closed under the dependencies
/// among the in-flight steps and, applied after 1..=a, gives `recovered`.
fn applies(plan: &DeclogPlan, a: usize, mask: usize, recovered: &Model) -> bool {
    let in_set = |step: usize| step > a && mask >> (step - a - 1) & 1 == 1;
    let steps: Vec<usize> =
        (0..usize::BITS as usize).filter(|i| mask >> i & 1 == 1).map(|i| a + 1 + i).collect();
    let closed = steps.iter().all(|&j| {
        let touched = plan.steps[j - 1].touched();
        (a + 1..j).all(|i| in_set(i) || plan.steps[i - 1].touched().is_disjoint(&touched))
    });
    if !closed {
        return false;
    }
    let mut model = plan.states[a].clone();
    for j in steps {
        crate::series_declog_workload::apply(&mut model, &plan.steps[j - 1]);
    }
    model == *recovered
}

/// What one point's recovered value says about its writers.
enum Seen {
    /// The value of this step.
    Writer(usize),
    /// Absent: one of these history positions (0 = before every writer,
    /// `i` = after the i-th entry, a delete) was the last applied.
    Absent(Vec<usize>),
    /// A value no step wrote.
    Unknown,
}

fn diagnose(plan: &DeclogPlan, recovered: &Model, a: usize, window: usize) -> (OracleCounts, Option<String>) {
    let in_flight_step = |step: usize| step > a && step <= a + window;
    let expected = &plan.states[a];
    let mut details = Vec::new();
    let mut lost: BTreeSet<usize> = BTreeSet::new();
    let mut present: BTreeSet<usize> = BTreeSet::new();
    let mut missing: BTreeSet<usize> = BTreeSet::new();
    let mut unknown = 0u64;
    let mut future = 0u64;

    for db in expected.databases.symmetric_difference(&recovered.databases) {
        let created = plan
            .steps
            .iter()
            .position(|s| matches!(s, crate::series_declog_workload::Step::CreateDatabase(d) if d == db))
            .map_or(0, |i| i + 1);
        if expected.databases.contains(db) {
            lost.insert(created);
            details.push(format!("database {db} (created by step {created}) is missing"));
        } else if in_flight_step(created) {
            present.insert(created);
        } else {
            future += 1;
            details.push(format!("database {db} exists but step {created} creating it was never run"));
        }
    }

    let keys: BTreeSet<PointKey> = expected.points.keys().chain(recovered.points.keys()).copied().collect();
    for k in keys {
        let history = plan.histories.get(&k).map_or(&[][..], |h| h.as_slice());
        // Position after the last step <= a (what S = 1..=a implies).
        let want = history.iter().take_while(|(s, _)| *s <= a).count();
        let seen = match recovered.points.get(&k) {
            Some(v) => match history.iter().position(|(_, w)| *w == Some(*v)) {
                Some(i) => Seen::Writer(i + 1),
                None => Seen::Unknown,
            },
            None => Seen::Absent(
                std::iter::once(0)
                    .chain(history.iter().enumerate().filter(|(_, (_, v))| v.is_none()).map(|(i, _)| i + 1))
                    .collect(),
            ),
        };
        let got = match seen {
            Seen::Unknown => {
                unknown += 1;
                details.push(format!("{k} holds {:?}, which no step wrote", recovered.points[&k]));
                continue;
            }
            Seen::Writer(i) => i,
            // The likeliest explanation: as expected; else the in-flight
            // step's delete; else the latest earlier delete (or nothing);
            // else a delete of a step never run.
            Seen::Absent(fits) => {
                if fits.contains(&want) {
                    continue;
                }
                let in_flight = want + 1;
                if fits.contains(&in_flight) && in_flight_step(history[in_flight - 1].0) {
                    in_flight
                } else if let Some(below) = fits.iter().copied().filter(|&i| i < want).max() {
                    below
                } else {
                    fits.iter().copied().find(|&i| i > want).unwrap_or(0)
                }
            }
        };
        if got == want {
            continue;
        }
        let step_at = |i: usize| history[i - 1].0;
        if got < want {
            // Writers got+1..=want are missing on this point.
            for i in got + 1..=want {
                lost.insert(step_at(i));
            }
            if got > 0 {
                present.insert(step_at(got));
            }
        } else {
            for i in want + 1..=got {
                if in_flight_step(step_at(i)) {
                    present.insert(step_at(i));
                } else {
                    future += 1;
                }
            }
        }
        if details.len() < MAX_DETAILS {
            let name = |i: usize| if i == 0 { "no step".to_string() } else { format!("step {}", step_at(i)) };
            details.push(format!(
                "{k}: recovered the effect of {}, expected that of {}",
                name(got),
                name(want)
            ));
        }
    }
    // An in-flight step is missing where it had an effect that shows (and
    // no later in-flight step wrote that point again).
    for step in a + 1..=a + window {
        if let Some(crate::series_declog_workload::Step::Txn { effects, .. }) = plan.steps.get(step - 1) {
            for (k, v) in effects {
                let rewritten = plan.histories[k].iter().any(|(s, _)| *s > step && in_flight_step(*s));
                if recovered.points.get(k) != v.as_ref() && present.contains(&step) && !rewritten {
                    missing.insert(step);
                }
            }
        }
    }

    let mut counts = OracleCounts { lost: lost.len() as u64, ..Default::default() };
    if unknown > 0 || future > 0 || !missing.is_empty() {
        counts.partial = 1;
    }
    let deps = dependencies(plan);
    counts.order_violations =
        present.iter().filter(|p| deps.get(p).is_some_and(|d| d.iter().any(|x| lost.contains(x)))).count()
            as u64;
    if counts.is_clean() {
        // A difference none of the rules above names: call it partial.
        counts.partial = 1;
    }
    let summary = format!(
        "{} acknowledged; lost steps {:?}; seen past step {a}: {:?}",
        a,
        lost.iter().take(8).collect::<Vec<_>>(),
        present.iter().filter(|p| **p > a).collect::<Vec<_>>()
    );
    details.truncate(MAX_DETAILS);
    (counts, Some(format!("{summary}; {}", details.join("; "))))
}

/// Direct dependencies: step -> earlier steps that touched one of its points.
fn dependencies(plan: &DeclogPlan) -> BTreeMap<usize, BTreeSet<usize>> {
    let mut last_touch: BTreeMap<PointKey, Vec<usize>> = BTreeMap::new();
    let mut deps = BTreeMap::new();
    for (i, s) in plan.steps.iter().enumerate() {
        let mut d = BTreeSet::new();
        for k in s.touched() {
            let earlier = last_touch.entry(k).or_default();
            d.extend(earlier.iter().copied());
            earlier.push(i + 1);
        }
        deps.insert(i + 1, d);
    }
    deps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series_declog_workload::{Step, WorkloadShape};

    fn plan() -> DeclogPlan {
        DeclogPlan::new(5, WorkloadShape::mixed(80))
    }

    fn acked(n: u64) -> BTreeSet<TxnId> {
        (1..=n).map(TxnId).collect()
    }

    /// One step in flight after the acknowledged ones (transactions alone).
    fn one(_: usize) -> usize {
        1
    }

    /// A step with a write that a later step overwrites, and that later step.
    fn overwritten(plan: &DeclogPlan) -> (PointKey, usize, usize) {
        plan.histories
            .iter()
            .find_map(|(k, h)| {
                let w: Vec<_> = h.iter().filter(|(_, v)| v.is_some()).collect();
                (w.len() >= 2).then(|| (*k, w[0].0, w[1].0))
            })
            .expect("some point is written twice")
    }

    #[test]
    fn the_acknowledged_prefix_and_the_in_flight_step_pass() {
        let p = plan();
        assert!(check(&p, &p.states[40], &acked(40), one).0.is_clean());
        assert!(check(&p, &p.states[41], &acked(40), one).0.is_clean());
        assert!(check(&p, &p.states[0], &acked(0), one).0.is_clean());
    }

    #[test]
    fn a_shorter_prefix_counts_the_missing_acknowledged_steps_as_lost() {
        let p = plan();
        let (c, why) = check(&p, &p.states[38], &acked(40), one);
        assert!(c.lost >= 1 && c.partial == 0, "{c:?} {why:?}");
        assert!(why.unwrap().contains("lost steps"));
    }

    #[test]
    fn a_half_applied_in_flight_step_is_partial() {
        let p = plan();
        let a = (40..79)
            .find(|&a| matches!(&p.steps[a], Step::Txn { effects, .. } if effects.len() >= 2))
            .unwrap();
        let Step::Txn { effects, .. } = &p.steps[a] else { unreachable!() };
        let mut half = p.states[a].clone();
        let (k, v) = effects[0];
        match v {
            Some(v) => half.points.insert(k, v),
            None => half.points.remove(&k),
        };
        if half == p.states[a] {
            return; // the first effect was a delete of an absent point: not visible
        }
        let (c, why) = check(&p, &half, &acked(a as u64), one);
        assert_eq!(c.partial, 1, "{c:?} {why:?}");
        assert_eq!(c.lost, 0, "{why:?}");
    }

    #[test]
    fn a_later_write_without_its_earlier_one_is_an_order_violation() {
        let p = plan();
        let (k, first, second) = overwritten(&p);
        // Recover everything up to `second` but with `first`'s other effects undone.
        let mut state = p.states[second].clone();
        let Step::Txn { effects, .. } = &p.steps[first - 1] else { unreachable!() };
        let mut undone = false;
        for (ek, _) in effects {
            if *ek != k && p.histories[ek].iter().all(|(s, _)| *s == first || *s > second) {
                let before = p.states[first - 1].points.get(ek).copied();
                match before {
                    Some(v) => state.points.insert(*ek, v),
                    None => state.points.remove(ek),
                };
                undone = true;
            }
        }
        if !undone {
            return; // `first` has no other effect that survives to `second`
        }
        let (c, why) = check(&p, &state, &acked(second as u64 - 1), one);
        assert!(c.lost >= 1, "{c:?} {why:?}");
        assert!(c.order_violations >= 1, "{c:?} {why:?}");
    }

    #[test]
    fn a_value_nobody_wrote_is_partial() {
        let p = plan();
        let mut state = p.states[30].clone();
        let k = *state.points.keys().next().unwrap();
        state.points.insert(k, crate::series_declog_workload::Val::Int(-77));
        let (c, why) = check(&p, &state, &acked(30), one);
        assert_eq!(c.partial, 1, "{why:?}");
        assert!(why.unwrap().contains("no step wrote"));
    }

    #[test]
    fn a_group_in_flight_may_leave_any_dependency_closed_subset() {
        let p = plan();
        let txn = |i: usize| matches!(p.steps[i - 1], Step::Txn { .. });
        // Two consecutive independent transactions after a acknowledged steps.
        let a = (1..p.steps.len() - 2)
            .find(|&a| {
                txn(a + 1) && txn(a + 2) && p.steps[a].touched().is_disjoint(&p.steps[a + 1].touched())
            })
            .expect("the workload has independent neighbours");
        let mut second_only = p.states[a].clone();
        crate::series_declog_workload::apply(&mut second_only, &p.steps[a + 1]);
        assert!(second_only != p.states[a], "step {} has an effect", a + 2);
        let (c, why) = check(&p, &second_only, &acked(a as u64), |_| 2);
        assert!(c.is_clean(), "a window of 2: the later member alone is allowed: {why:?}");
        let (c, _) = check(&p, &second_only, &acked(a as u64), one);
        assert!(!c.is_clean(), "a window of 1: a step past the in-flight one is not allowed");

        // A dependent pair: the later one without the earlier is a violation.
        let b = (1..p.steps.len() - 2)
            .find(|&b| {
                txn(b + 1) && txn(b + 2) && !p.steps[b].touched().is_disjoint(&p.steps[b + 1].touched()) && {
                    let mut m = p.states[b].clone();
                    crate::series_declog_workload::apply(&mut m, &p.steps[b + 1]);
                    m != p.states[b] && m != p.states[b + 2]
                }
            })
            .expect("the workload has dependent neighbours");
        let mut later_only = p.states[b].clone();
        crate::series_declog_workload::apply(&mut later_only, &p.steps[b + 1]);
        let (c, why) = check(&p, &later_only, &acked(b as u64), |_| 2);
        assert!(!c.is_clean(), "step {} without step {} it depends on: {why:?}", b + 2, b + 1);
    }
}
