//! Keeps the on-media format documents (`docs/format/*.md`) and the code in
//! agreement (DESIGN.md section 8).
//!
//! The markdown tables of each document are parsed: field tables
//! (`| offset | size | type | name | meaning |`), constant tables
//! (`| constant | value | meaning |`) and bit tables (`| bits | name | meaning |`).
//! Every `OFFSET_`/`TAIL_OFFSET_`/`SB_OFFSET_`/`SEG_OFFSET_` constant must
//! equal the offset of its field's row, every other public constant of the
//! format modules must appear with its value in a constant table, each
//! structure's rows must tile it without gaps, and the bytes the code actually
//! writes must be found at the offsets and sizes the document gives.
//! A mismatch fails with a message naming the document and the field.

use std::path::Path;
use std::sync::Arc;

use strata_log::pmem_log::*;
use strata_log::record::*;
use strata_log::ssd_log::*;
use strata_log::{CommitLog, Lsn, SerialLog, StreamPos, TxnId};
use strata_media::fs::{FaultFs, FileSystem};
use strata_pmem::{Region, RegionOffset};

const LOG_RECORD_MD: &str = include_str!("../../../docs/format/log-record.md");
const PMEM_LOG_MD: &str = include_str!("../../../docs/format/pmem-log.md");
const SSD_LOG_MD: &str = include_str!("../../../docs/format/ssd-log.md");
const README_MD: &str = include_str!("../../../docs/format/README.md");

const RECORD_RS: &str = include_str!("../src/record.rs");
const PMEM_LOG_RS: &str = include_str!("../src/pmem_log.rs");
const SSD_LOG_RS: &str = include_str!("../src/ssd_log.rs");

// ---------------------------------------------------------------- parsing

struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

struct Doc {
    path: &'static str,
    tables: Vec<Table>,
}

/// A row of a field table.
struct FieldRow {
    offset: String,
    size: String,
    meaning: String,
}

fn clean_cell(cell: &str) -> String {
    cell.trim().replace('`', "")
}

fn split_row(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(clean_cell).collect()
}

fn is_separator(cells: &[String]) -> bool {
    cells.iter().all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
}

impl Doc {
    fn parse(path: &'static str, text: &str) -> Doc {
        let mut tables = Vec::new();
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            if !line.trim_start().starts_with('|') {
                continue;
            }
            let columns: Vec<String> = split_row(line).into_iter().map(|c| c.to_lowercase()).collect();
            match lines.peek() {
                Some(next) if next.trim_start().starts_with('|') && is_separator(&split_row(next)) => {
                    lines.next();
                }
                _ => continue,
            }
            let mut rows = Vec::new();
            while let Some(next) = lines.peek() {
                if !next.trim_start().starts_with('|') {
                    break;
                }
                rows.push(split_row(next));
                lines.next();
            }
            tables.push(Table { columns, rows });
        }
        Doc { path, tables }
    }

    fn tables_with_columns<'a>(&'a self, columns: &'a [&str]) -> impl Iterator<Item = &'a Table> + 'a {
        self.tables.iter().filter(move |t| t.columns.iter().map(String::as_str).eq(columns.iter().copied()))
    }

    /// The field tables (`offset | size | type | name | meaning`).
    fn field_tables(&self) -> impl Iterator<Item = &Table> + '_ {
        self.tables_with_columns(&["offset", "size", "type", "name", "meaning"])
    }

    /// The one row of any field table named `name`.
    fn field(&self, name: &str) -> Result<FieldRow, String> {
        let rows: Vec<&Vec<String>> = self
            .field_tables()
            .flat_map(|t| t.rows.iter())
            .filter(|r| r.get(3).map(String::as_str) == Some(name))
            .collect();
        match rows.as_slice() {
            [row] => Ok(FieldRow { offset: row[0].clone(), size: row[1].clone(), meaning: row[4].clone() }),
            [] => Err(format!("{}: no field table row named `{name}`", self.path)),
            _ => Err(format!(
                "{}: {} field table rows named `{name}` (names must be unique)",
                self.path,
                rows.len()
            )),
        }
    }

    /// The field table that contains the row `name`.
    fn table_of(&self, name: &str) -> Result<&Table, String> {
        self.field_tables()
            .find(|t| t.rows.iter().any(|r| r.get(3).map(String::as_str) == Some(name)))
            .ok_or_else(|| format!("{}: no field table has a row named `{name}`", self.path))
    }

    /// The value cell of constant `name` in a `constant | value | meaning` table.
    fn constant(&self, name: &str) -> Result<String, String> {
        self.tables_with_columns(&["constant", "value", "meaning"])
            .flat_map(|t| t.rows.iter())
            .find(|r| r.first().map(String::as_str) == Some(name))
            .map(|r| r[1].clone())
            .ok_or_else(|| format!("{}: constant `{name}` missing from the constants table", self.path))
    }

    /// The bits cell of `name` in a `bits | name | meaning` table.
    fn bits(&self, name: &str) -> Result<String, String> {
        self.tables_with_columns(&["bits", "name", "meaning"])
            .flat_map(|t| t.rows.iter())
            .find(|r| r.get(1).map(String::as_str) == Some(name))
            .map(|r| r[0].clone())
            .ok_or_else(|| format!("{}: no bit table row named `{name}`", self.path))
    }
}

