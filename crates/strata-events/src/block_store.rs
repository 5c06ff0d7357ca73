//! The block file of the event store (chronicledb-pmem.txt section 2.2,
//! "Storage Layout"; format: `docs/format/events-blocks.md`).
//!
//! Owns [`BlockStore`]: TAB+-tree nodes (opaque byte buffers of at most
//! [`MAX_NODE_BYTES`]) compressed one by one with LZ4 and packed into
//! fixed-size [`BLOCK_BYTES`] blocks appended to one SSD file, interleaved
//! with the translation blocks of the address translation tree
//! ([`BlockStore::append_translation_block`]). A node is named by its
//! [`PhysAddr`] (block number and offset of its record in the block).
//!
//! Decisions (each documented in the format document):
//! - a node whose LZ4 form is not smaller than the node is stored raw, so a
//!   record never exceeds [`MAX_RECORD_BYTES`], which fits a block; nodes
//!   larger than [`MAX_NODE_BYTES`] are rejected;
//! - the unfilled block lives in DRAM; it is written when the next record
//!   does not fit (sealed, zero padded), when a translation block follows,
//!   and by [`BlockStore::flush`] (unsealed). A flushed unsealed block is
//!   rewritten in place, whole, when more is flushed: the bytes already on
//!   the file are rewritten unchanged, and every record carries its own
//!   CRC32C, so a torn rewrite loses none of the records synced before it;
//! - open checks only the end of the file: the last valid block, at most one
//!   torn block after it (its records salvaged by their CRCs), and trailing
//!   all-zero blocks. A bad block that is followed by a valid block is
//!   corruption, reported by [`BlockStore::scan`] and by reads.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use strata_media::fs::{create_durably, FileSystem, FsFile};
use strata_media::FaultFs;

use crate::ids::{EventError, NodeId};

/// Size of every block of the file.
pub const BLOCK_BYTES: usize = 32 * 1024;
/// Size of the block header; the first record (or the translation payload)
/// starts here.
pub const BLOCK_HEADER_BYTES: usize = 40;
/// Size of a record header in a data block.
pub const RECORD_HEADER_BYTES: usize = 24;
/// Largest node (uncompressed) the store accepts: one TAB+-tree node.
pub const MAX_NODE_BYTES: usize = 8 * 1024;
/// Largest record: a raw node with its header.
pub const MAX_RECORD_BYTES: usize = RECORD_HEADER_BYTES + MAX_NODE_BYTES;
/// Largest payload of a translation block.
pub const TRANSLATION_PAYLOAD_BYTES: usize = BLOCK_BYTES - BLOCK_HEADER_BYTES;
/// `STREVBLK` read as a little-endian u64: the first 8 bytes of every block.
pub const BLOCK_MAGIC: u64 = u64::from_le_bytes(*b"STREVBLK");
pub const BLOCK_FORMAT_VERSION: u16 = 1;
pub const BLOCK_KIND_DATA: u8 = 1;
pub const BLOCK_KIND_TRANSLATION: u8 = 2;
/// Header flag: the block is closed; no record will be added.
pub const BLOCK_FLAG_SEALED: u8 = 1;
pub const RECORD_ENCODING_RAW: u8 = 0;
pub const RECORD_ENCODING_LZ4: u8 = 1;
/// Low bits of a packed [`PhysAddr`] holding the offset in the block.
pub const PHYS_ADDR_OFFSET_BITS: u32 = 16;
/// Largest block number a [`PhysAddr`] can name (48 bits).
pub const MAX_BLOCK_NUMBER: u64 = (1 << (64 - PHYS_ADDR_OFFSET_BITS)) - 1;

/// Block header field offsets.
pub const HDR_OFFSET_MAGIC: usize = 0;
pub const HDR_OFFSET_VERSION: usize = 8;
pub const HDR_OFFSET_KIND: usize = 10;
pub const HDR_OFFSET_FLAGS: usize = 11;
pub const HDR_OFFSET_RECORD_COUNT: usize = 12;
pub const HDR_OFFSET_USED_BYTES: usize = 16;
pub const HDR_OFFSET_BLOCK_CRC: usize = 20;
pub const HDR_OFFSET_BLOCK_NUMBER: usize = 24;
pub const HDR_OFFSET_PREV_TRANSLATION: usize = 32;
/// Record header field offsets.
pub const REC_OFFSET_NODE_ID: usize = 0;
pub const REC_OFFSET_STORED_LEN: usize = 8;
pub const REC_OFFSET_NODE_LEN: usize = 12;
pub const REC_OFFSET_ENCODING: usize = 16;
pub const REC_OFFSET_RECORD_CRC: usize = 20;

const _: () = assert!(MAX_RECORD_BYTES <= BLOCK_BYTES - BLOCK_HEADER_BYTES, "a raw node must fit a block");
const _: () = assert!(BLOCK_BYTES < 1 << PHYS_ADDR_OFFSET_BITS, "offsets must fit a PhysAddr");

/// Where a record (or a translation block's payload) lives: block number and
/// byte offset in the block, packed in 8 bytes as `block << 16 | offset`.
/// A valid address has `offset >= BLOCK_HEADER_BYTES`, so it never packs to
/// 0, which translation tables use for "none". Ordered as the file is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PhysAddr(u64);

impl PhysAddr {
    /// The address of `offset` in block `block`, if it can name a record.
    pub fn new(block: u64, offset: u32) -> Option<PhysAddr> {
        let valid = block <= MAX_BLOCK_NUMBER
            && offset as usize >= BLOCK_HEADER_BYTES
            && (offset as usize) < BLOCK_BYTES;
        valid.then_some(PhysAddr(block << PHYS_ADDR_OFFSET_BITS | offset as u64))
    }

    /// The first possible address of block `block` (what `scan` starts from).
    pub fn block_start(block: u64) -> PhysAddr {
        PhysAddr(block.min(MAX_BLOCK_NUMBER) << PHYS_ADDR_OFFSET_BITS | BLOCK_HEADER_BYTES as u64)
    }

    pub const fn block(self) -> u64 {
        self.0 >> PHYS_ADDR_OFFSET_BITS
    }

    pub const fn offset(self) -> u32 {
        (self.0 & ((1 << PHYS_ADDR_OFFSET_BITS) - 1)) as u32
    }

    /// The packed form (never 0).
    pub const fn to_u64(self) -> u64 {
        self.0
    }

    /// Decodes a packed address read from a medium; `None` if no valid
    /// address packs to `raw` (0 included).
    pub fn from_u64(raw: u64) -> Option<PhysAddr> {
        let addr = PhysAddr(raw);
        PhysAddr::new(addr.block(), addr.offset())
    }

    /// Byte offset in the file.
    pub fn file_offset(self) -> u64 {
        self.block() * BLOCK_BYTES as u64 + self.offset() as u64
    }
}

impl std::fmt::Display for PhysAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "block {} offset {}", self.block(), self.offset())
    }
}

/// Kind of a block.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BlockKind {
    Data,
    Translation,
}

/// A decoded block header.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub kind: BlockKind,
    pub sealed: bool,
    pub record_count: u32,
    pub used_bytes: u32,
    pub block_number: u64,
    /// The latest translation block before this block (for a translation
    /// block: the one before it), if any.
    pub prev_translation: Option<u64>,
}

/// A decoded record header.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub node_id: NodeId,
    pub stored_len: u32,
    pub node_len: u32,
    pub encoding: u8,
}

impl RecordHeader {
    pub fn record_bytes(&self) -> usize {
        RECORD_HEADER_BYTES + self.stored_len as usize
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// CRC32C of a whole block with its CRC field taken as zero.
pub fn block_crc(block: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&block[..HDR_OFFSET_BLOCK_CRC]);
    let crc = crc32c::crc32c_append(crc, &[0; 4]);
    crc32c::crc32c_append(crc, &block[HDR_OFFSET_BLOCK_CRC + 4..])
}

/// CRC32C of a record: header bytes before the CRC field, then the stored bytes.
pub fn record_crc(header: &[u8], stored: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&header[..REC_OFFSET_RECORD_CRC]), stored)
}

