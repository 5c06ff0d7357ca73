//! The PMem right flank under the crash simulator (DESIGN.md section 3):
//! crashes at every flush and fence of the workload of
//! [`FlankPmemCrash`], for batch sizes 1, 25 and 100 and with every structure
//! on PMem; and the planted bugs the oracle must catch.

use std::sync::Arc;

use strata_crashtest::oracle::{AckLog, CrashReport};
use strata_crashtest::pmem_harness::{run_pmem_crashtest, PmemCrashConfig, PmemCrashProtocol};
use strata_pmem::Region;

use strata_crashtest::events_flank::FlankPmemCrash;
use strata_crashtest::protocol::CrashBuilder;
use strata_events::crashtest_hooks::{FlankBug as PlantedBug, FLANK_BUG as PLANTED_BUG};
use strata_events::translation::TranslationKind;

fn crashtest(proto: FlankPmemCrash, bug: PlantedBug, max_images: u64) -> CrashReport {
    let proto = proto.with_planted_bug(bug);
    let cfg = PmemCrashConfig {
        seed: proto.knobs.seed,
        samples_per_point: 8,
        max_images: Some(max_images),
        ..Default::default()
    };
    let report = run_pmem_crashtest(&proto, &cfg);
    PLANTED_BUG.with(|b| b.set(PlantedBug::None));
    println!(
        "{bug:?}: {} points {} first failure: {:?}",
        report.line(),
        report.crash_points,
        report.first_failure
    );
    report
}

#[test]
fn an_uncrashed_run_recovers_every_event_in_a_tree_of_height_three() {
    for proto in [FlankPmemCrash::new(25), FlankPmemCrash::all_pmem(1)] {
        let region = Arc::new(Region::sim(proto.region_len()));
        let acks = AckLog::new(|| 0);
        proto.run(&region, &acks);
        let (height, appended) = proto.run_counts();
        assert!(height >= 3, "{}: height {height}", proto.name());
        assert_eq!(acks.len() as u64, appended, "every event acknowledged after the final sync");
        let image = Arc::new(Region::sim_from_image(region.as_sim().unwrap().persistent_image()));
        let (counts, why) = proto.recover_and_check(&image, &acks.acked_by(0)).unwrap();
        assert!(counts.is_clean(), "{counts:?} {why:?}");
    }
}

#[test]
fn every_crash_image_keeps_every_acknowledged_event_exactly_once() {
    for (proto, images) in [
        (FlankPmemCrash::new(1), 1500),
        (FlankPmemCrash::new(25), 1500),
        (FlankPmemCrash::new(100), 1000),
        (FlankPmemCrash::all_pmem(1), 1500),
        (FlankPmemCrash::new(7).with_translation(TranslationKind::Att).with_seed(2), 800),
        (FlankPmemCrash::new(3).with_translation(TranslationKind::Dram).with_seed(3), 800),
    ] {
        let report = crashtest(proto, PlantedBug::None, images);
        assert!(report.crash_points > 200, "{}", report.line());
        assert!(report.images >= report.crash_points.min(images), "{}", report.line());
        assert!(report.is_clean(), "{}: {:?}", report.line(), report.first_failure);
    }
}

#[test]
fn acknowledging_before_the_batch_is_persisted_shows_as_lost_events() {
    let report = crashtest(FlankPmemCrash::new(25).with_size(40), PlantedBug::AckBeforePersist, 600);
    assert!(report.counts.lost > 0, "{}", report.line());
}

#[test]
fn trusting_the_leaf_commit_word_without_its_crc_shows_as_damage() {
    let report = crashtest(FlankPmemCrash::new(4).with_size(30), PlantedBug::UncheckedLeafCommit, 1500);
    assert!(report.counts.partial + report.counts.lost > 0, "{}", report.line());
}

#[test]
fn committing_a_journal_record_without_its_crc_shows_as_damage() {
    let report = crashtest(FlankPmemCrash::new(1).with_size(40), PlantedBug::JournalWithoutCrc, 3000);
    assert!(!report.is_clean(), "{}", report.line());
}

#[test]
fn trusting_an_ended_write_out_journal_shows_as_lost_events() {
    // Flank format 4 persists the parent's count and the ended journal word
    // under one fence; recovery must check the parent's last entry.
    let report = crashtest(FlankPmemCrash::new(25).with_size(120), PlantedBug::TrustEndedJournal, 3000);
    assert!(report.counts.lost + report.counts.partial > 0, "{}", report.line());
}

#[test]
fn crash_line_names_follow_the_batch_size_and_placement() {
    assert_eq!(FlankPmemCrash::new(1).name(), "events-flank-k1");
    assert_eq!(FlankPmemCrash::new(25).name(), "events-flank-k25");
    assert_eq!(FlankPmemCrash::all_pmem(1).name(), "events-flank-k1-allpmem");
    assert_eq!(
        FlankPmemCrash::new(1).with_translation(TranslationKind::Att).name(),
        "events-flank-k1-flash-att"
    );
}

/// Every crash point with 64 images each, several seeds (minutes; run with
/// `cargo test -p strata-events thorough -- --ignored`).
#[test]
#[ignore]
fn thorough_crash_campaign() {
    for seed in 1..=3 {
        for proto in [FlankPmemCrash::new(1), FlankPmemCrash::new(25), FlankPmemCrash::all_pmem(5)] {
            let proto = proto.with_seed(seed);
            let cfg = PmemCrashConfig { seed, ..Default::default() };
            let report = run_pmem_crashtest(&proto, &cfg);
            println!("seed {seed}: {} points {}", report.line(), report.crash_points);
            assert!(report.is_clean(), "{}: {:?}", report.line(), report.first_failure);
        }
    }
}
