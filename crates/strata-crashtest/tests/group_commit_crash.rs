//! Group commit under concurrency, against the fault-injecting file system:
//! four threads commit through one serial SSD log, so followers are
//! acknowledged by a leader's fdatasync. Every crash point and image must keep
//! every acknowledged transaction. The thread interleaving varies between
//! runs, so a failure here names its seed but may not replay exactly; it
//! exists to catch acknowledgements published before their fdatasync.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use strata_crashtest::error::{CheckResult, CrashCheckError};
use strata_crashtest::fs_harness::{run_fs_crashtest, FsCrashConfig, FsCrashProtocol};
use strata_crashtest::oracle::{AckLog, TxnOracle};
use strata_log::ssd_log::SsdLogOptions;
use strata_log::{CommitLog, SerialLog};
use strata_media::fs::FileSystem;
use strata_media::TxnId;

const THREADS: u64 = 4;
const PER_THREAD: u64 = 25;

fn payload(txn: u64) -> Vec<u8> {
    (0..(txn % 97) as usize + 8).map(|i| (txn as u8).wrapping_add(i as u8)).collect()
}

struct ConcurrentSerialSsd;

impl FsCrashProtocol for ConcurrentSerialSsd {
    fn name(&self) -> String {
        "serial-group-commit".into()
    }

    fn run(&self, fs: Arc<dyn FileSystem>, acks: &AckLog) {
        // A leader waits up to 1 ms for company, so batches hold several
        // threads' records and followers are woken by someone else's flush.
        let opts = SsdLogOptions {
            preallocate_bytes: 0,
            max_wait: std::time::Duration::from_millis(1),
            ..Default::default()
        };
        let (log, _) = SerialLog::open_ssd(fs, Path::new("/wal"), opts).expect("open");
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (log, acks) = (&log, acks);
                s.spawn(move || {
                    for i in 0..PER_THREAD {
                        let txn = t * 1000 + i;
                        log.commit(TxnId(txn), &payload(txn)).expect("commit");
                        acks.ack(TxnId(txn));
                    }
                });
            }
        });
    }

    fn recover_and_check(&self, fs: Arc<dyn FileSystem>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let opts = SsdLogOptions { preallocate_bytes: 0, ..Default::default() };
        let (_, recs) = SerialLog::open_ssd(fs, Path::new("/wal"), opts)
            .map_err(CrashCheckError::step("SerialLog::open_ssd"))?;
        let mut oracle = TxnOracle::new();
        for t in 0..THREADS {
            for i in 0..PER_THREAD {
                oracle.attempt(TxnId(t * 1000 + i), payload(t * 1000 + i), vec![]);
            }
        }
        let found: BTreeMap<TxnId, Vec<u8>> = recs.into_iter().map(|r| (r.txn, r.payload)).collect();
        Ok(oracle.check(acked, &found))
    }
}

#[test]
fn concurrent_group_commit_never_acknowledges_before_fdatasync() {
    for seed in [1u64, 2, 3] {
        let r = run_fs_crashtest(&ConcurrentSerialSsd, &FsCrashConfig { seed, max_images: None });
        println!("{}", r.line());
        assert!(r.images > 100, "seed {seed}: {}", r.line());
        assert!(r.is_clean(), "seed {seed}: {} first failure: {:?}", r.line(), r.first_failure);
    }
}
