//! The series engine's DecLog crash workload (declog.txt 4.1-4.6 end to end):
//! seeded transactions of inserts, updates (overwrites of existing points),
//! out-of-order inserts, point deletes and reads over a few skewed series in
//! two databases (the second created part-way, a DecLog barrier), with a
//! reference model of the state after every prefix and each point's history
//! of writers, which the oracle (`crate::series_declog_oracle`) checks
//! recovered states against.
//!
//! Every written value is unique in the run, so a recovered value names the
//! transaction that wrote it. Within one transaction every point is touched
//! by at most one operation (a read never sees its own transaction's write).
//!
//! [`WorkloadKind`] picks the shape: the mixed transactions above, grouped
//! by the crash line; or one of the concurrent-writer shapes of
//! `crate::series_declog_shapes`, which choose their own groups (the
//! members of an `execute_group`, in the order the engine serializes them).

use std::collections::{BTreeMap, BTreeSet};

use crate::error::CrashCheckError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_series::{FieldValue, Point, SeriesStore, TimeRange, TxnOp, ValueRef};

pub const MEASUREMENT: &str = "m";
/// The databases: step 1 creates the first, a step a third of the way the second.
pub const DATABASES: [&str; 2] = ["db", "db2"];
pub const HOSTS: [&str; 3] = ["a", "b", "c"];
/// Field 0 holds floats, field 1 integers, field 2 strings.
pub const FIELDS: [&str; 3] = ["u", "v", "s"];
/// The fields the mixed workload writes (floats and integers).
pub(crate) const MIXED_FIELDS: usize = 2;
/// Percent chance of each host (skew: most transactions hit host "a").
const HOST_WEIGHTS: [u32; 3] = [60, 25, 15];
/// Existing points are picked among a series' newest few most of the time,
/// so transactions touch the same points.
const HOT_POINTS: usize = 4;
const HOT_PERCENT: u32 = 70;
/// Timestamp step between appended points.
pub(crate) const TS_STEP: i64 = 10;

/// One value of one series at one time: (database, host, field) indexes and
/// the timestamp.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PointKey {
    pub db: u8,
    pub host: u8,
    pub field: u8,
    pub ts: i64,
}

impl PointKey {
    pub(crate) fn series(&self) -> (u8, u8, u8) {
        (self.db, self.host, self.field)
    }

    pub fn value_ref(&self) -> ValueRef {
        ValueRef {
            measurement: MEASUREMENT.into(),
            tags: vec![("host".into(), HOSTS[self.host as usize].into())],
            field: FIELDS[self.field as usize].into(),
        }
    }
}

impl std::fmt::Display for PointKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (db, h, fl) =
            (DATABASES[self.db as usize], HOSTS[self.host as usize], FIELDS[self.field as usize]);
        write!(f, "{db}/{h}#{fl}@{}", self.ts)
    }
}

/// A stored value, compared bit for bit.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Val {
    FloatBits(u64),
    Int(i64),
    /// The string [`string_value`] of this number.
    Str(i64),
}

impl Val {
    /// The unique value of operation `op` of step `step` in field `field`.
    /// Operations 0 to 15 keep the numbering of the first workloads (so the
    /// bytes they log, hence their crash points, stay as they were); larger
    /// ones (transactions of many points) are numbered from 2^40 up.
    pub fn unique(step: usize, op: usize, field: u8) -> Val {
        let n =
            if op < 16 { step as i64 * 16 + op as i64 } else { (1 << 40) + step as i64 * 1024 + op as i64 };
        match field {
            0 => Val::FloatBits((n as f64 + 0.25).to_bits()),
            1 => Val::Int(n),
            _ => Val::Str(n),
        }
    }

    pub fn field_value(self) -> FieldValue {
        match self {
            Val::FloatBits(b) => FieldValue::Float(f64::from_bits(b)),
            Val::Int(i) => FieldValue::Integer(i),
            Val::Str(n) => FieldValue::String(string_value(n)),
        }
    }

    pub fn from_field_value(v: &FieldValue) -> Result<Val, CrashCheckError> {
        match v {
            FieldValue::Float(x) => Ok(Val::FloatBits(x.to_bits())),
            FieldValue::Integer(i) => Ok(Val::Int(*i)),
            FieldValue::String(s) => string_number(s)
                .map(Val::Str)
                .ok_or_else(|| CrashCheckError::inconsistent(format!("a string no step wrote: {s:?}"))),
            other => Err(CrashCheckError::inconsistent(format!("unexpected value {other:?}"))),
        }
    }
}

