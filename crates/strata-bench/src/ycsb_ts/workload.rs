//! The deterministic YCSB-TS operation streams (DecLog section 5.1): the load
//! phase and the 10-operation transactions of the run, whole or split into
//! disjoint per-worker streams.
//!
//! Rules (all follow from the spec; nothing depends on timing):
//! - **Ownership.** Worker `w` of `W` owns the keys `k` with `k % W == w`.
//!   Only the owner inserts into a key, in the load phase and in the run, so
//!   every key's points are inserted in time order by one thread.
//! - **Inserts.** Point `i` of every key has timestamp
//!   `START_NS + i * interval_ns`. The load phase inserts points
//!   `0..load_points_per_key` time-major (point 0 of every owned key, then
//!   point 1, ...). Run inserts continue round-robin over the owned keys, so
//!   all series advance together as if each reported once per interval.
//!   Value and note come from [`point_payload`].
//! - **Reads and updates** pick the key by the workload's Zipfian over all
//!   keys (scrambled, shared by every worker, so the hot keys are the same
//!   for all workers and their transactions conflict as in workload D), then
//!   a point uniformly among the points of that key visible to the worker
//!   when the transaction starts: the loaded ones plus, for a key it owns, the
//!   ones its own earlier transactions inserted. Those exist whatever the
//!   interleaving of workers, provided the load phase finished first and
//!   every transaction commits (a runner retries aborted ones). A
//!   transaction never reads its own inserts.
//! - **Randomness.** One ChaCha8 key from the seed; stream 0 draws the
//!   rank-to-key permutation, stream `1 + w` worker `w`'s operation kinds,
//!   keys, points and update values. Transaction `t` of worker `w` has id
//!   `t * W + w`; the workers' ids partition `0..txns`.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::model::{point_payload, Op, OpKind, Txn, MAX_VALUE, OPS_PER_TXN};
use super::spec::{MixUnit, SpecError, WorkloadParams, YcsbTsSpec, PPM, START_NS};
use super::zipf::ScrambledZipfian;

/// Inserts per batch of [`YcsbTsGenerator::load_phase`].
pub const LOAD_BATCH_OPS: usize = 1000;

/// ChaCha stream of the rank-to-key permutation.
const PERMUTATION_STREAM: u64 = 0;

/// What every worker of one spec shares.
#[derive(Debug)]
struct Shared {
    spec: YcsbTsSpec,
    params: WorkloadParams,
    /// `None` for a workload without reads and updates.
    keys: Option<ScrambledZipfian>,
}

/// The operation stream of one worker (or of the whole run).
#[derive(Clone, Debug)]
pub struct YcsbTsGenerator {
    shared: Arc<Shared>,
    worker: u64,
    workers: u64,
    owned_keys: u64,
    txn_quota: u64,
    txns_generated: u64,
    run_inserts: u64,
    rng: ChaCha8Rng,
}

impl YcsbTsGenerator {
    /// The whole workload as one stream (worker 0 of 1). Precomputes the
    /// Zipfian's zeta and permutation: O(num_keys).
    pub fn new(spec: &YcsbTsSpec) -> Result<YcsbTsGenerator, SpecError> {
        spec.check()?;
        let params = spec.workload.params();
        let keys = match params.zipf_theta {
            Some(theta) if params.read_ppm + params.update_ppm > 0 => {
                let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
                rng.set_stream(PERMUTATION_STREAM);
                Some(ScrambledZipfian::new(spec.num_keys, theta, &mut rng)?)
            }
            _ => None,
        };
        let shared = Arc::new(Shared { spec: spec.clone(), params, keys });
        YcsbTsGenerator::split(shared, 0, 1)
    }

    /// Worker `worker`'s stream out of `workers`, from the start, sharing
    /// this generator's precomputed Zipfian. The streams of all workers are
    /// disjoint (inserts, transaction ids) and each is deterministic.
    pub fn for_worker(&self, worker: u64, workers: u64) -> Result<YcsbTsGenerator, SpecError> {
        YcsbTsGenerator::split(Arc::clone(&self.shared), worker, workers)
    }

