//! The PMem crash harness (DESIGN.md section 3): runs a protocol on the
//! simulator with crash-point capture on, then for every crash point and every
//! image the model allows (or a seeded sample) restarts a simulated region
//! from the image, recovers, and checks the oracle. Reports how many images it
//! checked; a failure names (seed, point, image) and [`reproduce_pmem_failure`]
//! replays exactly that image. Moved here from `strata_pmem::crash`, which
//! keeps the simulator's crash images ([`CrashPoint`]); the harness's
//! self-tests with planted bugs are `tests/pmem_planted_bugs.rs`.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::error::CheckResult;
use crate::oracle::{AckLog, CrashReport, OracleCounts};
use strata_media::fs::Tear;
use strata_media::FaultFs;
use strata_media::TxnId;
pub use strata_pmem::crash::{image_seed, CrashPoint, UncertainWord};
use strata_pmem::Region;

/// A commit protocol under test, with its deterministic workload and oracle.
pub trait PmemCrashProtocol: Sync {
    fn name(&self) -> String;
    fn region_len(&self) -> u64;
    /// Runs the workload on `region` (a simulator), acknowledging each
    /// transaction with `acks.ack(txn)` once the protocol says it is durable.
    fn run(&self, region: &Arc<Region>, acks: &AckLog);
    /// Recovers from `region` (a simulator restarted from a crash image) and
    /// checks the oracle against the transactions acknowledged before the
    /// crash. `Err` if recovery itself failed on an image the model allows.
    ///
    /// Implement this or [`PmemCrashProtocol::recover_and_check_at`] (each
    /// defaults to the other; implementing neither recurses forever). The
    /// default is `recover_and_check_at` with no crash point known
    /// (`u64::MAX`: as of the end of the run).
    fn recover_and_check(&self, region: &Arc<Region>, acked: &BTreeSet<TxnId>) -> CheckResult {
        self.recover_and_check_at(region, acked, u64::MAX)
    }
    /// [`PmemCrashProtocol::recover_and_check`], told the simulator operation
    /// count at the crash point. Protocols that also keep state off PMem (files
    /// written by checkpoints) use it to restore that state as of the crash.
    fn recover_and_check_at(
        &self,
        region: &Arc<Region>,
        acked: &BTreeSet<TxnId>,
        crash_op: u64,
    ) -> CheckResult {
        let _ = crash_op;
        self.recover_and_check(region, acked)
    }
}

/// The simulator's operation count (flushes and fences so far; 0 off the
/// simulator): the clock protocols tag their file-system states with.
pub fn sim_ops(region: &Region) -> u64 {
    region.as_sim().map_or(0, |s| s.ops())
}

/// A fresh crash image of the file system as a crash at simulator operation
/// `op` leaves it, from states tagged with [`sim_ops`] after each sync (tags
/// increasing): the latest state tagged `<= op`, or with `or_first` the
/// first state if none is (file work before the first PMem operation).
pub fn fs_as_of(states: &[(u64, FaultFs)], op: u64, or_first: bool) -> Option<FaultFs> {
    let found = states.iter().rev().find(|(tag, _)| *tag <= op);
    let found = if or_first { found.or_else(|| states.first()) } else { found };
    found.map(|(_, fs)| fs.crash(Tear::None))
}

#[derive(Clone, Debug)]
pub struct PmemCrashConfig {
    pub seed: u64,
    /// Enumerate every image of a point with at most this many (4096: twelve
    /// two-valued words).
    pub exhaustive_limit: u64,
    /// Images sampled at a point with more possible images than the limit.
    pub samples_per_point: u64,
    /// Upper bound on images for the whole run, spread over all points.
    pub max_images: Option<u64>,
    /// Threads checking images in parallel.
    pub threads: usize,
}