/// Longest filler of a string value: a run of 60 such strings of one
/// series outgrows one entry's payload in the small streams of the lines.
const MAX_STRING_FILLER: u64 = 150;

/// The string value number `n`: `s<n>:` and 0 to [`MAX_STRING_FILLER`]
/// letters, the length and letters depending on `n`.
pub fn string_value(n: i64) -> String {
    let len = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    let len = len % (MAX_STRING_FILLER + 1);
    let mut s = format!("s{n}:");
    s.extend((0..len).map(|i| char::from(b'a' + ((n as u64).wrapping_add(i) % 26) as u8)));
    s
}

/// The number whose [`string_value`] is exactly `s`.
fn string_number(s: &str) -> Option<i64> {
    let n: i64 = s.strip_prefix('s')?.split(':').next()?.parse().ok()?;
    (string_value(n) == s).then_some(n)
}

/// The engine state the oracle compares: which databases exist and every point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Model {
    pub databases: BTreeSet<u8>,
    pub points: BTreeMap<PointKey, Val>,
}

/// One effect of a transaction on a point: a new value, or a delete.
pub type Effect = (PointKey, Option<Val>);

/// One acknowledged unit of the workload.
#[derive(Clone, Debug)]
pub enum Step {
    /// `CREATE DATABASE` (a DecLog barrier: a whole checkpoint).
    CreateDatabase(u8),
    /// `SeriesEngine::execute` of `ops` in database `db`.
    Txn {
        db: u8,
        ops: Vec<TxnOp>,
        /// What the transaction does to each point it writes or deletes.
        effects: Vec<Effect>,
        /// Each read's point and the value it must return, in op order.
        reads: Vec<(PointKey, Option<Val>)>,
    },
}

impl Step {
    /// Every point the step writes, deletes or reads.
    pub fn touched(&self) -> BTreeSet<PointKey> {
        match self {
            Step::CreateDatabase(_) => BTreeSet::new(),
            Step::Txn { effects, reads, .. } => {
                effects.iter().map(|(k, _)| *k).chain(reads.iter().map(|(k, _)| *k)).collect()
            }
        }
    }
}

/// Applies `step` to `model`.
pub fn apply(model: &mut Model, step: &Step) {
    match step {
        Step::CreateDatabase(db) => {
            model.databases.insert(*db);
        }
        Step::Txn { effects, .. } => {
            for (k, v) in effects {
                match v {
                    Some(v) => model.points.insert(*k, *v),
                    None => model.points.remove(k),
                };
            }
        }
    }
}

/// A seeded workload, the state after each of its prefixes and each
/// point's writers. Step `i` (1-based) is acknowledged as `TxnId(i)`.
pub struct DeclogPlan {
    /// `steps[i - 1]` is step `i`.
    pub steps: Vec<Step>,
    /// The groups the workload chose (concurrent-writer shapes): 0-based
    /// index of a group's first step -> its size. Empty for the mixed
    /// workload, which the crash line groups.
    pub groups: BTreeMap<usize, usize>,
    /// `states[n]`: the state after steps 1..=n (`states[0]`: nothing;
    /// step 1 creates the first database).
    pub states: Vec<Model>,
    /// Per point, every (step, effect) in step order.
    pub histories: BTreeMap<PointKey, Vec<(usize, Option<Val>)>>,
}

/// Which workload a plan runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// Inserts, updates, out-of-order inserts, deletes and reads, a few per
    /// transaction; the crash line groups them.
    Mixed,
    /// Groups of transactions loading new points below their series'
    /// newest timestamp in interleaved time windows, as concurrent
    /// connections back-filling alternate windows do.
    OutOfOrderLoad,
    /// Groups whose members write (and read, delete) the same points, new
    /// or existing.
    SamePoint,
    /// Transactions of 20 to 60 points of one to three series (floats,
    /// integers, strings), with deletes in the same series: long per-key
    /// entries, split at the largest payload.
    PerKeyRuns,
}

/// Workload knobs.
#[derive(Copy, Clone, Debug)]
pub struct WorkloadShape {
    pub steps: usize,
    /// Most operations per transaction of the mixed kind.
    pub max_ops: usize,
    pub kind: WorkloadKind,
}