/// Writes a block header into `block` and then its CRC (over the whole block).
fn seal_header(block: &mut [u8], h: &BlockHeader) {
    let kind = match h.kind {
        BlockKind::Data => BLOCK_KIND_DATA,
        BlockKind::Translation => BLOCK_KIND_TRANSLATION,
    };
    block[HDR_OFFSET_MAGIC..HDR_OFFSET_MAGIC + 8].copy_from_slice(&BLOCK_MAGIC.to_le_bytes());
    block[HDR_OFFSET_VERSION..HDR_OFFSET_VERSION + 2].copy_from_slice(&BLOCK_FORMAT_VERSION.to_le_bytes());
    block[HDR_OFFSET_KIND] = kind;
    block[HDR_OFFSET_FLAGS] = if h.sealed { BLOCK_FLAG_SEALED } else { 0 };
    block[HDR_OFFSET_RECORD_COUNT..HDR_OFFSET_RECORD_COUNT + 4]
        .copy_from_slice(&h.record_count.to_le_bytes());
    block[HDR_OFFSET_USED_BYTES..HDR_OFFSET_USED_BYTES + 4].copy_from_slice(&h.used_bytes.to_le_bytes());
    block[HDR_OFFSET_BLOCK_NUMBER..HDR_OFFSET_BLOCK_NUMBER + 8]
        .copy_from_slice(&h.block_number.to_le_bytes());
    let prev = h.prev_translation.map_or(0, |b| b + 1);
    block[HDR_OFFSET_PREV_TRANSLATION..HDR_OFFSET_PREV_TRANSLATION + 8].copy_from_slice(&prev.to_le_bytes());
    let crc = block_crc(block);
    block[HDR_OFFSET_BLOCK_CRC..HDR_OFFSET_BLOCK_CRC + 4].copy_from_slice(&crc.to_le_bytes());
}

/// Whether the stable part of a header (magic, version, kind data, block
/// number) is intact: every version of a rewritten block has these bytes, so
/// a torn rewrite keeps them.
fn header_prefix_is_data(block: &[u8], block_number: u64) -> bool {
    block.len() >= BLOCK_HEADER_BYTES
        && u64_at(block, HDR_OFFSET_MAGIC) == BLOCK_MAGIC
        && u16_at(block, HDR_OFFSET_VERSION) == BLOCK_FORMAT_VERSION
        && block[HDR_OFFSET_KIND] == BLOCK_KIND_DATA
        && u64_at(block, HDR_OFFSET_BLOCK_NUMBER) == block_number
}

/// Decodes the record at `offset` of `block` and checks its CRC. `Err` says
/// what is wrong.
pub fn decode_record(block: &[u8], offset: usize) -> Result<RecordHeader, String> {
    let end = block.len().min(BLOCK_BYTES);
    if offset < BLOCK_HEADER_BYTES || offset.checked_add(RECORD_HEADER_BYTES).is_none_or(|e| e > end) {
        return Err(format!("record header at offset {offset} does not fit the block"));
    }
    let h = &block[offset..offset + RECORD_HEADER_BYTES];
    let stored_len = u32_at(h, REC_OFFSET_STORED_LEN);
    let node_len = u32_at(h, REC_OFFSET_NODE_LEN);
    let encoding = h[REC_OFFSET_ENCODING];
    if node_len as usize > MAX_NODE_BYTES {
        return Err(format!("node length {node_len} exceeds {MAX_NODE_BYTES}"));
    }
    match encoding {
        RECORD_ENCODING_RAW if stored_len != node_len => {
            return Err(format!("raw record stores {stored_len} bytes of a {node_len}-byte node"))
        }
        RECORD_ENCODING_LZ4 if stored_len >= node_len => {
            return Err(format!(
                "lz4 record of {stored_len} bytes is not smaller than its {node_len}-byte node"
            ))
        }
        RECORD_ENCODING_RAW | RECORD_ENCODING_LZ4 => {}
        other => return Err(format!("unknown record encoding {other}")),
    }
    if h[REC_OFFSET_ENCODING + 1..REC_OFFSET_RECORD_CRC] != [0; 3] {
        return Err("reserved record header bytes are not zero".into());
    }
    let stored_end = offset + RECORD_HEADER_BYTES + stored_len as usize;
    if stored_end > end {
        return Err(format!("record of {stored_len} bytes at offset {offset} overruns the block"));
    }
    let stored = &block[offset + RECORD_HEADER_BYTES..stored_end];
    if record_crc(h, stored) != u32_at(h, REC_OFFSET_RECORD_CRC) {
        return Err(format!("record CRC mismatch at offset {offset}"));
    }
    Ok(RecordHeader {
        node_id: NodeId::from_u64(u64_at(h, REC_OFFSET_NODE_ID)),
        stored_len,
        node_len,
        encoding,
    })
}

/// Decompresses the stored bytes of a record.
fn decode_node(h: &RecordHeader, stored: &[u8]) -> Result<Vec<u8>, String> {
    match h.encoding {
        RECORD_ENCODING_RAW => Ok(stored.to_vec()),
        _ => {
            let mut out = vec![0; h.node_len as usize];
            match lz4_flex::block::decompress_into(stored, &mut out) {
                Ok(n) if n == out.len() => Ok(out),
                Ok(n) => Err(format!("lz4 record decompresses to {n} bytes, header says {}", h.node_len)),
                Err(e) => Err(format!("lz4 record does not decompress: {e}")),
            }
        }
    }
}

/// Checks a whole block (exactly [`BLOCK_BYTES`] long) as the format
/// requires: header fields, CRC, zero padding, and for a data block that its
/// `record_count` records tile `[BLOCK_HEADER_BYTES, used_bytes)` with valid
/// CRCs. `Err` says what is wrong.
pub fn validate_block(block: &[u8], block_number: u64) -> Result<BlockHeader, String> {
    if block.len() != BLOCK_BYTES {
        return Err(format!("block of {} bytes, expected {BLOCK_BYTES}", block.len()));
    }
    if u64_at(block, HDR_OFFSET_MAGIC) != BLOCK_MAGIC {
        return Err("bad magic".into());
    }
    let version = u16_at(block, HDR_OFFSET_VERSION);
    if version != BLOCK_FORMAT_VERSION {
        return Err(format!("unknown version {version}"));
    }
    if block_crc(block) != u32_at(block, HDR_OFFSET_BLOCK_CRC) {
        return Err("block CRC mismatch".into());
    }
    let kind = match block[HDR_OFFSET_KIND] {
        BLOCK_KIND_DATA => BlockKind::Data,
        BLOCK_KIND_TRANSLATION => BlockKind::Translation,
        other => return Err(format!("unknown block kind {other}")),
    };
    let flags = block[HDR_OFFSET_FLAGS];
    if flags & !BLOCK_FLAG_SEALED != 0 {
        return Err(format!("unknown block flags {flags:#x}"));
    }
    let number = u64_at(block, HDR_OFFSET_BLOCK_NUMBER);
    if number != block_number {
        return Err(format!("block says it is number {number}"));
    }
    let prev_raw = u64_at(block, HDR_OFFSET_PREV_TRANSLATION);
    if prev_raw > block_number {
        return Err(format!("previous translation block {} is not before this block", prev_raw - 1));
    }
    let record_count = u32_at(block, HDR_OFFSET_RECORD_COUNT);
    let used = u32_at(block, HDR_OFFSET_USED_BYTES);
    if (used as usize) < BLOCK_HEADER_BYTES || used as usize > BLOCK_BYTES {
        return Err(format!("used bytes {used} out of range"));
    }
    if block[used as usize..].iter().any(|&b| b != 0) {
        return Err("padding after the used bytes is not zero".into());
    }
    let h = BlockHeader {
        kind,
        sealed: flags & BLOCK_FLAG_SEALED != 0,
        record_count,
        used_bytes: used,
        block_number,
        prev_translation: prev_raw.checked_sub(1),
    };
    match kind {
        BlockKind::Translation => {
            if record_count != 0 || !h.sealed {
                return Err("a translation block has records or is unsealed".into());
            }
        }
        BlockKind::Data => {
            let mut offset = BLOCK_HEADER_BYTES;
            for i in 0..record_count {
                let r = decode_record(&block[..used as usize], offset)
                    .map_err(|e| format!("record {i} of {record_count}: {e}"))?;
                offset += r.record_bytes();
            }
            if offset != used as usize {
                return Err(format!("{record_count} records end at {offset}, header says {used}"));
            }
        }
    }
    Ok(h)
}

/// The records at the start of a torn data block that pass their CRCs:
/// (offsets, end of the last one).
fn salvage_records(block: &[u8]) -> (Vec<usize>, usize) {
    let mut offsets = Vec::new();
    let mut offset = BLOCK_HEADER_BYTES;
    while let Ok(r) = decode_record(block, offset) {
        offsets.push(offset);
        offset += r.record_bytes();
    }
    (offsets, offset)
}

/// A node record found by a scan.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ScannedRecord {
    pub node_id: NodeId,
    pub addr: PhysAddr,
    pub node_len: u32,
    pub stored_len: u32,
}

/// What [`BlockStore::open`] found at the end of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenReport {
    /// Blocks in the store after open (the loaded unsealed block included).
    pub blocks: u64,
    /// The torn block after the last valid block, if any.
    pub torn_block: Option<u64>,
    /// Records of the torn block that passed their CRCs and were kept.
    pub salvaged_records: u32,
    /// Blocks (torn or all zero) cut from the end of the file.
    pub dropped_blocks: u64,
    /// File length before open minus file length after.
    pub truncated_bytes: u64,
    /// Where the next record goes.
    pub end: PhysAddr,
    pub last_translation_block: Option<u64>,
}

