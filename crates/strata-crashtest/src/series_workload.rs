//! The series engine's crash workload and oracle, shared by the PMem
//! (simulator) and SSD (fault-injecting file system) lines.
//!
//! Transactions are write requests of one to three float points over six
//! series (some overwrite or land before earlier points) and range deletes;
//! the engine checkpoints every few transactions. Serial logging recovers a
//! prefix of the log, so the oracle is: the recovered state equals the state
//! after exactly the first `n` transactions for some `n` at least the last
//! acknowledged one. A state matching no prefix is a partial or reordered
//! transaction (`partial`); a matching prefix shorter than the acknowledged
//! ones counts the acknowledged transactions past it as `lost`.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{CheckResult, CrashCheckError};
use crate::oracle::{AckLog, OracleCounts};
use rand::{Rng, SeedableRng};
use strata_media::TxnId;
use strata_series::{FieldValue, Point, SeriesEngine, SeriesStore, TimeRange};

pub const DB: &str = "db";
pub const HOSTS: [&str; 3] = ["a", "b", "c"];
pub const FIELDS: [&str; 2] = ["u", "v"];

/// A seeded workload with the state after each of its prefixes: what both
/// series crash lines run and check against.
pub struct SeriesPlan {
    pub seed: u64,
    pub txns: Vec<SeriesTxn>,
    states: Vec<SeriesState>,
}

impl SeriesPlan {
    pub fn new(seed: u64, txns: u64) -> SeriesPlan {
        SeriesPlan::from_txns(seed, workload(seed, txns))
    }

    /// A plan of other transactions over the same series (`seed` names the run).
    pub fn from_txns(seed: u64, txns: Vec<SeriesTxn>) -> SeriesPlan {
        let states = prefix_states(&txns);
        SeriesPlan { seed, txns, states }
    }

    /// Creates the database, then runs every transaction, acknowledging
    /// each; every `checkpoint_every` transactions calls `checkpoint`.
    pub fn run(
        &self,
        engine: &SeriesEngine,
        acks: &AckLog,
        checkpoint_every: u64,
        mut checkpoint: impl FnMut(),
    ) {
        engine.create_database(DB).expect("create db");
        for (i, txn) in self.txns.iter().enumerate() {
            let t = i as u64 + 1;
            match execute(engine, txn) {
                Ok(()) => acks.ack(TxnId(t)),
                Err(e) => panic!("seed {}: T{t} failed: {e}", self.seed),
            }
            if t.is_multiple_of(checkpoint_every) {
                checkpoint();
            }
        }
    }

    /// The oracle over what `store` recovered (None: nothing was ever formatted).
    pub fn check(&self, store: Option<&dyn SeriesStore>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let state = match store {
            Some(s) => read_state(s)?,
            None => SeriesState::new(),
        };
        Ok(check_prefix(&self.states, &state, acked))
    }
}

/// One transaction of the workload.
#[derive(Clone, Debug)]
pub enum SeriesTxn {
    Write(Vec<Point>),
    Delete { host: &'static str, range: TimeRange },
}

/// Engine state as (host, field) -> time -> value bits.
pub type SeriesState = BTreeMap<(String, String), BTreeMap<i64, u64>>;

pub fn workload(seed: u64, txns: u64) -> Vec<SeriesTxn> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x5e71e5);
    let mut next_ts = 100i64;
    (1..=txns)
        .map(|t| {
            if t.is_multiple_of(7) {
                let from = rng.gen_range(0..next_ts.max(1));
                let host = HOSTS[rng.gen_range(0..HOSTS.len())];
                return SeriesTxn::Delete { host, range: TimeRange { min_ns: from, max_ns: from + 40 } };
            }
            let points = (0..rng.gen_range(1..=3))
                .map(|j| {
                    let ts = if rng.gen_bool(0.3) {
                        rng.gen_range(0..next_ts) // an overwrite or an out-of-order point
                    } else {
                        next_ts += 10;
                        next_ts
                    };
                    let f = FIELDS[rng.gen_range(0..FIELDS.len())];
                    Point {
                        measurement: "m".into(),
                        tags: vec![("host".into(), HOSTS[rng.gen_range(0..HOSTS.len())].into())],
                        fields: vec![(f.into(), FieldValue::Float(t as f64 * 1000.0 + j as f64))],
                        timestamp_ns: ts,
                    }
                })
                .collect();
            SeriesTxn::Write(points)
        })
        .collect()
}

