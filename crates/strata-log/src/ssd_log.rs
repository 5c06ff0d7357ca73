//! The SSD log device (format: `docs/format/ssd-log.md`): an append-only
//! segment file of records with group commit.
//!
//! Appenders add their encoded record to a shared buffer under a mutex and
//! wait. The first waiter that finds no flush running becomes the leader: it
//! optionally waits up to `max_wait` for the batch to fill, takes the buffer,
//! writes it with one positional write and one `fdatasync`, publishes the new
//! durable position and wakes everyone whose record it covered. Batches are
//! bounded by `max_batch_bytes` (appenders block while a full batch waits).
//! After a write or sync error the device is poisoned: a failed fdatasync
//! leaves the page cache in an unknown state, so it never retries. So that
//! a full disk does not poison it, the segment's space is reserved
//! (preallocated, 64 MiB at a time) before a record is enqueued: a record
//! that cannot get space is refused on its own, and records are written
//! only into allocated blocks.
//!
//! Truncation (after a checkpoint) starts a new segment whose base is the
//! current end of the stream, durably (file, header, directory), then removes
//! older segments. Open replays the newest segment only and cuts the file at
//! the end of its valid prefix, so stale bytes beyond a torn tail can never be
//! mistaken for later records.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use strata_media::fs::{create_durably, FileSystem, FsFile};
use strata_media::TxnId;

use crate::error::LogError;
use crate::lsn::{Lsn, StreamPos, MAX_LSN};
use crate::record::{self, check_crc, encode_record, LogRecord, RecordError, RecordKind, RECORD_ALIGN_BYTES};
use crate::scan::{scan, LogSource};

/// "STRATASL" as a little-endian u64.
pub const SSD_LOG_MAGIC: u64 = u64::from_le_bytes(*b"STRATASL");
pub const SSD_LOG_FORMAT_VERSION: u32 = 1;
pub const SEGMENT_HEADER_BYTES: u64 = 64;
pub const SEG_OFFSET_MAGIC: usize = 0;
pub const SEG_OFFSET_VERSION: usize = 8;
pub const SEG_OFFSET_BASE_POS: usize = 16;
pub const SEG_OFFSET_CRC: usize = 24;
/// The header CRC32C covers bytes 0..24.
pub const SEG_CRC_COVERED_BYTES: usize = 24;

/// Group-commit tuning.
#[derive(Clone, Debug)]
pub struct SsdLogOptions {
    /// Largest batch written by one write + fdatasync.
    pub max_batch_bytes: u64,
    /// How long a leader waits for more records before flushing (0: flush at once;
    /// batching then comes from records arriving while a flush runs).
    pub max_wait: Duration,
    /// Space reserved for a new segment without changing its length.
    pub preallocate_bytes: u64,
}

impl Default for SsdLogOptions {
    fn default() -> Self {
        SsdLogOptions { max_batch_bytes: 1 << 20, max_wait: Duration::ZERO, preallocate_bytes: 64 << 20 }
    }
}

struct State {
    file: Arc<dyn FsFile>,
    path: PathBuf,
    base: StreamPos,
    /// End of the last appended record.
    next: StreamPos,
    buffer: Vec<u8>,
    /// Stream position of `buffer[0]`.
    buffer_start: StreamPos,
    durable: StreamPos,
    flushing: bool,
    poisoned: Option<String>,
    /// File bytes known reserved (preallocated) for this segment: records
    /// up to here are written into allocated blocks, so a full disk cannot
    /// fail their write.
    reserved_bytes: u64,
}

/// An append-only, group-committed log on a file system.
pub struct SsdLog {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    options: SsdLogOptions,
    state: Mutex<State>,
    changed: Condvar,
}

/// Outcome of [`SsdLog::open`].
#[derive(Debug)]
pub struct SsdReplay {
    pub records: Vec<LogRecord>,
    pub base: StreamPos,
    pub end: StreamPos,
    pub torn_tail: Option<RecordError>,
}

fn segment_name(base: StreamPos) -> String {
    format!("wal-{:020}.log", base.0)
}

fn parse_segment_name(path: &Path) -> Option<StreamPos> {
    let name = path.file_name()?.to_str()?;
    let digits = name.strip_prefix("wal-")?.strip_suffix(".log")?;
    digits.parse().ok().map(StreamPos)
}

