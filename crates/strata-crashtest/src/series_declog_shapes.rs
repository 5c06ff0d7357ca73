//! The workload shapes of the DecLog crash lines for concurrent writers
//! (issue 14), on the generator of `crate::series_declog_workload`. Each
//! shape builds the run one `execute_group` at a time, the members in the
//! order the engine serializes them (`SeriesEngine::execute_group`: each
//! member sees every earlier one, so a later write of a point wins), and
//! mixes in groups of the ordinary transactions (reads, updates and
//! deletes of what it wrote):
//!
//! - [`WorkloadKind::OutOfOrderLoad`]: connections back-filling a host's
//!   history. A load starts with the host's *head* (its newest point, far
//!   ahead), written by the group's first member; the group's other members
//!   then load time windows below it, round robin (one window each, so
//!   their ranges are disjoint, or two each, so every member's range spans
//!   another's window), and windows left over are loaded by later groups,
//!   below a head acknowledged before them. Every loaded point is new and
//!   below its series' newest: the engine may log it as an insert (LSN 0)
//!   whatever its time order.
//! - [`WorkloadKind::SamePoint`]: one or two *contested* points per group
//!   (new past the newest, new in a gap below it, existing, or deleted
//!   before), each written by at least two members, now and then read or
//!   deleted by another; a member may also write a point of its own.
//! - [`WorkloadKind::PerKeyRuns`]: one or two transactions per group, each
//!   writing 20 to 60 points of one or two hosts in one to three fields
//!   (floats, integers, strings of up to 150 bytes), mostly appended, some
//!   late and new, some updates; three in five also delete points of the
//!   same series. Each series' run is one per-key entry, or several when it
//!   outgrows the largest payload.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rand::Rng;
use strata_series::{Point, TxnOp};

use crate::series_declog_workload::{
    Effect, Generator, PointKey, Step, Val, WorkloadKind, WorkloadShape, FIELDS, HOSTS, MEASUREMENT, TS_STEP,
};

/// Most transactions of one group (what the crash line's oracle window and
/// the mixed workload's grouping allow).
pub const MAX_MEMBERS: usize = 4;
/// Time covered by one window of a load.
const WINDOW: i64 = 40;

/// The steps of `shape` and the groups chosen (0-based index of a group's
/// first step -> its size; steps in no group run alone). Step 1 creates the
/// first database, step `create_second_at` the second.
pub(crate) fn generate(
    g: &mut Generator,
    shape: WorkloadShape,
    create_second_at: usize,
) -> (Vec<Step>, BTreeMap<usize, usize>) {
    let mut steps = Vec::with_capacity(shape.steps);
    let mut groups = BTreeMap::new();
    let mut loads = Loads::default();
    while steps.len() < shape.steps {
        let step = steps.len() + 1;
        if step == 1 || step == create_second_at {
            steps.push(Step::CreateDatabase((step != 1) as u8));
            continue;
        }
        // A group never spans a CREATE DATABASE (a barrier) or the end.
        let end = if step < create_second_at { create_second_at } else { shape.steps + 1 };
        let room = (end - step).min(MAX_MEMBERS);
        let db = if step > create_second_at && g.rng.gen_range(0..100) < 25 { 1 } else { 0 };
        let group = match shape.kind {
            WorkloadKind::OutOfOrderLoad => out_of_order_load(g, &mut loads, step, db, room),
            WorkloadKind::SamePoint => same_point(g, step, db, room),
            WorkloadKind::PerKeyRuns => per_key_runs(g, step, db, room),
            WorkloadKind::Mixed => unreachable!("the mixed workload has its own generator"),
        };
        debug_assert!(!group.is_empty() && group.len() <= room);
        groups.insert(step - 1, group.len());
        steps.extend(group);
    }
    (steps, groups)
}

/// One transaction being built: its operations, their effects and the
/// values its reads must return. Each point is touched at most once.
struct TxnBuilder {
    step: usize,
    db: u8,
    ops: Vec<TxnOp>,
    effects: Vec<Effect>,
    reads: Vec<(PointKey, Option<Val>)>,
    used: BTreeSet<PointKey>,
}

