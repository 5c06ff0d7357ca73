//! The byte layout of a block file (`docs/format/block-file.md`): constants,
//! encoding of header, index entries and footer, and the pure validation that
//! both [`BlockFile::open`](super::BlockFile::open) and
//! [`BlockFile::parse`](super::BlockFile::parse) run. Nothing here does I/O.

use super::summary::{BlockSummary, SUMMARY_BYTES};
use crate::error::FormatError;
use crate::model::{SeriesId, TimestampNs};

/// "STRATABF" (block file) as a little-endian u64, at the start of the file.
pub const BLOCK_FILE_MAGIC: u64 = u64::from_le_bytes(*b"STRATABF");
/// "STRBFEND" as a little-endian u64, the last 8 bytes of the file.
pub const BLOCK_FILE_FOOTER_MAGIC: u64 = u64::from_le_bytes(*b"STRBFEND");
/// Version 2 added the block summary to each index entry; version-1 files
/// (44-byte entries, no summaries) are still read.
pub const BLOCK_FILE_FORMAT_VERSION: u32 = 2;
/// The oldest version readers accept.
pub const BLOCK_FILE_OLDEST_VERSION: u32 = 1;

pub const BLOCK_FILE_HEADER_BYTES: u64 = 32;
pub const HDR_OFFSET_MAGIC: usize = 0;
pub const HDR_OFFSET_VERSION: usize = 8;
pub const HDR_OFFSET_RESERVED: usize = 12;
pub const HDR_OFFSET_FILE_SEQ: usize = 16;
pub const HDR_OFFSET_RESERVED2: usize = 24;
pub const HDR_OFFSET_CRC: usize = 28;
/// The header CRC32C covers bytes 0..28 (everything before it).
pub const HDR_CRC_COVERED_BYTES: usize = 28;

pub const BLOCK_INDEX_ENTRY_BYTES: u64 = 88;
/// The entry of a version-1 file: the fields up to `block_crc`.
pub const BLOCK_INDEX_ENTRY_BYTES_V1: u64 = 44;
pub const ENTRY_OFFSET_SERIES: usize = 0;
pub const ENTRY_OFFSET_MIN_TS: usize = 8;
pub const ENTRY_OFFSET_MAX_TS: usize = 16;
pub const ENTRY_OFFSET_POINT_COUNT: usize = 24;
pub const ENTRY_OFFSET_BLOCK_OFFSET: usize = 28;
pub const ENTRY_OFFSET_BLOCK_LEN: usize = 36;
pub const ENTRY_OFFSET_BLOCK_CRC: usize = 40;
pub const ENTRY_OFFSET_SUMMARY_KIND: usize = 44;
pub const ENTRY_OFFSET_SUM: usize = 48;
pub const ENTRY_OFFSET_MIN: usize = 56;
pub const ENTRY_OFFSET_MAX: usize = 64;
pub const ENTRY_OFFSET_FIRST: usize = 72;
pub const ENTRY_OFFSET_LAST: usize = 80;

/// Bytes of one index entry in a file of `version` (a supported one).
pub fn entry_bytes(version: u32) -> u64 {
    if version == 1 {
        BLOCK_INDEX_ENTRY_BYTES_V1
    } else {
        BLOCK_INDEX_ENTRY_BYTES
    }
}

pub const BLOCK_FILE_FOOTER_BYTES: u64 = 24;
pub const FTR_OFFSET_INDEX_OFFSET: usize = 0;
pub const FTR_OFFSET_ENTRY_COUNT: usize = 8;
pub const FTR_OFFSET_INDEX_CRC: usize = 12;
pub const FTR_OFFSET_MAGIC: usize = 16;

/// Where one block of a block file is and what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockIndexEntry {
    pub series: SeriesId,
    /// Smallest timestamp of a point in the block.
    pub min_ts: TimestampNs,
    /// Largest timestamp of a point in the block (`>= min_ts`).
    pub max_ts: TimestampNs,
    /// Points in the block (at least one).
    pub point_count: u32,
    /// File offset of the block's first byte.
    pub offset: u64,
    /// Block length (at least one byte).
    pub len_bytes: u32,
    /// CRC32C of the block's bytes.
    pub crc32c: u32,
    /// The block's aggregates (None: version-1 file, or a block of strings).
    pub summary: Option<BlockSummary>,
}

