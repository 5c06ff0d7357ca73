//! Tests of the SSD crash harness with a tiny append-only log protocol: a
//! correct one (fdatasync, then acknowledge) and a wrong one (acknowledge,
//! then fdatasync).

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_crashtest::error::{CheckResult, CrashCheckError};
use strata_crashtest::fs_harness::{
    is_selected, reproduce_fs_failure, run_fs_crashtest, FsCrashConfig, FsCrashProtocol,
};
use strata_crashtest::{AckLog, TxnId, TxnOracle};
use strata_media::fs::{create_durably, parent_dir, FileSystem};

/// Record: `len: u32 LE | checksum: u64 LE | txn: u64 LE | payload[len]`,
/// the checksum (FNV-1a) covering `len`, `txn` and the payload.
const HEADER_BYTES: usize = 20;

struct AppendLog {
    txns: u64,
    ack_before_sync: bool,
    /// Reads the record back between the write and the acknowledgement.
    read_before_ack: bool,
}

impl AppendLog {
    fn path() -> PathBuf {
        PathBuf::from("/db/append.log")
    }

    fn payload(txn: u64) -> Vec<u8> {
        let len = 40 + (mix(txn) % 900) as usize;
        (0..len as u64).map(|i| mix(txn * 7919 + i) as u8).collect()
    }

    fn oracle(&self) -> TxnOracle {
        let mut oracle = TxnOracle::new();
        for txn in 0..self.txns {
            let deps = if txn == 0 { vec![] } else { vec![TxnId(txn - 1)] };
            oracle.attempt(TxnId(txn), Self::payload(txn), deps);
        }
        oracle
    }

    fn encode(txn: u64, payload: &[u8]) -> Vec<u8> {
        let len = (payload.len() as u32).to_le_bytes();
        let txn = txn.to_le_bytes();
        let checksum = fnv1a(&[&len, &txn, payload]).to_le_bytes();
        [&len[..], &checksum, &txn, payload].concat()
    }

    /// Replays records until the end or the first torn or corrupt one.
    fn replay(log: &[u8]) -> BTreeMap<TxnId, Vec<u8>> {
        let mut recovered = BTreeMap::new();
        let mut offset = 0;
        while log.len() - offset >= HEADER_BYTES {
            let header = &log[offset..offset + HEADER_BYTES];
            let len = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes")) as usize;
            let checksum = u64::from_le_bytes(header[4..12].try_into().expect("8 bytes"));
            let txn = &header[12..20];
            let Some(payload) = log.get(offset + HEADER_BYTES..offset + HEADER_BYTES + len) else {
                break;
            };
            if len == 0 || fnv1a(&[&header[0..4], txn, payload]) != checksum {
                break;
            }
            let txn = u64::from_le_bytes(txn.try_into().expect("8 bytes"));
            recovered.insert(TxnId(txn), payload.to_vec());
            offset += HEADER_BYTES + len;
        }
        recovered
    }

    fn read_log(fs: &dyn FileSystem, path: &Path) -> io::Result<Vec<u8>> {
        if !fs.exists(path) {
            return Ok(Vec::new());
        }
        let file = fs.open(path)?;
        let mut log = vec![0u8; file.len()? as usize];
        file.read_exact_at(0, &mut log)?;
        Ok(log)
    }
}

impl FsCrashProtocol for AppendLog {
    fn name(&self) -> String {
        if self.ack_before_sync { "append-ack-early" } else { "append" }.to_string()
    }

    fn run(&self, fs: Arc<dyn FileSystem>, acks: &AckLog) {
        let path = Self::path();
        fs.create_dir_all(parent_dir(&path)).expect("create /db");
        let file = create_durably(&*fs, &path).expect("create log");
        let mut offset = 0u64;
        for txn in 0..self.txns {
            let record = Self::encode(txn, &Self::payload(txn));
            file.write_at(offset, &record).expect("append");
            offset += record.len() as u64;
            if self.read_before_ack {
                let mut back = vec![0u8; record.len()];
                file.read_exact_at(offset - record.len() as u64, &mut back).expect("read back");
            }
            if self.ack_before_sync {
                acks.ack(TxnId(txn));
                file.sync_data().expect("fdatasync");
            } else {
                file.sync_data().expect("fdatasync");
                acks.ack(TxnId(txn));
            }
        }
    }