impl TxnBuilder {
    fn new(step: usize, db: u8) -> TxnBuilder {
        TxnBuilder {
            step,
            db,
            ops: Vec::new(),
            effects: Vec::new(),
            reads: Vec::new(),
            used: BTreeSet::new(),
        }
    }

    fn key(&self, host: u8, field: u8, ts: i64) -> PointKey {
        PointKey { db: self.db, host, field, ts }
    }

    /// Writes `fields` of `host` at `ts` as one point (fields of a point
    /// this transaction already touched are left out).
    fn write(&mut self, g: &mut Generator, host: u8, fields: &[u8], ts: i64) {
        let op = self.ops.len();
        let keys: Vec<PointKey> =
            fields.iter().map(|&f| self.key(host, f, ts)).filter(|k| !self.used.contains(k)).collect();
        if keys.is_empty() {
            return;
        }
        let fields = keys
            .iter()
            .map(|k| {
                self.used.insert(*k);
                let v = Val::unique(self.step, op, k.field);
                self.effects.push((*k, Some(v)));
                g.record(*k, Some(v));
                (FIELDS[k.field as usize].to_string(), v.field_value())
            })
            .collect();
        self.ops.push(TxnOp::Write(Point {
            measurement: MEASUREMENT.into(),
            tags: vec![("host".into(), HOSTS[host as usize].into())],
            fields,
            timestamp_ns: ts,
        }));
    }

    fn delete(&mut self, g: &mut Generator, k: PointKey) {
        if self.used.insert(k) {
            self.ops.push(TxnOp::Delete { value: k.value_ref(), ts: k.ts });
            self.effects.push((k, None));
            g.record(k, None);
        }
    }

    fn read(&mut self, g: &Generator, k: PointKey) {
        if self.used.insert(k) {
            self.ops.push(TxnOp::Read { value: k.value_ref(), ts: k.ts });
            self.reads.push((k, g.model.points.get(&k).copied()));
        }
    }

    fn finish(self) -> Step {
        Step::Txn { db: self.db, ops: self.ops, effects: self.effects, reads: self.reads }
    }
}

/// `n` ordinary transactions (`Generator::txn`) from step `step`.
fn ordinary(g: &mut Generator, step: usize, db: u8, n: usize) -> Vec<Step> {
    (0..n).map(|k| g.txn(step + k, db, 4)).collect()
}

/// Distinct hosts, weighted as the mixed workload picks them.
fn hosts(g: &mut Generator, n: usize) -> Vec<u8> {
    let mut out = vec![g.host()];
    for _ in 0..8 {
        if out.len() == n {
            break;
        }
        let h = g.host();
        if !out.contains(&h) {
            out.push(h);
        }
    }
    out
}

/// The newest timestamp planned in any of `fields` of `host`.
fn newest(g: &Generator, db: u8, host: u8, fields: &[u8]) -> i64 {
    fields.iter().map(|&f| g.series.get(&(db, host, f)).map_or(0, |s| s.max_ts)).max().unwrap_or(0)
}

/// A timestamp below the newest of `fields` of `host` with a value in none
/// of them (and never deleted there), if a few draws find one.
fn late_gap(g: &mut Generator, db: u8, host: u8, fields: &[u8]) -> Option<i64> {
    let max = newest(g, db, host, fields);
    if max <= TS_STEP {
        return None;
    }
    (0..8).map(|_| g.rng.gen_range(1..max)).find(|ts| {
        fields.iter().all(|&f| {
            g.series.get(&(db, host, f)).is_none_or(|s| !s.live.contains(ts) && !s.deleted.contains(ts))
        })
    })
}

/// One host's load in progress: the fields its points carry and the
/// windows (start timestamps) not loaded yet, all below its head.
struct Load {
    fields: Vec<u8>,
    windows: VecDeque<i64>,
}

/// Loads in progress by (database, host).
#[derive(Default)]
struct Loads {
    open: BTreeMap<(u8, u8), Load>,
}