/// Counts of what a store did since it was created or opened.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockStoreStats {
    pub nodes_appended: u64,
    /// Uncompressed bytes of the appended nodes.
    pub node_bytes: u64,
    /// Bytes of the appended records (headers and stored bytes).
    pub record_bytes: u64,
    /// Block writes, rewrites of a flushed unsealed block included.
    pub block_writes: u64,
    /// Of those, writes of an unsealed block (by `flush`).
    pub partial_block_writes: u64,
    pub translation_blocks_written: u64,
    pub bytes_written: u64,
    /// `sync_data` calls that reached the file.
    pub syncs: u64,
    /// Positional reads of node records.
    pub node_reads: u64,
    /// Whole-block reads (translation blocks, scans, open).
    pub block_reads: u64,
    pub bytes_read: u64,
}

#[derive(Default)]
struct ReadCounters {
    node_reads: AtomicU64,
    block_reads: AtomicU64,
    bytes_read: AtomicU64,
}

/// The unfilled block in DRAM.
struct OpenBlock {
    number: u64,
    buf: Vec<u8>,
    used: usize,
    records: u32,
    prev_translation: Option<u64>,
    /// `used` of the version on the file, if one was written.
    written_used: Option<usize>,
}

impl OpenBlock {
    fn new(number: u64, prev_translation: Option<u64>) -> OpenBlock {
        OpenBlock {
            number,
            buf: vec![0; BLOCK_BYTES],
            used: BLOCK_HEADER_BYTES,
            records: 0,
            prev_translation,
            written_used: None,
        }
    }

    fn is_empty(&self) -> bool {
        self.records == 0
    }

    fn end(&self) -> PhysAddr {
        // `used` may equal BLOCK_BYTES for a full block: its end is the next block.
        PhysAddr::new(self.number, self.used as u32).unwrap_or_else(|| PhysAddr::block_start(self.number + 1))
    }
}

/// Nodes compressed into fixed-size blocks of one append-only file (see the
/// module comment). Reads take `&self`; appends `&mut self`.
pub struct BlockStore {
    file: Box<dyn FsFile>,
    path: PathBuf,
    open: OpenBlock,
    last_translation: Option<u64>,
    durable_end: PhysAddr,
    unsynced_writes: bool,
    stats: BlockStoreStats,
    reads: ReadCounters,
}

impl std::fmt::Debug for BlockStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockStore")
            .field("path", &self.path)
            .field("end", &self.end())
            .field("durable_end", &self.durable_end)
            .field("last_translation", &self.last_translation)
            .finish()
    }
}

fn io_context(path: &Path, what: &str, e: io::Error) -> EventError {
    EventError::Io(io::Error::new(e.kind(), format!("{}: {what}: {e}", path.display())))
}

impl BlockStore {
    /// Creates (or truncates) the block file at `path`, durably.
    pub fn create(fs: &dyn FileSystem, path: &Path) -> Result<BlockStore, EventError> {
        let file = create_durably(fs, path).map_err(|e| io_context(path, "create", e))?;
        Ok(BlockStore::with_file(file, path, OpenBlock::new(0, None), None))
    }

    fn with_file(
        file: Box<dyn FsFile>,
        path: &Path,
        open: OpenBlock,
        last_translation: Option<u64>,
    ) -> BlockStore {
        let durable_end = open.end();
        BlockStore {
            file,
            path: path.to_path_buf(),
            open,
            last_translation,
            durable_end,
            unsynced_writes: false,
            stats: BlockStoreStats::default(),
            reads: ReadCounters::default(),
        }
    }