impl BlockIndexEntry {
    /// The index order: by series, then by `min_ts`, then by offset (ties in
    /// (series, min_ts) keep the order the blocks were appended in).
    pub(crate) fn sort_key(&self) -> (SeriesId, TimestampNs, u64) {
        (self.series, self.min_ts, self.offset)
    }

    /// One past the block's last byte; `None` on overflow.
    pub(crate) fn end(&self) -> Option<u64> {
        self.offset.checked_add(u64::from(self.len_bytes))
    }
}

/// Header and footer fields of a valid block file.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Footer {
    /// The header's format version (it sizes the entries).
    pub(crate) version: u32,
    pub(crate) index_offset: u64,
    pub(crate) entry_count: u32,
    pub(crate) index_crc: u32,
}

impl Footer {
    /// Bytes of the index.
    pub(crate) fn index_len(&self) -> u64 {
        u64::from(self.entry_count) * entry_bytes(self.version)
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

pub(crate) fn encode_header(version: u32, file_seq: u64) -> [u8; BLOCK_FILE_HEADER_BYTES as usize] {
    let mut h = [0u8; BLOCK_FILE_HEADER_BYTES as usize];
    h[HDR_OFFSET_MAGIC..HDR_OFFSET_MAGIC + 8].copy_from_slice(&BLOCK_FILE_MAGIC.to_le_bytes());
    h[HDR_OFFSET_VERSION..HDR_OFFSET_VERSION + 4].copy_from_slice(&version.to_le_bytes());
    h[HDR_OFFSET_FILE_SEQ..HDR_OFFSET_FILE_SEQ + 8].copy_from_slice(&file_seq.to_le_bytes());
    let crc = crc32c::crc32c(&h[..HDR_CRC_COVERED_BYTES]);
    h[HDR_OFFSET_CRC..HDR_OFFSET_CRC + 4].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Checks the header (the first [`BLOCK_FILE_HEADER_BYTES`] of `h`) and
/// returns the format version and the file sequence number.
pub(crate) fn decode_header(h: &[u8]) -> Result<(u32, u64), FormatError> {
    if h.len() < BLOCK_FILE_HEADER_BYTES as usize {
        return Err(FormatError::TooShort {
            what: "header",
            need: BLOCK_FILE_HEADER_BYTES,
            have: h.len() as u64,
        });
    }
    if u64_at(h, HDR_OFFSET_MAGIC) != BLOCK_FILE_MAGIC {
        return Err(FormatError::BadMagic("bad header magic (not a block file)"));
    }
    FormatError::check_crc("header", u32_at(h, HDR_OFFSET_CRC), crc32c::crc32c(&h[..HDR_CRC_COVERED_BYTES]))?;
    let version = u32_at(h, HDR_OFFSET_VERSION);
    if !(BLOCK_FILE_OLDEST_VERSION..=BLOCK_FILE_FORMAT_VERSION).contains(&version) {
        return Err(FormatError::UnsupportedVersion { what: "block file", version });
    }
    if u32_at(h, HDR_OFFSET_RESERVED) != 0 || u32_at(h, HDR_OFFSET_RESERVED2) != 0 {
        return Err(FormatError::Invalid("reserved header bytes are not zero".into()));
    }
    Ok((version, u64_at(h, HDR_OFFSET_FILE_SEQ)))
}

/// Appends the entry as a file of `version` holds it (version 1 has no
/// summary fields: the caller checked there is no summary).
pub(crate) fn encode_entry(version: u32, e: &BlockIndexEntry, out: &mut Vec<u8>) {
    out.extend_from_slice(&e.series.0.to_le_bytes());
    out.extend_from_slice(&e.min_ts.to_le_bytes());
    out.extend_from_slice(&e.max_ts.to_le_bytes());
    out.extend_from_slice(&e.point_count.to_le_bytes());
    out.extend_from_slice(&e.offset.to_le_bytes());
    out.extend_from_slice(&e.len_bytes.to_le_bytes());
    out.extend_from_slice(&e.crc32c.to_le_bytes());
    if version >= 2 {
        BlockSummary::encode(e.summary.as_ref(), out);
    }
}

fn decode_entry(b: &[u8]) -> Result<BlockIndexEntry, FormatError> {
    let summary = match b.len() {
        n if n == BLOCK_INDEX_ENTRY_BYTES as usize => {
            BlockSummary::decode(&b[ENTRY_OFFSET_SUMMARY_KIND..ENTRY_OFFSET_SUMMARY_KIND + SUMMARY_BYTES])?
        }
        _ => None,
    };
    Ok(BlockIndexEntry {
        series: SeriesId(u64_at(b, ENTRY_OFFSET_SERIES)),
        min_ts: u64_at(b, ENTRY_OFFSET_MIN_TS) as i64,
        max_ts: u64_at(b, ENTRY_OFFSET_MAX_TS) as i64,
        point_count: u32_at(b, ENTRY_OFFSET_POINT_COUNT),
        offset: u64_at(b, ENTRY_OFFSET_BLOCK_OFFSET),
        len_bytes: u32_at(b, ENTRY_OFFSET_BLOCK_LEN),
        crc32c: u32_at(b, ENTRY_OFFSET_BLOCK_CRC),
        summary,
    })
}

/// The index bytes of `entries` (already in index order) in a file of `version`.
pub(crate) fn encode_index(version: u32, entries: &[BlockIndexEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * entry_bytes(version) as usize);
    for e in entries {
        encode_entry(version, e, &mut out);
    }
    out
}

pub(crate) fn encode_footer(footer: &Footer) -> [u8; BLOCK_FILE_FOOTER_BYTES as usize] {
    let mut f = [0u8; BLOCK_FILE_FOOTER_BYTES as usize];
    f[FTR_OFFSET_INDEX_OFFSET..FTR_OFFSET_INDEX_OFFSET + 8]
        .copy_from_slice(&footer.index_offset.to_le_bytes());
    f[FTR_OFFSET_ENTRY_COUNT..FTR_OFFSET_ENTRY_COUNT + 4].copy_from_slice(&footer.entry_count.to_le_bytes());
    f[FTR_OFFSET_INDEX_CRC..FTR_OFFSET_INDEX_CRC + 4].copy_from_slice(&footer.index_crc.to_le_bytes());
    f[FTR_OFFSET_MAGIC..FTR_OFFSET_MAGIC + 8].copy_from_slice(&BLOCK_FILE_FOOTER_MAGIC.to_le_bytes());
    f
}

/// Checks the footer (the last [`BLOCK_FILE_FOOTER_BYTES`] of a file of
/// `file_len` bytes and format `version`): magic, and an index that ends
/// exactly where the footer starts and starts after the header.
pub(crate) fn decode_footer(f: &[u8], file_len: u64, version: u32) -> Result<Footer, FormatError> {
    let min_len = BLOCK_FILE_HEADER_BYTES + BLOCK_FILE_FOOTER_BYTES;
    if file_len < min_len {
        return Err(FormatError::Invalid(format!(
            "file is {file_len} bytes, shorter than header + footer ({min_len})"
        )));
    }
    if f.len() != BLOCK_FILE_FOOTER_BYTES as usize {
        return Err(FormatError::Invalid(format!(
            "footer is {} bytes, expected {BLOCK_FILE_FOOTER_BYTES}",
            f.len()
        )));
    }
    if u64_at(f, FTR_OFFSET_MAGIC) != BLOCK_FILE_FOOTER_MAGIC {
        return Err(FormatError::BadMagic("bad footer magic (file incomplete or damaged)"));
    }
    let footer = Footer {
        version,
        index_offset: u64_at(f, FTR_OFFSET_INDEX_OFFSET),
        entry_count: u32_at(f, FTR_OFFSET_ENTRY_COUNT),
        index_crc: u32_at(f, FTR_OFFSET_INDEX_CRC),
    };
    let footer_start = file_len - BLOCK_FILE_FOOTER_BYTES;
    let index_end = footer.index_offset.checked_add(footer.index_len());
    if footer.index_offset < BLOCK_FILE_HEADER_BYTES || index_end != Some(footer_start) {
        return Err(FormatError::Invalid(format!(
            "footer gives an index of {} entries at offset {}, which does not end at the footer (offset {footer_start})",
            footer.entry_count, footer.index_offset
        )));
    }
    Ok(footer)
}

/// Checks the index bytes against the footer and returns the entries: CRC,
/// every entry valid, index order, and blocks that tile the data area
/// `[BLOCK_FILE_HEADER_BYTES, index_offset)` exactly (every data byte is in
/// exactly one block, so every byte of the file is covered by a CRC).
pub(crate) fn decode_index(index: &[u8], footer: &Footer) -> Result<Vec<BlockIndexEntry>, FormatError> {
    if index.len() as u64 != footer.index_len() {
        return Err(FormatError::Invalid(format!(
            "index is {} bytes, footer says {}",
            index.len(),
            footer.index_len()
        )));
    }
    FormatError::check_crc("index", footer.index_crc, crc32c::crc32c(index))?;
    let entries: Vec<BlockIndexEntry> = index
        .chunks_exact(entry_bytes(footer.version) as usize)
        .enumerate()
        .map(|(i, b)| decode_entry(b).map_err(|e| FormatError::Invalid(format!("index entry {i}: {e}"))))
        .collect::<Result<_, _>>()?;
    for (i, e) in entries.iter().enumerate() {
        check_entry(e).map_err(|what| FormatError::Invalid(format!("index entry {i}: {what}")))?;
        if i > 0 && entries[i - 1].sort_key() >= e.sort_key() {
            return Err(FormatError::Invalid(format!(
                "index entry {i} is out of (series, min_ts, offset) order"
            )));
        }
    }
    let mut by_offset: Vec<&BlockIndexEntry> = entries.iter().collect();
    by_offset.sort_by_key(|e| e.offset);
    let mut expected = BLOCK_FILE_HEADER_BYTES;
    for e in by_offset {
        if e.offset != expected {
            return Err(FormatError::Invalid(format!(
                "blocks do not tile the data area: a block starts at offset {}, expected {expected}",
                e.offset
            )));
        }
        expected = e.end().ok_or_else(|| FormatError::Invalid("block end overflows".into()))?;
    }
    if expected != footer.index_offset {
        return Err(FormatError::Invalid(format!(
            "blocks end at offset {expected}, but the index starts at offset {}",
            footer.index_offset
        )));
    }
    Ok(entries)
}

/// The rules a single entry obeys, whoever wrote it.
pub(crate) fn check_entry(e: &BlockIndexEntry) -> Result<(), FormatError> {
    if e.min_ts > e.max_ts {
        return Err(FormatError::Invalid(format!("min_ts {} > max_ts {}", e.min_ts, e.max_ts)));
    }
    if e.point_count == 0 {
        return Err(FormatError::Invalid("block with zero points".into()));
    }
    if e.len_bytes == 0 {
        return Err(FormatError::Invalid("empty block".into()));
    }
    match &e.summary {
        Some(s) => s.check(e.point_count),
        None => Ok(()),
    }
}

/// A block file image as [`parse_bytes`] accepts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedBlockFile {
    pub version: u32,
    pub seq: u64,
    pub entries: Vec<BlockIndexEntry>,
}

impl ParsedBlockFile {
    /// The blocks of `image` (the bytes this was parsed from) in file
    /// order, as the specs that encode it again.
    pub fn block_specs<'a>(&self, image: &'a [u8]) -> Vec<BlockSpec<'a>> {
        let mut by_offset: Vec<&BlockIndexEntry> = self.entries.iter().collect();
        by_offset.sort_by_key(|e| e.offset);
        by_offset
            .into_iter()
            .map(|e| BlockSpec {
                series: e.series,
                min_ts: e.min_ts,
                max_ts: e.max_ts,
                point_count: e.point_count,
                // Parsing checked that the blocks tile the data area.
                bytes: &image[e.offset as usize..(e.offset + u64::from(e.len_bytes)) as usize],
                summary: e.summary,
            })
            .collect()
    }
}