fn segment_header(base: StreamPos) -> [u8; SEGMENT_HEADER_BYTES as usize] {
    let mut h = [0u8; SEGMENT_HEADER_BYTES as usize];
    h[SEG_OFFSET_MAGIC..SEG_OFFSET_MAGIC + 8].copy_from_slice(&SSD_LOG_MAGIC.to_le_bytes());
    h[SEG_OFFSET_VERSION..SEG_OFFSET_VERSION + 4].copy_from_slice(&SSD_LOG_FORMAT_VERSION.to_le_bytes());
    h[SEG_OFFSET_BASE_POS..SEG_OFFSET_BASE_POS + 8].copy_from_slice(&base.0.to_le_bytes());
    let crc = crc32c::crc32c(&h[..SEG_CRC_COVERED_BYTES]);
    h[SEG_OFFSET_CRC..SEG_OFFSET_CRC + 4].copy_from_slice(&crc.to_le_bytes());
    h
}

fn check_segment_header(h: &[u8], base: StreamPos) -> Result<(), RecordError> {
    if h.len() < SEGMENT_HEADER_BYTES as usize {
        return Err(RecordError::Truncated {
            what: "segment header",
            need: SEGMENT_HEADER_BYTES,
            have: h.len() as u64,
        });
    }
    let word = |at: usize| u64::from_le_bytes(h[at..at + 8].try_into().expect("8"));
    let word32 = |at: usize| u32::from_le_bytes(h[at..at + 4].try_into().expect("4"));
    if word(SEG_OFFSET_MAGIC) != SSD_LOG_MAGIC {
        return Err(RecordError::BadMagic { what: "segment", found: word(SEG_OFFSET_MAGIC) });
    }
    check_crc("segment header", word32(SEG_OFFSET_CRC), crc32c::crc32c(&h[..SEG_CRC_COVERED_BYTES]))?;
    if word32(SEG_OFFSET_VERSION) != SSD_LOG_FORMAT_VERSION {
        return Err(RecordError::UnsupportedVersion { what: "segment", version: word32(SEG_OFFSET_VERSION) });
    }
    if word(SEG_OFFSET_BASE_POS) != base.0 {
        return Err(RecordError::Invalid("segment base does not match its file name"));
    }
    if !base.0.is_multiple_of(RECORD_ALIGN_BYTES)
        || base.0.checked_add(h.len() as u64).is_none_or(|e| e > MAX_LSN)
    {
        return Err(RecordError::BadSegmentBase(base.0));
    }
    Ok(())
}

/// Creates a segment durably: header written and synced, directory synced.
fn create_segment(
    fs: &dyn FileSystem,
    dir: &Path,
    base: StreamPos,
    options: &SsdLogOptions,
) -> Result<(Arc<dyn FsFile>, PathBuf), LogError> {
    let path = dir.join(segment_name(base));
    let file: Arc<dyn FsFile> = Arc::from(create_durably(fs, &path)?);
    file.preallocate(options.preallocate_bytes)?;
    file.write_at(0, &segment_header(base))?;
    file.sync_data()?;
    Ok((file, path))
}

struct BytesSource<'a> {
    data: &'a [u8],
    base: StreamPos,
    tail_window: u64,
}

impl LogSource for BytesSource<'_> {
    fn read(&self, pos: StreamPos, len: u64) -> Option<Vec<u8>> {
        let at = pos.0.checked_sub(self.base.0)? as usize;
        self.data.get(at..at.checked_add(len as usize)?).map(<[u8]>::to_vec)
    }

    fn room(&self, pos: StreamPos) -> u64 {
        (self.data.len() as u64).saturating_sub(pos.0 - self.base.0)
    }

    fn next_start(&self, pos: StreamPos) -> StreamPos {
        StreamPos(pos.0.div_ceil(RECORD_ALIGN_BYTES) * RECORD_ALIGN_BYTES)
    }

    fn limit(&self) -> StreamPos {
        StreamPos(self.base.0 + self.data.len() as u64)
    }

    fn media_offset(&self, pos: StreamPos) -> u64 {
        SEGMENT_HEADER_BYTES + (pos.0 - self.base.0)
    }

    fn tail_window(&self) -> u64 {
        self.tail_window
    }
}

