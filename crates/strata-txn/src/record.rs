//! The log record (format: `docs/format/taurus-log.md`): for data logging
//! a transaction's after-images (or deletes), for command logging the
//! stored procedure's id and arguments, with a copy of its LV taken before
//! its own LSN was known (Algorithm 1, line 9). Serial logging writes the
//! same records with no LV elements.
//!
//! A record's LSN is its end position in its log (the value
//! `WriteLogBuffer` returns, Algorithm 1 line 27), so every LSN is above 0
//! and `LV[i] = x` covers exactly the records ending at or before `x`.

use crate::ids::{RowKey, TableId};
use crate::lv::{Lv, MAX_LOGS};

/// Format version in byte 8.
pub const RECORD_VERSION: u8 = 1;
/// Bytes before the LV: length, CRC, version, LV elements, reserved, write count.
pub const HEADER_BYTES: usize = 16;
/// Bytes of a write before its row.
pub const WRITE_HEADER_BYTES: usize = 20;
/// Records are padded to this many bytes.
pub const RECORD_ALIGN: usize = 8;

/// What a write does to its row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteOp {
    /// Insert or update: the row's new image.
    Put(Vec<u8>),
    Delete,
}

const OP_PUT: u8 = 1;
const OP_DELETE: u8 = 2;

/// One row a transaction writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowWrite {
    pub table: TableId,
    pub key: RowKey,
    pub op: WriteOp,
}

/// Byte 10: what the record carries.
const KIND_DATA: u8 = 0;
const KIND_COMMAND: u8 = 1;
/// Bytes of a command body before its arguments: procedure id, argument length.
pub const COMMAND_HEADER_BYTES: usize = 8;

/// A stored procedure's invocation (command logging).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub procedure: u32,
    pub args: Vec<u8>,
}

/// A decoded record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The LV copy (elements beyond the log count are 0).
    pub lv: Lv,
    pub lv_len: usize,
    /// Data logging: the writes (empty for a command record).
    pub writes: Vec<RowWrite>,
    /// Command logging: the invocation to re-execute.
    pub command: Option<Command>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("record of {len} bytes at {at}: not a multiple of 8 or shorter than its header")]
    BadLength { at: u64, len: u32 },
    #[error("record at {at}: checksum {stored:#x}, computed {computed:#x}")]
    Checksum { at: u64, stored: u32, computed: u32 },
    #[error("record at {at}: {what}")]
    Invalid { at: u64, what: String },
}

/// Bytes `writes` take encoded with `lv_len` LV elements.
pub fn encoded_len(lv_len: usize, writes: &[RowWrite]) -> usize {
    let body: usize = writes
        .iter()
        .map(|w| WRITE_HEADER_BYTES + if let WriteOp::Put(r) = &w.op { r.len() } else { 0 })
        .sum();
    (HEADER_BYTES + 8 * lv_len + body).next_multiple_of(RECORD_ALIGN)
}

/// Bytes a command record with `lv_len` LV elements and `args_len` argument bytes takes.
pub fn encoded_command_len(lv_len: usize, args_len: usize) -> usize {
    (HEADER_BYTES + 8 * lv_len + COMMAND_HEADER_BYTES + args_len).next_multiple_of(RECORD_ALIGN)
}

