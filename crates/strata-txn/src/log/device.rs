//! Log devices: where a log manager's flushes go. An SSD file (write, then
//! `fdatasync`: the group commit of every record in the flush) or an
//! emulated-PMem region (write, flush the lines, fence), and a bandwidth
//! limit in front of either (a token bucket, for reads during recovery as
//! well as writes), which lets a 2-core machine show what the paper's many
//! disks show: serial logging bound by one device, Taurus by N.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use strata_media::{FileSystem, FsFile};
use strata_pmem::{Region, RegionOffset};

use crate::error::TxnError;
use crate::record::peek_len;

/// Bytes read per step when a device is read back record by record.
const READ_CHUNK_BYTES: usize = 1 << 20;

pub trait LogDevice: Send + Sync {
    /// Writes `bytes` at log position `at` (every byte before it was written
    /// already) and makes them durable before returning.
    fn append_durable(&self, at: u64, bytes: &[u8]) -> Result<(), TxnError>;
    /// The log's bytes from its start up to the first position where no
    /// record starts (a zero length field) or the device ends.
    fn read_log(&self) -> Result<Vec<u8>, TxnError>;
    /// Drops everything from `at` on, durably (recovery cuts the records it
    /// did not recover, so new ones follow the recovered prefix).
    fn truncate(&self, at: u64) -> Result<(), TxnError>;
    /// Most bytes the log can hold.
    fn capacity_bytes(&self) -> u64;

    /// The persistent region, for a device the log manager may let workers
    /// write in place (an unthrottled PMem log); `None` otherwise.
    fn region(&self) -> Option<Arc<Region>> {
        None
    }
}

/// A log file on a file system (`RealFs`, or `FaultFs` in crash tests).
pub struct FileLogDevice {
    file: Box<dyn FsFile>,
    capacity_bytes: u64,
}

impl FileLogDevice {
    pub fn open(fs: &dyn FileSystem, path: &Path, capacity_bytes: u64) -> Result<Self, TxnError> {
        let file = if fs.exists(path) { fs.open(path)? } else { strata_media::create_durably(fs, path)? };
        Ok(FileLogDevice { file, capacity_bytes })
    }
}

impl LogDevice for FileLogDevice {
    fn append_durable(&self, at: u64, bytes: &[u8]) -> Result<(), TxnError> {
        self.file.write_at(at, bytes)?;
        self.file.sync_data()?;
        Ok(())
    }

    fn read_log(&self) -> Result<Vec<u8>, TxnError> {
        let len = self.file.len()?;
        let mut bytes = vec![0; len as usize];
        self.file.read_exact_at(0, &mut bytes)?;
        Ok(bytes)
    }

    fn truncate(&self, at: u64) -> Result<(), TxnError> {
        self.file.set_len(at)?;
        self.file.sync_all()?;
        Ok(())
    }

    fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }
}

/// A log in a persistent-memory region, from offset 0 (a fresh region is
/// zeroed, so the first zero length field ends the log).
pub struct PmemLogDevice {
    region: Arc<Region>,
}

impl PmemLogDevice {
    pub fn new(region: Arc<Region>) -> Self {
        PmemLogDevice { region }
    }
}

impl LogDevice for PmemLogDevice {
    fn append_durable(&self, at: u64, bytes: &[u8]) -> Result<(), TxnError> {
        let end = at + bytes.len() as u64;
        if end > self.region.len() {
            return Err(TxnError::LogFull { log: 0, capacity_bytes: self.region.len() });
        }
        self.region.write(RegionOffset(at), bytes);
        self.region.flush(RegionOffset(at), bytes.len() as u64);
        self.region.fence();
        Ok(())
    }

    fn read_log(&self) -> Result<Vec<u8>, TxnError> {
        let len = self.region.len();
        let mut out = Vec::new();
        let mut at = 0u64;
        // Record by record: the region is mostly zeros past the log's end.
        while at + 4 <= len {
            let n = peek_len(&self.region.read_vec(RegionOffset(at), 4)) as u64;
            if n == 0 || at + n > len {
                break;
            }
            out.extend_from_slice(&self.region.read_vec(RegionOffset(at), n as usize));
            at += n;
        }
        Ok(out)
    }

    fn truncate(&self, at: u64) -> Result<(), TxnError> {
        let len = self.region.len();
        let mut pos = at;
        let zeros = vec![0u8; READ_CHUNK_BYTES];
        // Zero from `at` on, chunk by chunk, until a chunk is zeros already
        // (the old end lies in the chunk before it).
        while pos < len {
            let n = (len - pos).min(READ_CHUNK_BYTES as u64);
            let current = self.region.read_vec(RegionOffset(pos), n as usize);
            if current.iter().all(|b| *b == 0) {
                break;
            }
            self.region.write(RegionOffset(pos), &zeros[..n as usize]);
            self.region.flush(RegionOffset(pos), n);
            pos += n;
        }
        self.region.fence();
        Ok(())
    }

