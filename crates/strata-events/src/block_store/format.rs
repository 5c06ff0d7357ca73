//! The on-file format of the block store (chronicledb-pmem.txt section 2.2,
//! "Storage Layout"; `docs/format/events-blocks.md`): sizes, magic, version,
//! kinds, flags and encodings, the byte offsets of the block header and the
//! record header, [`PhysAddr`] (where a record lives), the decoded
//! [`BlockHeader`] and [`RecordHeader`], the two CRC32Cs and the block
//! header encoder.

use crate::ids::NodeId;

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

pub(super) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
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
pub(super) fn seal_header(block: &mut [u8], h: &BlockHeader) {
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
pub(super) fn header_prefix_is_data(block: &[u8], block_number: u64) -> bool {
    block.len() >= BLOCK_HEADER_BYTES
        && u64_at(block, HDR_OFFSET_MAGIC) == BLOCK_MAGIC
        && u16_at(block, HDR_OFFSET_VERSION) == BLOCK_FORMAT_VERSION
        && block[HDR_OFFSET_KIND] == BLOCK_KIND_DATA
        && u64_at(block, HDR_OFFSET_BLOCK_NUMBER) == block_number
}

/// Whether a first block that fails validation can be a torn write of a new
/// file: its magic field is a prefix of the magic followed by zeros.
pub(super) fn looks_like_first_block(block: &[u8]) -> bool {
    let magic = BLOCK_MAGIC.to_le_bytes();
    let prefix = block.iter().zip(magic.iter()).take_while(|(a, b)| a == b).count();
    block.get(prefix..8).is_some_and(|rest| rest.iter().all(|&b| b == 0))
}
