//! Out-of-order merges of a stream under the PMem crash simulator (DESIGN.md
//! section 3): crashes at every flush and fence of [`StreamOooPmemCrash`]'s
//! workload, and planted broken merge protocols the oracle must catch.

use std::sync::Arc;

use strata_crashtest::oracle::{AckLog, CrashReport};
use strata_crashtest::pmem_harness::{run_pmem_crashtest, PmemCrashConfig, PmemCrashProtocol};
use strata_pmem::Region;

use strata_crashtest::events_stream::StreamOooPmemCrash;
use strata_crashtest::protocol::CrashBuilder;
use strata_events::crashtest_hooks::MergeBug;

fn crashtest(proto: &StreamOooPmemCrash, samples: u64, max_images: u64) -> CrashReport {
    let cfg = PmemCrashConfig {
        seed: proto.knobs.seed,
        samples_per_point: samples,
        max_images: Some(max_images),
        threads: 2,
        ..Default::default()
    };
    let report = run_pmem_crashtest(proto, &cfg);
    println!(
        "{:?}: {} points {} first failure: {:?}",
        proto.knobs.bug,
        report.line(),
        report.crash_points,
        report.first_failure
    );
    report
}

#[test]
fn an_uncrashed_run_merges_often_carries_and_recovers_every_event() {
    for proto in [StreamOooPmemCrash::new(5), StreamOooPmemCrash::all_pmem(5)] {
        let region = Arc::new(Region::sim(proto.region_len()));
        let acks = AckLog::new(|| 0);
        proto.run(&region, &acks);
        let counts = proto.run_counts();
        println!("{}: {counts:?}", proto.name());
        assert!(counts.merges >= 5, "{}: {counts:?}", proto.name());
        assert!(counts.height >= 3, "{}: {counts:?}", proto.name());
        assert!(counts.leaves_rewritten > 10, "{}: {counts:?}", proto.name());
        if !proto.all_pmem {
            assert!(counts.events_carried > 0, "{}: {counts:?}", proto.name());
        }
        assert_eq!(acks.len() as u64, proto.knobs.size, "every event acknowledged after the final sync");
        let image = Arc::new(Region::sim_from_image(region.as_sim().unwrap().persistent_image()));
        let (c, why) = proto.recover_and_check(&image, &acks.acked_by(0)).unwrap();
        assert!(c.is_clean(), "{c:?} {why:?}");
    }
}

#[test]
fn every_crash_image_keeps_every_acknowledged_event_exactly_once() {
    for (proto, images) in [
        (StreamOooPmemCrash::new(5), 2500),
        (StreamOooPmemCrash::new(1).with_seed(2), 1500),
        (StreamOooPmemCrash::all_pmem(5).with_seed(3), 1500),
        (StreamOooPmemCrash::new(5).with_dram_queue().with_seed(4), 1500),
    ] {
        let report = crashtest(&proto, 4, images);
        assert!(report.crash_points > 500, "{}", report.line());
        assert!(report.is_clean(), "{}: {:?}", report.line(), report.first_failure);
    }
}

#[test]
fn a_dram_queue_under_a_pmem_flank_resumes_interrupted_merges_from_the_spilled_input() {
    let proto = StreamOooPmemCrash::new(5).with_dram_queue();
    assert_eq!(proto.name(), "events-stream-ooo-dramq");
    let region = Arc::new(Region::sim(proto.region_len()));
    let acks = AckLog::new(|| 0);
    proto.run(&region, &acks);
    assert!(proto.run_counts().merges >= 5, "{:?}", proto.run_counts());
    assert_eq!(
        acks.len() as u64,
        proto.knobs.size,
        "every event acknowledged after the final merge and sync"
    );
    let report = crashtest(&proto, 2, 1200);
    assert!(report.crash_points > 500, "{}", report.line());
    assert!(report.is_clean(), "{}: {:?}", report.line(), report.first_failure);
}

fn planted(bug: MergeBug) -> StreamOooPmemCrash {
    StreamOooPmemCrash::new(5).with_size(45).with_planted_bug(bug)
}