/// A decimal or `0x` hexadecimal number; `None` for formulas like `24 + payload_len`.
fn parse_num(cell: &str) -> Option<u64> {
    let s = cell.trim().replace('_', "");
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

// ---------------------------------------------------------------- checks

/// Collects mismatches so one run reports all of them.
#[derive(Default)]
struct Report {
    errors: Vec<String>,
}

impl Report {
    fn push(&mut self, e: String) {
        self.errors.push(e);
    }

    fn check<T>(&mut self, r: Result<T, String>) -> Option<T> {
        r.map_err(|e| self.push(e)).ok()
    }

    fn finish(self) {
        assert!(
            self.errors.is_empty(),
            "format documents disagree with the code:\n  {}",
            self.errors.join("\n  ")
        );
    }
}

/// The field row `field` must have `offset` (code constant `constant`), and
/// `size` if given.
fn check_field(r: &mut Report, doc: &Doc, constant: &str, field: &str, offset: u64, size: Option<u64>) {
    let Some(row) = r.check(doc.field(field)) else { return };
    match parse_num(&row.offset) {
        Some(o) if o == offset => {}
        _ => r.push(format!(
            "{}: field `{field}`: offset in the doc is `{}`, code {constant} = {offset}",
            doc.path, row.offset
        )),
    }
    if let Some(size) = size {
        match parse_num(&row.size) {
            Some(s) if s == size => {}
            _ => r.push(format!(
                "{}: field `{field}`: size in the doc is `{}`, code says {size}",
                doc.path, row.size
            )),
        }
    }
}

/// The field name documenting an offset constant: its name without the
/// prefix, lowercased (`OFFSET_PAYLOAD_LEN` -> `payload_len`).
fn field_name_of(constant: &str) -> String {
    let rest = ["TAIL_OFFSET_", "SB_OFFSET_", "SEG_OFFSET_", "OFFSET_"]
        .iter()
        .find_map(|p| constant.strip_prefix(p))
        .unwrap_or_else(|| panic!("{constant} is not an offset constant"));
    rest.to_lowercase()
}

fn check_constant(r: &mut Report, doc: &Doc, name: &str, value: u64) {
    let Some(cell) = r.check(doc.constant(name)) else { return };
    if parse_num(&cell) != Some(value) {
        r.push(format!(
            "{}: constant `{name}`: the doc says `{cell}`, code has {value} ({value:#X})",
            doc.path
        ));
    }
}

/// The `meaning` of field `field` must state `NAME = value` (magic values in
/// upper-case hex).
fn check_meaning_states(r: &mut Report, doc: &Doc, field: &str, name: &str, value: &str) {
    let Some(row) = r.check(doc.field(field)) else { return };
    let want = format!("{name} = {value}");
    if !row.meaning.to_lowercase().contains(&want.to_lowercase()) {
        r.push(format!(
            "{}: field `{field}`: meaning should state `{want}`, it is `{}`",
            doc.path, row.meaning
        ));
    }
}

/// The rows of the table holding `first` must be numeric and tile
/// `0..total_bytes` in order, without gaps or overlaps.
fn check_tiling(r: &mut Report, doc: &Doc, first: &str, total_bytes: u64) {
    let Some(table) = r.check(doc.table_of(first)) else { return };
    let mut at = 0u64;
    for row in &table.rows {
        let (Some(o), Some(s)) = (parse_num(&row[0]), parse_num(&row[1])) else {
            r.push(format!(
                "{}: field `{}`: offset `{}` / size `{}` not numeric",
                doc.path, row[3], row[0], row[1]
            ));
            return;
        };
        if o != at {
            r.push(format!(
                "{}: field `{}` starts at {o}, the previous field ends at {at}",
                doc.path, row[3]
            ));
        }
        at = o + s;
    }
    if at != total_bytes {
        r.push(format!(
            "{}: the table with `{first}` covers {at} bytes, the code's structure has {total_bytes}",
            doc.path
        ));
    }
}

/// Reads each row of the table holding `first` out of `bytes` (at the doc's
/// offset, the doc's size, little-endian) and compares it with `expect`
/// (fields not listed must be zero): the doc describes what the code writes.
fn check_encoding(r: &mut Report, doc: &Doc, first: &str, bytes: &[u8], expect: &[(&str, u64)]) {
    let Some(table) = r.check(doc.table_of(first)) else { return };
    for (name, _) in expect {
        if !table.rows.iter().any(|row| row[3] == *name) {
            r.push(format!("{}: field `{name}` missing from the table with `{first}`", doc.path));
        }
    }
    for row in &table.rows {
        let name = &row[3];
        let (Some(o), Some(s)) = (parse_num(&row[0]), parse_num(&row[1])) else { continue };
        let Some(field) = bytes.get(o as usize..(o + s) as usize) else {
            r.push(format!(
                "{}: field `{name}` at {o}+{s} lies outside the {} encoded bytes",
                doc.path,
                bytes.len()
            ));
            continue;
        };
        let want = expect.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| *v);
        let got = if s <= 8 {
            let mut le = [0u8; 8];
            le[..s as usize].copy_from_slice(field);
            u64::from_le_bytes(le)
        } else if field.iter().all(|b| *b == 0) {
            0
        } else {
            u64::MAX
        };
        if got != want {
            r.push(format!(
                "{}: field `{name}` ({s} bytes at {o}) holds {got:#X} in the encoding, expected {want:#X}",
                doc.path
            ));
        }
    }
}

