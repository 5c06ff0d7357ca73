//! The DESIGN.md section 3 oracle over a recovered series engine state, for
//! the DecLog crash lines (`crate::series_declog`).
//!
//! The recovered state must equal the state after applying, in commit order,
//! exactly a set S of steps that holds every acknowledged step and is closed
//! under dependencies (a step depends on every earlier step that touched one
//! of its points). The workload runs on one thread and `execute` returns only
//! once its transaction is durable, so at any crash point the acknowledged
//! steps are 1..=a and at most step a + 1 is in flight: S is 1..=a or
//! 1..=a+1, and the check is a comparison with two prefix states.
//!
//! When neither matches, the diagnosis explains the state point by point
//! with each point's history of writers (values are unique, so a recovered
//! value names its writer; an absent point is explained by the latest
//! delete, or no write, that fits): acknowledged steps whose effect is
//! missing are `lost`; a step seen on one point and missing on another, or a
//! value nobody wrote, is `partial`; a step seen while a step it depends on
//! is missing is an `order_violation`.

use std::collections::{BTreeMap, BTreeSet};

use strata_media::{OracleCounts, TxnId};

use crate::series_declog_workload::{DeclogPlan, Model, PointKey};

/// At most this many point explanations go into a failure description.
const MAX_DETAILS: usize = 4;

/// Checks `recovered` against `plan` given the steps acknowledged at the crash.
pub fn check(
    plan: &DeclogPlan,
    recovered: &Model,
    acked: &BTreeSet<TxnId>,
) -> (OracleCounts, Option<String>) {
    let a = acked.iter().next_back().map_or(0, |t| t.0 as usize).min(plan.steps.len());
    if acked.len() != a {
        let c = OracleCounts { lost: (a - acked.len()) as u64, ..Default::default() };
        return (c, Some(format!("the acknowledged steps are not 1..={a}: {} of them", acked.len())));
    }
    if plan.states[a] == *recovered || plan.states.get(a + 1) == Some(recovered) {
        return (OracleCounts::default(), None);
    }
    diagnose(plan, recovered, a)
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

fn diagnose(plan: &DeclogPlan, recovered: &Model, a: usize) -> (OracleCounts, Option<String>) {
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
        } else if created == a + 1 {
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
                if fits.contains(&in_flight) && history[in_flight - 1].0 == a + 1 {
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
                if step_at(i) == a + 1 {
                    present.insert(a + 1);
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
    // The in-flight step is missing where it had an effect that shows.
    if let Some(crate::series_declog_workload::Step::Txn { effects, .. }) = plan.steps.get(a) {
        for (k, v) in effects {
            if recovered.points.get(k) != v.as_ref() && present.contains(&(a + 1)) {
                missing.insert(a + 1);
            }
        }
    }

    let mut counts = OracleCounts { lost: lost.len() as u64, ..Default::default() };
    if unknown > 0 || future > 0 || missing.contains(&(a + 1)) {
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
        DeclogPlan::new(5, WorkloadShape { steps: 80, max_ops: 4 })
    }

    fn acked(n: u64) -> BTreeSet<TxnId> {
        (1..=n).map(TxnId).collect()
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
        assert!(check(&p, &p.states[40], &acked(40)).0.is_clean());
        assert!(check(&p, &p.states[41], &acked(40)).0.is_clean());
        assert!(check(&p, &p.states[0], &acked(0)).0.is_clean());
    }

    #[test]
    fn a_shorter_prefix_counts_the_missing_acknowledged_steps_as_lost() {
        let p = plan();
        let (c, why) = check(&p, &p.states[38], &acked(40));
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
        let (c, why) = check(&p, &half, &acked(a as u64));
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
        let (c, why) = check(&p, &state, &acked(second as u64 - 1));
        assert!(c.lost >= 1, "{c:?} {why:?}");
        assert!(c.order_violations >= 1, "{c:?} {why:?}");
    }

    #[test]
    fn a_value_nobody_wrote_is_partial() {
        let p = plan();
        let mut state = p.states[30].clone();
        let k = *state.points.keys().next().unwrap();
        state.points.insert(k, crate::series_declog_workload::Val::Int(-77));
        let (c, why) = check(&p, &state, &acked(30));
        assert_eq!(c.partial, 1, "{why:?}");
        assert!(why.unwrap().contains("no step wrote"));
    }
}
