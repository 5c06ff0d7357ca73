//! Records and blocks as bytes (chronicledb-pmem.txt section 2.2, "Storage
//! Layout"; `docs/format/events-blocks.md`): choosing a record's encoding
//! (LZ4 or raw), encoding a record with its CRC32C, decoding and checking a
//! record, decompressing its node, checking a whole block, and salvaging the
//! CRC-valid records at the start of a torn block. Errors are
//! [`DecodeError`]s saying what is wrong; the callers add where.

use crate::ids::{DecodeError, NodeId};

use super::format::{
    block_crc, record_crc, u16_at, u32_at, u64_at, BlockHeader, BlockKind, RecordHeader, BLOCK_BYTES,
    BLOCK_FLAG_SEALED, BLOCK_FORMAT_VERSION, BLOCK_HEADER_BYTES, BLOCK_KIND_DATA, BLOCK_KIND_TRANSLATION,
    BLOCK_MAGIC, HDR_OFFSET_BLOCK_CRC, HDR_OFFSET_BLOCK_NUMBER, HDR_OFFSET_FLAGS, HDR_OFFSET_KIND,
    HDR_OFFSET_MAGIC, HDR_OFFSET_PREV_TRANSLATION, HDR_OFFSET_RECORD_COUNT, HDR_OFFSET_USED_BYTES,
    HDR_OFFSET_VERSION, MAX_NODE_BYTES, RECORD_ENCODING_LZ4, RECORD_ENCODING_RAW, RECORD_HEADER_BYTES,
    REC_OFFSET_ENCODING, REC_OFFSET_NODE_ID, REC_OFFSET_NODE_LEN, REC_OFFSET_RECORD_CRC,
    REC_OFFSET_STORED_LEN,
};

/// The LZ4 form of `node` if it is smaller, else `node` itself (raw): the
/// encoding and the bytes to store. A record so never exceeds a raw node.
pub(super) fn compress_node(node: &[u8]) -> (u8, std::borrow::Cow<'_, [u8]>) {
    let compressed = lz4_flex::block::compress(node);
    if compressed.len() < node.len() {
        (RECORD_ENCODING_LZ4, compressed.into())
    } else {
        (RECORD_ENCODING_RAW, node.into())
    }
}

/// Writes the record of node `node_id` (`node_len` bytes uncompressed,
/// stored as `stored` with `encoding`) into `out`, which is exactly
/// [`RECORD_HEADER_BYTES`] + `stored.len()` long: header, CRC, stored bytes.
pub(super) fn encode_record(out: &mut [u8], node_id: NodeId, node_len: usize, encoding: u8, stored: &[u8]) {
    let (h, body) = out.split_at_mut(RECORD_HEADER_BYTES);
    h.fill(0);
    h[REC_OFFSET_NODE_ID..REC_OFFSET_NODE_ID + 8].copy_from_slice(&node_id.to_u64().to_le_bytes());
    h[REC_OFFSET_STORED_LEN..REC_OFFSET_STORED_LEN + 4].copy_from_slice(&(stored.len() as u32).to_le_bytes());
    h[REC_OFFSET_NODE_LEN..REC_OFFSET_NODE_LEN + 4].copy_from_slice(&(node_len as u32).to_le_bytes());
    h[REC_OFFSET_ENCODING] = encoding;
    let crc = record_crc(h, stored);
    h[REC_OFFSET_RECORD_CRC..REC_OFFSET_RECORD_CRC + 4].copy_from_slice(&crc.to_le_bytes());
    body.copy_from_slice(stored);
}

/// Decodes the record at `offset` of `block` and checks its CRC. `Err` says
/// what is wrong.
pub fn decode_record(block: &[u8], offset: usize) -> Result<RecordHeader, DecodeError> {
    let end = block.len().min(BLOCK_BYTES);
    if offset < BLOCK_HEADER_BYTES || offset.checked_add(RECORD_HEADER_BYTES).is_none_or(|e| e > end) {
        return Err(DecodeError::Overrun { what: "record header", offset, len: RECORD_HEADER_BYTES as u64 });
    }
    let h = &block[offset..offset + RECORD_HEADER_BYTES];
    let stored_len = u32_at(h, REC_OFFSET_STORED_LEN);
    let node_len = u32_at(h, REC_OFFSET_NODE_LEN);
    let encoding = h[REC_OFFSET_ENCODING];
    if node_len as usize > MAX_NODE_BYTES {
        return Err(DecodeError::Invalid(format!("node length {node_len} exceeds {MAX_NODE_BYTES}")));
    }
    match encoding {
        RECORD_ENCODING_RAW if stored_len != node_len => {
            return Err(DecodeError::Invalid(format!(
                "raw record stores {stored_len} bytes of a {node_len}-byte node"
            )))
        }
        RECORD_ENCODING_LZ4 if stored_len >= node_len => {
            return Err(DecodeError::Invalid(format!(
                "lz4 record of {stored_len} bytes is not smaller than its {node_len}-byte node"
            )))
        }
        RECORD_ENCODING_RAW | RECORD_ENCODING_LZ4 => {}
        other => return Err(DecodeError::Unknown { what: "record encoding", value: other.into() }),
    }
    if h[REC_OFFSET_ENCODING + 1..REC_OFFSET_RECORD_CRC] != [0; 3] {
        return Err(DecodeError::Invalid("reserved record header bytes are not zero".into()));
    }
    let stored_end = offset + RECORD_HEADER_BYTES + stored_len as usize;
    if stored_end > end {
        return Err(DecodeError::Overrun { what: "record", offset, len: stored_len.into() });
    }
    let stored = &block[offset + RECORD_HEADER_BYTES..stored_end];
    DecodeError::check_crc("record", offset, u32_at(h, REC_OFFSET_RECORD_CRC), record_crc(h, stored))?;
    Ok(RecordHeader {
        node_id: NodeId::from_u64(u64_at(h, REC_OFFSET_NODE_ID)),
        stored_len,
        node_len,
        encoding,
    })
}

