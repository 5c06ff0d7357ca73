//! Property tests of the serial log against a reference model.
//!
//! The model is the list of entries committed since the last truncation.
//! Random sequences of commit (payload of 0..600 bytes), truncate_all, clean
//! reopen and crash-and-reopen run on the PMem serial log (a small ring, so it
//! wraps; `LogError::Full` is answered by truncating and retrying) and on the
//! SSD serial log on `FaultFs`. After every reopen the replayed records must
//! equal the model: same transaction ids, payloads and LSNs, in order.
//!
//! The runs are deterministic: proptest uses a fixed seed (`SEED`, printed in
//! every assertion message) and no failure persistence.

use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use strata_log::pmem_log::PmemLog;
use strata_log::record::record_len;
use strata_log::ssd_log::SsdLogOptions;
use strata_log::{CommitLog, LogError, LogRecord, Lsn, SerialLog, TxnId};
use strata_media::fs::{FaultFs, Tear};
use strata_pmem::{Region, RegionOffset};

const SEED: u64 = 0x0D0C_5EED;

#[derive(Clone, Debug)]
enum Op {
    /// Commit a payload of this many bytes, filled from the byte.
    Commit(usize, u8),
    TruncateAll,
    /// Reopen the log from its current (volatile) state.
    Reopen,
    /// Crash: reopen from what reached the media only.
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0usize..600, any::<u8>()).prop_map(|(len, fill)| Op::Commit(len, fill)),
        1 => Just(Op::TruncateAll),
        2 => Just(Op::Reopen),
        2 => Just(Op::Crash),
    ]
}

fn config(cases: u32) -> Config {
    Config { cases, rng_seed: RngSeed::Fixed(SEED), failure_persistence: None, ..Config::default() }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    txn: TxnId,
    lsn: Lsn,
    payload: Vec<u8>,
}

fn payload(len: usize, fill: u8, txn: TxnId) -> Vec<u8> {
    (0..len).map(|i| fill.wrapping_add(i as u8).wrapping_mul(31) ^ txn.0 as u8).collect()
}

fn entries(records: &[LogRecord]) -> Vec<Entry> {
    records.iter().map(|r| Entry { txn: r.txn, lsn: r.lsn, payload: r.payload.clone() }).collect()
}

/// A serial log on one device, reopened and crashed by the test.
trait Device {
    fn log(&self) -> &SerialLog;
    /// Bytes the log can hold (`u64::MAX` when unbounded).
    fn reopen(&mut self) -> Vec<LogRecord>;
    fn crash(&mut self) -> Vec<LogRecord>;
}

struct Pmem {
    region: Arc<Region>,
    log: SerialLog,
}

impl Device for Pmem {
    fn log(&self) -> &SerialLog {
        &self.log
    }

    fn reopen(&mut self) -> Vec<LogRecord> {
        let (log, records) = SerialLog::open_pmem(self.region.clone(), RegionOffset(0)).expect("reopen");
        self.log = log;
        records
    }

    fn crash(&mut self) -> Vec<LogRecord> {
        let image = self.region.as_sim().expect("sim region").persistent_image();
        self.region = Arc::new(Region::sim_from_image(image));
        self.reopen()
    }
}

struct Ssd {
    fs: FaultFs,
    log: SerialLog,
    crashes: u64,
}

const SSD_DIR: &str = "/wal";

fn ssd_options() -> SsdLogOptions {
    SsdLogOptions { preallocate_bytes: 4096, ..Default::default() }
}

impl Device for Ssd {
    fn log(&self) -> &SerialLog {
        &self.log
    }

    fn reopen(&mut self) -> Vec<LogRecord> {
        let (log, records) =
            SerialLog::open_ssd(Arc::new(self.fs.clone()), Path::new(SSD_DIR), ssd_options())
                .expect("reopen");
        self.log = log;
        records
    }

    fn crash(&mut self) -> Vec<LogRecord> {
        // Every acknowledged entry was covered by an fdatasync, so neither
        // dropping unsynced data nor tearing the last sector may lose one.
        self.crashes += 1;
        let tear = if self.crashes.is_multiple_of(2) {
            Tear::None
        } else {
            Tear::LastSector { seed: SEED ^ self.crashes }
        };
        self.fs = self.fs.crash(tear);
        self.reopen()
    }
}

