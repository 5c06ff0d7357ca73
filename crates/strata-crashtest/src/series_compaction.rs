//! Crash test of block-file compaction (`strata_series::core::compact`), the
//! serial protocol's log and block files on the fault-injecting file system:
//! a workload heavy in overwrites, point and range deletes and out-of-order
//! points over many checkpoints, each followed by a compaction with at most
//! two files left, so every compaction merges files whose points were
//! overwritten and deleted since. Crash points are captured only inside the
//! compactions (the `series-serial/ssd` line covers the rest), every image
//! the SSD model allows at each. The oracle is the series lines' (every
//! acknowledged request present with its newest values, deleted points
//! absent, no request partial): the state recovered must be the one after
//! some prefix of the requests that includes every acknowledged one.
//!
//! [`SeriesCompactionCrash::with_planted_bug`] runs it with a compaction
//! that deletes its inputs before its manifest is durable
//! (`strata_series::crashtest_hooks::CompactionBug`), which the line must
//! catch.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use strata_media::fs::{FaultFs, FileSystem};
use strata_media::TxnId;
use strata_series::crashtest_hooks::{CompactionBug, COMPACTION_BUG};
use strata_series::{FieldValue, Point, SeriesEngine, SeriesStore, TimeRange};

use crate::error::{CheckResult, CrashCheckError};
use crate::fs_harness::FsCrashProtocol;
use crate::oracle::AckLog;
use crate::series_workload::{SeriesPlan, SeriesTxn, FIELDS, HOSTS};

pub struct SeriesCompactionCrash {
    pub seed: u64,
    /// A checkpoint, then a compaction, after every this many requests.
    pub compact_every: u64,
    bug: CompactionBug,
    plan: SeriesPlan,
}

impl SeriesCompactionCrash {
    pub fn new(seed: u64, txns: u64) -> Self {
        SeriesCompactionCrash {
            seed,
            compact_every: 3,
            bug: CompactionBug::None,
            plan: SeriesPlan::from_txns(seed, heavy_workload(seed, txns)),
        }
    }

    /// Runs the workload with `bug` planted in every compaction.
    pub fn with_planted_bug(mut self, bug: CompactionBug) -> Self {
        self.bug = bug;
        self
    }

    /// The serial-ssd engine of `series-serial`, at most two block files.
    fn open(fs: Arc<dyn FileSystem>) -> Result<Arc<SeriesEngine>, CrashCheckError> {
        crate::series_ssd::SeriesSsdCrash::open(fs)
    }
}

impl FsCrashProtocol for SeriesCompactionCrash {
    fn name(&self) -> String {
        "series-compaction".into()
    }

    fn run(&self, fs: Arc<dyn FileSystem>, acks: &AckLog) {
        self.run_compacting(&fs, acks, |_| {});
    }

    fn run_on_fault_fs(&self, fs: &FaultFs, acks: &AckLog) {
        fs.capture_crash_points(false);
        let shared: Arc<dyn FileSystem> = Arc::new(fs.clone());
        self.run_compacting(&shared, acks, |inside| fs.capture_crash_points(inside));
    }

    fn recover_and_check(&self, fs: Arc<dyn FileSystem>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let engine = Self::open(fs)?;
        self.plan.check(Some(engine.as_ref() as &dyn SeriesStore), acked)
    }
}

impl SeriesCompactionCrash {
    /// The workload; `capture(true)` just before each compaction,
    /// `capture(false)` right after it.
    fn run_compacting(&self, fs: &Arc<dyn FileSystem>, acks: &AckLog, capture: impl Fn(bool)) {
        let engine = Self::open(fs.clone()).expect("open");
        let seed = self.seed;
        self.plan.run(&engine, acks, self.compact_every, || {
            engine.checkpoint().unwrap_or_else(|e| panic!("seed {seed}: checkpoint: {e}"));
            capture(true);
            let planted = COMPACTION_BUG.with(|b| b.replace(self.bug));
            let report = engine.compact();
            COMPACTION_BUG.with(|b| b.set(planted));
            capture(false);
            report.unwrap_or_else(|e| panic!("seed {seed}: compaction: {e}"));
        });
    }
}