/// A group of [`WorkloadKind::OutOfOrderLoad`] (see the module comment).
fn out_of_order_load(g: &mut Generator, loads: &mut Loads, step: usize, db: u8, room: usize) -> Vec<Step> {
    if room < 2 || g.rng.gen_range(0..100) < 20 {
        let n = g.rng.gen_range(1..=room.min(2));
        return ordinary(g, step, db, n);
    }
    let n_hosts = if g.rng.gen_range(0..100) < 35 { 2 } else { 1 };
    let hosts = hosts(g, n_hosts);
    // Hosts with nothing left to load start a load: fields, windows, head.
    let mut heads = Vec::new();
    for &h in &hosts {
        if loads.open.get(&(db, h)).is_some_and(|l| !l.windows.is_empty()) {
            continue;
        }
        let fields = match g.rng.gen_range(0..3) {
            0 => vec![0],
            1 => vec![1],
            _ => vec![0, 1],
        };
        let n_windows = g.rng.gen_range(4..=10);
        let base = newest(g, db, h, &fields) + TS_STEP;
        let mut windows: VecDeque<i64> = (0..n_windows).map(|i| base + i * WINDOW).collect();
        if g.rng.gen_range(0..100) < 30 {
            // Newest window first, as a back-fill walking back in time.
            windows.make_contiguous().reverse();
        }
        heads.push((h, fields.clone(), base + n_windows * WINDOW));
        loads.open.insert((db, h), Load { fields, windows });
    }
    let first_loader = usize::from(!heads.is_empty());
    let available = hosts.iter().map(|h| loads.open[&(db, *h)].windows.len()).max().unwrap_or(0);
    // Each loader gets a window (at least one host has as many windows).
    let most = (room - first_loader).min(available).max(1);
    let loaders = g.rng.gen_range(most.min(2)..=most);
    let ordinary_last = first_loader + loaders < room && g.rng.gen_range(0..100) < 25;
    let mut txns: Vec<TxnBuilder> =
        (0..first_loader + loaders).map(|k| TxnBuilder::new(step + k, db)).collect();
    for (h, fields, head) in heads {
        txns[0].write(g, h, &fields, head);
    }
    let per = g.rng.gen_range(1..=2);
    for &h in &hosts {
        let Some(load) = loads.open.get_mut(&(db, h)) else { continue };
        let take = (loaders * per).min(load.windows.len());
        let windows: Vec<i64> = load.windows.drain(..take).collect();
        let fields = load.fields.clone();
        for (i, lo) in windows.into_iter().enumerate() {
            let n_points = g.rng.gen_range(2..=4);
            let mut offsets = BTreeSet::new();
            while offsets.len() < n_points {
                offsets.insert(g.rng.gen_range(0..WINDOW));
            }
            let member = &mut txns[first_loader + i % loaders];
            for off in offsets {
                member.write(g, h, &fields, lo + off);
            }
        }
    }
    let mut group: Vec<Step> = txns.into_iter().map(TxnBuilder::finish).collect();
    if ordinary_last {
        // A client reading and updating what the loaders just wrote.
        let next = step + group.len();
        group.extend(ordinary(g, next, db, 1));
    }
    group
}

/// What one member does to one contested point.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Contest {
    Write,
    Read,
    Delete,
    Nothing,
}