/// Every `pub const NAME` of a format module must be among `covered`.
fn check_all_constants_covered(r: &mut Report, file: &str, source: &str, covered: &[&str]) {
    for line in source.lines() {
        let Some(rest) = line.trim_start().strip_prefix("pub const ") else { continue };
        if rest.starts_with("fn ") {
            continue;
        }
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !covered.contains(&name.as_str()) {
            r.push(format!(
                "{file}: `pub const {name}` is not checked against a format document (add it to the doc and to tests/format_docs.rs)"
            ));
        }
    }
}

macro_rules! konst {
    ($($c:ident),* $(,)?) => { [$((stringify!($c), $c as u64)),*] };
}

// ---------------------------------------------------------------- log record

fn check_log_record_doc(doc: &Doc) -> Vec<String> {
    let mut r = Report::default();
    let offsets = konst!(
        OFFSET_MAGIC,
        OFFSET_KIND,
        OFFSET_VERSION,
        OFFSET_PAYLOAD_LEN,
        OFFSET_BODY_CRC,
        OFFSET_TXN_ID,
        TAIL_OFFSET_COMMIT_WORD,
        TAIL_OFFSET_TAIL_CRC,
        TAIL_OFFSET_TAIL_MAGIC,
    );
    for (name, value) in offsets {
        check_field(&mut r, doc, name, &field_name_of(name), value, None);
    }
    let constants = konst!(
        RECORD_MAGIC,
        TAIL_MAGIC,
        RECORD_FORMAT_VERSION,
        HEADER_BYTES,
        TAIL_BYTES,
        MIN_RECORD_BYTES,
        RECORD_ALIGN_BYTES,
        COMMIT_FLAG,
        MAX_PAYLOAD_BYTES,
    );
    for (name, value) in constants {
        check_constant(&mut r, doc, name, value);
    }
    check_field(&mut r, doc, "HEADER_BYTES", "header", 0, Some(HEADER_BYTES));
    if let Some(row) = r.check(doc.field("tail")) {
        if parse_num(&row.size) != Some(TAIL_BYTES) {
            r.push(format!(
                "{}: field `tail`: size in the doc is `{}`, code TAIL_BYTES = {TAIL_BYTES}",
                doc.path, row.size
            ));
        }
    }
    check_meaning_states(
        &mut r,
        doc,
        "magic",
        "RECORD_MAGIC",
        &format!("{RECORD_MAGIC:#X}").replace("0X", "0x"),
    );
    check_meaning_states(
        &mut r,
        doc,
        "tail_magic",
        "TAIL_MAGIC",
        &format!("{TAIL_MAGIC:#X}").replace("0X", "0x"),
    );
    check_meaning_states(&mut r, doc, "version", "RECORD_FORMAT_VERSION", &RECORD_FORMAT_VERSION.to_string());
    if let Some(bits) = r.check(doc.bits("commit_flag")) {
        if parse_num(&bits) != Some(COMMIT_FLAG.trailing_zeros() as u64) || COMMIT_FLAG.count_ones() != 1 {
            r.push(format!(
                "{}: bit `commit_flag` is `{bits}` in the doc, COMMIT_FLAG is bit {}",
                doc.path,
                COMMIT_FLAG.trailing_zeros()
            ));
        }
    }
    if let Some(bits) = r.check(doc.bits("lsn")) {
        let want = format!("0..={}", COMMIT_FLAG.trailing_zeros() - 1);
        if bits != want {
            r.push(format!("{}: bits of `lsn` are `{bits}` in the doc, the code uses {want}", doc.path));
        }
    }
    check_tiling(&mut r, doc, "payload_len", HEADER_BYTES);
    check_tiling(&mut r, doc, "commit_word", TAIL_BYTES);

    // What the codec writes, read back at the documented offsets and sizes.
    let payload = b"format docs!!";
    let txn = TxnId(0x1122_3344_5566_7788);
    let pos = StreamPos(4096);
    let mut rec = Vec::new();
    let lsn = encode_record(RecordKind::Txn, txn, pos, payload, &mut rec);
    let mut body = Vec::new();
    let body_crc = encode_body(RecordKind::Txn, txn, payload, &mut body);
    let (header, tail) = (&rec[..HEADER_BYTES as usize], &rec[rec.len() - TAIL_BYTES as usize..]);
    check_encoding(
        &mut r,
        doc,
        "payload_len",
        header,
        &[
            ("magic", RECORD_MAGIC.into()),
            ("kind", RecordKind::Txn as u64),
            ("version", RECORD_FORMAT_VERSION.into()),
            ("payload_len", payload.len() as u64),
            ("body_crc", body_crc.into()),
            ("txn_id", txn.0),
        ],
    );
    let word = COMMIT_FLAG | lsn.0;
    check_encoding(
        &mut r,
        doc,
        "commit_word",
        tail,
        &[
            ("commit_word", word),
            ("tail_crc", tail_crc(word, body_crc).into()),
            ("tail_magic", TAIL_MAGIC.into()),
        ],
    );
    // The documented checksums, recomputed from the documented rules.
    let mut zeroed = header.to_vec();
    zeroed[OFFSET_BODY_CRC..OFFSET_BODY_CRC + 4].fill(0);
    if crc32c::crc32c_append(crc32c::crc32c(&zeroed), payload) != body_crc {
        r.push(format!("{}: body_crc is not crc32c(header with CRC zeroed ‖ payload)", doc.path));
    }
    let mut tail_input = word.to_le_bytes().to_vec();
    tail_input.extend_from_slice(&body_crc.to_le_bytes());
    if crc32c::crc32c(&tail_input) != tail_crc(word, body_crc) {
        r.push(format!("{}: tail_crc is not crc32c(commit_word ‖ body_crc)", doc.path));
    }
    if lsn.0 != pos.0 + rec.len() as u64 || rec.len() as u64 != record_len(payload.len() as u64) {
        r.push(format!("{}: LSN is not the stream position of the record's end", doc.path));
    }
    let mut covered: Vec<&str> = offsets.iter().chain(constants.iter()).map(|(n, _)| *n).collect();
    covered.sort_unstable();
    check_all_constants_covered(&mut r, "src/record.rs", RECORD_RS, &covered);
    r.errors
}

