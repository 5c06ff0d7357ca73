//! [`BlockFile`]: an open, validated block file. Opening reads header, footer
//! and index (never the blocks) and checks them; each block read is
//! positional and checks the block's CRC (`docs/format/block-file.md`,
//! "Opening and reading").

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_media::fs::{FileSystem, FsFile};

use super::format::{
    check_block, decode_footer, decode_header, decode_index, parse_bytes, BlockIndexEntry, Footer,
    ParsedBlockFile, BLOCK_FILE_FOOTER_BYTES, BLOCK_FILE_HEADER_BYTES,
};
use super::parse_block_file_name;
use crate::error::{EngineError, FormatError};
use crate::model::SeriesId;

/// An open block file whose header, footer and index are valid. Shared
/// between threads by reference (reads are positional).
pub struct BlockFile {
    file: Box<dyn FsFile>,
    path: PathBuf,
    seq: u64,
    len_bytes: u64,
    footer: Footer,
    entries: Vec<BlockIndexEntry>,
}

impl std::fmt::Debug for BlockFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockFile")
            .field("path", &self.path)
            .field("seq", &self.seq)
            .field("len_bytes", &self.len_bytes)
            .field("blocks", &self.entries.len())
            .finish()
    }
}

impl BlockFile {
    /// Opens `path` and validates header, footer, index CRC and every entry.
    /// A file that is not a valid block file (too short, bad magic or CRC,
    /// blocks not tiling the data area, sequence number not matching a
    /// `blocks-<seq>.blk` name, ...) gives `Corruption` naming the file and
    /// what is wrong; a missing file gives `Io` (`NotFound`).
    pub fn open(fs: Arc<dyn FileSystem>, path: &Path) -> Result<BlockFile, EngineError> {
        let corrupt = |what: String| EngineError::corruption(path.display().to_string(), what);
        let file = fs.open(path)?;
        let len_bytes = file.len()?;
        let min_len = BLOCK_FILE_HEADER_BYTES + BLOCK_FILE_FOOTER_BYTES;
        if len_bytes < min_len {
            return Err(corrupt(format!(
                "file is {len_bytes} bytes, shorter than header + footer ({min_len})"
            )));
        }
        let mut header = [0u8; BLOCK_FILE_HEADER_BYTES as usize];
        read_exact(file.as_ref(), 0, &mut header).map_err(|e| e.into_engine(path))?;
        let (version, seq) = decode_header(&header).map_err(|e| corrupt(e.to_string()))?;
        let named_seq = path.file_name().and_then(|n| n.to_str()).and_then(parse_block_file_name);
        if let Some(named_seq) = named_seq.filter(|&n| n != seq) {
            return Err(corrupt(format!("header holds file seq {seq}, the file name says {named_seq}")));
        }
        let mut footer_bytes = [0u8; BLOCK_FILE_FOOTER_BYTES as usize];
        read_exact(file.as_ref(), len_bytes - BLOCK_FILE_FOOTER_BYTES, &mut footer_bytes)
            .map_err(|e| e.into_engine(path))?;
        let footer = decode_footer(&footer_bytes, len_bytes, version).map_err(|e| corrupt(e.to_string()))?;
        let index_len = usize::try_from(footer.index_len())
            .map_err(|_| corrupt(format!("index of {} bytes does not fit in memory", footer.index_len())))?;
        let mut index = vec![0u8; index_len];
        read_exact(file.as_ref(), footer.index_offset, &mut index).map_err(|e| e.into_engine(path))?;
        let entries = decode_index(&index, &footer).map_err(|e| corrupt(e.to_string()))?;
        Ok(BlockFile { file, path: path.to_path_buf(), seq, len_bytes, footer, entries })
    }

    /// Validates a whole block file image as `open` does (without the file
    /// name check, and without the block CRCs, which `read_block` checks).
    /// Pure; never panics.
    pub fn parse(bytes: &[u8]) -> Result<(u64, Vec<BlockIndexEntry>), FormatError> {
        parse_bytes(bytes).map(|p| (p.seq, p.entries))
    }

    /// [`BlockFile::parse`], with the format version.
    pub fn parse_image(bytes: &[u8]) -> Result<ParsedBlockFile, FormatError> {
        parse_bytes(bytes)
    }