/// Runs `ops` on `device`, checking every replay against the model.
fn run(device: &mut dyn Device, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut model: Vec<Entry> = Vec::new();
    let mut next_txn = 1u64;
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Commit(len, fill) => {
                let txn = TxnId(next_txn);
                next_txn += 1;
                let payload = payload(*len, *fill, txn);
                let lsn = match device.log().commit(txn, &payload) {
                    Ok(lsn) => lsn,
                    Err(LogError::Full { .. }) => {
                        // A checkpoint would cover everything: truncate, retry.
                        device.log().truncate_all().expect("truncate_all");
                        model.clear();
                        match device.log().commit(txn, &payload) {
                            Ok(lsn) => lsn,
                            Err(e) => {
                                let msg = format!(
                                    "step {step}: commit after truncate_all failed: {e} (seed {SEED:#x})"
                                );
                                return Err(TestCaseError::fail(msg));
                            }
                        }
                    }
                    Err(e) => {
                        return Err(TestCaseError::fail(format!(
                            "step {step}: commit failed: {e} (seed {SEED:#x})"
                        )))
                    }
                };
                if let Some(last) = model.last() {
                    prop_assert!(
                        lsn > last.lsn,
                        "step {step}: LSN {lsn} not after {} (seed {SEED:#x})",
                        last.lsn
                    );
                }
                model.push(Entry { txn, lsn, payload });
            }
            Op::TruncateAll => {
                device.log().truncate_all().expect("truncate_all");
                model.clear();
            }
            Op::Reopen | Op::Crash => {
                let records = if matches!(op, Op::Reopen) { device.reopen() } else { device.crash() };
                prop_assert_eq!(
                    entries(&records),
                    model.clone(),
                    "step {} ({:?}), seed {:#x}",
                    step,
                    op,
                    SEED
                );
            }
        }
    }
    let records = device.crash();
    prop_assert_eq!(entries(&records), model, "final crash, seed {:#x}", SEED);
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn pmem_serial_log_replays_the_model(
        ops in prop::collection::vec(op(), 1..120),
        capacity_bytes in prop_oneof![Just(1024u64), Just(1536), Just(2048)],
        align_bytes in prop_oneof![Just(8u64), Just(64), Just(256)],
    ) {
        let region = Arc::new(Region::sim(PmemLog::footprint_bytes(capacity_bytes)));
        let log = SerialLog::create_pmem(region.clone(), RegionOffset(0), capacity_bytes, align_bytes).expect("create");
        run(&mut Pmem { region, log }, &ops)?;
    }

    #[test]
    fn ssd_serial_log_replays_the_model(ops in prop::collection::vec(op(), 1..120)) {
        let fs = FaultFs::new();
        let (log, records) = SerialLog::open_ssd(Arc::new(fs.clone()), Path::new(SSD_DIR), ssd_options()).expect("open");
        prop_assert!(records.is_empty());
        run(&mut Ssd { fs, log, crashes: 0 }, &ops)?;
    }
}

/// The PMem runs above must actually wrap the ring and hit `Full`; this pins
/// one sequence that does both, so a change that stops the ring from wrapping
/// cannot make the property vacuous.
#[test]
fn pmem_model_run_wraps_and_fills_the_ring() {
    let region = Arc::new(Region::sim(PmemLog::footprint_bytes(1024)));
    let log = SerialLog::create_pmem(region.clone(), RegionOffset(0), 1024, 8).expect("create");
    let mut ops: Vec<Op> = (0..12).map(|i| Op::Commit(100 + 37 * (i % 4), i as u8)).collect();
    ops.insert(5, Op::Crash);
    ops.push(Op::Reopen);
    let mut device = Pmem { region, log };
    run(&mut device, &ops).expect("model agrees");
    let records = device.crash();
    assert!(records.first().expect("records").lsn.0 > 1024, "the ring filled, was truncated and wrapped");
}

/// Regression: right after `truncate_all` the ring is empty, yet a record
/// longer than half of it was refused with `Full` forever, because the `Pad`
/// to the lap end counted against the capacity. Here: capacity 1024, head at
/// 512 after truncation, a 520-byte record needed 512 + 520 = 1032 bytes. An
/// empty ring now starts the next lap instead of padding.
#[test]
fn a_record_that_fits_the_ring_is_accepted_after_truncate_all() {
    let region = Arc::new(Region::sim(PmemLog::footprint_bytes(1024)));
    let log = SerialLog::create_pmem(region, RegionOffset(0), 1024, 256).expect("create");
    log.commit(TxnId(1), &[1; 217]).expect("264-byte record");
    let big = [2u8; 473]; // a 520-byte record
    assert!(record_len(big.len() as u64) <= 1024);
    if let Err(LogError::Full { .. }) = log.commit(TxnId(2), &big) {
        log.truncate_all().expect("truncate_all");
    }
    log.commit(TxnId(2), &big).expect("an empty 1024-byte ring accepts a 520-byte record");
}