fn put_header(out: &mut Vec<u8>, len: usize, kind: u8, lv: &Lv, lv_len: usize, count: u32) {
    assert!(lv_len <= MAX_LOGS);
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.push(RECORD_VERSION);
    out.push(lv_len as u8);
    out.extend_from_slice(&[kind, 0]);
    out.extend_from_slice(&count.to_le_bytes());
    for v in lv.as_slice(lv_len) {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Pads the record started at `start` to `len` bytes and sets its checksum.
fn seal(out: &mut Vec<u8>, start: usize, len: usize) {
    out.resize(start + len, 0);
    let crc = crc32c::crc32c(&out[start + 8..start + len]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// Appends a command record (count 1: one invocation) to `out`.
pub fn encode_command(lv: &Lv, lv_len: usize, command: &Command, out: &mut Vec<u8>) {
    let start = out.len();
    let len = encoded_command_len(lv_len, command.args.len());
    put_header(out, len, KIND_COMMAND, lv, lv_len, 1);
    out.extend_from_slice(&command.procedure.to_le_bytes());
    out.extend_from_slice(&(command.args.len() as u32).to_le_bytes());
    out.extend_from_slice(&command.args);
    seal(out, start, len);
}

/// Appends a data record to `out`.
pub fn encode(lv: &Lv, lv_len: usize, writes: &[RowWrite], out: &mut Vec<u8>) {
    let start = out.len();
    let len = encoded_len(lv_len, writes);
    put_header(out, len, KIND_DATA, lv, lv_len, writes.len() as u32);
    for w in writes {
        out.extend_from_slice(&w.table.0.to_le_bytes());
        let (op, row): (u8, &[u8]) = match &w.op {
            WriteOp::Put(r) => (OP_PUT, r),
            WriteOp::Delete => (OP_DELETE, &[]),
        };
        out.extend_from_slice(&[op, 0, 0, 0]);
        out.extend_from_slice(&w.key.0.to_le_bytes());
        out.extend_from_slice(&(row.len() as u32).to_le_bytes());
        out.extend_from_slice(row);
    }
    seal(out, start, len);
}

/// The length field of the record at the start of `bytes` (0: no record).
pub fn peek_len(bytes: &[u8]) -> u32 {
    bytes.get(..4).map_or(0, |b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
}

/// The LV copy of an encoded record (for the log manager, which reads
/// only this of what it flushes); `None` if the header is short.
pub fn peek_lv(bytes: &[u8]) -> Option<Lv> {
    let n = *bytes.get(9)? as usize;
    let mut lv = Lv::ZERO;
    for i in 0..n.min(MAX_LOGS) {
        let at = HEADER_BYTES + 8 * i;
        lv.set(i, u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().expect("8 bytes")));
    }
    Some(lv)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Decodes the record starting at `bytes[0]`, which sits at log position
/// `at`. `Ok(None)` when no record starts there: a zero length (the end of
/// what was written), or a record running past `bytes` (a torn tail).
pub fn decode(bytes: &[u8], at: u64) -> Result<Option<(Record, usize)>, DecodeError> {
    let len = peek_len(bytes);
    if len == 0 {
        return Ok(None);
    }
    if (len as usize) < HEADER_BYTES || !(len as usize).is_multiple_of(RECORD_ALIGN) {
        return Err(DecodeError::BadLength { at, len });
    }
    let Some(rec) = bytes.get(..len as usize) else { return Ok(None) };
    let stored = u32_at(rec, 4);
    let computed = crc32c::crc32c(&rec[8..]);
    if stored != computed {
        return Err(DecodeError::Checksum { at, stored, computed });
    }
    let invalid = |what: String| DecodeError::Invalid { at, what };
    if rec[8] != RECORD_VERSION {
        return Err(invalid(format!("unknown version {}", rec[8])));
    }
    let lv_len = rec[9] as usize;
    if lv_len > MAX_LOGS {
        return Err(invalid(format!("{lv_len} LV elements, at most {MAX_LOGS}")));
    }
    let kind = rec[10];
    if rec[11] != 0 || (kind != KIND_DATA && kind != KIND_COMMAND) {
        return Err(invalid(format!("kind {kind}, reserved byte {}", rec[11])));
    }
    let count = u32_at(rec, 12) as usize;
    let mut lv = Lv::ZERO;
    let mut p = HEADER_BYTES;
    if p + 8 * lv_len > rec.len() {
        return Err(invalid("LV past the record's end".into()));
    }
    for i in 0..lv_len {
        lv.set(i, u64_at(rec, p));
        p += 8;
    }
    if kind == KIND_COMMAND {
        if count != 1 || p + COMMAND_HEADER_BYTES > rec.len() {
            return Err(invalid(format!("command record with count {count}")));
        }
        let procedure = u32_at(rec, p);
        let args_len = u32_at(rec, p + 4) as usize;
        p += COMMAND_HEADER_BYTES;
        let args = rec
            .get(p..p + args_len)
            .ok_or_else(|| invalid("arguments past the record's end".into()))?
            .to_vec();
        p += args_len;
        if rec[p..].iter().any(|b| *b != 0) || len as usize != encoded_command_len(lv_len, args_len) {
            return Err(invalid("padding that is not the zeros up to the next multiple of 8".into()));
        }
        let command = Some(Command { procedure, args });
        return Ok(Some((Record { lv, lv_len, writes: Vec::new(), command }, len as usize)));
    }
    let mut writes = Vec::with_capacity(count.min(rec.len() / WRITE_HEADER_BYTES));
    for _ in 0..count {
        if p + WRITE_HEADER_BYTES > rec.len() {
            return Err(invalid("write header past the record's end".into()));
        }
        let table = TableId(u32_at(rec, p));
        let op = rec[p + 4];
        if rec[p + 5..p + 8] != [0, 0, 0] {
            return Err(invalid("non-zero reserved bytes in a write".into()));
        }
        let key = RowKey(u64_at(rec, p + 8));
        let row_len = u32_at(rec, p + 16) as usize;
        p += WRITE_HEADER_BYTES;
        let row = rec.get(p..p + row_len).ok_or_else(|| invalid("row past the record's end".into()))?;
        p += row_len;
        let op = match op {
            OP_PUT => WriteOp::Put(row.to_vec()),
            OP_DELETE if row_len == 0 => WriteOp::Delete,
            other => return Err(invalid(format!("write op {other} with {row_len} row bytes"))),
        };
        writes.push(RowWrite { table, key, op });
    }
    if rec[p..].iter().any(|b| *b != 0) || len as usize != encoded_len(lv_len, &writes) {
        return Err(invalid("padding that is not the zeros up to the next multiple of 8".into()));
    }
    Ok(Some((Record { lv, lv_len, writes, command: None }, len as usize)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<RowWrite> {
        vec![
            RowWrite { table: TableId(1), key: RowKey(7), op: WriteOp::Put(vec![1, 2, 3]) },
            RowWrite { table: TableId(0), key: RowKey(9), op: WriteOp::Delete },
        ]
    }

    #[test]
    fn round_trips_with_and_without_an_lv() {
        for lv_len in [0, 2, MAX_LOGS] {
            let lv = Lv::from_slice(&(1..=lv_len as u64).collect::<Vec<_>>());
            let mut out = vec![0xAA];
            encode(&lv, lv_len, &sample(), &mut out);
            assert_eq!(out.len() - 1, encoded_len(lv_len, &sample()));
            assert_eq!((out.len() - 1) % RECORD_ALIGN, 0);
            let (rec, used) = decode(&out[1..], 0).unwrap().unwrap();
            assert_eq!(used, out.len() - 1);
            assert_eq!((rec.lv, rec.lv_len, rec.writes, rec.command), (lv, lv_len, sample(), None));
            assert_eq!(peek_lv(&out[1..]), Some(lv));
            let command = Command { procedure: 7, args: vec![1, 2, 3, 4, 5] };
            let mut out = Vec::new();
            encode_command(&lv, lv_len, &command, &mut out);
            assert_eq!(out.len(), encoded_command_len(lv_len, 5));
            let (rec, used) = decode(&out, 0).unwrap().unwrap();
            assert_eq!((used, rec.lv, rec.writes.len(), rec.command), (out.len(), lv, 0, Some(command)));
        }
    }

    #[test]
    fn a_flipped_bit_fails_the_checksum_and_a_short_tail_is_no_record() {
        let mut out = Vec::new();
        encode(&Lv::from_slice(&[5]), 1, &sample(), &mut out);
        assert_eq!(decode(&out[..out.len() - 8], 0), Ok(None));
        assert_eq!(decode(&[0u8; 32], 0), Ok(None));
        for bit in [8 * 8, 8 * 20, 8 * (out.len() - 9)] {
            let mut bad = out.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(matches!(decode(&bad, 64), Err(DecodeError::Checksum { at: 64, .. })), "bit {bit}");
        }
    }
}

#[cfg(test)]
mod format_doc_tests {
    //! `docs/format/taurus-log.md` and the encoder agree.
    use super::*;
    use strata_testkit::doc_table::markdown_table;

    const DOC: &str = include_str!("../../../docs/format/taurus-log.md");

    fn offsets(heading: &str) -> Vec<(String, String)> {
        markdown_table(DOC, heading).into_iter().skip(1).map(|r| (r[2].clone(), r[0].clone())).collect()
    }

    #[test]
    fn the_header_and_write_tables_match_the_encoder() {
        let header = offsets("## Header");
        let want = [
            ("total_len", "0"),
            ("crc32c", "4"),
            ("version", "8"),
            ("lv_len", "9"),
            ("kind", "10"),
            ("reserved", "11"),
            ("count", "12"),
            ("lv", "16"),
        ];
        assert_eq!(header, want.map(|(a, b)| (a.to_string(), b.to_string())).to_vec());
        assert_eq!(HEADER_BYTES, 16);
        let write = offsets("## Write");
        let want =
            [("table", "0"), ("op", "4"), ("reserved", "5"), ("key", "8"), ("row_len", "16"), ("row", "20")];
        assert_eq!(write, want.map(|(a, b)| (a.to_string(), b.to_string())).to_vec());
        assert_eq!(WRITE_HEADER_BYTES, 20);
        let command = offsets("## Command");
        assert_eq!(
            command,
            [("procedure", "0"), ("args_len", "4"), ("args", "8")]
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .to_vec()
        );
        assert_eq!(COMMAND_HEADER_BYTES, 8);
        let mut c = Vec::new();
        encode_command(&Lv::ZERO, 0, &Command { procedure: 5, args: vec![4; 3] }, &mut c);
        assert_eq!(
            (
                c[10],
                u32::from_le_bytes(c[16..20].try_into().unwrap()),
                u32::from_le_bytes(c[20..24].try_into().unwrap())
            ),
            (KIND_COMMAND, 5, 3)
        );
        // An encoded record puts each field where the document says.
        let w = RowWrite { table: TableId(3), key: RowKey(0x1122), op: WriteOp::Put(vec![9, 8]) };
        let mut out = Vec::new();
        encode(&Lv::from_slice(&[40, 56]), 2, std::slice::from_ref(&w), &mut out);
        assert_eq!(u32::from_le_bytes(out[0..4].try_into().unwrap()) as usize, out.len());
        assert_eq!(u32::from_le_bytes(out[4..8].try_into().unwrap()), crc32c::crc32c(&out[8..]));
        assert_eq!(
            (out[8], out[9], u32::from_le_bytes(out[12..16].try_into().unwrap())),
            (RECORD_VERSION, 2, 1)
        );
        assert_eq!(u64::from_le_bytes(out[24..32].try_into().unwrap()), 56);
        let at = HEADER_BYTES + 16;
        assert_eq!(u32::from_le_bytes(out[at..at + 4].try_into().unwrap()), 3);
        assert_eq!(out[at + 4], 1);
        assert_eq!(u64::from_le_bytes(out[at + 8..at + 16].try_into().unwrap()), 0x1122);
        assert_eq!(u32::from_le_bytes(out[at + 16..at + 20].try_into().unwrap()), 2);
        assert_eq!(&out[at + 20..at + 22], &[9, 8]);
    }
}