    /// Opens an existing block file: checks its end (never the whole file),
    /// salvages the records of a torn last block, cuts what follows the last
    /// valid data, and makes the result durable. See the module comment.
    pub fn open(fs: &dyn FileSystem, path: &Path) -> Result<(BlockStore, OpenReport), EventError> {
        let file = fs.open(path).map_err(|e| io_context(path, "open", e))?;
        let len = file.len().map_err(|e| io_context(path, "length", e))?;
        let blocks_on_file = len.div_ceil(BLOCK_BYTES as u64);
        if blocks_on_file > MAX_BLOCK_NUMBER {
            return Err(EventError::corruption(path.display().to_string(), format!("file of {len} bytes")));
        }
        let corrupt = |block: u64, what: String| {
            EventError::corruption(format!("{} block {block}", path.display()), what)
        };
        let read_block = |number: u64| -> Result<Vec<u8>, EventError> {
            let mut buf = vec![0; BLOCK_BYTES];
            let at = number * BLOCK_BYTES as u64;
            let want = (len - at).min(BLOCK_BYTES as u64) as usize;
            file.read_exact_at(at, &mut buf[..want]).map_err(|e| io_context(path, "read", e))?;
            Ok(buf)
        };
        // Walk back from the end to the last valid block.
        let mut last_valid: Option<(BlockHeader, Vec<u8>)> = None;
        let mut torn: Option<(u64, Vec<u8>)> = None;
        let mut dropped_blocks = 0;
        let mut blocks_read = 0;
        for number in (0..blocks_on_file).rev() {
            let buf = read_block(number)?;
            blocks_read += 1;
            match validate_block(&buf, number) {
                Ok(h) => {
                    last_valid = Some((h, buf));
                    break;
                }
                Err(why) => {
                    dropped_blocks += 1;
                    if buf.iter().all(|&b| b == 0) {
                        if torn.is_some() {
                            return Err(corrupt(number, "an all-zero block before a torn block".into()));
                        }
                        continue;
                    }
                    if let Some((later, _)) = torn {
                        return Err(corrupt(number, format!("{why}, and block {later} after it is bad too")));
                    }
                    torn = Some((number, buf));
                }
            }
        }
        let next_number = last_valid.as_ref().map_or(0, |(h, _)| h.block_number + 1);
        if let Some((number, _)) = &torn {
            if *number != next_number {
                return Err(corrupt(*number, "a torn block after all-zero blocks".into()));
            }
        }
        if last_valid.is_none() && len > 0 {
            let first = torn.as_ref().map(|(_, b)| b.as_slice()).unwrap_or(&[]);
            if !first.is_empty() && !looks_like_first_block(first) {
                return Err(corrupt(0, "not an event block file (no valid block, bad magic)".into()));
            }
        }
        // The translation chain as of the last valid block.
        let last_translation = match &last_valid {
            Some((h, _)) if h.kind == BlockKind::Translation => Some(h.block_number),
            Some((h, _)) => h.prev_translation,
            None => None,
        };
        let mut report = OpenReport {
            blocks: 0,
            torn_block: torn.as_ref().map(|(n, _)| *n),
            salvaged_records: 0,
            dropped_blocks,
            truncated_bytes: 0,
            end: PhysAddr::block_start(0),
            last_translation_block: None,
        };
        // The open block: salvaged records of a torn block, else a valid
        // unsealed data block, else a new block.
        let mut rewrite = false;
        let open = match torn {
            Some((number, buf))
                if header_prefix_is_data(&buf, number) && !salvage_records(&buf).0.is_empty() =>
            {
                let (offsets, end) = salvage_records(&buf);
                report.salvaged_records = offsets.len() as u32;
                report.dropped_blocks -= 1;
                let mut block = OpenBlock::new(number, last_translation);
                block.buf[BLOCK_HEADER_BYTES..end].copy_from_slice(&buf[BLOCK_HEADER_BYTES..end]);
                block.used = end;
                block.records = offsets.len() as u32;
                rewrite = true;
                block
            }
            _ => match last_valid {
                Some((h, buf)) if h.kind == BlockKind::Data && !h.sealed => {
                    let mut block = OpenBlock::new(h.block_number, last_translation);
                    block.buf = buf;
                    block.used = h.used_bytes as usize;
                    block.records = h.record_count;
                    block.written_used = Some(block.used);
                    block
                }
                _ => OpenBlock::new(next_number, last_translation),
            },
        };
        let keep_len = (open.number + u64::from(!open.is_empty())) * BLOCK_BYTES as u64;
        report.blocks = keep_len / BLOCK_BYTES as u64;
        report.truncated_bytes = len.saturating_sub(keep_len);
        report.last_translation_block = last_translation;
        let mut store = BlockStore::with_file(file, path, open, last_translation);
        store.reads.block_reads.store(blocks_read, Ordering::Relaxed);
        store.reads.bytes_read.store(blocks_read * BLOCK_BYTES as u64, Ordering::Relaxed);
        if rewrite {
            // Restore a valid CRC before cutting anything: the salvaged
            // records may have been acknowledged.
            store.write_open_block(false)?;
        }
        if len != keep_len {
            store.file.set_len(keep_len).map_err(|e| io_context(path, "truncate", e))?;
        }
        // What was read may have been written by a process that crashed
        // before syncing: make it durable before anything relies on it.
        store.file.sync_all().map_err(|e| io_context(path, "sync", e))?;
        store.unsynced_writes = false;
        store.durable_end = store.open.end();
        report.end = store.end();
        Ok((store, report))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the next record goes if it fits the open block.
    pub fn end(&self) -> PhysAddr {
        self.open.end()
    }

    /// Every record before this address is durable (synced).
    pub fn durable_end(&self) -> PhysAddr {
        self.durable_end
    }

    /// Blocks in the store, the open block included if it holds a record.
    pub fn block_count(&self) -> u64 {
        self.open.number + u64::from(!self.open.is_empty())
    }

    /// The latest translation block, if any.
    pub fn last_translation_block(&self) -> Option<PhysAddr> {
        self.last_translation.map(PhysAddr::block_start)
    }

    /// Block writes so far (rewrites of an unsealed block included).
    pub fn blocks_written(&self) -> u64 {
        self.stats.block_writes
    }

    pub fn bytes_written(&self) -> u64 {
        self.stats.bytes_written
    }

    pub fn stats(&self) -> BlockStoreStats {
        BlockStoreStats {
            node_reads: self.reads.node_reads.load(Ordering::Relaxed),
            block_reads: self.reads.block_reads.load(Ordering::Relaxed),
            bytes_read: self.reads.bytes_read.load(Ordering::Relaxed),
            ..self.stats
        }
    }

    /// Compresses `node` and appends it; returns its address. The node is in
    /// DRAM until its block is written, durable after the next [`sync`](Self::sync).
    pub fn append(&mut self, node_id: NodeId, node: &[u8]) -> Result<PhysAddr, EventError> {
        if node.len() > MAX_NODE_BYTES {
            return Err(EventError::invalid(format!(
                "node {node_id} of {} bytes exceeds {MAX_NODE_BYTES} bytes",
                node.len()
            )));
        }
        let compressed = lz4_flex::block::compress(node);
        let (encoding, stored) = if compressed.len() < node.len() {
            (RECORD_ENCODING_LZ4, compressed.as_slice())
        } else {
            (RECORD_ENCODING_RAW, node)
        };
        let record_bytes = RECORD_HEADER_BYTES + stored.len();
        assert!(record_bytes <= MAX_RECORD_BYTES, "a record never exceeds a raw node");
        if self.open.used + record_bytes > BLOCK_BYTES {
            self.seal_open_block()?;
        }
        let offset = self.open.used;
        let addr = PhysAddr::new(self.open.number, offset as u32).ok_or_else(|| EventError::Full {
            what: "block file",
            detail: format!("block {}", self.open.number),
        })?;
        let mut h = [0u8; RECORD_HEADER_BYTES];
        h[REC_OFFSET_NODE_ID..REC_OFFSET_NODE_ID + 8].copy_from_slice(&node_id.to_u64().to_le_bytes());
        h[REC_OFFSET_STORED_LEN..REC_OFFSET_STORED_LEN + 4]
            .copy_from_slice(&(stored.len() as u32).to_le_bytes());
        h[REC_OFFSET_NODE_LEN..REC_OFFSET_NODE_LEN + 4].copy_from_slice(&(node.len() as u32).to_le_bytes());
        h[REC_OFFSET_ENCODING] = encoding;
        let crc = record_crc(&h, stored);
        h[REC_OFFSET_RECORD_CRC..REC_OFFSET_RECORD_CRC + 4].copy_from_slice(&crc.to_le_bytes());
        self.open.buf[offset..offset + RECORD_HEADER_BYTES].copy_from_slice(&h);
        self.open.buf[offset + RECORD_HEADER_BYTES..offset + record_bytes].copy_from_slice(stored);
        self.open.used += record_bytes;
        self.open.records += 1;
        self.stats.nodes_appended += 1;
        self.stats.node_bytes += node.len() as u64;
        self.stats.record_bytes += record_bytes as u64;
        Ok(addr)
    }

    /// Writes the open block: its header (sealed or not) and CRC, the whole
    /// block at its place.
    fn write_open_block(&mut self, sealed: bool) -> Result<(), EventError> {
        let h = BlockHeader {
            kind: BlockKind::Data,
            sealed,
            record_count: self.open.records,
            used_bytes: self.open.used as u32,
            block_number: self.open.number,
            prev_translation: self.open.prev_translation,
        };
        seal_header(&mut self.open.buf, &h);
        let at = self.open.number * BLOCK_BYTES as u64;
        self.file.write_at(at, &self.open.buf).map_err(|e| io_context(&self.path, "write block", e))?;
        self.open.written_used = Some(self.open.used);
        self.unsynced_writes = true;
        self.stats.block_writes += 1;
        self.stats.partial_block_writes += u64::from(!sealed);
        self.stats.bytes_written += BLOCK_BYTES as u64;
        Ok(())
    }

    /// Seals and writes the open block if it holds a record, and opens the next.
    fn seal_open_block(&mut self) -> Result<(), EventError> {
        if self.open.is_empty() {
            return Ok(());
        }
        if self.open.number >= MAX_BLOCK_NUMBER {
            return Err(EventError::Full { what: "block file", detail: "no block number left".into() });
        }
        self.write_open_block(true)?;
        self.open = OpenBlock::new(self.open.number + 1, self.last_translation);
        Ok(())
    }

    /// Where [`append_translation_block`](Self::append_translation_block)
    /// will put the next translation block's payload.
    pub fn next_translation_addr(&self) -> PhysAddr {
        PhysAddr::block_start(self.open.number + u64::from(!self.open.is_empty()))
    }

    /// Seals the open data block (if it holds a record) and appends a
    /// translation block with `payload`; returns the payload's address.
    pub fn append_translation_block(&mut self, payload: &[u8]) -> Result<PhysAddr, EventError> {
        if payload.len() > TRANSLATION_PAYLOAD_BYTES {
            return Err(EventError::invalid(format!(
                "translation payload of {} bytes exceeds {TRANSLATION_PAYLOAD_BYTES}",
                payload.len()
            )));
        }
        self.seal_open_block()?;
        let number = self.open.number;
        if number >= MAX_BLOCK_NUMBER {
            return Err(EventError::Full { what: "block file", detail: "no block number left".into() });
        }
        let mut buf = vec![0u8; BLOCK_BYTES];
        buf[BLOCK_HEADER_BYTES..BLOCK_HEADER_BYTES + payload.len()].copy_from_slice(payload);
        let h = BlockHeader {
            kind: BlockKind::Translation,
            sealed: true,
            record_count: 0,
            used_bytes: (BLOCK_HEADER_BYTES + payload.len()) as u32,
            block_number: number,
            prev_translation: self.last_translation,
        };
        seal_header(&mut buf, &h);
        self.file
            .write_at(number * BLOCK_BYTES as u64, &buf)
            .map_err(|e| io_context(&self.path, "write translation block", e))?;
        self.unsynced_writes = true;
        self.stats.block_writes += 1;
        self.stats.translation_blocks_written += 1;
        self.stats.bytes_written += BLOCK_BYTES as u64;
        self.last_translation = Some(number);
        self.open = OpenBlock::new(number + 1, Some(number));
        Ok(PhysAddr::block_start(number))
    }

    /// Writes the open block (unsealed) if it has records not yet written.
    /// Not durable until [`sync`](Self::sync).
    pub fn flush(&mut self) -> Result<(), EventError> {
        if !self.open.is_empty() && self.open.written_used != Some(self.open.used) {
            self.write_open_block(false)?;
        }
        Ok(())
    }

    /// Flushes and syncs: every record appended so far is durable.
    pub fn sync(&mut self) -> Result<(), EventError> {
        self.flush()?;
        if self.unsynced_writes {
            self.file.sync_data().map_err(|e| io_context(&self.path, "sync", e))?;
            self.unsynced_writes = false;
            self.stats.syncs += 1;
        }
        self.durable_end = self.end();
        Ok(())
    }

    fn check_record_addr(&self, addr: PhysAddr) -> Result<(), EventError> {
        let past_end = addr.block() > self.open.number
            || (addr.block() == self.open.number && addr.offset() as usize >= self.open.used);
        if past_end || addr.offset() as usize + RECORD_HEADER_BYTES > BLOCK_BYTES {
            return Err(EventError::invalid(format!(
                "no record at {addr}: the store ends at {}",
                self.end()
            )));
        }
        Ok(())
    }

    /// The node id and decompressed bytes of the record at `addr`.
    pub fn read_node(&self, addr: PhysAddr) -> Result<(NodeId, Vec<u8>), EventError> {
        self.check_record_addr(addr)?;
        let corrupt = |what: String| EventError::corruption(format!("{} {addr}", self.path.display()), what);
        let offset = addr.offset() as usize;
        if addr.block() == self.open.number {
            let h = decode_record(&self.open.buf[..self.open.used], offset).map_err(corrupt)?;
            let stored = &self.open.buf[offset + RECORD_HEADER_BYTES..offset + h.record_bytes()];
            return Ok((h.node_id, decode_node(&h, stored).map_err(corrupt)?));
        }
        // One read of the record's largest possible extent, as a block image
        // so offsets stay those of the block.
        let want = (BLOCK_BYTES - offset).min(MAX_RECORD_BYTES);
        let mut buf = vec![0u8; offset + want];
        let read = read_up_to(&*self.file, addr.file_offset(), &mut buf[offset..])
            .map_err(|e| io_context(&self.path, "read node", e))?;
        self.reads.node_reads.fetch_add(1, Ordering::Relaxed);
        self.reads.bytes_read.fetch_add(read as u64, Ordering::Relaxed);
        buf.truncate(offset + read);
        let h = decode_record(&buf, offset).map_err(corrupt)?;
        let stored = &buf[offset + RECORD_HEADER_BYTES..offset + h.record_bytes()];
        Ok((h.node_id, decode_node(&h, stored).map_err(corrupt)?))
    }

    /// The decompressed bytes of the node at `addr`.
    pub fn read(&self, addr: PhysAddr) -> Result<Vec<u8>, EventError> {
        self.read_node(addr).map(|(_, bytes)| bytes)
    }

    /// Reads and checks the whole block `number` (which must be on the file).
    fn read_file_block(&self, number: u64) -> Result<(BlockHeader, Vec<u8>), EventError> {
        let mut buf = vec![0u8; BLOCK_BYTES];
        self.file
            .read_exact_at(number * BLOCK_BYTES as u64, &mut buf)
            .map_err(|e| io_context(&self.path, &format!("read block {number}"), e))?;
        self.reads.block_reads.fetch_add(1, Ordering::Relaxed);
        self.reads.bytes_read.fetch_add(BLOCK_BYTES as u64, Ordering::Relaxed);
        let h = validate_block(&buf, number).map_err(|what| {
            EventError::corruption(format!("{} block {number}", self.path.display()), what)
        })?;
        Ok((h, buf))
    }

    /// The payload of the translation block at `addr` (one 32 KiB read, CRC
    /// checked) and the translation block before it.
    pub fn read_translation_block(&self, addr: PhysAddr) -> Result<TranslationBlock, EventError> {
        if addr.offset() as usize != BLOCK_HEADER_BYTES || addr.block() >= self.open.number {
            return Err(EventError::invalid(format!("no translation block at {addr}")));
        }
        let (h, mut buf) = self.read_file_block(addr.block())?;
        if h.kind != BlockKind::Translation {
            return Err(EventError::corruption(
                format!("{} {addr}", self.path.display()),
                "a data block where a translation block was expected",
            ));
        }
        buf.truncate(h.used_bytes as usize);
        buf.drain(..BLOCK_HEADER_BYTES);
        Ok(TranslationBlock { payload: buf, prev_translation: h.prev_translation.map(PhysAddr::block_start) })
    }

    /// Every node record in file order (the open block's included), checking
    /// every block's CRC: the full file scan of DRAM translation recovery.
    pub fn scan(&self) -> BlockScan<'_> {
        self.scan_from(PhysAddr::block_start(0))
    }

