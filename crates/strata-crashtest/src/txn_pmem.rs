//! The PMem crash lines of transactional tables (`txn-*/pmem`, listed in
//! `crate::txn_lines`: serial, Taurus, Taurus under OCC, serial and Taurus
//! command logging, Silo-R): one simulated region per log, captured by
//! `crate::txn_pmem_capture`, every wave's crash images recovered and
//! checked by the oracle of `crate::txn_oracle`. Below, a "wave" is one
//! segment of the capture (a Silo-R wave is two: its records, then its
//! epoch marks; a Silo-R open one: its barriers).
//!
//! Why not `crate::pmem_harness`: it crashes one region, and here each log
//! has its own region and manager thread. Within a wave the managers run
//! independently, so any combination of the touched regions' states is a
//! state some schedule reaches: each region old (as before the wave), new
//! (its record fenced) or torn (flushed, not fenced: each word old or new).
//! A wave's images are every old/new combination (exhaustive), then seeded
//! torn ones (`torn_per_log` per touched region; even images draw each
//! word, odd ones each cache line, as the simulator's sampler does).
//!
//! Which acknowledgements an image must hold: a region's state exists over
//! a range of that region's operation counts (old and torn: up to its
//! flush; new: up to its next flush). An acknowledgement stamped with every
//! region's count could have come before the crash iff each region's state
//! lasts up to its stamp; then the image must hold it (a state identical
//! to one after the acknowledgement recovers identically). A correct
//! Taurus acknowledges only once its record and dependencies are fenced,
//! so this never asks for more than is durable; an early acknowledgement
//! (the planted `AckBeforeCommitted`) is required by the torn and old
//! images of its own region.
//!
//! A failure names (seed, point, image): point is the wave's index over
//! the whole run, and [`reproduce_txn_pmem_failure`] checks that image again.

use std::collections::BTreeSet;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_pmem::crash::image_seed;
use strata_pmem::{Region, CACHE_LINE_BYTES};
use strata_txn::planted::PlantedBug;
use strata_txn::record::{COMMAND_HEADER_BYTES, HEADER_BYTES, LV_MASK_BYTES, WRITE_HEADER_BYTES};
use strata_txn::LogDeviceKind;

use crate::oracle::{CrashReport, OracleCounts};
use crate::txn_driver::{db_options, recover_and_check};
use crate::txn_lines::TxnLogging;
use crate::txn_pmem_capture::{capture, Capture, CapturedWave};
use crate::txn_workload::SessionPlan;

/// A transactional-table line on simulated PMem.
pub struct TxnPmemCrash {
    pub seed: u64,
    pub logging: TxnLogging,
    bug: PlantedBug,
    plans: Vec<SessionPlan>,
    /// Per session: bytes of each log's region.
    region_lens: Vec<u64>,
}

#[derive(Clone, Debug)]
pub struct TxnPmemConfig {
    /// Seeds the torn images.
    pub seed: u64,
    /// Torn images per wave and region it touches.
    pub torn_per_log: u64,
    /// Cap on images for the whole line (torn ones are cut first).
    pub max_images: Option<u64>,
    /// Threads checking images.
    pub threads: usize,
    /// Every this many images, the recovered database also goes on writing.
    pub resume_every: u64,
}

impl Default for TxnPmemConfig {
    fn default() -> Self {
        TxnPmemConfig {
            seed: 0x7a0d_5eed,
            torn_per_log: 8,
            max_images: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            resume_every: 16,
        }
    }
}

impl TxnPmemCrash {
    /// `sessions` sessions of `txns` transactions each.
    pub fn new(seed: u64, logging: TxnLogging, sessions: usize, txns: usize) -> Self {
        let plans = SessionPlan::sessions(seed, logging, sessions, txns);
        // A session's logs, a quarter more (should the record format grow)
        // and room for the resumed transaction, rounded to 4 KiB: small
        // regions keep images cheap (a recovery zeroes a torn tail to the
        // region's end, word by word in the simulator).
        let region_lens = plans
            .iter()
            .map(|p| {
                let bound = log_bytes_bound(p, logging);
                (bound + bound / 4 + 1024).next_multiple_of(4096)
            })
            .collect();
        TxnPmemCrash { seed, logging, bug: PlantedBug::None, plans, region_lens }
    }

    /// Runs and recovers with `bug` planted in `strata-txn`.
    pub fn with_planted_bug(mut self, bug: PlantedBug) -> Self {
        self.bug = bug;
        self
    }

    fn capture(&self) -> Capture {
        capture(self.seed, self.logging, self.bug, &self.plans, &self.region_lens)
    }
}

