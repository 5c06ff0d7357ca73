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
const KIND_ANCHOR: u8 = 2;
/// Bytes of a command body before its arguments: procedure id, argument length.
pub const COMMAND_HEADER_BYTES: usize = 8;
/// Bytes of an LV section before its elements: the mask and a reserved word.
pub const LV_MASK_BYTES: usize = 8;

/// A stored procedure's invocation (command logging).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub procedure: u32,
    pub args: Vec<u8>,
}

/// What a record carries after its LV.
#[derive(Copy, Clone, Debug)]
pub enum RecordBody<'a> {
    Data(&'a [RowWrite]),
    Command(&'a Command),
    /// An anchor (taurus.txt Algorithm 5, `FlushPLV`): the LV is every
    /// log's committed end when it was written; later records of this log
    /// leave out the elements it covers.
    Anchor,
}

/// A decoded record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The LV copy: the stored elements at their positions, the others 0
    /// until [`Record::decompress`] fills them from the log's last anchor.
    pub lv: Lv,
    pub lv_len: usize,
    /// Which elements the record stores (bit j: element j).
    pub lv_mask: u32,
    /// Data logging: the writes (empty for a command record or an anchor).
    pub writes: Vec<RowWrite>,
    /// Command logging: the invocation to re-execute.
    pub command: Option<Command>,
    /// An anchor, not a transaction.
    pub anchor: bool,
}

impl Record {
    /// Algorithm 5's `Decompress`: the elements the record left out are
    /// the last anchor's (at least the record's own, so the dependencies
    /// only grow).
    pub fn decompress(&mut self, anchor: &Lv) {
        self.lv = self.lv.decompressed(self.lv_mask, anchor, self.lv_len);
        self.lv_mask = full_mask(self.lv_len);
    }

    /// The body, for re-encoding.
    pub fn body(&self) -> RecordBody<'_> {
        match (&self.command, self.anchor) {
            (_, true) => RecordBody::Anchor,
            (Some(c), false) => RecordBody::Command(c),
            (None, false) => RecordBody::Data(&self.writes),
        }
    }
}