/// A group of [`WorkloadKind::SamePoint`] (see the module comment).
fn same_point(g: &mut Generator, step: usize, db: u8, room: usize) -> Vec<Step> {
    if room < 2 || g.rng.gen_range(0..100) < 15 {
        let n = g.rng.gen_range(1..=room.min(2));
        return ordinary(g, step, db, n);
    }
    let members = g.rng.gen_range(2..=room);
    let mut contested: Vec<PointKey> = Vec::new();
    for _ in 0..g.rng.gen_range(1..=2) {
        let (_, host, field) = g.series_key(db);
        let s = (db, host, field);
        let ts = match g.rng.gen_range(0..100) {
            // New, past the series' newest point.
            0..=24 => g.fresh(s, false),
            // New, below it.
            25..=54 => late_gap(g, db, host, &[field]).unwrap_or_else(|| g.fresh(s, false)),
            // Existing.
            55..=84 => g.existing(s).unwrap_or_else(|| g.fresh(s, true)),
            // Deleted before.
            _ => {
                let deleted = g.series.get(&s).and_then(|x| x.deleted.iter().next_back().copied());
                deleted.unwrap_or_else(|| g.fresh(s, true))
            }
        };
        let k = PointKey { db, host, field, ts };
        let mut keys = vec![k];
        if g.rng.gen_range(0..100) < 30 {
            // The host's other field at the same time: one point, two series.
            keys.push(PointKey { field: 1 - field, ..k });
        }
        for k in keys {
            if !contested.contains(&k) {
                contested.push(k);
            }
        }
    }
    // Per member and contested point, what it does; at least two writers each.
    let mut plan: Vec<Vec<Contest>> = vec![Vec::new(); members];
    for _ in &contested {
        let mut roles: Vec<Contest> = (0..members)
            .map(|_| match g.rng.gen_range(0..100) {
                0..=64 => Contest::Write,
                65..=74 => Contest::Read,
                75..=84 => Contest::Delete,
                _ => Contest::Nothing,
            })
            .collect();
        while roles.iter().filter(|r| **r == Contest::Write).count() < 2 {
            let m = g.rng.gen_range(0..members);
            roles[m] = Contest::Write;
        }
        for (m, r) in roles.into_iter().enumerate() {
            plan[m].push(r);
        }
    }
    (0..members)
        .map(|m| {
            let mut t = TxnBuilder::new(step + m, db);
            // Writes of one host and time go out as one point.
            let mut writes: BTreeMap<(u8, i64), Vec<u8>> = BTreeMap::new();
            for (k, role) in contested.iter().zip(&plan[m]) {
                match role {
                    Contest::Write => writes.entry((k.host, k.ts)).or_default().push(k.field),
                    Contest::Read => t.read(g, *k),
                    Contest::Delete => t.delete(g, *k),
                    Contest::Nothing => {}
                }
            }
            for ((host, ts), fields) in writes {
                t.write(g, host, &fields, ts);
            }
            if t.ops.is_empty() || g.rng.gen_range(0..100) < 35 {
                // A point of its own, appended to some series.
                let s = g.series_key(db);
                let ts = g.fresh(s, false);
                t.write(g, s.1, &[s.2], ts);
            }
            t.finish()
        })
        .collect()
}

/// A group of [`WorkloadKind::PerKeyRuns`] (see the module comment).
fn per_key_runs(g: &mut Generator, step: usize, db: u8, room: usize) -> Vec<Step> {
    if g.rng.gen_range(0..100) < 25 {
        let n = g.rng.gen_range(1..=room.min(2));
        return ordinary(g, step, db, n);
    }
    let members = g.rng.gen_range(1..=room.min(2));
    (0..members).map(|m| long_runs(g, step + m, db)).collect()
}