impl WorkloadShape {
    /// `steps` steps of the mixed workload, up to 4 operations each.
    pub fn mixed(steps: usize) -> WorkloadShape {
        WorkloadShape { steps, max_ops: 4, kind: WorkloadKind::Mixed }
    }
}

impl DeclogPlan {
    pub fn new(seed: u64, shape: WorkloadShape) -> DeclogPlan {
        let (steps, groups) = generate(seed, shape);
        let mut model = Model::default();
        let mut states = vec![model.clone()];
        let mut histories: BTreeMap<PointKey, Vec<(usize, Option<Val>)>> = BTreeMap::new();
        for (i, s) in steps.iter().enumerate() {
            apply(&mut model, s);
            states.push(model.clone());
            if let Step::Txn { effects, .. } = s {
                for (k, v) in effects {
                    histories.entry(*k).or_default().push((i + 1, *v));
                }
            }
        }
        DeclogPlan { steps, groups, states, histories }
    }

    /// The size of the group the workload chose to start at step index
    /// `i` (0-based), if it chose groups.
    pub fn group_at(&self, i: usize) -> Option<usize> {
        if self.groups.is_empty() {
            return None;
        }
        Some(self.groups.get(&i).copied().unwrap_or(1))
    }

    /// How many points step `t` (1-based) writes that did not exist before
    /// it and lie below the newest point their series had then.
    pub fn late_new_points(&self, t: usize) -> usize {
        let Some(Step::Txn { effects, .. }) = self.steps.get(t - 1) else { return 0 };
        let before = &self.states[t - 1];
        effects
            .iter()
            .filter(|(k, v)| {
                let newest = before
                    .points
                    .range(PointKey { ts: i64::MIN, ..*k }..=PointKey { ts: i64::MAX, ..*k })
                    .next_back()
                    .map(|(n, _)| n.ts);
                v.is_some() && !before.points.contains_key(k) && newest.is_some_and(|n| k.ts < n)
            })
            .count()
    }

    /// The step that wrote `value` at `key`, if any.
    #[cfg(test)]
    pub fn writer_of(&self, key: &PointKey, value: Val) -> Option<usize> {
        self.histories.get(key)?.iter().find(|(_, v)| *v == Some(value)).map(|(s, _)| *s)
    }

    /// The largest timestamp any step wrote, deleted or read.
    pub fn max_ts(&self) -> i64 {
        self.histories.keys().map(|k| k.ts).max().unwrap_or(0)
    }
}

/// Per series: the timestamps with a value, the largest ever planned, and
/// the points deleted while they had a value (and not written since).
#[derive(Default)]
pub(crate) struct SeriesGen {
    pub(crate) live: BTreeSet<i64>,
    pub(crate) max_ts: i64,
    pub(crate) deleted: BTreeSet<i64>,
}

/// The state of a workload being generated (the shapes of
/// `crate::series_declog_shapes` build on it).
pub(crate) struct Generator {
    pub(crate) rng: ChaCha8Rng,
    pub(crate) series: BTreeMap<(u8, u8, u8), SeriesGen>,
    pub(crate) model: Model,
}

impl Generator {
    pub(crate) fn host(&mut self) -> u8 {
        let mut r = self.rng.gen_range(0..HOST_WEIGHTS.iter().sum::<u32>());
        for (h, w) in HOST_WEIGHTS.iter().enumerate() {
            if r < *w {
                return h as u8;
            }
            r -= w;
        }
        0
    }

    pub(crate) fn series_key(&mut self, db: u8) -> (u8, u8, u8) {
        let host = self.host();
        let field = self.rng.gen_range(0..MIXED_FIELDS) as u8;
        (db, host, field)
    }

    /// An existing point of the series, mostly among its newest few.
    pub(crate) fn existing(&mut self, s: (u8, u8, u8)) -> Option<i64> {
        let live = &self.series.get(&s)?.live;
        if live.is_empty() {
            return None;
        }
        let n = live.len();
        let i = if self.rng.gen_range(0..100) < HOT_PERCENT {
            n - 1 - self.rng.gen_range(0..n.min(HOT_POINTS))
        } else {
            self.rng.gen_range(0..n)
        };
        live.iter().nth(i).copied()
    }

    /// A timestamp of the series with no value: appended or in a gap.
    pub(crate) fn fresh(&mut self, s: (u8, u8, u8), out_of_order: bool) -> i64 {
        let g = self.series.entry(s).or_default();
        if out_of_order && g.max_ts > TS_STEP {
            for _ in 0..8 {
                let ts = self.rng.gen_range(1..g.max_ts);
                if !g.live.contains(&ts) {
                    return ts;
                }
            }
        }
        g.max_ts + TS_STEP
    }