/// Requests of two to four points over the series lines' six series: half
/// overwrite a point written before, a fifth land before the newest point
/// (out of order), the rest append; every fourth request deletes, half of
/// them one point, the others a short range.
pub fn heavy_workload(seed: u64, txns: u64) -> Vec<SeriesTxn> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x00c0_4ac7);
    let mut written: BTreeMap<(usize, usize), Vec<i64>> = BTreeMap::new();
    let mut next_ts = 100i64;
    (1..=txns)
        .map(|t| {
            if t.is_multiple_of(4) {
                let h = rng.gen_range(0..HOSTS.len());
                let ts = (0..FIELDS.len())
                    .filter_map(|f| written.get(&(h, f)))
                    .flatten()
                    .copied()
                    .nth(rng.gen_range(0..8))
                    .unwrap_or(next_ts / 2);
                let width = if rng.gen_bool(0.5) { 0 } else { rng.gen_range(5..40) };
                return SeriesTxn::Delete {
                    host: HOSTS[h],
                    range: TimeRange { min_ns: ts, max_ns: ts + width },
                };
            }
            let points = (0..rng.gen_range(2..=4))
                .map(|j| {
                    let (h, f) = (rng.gen_range(0..HOSTS.len()), rng.gen_range(0..FIELDS.len()));
                    let old = written.get(&(h, f)).filter(|w| !w.is_empty());
                    let roll = rng.gen_range(0..10);
                    let ts = match old {
                        Some(w) if roll < 5 => w[rng.gen_range(0..w.len())],
                        _ if roll < 7 => rng.gen_range(0..next_ts) | 1,
                        _ => {
                            next_ts += 10;
                            next_ts
                        }
                    };
                    written.entry((h, f)).or_default().push(ts);
                    Point {
                        measurement: "m".into(),
                        tags: vec![("host".into(), HOSTS[h].into())],
                        fields: vec![(FIELDS[f].into(), FieldValue::Float(t as f64 * 1000.0 + j as f64))],
                        timestamp_ns: ts,
                    }
                })
                .collect();
            SeriesTxn::Write(points)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs_harness::{run_fs_crashtest, FsCrashConfig};

    #[test]
    fn the_workload_overwrites_deletes_and_writes_out_of_order() {
        let txns = heavy_workload(3, 200);
        let (mut overwrites, mut late, mut deletes) = (0, 0, 0);
        let mut seen: BTreeSet<(String, String, i64)> = BTreeSet::new();
        let mut newest = i64::MIN;
        for t in &txns {
            match t {
                SeriesTxn::Delete { .. } => deletes += 1,
                SeriesTxn::Write(points) => {
                    for p in points {
                        let key = (p.tags[0].1.clone(), p.fields[0].0.clone(), p.timestamp_ns);
                        if !seen.insert(key) {
                            overwrites += 1;
                        } else if p.timestamp_ns < newest {
                            late += 1;
                        }
                        newest = newest.max(p.timestamp_ns);
                    }
                }
            }
        }
        assert_eq!(deletes, 50);
        assert!(overwrites > 100, "{overwrites} overwrites");
        assert!(late > 40, "{late} out-of-order points");
    }

    /// The planted bug (inputs deleted before the manifest that drops
    /// them): a crash in between leaves a manifest naming files that are
    /// gone, which the line must report.
    #[test]
    fn the_line_catches_inputs_deleted_before_the_manifest() {
        let seed = 0x5eed_00c0;
        println!("seed {seed}");
        let proto =
            SeriesCompactionCrash::new(seed, 24).with_planted_bug(CompactionBug::DeleteInputsBeforeManifest);
        let r = run_fs_crashtest(&proto, &FsCrashConfig { seed, max_images: None });
        println!("{}", r.line());
        assert!(r.images > 0, "{}", r.line());
        assert!(!r.is_clean(), "the planted bug went unnoticed: {}", r.line());
        assert_eq!(COMPACTION_BUG.with(|b| b.get()), CompactionBug::None, "planted only during the run");
    }

    #[test]
    fn the_line_is_clean_without_the_bug() {
        let seed = 0x5eed_00c1;
        println!("seed {seed}");
        let r = run_fs_crashtest(
            &SeriesCompactionCrash::new(seed, 24),
            &FsCrashConfig { seed, max_images: None },
        );
        println!("{}", r.line());
        assert!(r.images > 50, "{}", r.line());
        assert!(r.is_clean(), "{}", r.line());
    }
}