/// Decompresses the stored bytes of a record.
pub(super) fn decode_node(h: &RecordHeader, stored: &[u8]) -> Result<Vec<u8>, DecodeError> {
    match h.encoding {
        RECORD_ENCODING_RAW => Ok(stored.to_vec()),
        _ => {
            let mut out = vec![0; h.node_len as usize];
            match lz4_flex::block::decompress_into(stored, &mut out) {
                Ok(n) if n == out.len() => Ok(out),
                Ok(n) => Err(DecodeError::Invalid(format!(
                    "lz4 record decompresses to {n} bytes, header says {}",
                    h.node_len
                ))),
                Err(e) => Err(DecodeError::Invalid(format!("lz4 record does not decompress: {e}"))),
            }
        }
    }
}

/// Checks a whole block (exactly [`BLOCK_BYTES`] long) as the format
/// requires: header fields, CRC, zero padding, and for a data block that its
/// `record_count` records tile `[BLOCK_HEADER_BYTES, used_bytes)` with valid
/// CRCs. `Err` says what is wrong.
pub fn validate_block(block: &[u8], block_number: u64) -> Result<BlockHeader, DecodeError> {
    if block.len() != BLOCK_BYTES {
        return Err(DecodeError::Invalid(format!("block of {} bytes, expected {BLOCK_BYTES}", block.len())));
    }
    if u64_at(block, HDR_OFFSET_MAGIC) != BLOCK_MAGIC {
        return Err(DecodeError::BadMagic("block"));
    }
    let version = u16_at(block, HDR_OFFSET_VERSION);
    if version != BLOCK_FORMAT_VERSION {
        return Err(DecodeError::UnsupportedVersion { what: "block", version: version.into() });
    }
    DecodeError::check_crc("block", 0, u32_at(block, HDR_OFFSET_BLOCK_CRC), block_crc(block))?;
    let kind = match block[HDR_OFFSET_KIND] {
        BLOCK_KIND_DATA => BlockKind::Data,
        BLOCK_KIND_TRANSLATION => BlockKind::Translation,
        other => return Err(DecodeError::Unknown { what: "block kind", value: other.into() }),
    };
    let flags = block[HDR_OFFSET_FLAGS];
    if flags & !BLOCK_FLAG_SEALED != 0 {
        return Err(DecodeError::Unknown { what: "block flags", value: flags.into() });
    }
    let number = u64_at(block, HDR_OFFSET_BLOCK_NUMBER);
    if number != block_number {
        return Err(DecodeError::Invalid(format!("block says it is number {number}")));
    }
    let prev_raw = u64_at(block, HDR_OFFSET_PREV_TRANSLATION);
    if prev_raw > block_number {
        return Err(DecodeError::Invalid(format!(
            "previous translation block {} is not before this block",
            prev_raw - 1
        )));
    }
    let record_count = u32_at(block, HDR_OFFSET_RECORD_COUNT);
    let used = u32_at(block, HDR_OFFSET_USED_BYTES);
    if (used as usize) < BLOCK_HEADER_BYTES || used as usize > BLOCK_BYTES {
        return Err(DecodeError::Invalid(format!("used bytes {used} out of range")));
    }
    if block[used as usize..].iter().any(|&b| b != 0) {
        return Err(DecodeError::Invalid("padding after the used bytes is not zero".into()));
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
                return Err(DecodeError::Invalid("a translation block has records or is unsealed".into()));
            }
        }
        BlockKind::Data => {
            let mut offset = BLOCK_HEADER_BYTES;
            for i in 0..record_count {
                let r = decode_record(&block[..used as usize], offset).map_err(|e| {
                    DecodeError::InRecord { index: i, count: record_count, inner: Box::new(e) }
                })?;
                offset += r.record_bytes();
            }
            if offset != used as usize {
                return Err(DecodeError::Invalid(format!(
                    "{record_count} records end at {offset}, header says {used}"
                )));
            }
        }
    }
    Ok(h)
}

/// The records at the start of a torn data block that pass their CRCs:
/// (offsets, end of the last one).
pub(super) fn salvage_records(block: &[u8]) -> (Vec<usize>, usize) {
    let mut offsets = Vec::new();
    let mut offset = BLOCK_HEADER_BYTES;
    while let Ok(r) = decode_record(block, offset) {
        offsets.push(offset);
        offset += r.record_bytes();
    }
    (offsets, offset)
}