#[test]
fn log_record_doc_matches_record_rs() {
    let doc = Doc::parse("docs/format/log-record.md", LOG_RECORD_MD);
    Report { errors: check_log_record_doc(&doc) }.finish();
}

#[test]
fn a_wrong_offset_in_the_doc_is_reported_by_field_name() {
    // The checker itself: move `payload_len` to offset 9 and drop `txn_id`.
    let doctored = LOG_RECORD_MD
        .replace("| 8 | 4 | u32 | `payload_len` |", "| 9 | 4 | u32 | `payload_len` |")
        .replace("| 16 | 8 | u64 | `txn_id` |", "| 16 | 8 | u64 | `txn` |");
    assert_ne!(doctored, LOG_RECORD_MD, "the doctoring patterns no longer match the document");
    let doctored: &'static str = Box::leak(doctored.into_boxed_str());
    let errors = check_log_record_doc(&Doc::parse("doctored log-record.md", doctored));
    assert!(
        errors.iter().any(|e| e.contains("`payload_len`") && e.contains("OFFSET_PAYLOAD_LEN")),
        "no error names payload_len: {errors:#?}"
    );
    assert!(errors.iter().any(|e| e.contains("`txn_id`")), "no error names txn_id: {errors:#?}");
}

// ---------------------------------------------------------------- pmem log

