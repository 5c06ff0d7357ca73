//! The SSD crash harness (DESIGN.md section 3): runs a protocol's workload on
//! a capturing [`FaultFs`], then recovers every crash image the model allows
//! at every crash point and checks the oracle against the transactions
//! acknowledged before that point. A failure reproduces from
//! `(seed, point, image)` with [`reproduce_fs_failure`]. Moved here from
//! `strata_media::fs`, which keeps the fault-injecting file system and its
//! crash points; the harness's self-tests are `tests/fs_harness.rs`.

use std::collections::BTreeSet;
use std::sync::Arc;

use strata_media::fs::{FaultFs, FileSystem, FsCrashPoint};
use strata_media::TxnId;

use crate::error::CheckResult;
use crate::oracle::{AckLog, CrashReport, OracleCounts};

/// A commit protocol on SSD under crash test.
pub trait FsCrashProtocol {
    fn name(&self) -> String;
    /// Runs the deterministic workload on `fs`, acknowledging each transaction
    /// with `acks.ack(txn)` after it is durable by the protocol's rules.
    fn run(&self, fs: Arc<dyn FileSystem>, acks: &AckLog);
    /// Runs the workload on the harness's capturing `fs` (capture is on
    /// when called). By default [`Self::run`], crash points at every
    /// operation; a protocol that checks only some steps (the compaction
    /// line) turns capture off around the others.
    fn run_on_fault_fs(&self, fs: &FaultFs, acks: &AckLog) {
        self.run(Arc::new(fs.clone()), acks);
    }
    /// Recovers from `fs` (a crash image) and checks the DESIGN.md oracle
    /// against the transactions acknowledged before the crash point.
    /// `Err(description)` if recovery itself failed (counted as partial=1).
    fn recover_and_check(&self, fs: Arc<dyn FileSystem>, acked: &BTreeSet<TxnId>) -> CheckResult;
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FsCrashConfig {
    /// Seeds the torn images of every crash point.
    pub seed: u64,
    /// Checks at most this many images, spread evenly over all of them.
    pub max_images: Option<u64>,
}

/// Crashes `proto` at every mutating file-system operation of its workload.
pub fn run_fs_crashtest(proto: &dyn FsCrashProtocol, cfg: &FsCrashConfig) -> CrashReport {
    let (points, acks) = run_captured(proto, cfg.seed);
    let mut report = CrashReport::new(&proto.name(), "ssd");
    report.crash_points = points.len() as u64;
    let images_total: u64 = points.iter().map(FsCrashPoint::image_count).sum();
    let mut image_global = 0u64;
    for (point_index, point) in points.iter().enumerate() {
        let acked = acks.acked_by(point.op());
        for image in 0..point.image_count() {
            let selected = is_selected(image_global, images_total, cfg.max_images);
            image_global += 1;
            if !selected {
                continue;
            }
            let (counts, why, recovery_failed) = check_image(proto, point, image, &acked);
            report.recovery_errors += u64::from(recovery_failed);
            report.record(cfg.seed, point_index as u64, image, counts, why);
        }
    }
    report
}

/// Re-runs the workload with `seed` and checks one image: the verdict
/// `run_fs_crashtest` recorded for `(seed, point, image)`.
///
/// Panics if the run has no such point or image.
pub fn reproduce_fs_failure(
    proto: &dyn FsCrashProtocol,
    seed: u64,
    point: u64,
    image: u64,
) -> (OracleCounts, Option<String>) {
    let (points, acks) = run_captured(proto, seed);
    let crash_point = usize::try_from(point).ok().and_then(|p| points.get(p));
    let crash_point =
        crash_point.unwrap_or_else(|| panic!("seed {seed}: no crash point {point} of {}", points.len()));
    assert!(
        image < crash_point.image_count(),
        "seed {seed} point {point}: no image {image} of {}",
        crash_point.image_count()
    );
    let (counts, why, _) = check_image(proto, crash_point, image, &acks.acked_by(crash_point.op()));
    (counts, why)
}

fn run_captured(proto: &dyn FsCrashProtocol, seed: u64) -> (Vec<FsCrashPoint>, AckLog) {
    let fs = FaultFs::with_tear_seed(seed);
    let clock = fs.clone();
    let acks = AckLog::new(move || clock.last_mutation_op());
    fs.capture_crash_points(true);
    proto.run_on_fault_fs(&fs, &acks);
    fs.capture_crash_points(false);
    (fs.crash_points(), acks)
}

/// The verdict on one image, and whether recovery itself failed.
fn check_image(
    proto: &dyn FsCrashProtocol,
    point: &FsCrashPoint,
    image: u64,
    acked: &BTreeSet<TxnId>,
) -> (OracleCounts, Option<String>, bool) {
    match proto.recover_and_check(Arc::new(point.image(image)), acked) {
        Ok((counts, why)) => (counts, why, false),
        Err(err) => {
            let counts = OracleCounts { partial: 1, ..OracleCounts::default() };
            (counts, Some(format!("recovery failed: {err}")), true)
        }
    }
}

/// Whether image number `index` of `total` is among `max` evenly spread ones.
pub fn is_selected(index: u64, total: u64, max: Option<u64>) -> bool {
    match max {
        Some(max) if max < total => {
            let (index, total, max) = (u128::from(index), u128::from(total), u128::from(max));
            (index + 1) * max / total > index * max / total
        }
        _ => true,
    }
}
