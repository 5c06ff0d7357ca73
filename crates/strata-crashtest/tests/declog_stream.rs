//! DecLog against the PMem crash simulator: every crash point of a seeded
//! insert/update workload (with checkpoints, truncation, a restart and ring
//! wrap-around), images checked by the oracle: no acknowledged transaction
//! lost, none partial, no update transaction present without the
//! transactions it depends on.

use strata_crashtest::declog_stream::DeclogPmemCrash;
use strata_crashtest::pmem_harness::{reproduce_pmem_failure, run_pmem_crashtest, PmemCrashConfig};

fn check(proto: &DeclogPmemCrash, seed: u64, max_images: u64) {
    let cfg = PmemCrashConfig { seed, max_images: Some(max_images), ..Default::default() };
    let report = run_pmem_crashtest(proto, &cfg);
    println!(
        "{} crash_points={} stats={:?} out_of_order_acks={} update_txns={}",
        report.line(),
        report.crash_points,
        proto.run_stats(),
        proto.out_of_order_acks(),
        proto.update_txns()
    );
    if let Some(f) = &report.first_failure {
        let again = reproduce_pmem_failure(proto, &cfg, f.point, f.image);
        panic!("seed {seed}: {} first failure: {f} (reproduced: {again:?})", report.line());
    }
    assert!(report.is_clean(), "seed {seed}: {}", report.line());
    assert!(report.images >= max_images / 2, "seed {seed}: only {} images", report.images);
    let stats = proto.run_stats();
    assert!(stats.snapshot_waits > 0, "seed {seed}: the workload never made an update wait for a snapshot");
    assert!(proto.max_stream_end() > proto.stream_bytes, "seed {seed}: the streams never wrapped");
    assert!(proto.out_of_order_acks() > 0, "seed {seed}: relaxed ordering never acknowledged out of order");
}

#[test]
fn aligned_streams_survive_every_crash_point() {
    for seed in [1u64, 2, 3] {
        check(&DeclogPmemCrash::new(seed, 300), seed, 6000);
    }
}

#[test]
fn unaligned_streams_survive_every_crash_point() {
    let mut proto = DeclogPmemCrash::new(7, 300);
    proto.align_bytes = 8;
    proto.stream_bytes = 8192;
    check(&proto, 7, 5000);
}

/// More seeds and geometries (3 streams, 3 queues, queue length 1 and 8);
/// run with `cargo test -p strata-crashtest --test declog_stream -- --ignored`.
#[test]
#[ignore = "soak: about ten seconds, 20 configurations of 8000 images"]
fn soak_more_seeds_and_geometries() {
    for seed in 10u64..30 {
        let mut proto = DeclogPmemCrash::new(seed, 300);
        proto.threads = 2 + (seed % 2) as usize;
        proto.queues_per_thread = 2 + (seed % 3 == 0) as usize;
        proto.queue_len = if seed % 2 == 0 { 1 } else { 8 };
        proto.align_bytes = if seed % 4 == 3 { 8 } else { 256 };
        check(&proto, seed, 8000);
    }
}