#[test]
fn pmem_log_doc_matches_pmem_log_rs() {
    let doc = Doc::parse("docs/format/pmem-log.md", PMEM_LOG_MD);
    let mut r = Report::default();
    let offsets = konst!(
        SB_OFFSET_MAGIC,
        SB_OFFSET_VERSION,
        SB_OFFSET_ALIGN,
        SB_OFFSET_CAPACITY,
        SB_OFFSET_DATA_OFFSET,
        SB_OFFSET_CRC,
    );
    for (name, value) in offsets {
        check_field(&mut r, &doc, name, &field_name_of(name), value, None);
    }
    let constants = konst!(
        PMEM_LOG_MAGIC,
        PMEM_LOG_FORMAT_VERSION,
        SB_CRC_COVERED_BYTES,
        HEAD_WORD_OFFSET,
        DATA_AREA_OFFSET,
        HEAD_UNITS_BITS,
        HEAD_CHECK_SHIFT
    );
    for (name, value) in constants {
        check_constant(&mut r, &doc, name, value);
    }
    check_field(&mut r, &doc, "HEAD_WORD_OFFSET", "head_word", HEAD_WORD_OFFSET, Some(8));
    check_field(&mut r, &doc, "DATA_AREA_OFFSET", "data_area", DATA_AREA_OFFSET, None);
    check_meaning_states(
        &mut r,
        &doc,
        "magic",
        "PMEM_LOG_MAGIC",
        &format!("{PMEM_LOG_MAGIC:#X}").replace("0X", "0x"),
    );
    check_meaning_states(
        &mut r,
        &doc,
        "version",
        "PMEM_LOG_FORMAT_VERSION",
        &PMEM_LOG_FORMAT_VERSION.to_string(),
    );
    check_meaning_states(&mut r, &doc, "data_offset", "DATA_AREA_OFFSET", &DATA_AREA_OFFSET.to_string());
    check_tiling(&mut r, &doc, "capacity", 64);
    if let Some(table) = r.check(doc.table_of("head_word")) {
        // superblock, head word, unused: up to the data area.
        let before_data =
            Table { columns: table.columns.clone(), rows: table.rows[..table.rows.len() - 1].to_vec() };
        let sub = Doc { path: doc.path, tables: vec![before_data] };
        check_tiling(&mut r, &sub, "head_word", DATA_AREA_OFFSET);
    }

    // What the device writes, read back at the documented offsets.
    let (capacity, align) = (4096u64, 256u64);
    let region = Arc::new(Region::sim(PmemLog::footprint_bytes(capacity)));
    let log = SerialLog::create_pmem(region.clone(), RegionOffset(0), capacity, align).unwrap();
    let lsn = log.commit(TxnId(5), b"pmem format").unwrap();
    log.truncate_all().unwrap();
    let sb = region.read_vec(RegionOffset(0), 64);
    let sb_crc = crc32c::crc32c(&sb[..SB_CRC_COVERED_BYTES as usize]);
    check_encoding(
        &mut r,
        &doc,
        "capacity",
        &sb,
        &[
            ("magic", PMEM_LOG_MAGIC),
            ("version", PMEM_LOG_FORMAT_VERSION.into()),
            ("align", align),
            ("capacity", capacity),
            ("data_offset", DATA_AREA_OFFSET),
            ("crc", sb_crc.into()),
        ],
    );
    if let Some(row) = r.check(doc.field("head_word")) {
        let word = region.load_u64(RegionOffset(parse_num(&row.offset).unwrap_or(0)));
        let want = lsn.0.div_ceil(align) * align;
        let units = word & ((1u64 << HEAD_UNITS_BITS) - 1);
        let check = word >> HEAD_CHECK_SHIFT;
        let doc_check = (crc32c::crc32c(&units.to_le_bytes()) & 0xFFFF) as u64;
        if units * align != want || check != doc_check {
            r.push(format!(
                "{}: head word after truncate_all is {word:#018x}: units {units} (x align = {}), check {check:#06x}; \
                 the doc says units = round_up(LSN {}, align) / align = {} and check = crc32c(units LE) & 0xFFFF = {doc_check:#06x}",
                doc.path,
                units * align,
                lsn.0,
                want / align
            ));
        }
    }
    if let Some(row) = r.check(doc.field("data_area")) {
        let first = region.read_u32(RegionOffset(parse_num(&row.offset).unwrap_or(0)));
        if first != RECORD_MAGIC {
            r.push(format!("{}: the first record is not at the documented data_area offset", doc.path));
        }
    }
    let mut covered: Vec<&str> = offsets.iter().chain(constants.iter()).map(|(n, _)| *n).collect();
    covered.sort_unstable();
    check_all_constants_covered(&mut r, "src/pmem_log.rs", PMEM_LOG_RS, &covered);
    r.finish();
}