/// Every element of an LV of `lv_len` elements.
pub fn full_mask(lv_len: usize) -> u32 {
    if lv_len >= 32 {
        u32::MAX
    } else {
        (1u32 << lv_len) - 1
    }
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

/// Bytes of the LV section: none without an LV (serial), else the mask
/// word and the stored elements.
fn lv_section_bytes(lv_len: usize, mask: u32) -> usize {
    if lv_len == 0 {
        0
    } else {
        LV_MASK_BYTES + 8 * mask.count_ones() as usize
    }
}

fn body_bytes(body: RecordBody<'_>) -> usize {
    match body {
        RecordBody::Data(writes) => writes
            .iter()
            .map(|w| WRITE_HEADER_BYTES + if let WriteOp::Put(r) = &w.op { r.len() } else { 0 })
            .sum(),
        RecordBody::Command(c) => COMMAND_HEADER_BYTES + c.args.len(),
        RecordBody::Anchor => 0,
    }
}

/// Bytes a record takes.
pub fn encoded_len_masked(lv_len: usize, mask: u32, body: RecordBody<'_>) -> usize {
    (HEADER_BYTES + lv_section_bytes(lv_len, mask) + body_bytes(body)).next_multiple_of(RECORD_ALIGN)
}

/// Bytes a data record of `writes` with all `lv_len` LV elements takes.
pub fn encoded_len(lv_len: usize, writes: &[RowWrite]) -> usize {
    encoded_len_masked(lv_len, full_mask(lv_len), RecordBody::Data(writes))
}

/// Bytes a command record with all `lv_len` LV elements and `args_len` argument bytes takes.
pub fn encoded_command_len(lv_len: usize, args_len: usize) -> usize {
    (HEADER_BYTES + lv_section_bytes(lv_len, full_mask(lv_len)) + COMMAND_HEADER_BYTES + args_len)
        .next_multiple_of(RECORD_ALIGN)
}

/// Appends a record to `out`: `lv`'s elements in `mask` (of `lv_len`),
/// then `body`.
pub fn encode_masked(lv: &Lv, lv_len: usize, mask: u32, body: RecordBody<'_>, out: &mut Vec<u8>) {
    assert!(lv_len <= MAX_LOGS && mask & !full_mask(lv_len) == 0, "an LV mask within the log count");
    let start = out.len();
    let len = encoded_len_masked(lv_len, mask, body);
    let (kind, count) = match body {
        RecordBody::Data(w) => (KIND_DATA, w.len() as u32),
        RecordBody::Command(_) => (KIND_COMMAND, 1),
        RecordBody::Anchor => (KIND_ANCHOR, 0),
    };
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.push(RECORD_VERSION);
    out.push(lv_len as u8);
    out.extend_from_slice(&[kind, 0]);
    out.extend_from_slice(&count.to_le_bytes());
    if lv_len > 0 {
        out.extend_from_slice(&mask.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        for j in (0..lv_len).filter(|j| mask & (1 << j) != 0) {
            out.extend_from_slice(&lv.get(j).to_le_bytes());
        }
    }
    match body {
        RecordBody::Data(writes) => {
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
        }
        RecordBody::Command(c) => {
            out.extend_from_slice(&c.procedure.to_le_bytes());
            out.extend_from_slice(&(c.args.len() as u32).to_le_bytes());
            out.extend_from_slice(&c.args);
        }
        RecordBody::Anchor => {}
    }
    out.resize(start + len, 0);
    let crc = crc32c::crc32c(&out[start + 8..start + len]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// Appends a command record with every LV element (count 1: one invocation).
pub fn encode_command(lv: &Lv, lv_len: usize, command: &Command, out: &mut Vec<u8>) {
    encode_masked(lv, lv_len, full_mask(lv_len), RecordBody::Command(command), out)
}

/// Appends a data record with every LV element.
pub fn encode(lv: &Lv, lv_len: usize, writes: &[RowWrite], out: &mut Vec<u8>) {
    encode_masked(lv, lv_len, full_mask(lv_len), RecordBody::Data(writes), out)
}

/// The length field of the record at the start of `bytes` (0: no record).
pub fn peek_len(bytes: &[u8]) -> u32 {
    bytes.get(..4).map_or(0, |b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
}

/// What the log manager reads of a record it flushed: whether it is an
/// anchor, and its LV as stored with its mask; `None` if the header is short.
pub fn peek_lv(bytes: &[u8]) -> Option<(bool, Lv, u32)> {
    let n = (*bytes.get(9)? as usize).min(MAX_LOGS);
    let anchor = *bytes.get(10)? == KIND_ANCHOR;
    if n == 0 {
        return Some((anchor, Lv::ZERO, 0));
    }
    let mask = u32::from_le_bytes(bytes.get(HEADER_BYTES..HEADER_BYTES + 4)?.try_into().expect("4 bytes"));
    let mut lv = Lv::ZERO;
    let mut at = HEADER_BYTES + LV_MASK_BYTES;
    for j in (0..n).filter(|j| mask & (1 << j) != 0) {
        lv.set(j, u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().expect("8 bytes")));
        at += 8;
    }
    Some((anchor, lv, mask))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Decodes the record starting at `bytes[0]`, which sits at log position
/// `at`. `Ok(None)` when no record starts there: a zero length (the end of
/// what was written), or a record running past `bytes` (a torn tail). The
/// LV comes back as stored ([`Record::decompress`] fills the rest).
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
    if rec[11] != 0 || !matches!(kind, KIND_DATA | KIND_COMMAND | KIND_ANCHOR) {
        return Err(invalid(format!("kind {kind}, reserved byte {}", rec[11])));
    }
    let count = u32_at(rec, 12) as usize;
    let mut lv = Lv::ZERO;
    let mut p = HEADER_BYTES;
    let mut mask = 0;
    if lv_len > 0 {
        if p + LV_MASK_BYTES > rec.len() {
            return Err(invalid("LV mask past the record's end".into()));
        }
        mask = u32_at(rec, p);
        if mask & !full_mask(lv_len) != 0 || u32_at(rec, p + 4) != 0 {
            return Err(invalid(format!("LV mask {mask:#x} for {lv_len} elements, or a reserved word")));
        }
        p += LV_MASK_BYTES;
        if p + 8 * mask.count_ones() as usize > rec.len() {
            return Err(invalid("LV past the record's end".into()));
        }
        for j in (0..lv_len).filter(|j| mask & (1 << j) != 0) {
            lv.set(j, u64_at(rec, p));
            p += 8;
        }
    }
    let mut record = Record { lv, lv_len, lv_mask: mask, writes: Vec::new(), command: None, anchor: false };
    match kind {
        KIND_ANCHOR => {
            if count != 0 || mask != full_mask(lv_len) || lv_len == 0 {
                return Err(invalid(format!("anchor with count {count}, mask {mask:#x}")));
            }
            record.anchor = true;
        }
        KIND_COMMAND => {
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
            record.command = Some(Command { procedure, args });
        }
        _ => {
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
                let row =
                    rec.get(p..p + row_len).ok_or_else(|| invalid("row past the record's end".into()))?;
                p += row_len;
                let op = match op {
                    OP_PUT => WriteOp::Put(row.to_vec()),
                    OP_DELETE if row_len == 0 => WriteOp::Delete,
                    other => return Err(invalid(format!("write op {other} with {row_len} row bytes"))),
                };
                writes.push(RowWrite { table, key, op });
            }
            record.writes = writes;
        }
    }
    if rec[p..].iter().any(|b| *b != 0) || len as usize != encoded_len_masked(lv_len, mask, record.body()) {
        return Err(invalid("padding that is not the zeros up to the next multiple of 8".into()));
    }
    Ok(Some((record, len as usize)))
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
            assert_eq!(peek_lv(&out[1..]), Some((false, lv, full_mask(lv_len))));
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

    fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    fn u32_le(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    fn u64_le(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn the_tables_match_the_encoder() {
        let header = [
            ("total_len", "0"),
            ("crc32c", "4"),
            ("version", "8"),
            ("lv_len", "9"),
            ("kind", "10"),
            ("reserved", "11"),
            ("count", "12"),
            ("lv", "16"),
        ];
        assert_eq!(offsets("## Header"), owned(&header));
        assert_eq!(HEADER_BYTES, 16);
        assert_eq!(offsets("## LV section"), owned(&[("mask", "0"), ("reserved", "4"), ("elements", "8")]));
        assert_eq!(LV_MASK_BYTES, 8);
        let write =
            [("table", "0"), ("op", "4"), ("reserved", "5"), ("key", "8"), ("row_len", "16"), ("row", "20")];
        assert_eq!(offsets("## Write"), owned(&write));
        assert_eq!(WRITE_HEADER_BYTES, 20);
        assert_eq!(offsets("## Command"), owned(&[("procedure", "0"), ("args_len", "4"), ("args", "8")]));
        assert_eq!(COMMAND_HEADER_BYTES, 8);
    }

    #[test]
    fn an_encoded_record_puts_each_field_where_the_document_says() {
        // Two logs, element 1 stored only (mask 0b10).
        let w = RowWrite { table: TableId(3), key: RowKey(0x1122), op: WriteOp::Put(vec![9, 8]) };
        let mut out = Vec::new();
        encode_masked(
            &Lv::from_slice(&[40, 56]),
            2,
            0b10,
            RecordBody::Data(std::slice::from_ref(&w)),
            &mut out,
        );
        assert_eq!(u32_le(&out, 0) as usize, out.len());
        assert_eq!(u32_le(&out, 4), crc32c::crc32c(&out[8..]));
        assert_eq!((out[8], out[9], out[10], u32_le(&out, 12)), (RECORD_VERSION, 2, KIND_DATA, 1));
        assert_eq!((u32_le(&out, 16), u32_le(&out, 20), u64_le(&out, 24)), (0b10, 0, 56));
        let at = HEADER_BYTES + LV_MASK_BYTES + 8;
        assert_eq!((u32_le(&out, at), out[at + 4], u64_le(&out, at + 8)), (3, 1, 0x1122));
        assert_eq!((u32_le(&out, at + 16), &out[at + 20..at + 22]), (2, &[9u8, 8][..]));
        let (rec, _) = decode(&out, 0).unwrap().unwrap();
        assert_eq!((rec.lv, rec.lv_mask), (Lv::from_slice(&[0, 56]), 0b10));
        // A command: kind 1, procedure and argument length after the LV section.
        let mut c = Vec::new();
        encode_command(&Lv::ZERO, 0, &Command { procedure: 5, args: vec![4; 3] }, &mut c);
        assert_eq!(
            (c[10], u32_le(&c, 16), u32_le(&c, 20), &c[24..27]),
            (KIND_COMMAND, 5, 3, &[4u8, 4, 4][..])
        );
        // An anchor: kind 2, count 0, every element.
        let mut a = Vec::new();
        encode_masked(&Lv::from_slice(&[7, 9]), 2, 0b11, RecordBody::Anchor, &mut a);
        assert_eq!((a[10], u32_le(&a, 12), u32_le(&a, 16), a.len()), (KIND_ANCHOR, 0, 0b11, 40));
        assert!(decode(&a, 0).unwrap().unwrap().0.anchor);
    }
}
