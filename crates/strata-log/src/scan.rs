//! Replay scanning shared by the PMem and SSD log devices.
//!
//! Reads records in stream order from a start position. The first invalid
//! record ends the scan. It is a torn tail (the crash model allows it: replay
//! ends there) unless a valid record carrying the LSN expected at its position
//! follows it beyond the source's tail window, which no crash can produce:
//! then it is a `Corruption` error naming the media offset of the bad record.
//! The window is 0 for the PMem ring (strict ordering: nothing is written
//! after a record before its tail is persistent) and one group-commit batch
//! for SSD segments (the page cache may write back the pages of the one
//! unsynced batch in any order).

use crate::error::LogError;
use crate::lsn::StreamPos;
use crate::record::{
    decode_header, decode_record, LogRecord, RecordError, RecordKind, HEADER_BYTES, RECORD_ALIGN_BYTES,
    RECORD_MAGIC,
};

/// A log laid out in stream positions.
pub(crate) trait LogSource {
    /// Bytes at `pos..pos+len`, or `None` past the readable end.
    fn read(&self, pos: StreamPos, len: u64) -> Option<Vec<u8>>;
    /// Bytes a record starting at `pos` may occupy (to the end of the ring
    /// lap or the end of the data).
    fn room(&self, pos: StreamPos) -> u64;
    /// Where the next record may start at or after `pos` (alignment, lap skip).
    fn next_start(&self, pos: StreamPos) -> StreamPos;
    /// Scanning stops at this position.
    fn limit(&self) -> StreamPos;
    /// Media offset of a stream position, for error messages.
    fn media_offset(&self, pos: StreamPos) -> u64;
    /// Step between candidate record starts when searching past a bad record.
    fn search_step(&self) -> u64 {
        RECORD_ALIGN_BYTES
    }
    /// Bytes after an invalid record in which valid records may legitimately
    /// survive a crash (writes that were in flight together, persisted out of
    /// order). A valid record beyond this window makes the invalid one
    /// corruption. 0 under strict ordering.
    fn tail_window(&self) -> u64 {
        0
    }
}

/// The result of a scan that found no corruption.
#[derive(Debug, Default)]
pub(crate) struct ScanOutcome {
    /// Valid `Txn` records in stream order (pads skipped).
    pub records: Vec<LogRecord>,
    /// Stream position after the last valid record (where writing resumes).
    pub end: StreamPos,
    /// Why the scan stopped at an invalid record (a torn tail, zeroes, or a
    /// stale record of an earlier ring lap), if it did not stop at the limit.
    pub torn_tail: Option<RecordError>,
}

fn try_record(src: &dyn LogSource, pos: StreamPos) -> Result<LogRecord, RecordError> {
    let room = src.room(pos);
    let header = src.read(pos, HEADER_BYTES).ok_or(RecordError::Invalid("no bytes"))?;
    let h = decode_header(&header, room)?;
    let bytes =
        src.read(pos, h.record_len()).ok_or(RecordError::Invalid("record runs past the readable end"))?;
    decode_record(&bytes, pos)
}

/// Bytes read at a time while searching past an invalid record.
const SEARCH_CHUNK_BYTES: u64 = 64 << 10;

/// Whether any valid record lies after the invalid one at `bad`, beyond the
/// source's tail window. Every open ends at an invalid record (zeroes or a
/// stale lap at the least), so this reads the rest of the log in large
/// chunks and decodes only where the record magic appears.
fn valid_record_after(src: &dyn LogSource, bad: StreamPos) -> Option<StreamPos> {
    let step = src.search_step();
    let magic = RECORD_MAGIC.to_le_bytes();
    let mut q = StreamPos(bad.0 + step.max(src.tail_window()));
    while q < src.limit() {
        q = src.next_start(q);
        if q >= src.limit() {
            break;
        }
        let len = SEARCH_CHUNK_BYTES.min(src.room(q));
        if len < magic.len() as u64 {
            q = StreamPos(q.0 + step);
            continue;
        }
        let chunk = src.read(q, len)?;
        let mut at = 0u64;
        while at + magic.len() as u64 <= len {
            let i = at as usize;
            if chunk[i..i + magic.len()] == magic && try_record(src, StreamPos(q.0 + at)).is_ok() {
                return Some(StreamPos(q.0 + at));
            }
            at += step;
        }
        q = StreamPos(q.0 + at);
    }
    None
}

pub(crate) fn scan(src: &dyn LogSource, start: StreamPos) -> Result<ScanOutcome, LogError> {
    let mut out = ScanOutcome { end: start, ..Default::default() };
    let mut pos = start;
    loop {
        pos = src.next_start(pos);
        if pos >= src.limit() {
            break;
        }
        match try_record(src, pos) {
            Ok(rec) => {
                pos = StreamPos(rec.lsn.0);
                out.end = pos;
                if rec.kind != RecordKind::Pad {
                    out.records.push(rec);
                }
            }
            Err(why) => {
                if let Some(q) = valid_record_after(src, pos) {
                    return Err(LogError::corruption(
                        src.media_offset(pos),
                        format!(
                            "invalid record ({why}) followed by a valid record at offset {}",
                            src.media_offset(q)
                        ),
                    ));
                }
                out.torn_tail = Some(why);
                break;
            }
        }
    }
    Ok(out)
}