    /// The node records at `from` and after, in file order.
    pub fn scan_from(&self, from: PhysAddr) -> BlockScan<'_> {
        BlockScan {
            store: self,
            from,
            next_block: from.block(),
            block: Vec::new(),
            cursor: None,
            blocks_read: 0,
            records: 0,
            done: false,
        }
    }
}

/// A translation block's payload and the translation block before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranslationBlock {
    pub payload: Vec<u8>,
    pub prev_translation: Option<PhysAddr>,
}

/// Reads into `buf` until it is full or the file ends; returns the bytes read.
fn read_up_to(file: &dyn FsFile, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        let n = file.read_at(offset + done as u64, &mut buf[done..])?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

/// Whether a first block that fails validation can be a torn write of a new
/// file: its magic field is a prefix of the magic followed by zeros.
fn looks_like_first_block(block: &[u8]) -> bool {
    let magic = BLOCK_MAGIC.to_le_bytes();
    let prefix = block.iter().zip(magic.iter()).take_while(|(a, b)| a == b).count();
    block.get(prefix..8).is_some_and(|rest| rest.iter().all(|&b| b == 0))
}

/// Iterator over node records (see [`BlockStore::scan_from`]). Stops after
/// the first error.
pub struct BlockScan<'a> {
    store: &'a BlockStore,
    from: PhysAddr,
    next_block: u64,
    block: Vec<u8>,
    /// (block number, offset of the next record, records left) in `block`.
    cursor: Option<(u64, usize, u32)>,
    blocks_read: u64,
    records: u64,
    done: bool,
}

impl BlockScan<'_> {
    /// Blocks read from the file so far.
    pub fn blocks_read(&self) -> u64 {
        self.blocks_read
    }

    /// Records returned so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    fn next_record(&mut self) -> Result<Option<ScannedRecord>, EventError> {
        loop {
            if let Some((number, offset, left)) = self.cursor {
                if left > 0 {
                    let h = decode_record(&self.block, offset).map_err(|what| {
                        EventError::corruption(format!("{} block {number}", self.store.path.display()), what)
                    })?;
                    self.cursor = Some((number, offset + h.record_bytes(), left - 1));
                    let addr = PhysAddr::new(number, offset as u32).expect("records lie inside blocks");
                    if addr < self.from {
                        continue;
                    }
                    self.records += 1;
                    return Ok(Some(ScannedRecord {
                        node_id: h.node_id,
                        addr,
                        node_len: h.node_len,
                        stored_len: h.stored_len,
                    }));
                }
                self.cursor = None;
            }
            let open = &self.store.open;
            let number = self.next_block;
            if number > open.number {
                return Ok(None);
            }
            self.next_block += 1;
            if number == open.number {
                self.block.clear();
                self.block.extend_from_slice(&open.buf[..open.used]);
                self.cursor = Some((number, BLOCK_HEADER_BYTES, open.records));
                continue;
            }
            let (h, buf) = self.store.read_file_block(number)?;
            self.blocks_read += 1;
            if h.kind == BlockKind::Data {
                self.block = buf;
                self.cursor = Some((number, BLOCK_HEADER_BYTES, h.record_count));
            }
        }
    }
}

impl Iterator for BlockScan<'_> {
    type Item = Result<ScannedRecord, EventError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_record() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Path of the block file inside the fuzz entry's in-memory file system.
const FUZZ_PATH: &str = "blocks.evb";

/// A deterministic node: `len` bytes, compressible unless `noisy`.
pub fn sample_node(seed: u64, len: usize, noisy: bool) -> Vec<u8> {
    let mut x = seed ^ 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|i| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if noisy {
                (x >> 33) as u8
            } else {
                (seed as u8).wrapping_add((i / 16) as u8)
            }
        })
        .collect()
}

/// A node written to a store: its id, address and bytes.
pub type WrittenNode = (NodeId, PhysAddr, Vec<u8>);

/// A valid block file image built from `seed`: nodes of mixed sizes and
/// compressibility, translation blocks between them, a flushed unsealed last
/// block. Returns the image and every node with its address.
pub fn sample_block_file(seed: u64) -> (Vec<u8>, Vec<WrittenNode>) {
    let fs = FaultFs::new();
    let path = Path::new(FUZZ_PATH);
    let mut store = BlockStore::create(&fs, path).expect("create on an in-memory fs");
    let mut nodes = Vec::new();
    let mut x = seed;
    let mut next = || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        x >> 33
    };
    let count = 4 + next() % 28;
    for i in 0..count {
        let r = next();
        if r % 13 == 0 {
            let payload = sample_node(r, (r % 300) as usize, true);
            store.append_translation_block(&payload).expect("translation block");
        }
        let len = match r % 5 {
            0 => MAX_NODE_BYTES,
            1 => 0,
            _ => (r % 3000) as usize,
        };
        let node = sample_node(r, len, r % 3 == 0);
        let id = if r % 7 == 0 { NodeId::index(i) } else { NodeId::leaf(i) };
        let addr = store.append(id, &node).expect("append");
        nodes.push((id, addr, node));
    }
    store.sync().expect("sync");
    (fs.peek(path).expect("file exists"), nodes)
}

