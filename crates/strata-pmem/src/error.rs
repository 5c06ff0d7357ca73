//! Errors of the persistent-memory layer.

use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum PmemError {
    #[error("I/O error on {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error(
        "{path} is not on a DAX file system (mmap with MAP_SYNC failed: {source}); \
         use pmem mode `emulated` or `msync` on machines without persistent memory"
    )]
    NotDax { path: PathBuf, source: io::Error },
    #[error("region of {len_bytes} bytes is too small: {what} needs {needed_bytes}")]
    TooSmall { len_bytes: u64, needed_bytes: u64, what: &'static str },
    #[error("corruption at offset {offset}: {what}")]
    Corruption { offset: u64, what: String },
    #[error("out of space: {0}")]
    OutOfSpace(String),
}