    pub(crate) fn record(&mut self, k: PointKey, v: Option<Val>) {
        let g = self.series.entry(k.series()).or_default();
        g.max_ts = g.max_ts.max(k.ts);
        match v {
            Some(v) => {
                g.live.insert(k.ts);
                g.deleted.remove(&k.ts);
                self.model.points.insert(k, v);
            }
            None => {
                if g.live.remove(&k.ts) {
                    g.deleted.insert(k.ts);
                }
                self.model.points.remove(&k);
            }
        }
    }

    pub(crate) fn txn(&mut self, step: usize, db: u8, max_ops: usize) -> Step {
        let mut ops = Vec::new();
        let mut effects: Vec<Effect> = Vec::new();
        let mut reads = Vec::new();
        let mut used: BTreeSet<PointKey> = BTreeSet::new();
        let n_ops = self.rng.gen_range(1..=max_ops);
        for j in 0..n_ops {
            let s = self.series_key(db);
            let kind = self.rng.gen_range(0..100);
            let existing = self.existing(s);
            let at = |ts: i64| PointKey { db: s.0, host: s.1, field: s.2, ts };
            match (kind, existing) {
                // Update (overwrite of an existing point).
                (0..=29, Some(ts)) if !used.contains(&at(ts)) => {
                    let k = at(ts);
                    self.write(step, j, k, &mut ops, &mut effects, &mut used);
                }
                // Point delete (of an existing point; now and then of an absent one).
                (30..=44, Some(ts)) if !used.contains(&at(ts)) => {
                    let k = if self.rng.gen_range(0..10) == 0 { at(self.fresh(s, true)) } else { at(ts) };
                    if used.insert(k) {
                        ops.push(TxnOp::Delete { value: k.value_ref(), ts: k.ts });
                        effects.push((k, None));
                        self.record(k, None);
                    }
                }
                // Read (mostly of an existing point).
                (45..=62, Some(ts)) if !used.contains(&at(ts)) => {
                    let k = if self.rng.gen_range(0..8) == 0 { at(self.fresh(s, true)) } else { at(ts) };
                    if used.insert(k) {
                        ops.push(TxnOp::Read { value: k.value_ref(), ts: k.ts });
                        reads.push((k, self.model.points.get(&k).copied()));
                    }
                }
                // Insert: appended, or out of order into a gap.
                _ => {
                    let out_of_order = self.rng.gen_range(0..100) < 20;
                    let k = at(self.fresh(s, out_of_order));
                    if !used.contains(&k) {
                        self.write(step, j, k, &mut ops, &mut effects, &mut used);
                    }
                }
            }
        }
        if ops.is_empty() {
            let s = self.series_key(db);
            let k = PointKey { db: s.0, host: s.1, field: s.2, ts: self.fresh(s, false) };
            self.write(step, 0, k, &mut ops, &mut effects, &mut used);
        }
        Step::Txn { db, ops, effects, reads }
    }

    /// A write of `k`; now and then the same point also writes the host's
    /// other field (one point, two series), if that point is free.
    fn write(
        &mut self,
        step: usize,
        op: usize,
        k: PointKey,
        ops: &mut Vec<TxnOp>,
        effects: &mut Vec<Effect>,
        used: &mut BTreeSet<PointKey>,
    ) {
        used.insert(k);
        let mut keys = vec![k];
        let other = PointKey { field: 1 - k.field, ..k };
        if self.rng.gen_range(0..100) < 25 && !used.contains(&other) {
            used.insert(other);
            keys.push(other);
        }
        let fields = keys
            .iter()
            .map(|k| {
                let v = Val::unique(step, op, k.field);
                effects.push((*k, Some(v)));
                self.record(*k, Some(v));
                (FIELDS[k.field as usize].to_string(), v.field_value())
            })
            .collect();
        ops.push(TxnOp::Write(Point {
            measurement: MEASUREMENT.into(),
            tags: vec![("host".into(), HOSTS[k.host as usize].into())],
            fields,
            timestamp_ns: k.ts,
        }));
    }
}