impl SsdLog {
    /// Opens the log in `dir` (creating an empty one if there is none) and
    /// replays its newest segment.
    pub fn open(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        options: SsdLogOptions,
    ) -> Result<(SsdLog, SsdReplay), LogError> {
        fs.create_dir_all(dir)?;
        let mut segments: Vec<(StreamPos, PathBuf)> =
            fs.list_dir(dir)?.into_iter().filter_map(|p| parse_segment_name(&p).map(|b| (b, p))).collect();
        segments.sort();
        let Some((base, path)) = segments.pop() else {
            let (file, path) = create_segment(fs.as_ref(), dir, StreamPos(0), &options)?;
            let replay =
                SsdReplay { records: Vec::new(), base: StreamPos(0), end: StreamPos(0), torn_tail: None };
            return Ok((Self::build(fs, dir, options, file, path, StreamPos(0), StreamPos(0)), replay));
        };
        // Older segments are wholly covered by the checkpoint that created the newest.
        for (_, old) in &segments {
            fs.remove(old)?;
        }
        if !segments.is_empty() {
            fs.sync_dir(dir)?;
        }
        if !base.0.is_multiple_of(RECORD_ALIGN_BYTES) || base.0 > MAX_LSN / 2 {
            return Err(LogError::corruption(
                0,
                format!("{}: the file name's base {} is not a valid record position", path.display(), base.0),
            ));
        }
        let file: Arc<dyn FsFile> = Arc::from(fs.open(&path)?);
        let len = file.len()?;
        let mut bytes = vec![0u8; len as usize];
        file.read_exact_at(0, &mut bytes)?;
        if let Err(why) = check_segment_header(&bytes, base) {
            if len <= SEGMENT_HEADER_BYTES {
                // Created, but the crash tore its header before the header's
                // fdatasync: no record was ever appended, so the log is empty.
                file.write_at(0, &segment_header(base))?;
                file.set_len(SEGMENT_HEADER_BYTES)?;
                file.sync_all()?;
                let replay = SsdReplay { records: Vec::new(), base, end: base, torn_tail: Some(why) };
                return Ok((Self::build(fs, dir, options, file, path, base, base), replay));
            }
            return Err(LogError::corruption(0, format!("{}: {why}", path.display())));
        }
        // At most one batch is unsynced at a crash (a leader writes the next
        // batch only after the previous fdatasync), and a batch is at most
        // max_batch_bytes plus one record: records up to max_batch_bytes are
        // covered by twice the batch bound.
        let tail_window = options.max_batch_bytes.saturating_mul(2);
        let src = BytesSource { data: &bytes[SEGMENT_HEADER_BYTES as usize..], base, tail_window };
        let outcome = scan(&src, base)?;
        let valid_len = SEGMENT_HEADER_BYTES + (outcome.end.0 - base.0);
        if valid_len < len {
            file.set_len(valid_len)?;
            file.sync_all()?;
        }
        let replay =
            SsdReplay { records: outcome.records, base, end: outcome.end, torn_tail: outcome.torn_tail };
        Ok((Self::build(fs, dir, options, file, path, base, outcome.end), replay))
    }

    fn build(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        options: SsdLogOptions,
        file: Arc<dyn FsFile>,
        path: PathBuf,
        base: StreamPos,
        end: StreamPos,
    ) -> SsdLog {
        SsdLog {
            fs,
            dir: dir.to_path_buf(),
            options,
            state: Mutex::new(State {
                file,
                path,
                base,
                next: end,
                buffer: Vec::new(),
                buffer_start: end,
                durable: end,
                flushing: false,
                poisoned: None,
                reserved_bytes: 0,
            }),
            changed: Condvar::new(),
        }
    }

    /// Stream position just past the last enqueued record.
    pub fn end(&self) -> StreamPos {
        self.state.lock().next
    }

    /// Stream position up to which everything is durable.
    pub fn durable(&self) -> StreamPos {
        self.state.lock().durable
    }

    /// Appends a record and returns once it is durable (group commit).
    pub fn append(&self, kind: RecordKind, txn: TxnId, payload: &[u8]) -> Result<Lsn, LogError> {
        let lsn = self.enqueue(kind, txn, payload)?;
        self.wait_durable(lsn)?;
        Ok(lsn)
    }

    /// Places a record in the log order without waiting for it to be durable;
    /// [`SsdLog::wait_durable`] waits. Records become durable in the order
    /// they were enqueued, so a caller that serializes its enqueues fixes the
    /// replay order while still sharing one fdatasync with other callers.
    pub fn enqueue(&self, kind: RecordKind, txn: TxnId, payload: &[u8]) -> Result<Lsn, LogError> {
        if payload.len() as u64 > record::MAX_PAYLOAD_BYTES {
            return Err(LogError::TooLarge {
                len_bytes: payload.len() as u64,
                max_bytes: record::MAX_PAYLOAD_BYTES,
            });
        }
        let mut s = self.state.lock();
        while s.flushing && s.buffer.len() as u64 >= self.options.max_batch_bytes && s.poisoned.is_none() {
            self.changed.wait(&mut s);
        }
        if let Some(p) = &s.poisoned {
            return Err(LogError::Poisoned(p.clone()));
        }
        self.reserve(&mut s, record::record_len(payload.len() as u64))?;
        let pos = s.next;
        let lsn = encode_record(kind, txn, pos, payload, &mut s.buffer);
        s.next = StreamPos(lsn.0);
        if s.buffer.len() as u64 >= self.options.max_batch_bytes {
            self.changed.notify_all();
        }
        Ok(lsn)
    }

