//! The serial logging baseline (declog.txt section 3.1, "strict ordering";
//! the paper's Beringei-NVM and Beringei-SSD): one centralized LSN, log
//! entries persisted strictly in LSN order.
//!
//! On PMem each entry is written as the paper's Fig. 2: head and payload,
//! flush, fence; then the tail with commit flag and LSN, flush, fence; only
//! then is the transaction acknowledged. A mutex makes the whole sequence one
//! critical section, which is exactly the serialization DecLog removes.
//! On SSD entries are appended in LSN order to one file and acknowledged
//! after a group-committed fdatasync covers them.
//!
//! Recovery replays valid entries in LSN order and ignores an entry without a
//! valid tail (a torn tail).

use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use strata_media::fs::FileSystem;
use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use crate::error::LogError;
use crate::lsn::Lsn;
use crate::pmem_log::PmemLog;
use crate::record::{LogRecord, RecordKind};
use crate::ssd_log::{SsdLog, SsdLogOptions};

/// A commit protocol: makes a transaction's redo payload durable.
pub trait CommitLog: Send + Sync {
    /// Name used in reports (`serial-pmem`, `serial-ssd`, ...).
    fn name(&self) -> &'static str;
    /// Logs one transaction and returns once it may be acknowledged.
    fn commit(&self, txn: TxnId, payload: &[u8]) -> Result<Lsn, LogError>;
    /// Places a transaction in the log order and returns its LSN, possibly
    /// before it is durable; [`CommitLog::wait`] returns once it is. A caller
    /// that serializes its submits fixes the replay order while group commit
    /// still shares one device sync among concurrent waiters. By default the
    /// submit is the whole commit.
    fn submit(&self, txn: TxnId, payload: &[u8]) -> Result<Lsn, LogError> {
        self.commit(txn, payload)
    }
    /// Returns once the submitted transaction at `lsn` is durable.
    fn wait(&self, lsn: Lsn) -> Result<(), LogError> {
        let _ = lsn;
        Ok(())
    }
    /// The stream position just past the last submitted record: the LSN a
    /// checkpoint taken now covers.
    fn end(&self) -> Lsn;
    /// The largest payload one transaction may log.
    fn max_payload_bytes(&self) -> u64 {
        crate::record::MAX_PAYLOAD_BYTES
    }
    /// Frees the log: a checkpoint covers everything committed so far.
    fn truncate_all(&self) -> Result<(), LogError>;
}

enum Device {
    Pmem { log: PmemLog, commit_lock: Mutex<()> },
    Ssd(SsdLog),
}

/// Serial logging on PMem or SSD.
pub struct SerialLog {
    device: Device,
}

impl SerialLog {
    /// A new, empty serial log on PMem. `align_bytes`: 8 packs entries as the
    /// baseline does; 256 starts each entry on its own media block.
    pub fn create_pmem(
        region: Arc<Region>,
        base: RegionOffset,
        capacity_bytes: u64,
        align_bytes: u64,
    ) -> Result<SerialLog, LogError> {
        let log = PmemLog::format(region, base, capacity_bytes, align_bytes)?;
        Ok(SerialLog { device: Device::Pmem { log, commit_lock: Mutex::new(()) } })
    }

    /// Opens a serial PMem log and returns the committed entries in LSN order.
    pub fn open_pmem(
        region: Arc<Region>,
        base: RegionOffset,
    ) -> Result<(SerialLog, Vec<LogRecord>), LogError> {
        let (log, replay) = PmemLog::open(region, base)?;
        Ok((SerialLog { device: Device::Pmem { log, commit_lock: Mutex::new(()) } }, replay.records))
    }

    /// Opens (or creates) a serial SSD log in `dir` and returns the committed
    /// entries in LSN order.
    pub fn open_ssd(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        options: SsdLogOptions,
    ) -> Result<(SerialLog, Vec<LogRecord>), LogError> {
        let (log, replay) = SsdLog::open(fs, dir, options)?;
        Ok((SerialLog { device: Device::Ssd(log) }, replay.records))
    }

    fn commit_pmem(log: &PmemLog, txn: TxnId, payload: &[u8]) -> Result<Lsn, LogError> {
        let region = log.region();
        let (res, pad) = log.reserve_with_pad(payload.len() as u64)?;
        if let Some(pad) = pad {
            region.flush(pad.offset, pad.len_bytes);
        }
        let body_crc = log.write_body(&res, RecordKind::Txn, txn, payload);
        let (at, len) = log.body_range(&res);
        region.flush(at, len);
        region.fence(); // head and payload before the tail
        log.write_tail(&res, body_crc);
        let (at, len) = log.tail_range(&res);
        region.flush(at, len);
        region.fence(); // the tail before the acknowledgement and the next entry
        Ok(res.lsn)
    }
}

