//! FIR's crash lines (`fir-*` in `strata crashtest`): clean at the CI
//! budget, and the planted bugs caught: an LCTT entry persisted before the
//! content it commits, and a checkpoint that keeps an uncommitted version.

use std::time::Instant;

use strata_crashtest::fir_pmem::{FirLine, FirPmemCrash};
use strata_crashtest::oracle::CrashReport;
use strata_crashtest::pmem_harness::{run_pmem_crashtest, PmemCrashConfig};
use strata_crashtest::suite::run_target;
use strata_crashtest::{SuiteOptions, SuiteTarget};
use strata_fir::PlantedBug;

const SEED: u64 = 0x5eed_0017;

#[test]
fn every_fir_line_survives_every_crash_point_at_the_ci_budget() {
    let mut o = SuiteOptions { seed: SEED, quick: true, ..Default::default() };
    if let Some(seed) = std::env::var("SEED").ok().and_then(|s| s.parse().ok()) {
        o.seed = seed;
    }
    for line in [FirLine::Commit, FirLine::Checkpoint] {
        let started = Instant::now();
        let r = run_target(SuiteTarget::FirPmem(line), &o);
        println!("{} in {:.1} s", r.line(), started.elapsed().as_secs_f64());
        assert!(r.is_clean(), "seed {}: {}: {:?}", o.seed, r.line(), r.first_failure);
        assert!(r.images >= 1000, "too few images: {}", r.line());
    }
}

/// The line with `bug` planted, at a small budget.
fn planted(line: FirLine, bug: PlantedBug) -> CrashReport {
    let cfg = PmemCrashConfig { seed: SEED, samples_per_point: 8, ..Default::default() };
    let r = run_pmem_crashtest(&FirPmemCrash::with_planted_bug(line, SEED, 40, bug), &cfg);
    println!("{bug:?}: {}", r.line());
    r
}

#[test]
fn an_lctt_entry_persisted_before_its_content_is_caught() {
    let r = planted(FirLine::Commit, PlantedBug::LcttBeforeContent);
    // Images where the LCTT entry reached media and the versions did not:
    // a committed transaction recovered with some of its writes missing.
    assert!(r.counts.partial > 0, "seed {SEED}: no partial transaction: {}", r.line());
    assert!(r.first_failure.is_some(), "seed {SEED}: the failing image is named: {}", r.line());
}

#[test]
fn a_checkpoint_that_keeps_an_uncommitted_version_is_caught() {
    let r = planted(FirLine::Checkpoint, PlantedBug::CheckpointKeepsUncommitted);
    // After the aborted transaction's checkpoint, its writes come back.
    assert!(r.counts.partial > 0, "seed {SEED}: no uncommitted write recovered: {}", r.line());
    assert_eq!(r.counts.lost, 0, "seed {SEED}: the bug adds writes, it loses none: {}", r.line());
    assert!(r.first_failure.is_some(), "seed {SEED}: the failing image is named: {}", r.line());
}