/// The most bytes one log of `plan` takes: records with every LV element
/// (as rows or as commands, whichever is longer), and an anchor-sized
/// record per wave and a few more (Taurus anchors, Silo-R epoch marks and
/// barriers: a wave's marks are one per log).
fn log_bytes_bound(plan: &SessionPlan, logging: TxnLogging) -> u64 {
    let logs = logging.logs();
    let lv_bytes = LV_MASK_BYTES + 8 * logs.max(2);
    let mut per_log = vec![0u64; logs];
    for (k, t) in plan.txns.iter().enumerate() {
        let data: usize = t.writes().map(|(_, row)| WRITE_HEADER_BYTES + row.map_or(0, <[u8]>::len)).sum();
        let command = COMMAND_HEADER_BYTES + crate::txn_workload::command_args(t.id, &t.steps).len();
        per_log[(k % logging.workers()) % logs] +=
            (HEADER_BYTES + lv_bytes + data.max(command)).next_multiple_of(8) as u64;
    }
    let anchors = (plan.waves.len() + 8) * (HEADER_BYTES + lv_bytes);
    per_log.into_iter().max().unwrap_or(0) + anchors as u64
}

/// How many images a wave gets: all-old (only a session's first wave),
/// the other old/new combinations, and torn ones.
#[derive(Copy, Clone, Debug)]
struct WavePlan {
    with_all_old: bool,
    clean: u64,
    torn: u64,
}

fn plan(waves: &[CapturedWave], cfg: &TxnPmemConfig) -> Vec<WavePlan> {
    let mut plans: Vec<WavePlan> = waves
        .iter()
        .map(|w| {
            let k = w.regions.iter().filter(|r| r.flush_op.is_some()).count() as u32;
            let clean = (1u64 << k) - u64::from(!w.first);
            WavePlan { with_all_old: w.first, clean, torn: cfg.torn_per_log * u64::from(k) }
        })
        .collect();
    if let Some(max) = cfg.max_images {
        let clean: u64 = plans.iter().map(|p| p.clean).sum();
        let torn: u64 = plans.iter().map(|p| p.torn).sum();
        if clean + torn > max && torn > 0 {
            let scale = max.saturating_sub(clean) as f64 / torn as f64;
            for p in &mut plans {
                p.torn = (p.torn as f64 * scale).floor() as u64;
            }
        }
    }
    plans
}

/// Region images of image `image` of wave `point`, and how long each
/// region's state lasts (its operation count up to which it is current).
fn images(
    wave: &CapturedWave,
    plan: WavePlan,
    seed: u64,
    point: u64,
    image: u64,
) -> (Vec<Vec<u8>>, Vec<u64>) {
    let touched: Vec<usize> =
        (0..wave.regions.len()).filter(|r| wave.regions[*r].flush_op.is_some()).collect();
    // Per touched region: None old, Some(1.0) new, Some(p) torn with probability p.
    let mut modes: Vec<Option<f64>> = Vec::with_capacity(touched.len());
    let mut rng = ChaCha8Rng::seed_from_u64(image_seed(seed, point, image));
    if image < plan.clean {
        let mask = image + u64::from(!plan.with_all_old);
        modes.extend((0..touched.len()).map(|j| (mask >> j & 1 == 1).then_some(1.0)));
    } else {
        modes.extend(touched.iter().map(|_| match rng.gen_range(0..3) {
            0 => None,
            1 => Some(1.0),
            _ => Some(rng.gen_range(0.05..0.95)),
        }));
        if !modes.iter().any(|m| m.is_some_and(|p| p < 1.0)) {
            let j = rng.gen_range(0..touched.len());
            modes[j] = Some(rng.gen_range(0.05..0.95));
        }
    }
    let mut out: Vec<Vec<u8>> = wave.regions.iter().map(|r| r.before.as_ref().clone()).collect();
    let mut lasts: Vec<u64> = wave.regions.iter().map(|r| r.next_flush_op).collect();
    let per_line = image % 2 == 1;
    for (&r, mode) in touched.iter().zip(&modes) {
        let rw = &wave.regions[r];
        let Some(p) = *mode else {
            lasts[r] = rw.flush_op.expect("touched");
            continue;
        };
        let (mut line, mut take, mut taken) = (usize::MAX, false, 0);
        for w in &rw.words {
            let new = if p >= 1.0 {
                true
            } else if per_line {
                if w.offset / CACHE_LINE_BYTES as usize != line {
                    line = w.offset / CACHE_LINE_BYTES as usize;
                    take = rng.gen_bool(p);
                }
                take
            } else {
                rng.gen_bool(p)
            };
            if new {
                out[r][w.offset..w.offset + 8].copy_from_slice(&w.new.to_le_bytes());
                taken += 1;
            }
        }
        if taken < rw.words.len() {
            // Old or torn: current only up to the append's flush.
            lasts[r] = rw.flush_op.expect("touched");
        }
    }
    (out, lasts)
}

