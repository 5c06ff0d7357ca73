//! The [`BlockStore`] value (chronicledb-pmem.txt section 2.2, "Storage
//! Layout"): the file, the unfilled block kept in DRAM ([`OpenBlock`]), the
//! translation chain's head, the durable end, and the counters of what the
//! store did ([`BlockStoreStats`]); creating a store and its accessors. The
//! writer, open, read and scan paths live in their own files.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use strata_media::fs::{create_durably, FileSystem, FsFile};

use crate::ids::EventError;

use super::format::{PhysAddr, BLOCK_BYTES, BLOCK_HEADER_BYTES};

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
pub(super) struct ReadCounters {
    pub(super) node_reads: AtomicU64,
    pub(super) block_reads: AtomicU64,
    pub(super) bytes_read: AtomicU64,
}

/// The unfilled block in DRAM.
pub(super) struct OpenBlock {
    pub(super) number: u64,
    pub(super) buf: Vec<u8>,
    pub(super) used: usize,
    pub(super) records: u32,
    pub(super) prev_translation: Option<u64>,
    /// `used` of the version on the file, if one was written.
    pub(super) written_used: Option<usize>,
}

impl OpenBlock {
    pub(super) fn new(number: u64, prev_translation: Option<u64>) -> OpenBlock {
        OpenBlock {
            number,
            buf: vec![0; BLOCK_BYTES],
            used: BLOCK_HEADER_BYTES,
            records: 0,
            prev_translation,
            written_used: None,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.records == 0
    }

    pub(super) fn end(&self) -> PhysAddr {
        // `used` may equal BLOCK_BYTES for a full block: its end is the next block.
        PhysAddr::new(self.number, self.used as u32).unwrap_or_else(|| PhysAddr::block_start(self.number + 1))
    }
}

/// Nodes compressed into fixed-size blocks of one append-only file (see the
/// module comment). Reads take `&self`; appends `&mut self`.
pub struct BlockStore {
    pub(super) file: Box<dyn FsFile>,
    pub(super) path: PathBuf,
    pub(super) open: OpenBlock,
    pub(super) last_translation: Option<u64>,
    pub(super) durable_end: PhysAddr,
    pub(super) unsynced_writes: bool,
    pub(super) stats: BlockStoreStats,
    pub(super) reads: ReadCounters,
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

pub(super) fn io_context(path: &Path, what: &str, e: io::Error) -> EventError {
    EventError::Io(io::Error::new(e.kind(), format!("{}: {what}: {e}", path.display())))
}

impl BlockStore {
    /// Creates (or truncates) the block file at `path`, durably.
    pub fn create(fs: &dyn FileSystem, path: &Path) -> Result<BlockStore, EventError> {
        let file = create_durably(fs, path).map_err(|e| io_context(path, "create", e))?;
        Ok(BlockStore::with_file(file, path, OpenBlock::new(0, None), None))
    }

    pub(super) fn with_file(
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
}