#[test]
fn merging_without_the_redo_record_shows_as_duplicates() {
    let report = crashtest(&planted(MergeBug::NoRedoRecord), 2, 2000);
    assert!(!report.is_clean(), "{}", report.line());
    assert!(report.counts.partial > 0, "{}", report.line());
}

#[test]
fn redoing_a_leaf_step_from_its_current_version_shows_as_duplicates() {
    let report = crashtest(&planted(MergeBug::RedoFromCurrentLeaf), 2, 2000);
    assert!(!report.is_clean(), "{}", report.line());
}

#[test]
fn shifting_leaves_before_the_tail_is_persisted_shows_as_lost_events() {
    let report = crashtest(&planted(MergeBug::TailNotPersisted), 2, 2000);
    assert!(report.counts.lost > 0, "{}", report.line());
}

#[test]
fn redoing_a_refresh_with_the_recovered_newest_timestamp_shows_as_lost_events() {
    let proto = StreamOooPmemCrash::shifting(5).with_planted_bug(MergeBug::RefreshUsesIndexNewest);
    let report = crashtest(&proto, 2, 3000);
    assert!(!report.is_clean(), "{}", report.line());
}

#[test]
fn rewriting_flank_entries_without_the_journal_shows_as_damage() {
    let report = crashtest(&planted(MergeBug::NoEntryJournal), 8, 4000);
    assert!(!report.is_clean(), "{}", report.line());
}

#[test]
fn truncating_the_queue_before_the_merge_is_recorded_shows_as_lost_events() {
    let report = crashtest(&planted(MergeBug::TruncateFirst), 2, 2000);
    assert!(report.counts.lost > 0, "{}", report.line());
}

#[test]
fn crash_line_names_follow_the_batch_size_and_placement() {
    assert_eq!(StreamOooPmemCrash::new(5).name(), "events-stream-ooo");
    assert_eq!(StreamOooPmemCrash::new(1).name(), "events-stream-ooo-k1");
    assert_eq!(StreamOooPmemCrash::all_pmem(5).name(), "events-stream-ooo-allpmem");
    assert_eq!(StreamOooPmemCrash::all_pmem(1).name(), "events-stream-ooo-k1-allpmem");
    assert_eq!(StreamOooPmemCrash::shifting(5).name(), "events-stream-shift");
}

#[test]
fn full_leaves_shift_runs_with_long_tails_and_every_crash_image_keeps_every_event_once() {
    let proto = StreamOooPmemCrash::shifting(5);
    let region = Arc::new(Region::sim(proto.region_len()));
    let acks = AckLog::new(|| 0);
    proto.run(&region, &acks);
    let counts = proto.run_counts();
    assert!(counts.merges >= 3 && counts.events_carried > 40, "{counts:?}");
    let report = crashtest(&proto, 2, 1500);
    assert!(report.crash_points > 500, "{}", report.line());
    assert!(report.is_clean(), "{}: {:?}", report.line(), report.first_failure);
}

/// Every crash point with 64 images each, several seeds and placements
/// (a minute or two; run with `cargo test -p strata-events
/// stream_thorough -- --ignored`).
#[test]
#[ignore]
fn stream_thorough_crash_campaign() {
    for seed in 1..=3 {
        for proto in [
            StreamOooPmemCrash::new(5),
            StreamOooPmemCrash::new(1),
            StreamOooPmemCrash::all_pmem(5),
            StreamOooPmemCrash::shifting(5),
            StreamOooPmemCrash::shifting(1),
        ] {
            let proto = proto.with_seed(seed);
            let cfg = PmemCrashConfig { seed, samples_per_point: 64, threads: 2, ..Default::default() };
            let report = run_pmem_crashtest(&proto, &cfg);
            println!("seed {seed}: {} points {}", report.line(), report.crash_points);
            assert!(report.is_clean(), "{}: {:?}", report.line(), report.first_failure);
        }
    }
}
