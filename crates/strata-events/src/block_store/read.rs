//! Reads of the block store (chronicledb-pmem.txt section 2.2, "Storage
//! Layout"; `docs/format/events-blocks.md`, "Reading"): a node record by
//! its [`PhysAddr`] (from the DRAM open block, or one positional read of the
//! record's largest extent), whole checked blocks, and translation blocks
//! ([`TranslationBlock`]). Every read checks the CRC of what it returns.

use std::io;
use std::sync::atomic::Ordering;

use strata_media::fs::FsFile;

use crate::ids::{DecodeError, EventError, NodeId};

use super::codec::{decode_node, decode_record, validate_block};
use super::format::{
    BlockHeader, BlockKind, PhysAddr, BLOCK_BYTES, BLOCK_HEADER_BYTES, MAX_RECORD_BYTES, RECORD_HEADER_BYTES,
};
use super::store::{io_context, BlockStore};

/// A translation block's payload and the translation block before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranslationBlock {
    pub payload: Vec<u8>,
    pub prev_translation: Option<PhysAddr>,
}

/// The node id and decompressed bytes of the record at `offset` of `block`
/// (a block image, or its prefix up to the record's end). `Err` says what
/// is wrong.
fn decode_node_at(block: &[u8], offset: usize) -> Result<(NodeId, Vec<u8>), DecodeError> {
    let h = decode_record(block, offset)?;
    let stored = &block[offset + RECORD_HEADER_BYTES..offset + h.record_bytes()];
    Ok((h.node_id, decode_node(&h, stored)?))
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

impl BlockStore {
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
        let corrupt = |what: DecodeError| {
            EventError::corruption(format!("{} {addr}", self.path.display()), what.to_string())
        };
        let offset = addr.offset() as usize;
        if addr.block() == self.open.number {
            return decode_node_at(&self.open.buf[..self.open.used], offset).map_err(corrupt);
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
        decode_node_at(&buf, offset).map_err(corrupt)
    }

    /// The decompressed bytes of the node at `addr`.
    pub fn read(&self, addr: PhysAddr) -> Result<Vec<u8>, EventError> {
        self.read_node(addr).map(|(_, bytes)| bytes)
    }

    /// Reads and checks the whole block `number` (which must be on the file).
    pub(super) fn read_file_block(&self, number: u64) -> Result<(BlockHeader, Vec<u8>), EventError> {
        let mut buf = vec![0u8; BLOCK_BYTES];
        self.file
            .read_exact_at(number * BLOCK_BYTES as u64, &mut buf)
            .map_err(|e| io_context(&self.path, &format!("read block {number}"), e))?;
        self.reads.block_reads.fetch_add(1, Ordering::Relaxed);
        self.reads.bytes_read.fetch_add(BLOCK_BYTES as u64, Ordering::Relaxed);
        let h = validate_block(&buf, number).map_err(|what| {
            EventError::corruption(format!("{} block {number}", self.path.display()), what.to_string())
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
}