    /// With preallocation on, reserves the file space of a record of
    /// `record_bytes` before it is enqueued, `preallocate_bytes` at a time.
    /// A full disk then refuses the record here, before anything of it is
    /// queued ([`LogError::Io`] of kind `StorageFull`, not poisoning: the
    /// log goes on once space is freed), instead of failing a group write
    /// whose records other committers are waiting for.
    fn reserve(&self, s: &mut State, record_bytes: u64) -> Result<(), LogError> {
        let chunk = self.options.preallocate_bytes;
        let end = SEGMENT_HEADER_BYTES + (s.next.0 - s.base.0) + record_bytes;
        if chunk == 0 || end <= s.reserved_bytes {
            return Ok(());
        }
        let want = end.max(s.reserved_bytes.max(SEGMENT_HEADER_BYTES) + chunk);
        s.file.preallocate(want)?;
        s.reserved_bytes = want;
        Ok(())
    }

    /// Returns once everything up to `lsn` is durable, leading a group
    /// flush (one write + one fdatasync) if no flush is running.
    pub fn wait_durable(&self, lsn: Lsn) -> Result<(), LogError> {
        let mut s = self.state.lock();
        loop {
            if s.durable.0 >= lsn.0 {
                return Ok(());
            }
            if let Some(p) = &s.poisoned {
                return Err(LogError::Poisoned(p.clone()));
            }
            if s.flushing {
                self.changed.wait(&mut s);
                continue;
            }
            s.flushing = true;
            if !self.options.max_wait.is_zero() && (s.buffer.len() as u64) < self.options.max_batch_bytes {
                self.changed.wait_for(&mut s, self.options.max_wait);
            }
            let batch = std::mem::take(&mut s.buffer);
            let start = s.buffer_start;
            s.buffer_start = s.next;
            let file = s.file.clone();
            let offset = SEGMENT_HEADER_BYTES + (start.0 - s.base.0);
            drop(s);
            let result = file.write_at(offset, &batch).and_then(|()| file.sync_data());
            s = self.state.lock();
            s.flushing = false;
            match result {
                Ok(()) => s.durable = StreamPos(start.0 + batch.len() as u64),
                Err(e) => {
                    s.poisoned =
                        Some(format!("write or fdatasync of {} bytes at {offset} failed: {e}", batch.len()))
                }
            }
            self.changed.notify_all();
        }
    }

    /// Frees the whole log: everything appended so far is covered by a
    /// checkpoint. Starts a new segment durably, then removes the old one.
    pub fn truncate_all(&self) -> Result<(), LogError> {
        let mut s = self.state.lock();
        while s.flushing || !s.buffer.is_empty() {
            if s.poisoned.is_some() {
                break;
            }
            self.changed.wait(&mut s);
        }
        if let Some(p) = &s.poisoned {
            return Err(LogError::Poisoned(p.clone()));
        }
        let base = s.next;
        if base == s.base {
            return Ok(());
        }
        // A failure part-way leaves a newer segment that open would prefer
        // over the current one: refuse further appends rather than
        // acknowledge records that the next open would discard.
        let rotated = create_segment(self.fs.as_ref(), &self.dir, base, &self.options);
        let (file, path) = match rotated {
            Ok(v) => v,
            Err(e) => {
                let why = format!("segment rotation failed: {e}");
                s.poisoned = Some(why.clone());
                return Err(LogError::Poisoned(why));
            }
        };
        let old = std::mem::replace(&mut s.path, path);
        s.file = file;
        s.base = base;
        s.buffer_start = base;
        s.durable = base;
        s.reserved_bytes = self.options.preallocate_bytes;
        // The old segment is wholly covered by the checkpoint; a failure to
        // remove it is harmless (open removes it) but is reported.
        self.fs.remove(&old)?;
        self.fs.sync_dir(&self.dir)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_media::fs::RealFs;

    #[test]
    fn concurrent_appends_are_all_replayed_in_lsn_order() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
        let opts = SsdLogOptions { preallocate_bytes: 1 << 16, ..Default::default() };
        {
            let (log, replay) = SsdLog::open(fs.clone(), dir.path(), opts.clone()).unwrap();
            assert!(replay.records.is_empty());
            std::thread::scope(|s| {
                for t in 0..4u64 {
                    let log = &log;
                    s.spawn(move || {
                        for i in 0..50u64 {
                            log.append(RecordKind::Txn, TxnId(t * 1000 + i), &[t as u8; 33]).unwrap();
                        }
                    });
                }
            });
        }
        let (_, replay) = SsdLog::open(fs, dir.path(), opts).unwrap();
        assert_eq!(replay.records.len(), 200);
        assert!(replay.records.windows(2).all(|w| w[0].lsn < w[1].lsn));
        assert!(replay.torn_tail.is_none());
    }