/// Applies a transaction to the engine; returns once it is acknowledged.
pub fn execute(store: &dyn SeriesStore, txn: &SeriesTxn) -> Result<(), CrashCheckError> {
    match txn {
        SeriesTxn::Write(points) => {
            store.write(DB, points).map(|_| ()).map_err(CrashCheckError::step("write"))
        }
        SeriesTxn::Delete { host, range } => {
            let ids: Vec<_> = store
                .series(DB, "m")
                .map_err(CrashCheckError::step("series"))?
                .into_iter()
                .filter(|s| s.tags[0].1 == *host)
                .map(|s| s.id)
                .collect();
            store.delete(DB, &ids, *range).map(|_| ()).map_err(CrashCheckError::step("delete"))
        }
    }
}

fn apply(state: &mut SeriesState, txn: &SeriesTxn) {
    match txn {
        SeriesTxn::Write(points) => {
            for p in points {
                let (f, v) = &p.fields[0];
                let FieldValue::Float(x) = v else { unreachable!("the workload writes floats") };
                state
                    .entry((p.tags[0].1.clone(), f.clone()))
                    .or_default()
                    .insert(p.timestamp_ns, x.to_bits());
            }
        }
        SeriesTxn::Delete { host, range } => {
            for ((h, _), points) in state.iter_mut() {
                if h == host {
                    points.retain(|t, _| !range.contains(*t));
                }
            }
        }
    }
}

/// The state after each prefix: `states[n]` = after transactions 1..=n.
pub fn prefix_states(txns: &[SeriesTxn]) -> Vec<SeriesState> {
    let mut states = vec![SeriesState::new()];
    let mut s = SeriesState::new();
    for t in txns {
        apply(&mut s, t);
        states.push(s.clone());
    }
    states
}

/// Reads the whole recovered state (empty series are dropped, as in the model).
pub fn read_state(store: &dyn SeriesStore) -> Result<SeriesState, CrashCheckError> {
    if !store.databases().iter().any(|d| d == DB) {
        return Ok(SeriesState::new());
    }
    let series = store.series(DB, "m").map_err(CrashCheckError::step("series"))?;
    let ids: Vec<_> = series.iter().map(|s| s.id).collect();
    let data = store.read(DB, &ids, TimeRange::ALL).map_err(CrashCheckError::step("read"))?;
    let mut state = SeriesState::new();
    for (s, points) in series.iter().zip(data) {
        let mut m = BTreeMap::new();
        for (t, v) in points {
            let FieldValue::Float(x) = v else {
                return Err(CrashCheckError::inconsistent(format!("non-float value {v:?}")));
            };
            m.insert(t, x.to_bits());
        }
        state.insert((s.tags[0].1.clone(), s.field.clone()), m);
    }
    Ok(state)
}

fn normalized(s: &SeriesState) -> SeriesState {
    s.iter().filter(|(_, p)| !p.is_empty()).map(|(k, p)| (k.clone(), p.clone())).collect()
}

/// The oracle (see the module comment).
pub fn check_prefix(
    states: &[SeriesState],
    recovered: &SeriesState,
    acked: &BTreeSet<TxnId>,
) -> (OracleCounts, Option<String>) {
    let recovered = normalized(recovered);
    let last_acked = acked.iter().next_back().map_or(0, |t| t.0) as usize;
    let matching: Vec<usize> = (0..states.len()).filter(|&n| normalized(&states[n]) == recovered).collect();
    let mut counts = OracleCounts::default();
    if let Some(&n) = matching.iter().find(|&&n| n >= last_acked) {
        let _ = n;
        return (counts, None);
    }
    if let Some(&n) = matching.last() {
        counts.lost = acked.iter().filter(|t| t.0 as usize > n).count() as u64;
        return (counts, Some(format!("recovered the state after T{n}, but T{last_acked} was acknowledged")));
    }
    counts.partial = 1;
    (
        counts,
        Some(format!("the recovered state matches no prefix of the workload ({} series)", recovered.len())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oracle_accepts_a_prefix_and_flags_loss_and_partial_states() {
        let txns = workload(1, 20);
        let states = prefix_states(&txns);
        let acked: BTreeSet<TxnId> = (1..=10).map(TxnId).collect();
        assert!(check_prefix(&states, &states[12], &acked).0.is_clean());
        let (c, _) = check_prefix(&states, &states[8], &acked);
        assert_eq!(c.lost, 2);
        let mut odd = states[12].clone();
        odd.entry(("z".into(), "u".into())).or_default().insert(1, 1);
        assert_eq!(check_prefix(&states, &odd, &acked).0.partial, 1);
    }
}
