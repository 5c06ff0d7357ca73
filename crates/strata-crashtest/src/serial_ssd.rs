//! Crash test of serial logging on SSD (group commit with fdatasync) against
//! the fault-injecting file system.
//!
//! The workload commits `txns` transactions (reopening the log half-way, as a
//! restart does); every `checkpoint_every` it
//! checkpoints: writes `/db/CHECKPOINT` (the highest covered transaction)
//! through a temporary file, fdatasync and a durable rename, then truncates
//! the log (a new segment, the old one removed). Recovery reads the
//! checkpoint, then replays the log, skipping covered transactions.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use crate::fs_harness::FsCrashProtocol;
use crate::oracle::AckLog;
use strata_log::ssd_log::SsdLogOptions;
use strata_log::{CommitLog, SerialLog};
use strata_media::fs::{create_durably, rename_durably, FileSystem};
use strata_media::TxnId;

use crate::error::{CheckResult, CrashCheckError};
use crate::workload::{payload, serial_oracle};

const DB_DIR: &str = "/db";
const WAL_DIR: &str = "/db/wal";
const CHECKPOINT: &str = "/db/CHECKPOINT";
const CHECKPOINT_TMP: &str = "/db/CHECKPOINT.tmp";

pub struct SerialSsdCrash {
    pub seed: u64,
    pub txns: u64,
    pub checkpoint_every: u64,
    pub max_payload_bytes: usize,
}

impl SerialSsdCrash {
    pub fn new(seed: u64, txns: u64) -> Self {
        SerialSsdCrash { seed, txns, checkpoint_every: 25, max_payload_bytes: 700 }
    }

    fn options() -> SsdLogOptions {
        SsdLogOptions { preallocate_bytes: 0, ..Default::default() }
    }

    fn write_checkpoint(fs: &dyn FileSystem, txn: u64) -> std::io::Result<()> {
        let f = create_durably(fs, Path::new(CHECKPOINT_TMP))?;
        let mut b = txn.to_le_bytes().to_vec();
        b.extend_from_slice(&crc32c::crc32c(&b).to_le_bytes());
        f.write_at(0, &b)?;
        f.sync_data()?;
        rename_durably(fs, Path::new(CHECKPOINT_TMP), Path::new(CHECKPOINT))
    }

    fn read_checkpoint(fs: &dyn FileSystem) -> Result<u64, CrashCheckError> {
        if !fs.exists(Path::new(CHECKPOINT)) {
            return Ok(0);
        }
        let f = fs.open(Path::new(CHECKPOINT)).map_err(CrashCheckError::step("checkpoint file open"))?;
        let mut b = [0u8; 12];
        f.read_exact_at(0, &mut b).map_err(CrashCheckError::step("checkpoint file"))?;
        if crc32c::crc32c(&b[..8]).to_le_bytes() != b[8..12] {
            return Err(CrashCheckError::inconsistent("checkpoint file CRC mismatch"));
        }
        Ok(u64::from_le_bytes(b[..8].try_into().expect("8")))
    }
}

impl FsCrashProtocol for SerialSsdCrash {
    fn name(&self) -> String {
        "serial".into()
    }

    fn run(&self, fs: Arc<dyn FileSystem>, acks: &AckLog) {
        fs.create_dir_all(Path::new(WAL_DIR)).expect("mkdir");
        fs.sync_dir(Path::new(DB_DIR)).expect("sync dir");
        let (log, _) =
            SerialLog::open_ssd(fs.clone(), Path::new(WAL_DIR), Self::options()).expect("open log");
        for t in 1..=self.txns {
            let p = payload(self.seed, t, self.max_payload_bytes);
            log.commit(TxnId(t), &p).unwrap_or_else(|e| panic!("seed {}: commit T{t}: {e}", self.seed));
            acks.ack(TxnId(t));
            if t % self.checkpoint_every == 0 {
                Self::write_checkpoint(fs.as_ref(), t).expect("checkpoint");
                log.truncate_all().expect("truncate");
            }
        }
    }

    fn recover_and_check(&self, fs: Arc<dyn FileSystem>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let checkpointed = Self::read_checkpoint(fs.as_ref())?;
        let mut found: BTreeMap<TxnId, Vec<u8>> = (1..=checkpointed.min(self.txns))
            .map(|t| (TxnId(t), payload(self.seed, t, self.max_payload_bytes)))
            .collect();
        let (_, recs) = SerialLog::open_ssd(fs, Path::new(WAL_DIR), Self::options())
            .map_err(CrashCheckError::step("SerialLog::open_ssd"))?;
        for r in recs {
            if r.txn.0 > checkpointed && found.insert(r.txn, r.payload).is_some() {
                return Err(CrashCheckError::inconsistent(format!("{} replayed twice", r.txn)));
            }
        }
        Ok(serial_oracle(self.seed, self.txns, self.max_payload_bytes).check(acked, &found))
    }
}