fn fuzz_images() -> &'static Vec<Vec<u8>> {
    static IMAGES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    IMAGES.get_or_init(|| (0..8).map(|s| sample_block_file(s).0).collect())
}

/// The fuzz entry (`fuzz/fuzz_targets/events_block_decode.rs`): opens and
/// scans a block file image made from arbitrary bytes and must never panic.
///
/// Input: `mode (1) | rest`. Mode bit 0 clear: `rest` is the file image.
/// Set: a valid sample image (`rest[0] % 8`) damaged by `rest[1..]` read as
/// 4-byte edits `offset_lo, offset_hi, offset_block, value` (XOR into the
/// image), and with mode bit 1 cut to a length taken from the edits. Checks:
/// open fails only with `Corruption` or `Io`; every scanned record reads
/// back with its id and length; appending and reopening after open works.
pub fn fuzz_block_decode(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let image = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        let images = fuzz_images();
        let mut image = images[rest.first().map_or(0, |b| *b as usize % images.len())].clone();
        let edits = rest.get(1..).unwrap_or(&[]);
        let mut cut = None;
        for e in edits.chunks_exact(4) {
            let at = (e[0] as usize | (e[1] as usize) << 8 | (e[2] as usize % 8) << 16) % image.len().max(1);
            if let Some(b) = image.get_mut(at) {
                *b ^= e[3].max(1);
            }
            cut = Some(at);
        }
        if mode & 2 != 0 {
            image.truncate(cut.unwrap_or(image.len() / 2));
        }
        image
    };
    let fs = FaultFs::new();
    let path = Path::new(FUZZ_PATH);
    {
        let file = fs.create(path).expect("create on an in-memory fs");
        file.write_at(0, &image).expect("write image");
        file.sync_all().expect("sync image");
    }
    let (mut store, report) = match BlockStore::open(&fs, path) {
        Ok(v) => v,
        Err(e) => {
            assert!(e.is_corruption() || matches!(e, EventError::Io(_)), "open failed with {e}");
            return;
        }
    };
    assert_eq!(report.end, store.end());
    for r in store.scan() {
        match r {
            Ok(rec) => {
                let (id, bytes) = store.read_node(rec.addr).expect("a scanned record reads back");
                assert_eq!(id, rec.node_id);
                assert_eq!(bytes.len(), rec.node_len as usize);
            }
            Err(e) => {
                assert!(e.is_corruption(), "scan failed with {e}");
                break;
            }
        }
    }
    if let Some(t) = store.last_translation_block() {
        if let Err(e) = store.read_translation_block(t) {
            assert!(e.is_corruption(), "translation block read failed with {e}");
        }
    }
    let addr = store.append(NodeId::leaf(7), b"after open").expect("append after open");
    store.sync().expect("sync after open");
    drop(store);
    let (store, _) = BlockStore::open(&fs, path).expect("reopen after a clean append");
    assert_eq!(store.read(addr).expect("read after reopen"), b"after open");
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::Arc;

    use parking_lot::Mutex;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use strata_media::fs::{run_fs_crashtest, FsCrashConfig, FsCrashProtocol};
    use strata_media::{AckLog, OracleCounts, TxnId, TxnOracle};

    use super::*;

    fn path() -> &'static Path {
        Path::new("blocks.evb")
    }

    fn new_store() -> (FaultFs, BlockStore) {
        let fs = FaultFs::new();
        let store = BlockStore::create(&fs, path()).unwrap();
        (fs, store)
    }

    fn reopen(fs: &FaultFs) -> (BlockStore, OpenReport) {
        BlockStore::open(fs, path()).unwrap()
    }

    #[test]
    fn phys_addrs_pack_block_and_offset_in_file_order_and_never_pack_to_zero() {
        let a = PhysAddr::new(7, 1234).unwrap();
        assert_eq!((a.block(), a.offset()), (7, 1234));
        assert_eq!(PhysAddr::from_u64(a.to_u64()), Some(a));
        assert_eq!(a.file_offset(), 7 * BLOCK_BYTES as u64 + 1234);
        assert!(PhysAddr::new(7, 39).is_none() && PhysAddr::new(7, BLOCK_BYTES as u32).is_none());
        assert!(PhysAddr::new(MAX_BLOCK_NUMBER + 1, 40).is_none());
        assert_eq!(PhysAddr::from_u64(0), None);
        assert!(PhysAddr::block_start(0).to_u64() != 0);
        assert!(PhysAddr::new(6, 30000).unwrap() < PhysAddr::new(7, 40).unwrap());
        assert_eq!(a.to_string(), "block 7 offset 1234");
    }

    #[test]
    fn nodes_read_back_from_dram_after_sync_and_after_reopen() {
        let (fs, mut store) = new_store();
        let nodes: Vec<(NodeId, Vec<u8>)> = vec![
            (NodeId::leaf(0), Vec::new()),
            (NodeId::leaf(1), vec![42]),
            (NodeId::index(0), sample_node(1, MAX_NODE_BYTES, false)),
            (NodeId::leaf(2), sample_node(2, MAX_NODE_BYTES, true)),
            (NodeId::leaf(3), sample_node(3, 777, false)),
        ];
        let addrs: Vec<PhysAddr> = nodes.iter().map(|(id, b)| store.append(*id, b).unwrap()).collect();
        for ((id, bytes), addr) in nodes.iter().zip(&addrs) {
            assert_eq!(store.read_node(*addr).unwrap(), (*id, bytes.clone()), "from DRAM");
        }
        assert_eq!(store.blocks_written(), 0, "nothing written before a flush");
        store.sync().unwrap();
        assert_eq!(store.durable_end(), store.end());
        let stats = store.stats();
        assert_eq!(stats.nodes_appended, 5);
        assert!(stats.record_bytes < stats.node_bytes, "compressible nodes shrink: {stats:?}");
        let (store, report) = reopen(&fs);
        assert_eq!(report.blocks, 1);
        assert_eq!(report.torn_block, None);
        for ((id, bytes), addr) in nodes.iter().zip(&addrs) {
            assert_eq!(store.read_node(*addr).unwrap(), (*id, bytes.clone()), "after reopen");
        }
        let scanned: Vec<ScannedRecord> = store.scan().map(Result::unwrap).collect();
        assert_eq!(scanned.iter().map(|r| r.addr).collect::<Vec<_>>(), addrs);
        assert_eq!(scanned[2].node_id, NodeId::index(0));
        assert_eq!(scanned[3].stored_len, MAX_NODE_BYTES as u32, "noise is stored raw");
    }

    #[test]
    fn oversized_nodes_are_rejected_and_incompressible_ones_stored_raw() {
        let (fs, mut store) = new_store();
        let err = store.append(NodeId::leaf(0), &vec![0; MAX_NODE_BYTES + 1]).unwrap_err();
        assert!(matches!(err, EventError::InvalidInput(_)), "{err}");
        let noisy = sample_node(9, MAX_NODE_BYTES, true);
        let addr = store.append(NodeId::leaf(0), &noisy).unwrap();
        store.sync().unwrap();
        let file = fs.peek(path()).unwrap();
        let at = addr.file_offset() as usize;
        assert_eq!(file[at + REC_OFFSET_ENCODING], RECORD_ENCODING_RAW);
        assert_eq!(u32_at(&file, at + REC_OFFSET_STORED_LEN), MAX_NODE_BYTES as u32);
        let compressible = sample_node(9, MAX_NODE_BYTES, false);
        let addr = store.append(NodeId::leaf(1), &compressible).unwrap();
        store.sync().unwrap();
        let file = fs.peek(path()).unwrap();
        let at = addr.file_offset() as usize;
        assert_eq!(file[at + REC_OFFSET_ENCODING], RECORD_ENCODING_LZ4);
        assert!(u32_at(&file, at + REC_OFFSET_STORED_LEN) < MAX_NODE_BYTES as u32 / 2);
    }

    #[test]
    fn a_node_that_does_not_fit_seals_the_block_and_starts_the_next() {
        let (fs, mut store) = new_store();
        // Raw records of 24 + 5000 bytes: six fit the 32728 bytes after a header.
        let addrs: Vec<PhysAddr> =
            (0..13).map(|i| store.append(NodeId::leaf(i), &sample_node(i, 5000, true)).unwrap()).collect();
        let blocks: Vec<u64> = addrs.iter().map(|a| a.block()).collect();
        assert_eq!(blocks, [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2]);
        assert_eq!(addrs[1].offset(), (BLOCK_HEADER_BYTES + RECORD_HEADER_BYTES + 5000) as u32);
        assert_eq!(store.blocks_written(), 2, "two sealed blocks written, the third still in DRAM");
        store.sync().unwrap();
        let file = fs.peek(path()).unwrap();
        assert_eq!(file.len(), 3 * BLOCK_BYTES);
        let headers: Vec<BlockHeader> = (0..3)
            .map(|b| validate_block(&file[b * BLOCK_BYTES..(b + 1) * BLOCK_BYTES], b as u64).unwrap())
            .collect();
        assert_eq!(headers.iter().map(|h| h.record_count).collect::<Vec<_>>(), [6, 6, 1]);
        assert_eq!(headers.iter().map(|h| h.sealed).collect::<Vec<_>>(), [true, true, false]);
        assert!(headers.iter().all(|h| h.kind == BlockKind::Data && h.prev_translation.is_none()));
    }

    #[test]
    fn flushing_rewrites_the_unsealed_block_in_place_and_reopen_continues_it() {
        let (fs, mut store) = new_store();
        let a0 = store.append(NodeId::leaf(0), b"zero").unwrap();
        store.flush().unwrap();
        let a1 = store.append(NodeId::leaf(1), b"one").unwrap();
        store.flush().unwrap();
        store.flush().unwrap(); // nothing new: no write
        assert_eq!(store.stats().partial_block_writes, 2);
        store.sync().unwrap();
        assert_eq!(fs.peek(path()).unwrap().len(), BLOCK_BYTES, "rewritten in place");
        let (mut store, report) = reopen(&fs);
        assert_eq!(report.end, store.end());
        assert_eq!(report.end.block(), 0, "the unsealed block stays open");
        let a2 = store.append(NodeId::leaf(2), b"two").unwrap();
        assert_eq!(a2.block(), 0);
        store.sync().unwrap();
        let (store, _) = reopen(&fs);
        for (addr, want) in [(a0, &b"zero"[..]), (a1, b"one"), (a2, b"two")] {
            assert_eq!(store.read(addr).unwrap(), want);
        }
        assert_eq!(store.scan().count(), 3);
    }

    #[test]
    fn translation_blocks_interleave_chain_and_are_skipped_by_scans() {
        let (fs, mut store) = new_store();
        let d0 = store.append(NodeId::leaf(0), b"data zero").unwrap();
        assert_eq!(store.next_translation_addr(), PhysAddr::block_start(1), "after the open data block");
        let t1 = store.append_translation_block(b"first translations").unwrap();
        assert_eq!(t1, PhysAddr::block_start(1));
        assert_eq!(store.next_translation_addr(), PhysAddr::block_start(2), "the open block is empty");
        let d2 = store.append(NodeId::leaf(1), b"data one").unwrap();
        assert_eq!(d2.block(), 2);
        let t3 = store.append_translation_block(b"second").unwrap();
        store.sync().unwrap();
        let tb = store.read_translation_block(t3).unwrap();
        assert_eq!(tb, TranslationBlock { payload: b"second".to_vec(), prev_translation: Some(t1) });
        assert_eq!(store.read_translation_block(t1).unwrap().prev_translation, None);
        assert!(store.read_translation_block(PhysAddr::block_start(0)).unwrap_err().is_corruption());
        let big = vec![1u8; TRANSLATION_PAYLOAD_BYTES + 1];
        assert!(matches!(store.append_translation_block(&big), Err(EventError::InvalidInput(_))));
        let (store, report) = reopen(&fs);
        assert_eq!(report.last_translation_block, Some(3));
        assert_eq!(store.last_translation_block(), Some(t3));
        let scanned: Vec<PhysAddr> = store.scan().map(|r| r.unwrap().addr).collect();
        assert_eq!(scanned, [d0, d2]);
        assert_eq!(store.scan_from(d2).count(), 1);
    }

    #[test]
    fn open_accepts_empty_and_torn_first_files_and_rejects_foreign_ones() {
        let (fs, _) = new_store();
        let (store, report) = reopen(&fs);
        assert_eq!((store.block_count(), report.blocks), (0, 0));
        // A torn first write: half the magic, then zeros.
        let file = fs.create(path()).unwrap();
        file.write_at(0, &BLOCK_MAGIC.to_le_bytes()[..3]).unwrap();
        file.write_at(3, &[0; 1000]).unwrap();
        let (store, report) = reopen(&fs);
        assert_eq!((store.block_count(), report.truncated_bytes), (0, 1003));
        assert_eq!(fs.peek(path()).unwrap().len(), 0);
        let file = fs.create(path()).unwrap();
        file.write_at(0, b"this is not an event block file").unwrap();
        assert!(BlockStore::open(&fs, path()).unwrap_err().is_corruption());
        file.write_at(0, &vec![7u8; 3 * BLOCK_BYTES]).unwrap();
        assert!(BlockStore::open(&fs, path()).unwrap_err().is_corruption(), "two bad blocks at the end");
        assert!(matches!(BlockStore::open(&fs, Path::new("absent")), Err(EventError::Io(_))));
    }

    /// Three synced blocks; the returned nodes with their addresses.
    fn three_blocks(fs: &FaultFs) -> Vec<WrittenNode> {
        let mut store = BlockStore::create(fs, path()).unwrap();
        let mut nodes = Vec::new();
        for i in 0..20 {
            let bytes = sample_node(i, 3000 + i as usize * 97, true);
            let addr = store.append(NodeId::leaf(i), &bytes).unwrap();
            nodes.push((NodeId::leaf(i), addr, bytes));
        }
        store.sync().unwrap();
        assert_eq!(store.block_count(), 3);
        nodes
    }

    #[test]
    fn a_damaged_last_block_loses_nothing_of_earlier_blocks_or_before_the_damage() {
        let base_fs = FaultFs::new();
        let nodes = three_blocks(&base_fs);
        let image = base_fs.peek(path()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0xb10c);
        for trial in 0..200 {
            let at = 2 * BLOCK_BYTES + rng.gen_range(0..BLOCK_BYTES);
            let mut damaged = image.clone();
            damaged[at] ^= rng.gen_range(1..=255u8);
            let fs = FaultFs::new();
            fs.create(path()).unwrap().write_at(0, &damaged).unwrap();
            let (store, report) =
                BlockStore::open(&fs, path()).unwrap_or_else(|e| panic!("trial {trial}: {e}"));
            assert_eq!(report.torn_block, Some(2), "trial {trial} byte {at}");
            for (id, addr, bytes) in &nodes {
                let intact = addr.block() < 2 || (addr.file_offset() as usize + 24 + bytes.len() <= at);
                if intact {
                    assert_eq!(
                        store.read_node(*addr).unwrap(),
                        (*id, bytes.clone()),
                        "trial {trial} byte {at}"
                    );
                }
            }
            let scanned = store.scan().collect::<Result<Vec<_>, _>>().unwrap();
            assert!(scanned.len() >= nodes.iter().filter(|n| n.1.block() < 2).count());
        }
    }

    #[test]
    fn a_damaged_middle_block_is_corruption_for_scans_and_for_its_records_only() {
        let fs = FaultFs::new();
        let nodes = three_blocks(&fs);
        let victim = nodes.iter().find(|n| n.1.block() == 1).unwrap().clone();
        let file = fs.open(path()).unwrap();
        let at = victim.1.file_offset() + 30;
        let mut b = [0u8];
        file.read_exact_at(at, &mut b).unwrap();
        file.write_at(at, &[b[0] ^ 0x55]).unwrap();
        let (store, _) = reopen(&fs);
        let err = store.scan().find_map(Result::err).expect("the scan reports the bad block");
        assert!(err.is_corruption() && err.to_string().contains("block 1"), "{err}");
        assert!(store.read_node(victim.1).unwrap_err().is_corruption());
        for (id, addr, bytes) in nodes.iter().filter(|n| n.1 != victim.1) {
            assert_eq!(store.read_node(*addr).unwrap(), (*id, bytes.clone()));
        }
    }

    /// The SSD crash model on the block store: appends, flushes (rewrites
    /// of the open block), translation blocks and syncs; a node is
    /// acknowledged once the store's durable end passes it.
    struct StoreCrash {
        seed: u64,
        contents: Mutex<BTreeMap<TxnId, (NodeId, Vec<u8>)>>,
    }

    impl FsCrashProtocol for StoreCrash {
        fn name(&self) -> String {
            "events-block-store".into()
        }

        fn run(&self, fs: Arc<dyn FileSystem>, acks: &AckLog) {
            let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
            let mut store = BlockStore::create(&*fs, path()).unwrap();
            let mut contents = BTreeMap::new();
            let mut unacked = Vec::new();
            for t in 1..=60u64 {
                let id = NodeId::leaf(t);
                let len = rng.gen_range(0..6000);
                let bytes = sample_node(t, len, rng.gen_bool(0.5));
                let addr = store.append(id, &bytes).unwrap();
                contents.insert(TxnId(t), (id, bytes));
                unacked.push((TxnId(t), addr));
                match rng.gen_range(0..10) {
                    0 | 1 => store.flush().unwrap(),
                    2 => {
                        store.append_translation_block(&sample_node(t, 100, true)).unwrap();
                    }
                    3 | 4 => {
                        store.sync().unwrap();
                        let end = store.durable_end();
                        unacked.retain(|(txn, addr)| {
                            let done = *addr < end;
                            if done {
                                acks.ack(*txn);
                            }
                            !done
                        });
                    }
                    _ => {}
                }
            }
            *self.contents.lock() = contents;
        }

        fn recover_and_check(
            &self,
            fs: Arc<dyn FileSystem>,
            acked: &BTreeSet<TxnId>,
        ) -> Result<(OracleCounts, Option<String>), String> {
            let contents = self.contents.lock();
            let mut oracle = TxnOracle::new();
            let by_id: BTreeMap<NodeId, TxnId> = contents.iter().map(|(t, (id, _))| (*id, *t)).collect();
            for (t, (_, bytes)) in contents.iter() {
                oracle.attempt(*t, bytes.clone(), Vec::new());
            }
            if !fs.exists(path()) {
                return Ok(oracle.check(acked, &BTreeMap::new()));
            }
            let (store, _) = BlockStore::open(&*fs, path()).map_err(|e| e.to_string())?;
            let mut found = BTreeMap::new();
            for rec in store.scan() {
                let rec = rec.map_err(|e| e.to_string())?;
                let bytes = store.read(rec.addr).map_err(|e| e.to_string())?;
                let txn = by_id.get(&rec.node_id).ok_or(format!("unknown node {}", rec.node_id))?;
                found.insert(*txn, bytes);
            }
            Ok(oracle.check(acked, &found))
        }
    }

    #[test]
    fn every_ssd_crash_image_keeps_every_synced_node() {
        for seed in [1, 2, 3] {
            let proto = StoreCrash { seed, contents: Mutex::new(BTreeMap::new()) };
            let report = run_fs_crashtest(&proto, &FsCrashConfig { seed, max_images: None });
            println!("{}", report.line());
            assert!(report.crash_points > 30, "{}", report.line());
            assert!(report.is_clean(), "seed {seed}: {} {:?}", report.line(), report.first_failure);
        }
    }

    /// Every constant of the format appears in `docs/format/events-blocks.md`
    /// with the code's value, and every field row has the code's offset.
    #[test]
    fn format_doc_agrees_with_code() {
        use strata_media::doc_table::markdown_table;
        let doc = include_str!("../../../docs/format/events-blocks.md");
        let constants = markdown_table(doc, "## Constants");
        let value_of = |name: &str| -> String {
            constants
                .iter()
                .find(|row| row[0] == name)
                .unwrap_or_else(|| panic!("constant {name} missing from the doc"))[1]
                .clone()
        };
        assert_eq!(value_of("BLOCK_MAGIC"), format!("{BLOCK_MAGIC:#018x}"));
        assert!(doc.contains("`STREVBLK`"));
        for (name, value) in [
            ("BLOCK_BYTES", BLOCK_BYTES as u64),
            ("BLOCK_HEADER_BYTES", BLOCK_HEADER_BYTES as u64),
            ("RECORD_HEADER_BYTES", RECORD_HEADER_BYTES as u64),
            ("MAX_NODE_BYTES", MAX_NODE_BYTES as u64),
            ("MAX_RECORD_BYTES", MAX_RECORD_BYTES as u64),
            ("TRANSLATION_PAYLOAD_BYTES", TRANSLATION_PAYLOAD_BYTES as u64),
            ("BLOCK_FORMAT_VERSION", BLOCK_FORMAT_VERSION as u64),
            ("BLOCK_KIND_DATA", BLOCK_KIND_DATA as u64),
            ("BLOCK_KIND_TRANSLATION", BLOCK_KIND_TRANSLATION as u64),
            ("BLOCK_FLAG_SEALED", BLOCK_FLAG_SEALED as u64),
            ("RECORD_ENCODING_RAW", RECORD_ENCODING_RAW as u64),
            ("RECORD_ENCODING_LZ4", RECORD_ENCODING_LZ4 as u64),
            ("PHYS_ADDR_OFFSET_BITS", PHYS_ADDR_OFFSET_BITS as u64),
            ("MAX_BLOCK_NUMBER", MAX_BLOCK_NUMBER),
        ] {
            assert_eq!(value_of(name), value.to_string(), "{name}");
        }
        let check_fields = |heading: &str, fields: &[(&str, usize, usize)], total: usize| {
            let rows = markdown_table(doc, heading);
            let mut end = 0;
            for &(name, offset, size) in fields {
                let row = rows
                    .iter()
                    .find(|r| r.get(3).map(String::as_str) == Some(name))
                    .unwrap_or_else(|| panic!("{heading}: field {name} missing"));
                assert_eq!(row[0], offset.to_string(), "{heading}: offset of {name}");
                assert_eq!(row[1], size.to_string(), "{heading}: size of {name}");
                assert_eq!(offset, end, "{heading}: {name} does not follow the previous field");
                end = offset + size;
            }
            assert_eq!(end, total, "{heading}: fields do not fill it");
            assert_eq!(rows.len() - 1, fields.len(), "{heading}: rows without a field in the code");
        };
        check_fields(
            "### Block header",
            &[
                ("magic", HDR_OFFSET_MAGIC, 8),
                ("version", HDR_OFFSET_VERSION, 2),
                ("kind", HDR_OFFSET_KIND, 1),
                ("flags", HDR_OFFSET_FLAGS, 1),
                ("record_count", HDR_OFFSET_RECORD_COUNT, 4),
                ("used_bytes", HDR_OFFSET_USED_BYTES, 4),
                ("block_crc", HDR_OFFSET_BLOCK_CRC, 4),
                ("block_number", HDR_OFFSET_BLOCK_NUMBER, 8),
                ("prev_translation", HDR_OFFSET_PREV_TRANSLATION, 8),
            ],
            BLOCK_HEADER_BYTES,
        );
        check_fields(
            "### Record header",
            &[
                ("node_id", REC_OFFSET_NODE_ID, 8),
                ("stored_len", REC_OFFSET_STORED_LEN, 4),
                ("node_len", REC_OFFSET_NODE_LEN, 4),
                ("encoding", REC_OFFSET_ENCODING, 1),
                ("reserved", REC_OFFSET_ENCODING + 1, 3),
                ("record_crc", REC_OFFSET_RECORD_CRC, 4),
            ],
            RECORD_HEADER_BYTES,
        );
    }

    #[test]
    fn sample_files_round_trip_through_open() {
        for seed in 0..16 {
            let (image, nodes) = sample_block_file(seed);
            let fs = FaultFs::new();
            fs.create(path()).unwrap().write_at(0, &image).unwrap();
            let (store, report) = BlockStore::open(&fs, path()).unwrap();
            assert_eq!((report.torn_block, report.truncated_bytes), (None, 0), "seed {seed}");
            for (id, addr, bytes) in &nodes {
                assert_eq!(store.read_node(*addr).unwrap(), (*id, bytes.clone()), "seed {seed}");
            }
            let scanned: Vec<PhysAddr> = store.scan().map(|r| r.unwrap().addr).collect();
            assert_eq!(scanned, nodes.iter().map(|n| n.1).collect::<Vec<_>>(), "seed {seed}");
        }
    }

    /// Fuzz smoke (the cargo-fuzz target runs the same entry): 20,000 seeded
    /// inputs, random and mutated valid, never panic.
    #[test]
    fn fuzz_smoke_block_decode_never_panics() {
        let seed = 0xf022_b10c;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for i in 0..20_000u32 {
            let input: Vec<u8> = match i % 8 {
                0 => {
                    let len =
                        if rng.gen_bool(0.1) { rng.gen_range(0..70_000) } else { rng.gen_range(0..600) };
                    let mut v = vec![0u8];
                    v.extend((0..len).map(|_| rng.gen::<u8>()));
                    v
                }
                1 => {
                    // A header-looking start, then random bytes.
                    let mut v = vec![0u8];
                    v.extend_from_slice(&BLOCK_MAGIC.to_le_bytes());
                    v.extend_from_slice(&BLOCK_FORMAT_VERSION.to_le_bytes());
                    v.extend((0..rng.gen_range(0..40_000)).map(|_| rng.gen::<u8>()));
                    v
                }
                _ => {
                    let mut v = vec![1 | (rng.gen_bool(0.3) as u8) << 1, rng.gen()];
                    for _ in 0..rng.gen_range(0..6) * 4 {
                        v.push(rng.gen());
                    }
                    v
                }
            };
            let result = std::panic::catch_unwind(|| fuzz_block_decode(&input));
            assert!(result.is_ok(), "seed {seed:#x} input {i} panicked: {input:?}");
        }
    }
}