fn check_image(
    line: &TxnPmemCrash,
    captured: &Capture,
    cfg: &TxnPmemConfig,
    point: u64,
    plan: WavePlan,
    image: u64,
) -> (OracleCounts, Option<String>) {
    let wave = &captured.waves[point as usize];
    let (region_images, lasts) = images(wave, plan, cfg.seed, point, image);
    let acked: BTreeSet<_> = captured
        .acks
        .iter()
        .filter(|a| a.session == wave.session && a.stamps.iter().zip(&lasts).all(|(s, l)| s <= l))
        .map(|a| a.txn)
        .collect();
    let regions = region_images.into_iter().map(|i| Arc::new(Region::sim_from_image(i))).collect();
    let options = db_options(line.logging, LogDeviceKind::Regions(regions), line.bug);
    let resume = (point + image).is_multiple_of(cfg.resume_every.max(1));
    let plan_of_session = &line.plans[wave.session];
    match recover_and_check(plan_of_session, &options, &acked, resume) {
        Ok((c, why)) => (c, why.map(|w| format!("seed {} session {}: {w}", line.seed, wave.session))),
        Err(e) => (OracleCounts { partial: 1, ..Default::default() }, Some(format!("recovery failed: {e}"))),
    }
}

/// Runs `line`, then recovers and checks every planned image of every wave.
pub fn run_txn_pmem_crashtest(line: &TxnPmemCrash, cfg: &TxnPmemConfig) -> CrashReport {
    let captured = line.capture();
    let plans = plan(&captured.waves, cfg);
    let threads = cfg.threads.max(1);
    let mut report = CrashReport::new(&line.logging.name(), "pmem");
    report.crash_points = captured.sim_points;
    if let Some(f) = &captured.failure {
        let counts = OracleCounts { partial: 1, ..Default::default() };
        report.record(cfg.seed, captured.waves.len() as u64, 0, counts, Some(format!("the run failed: {f}")));
    }
    let parts: Vec<CrashReport> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (captured, plans) = (&captured, &plans);
                s.spawn(move || {
                    let mut part = CrashReport::default();
                    for (p, wp) in plans.iter().enumerate().skip(t).step_by(threads) {
                        for image in 0..wp.clean + wp.torn {
                            let (c, why) = check_image(line, captured, cfg, p as u64, *wp, image);
                            part.record(cfg.seed, p as u64, image, c, why);
                        }
                    }
                    part
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("txn crash-check thread panicked")).collect()
    });
    let mut failures: Vec<_> = parts.iter().filter_map(|p| p.first_failure.clone()).collect();
    failures.sort_by_key(|f| (f.point, f.image));
    for p in &parts {
        report.images += p.images;
        report.counts.add(p.counts);
        report.recovery_errors += p.recovery_errors;
    }
    if report.first_failure.is_none() {
        report.first_failure = failures.into_iter().next();
    }
    report
}

/// Checks one image again, as named by a failure report.
pub fn reproduce_txn_pmem_failure(
    line: &TxnPmemCrash,
    cfg: &TxnPmemConfig,
    point: u64,
    image: u64,
) -> (OracleCounts, Option<String>) {
    let captured = line.capture();
    let plans = plan(&captured.waves, cfg);
    let Some(wp) = plans.get(point as usize) else {
        let counts = OracleCounts { partial: u64::from(captured.failure.is_some()), ..Default::default() };
        let why = captured
            .failure
            .map_or(format!("no wave {point} of {}", plans.len()), |f| format!("the run failed: {f}"));
        return (counts, Some(why));
    };
    check_image(line, &captured, cfg, point, *wp, image)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Silo-R session on PMem is the same every time (its epochs advance
    /// only when a wait asks): the same segments, each region's append
    /// words and acknowledgements; a wave is two segments (records, then
    /// marks) and an open one (barriers).
    #[test]
    fn a_silo_run_captures_the_same_segments_every_time() {
        let line = TxnPmemCrash::new(9, TxnLogging::SiloR { logs: 2 }, 1, 30);
        let (a, b) = (line.capture(), line.capture());
        assert_eq!(a.failure, None);
        let shape = |c: &Capture| -> Vec<Vec<(Option<u64>, usize)>> {
            c.waves.iter().map(|w| w.regions.iter().map(|r| (r.flush_op, r.words.len())).collect()).collect()
        };
        assert_eq!(shape(&a), shape(&b));
        let stamps = |c: &Capture| -> Vec<(u64, Vec<u64>)> {
            c.acks.iter().map(|k| (k.txn.0, k.stamps.clone())).collect()
        };
        assert_eq!(stamps(&a), stamps(&b));
        let waves = line.plans[0].waves.len();
        // Two opens (barriers), and per wave its records and its marks.
        assert_eq!(a.waves.len(), 2 + 2 * waves, "{} segments for {waves} waves", a.waves.len());
    }
}
