//! The write path of the block store (chronicledb-pmem.txt section 2.2,
//! "Storage Layout"): appending a node's record to the DRAM open block,
//! sealing a full block and starting the next, appending a translation
//! block, flushing the open block unsealed (a whole-block rewrite in place
//! on every flush) and syncing. Every block write goes through
//! `write_block`, which seals the header, and is counted once.

use std::path::Path;

use strata_media::fs::FsFile;

use crate::ids::{EventError, NodeId};

use super::codec::{compress_node, encode_record};
use super::format::{
    seal_header, BlockHeader, BlockKind, PhysAddr, BLOCK_BYTES, BLOCK_HEADER_BYTES, MAX_BLOCK_NUMBER,
    MAX_NODE_BYTES, MAX_RECORD_BYTES, RECORD_HEADER_BYTES, TRANSLATION_PAYLOAD_BYTES,
};
use super::store::{io_context, BlockStore, OpenBlock};

fn no_block_number_left() -> EventError {
    EventError::Full { what: "block file", detail: "no block number left".into() }
}

/// Seals `h` into `buf` (header and CRC) and writes the whole block at its
/// place in `file`. Not durable until a sync.
fn write_block(file: &dyn FsFile, path: &Path, buf: &mut [u8], h: &BlockHeader) -> Result<(), EventError> {
    seal_header(buf, h);
    let what = match h.kind {
        BlockKind::Data => "write block",
        BlockKind::Translation => "write translation block",
    };
    file.write_at(h.block_number * BLOCK_BYTES as u64, buf).map_err(|e| io_context(path, what, e))
}

impl BlockStore {
    /// Compresses `node` and appends it; returns its address. The node is in
    /// DRAM until its block is written, durable after the next [`sync`](Self::sync).
    pub fn append(&mut self, node_id: NodeId, node: &[u8]) -> Result<PhysAddr, EventError> {
        if node.len() > MAX_NODE_BYTES {
            return Err(EventError::invalid(format!(
                "node {node_id} of {} bytes exceeds {MAX_NODE_BYTES} bytes",
                node.len()
            )));
        }
        let (encoding, stored) = compress_node(node);
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
        let out = &mut self.open.buf[offset..offset + record_bytes];
        encode_record(out, node_id, node.len(), encoding, &stored);
        self.open.used += record_bytes;
        self.open.records += 1;
        self.stats.nodes_appended += 1;
        self.stats.node_bytes += node.len() as u64;
        self.stats.record_bytes += record_bytes as u64;
        Ok(addr)
    }

    /// Counts one whole-block write; the file now has unsynced data.
    fn count_block_write(&mut self) {
        self.unsynced_writes = true;
        self.stats.block_writes += 1;
        self.stats.bytes_written += BLOCK_BYTES as u64;
    }

    /// Writes the open block: its header (sealed or not) and CRC, the whole
    /// block at its place.
    pub(super) fn write_open_block(&mut self, sealed: bool) -> Result<(), EventError> {
        let h = BlockHeader {
            kind: BlockKind::Data,
            sealed,
            record_count: self.open.records,
            used_bytes: self.open.used as u32,
            block_number: self.open.number,
            prev_translation: self.open.prev_translation,
        };
        write_block(&*self.file, &self.path, &mut self.open.buf, &h)?;
        self.count_block_write();
        self.open.written_used = Some(self.open.used);
        self.stats.partial_block_writes += u64::from(!sealed);
        Ok(())
    }

    /// Seals and writes the open block if it holds a record, and opens the next.
    fn seal_open_block(&mut self) -> Result<(), EventError> {
        if self.open.is_empty() {
            return Ok(());
        }
        if self.open.number >= MAX_BLOCK_NUMBER {
            return Err(no_block_number_left());
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
            return Err(no_block_number_left());
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
        write_block(&*self.file, &self.path, &mut buf, &h)?;
        self.count_block_write();
        self.stats.translation_blocks_written += 1;
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
}
