//! The crash suite at a CI-sized budget: every protocol on every medium must
//! come out with lost=0 partial=0 order_violations=0, so a regression in any
//! commit protocol fails CI.

use strata_crashtest::suite::{reproduce, run_target};
use strata_crashtest::{SuiteOptions, SuiteTarget};

fn check(target: SuiteTarget) {
    let seed = 0x5eed_0001;
    let o = SuiteOptions { seed, quick: true, ..Default::default() };
    let r = run_target(target, &o);
    println!("{}", r.line());
    assert!(r.images >= 200, "{} checked too few images: {}", target.label(), r.line());
    if let Some(f) = &r.first_failure {
        let again = reproduce(target, &o, f.point, f.image);
        panic!("{} (seed {seed}): {}\nfirst failure: {f}\nreproduced: {again:?}", target.label(), r.line());
    }
    assert!(r.is_clean(), "{}", r.line());
}

#[test]
fn serial_on_pmem_survives_every_crash_point() {
    check(SuiteTarget::SerialPmem);
}

#[test]
fn serial_on_ssd_survives_every_crash_point() {
    check(SuiteTarget::SerialSsd);
}

#[test]
fn halloc_survives_every_crash_point() {
    check(SuiteTarget::HallocPmem);
}

#[test]
fn series_engine_on_pmem_survives_every_crash_point() {
    check(SuiteTarget::SeriesPmem);
}

#[test]
fn series_engine_on_ssd_survives_every_crash_point() {
    check(SuiteTarget::SeriesSsd);
}

#[test]
fn compactions_survive_every_crash_point() {
    check(SuiteTarget::SeriesCompactionSsd);
}

#[test]
fn declog_streams_on_pmem_survive_every_crash_point() {
    check(SuiteTarget::DeclogStreamPmem);
}
