//! [`BlockFileWriter`]: writes one block file sequentially (blocks buffered
//! in chunks of [`WRITE_CHUNK_BYTES`]), then its index and footer, and makes
//! it durable: file synced, then its directory entry (`docs/format/block-file.md`,
//! "Writing").

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_media::fs::{parent_dir, FileSystem, FsFile};

use super::block_file_name;
use super::format::{
    encode_header, finish_image, new_entry, BlockIndexEntry, BlockSpec, BLOCK_FILE_FORMAT_VERSION,
};
use super::summary::BlockSummary;
use crate::error::EngineError;
use crate::model::{SeriesId, TimestampNs};

/// Appended bytes are written once this many are buffered.
pub const WRITE_CHUNK_BYTES: usize = 1 << 20;

/// What a finished (durable) block file holds.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockFileMeta {
    pub seq: u64,
    pub path: PathBuf,
    pub len_bytes: u64,
    /// In index order: by series, then `min_ts`.
    pub entries: Vec<BlockIndexEntry>,
}

/// Writes `blocks-<seq>.blk`. Until [`finish`](BlockFileWriter::finish)
/// returns, the file is neither complete nor durable; a crash leaves it
/// absent or invalid (no footer, or footer without durable content), never
/// valid with wrong content. After an error the writer refuses further work;
/// [`abandon`](BlockFileWriter::abandon) removes the partial file.
pub struct BlockFileWriter {
    fs: Arc<dyn FileSystem>,
    file: Box<dyn FsFile>,
    path: PathBuf,
    seq: u64,
    entries: Vec<BlockIndexEntry>,
    buffer: Vec<u8>,
    /// File offset of `buffer[0]`.
    buffer_offset: u64,
    failed: Option<String>,
}

impl std::fmt::Debug for BlockFileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockFileWriter")
            .field("path", &self.path)
            .field("blocks", &self.entries.len())
            .field("failed", &self.failed)
            .finish()
    }
}

impl BlockFileWriter {
    /// Creates (or truncates) `dir/blocks-<seq>.blk`. The directory entry is
    /// made durable by `finish`, not here.
    pub fn create(fs: Arc<dyn FileSystem>, dir: &Path, seq: u64) -> Result<Self, EngineError> {
        let path = dir.join(block_file_name(seq));
        let file = fs.create(&path)?;
        let mut buffer = Vec::with_capacity(WRITE_CHUNK_BYTES);
        buffer.extend_from_slice(&encode_header(BLOCK_FILE_FORMAT_VERSION, seq));
        Ok(BlockFileWriter {
            fs,
            file,
            path,
            seq,
            entries: Vec::new(),
            buffer,
            buffer_offset: 0,
            failed: None,
        })
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Blocks appended so far.
    pub fn block_count(&self) -> usize {
        self.entries.len()
    }

    /// Appends one sealed block with its summary, if any. Rejects
    /// (`InvalidArgument`) an empty block, `point_count == 0`,
    /// `min_ts > max_ts`, a block over `u32::MAX` bytes, a summary breaking
    /// its rules. Blocks may come in any order; the index is sorted by `finish`.
    pub fn append(
        &mut self,
        series: SeriesId,
        min_ts: TimestampNs,
        max_ts: TimestampNs,
        point_count: u32,
        block: &[u8],
        summary: Option<BlockSummary>,
    ) -> Result<(), EngineError> {
        self.check_usable()?;
        if self.entries.len() >= u32::MAX as usize {
            return Err(EngineError::InvalidArgument(format!(
                "{}: a block file holds at most u32::MAX blocks",
                self.path.display()
            )));
        }
        let spec = BlockSpec { series, min_ts, max_ts, point_count, bytes: block, summary };
        let offset = self.buffer_offset + self.buffer.len() as u64;
        let entry = new_entry(&spec, offset).map_err(|what| {
            EngineError::InvalidArgument(format!("{}: block rejected: {what}", self.path.display()))
        })?;
        self.entries.push(entry);
        self.buffer.extend_from_slice(block);
        if self.buffer.len() >= WRITE_CHUNK_BYTES {
            self.flush_buffer()?;
        }
        Ok(())
    }

    /// Writes index and footer, syncs the file (`sync_all`), then syncs its
    /// directory: on return the file is complete and durable.
    pub fn finish(mut self) -> Result<BlockFileMeta, EngineError> {
        self.check_usable()?;
        let index_offset = self.buffer_offset + self.buffer.len() as u64;
        let mut entries = std::mem::take(&mut self.entries);
        let mut tail = Vec::new();
        finish_image(BLOCK_FILE_FORMAT_VERSION, &mut entries, index_offset, |bytes| {
            tail.extend_from_slice(bytes)
        })
        .map_err(|what| EngineError::InvalidArgument(format!("{}: {what}", self.path.display())))?;
        self.buffer.extend_from_slice(&tail);
        let len_bytes = self.buffer_offset + self.buffer.len() as u64;
        self.flush_buffer()?;
        let synced = self.file.sync_all().and_then(|()| self.fs.sync_dir(parent_dir(&self.path)));
        if let Err(err) = synced {
            self.failed = Some(err.to_string());
            return Err(err.into());
        }
        Ok(BlockFileMeta { seq: self.seq, path: self.path.clone(), len_bytes, entries })
    }

    /// Gives up: removes the partial file (nothing refers to it yet).
    pub fn abandon(self) -> Result<(), EngineError> {
        let BlockFileWriter { fs, file, path, .. } = self;
        drop(file);
        fs.remove(&path)?;
        Ok(())
    }

    fn check_usable(&self) -> Result<(), EngineError> {
        match &self.failed {
            Some(why) => Err(EngineError::Io(std::io::Error::other(format!(
                "block file writer for {} failed earlier: {why}",
                self.path.display()
            )))),
            None => Ok(()),
        }
    }

    fn flush_buffer(&mut self) -> Result<(), EngineError> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        if let Err(err) = self.file.write_at(self.buffer_offset, &self.buffer) {
            self.failed = Some(err.to_string());
            return Err(err.into());
        }
        self.buffer_offset += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }
}
