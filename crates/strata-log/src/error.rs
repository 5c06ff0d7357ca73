//! Errors of the logging layer. `Corruption` (bad bytes on media, with the
//! offset) is distinct from `Io` (the device failed) and from `Full`.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("log I/O error: {0}")]
    Io(#[from] io::Error),
    #[error("log corruption at offset {offset}: {what}")]
    Corruption { offset: u64, what: String },
    #[error("log full: {needed_bytes} bytes needed, {free_bytes} free; checkpoint and truncate first")]
    Full { needed_bytes: u64, free_bytes: u64 },
    #[error("log record payload of {len_bytes} bytes exceeds the limit of {max_bytes}")]
    TooLarge { len_bytes: u64, max_bytes: u64 },
    #[error("log device failed earlier and refuses further writes: {0}")]
    Poisoned(String),
    #[error(transparent)]
    Pmem(#[from] strata_pmem::PmemError),
}

impl LogError {
    pub fn corruption(offset: u64, what: impl Into<String>) -> Self {
        LogError::Corruption { offset, what: what.into() }
    }

    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            LogError::Corruption { .. } | LogError::Pmem(strata_pmem::PmemError::Corruption { .. })
        )
    }
}