    fn write_records(fs: &Arc<dyn FileSystem>, dir: &Path, opts: &SsdLogOptions, n: u64) -> Vec<Lsn> {
        let (log, _) = SsdLog::open(fs.clone(), dir, opts.clone()).unwrap();
        (0..n).map(|t| log.append(RecordKind::Txn, TxnId(t), &[t as u8; 100]).unwrap()).collect()
    }

    /// The page cache may write back an unsynced batch's pages out of order:
    /// an invalid record followed, within one batch, by valid ones is a torn
    /// tail, cut at open, not corruption (found in review).
    #[test]
    fn out_of_order_loss_inside_the_last_batch_is_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
        let opts = SsdLogOptions { max_batch_bytes: 4096, preallocate_bytes: 0, ..Default::default() };
        let lsns = write_records(&fs, dir.path(), &opts, 10);
        let seg = dir.path().join(segment_name(StreamPos(0)));
        let f = fs.open(&seg).unwrap();
        // Damage record 7 (records are 144 bytes: 24 + 104 + 16).
        f.write_at(SEGMENT_HEADER_BYTES + 7 * 144 + 30, &[0xEE; 8]).unwrap();
        drop(f);
        let (_, replay) = SsdLog::open(fs.clone(), dir.path(), opts.clone()).unwrap();
        assert_eq!(replay.records.len(), 7);
        assert_eq!(replay.end, StreamPos(lsns[6].0));
        assert_eq!(
            fs.open(&seg).unwrap().len().unwrap(),
            SEGMENT_HEADER_BYTES + lsns[6].0,
            "cut at the torn record"
        );
    }

    #[test]
    fn a_bad_record_far_before_valid_ones_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
        let opts = SsdLogOptions { max_batch_bytes: 256, preallocate_bytes: 0, ..Default::default() };
        write_records(&fs, dir.path(), &opts, 10);
        let seg = dir.path().join(segment_name(StreamPos(0)));
        fs.open(&seg).unwrap().write_at(SEGMENT_HEADER_BYTES + 144 + 30, &[0xEE; 8]).unwrap();
        let err = SsdLog::open(fs, dir.path(), opts).err().expect("corruption");
        assert!(err.is_corruption(), "{err}");
    }

    #[test]
    fn failed_rotation_poisons_the_log() {
        use strata_media::fs::{FailMode, FaultFs};
        let fault = FaultFs::new();
        let fs: Arc<dyn FileSystem> = Arc::new(fault.clone());
        let opts = SsdLogOptions { preallocate_bytes: 0, ..Default::default() };
        let (log, _) = SsdLog::open(fs.clone(), Path::new("/wal"), opts.clone()).unwrap();
        log.append(RecordKind::Txn, TxnId(1), b"one").unwrap();
        // Fail the new segment's header write (create, dir sync, preallocate, write).
        fault.fail_at(fault.ops() + 4, FailMode::Once);
        assert!(log.truncate_all().is_err());
        assert!(matches!(log.append(RecordKind::Txn, TxnId(2), b"two"), Err(LogError::Poisoned(_))));
    }

    #[test]
    fn truncate_all_starts_an_empty_segment() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
        let opts = SsdLogOptions { preallocate_bytes: 4096, ..Default::default() };
        let (log, _) = SsdLog::open(fs.clone(), dir.path(), opts.clone()).unwrap();
        log.append(RecordKind::Txn, TxnId(1), b"one").unwrap();
        log.truncate_all().unwrap();
        let lsn = log.append(RecordKind::Txn, TxnId(2), b"two").unwrap();
        drop(log);
        let (_, replay) = SsdLog::open(fs.clone(), dir.path(), opts).unwrap();
        assert_eq!(replay.records.len(), 1);
        assert_eq!((replay.records[0].txn, replay.records[0].lsn), (TxnId(2), lsn));
        assert_eq!(fs.list_dir(dir.path()).unwrap().len(), 1);
    }
}