// ---------------------------------------------------------------- ssd log

#[test]
fn ssd_log_doc_matches_ssd_log_rs() {
    let doc = Doc::parse("docs/format/ssd-log.md", SSD_LOG_MD);
    let mut r = Report::default();
    let offsets = konst!(SEG_OFFSET_MAGIC, SEG_OFFSET_VERSION, SEG_OFFSET_BASE_POS, SEG_OFFSET_CRC);
    for (name, value) in offsets {
        check_field(&mut r, &doc, name, &field_name_of(name), value, None);
    }
    let constants =
        konst!(SSD_LOG_MAGIC, SSD_LOG_FORMAT_VERSION, SEGMENT_HEADER_BYTES, SEG_CRC_COVERED_BYTES);
    for (name, value) in constants {
        check_constant(&mut r, &doc, name, value);
    }
    check_field(&mut r, &doc, "SEGMENT_HEADER_BYTES", "segment_header", 0, Some(SEGMENT_HEADER_BYTES));
    check_field(&mut r, &doc, "SEGMENT_HEADER_BYTES", "records", SEGMENT_HEADER_BYTES, None);
    check_meaning_states(
        &mut r,
        &doc,
        "magic",
        "SSD_LOG_MAGIC",
        &format!("{SSD_LOG_MAGIC:#X}").replace("0X", "0x"),
    );
    check_meaning_states(
        &mut r,
        &doc,
        "version",
        "SSD_LOG_FORMAT_VERSION",
        &SSD_LOG_FORMAT_VERSION.to_string(),
    );
    check_tiling(&mut r, &doc, "base_pos", SEGMENT_HEADER_BYTES);

    // What the device writes: a segment after one rotation.
    let fs = FaultFs::new();
    let dir = Path::new("/wal");
    let options = SsdLogOptions { preallocate_bytes: 4096, ..Default::default() };
    let (log, _) = SerialLog::open_ssd(Arc::new(fs.clone()), dir, options).unwrap();
    let lsn = log.commit(TxnId(1), b"first segment").unwrap();
    log.truncate_all().unwrap();
    log.commit(TxnId(2), b"second segment").unwrap();
    drop(log);
    let name = format!("wal-{:020}.log", lsn.0);
    if !SSD_LOG_MD.contains("wal-<base>.log") || !SSD_LOG_MD.contains("zero-padded to 20 digits") {
        r.push(format!("{}: the segment file name rule is not stated", doc.path));
    }
    let files = fs.list_dir(dir).unwrap();
    if files != vec![dir.join(&name)] {
        r.push(format!(
            "{}: after one rotation the directory holds {files:?}, expected only {name}",
            doc.path
        ));
    }
    let bytes = fs.peek(&dir.join(&name)).unwrap_or_default();
    let header = bytes.get(..SEGMENT_HEADER_BYTES as usize).unwrap_or_default();
    let crc = crc32c::crc32c(header.get(..SEG_CRC_COVERED_BYTES).unwrap_or_default());
    check_encoding(
        &mut r,
        &doc,
        "base_pos",
        header,
        &[
            ("magic", SSD_LOG_MAGIC),
            ("version", SSD_LOG_FORMAT_VERSION.into()),
            ("base_pos", lsn.0),
            ("crc", crc.into()),
        ],
    );
    if let Some(row) = r.check(doc.field("records")) {
        let at = parse_num(&row.offset).unwrap_or(0) as usize;
        let magic = bytes.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()));
        if magic != Some(RECORD_MAGIC) {
            r.push(format!(
                "{}: the segment's first record is not at the documented records offset",
                doc.path
            ));
        }
    }
    let mut covered: Vec<&str> = offsets.iter().chain(constants.iter()).map(|(n, _)| *n).collect();
    covered.sort_unstable();
    check_all_constants_covered(&mut r, "src/ssd_log.rs", SSD_LOG_RS, &covered);
    r.finish();
}

// ---------------------------------------------------------------- index

#[test]
fn readme_links_every_format_doc() {
    for doc in ["log-record.md", "pmem-log.md", "ssd-log.md", "halloc.md"] {
        assert!(README_MD.contains(&format!("]({doc})")), "docs/format/README.md does not link {doc}");
    }
    for (path, text) in
        [("log-record.md", LOG_RECORD_MD), ("pmem-log.md", PMEM_LOG_MD), ("ssd-log.md", SSD_LOG_MD)]
    {
        let lower = text.to_lowercase();
        for must in ["version", "little-endian", "crc32c", "| offset | size | type | name | meaning |"] {
            assert!(lower.contains(must), "docs/format/{path} does not mention `{must}`");
        }
    }
    // Lsn is the stream position of the record's end, as the docs say.
    assert_eq!(Lsn(record_len(0)), Lsn(MIN_RECORD_BYTES));
}
