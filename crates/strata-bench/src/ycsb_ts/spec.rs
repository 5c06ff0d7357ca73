//! What a YCSB-TS run generates: the four workloads of DecLog's Table 1
//! (section 5.1) and the spec (keys, load size, transactions, seed,
//! interval), with its validation.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::model::OpKind;
use super::zipf::{ZipfError, MAX_SCRAMBLED_ITEMS};

/// Parts per million: operation mixes are drawn as integers in `0..PPM`.
pub const PPM: u32 = 1_000_000;
/// 2016-01-01T00:00:00Z, the first load-phase timestamp of every key.
pub const START_NS: i64 = 1_451_606_400_000_000_000;
/// YCSB-TS-like reporting interval of a series.
pub const DEFAULT_INTERVAL_NS: i64 = 10_000_000_000;

/// DecLog's workloads (Table 1).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Workload {
    A,
    B,
    C,
    D,
}

/// One row of Table 1.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadParams {
    pub insert_ppm: u32,
    pub read_ppm: u32,
    pub update_ppm: u32,
    /// Zipf parameter of the key choice of reads and updates; `None` for a
    /// workload without them.
    pub zipf_theta: Option<f64>,
}

impl WorkloadParams {
    pub fn ppm(&self, kind: OpKind) -> u32 {
        match kind {
            OpKind::Insert => self.insert_ppm,
            OpKind::Read => self.read_ppm,
            OpKind::Update => self.update_ppm,
        }
    }

    pub fn fraction(&self, kind: OpKind) -> f64 {
        self.ppm(kind) as f64 / PPM as f64
    }

    /// The kind a uniform draw in `0..PPM` stands for.
    pub fn kind_for(&self, draw_ppm: u32) -> OpKind {
        if draw_ppm < self.insert_ppm {
            OpKind::Insert
        } else if draw_ppm < self.insert_ppm + self.read_ppm {
            OpKind::Read
        } else {
            OpKind::Update
        }
    }
}

impl Workload {
    pub const ALL: [Workload; 4] = [Workload::A, Workload::B, Workload::C, Workload::D];

    /// Table 1: A 100 % insert; B 90 / 9.9 / 0.1, theta 0.9; C 90 / 9 / 1,
    /// theta 0.9; D 90 / 9 / 1, theta 1.1 (insert / read / update).
    pub fn params(self) -> WorkloadParams {
        let (insert_ppm, read_ppm, update_ppm, zipf_theta) = match self {
            Workload::A => (1_000_000, 0, 0, None),
            Workload::B => (900_000, 99_000, 1_000, Some(0.9)),
            Workload::C => (900_000, 90_000, 10_000, Some(0.9)),
            Workload::D => (900_000, 90_000, 10_000, Some(1.1)),
        };
        WorkloadParams { insert_ppm, read_ppm, update_ppm, zipf_theta }
    }

    pub fn name(self) -> &'static str {
        match self {
            Workload::A => "A",
            Workload::B => "B",
            Workload::C => "C",
            Workload::D => "D",
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = SpecError;

    /// `a`..`d`, either case.
    fn from_str(s: &str) -> Result<Workload, SpecError> {
        Workload::ALL
            .into_iter()
            .find(|w| w.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| SpecError::UnknownWorkload(s.to_string()))
    }
}

/// What the mix of Table 1 picks.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum MixUnit {
    /// Each operation's kind is drawn independently (the default).
    Operation,
    /// One kind is drawn per transaction and all its 10 operations have it:
    /// the reading of "a given ratio for insert, read, and update
    /// transactions" under which read-only transactions exist (section 5.2's
    /// recovery discussion mentions them).
    Transaction,
}

/// A YCSB-TS run: equal specs generate equal operations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct YcsbTsSpec {
    pub workload: Workload,
    /// Series keys `0..num_keys`.
    pub num_keys: u64,
    /// Points per key inserted by the load phase, before any transaction.
    pub load_points_per_key: u64,
    /// Transactions of the run, over all workers.
    pub txns: u64,
    pub seed: u64,
    /// Time between two consecutive points of one key.
    pub interval_ns: i64,
    pub mix_unit: MixUnit,
}