impl CommitLog for SerialLog {
    fn name(&self) -> &'static str {
        match self.device {
            Device::Pmem { .. } => "serial-pmem",
            Device::Ssd(_) => "serial-ssd",
        }
    }

    fn commit(&self, txn: TxnId, payload: &[u8]) -> Result<Lsn, LogError> {
        match &self.device {
            Device::Pmem { log, commit_lock } => {
                let _strict_order = commit_lock.lock();
                Self::commit_pmem(log, txn, payload)
            }
            Device::Ssd(log) => log.append(RecordKind::Txn, txn, payload),
        }
    }

    fn submit(&self, txn: TxnId, payload: &[u8]) -> Result<Lsn, LogError> {
        match &self.device {
            Device::Pmem { .. } => self.commit(txn, payload),
            Device::Ssd(log) => log.enqueue(RecordKind::Txn, txn, payload),
        }
    }

    fn wait(&self, lsn: Lsn) -> Result<(), LogError> {
        match &self.device {
            Device::Pmem { .. } => Ok(()),
            Device::Ssd(log) => log.wait_durable(lsn),
        }
    }

    /// On PMem at most half the ring, so that a record always fits once a
    /// checkpoint has emptied it, with room for the commits behind it.
    fn max_payload_bytes(&self) -> u64 {
        match &self.device {
            Device::Pmem { log, .. } => crate::record::MAX_PAYLOAD_BYTES.min(log.layout().capacity_bytes / 2),
            Device::Ssd(_) => crate::record::MAX_PAYLOAD_BYTES,
        }
    }

    fn end(&self) -> Lsn {
        match &self.device {
            Device::Pmem { log, .. } => Lsn(log.tail().0),
            Device::Ssd(log) => Lsn(log.end().0),
        }
    }

    fn truncate_all(&self) -> Result<(), LogError> {
        match &self.device {
            Device::Pmem { log, commit_lock } => {
                let _g = commit_lock.lock();
                log.truncate(Lsn(log.tail().0));
                Ok(())
            }
            Device::Ssd(log) => log.truncate_all(),
        }
    }
}

/// The "no logging" variant: nothing is persisted, so only checkpointed data
/// survives a crash (the papers' upper bound on throughput).
#[derive(Default)]
pub struct NoLog {
    next_lsn: std::sync::atomic::AtomicU64,
}

impl NoLog {
    /// A no-op log whose LSNs continue after `start` (a checkpoint's LSN).
    pub fn starting_at(start: Lsn) -> NoLog {
        NoLog { next_lsn: std::sync::atomic::AtomicU64::new(start.0) }
    }
}

impl CommitLog for NoLog {
    fn name(&self) -> &'static str {
        "none"
    }

    fn commit(&self, _txn: TxnId, payload: &[u8]) -> Result<Lsn, LogError> {
        let len = crate::record::record_len(payload.len() as u64);
        Ok(Lsn(self.next_lsn.fetch_add(len, std::sync::atomic::Ordering::Relaxed) + len))
    }

    fn end(&self) -> Lsn {
        Lsn(self.next_lsn.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn truncate_all(&self) -> Result<(), LogError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_pmem::thread_persist_stats;

    #[test]
    fn pmem_entry_costs_two_fences_and_replays() {
        let region = Arc::new(Region::sim(64 * 1024));
        let log = SerialLog::create_pmem(region.clone(), RegionOffset(0), 32 * 1024, 8).unwrap();
        let before = thread_persist_stats();
        let lsn = log.commit(TxnId(9), b"hello").unwrap();
        let d = thread_persist_stats() - before;
        assert_eq!(d.fences, 2, "strict ordering: one fence before the tail, one after");
        let (_, recs) = SerialLog::open_pmem(region, RegionOffset(0)).unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!((recs[0].txn, recs[0].lsn, recs[0].payload.as_slice()), (TxnId(9), lsn, &b"hello"[..]));
    }

    #[test]
    fn tail_not_persisted_means_not_recovered() {
        let region = Arc::new(Region::sim(64 * 1024));
        let log = SerialLog::create_pmem(region.clone(), RegionOffset(0), 32 * 1024, 8).unwrap();
        log.commit(TxnId(1), b"first").unwrap();
        let Device::Pmem { log: pmem, .. } = &log.device else { unreachable!() };
        let (res, _) = pmem.reserve_with_pad(6).unwrap();
        pmem.write_body(&res, RecordKind::Txn, TxnId(2), b"second");
        let (at, len) = pmem.body_range(&res);
        region.persist(at, len);
        // Crash: the tail was never written.
        let image = region.as_sim().unwrap().persistent_image();
        let (_, recs) =
            SerialLog::open_pmem(Arc::new(Region::sim_from_image(image)), RegionOffset(0)).unwrap();
        assert_eq!(recs.iter().map(|r| r.txn).collect::<Vec<_>>(), vec![TxnId(1)]);
    }
}