/// One transaction of 20 to 60 points of one or two hosts.
fn long_runs(g: &mut Generator, step: usize, db: u8) -> Step {
    let mut t = TxnBuilder::new(step, db);
    let n_hosts = g.rng.gen_range(1..=2);
    let hosts = hosts(g, n_hosts);
    let total = g.rng.gen_range(20..=60);
    // Two in five only load (LSN 0 when nothing they write exists); the
    // others also update and delete.
    let load_only = g.rng.gen_range(0..100) < 40;
    for (i, &h) in hosts.iter().enumerate() {
        let fields: Vec<u8> = match g.rng.gen_range(0..5) {
            0 => vec![0],
            1 => vec![1],
            2 => vec![2],
            3 => vec![1, 2],
            _ => vec![0, 1, 2],
        };
        let n = total / hosts.len() + if i == 0 { total % hosts.len() } else { 0 };
        for _ in 0..n {
            let field = fields[g.rng.gen_range(0..fields.len())];
            let s = (db, h, field);
            let ts = match g.rng.gen_range(0..100) {
                0..=11 if !load_only => match g.existing(s) {
                    Some(ts) => {
                        t.delete(g, t.key(h, field, ts));
                        continue;
                    }
                    None => None,
                },
                12..=23 if !load_only => g.existing(s),
                24..=37 => late_gap(g, db, h, &fields),
                _ => None,
            };
            let ts = ts.unwrap_or_else(|| newest(g, db, h, &fields) + TS_STEP);
            t.write(g, h, &fields, ts);
        }
    }
    t.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series_declog_workload::DeclogPlan;

    fn plan(kind: WorkloadKind, seed: u64) -> DeclogPlan {
        DeclogPlan::new(seed, WorkloadShape { steps: 200, max_ops: 4, kind })
    }

    /// Group members that write a point an earlier member of their group wrote.
    fn same_point_writes(p: &DeclogPlan) -> (usize, usize) {
        let (mut any, mut new) = (0, 0);
        for (&start, &len) in &p.groups {
            let mut written: BTreeSet<PointKey> = BTreeSet::new();
            for t in start + 1..=start + len {
                let Step::Txn { effects, .. } = &p.steps[t - 1] else { continue };
                let mine: BTreeSet<PointKey> =
                    effects.iter().filter(|(_, v)| v.is_some()).map(|(k, _)| *k).collect();
                for k in mine.intersection(&written) {
                    any += 1;
                    new += usize::from(!p.states[start].points.contains_key(k));
                }
                written.extend(mine);
            }
        }
        (any, new)
    }

    #[test]
    fn groups_cover_the_run_and_never_span_a_create_database() {
        for kind in [WorkloadKind::OutOfOrderLoad, WorkloadKind::SamePoint, WorkloadKind::PerKeyRuns] {
            let seed = 21;
            let p = plan(kind, seed);
            assert_eq!(p.steps.len(), 200, "seed {seed} {kind:?}");
            let mut i = 0;
            while i < p.steps.len() {
                let n = p.group_at(i).expect("the shapes choose groups");
                assert!((1..=MAX_MEMBERS).contains(&n), "seed {seed} {kind:?}: group of {n} at {i}");
                let members = &p.steps[i..i + n];
                assert!(
                    n == 1 || members.iter().all(|s| matches!(s, Step::Txn { .. })),
                    "seed {seed} {kind:?}: a CREATE DATABASE in a group at {i}"
                );
                i += n;
            }
            assert_eq!(i, 200);
        }
    }

    #[test]
    fn loads_write_new_points_below_the_newest_from_concurrent_members() {
        let seed = 22;
        let p = plan(WorkloadKind::OutOfOrderLoad, seed);
        let late: usize = (1..=p.steps.len()).map(|t| p.late_new_points(t)).sum();
        let concurrent_late = p
            .groups
            .iter()
            .filter(|(&s, &n)| n >= 2 && (s + 1..=s + n).filter(|&t| p.late_new_points(t) > 0).count() >= 2)
            .count();
        println!("seed {seed}: {late} late new points, {concurrent_late} groups with two late loaders");
        assert!(late > 300, "seed {seed}: {late}");
        assert!(concurrent_late > 20, "seed {seed}: {concurrent_late}");
    }

    #[test]
    fn contested_points_are_written_by_two_members_new_and_existing() {
        let seed = 23;
        let p = plan(WorkloadKind::SamePoint, seed);
        let (any, new) = same_point_writes(&p);
        println!("seed {seed}: {any} second writes of a point in one group, {new} of a new point");
        assert!(any > 60 && new > 20 && any - new > 20, "seed {seed}: {any} {new}");
    }

    #[test]
    fn long_runs_carry_strings_and_deletes_beside_writes_of_one_series() {
        let seed = 24;
        let p = plan(WorkloadKind::PerKeyRuns, seed);
        let (mut long, mut strings, mut mixed_runs) = (0, 0, 0);
        for s in &p.steps {
            let Step::Txn { effects, .. } = s else { continue };
            let mut per_series: BTreeMap<(u8, u8, u8), (usize, usize)> = BTreeMap::new();
            for (k, v) in effects {
                let e = per_series.entry(k.series()).or_default();
                if v.is_some() {
                    e.0 += 1;
                } else {
                    e.1 += 1;
                }
                strings += usize::from(matches!(v, Some(Val::Str(_))));
            }
            long += usize::from(per_series.values().any(|(w, _)| *w >= 20));
            mixed_runs += per_series.values().filter(|(w, d)| *w > 0 && *d > 0).count();
        }
        println!("seed {seed}: {long} transactions with a run of 20+, {strings} strings, {mixed_runs} runs with deletes");
        assert!(long > 60 && strings > 1000 && mixed_runs > 40, "seed {seed}: {long} {strings} {mixed_runs}");
    }
}