impl YcsbTsSpec {
    /// 1000 keys with 100 loaded points each, 10,000 transactions, 10 s
    /// interval, the mix drawn per operation.
    pub fn new(workload: Workload) -> YcsbTsSpec {
        YcsbTsSpec {
            workload,
            num_keys: 1000,
            load_points_per_key: 100,
            txns: 10_000,
            seed: 0x5eed,
            interval_ns: DEFAULT_INTERVAL_NS,
            mix_unit: MixUnit::Operation,
        }
    }

    /// Points the load phase inserts.
    pub fn load_points(&self) -> u64 {
        self.num_keys.saturating_mul(self.load_points_per_key)
    }

    /// Timestamp of point `point_index` of any key; `None` on overflow.
    pub fn point_ts_ns(&self, point_index: u64) -> Option<i64> {
        START_NS.checked_add(i64::try_from(point_index).ok()?.checked_mul(self.interval_ns)?)
    }

    /// Checks everything that does not depend on the worker split.
    pub fn check(&self) -> Result<(), SpecError> {
        if self.num_keys == 0 {
            return Err(SpecError::NoKeys);
        }
        if self.num_keys > MAX_SCRAMBLED_ITEMS {
            return Err(SpecError::TooManyKeys(self.num_keys));
        }
        if self.interval_ns <= 0 {
            return Err(SpecError::BadInterval(self.interval_ns));
        }
        let params = self.workload.params();
        if params.read_ppm + params.update_ppm > 0 && self.load_points_per_key == 0 {
            return Err(SpecError::NothingToRead(self.workload));
        }
        Ok(())
    }
}

/// Why a spec or a worker split cannot be generated.
#[derive(Clone, Debug, PartialEq)]
pub enum SpecError {
    NoKeys,
    TooManyKeys(u64),
    BadInterval(i64),
    /// Reads and updates need a loaded point in every key.
    NothingToRead(Workload),
    /// `worker` must be below `workers`, and `workers` at least 1.
    BadWorker {
        worker: u64,
        workers: u64,
    },
    /// Every worker inserts into keys of its own, so it needs one.
    MoreWorkersThanKeys {
        workers: u64,
        num_keys: u64,
    },
    /// The last timestamp a worker may insert does not fit an i64.
    TimestampOverflow {
        worker: u64,
        point_index: u64,
    },
    UnknownWorkload(String),
    Zipf(ZipfError),
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::NoKeys => write!(f, "YCSB-TS needs at least one key"),
            SpecError::TooManyKeys(n) => {
                write!(f, "YCSB-TS supports at most {MAX_SCRAMBLED_ITEMS} keys (got {n})")
            }
            SpecError::BadInterval(ns) => write!(f, "the point interval must be positive (got {ns} ns)"),
            SpecError::NothingToRead(w) => {
                write!(
                    f,
                    "workload {w} reads and updates points, so it needs at least one load point per key"
                )
            }
            SpecError::BadWorker { worker, workers } => {
                write!(f, "worker {worker} of {workers}: need 1 <= workers and worker < workers")
            }
            SpecError::MoreWorkersThanKeys { workers, num_keys } => {
                write!(
                    f,
                    "{workers} workers but only {num_keys} keys: every worker inserts into its own keys"
                )
            }
            SpecError::TimestampOverflow { worker, point_index } => write!(
                f,
                "worker {worker} may insert point {point_index} of a key, whose timestamp overflows 64 bits"
            ),
            SpecError::UnknownWorkload(s) => {
                write!(f, "unknown YCSB-TS workload {s:?} (expected A, B, C or D)")
            }
            SpecError::Zipf(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SpecError {}

impl From<ZipfError> for SpecError {
    fn from(e: ZipfError) -> SpecError {
        SpecError::Zipf(e)
    }
}