    /// The file's format version (1: entries without summaries).
    pub fn version(&self) -> u32 {
        self.footer.version
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn len_bytes(&self) -> u64 {
        self.len_bytes
    }

    /// File offset of the index (the end of the data area).
    pub fn index_offset(&self) -> u64 {
        self.footer.index_offset
    }

    /// Every block, by series then `min_ts`.
    pub fn entries(&self) -> &[BlockIndexEntry] {
        &self.entries
    }

    /// The blocks of `series`, by `min_ts`.
    pub fn entries_for(&self, series: SeriesId) -> &[BlockIndexEntry] {
        let start = self.entries.partition_point(|e| e.series < series);
        let end = start + self.entries[start..].partition_point(|e| e.series == series);
        &self.entries[start..end]
    }

    /// Reads the block of `entry` (one of this file's entries; anything else
    /// is `InvalidArgument`) and checks its CRC: `Corruption` on mismatch or
    /// if the file has become shorter.
    pub fn read_block(&self, entry: &BlockIndexEntry) -> Result<Vec<u8>, EngineError> {
        // A series has a block per hour of data: find it by its index order.
        let own = self.entries_for(entry.series);
        let at = own.binary_search_by_key(&entry.sort_key(), BlockIndexEntry::sort_key);
        if !at.is_ok_and(|i| own[i] == *entry) {
            return Err(EngineError::InvalidArgument(format!(
                "{}: no block of series {} at offset {}",
                self.path.display(),
                entry.series,
                entry.offset
            )));
        }
        let mut block = vec![0u8; entry.len_bytes as usize];
        read_exact(self.file.as_ref(), entry.offset, &mut block).map_err(|e| e.into_engine(&self.path))?;
        check_block(entry, &block)
            .map_err(|what| EngineError::corruption(self.path.display().to_string(), what.to_string()))?;
        Ok(block)
    }
}

/// A failed read: end of file means the file is shorter than its own
/// structure says (corruption); anything else is the device.
enum ReadError {
    ShortFile(u64),
    Io(io::Error),
}

impl ReadError {
    fn into_engine(self, path: &Path) -> EngineError {
        match self {
            ReadError::ShortFile(offset) => EngineError::corruption(
                path.display().to_string(),
                format!("file ends before offset {offset} (truncated?)"),
            ),
            ReadError::Io(err) => EngineError::Io(err),
        }
    }
}

fn read_exact(file: &dyn FsFile, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
    file.read_exact_at(offset, buf).map_err(|err| match err.kind() {
        io::ErrorKind::UnexpectedEof => ReadError::ShortFile(offset + buf.len() as u64),
        _ => ReadError::Io(err),
    })
}

/// A readable dump for `strata inspect`: the header and footer fields, then
/// one line per block.
pub fn describe_block_file(file: &BlockFile) -> String {
    let mut out = String::new();
    let name = file
        .path
        .file_name()
        .map_or_else(|| file.path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let _ = writeln!(
        out,
        "block file {name}: seq {}, format version {}, {} bytes",
        file.seq, file.footer.version, file.len_bytes
    );
    let _ = writeln!(
        out,
        "index: {} blocks at offset {}, CRC32C {:#010x}",
        file.entries.len(),
        file.footer.index_offset,
        file.footer.index_crc
    );
    let series_count = file.entries.windows(2).filter(|w| w[0].series != w[1].series).count()
        + usize::from(!file.entries.is_empty());
    let points: u64 = file.entries.iter().map(|e| u64::from(e.point_count)).sum();
    let _ = writeln!(out, "series: {series_count}, points: {points}");
    for e in &file.entries {
        let _ = writeln!(
            out,
            "  {} ts [{}, {}] points {} offset {} len {} crc {:#010x}{}",
            e.series,
            e.min_ts,
            e.max_ts,
            e.point_count,
            e.offset,
            e.len_bytes,
            e.crc32c,
            e.summary.map_or(String::new(), |s| format!(
                " sum {:?} min {:?} max {:?} first {:?} last {:?}",
                s.sum(),
                s.min(),
                s.max(),
                s.first(),
                s.last()
            ))
        );
    }
    out
}