/// Validates a whole block file image: header, footer, index (not the block
/// CRCs).
pub(crate) fn parse_bytes(bytes: &[u8]) -> Result<ParsedBlockFile, FormatError> {
    let (version, seq) = decode_header(bytes)?;
    let file_len = bytes.len() as u64;
    let footer_start = file_len.saturating_sub(BLOCK_FILE_FOOTER_BYTES) as usize;
    let footer = decode_footer(&bytes[footer_start..], file_len, version)?;
    let index = &bytes[footer.index_offset as usize..footer_start];
    let entries = decode_index(index, &footer)?;
    Ok(ParsedBlockFile { version, seq, entries })
}

/// Checks `block` (the bytes at `entry`) against the entry's length and CRC.
pub(crate) fn check_block(entry: &BlockIndexEntry, block: &[u8]) -> Result<(), FormatError> {
    if block.len() as u64 != u64::from(entry.len_bytes) {
        return Err(FormatError::Invalid(format!(
            "block is {} bytes, index says {}",
            block.len(),
            entry.len_bytes
        )));
    }
    let computed = crc32c::crc32c(block);
    if computed != entry.crc32c {
        let what = format!(
            "block of series {} at offset {} ({} bytes):",
            entry.series, entry.offset, entry.len_bytes
        );
        return FormatError::check_crc(what, entry.crc32c, computed);
    }
    Ok(())
}

