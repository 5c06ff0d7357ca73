//! The PMem OOO queue under the crash harness (DESIGN.md section 3): every
//! flush and fence of a seeded workload is a crash point, and the oracle of
//! `strata_crashtest::events_ooo` must hold on every image; planted bugs show the
//! harness catches lost and duplicated events.

use std::collections::BTreeSet;
use std::sync::Arc;

use strata_crashtest::oracle::AckLog;
use strata_crashtest::pmem_harness::{run_pmem_crashtest, PmemCrashConfig, PmemCrashProtocol};
use strata_media::TxnId;
use strata_pmem::Region;

use strata_crashtest::events_ooo::OooPmemCrash;
use strata_events::crashtest_hooks::{OooBug as PlantedBug, OOO_BUG as PLANTED_BUG};

fn config(seed: u64, max_images: u64) -> PmemCrashConfig {
    PmemCrashConfig { seed, max_images: Some(max_images), ..Default::default() }
}

/// One uncrashed run: it merges (when full and at random), reopens, and the
/// final image passes the oracle with every event acknowledged.
#[test]
fn an_uncrashed_run_merges_reopens_and_recovers_everything() {
    let proto = OooPmemCrash::new(7, 200);
    let region = Arc::new(Region::sim(proto.region_len()));
    proto.run(&region, &AckLog::new(|| 0));
    let (merges, reopens, generation) = proto.run_counts();
    assert!(merges >= 200 / 16, "full queues were merged: {merges}");
    assert!(reopens > 0);
    assert_eq!(generation, 1 + merges);
    let acked: BTreeSet<TxnId> = (1..=200).map(TxnId).collect();
    let (counts, why) = proto.recover_and_check(&region, &acked).unwrap();
    assert!(counts.is_clean(), "{counts:?} {why:?}");
}

#[test]
fn crash_at_every_persist_loses_and_duplicates_nothing() {
    for seed in [1u64, 2, 3] {
        let proto = OooPmemCrash::new(seed, 150);
        let report = run_pmem_crashtest(&proto, &config(seed, 6000));
        println!("{}", report.line());
        assert!(report.crash_points > 3 * 150, "{}", report.line());
        assert!(report.is_clean(), "seed {seed}: {:?}", report.first_failure);
    }
}

/// The record tag wraps at 2^32 generations: the zeroing reset and its
/// completion by open, crashed at every persist.
#[test]
fn crash_across_the_tag_wrap_reset_is_clean() {
    let mut proto = OooPmemCrash::new(4, 60);
    proto.first_generation = u32::MAX as u64 - 1;
    let report = run_pmem_crashtest(&proto, &config(4, 6000));
    println!("{}", report.line());
    let (merges, _, generation) = proto.run_counts();
    assert!(merges >= 2 && generation > 1 << 32, "the run crossed the wrap: {generation:#x}");
    assert!(report.is_clean(), "{:?}", report.first_failure);
}

#[test]
fn acknowledging_before_the_fence_shows_as_lost() {
    PLANTED_BUG.with(|b| b.set(PlantedBug::SkipPushFence));
    let proto = OooPmemCrash::new(5, 40);
    let report = run_pmem_crashtest(&proto, &config(5, 3000));
    PLANTED_BUG.with(|b| b.set(PlantedBug::None));
    println!("{}", report.line());
    assert!(report.counts.lost > 0, "{}", report.line());
}

#[test]
fn skipping_the_merge_recovery_step_shows_as_duplicates() {
    let mut proto = OooPmemCrash::new(6, 80);
    proto.skip_discard_if_merged = true;
    let report = run_pmem_crashtest(&proto, &config(6, 3000));
    println!("{}", report.line());
    assert!(
        report.counts.partial > 0,
        "a crash between the tree's merge and the truncate: {}",
        report.line()
    );
}