impl Default for PmemCrashConfig {
    fn default() -> Self {
        PmemCrashConfig {
            seed: 0x0571_7a7a,
            exhaustive_limit: 4096,
            samples_per_point: 64,
            max_images: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

fn captured_points(proto: &dyn PmemCrashProtocol) -> (Vec<CrashPoint>, AckLog) {
    let region = Arc::new(Region::sim(proto.region_len()));
    let sim_region = region.clone();
    let acks = AckLog::new(move || sim_region.as_sim().expect("sim").ops());
    region.as_sim().expect("sim").set_capture(true);
    proto.run(&region, &acks);
    let points = region.as_sim().expect("sim").take_crash_points();
    (points, acks)
}

fn check_image(
    proto: &dyn PmemCrashProtocol,
    point: &CrashPoint,
    acks: &AckLog,
    cfg: &PmemCrashConfig,
    exhaustive_limit: u64,
    image: u64,
) -> (OracleCounts, Option<String>) {
    let region = Arc::new(Region::sim_from_image(point.image(exhaustive_limit, cfg.seed, image)));
    let acked = acks.acked_by(point.op);
    match proto.recover_and_check_at(&region, &acked, point.op) {
        Ok(v) => v,
        Err(e) => (OracleCounts { partial: 1, ..Default::default() }, Some(format!("recovery failed: {e}"))),
    }
}

/// Per-point image counts after applying `max_images` (every point keeps at
/// least its all-old image), and the exhaustive limit each point is checked
/// with: a point cut below its full enumeration is sampled instead, so the
/// cut does not leave its high-offset words always old.
fn plan(points: &[CrashPoint], cfg: &PmemCrashConfig) -> Vec<(u64, u64)> {
    let mut plan: Vec<(u64, u64)> = points
        .iter()
        .map(|p| (p.planned_images(cfg.exhaustive_limit, cfg.samples_per_point), cfg.exhaustive_limit))
        .collect();
    if let Some(max) = cfg.max_images {
        let total: u64 = plan.iter().map(|(c, _)| c).sum();
        if total > max {
            let scale = max as f64 / total as f64;
            for (c, limit) in &mut plan {
                let cut = ((*c as f64 * scale).floor() as u64).max(1);
                if cut < *c {
                    *c = cut;
                    *limit = 0;
                }
            }
        }
    }
    plan
}

/// Crashes `proto` at every flush and fence and checks every planned image.
pub fn run_pmem_crashtest(proto: &dyn PmemCrashProtocol, cfg: &PmemCrashConfig) -> CrashReport {
    let (points, acks) = captured_points(proto);
    let counts = plan(&points, cfg);
    let threads = cfg.threads.max(1);
    let mut partial_reports: Vec<CrashReport> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (points, counts, acks) = (&points, &counts, &acks);
                s.spawn(move || {
                    let mut report = CrashReport::new(&proto.name(), "pmem");
                    for (p, point) in points.iter().enumerate().skip(t).step_by(threads) {
                        let (count, exhaustive_limit) = counts[p];
                        for image in 0..count {
                            let (c, why) = check_image(proto, point, acks, cfg, exhaustive_limit, image);
                            report.record(cfg.seed, point.index, image, c, why);
                        }
                    }
                    report
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("crash-check thread panicked")).collect()
    });
    let mut report = CrashReport::new(&proto.name(), "pmem");
    report.crash_points = points.len() as u64;
    partial_reports.sort_by_key(|r| r.first_failure.as_ref().map(|f| (f.point, f.image)));
    for r in partial_reports {
        report.images += r.images;
        report.counts.add(r.counts);
        if report.first_failure.is_none() {
            report.first_failure = r.first_failure;
        }
    }
    report
}

/// Replays one image of one crash point, as named in a failure report.
pub fn reproduce_pmem_failure(
    proto: &dyn PmemCrashProtocol,
    cfg: &PmemCrashConfig,
    point: u64,
    image: u64,
) -> (OracleCounts, Option<String>) {
    let (points, acks) = captured_points(proto);
    let limits = plan(&points, cfg);
    let p = points.iter().position(|p| p.index == point).expect("crash point index out of range");
    check_image(proto, &points[p], &acks, cfg, limits[p].1, image)
}