/// One block to put in a file: what the index says about it, and its bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockSpec<'a> {
    pub series: SeriesId,
    pub min_ts: TimestampNs,
    pub max_ts: TimestampNs,
    pub point_count: u32,
    pub bytes: &'a [u8],
    /// The block's aggregates, if it has them.
    pub summary: Option<BlockSummary>,
}

/// The whole image of a block file holding `blocks` in this order: the bytes
/// [`BlockFileWriter`](super::BlockFileWriter) writes for the same appends.
/// For tests, fuzzing and tools. Fails on what `append` rejects.
pub fn encode_block_file(file_seq: u64, blocks: &[BlockSpec<'_>]) -> Result<Vec<u8>, FormatError> {
    encode_block_file_version(BLOCK_FILE_FORMAT_VERSION, file_seq, blocks)
}

/// [`encode_block_file`] in format `version` (1 refuses summaries): how
/// older files looked, for the fuzz target's re-encoding and for tests.
pub fn encode_block_file_version(
    version: u32,
    file_seq: u64,
    blocks: &[BlockSpec<'_>],
) -> Result<Vec<u8>, FormatError> {
    if !(BLOCK_FILE_OLDEST_VERSION..=BLOCK_FILE_FORMAT_VERSION).contains(&version) {
        return Err(FormatError::UnsupportedVersion { what: "block file", version });
    }
    if version == 1 && blocks.iter().any(|b| b.summary.is_some()) {
        return Err(FormatError::Invalid("a version-1 block file has no summaries".into()));
    }
    let mut out = encode_header(version, file_seq).to_vec();
    let mut entries = Vec::with_capacity(blocks.len());
    for b in blocks {
        let entry = new_entry(b, out.len() as u64)?;
        entries.push(entry);
        out.extend_from_slice(b.bytes);
    }
    finish_image(version, &mut entries, out.len() as u64, |bytes| out.extend_from_slice(bytes))?;
    Ok(out)
}

/// The entry for `block` placed at `offset`, or why `append` rejects it.
pub(crate) fn new_entry(block: &BlockSpec<'_>, offset: u64) -> Result<BlockIndexEntry, FormatError> {
    let len_bytes = u32::try_from(block.bytes.len()).map_err(|_| {
        FormatError::Invalid(format!("block of {} bytes is larger than u32::MAX", block.bytes.len()))
    })?;
    let entry = BlockIndexEntry {
        series: block.series,
        min_ts: block.min_ts,
        max_ts: block.max_ts,
        point_count: block.point_count,
        offset,
        len_bytes,
        crc32c: crc32c::crc32c(block.bytes),
        summary: block.summary,
    };
    check_entry(&entry)?;
    entry.end().ok_or_else(|| FormatError::Invalid("block end overflows u64".into()))?;
    Ok(entry)
}

/// Sorts `entries` into index order and emits index and footer (of a file
/// of `version`) for a data area ending at `index_offset`.
pub(crate) fn finish_image(
    version: u32,
    entries: &mut [BlockIndexEntry],
    index_offset: u64,
    mut emit: impl FnMut(&[u8]),
) -> Result<(), FormatError> {
    let entry_count = u32::try_from(entries.len())
        .map_err(|_| FormatError::Invalid(format!("{} blocks exceed u32::MAX", entries.len())))?;
    entries.sort_by_key(BlockIndexEntry::sort_key);
    let index = encode_index(version, entries);
    let footer = Footer { version, index_offset, entry_count, index_crc: crc32c::crc32c(&index) };
    emit(&index);
    emit(&encode_footer(&footer));
    Ok(())
}