    fn capacity_bytes(&self) -> u64 {
        self.region.len()
    }

    fn region(&self) -> Option<Arc<Region>> {
        Some(self.region.clone())
    }
}

/// A bandwidth limit in front of a device (MB/s): each read or write waits
/// until the bucket has its bytes.
pub struct Throttled {
    inner: Box<dyn LogDevice>,
    bytes_per_s: f64,
    /// When the device is free again.
    free_at: Mutex<Instant>,
}

impl Throttled {
    pub fn new(inner: Box<dyn LogDevice>, mb_per_s: f64) -> Result<Self, TxnError> {
        if !(mb_per_s > 0.0 && mb_per_s.is_finite()) {
            return Err(TxnError::Options(format!("log bandwidth {mb_per_s} MB/s is not positive")));
        }
        Ok(Throttled { inner, bytes_per_s: mb_per_s * 1e6, free_at: Mutex::new(Instant::now()) })
    }

    fn take(&self, bytes: usize) {
        let wait_until = {
            let mut free_at = self.free_at.lock();
            let start = (*free_at).max(Instant::now());
            *free_at = start + Duration::from_secs_f64(bytes as f64 / self.bytes_per_s);
            *free_at
        };
        let now = Instant::now();
        if wait_until > now {
            std::thread::sleep(wait_until - now);
        }
    }
}

impl LogDevice for Throttled {
    fn append_durable(&self, at: u64, bytes: &[u8]) -> Result<(), TxnError> {
        self.take(bytes.len());
        self.inner.append_durable(at, bytes)
    }

    fn read_log(&self) -> Result<Vec<u8>, TxnError> {
        let bytes = self.inner.read_log()?;
        self.take(bytes.len());
        Ok(bytes)
    }

    fn truncate(&self, at: u64) -> Result<(), TxnError> {
        self.inner.truncate(at)
    }

    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lv::Lv;
    use crate::record::{encode, RowWrite, WriteOp};
    use crate::{RowKey, TableId};

    fn record(key: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let w = RowWrite { table: TableId(0), key: RowKey(key), op: WriteOp::Put(vec![1; 10]) };
        encode(&Lv::ZERO, 0, &[w], &mut out);
        out
    }

    /// Appends two records, truncates after the first; what the device read
    /// back before and after the cut, and the first record's bytes.
    fn appends_read_back_and_truncate(d: &dyn LogDevice) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let (a, b) = (record(1), record(2));
        d.append_durable(0, &a).unwrap();
        d.append_durable(a.len() as u64, &b).unwrap();
        let before = d.read_log().unwrap();
        assert_eq!(before, [a.clone(), b].concat());
        d.truncate(a.len() as u64).unwrap();
        (before, d.read_log().unwrap(), a)
    }

    #[test]
    fn a_file_log_reads_back_and_truncates() {
        let dir = tempfile::tempdir().unwrap();
        let fs = strata_media::RealFs::new();
        let d = FileLogDevice::open(&fs, &dir.path().join("log-0"), 1 << 20).unwrap();
        let (before, after, first) = appends_read_back_and_truncate(&d);
        assert_eq!((before.len(), after), (2 * first.len(), first));
    }

    #[test]
    fn a_pmem_log_reads_back_and_truncates() {
        let d = PmemLogDevice::new(Arc::new(Region::sim(1 << 16)));
        let (before, after, first) = appends_read_back_and_truncate(&d);
        assert_eq!((before.len(), after), (2 * first.len(), first));
        assert!(d.region().is_some(), "a PMem log may be written in place");
    }

    #[test]
    fn the_bandwidth_limit_spaces_writes_out() {
        let d = Throttled::new(Box::new(PmemLogDevice::new(Arc::new(Region::sim(1 << 20)))), 1.0).unwrap();
        let started = Instant::now();
        d.append_durable(0, &[0u8; 8]).unwrap();
        d.append_durable(8, &record(1)).unwrap();
        d.take(50_000);
        d.take(1);
        // 50 kB at 1 MB/s is 50 ms.
        assert!(started.elapsed() >= Duration::from_millis(45), "{:?}", started.elapsed());
        assert!(Throttled::new(Box::new(PmemLogDevice::new(Arc::new(Region::sim(64)))), 0.0).is_err());
    }
}