/// The steps, and the groups the shape chose (none for the mixed kind).
fn generate(seed: u64, shape: WorkloadShape) -> (Vec<Step>, BTreeMap<usize, usize>) {
    let mut g = Generator {
        rng: ChaCha8Rng::seed_from_u64(seed ^ 0xdec1_0600),
        series: BTreeMap::new(),
        model: Model::default(),
    };
    let create_second_at = (shape.steps / 3).max(2);
    if shape.kind != WorkloadKind::Mixed {
        return crate::series_declog_shapes::generate(&mut g, shape, create_second_at);
    }
    let steps = (1..=shape.steps)
        .map(|step| {
            if step == 1 {
                return Step::CreateDatabase(0);
            }
            if step == create_second_at {
                return Step::CreateDatabase(1);
            }
            let db = if step > create_second_at && g.rng.gen_range(0..100) < 25 { 1 } else { 0 };
            g.txn(step, db, shape.max_ops)
        })
        .collect();
    (steps, BTreeMap::new())
}

/// Reads the whole state of `store` (databases of the workload only).
pub fn read_model(store: &dyn SeriesStore) -> Result<Model, CrashCheckError> {
    let mut model = Model::default();
    let existing = store.databases();
    for (d, name) in DATABASES.iter().enumerate() {
        if !existing.iter().any(|e| e == name) {
            continue;
        }
        model.databases.insert(d as u8);
        let series = store.series(name, MEASUREMENT).map_err(CrashCheckError::step("series"))?;
        let ids: Vec<_> = series.iter().map(|s| s.id).collect();
        let data = store.read(name, &ids, TimeRange::ALL).map_err(CrashCheckError::step("read"))?;
        for (s, points) in series.iter().zip(data) {
            let host = HOSTS.iter().position(|h| s.tags.first().is_some_and(|(_, v)| v == h));
            let field = FIELDS.iter().position(|f| *f == s.field);
            let (Some(host), Some(field)) = (host, field) else {
                return Err(CrashCheckError::inconsistent(format!(
                    "unexpected series {:?}#{} in {name}",
                    s.tags, s.field
                )));
            };
            for (ts, v) in points {
                let key = PointKey { db: d as u8, host: host as u8, field: field as u8, ts };
                model.points.insert(key, Val::from_field_value(&v)?);
            }
        }
    }
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workload_mixes_every_operation_and_repeats_points() {
        let plan = DeclogPlan::new(7, WorkloadShape::mixed(300));
        let (mut writes, mut deletes, mut reads, mut creates) = (0, 0, 0, 0);
        for s in &plan.steps {
            match s {
                Step::CreateDatabase(_) => creates += 1,
                Step::Txn { ops, .. } => {
                    for op in ops {
                        match op {
                            TxnOp::Write(_) => writes += 1,
                            TxnOp::Delete { .. } => deletes += 1,
                            TxnOp::Read { .. } => reads += 1,
                        }
                    }
                }
            }
        }
        assert_eq!(creates, 2);
        assert!(writes > 200 && deletes > 30 && reads > 40, "{writes} {deletes} {reads}");
        let rewritten = plan.histories.values().filter(|h| h.len() > 1).count();
        assert!(rewritten > 30, "only {rewritten} points are touched twice");
        let hot = plan.histories.values().map(|h| h.len()).max().unwrap();
        assert!(hot >= 4, "the hottest point has {hot} writers");
        assert_eq!(plan.states.len(), 301);
        assert!(plan.states[300].databases.contains(&1));
    }

    #[test]
    fn values_are_unique_and_name_their_writer() {
        let plan = DeclogPlan::new(3, WorkloadShape::mixed(120));
        let mut seen = BTreeSet::new();
        for (k, h) in &plan.histories {
            for (step, v) in h {
                if let Some(v) = v {
                    assert!(seen.insert(*v), "{v:?} written twice");
                    assert_eq!(plan.writer_of(k, *v), Some(*step));
                }
            }
        }
    }

    #[test]
    fn reads_expect_the_model_value_before_the_transaction() {
        let plan = DeclogPlan::new(11, WorkloadShape::mixed(150));
        let mut some = 0;
        for (i, s) in plan.steps.iter().enumerate() {
            if let Step::Txn { reads, .. } = s {
                for (k, v) in reads {
                    assert_eq!(plan.states[i].points.get(k).copied(), *v, "step {} reads {k}", i + 1);
                    some += v.is_some() as usize;
                }
            }
        }
        assert!(some > 20, "only {some} reads find a value");
    }
}
