//! Self-tests of the crash harness: three deliberately wrong protocols must be
//! caught and their correct versions must pass (issue 2, item 5).
//!
//! The protocols: an array of 64-byte slots, each holding a commit word and a
//! 56-byte payload (`SlotLog`), and a persistent singly linked list reached
//! from a root offset (`LinkedRecords`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use strata_crashtest::oracle::{AckLog, TxnOracle};
use strata_media::TxnId;

use strata_crashtest::error::{CheckResult, CrashCheckError};
use strata_crashtest::pmem_harness::{
    reproduce_pmem_failure, run_pmem_crashtest, PmemCrashConfig, PmemCrashProtocol,
};
use strata_pmem::{Region, RegionOffset};

const TXNS: u64 = 6;
const SLOT_BYTES: u64 = 64;
const PAYLOAD_BYTES: usize = 56;
const VALID: u64 = 1 << 63;

fn payload(txn: u64) -> Vec<u8> {
    (0..PAYLOAD_BYTES).map(|i| (txn as u8).wrapping_mul(31).wrapping_add(i as u8 + 1)).collect()
}

fn oracle(chain: bool) -> TxnOracle {
    let mut o = TxnOracle::new();
    for t in 1..=TXNS {
        let deps = if chain && t > 1 { vec![TxnId(t - 1)] } else { vec![] };
        o.attempt(TxnId(t), payload(t), deps);
    }
    o
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum SlotBug {
    None,
    /// Acknowledges after flushing the commit word but before fencing.
    MissingFence,
    /// Writes payload and commit word, flushes both, one fence: unordered.
    FlagInSameBatch,
    /// Flushes the payload, then stores the commit word before the fence: the
    /// word may be evicted to media before the payload's write-back completes.
    FlagBeforeFence,
}

struct SlotLog(SlotBug);

impl PmemCrashProtocol for SlotLog {
    fn name(&self) -> String {
        format!("slot-log-{:?}", self.0)
    }

    fn region_len(&self) -> u64 {
        (TXNS + 1) * SLOT_BYTES
    }

    fn run(&self, r: &Arc<Region>, acks: &AckLog) {
        for t in 1..=TXNS {
            let slot = RegionOffset(t * SLOT_BYTES);
            r.write(slot + 8, &payload(t));
            match self.0 {
                SlotBug::None | SlotBug::MissingFence => {
                    r.persist(slot + 8, PAYLOAD_BYTES as u64);
                    r.store_u64(slot, t | VALID);
                    r.flush(slot, 8);
                    if self.0 == SlotBug::None {
                        r.fence();
                    }
                }
                SlotBug::FlagInSameBatch => {
                    r.store_u64(slot, t | VALID);
                    r.flush(slot, SLOT_BYTES);
                    r.fence();
                }
                SlotBug::FlagBeforeFence => {
                    r.flush(slot + 8, PAYLOAD_BYTES as u64);
                    r.store_u64(slot, t | VALID);
                    r.fence();
                    r.persist(slot, 8);
                }
            }
            acks.ack(TxnId(t));
        }
        r.fence();
    }

    fn recover_and_check(&self, r: &Arc<Region>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let mut found = BTreeMap::new();
        for t in 1..=TXNS {
            let slot = RegionOffset(t * SLOT_BYTES);
            let word = r.load_u64(slot);
            if word & VALID != 0 {
                found.insert(TxnId(word & !VALID), r.read_vec(slot + 8, PAYLOAD_BYTES));
            }
        }
        Ok(oracle(false).check(acked, &found))
    }
}

/// Records: [next offset: u64][txn: u64][payload 48 bytes], root at offset 0.
struct LinkedRecords {
    /// Persists the root offset before the record it points to.
    offset_before_data: bool,
}

impl PmemCrashProtocol for LinkedRecords {
    fn name(&self) -> String {
        format!("linked-records-offset-first-{}", self.offset_before_data)
    }

    fn region_len(&self) -> u64 {
        (TXNS + 1) * SLOT_BYTES
    }

    fn run(&self, r: &Arc<Region>, acks: &AckLog) {
        for t in 1..=TXNS {
            let rec = RegionOffset(t * SLOT_BYTES);
            let old_root = r.load_u64(RegionOffset(0));
            let mut bytes = old_root.to_le_bytes().to_vec();
            bytes.extend_from_slice(&t.to_le_bytes());
            bytes.extend_from_slice(&payload(t)[..48]);
            if self.offset_before_data {
                r.store_u64_persist(RegionOffset(0), rec.0);
                r.write_persist(rec, &bytes);
            } else {
                r.write_persist(rec, &bytes);
                r.store_u64_persist(RegionOffset(0), rec.0);
            }
            acks.ack(TxnId(t));
        }
    }

    fn recover_and_check(&self, r: &Arc<Region>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let mut found = BTreeMap::new();
        let mut at = r.load_u64(RegionOffset(0));
        let mut steps = 0;
        while at != 0 {
            r.check_range(RegionOffset(at), SLOT_BYTES, "record")
                .map_err(CrashCheckError::step("check_range"))?;
            steps += 1;
            if steps > TXNS {
                return Err(CrashCheckError::inconsistent("cycle in record list"));
            }
            let txn = r.load_u64(RegionOffset(at + 8));
            let mut content = r.read_vec(RegionOffset(at + 16), 48);
            content.extend_from_slice(&payload(txn)[48..]);
            found.insert(TxnId(txn), content);
            at = r.load_u64(RegionOffset(at));
        }
        let mut oracle = TxnOracle::new();
        for t in 1..=TXNS {
            oracle.attempt(TxnId(t), payload(t), if t > 1 { vec![TxnId(t - 1)] } else { vec![] });
        }
        Ok(oracle.check(acked, &found))
    }
}

fn cfg() -> PmemCrashConfig {
    PmemCrashConfig { seed: 0xc0ffee, threads: 1, ..Default::default() }
}

#[test]
fn correct_slot_log_passes() {
    let report = run_pmem_crashtest(&SlotLog(SlotBug::None), &cfg());
    assert!(report.images > 20, "{}", report.line());
    assert!(report.is_clean(), "seed {}: {:?}", cfg().seed, report.first_failure);
}

#[test]
fn planted_missing_fence_is_caught_as_lost() {
    let report = run_pmem_crashtest(&SlotLog(SlotBug::MissingFence), &cfg());
    assert!(report.counts.lost > 0, "{}", report.line());
    let f = report.first_failure.expect("a failure");
    let (again, _) = reproduce_pmem_failure(&SlotLog(SlotBug::MissingFence), &cfg(), f.point, f.image);
    assert!(
        again.lost > 0,
        "the failure reproduces from seed {} point {} image {}",
        f.seed,
        f.point,
        f.image
    );
}

#[test]
fn planted_flag_in_same_batch_is_caught_as_partial() {
    let report = run_pmem_crashtest(&SlotLog(SlotBug::FlagInSameBatch), &cfg());
    assert!(report.counts.partial > 0, "{}", report.line());
    assert_eq!(report.counts.lost, 0, "{}", report.line());
}

/// Regression: the simulator once took crash points only after flushes and
/// fences, so a store between a flush and its fence always looked ordered.
#[test]
fn planted_flag_stored_before_the_fence_is_caught_as_partial() {
    let report = run_pmem_crashtest(&SlotLog(SlotBug::FlagBeforeFence), &cfg());
    assert!(report.counts.partial > 0, "{}", report.line());
}

#[test]
fn correct_linked_records_pass() {
    let report = run_pmem_crashtest(&LinkedRecords { offset_before_data: false }, &cfg());
    assert!(report.images > 20, "{}", report.line());
    assert!(report.is_clean(), "seed {}: {:?}", cfg().seed, report.first_failure);
}

#[test]
fn planted_offset_before_data_is_caught() {
    let report = run_pmem_crashtest(&LinkedRecords { offset_before_data: true }, &cfg());
    assert!(report.counts.partial + report.counts.order_violations > 0, "{}", report.line());
}

#[test]
fn max_images_bounds_the_run_and_keeps_every_point() {
    let mut c = cfg();
    c.max_images = Some(10);
    let report = run_pmem_crashtest(&SlotLog(SlotBug::None), &c);
    assert!(report.images >= report.crash_points, "every point keeps one image");
    assert!(report.images <= report.crash_points.max(10) + report.crash_points);
}
