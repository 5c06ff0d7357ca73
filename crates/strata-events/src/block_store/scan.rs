//! The record scan of the block store (chronicledb-pmem.txt section 2.2,
//! "Storage Layout"): [`BlockScan`] walks the node records in file order,
//! the DRAM open block's included, reading and checking every block it
//! passes and skipping translation blocks. It is the full file scan of DRAM
//! translation recovery and the tail scan of the other translations.

use crate::ids::{EventError, NodeId};

use super::codec::decode_record;
use super::format::{BlockKind, PhysAddr, BLOCK_HEADER_BYTES};
use super::store::BlockStore;

/// A node record found by a scan.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ScannedRecord {
    pub node_id: NodeId,
    pub addr: PhysAddr,
    pub node_len: u32,
    pub stored_len: u32,
}

impl BlockStore {
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
                        EventError::corruption(
                            format!("{} block {number}", self.store.path.display()),
                            what.to_string(),
                        )
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