    fn split(shared: Arc<Shared>, worker: u64, workers: u64) -> Result<YcsbTsGenerator, SpecError> {
        let spec = &shared.spec;
        if workers == 0 || worker >= workers {
            return Err(SpecError::BadWorker { worker, workers });
        }
        if workers > spec.num_keys {
            return Err(SpecError::MoreWorkersThanKeys { workers, num_keys: spec.num_keys });
        }
        let owned_keys = (spec.num_keys - worker).div_ceil(workers);
        let txn_quota = spec.txns.saturating_sub(worker).div_ceil(workers);
        // The highest point index this worker may insert into any key.
        let max_run_inserts = txn_quota.saturating_mul(OPS_PER_TXN as u64);
        let last_point_index = spec.load_points_per_key.saturating_add(max_run_inserts.div_ceil(owned_keys));
        if spec.point_ts_ns(last_point_index).is_none() {
            return Err(SpecError::TimestampOverflow { worker, point_index: last_point_index });
        }
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
        rng.set_stream(1 + worker);
        Ok(YcsbTsGenerator {
            shared,
            worker,
            workers,
            owned_keys,
            txn_quota,
            txns_generated: 0,
            run_inserts: 0,
            rng,
        })
    }

    pub fn spec(&self) -> &YcsbTsSpec {
        &self.shared.spec
    }

    pub fn worker(&self) -> u64 {
        self.worker
    }

    pub fn workers(&self) -> u64 {
        self.workers
    }

    /// Keys this worker inserts into.
    pub fn owned_keys(&self) -> u64 {
        self.owned_keys
    }

    pub fn owns(&self, key: u64) -> bool {
        key < self.shared.spec.num_keys && key % self.workers == self.worker
    }

    /// Transactions this worker generates in all.
    pub fn txn_count(&self) -> u64 {
        self.txn_quota
    }

    /// The Zipfian key chooser of reads and updates, if the workload has any.
    pub fn key_popularity(&self) -> Option<&ScrambledZipfian> {
        self.shared.keys.as_ref()
    }

    /// Timestamp of point `point_index` of every key (checked in the
    /// constructor for every point a worker can insert).
    pub fn point_ts_ns(&self, point_index: u64) -> i64 {
        ts_of(&self.shared.spec, point_index)
    }

    /// Points of `key` this worker's next transaction may read or update:
    /// the loaded ones plus, for an owned key, this worker's run inserts.
    pub fn visible_points(&self, key: u64) -> u64 {
        self.visible_points_after(key, self.run_inserts)
    }

    fn visible_points_after(&self, key: u64, run_inserts: u64) -> u64 {
        let loaded = self.shared.spec.load_points_per_key;
        if !self.owns(key) {
            return if key < self.shared.spec.num_keys { loaded } else { 0 };
        }
        let local = key / self.workers;
        let rounds = run_inserts / self.owned_keys;
        let extra = u64::from(local < run_inserts % self.owned_keys);
        loaded + rounds + extra
    }

    /// This worker's load phase in batches of [`LOAD_BATCH_OPS`] inserts.
    /// Independent of the transaction stream: calling it again, before or
    /// after transactions, yields the same batches.
    pub fn load_phase(&self) -> LoadPhase {
        self.load_phase_batched(LOAD_BATCH_OPS)
    }

    /// [`Self::load_phase`] with `batch_ops` inserts per batch (at least 1).
    pub fn load_phase_batched(&self, batch_ops: usize) -> LoadPhase {
        LoadPhase {
            shared: Arc::clone(&self.shared),
            worker: self.worker,
            workers: self.workers,
            owned_keys: self.owned_keys,
            batch_ops: batch_ops.max(1),
            next_insert: 0,
            total_inserts: self.owned_keys.saturating_mul(self.shared.spec.load_points_per_key),
        }
    }

