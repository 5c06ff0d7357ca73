//! Crash test of serial logging on PMem (declog.txt section 3.1).
//!
//! Region layout: a checkpoint word at offset 0 (the highest transaction a
//! checkpoint covers, one failure-atomic persisted store), the log at 256.
//! The workload commits `txns` transactions with seeded payloads (reopening
//! the log half-way, as a restart does), and every
//! `checkpoint_every` transactions checkpoints: persists the checkpoint word,
//! then truncates the log (the order that makes truncation safe). The ring is
//! small so it wraps several times, exercising pad records and lap skips.
//!
//! Recovery: transactions up to the checkpoint word come from the checkpoint
//! (a stand-in for checkpointed data: present with their known contents);
//! later ones from replaying the log. The oracle then applies.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::oracle::AckLog;
use crate::pmem_harness::PmemCrashProtocol;
use strata_log::pmem_log::PMEM_LOG_MAGIC;
use strata_log::{CommitLog, SerialLog};
use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use crate::error::{CheckResult, CrashCheckError};
use crate::workload::{payload, serial_oracle};

const CHECKPOINT_WORD: RegionOffset = RegionOffset(0);
const LOG_BASE: RegionOffset = RegionOffset(256);

/// Serial logging on the simulator.
pub struct SerialPmemCrash {
    pub seed: u64,
    pub txns: u64,
    pub checkpoint_every: u64,
    pub max_payload_bytes: usize,
    pub log_capacity_bytes: u64,
    /// 8: packed entries; 256: each entry on its own media block.
    pub align_bytes: u64,
}

impl SerialPmemCrash {
    pub fn new(seed: u64, txns: u64) -> Self {
        SerialPmemCrash {
            seed,
            txns,
            checkpoint_every: 16,
            max_payload_bytes: 200,
            log_capacity_bytes: 4096,
            align_bytes: 8,
        }
    }
}

impl PmemCrashProtocol for SerialPmemCrash {
    fn name(&self) -> String {
        "serial".into()
    }

    fn region_len(&self) -> u64 {
        LOG_BASE.0 + strata_log::pmem_log::PmemLog::footprint_bytes(self.log_capacity_bytes)
    }

    fn run(&self, region: &Arc<Region>, acks: &AckLog) {
        let mut log =
            SerialLog::create_pmem(region.clone(), LOG_BASE, self.log_capacity_bytes, self.align_bytes)
                .expect("format log");
        for t in 1..=self.txns {
            if t == self.txns / 2 {
                // A clean restart mid-run: writing resumes where replay ended.
                drop(log);
                log = SerialLog::open_pmem(region.clone(), LOG_BASE).expect("reopen log").0;
            }
            let p = payload(self.seed, t, self.max_payload_bytes);
            match log.commit(TxnId(t), &p) {
                Ok(_) => acks.ack(TxnId(t)),
                Err(e) => panic!("seed {}: commit of T{t} failed: {e}", self.seed),
            }
            if t % self.checkpoint_every == 0 {
                region.store_u64_persist(CHECKPOINT_WORD, t);
                log.truncate_all().expect("truncate");
            }
        }
    }

    fn recover_and_check(&self, region: &Arc<Region>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let checkpointed = region.load_u64(CHECKPOINT_WORD);
        let mut found: BTreeMap<TxnId, Vec<u8>> = (1..=checkpointed.min(self.txns))
            .map(|t| (TxnId(t), payload(self.seed, t, self.max_payload_bytes)))
            .collect();
        let recs = match SerialLog::open_pmem(region.clone(), LOG_BASE) {
            Ok((_, recs)) => recs,
            // The crash came before formatting finished: the magic word is
            // persisted last, so without it there is no log and nothing acked.
            Err(_) if region.load_u64(LOG_BASE) != PMEM_LOG_MAGIC => Vec::new(),
            Err(e) => return Err(CrashCheckError::step("SerialLog::open_pmem")(e)),
        };
        let mut last_lsn = 0;
        for r in recs {
            if r.lsn.0 <= last_lsn {
                return Err(CrashCheckError::inconsistent(format!("LSNs out of order at {}", r.lsn)));
            }
            last_lsn = r.lsn.0;
            if r.txn.0 > checkpointed && found.insert(r.txn, r.payload).is_some() {
                return Err(CrashCheckError::inconsistent(format!("{} replayed twice", r.txn)));
            }
        }
        Ok(serial_oracle(self.seed, self.txns, self.max_payload_bytes).check(acked, &found))
    }
}
