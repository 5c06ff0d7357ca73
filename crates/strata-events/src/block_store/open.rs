//! Opening an existing block file (chronicledb-pmem.txt section 2.2,
//! "Storage Layout"; `docs/format/events-blocks.md`, "Opening and torn blocks"): only the end of
//! the file is checked. Walking back from the end, trailing all-zero blocks
//! and at most one torn block after the last valid block are cut; the
//! CRC-valid records at the start of a torn data block are salvaged into the
//! DRAM open block and rewritten; a valid unsealed last block is reopened to
//! continue it. What open found is reported in [`OpenReport`].

use std::path::Path;
use std::sync::atomic::Ordering;

use strata_media::fs::FileSystem;

use crate::ids::EventError;

use super::codec::{salvage_records, validate_block};
use super::format::{
    header_prefix_is_data, looks_like_first_block, BlockHeader, BlockKind, PhysAddr, BLOCK_BYTES,
    BLOCK_HEADER_BYTES, MAX_BLOCK_NUMBER,
};
use super::store::{io_context, BlockStore, OpenBlock};

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

impl BlockStore {
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
}