    /// The next transaction, `None` once [`Self::txn_count`] were generated.
    pub fn next_txn(&mut self) -> Option<Txn> {
        if self.txns_generated >= self.txn_quota {
            return None;
        }
        let id = self.txns_generated * self.workers + self.worker;
        self.txns_generated += 1;
        let inserts_before = self.run_inserts;
        let txn_kind = match self.shared.spec.mix_unit {
            MixUnit::Transaction => Some(self.draw_kind()),
            MixUnit::Operation => None,
        };
        let ops = std::array::from_fn(|_| {
            let kind = txn_kind.unwrap_or_else(|| self.draw_kind());
            self.op(kind, inserts_before)
        });
        Some(Txn { id, ops })
    }

    fn draw_kind(&mut self) -> OpKind {
        let draw = self.rng.gen_range(0..PPM);
        self.shared.params.kind_for(draw)
    }

    fn op(&mut self, kind: OpKind, inserts_before: u64) -> Op {
        let keys = match (kind, self.shared.keys.as_ref()) {
            (OpKind::Read | OpKind::Update, Some(keys)) => keys,
            // A workload without a key chooser has no reads or updates.
            _ => return self.run_insert(),
        };
        let key = keys.sample(&mut self.rng);
        let visible = self.visible_points_after(key, inserts_before);
        let ts_ns = ts_of(&self.shared.spec, self.rng.gen_range(0..visible));
        match kind {
            OpKind::Update => Op::Update { key, ts_ns, value: self.rng.gen_range(0.0..MAX_VALUE) },
            _ => Op::Read { key, ts_ns },
        }
    }

    /// The next round-robin insert into this worker's keys.
    fn run_insert(&mut self) -> Op {
        let count = self.run_inserts;
        self.run_inserts += 1;
        let key = self.worker + (count % self.owned_keys) * self.workers;
        let point_index = self.shared.spec.load_points_per_key + count / self.owned_keys;
        insert_op(&self.shared.spec, key, point_index)
    }
}

/// Timestamp of point `point_index` of any key; saturates, but the
/// constructor checked every index a worker can insert.
fn ts_of(spec: &YcsbTsSpec, point_index: u64) -> i64 {
    let steps = i64::try_from(point_index).unwrap_or(i64::MAX);
    START_NS.saturating_add(steps.saturating_mul(spec.interval_ns))
}

fn insert_op(spec: &YcsbTsSpec, key: u64, point_index: u64) -> Op {
    let (value, note) = point_payload(spec.seed, key, point_index);
    Op::Insert { key, ts_ns: ts_of(spec, point_index), value, note }
}

impl Iterator for YcsbTsGenerator {
    type Item = Txn;

    fn next(&mut self) -> Option<Txn> {
        self.next_txn()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.txn_quota - self.txns_generated).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

/// Batches of load-phase inserts of one worker, time-major.
#[derive(Clone, Debug)]
pub struct LoadPhase {
    shared: Arc<Shared>,
    worker: u64,
    workers: u64,
    owned_keys: u64,
    batch_ops: usize,
    next_insert: u64,
    total_inserts: u64,
}

impl LoadPhase {
    /// Inserts not yet returned.
    pub fn remaining_inserts(&self) -> u64 {
        self.total_inserts - self.next_insert
    }
}

impl Iterator for LoadPhase {
    type Item = Vec<Op>;

    fn next(&mut self) -> Option<Vec<Op>> {
        if self.next_insert >= self.total_inserts {
            return None;
        }
        let end = self.total_inserts.min(self.next_insert.saturating_add(self.batch_ops as u64));
        let (owned, workers, worker) = (self.owned_keys, self.workers, self.worker);
        let batch = (self.next_insert..end)
            .map(|i| insert_op(&self.shared.spec, worker + (i % owned) * workers, i / owned))
            .collect();
        self.next_insert = end;
        Some(batch)
    }
}