    fn recover_and_check(&self, fs: Arc<dyn FileSystem>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let log = Self::read_log(&*fs, &Self::path()).map_err(CrashCheckError::step("read_log"))?;
        Ok(self.oracle().check(acked, &Self::replay(&log)))
    }
}

fn mix(x: u64) -> u64 {
    strata_crashtest::workload::SplitMix64::new(x).next_u64()
}

fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for byte in parts.iter().flat_map(|part| part.iter()) {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[test]
fn sync_then_ack_passes_every_image() {
    for seed in [1u64, 2, 3] {
        let proto = AppendLog { txns: 30, ack_before_sync: false, read_before_ack: false };
        let report = run_fs_crashtest(&proto, &FsCrashConfig { seed, max_images: None });
        assert!(report.is_clean(), "seed {seed}: {} first failure {:?}", report.line(), report.first_failure);
        assert_eq!(report.crash_points, 2 + 2 * 30, "seed {seed}: create, sync_dir, then write+sync per txn");
        assert!(
            report.images > 3 * report.crash_points,
            "seed {seed}: torn images enumerated: {}",
            report.line()
        );
        assert_eq!(report.recovery_errors, 0);
    }
}

#[test]
fn ack_before_sync_is_caught_and_reproduces() {
    let seed = 11;
    let proto = AppendLog { txns: 20, ack_before_sync: true, read_before_ack: false };
    let report = run_fs_crashtest(&proto, &FsCrashConfig { seed, max_images: None });
    assert!(report.counts.lost > 0, "seed {seed}: {}", report.line());
    let failure = report.first_failure.clone().unwrap_or_else(|| panic!("seed {seed}: no failure recorded"));
    assert_eq!(failure.seed, seed);

    let (counts, why) = reproduce_fs_failure(&proto, failure.seed, failure.point, failure.image);
    assert!(counts.lost > 0, "{failure}: reproduced {counts:?}");
    assert_eq!(why.as_deref(), Some(failure.description.as_str()), "{failure}");
}

/// Regression: acknowledgements were stamped with the count of all
/// operations, so a read between the write and an early acknowledgement moved
/// the stamp past the crash point that must hold the transaction.
#[test]
fn ack_before_sync_is_caught_with_a_read_in_between() {
    let seed = 12;
    let proto = AppendLog { txns: 10, ack_before_sync: true, read_before_ack: true };
    let report = run_fs_crashtest(&proto, &FsCrashConfig { seed, max_images: None });
    assert!(report.counts.lost > 0, "seed {seed}: {}", report.line());
}

#[test]
fn max_images_spreads_over_points() {
    let proto = AppendLog { txns: 20, ack_before_sync: true, read_before_ack: false };
    let all = run_fs_crashtest(&proto, &FsCrashConfig { seed: 5, max_images: None });
    let capped = run_fs_crashtest(&proto, &FsCrashConfig { seed: 5, max_images: Some(25) });
    assert_eq!(capped.images, 25, "{}", capped.line());
    assert_eq!(capped.crash_points, all.crash_points);
    let failure =
        capped.first_failure.clone().unwrap_or_else(|| panic!("capped run found nothing: {}", capped.line()));
    assert!(failure.point > 0, "spread, not the first images only: {failure}");
    assert!(is_selected(0, 10, Some(3)) || is_selected(9, 10, Some(3)));
    assert_eq!((0..100).filter(|&i| is_selected(i, 100, Some(7))).count(), 7);
}

#[test]
fn recovery_error_counts_as_partial() {
    struct Broken;
    impl FsCrashProtocol for Broken {
        fn name(&self) -> String {
            "broken".to_string()
        }
        fn run(&self, fs: Arc<dyn FileSystem>, _acks: &AckLog) {
            fs.create_dir_all(Path::new("/db")).expect("mkdir");
            create_durably(&*fs, Path::new("/db/x")).expect("create");
        }
        fn recover_and_check(&self, _fs: Arc<dyn FileSystem>, _acked: &BTreeSet<TxnId>) -> CheckResult {
            Err(CrashCheckError::inconsistent("corrupt"))
        }
    }
    let report = run_fs_crashtest(&Broken, &FsCrashConfig::default());
    assert_eq!(report.recovery_errors, report.images);
    assert_eq!(report.counts.partial, report.images);
    assert!(report.images > 0);
    assert_eq!(report.medium, "ssd");
}
