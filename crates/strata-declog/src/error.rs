//! Errors of DecLog. `Corruption` (bytes on media that no crash can produce,
//! with their offset) is distinct from `Full`, from bad input, and from the
//! log having refused writes after an earlier failure (`Poisoned`).

use strata_pmem::PmemError;

#[derive(Debug, thiserror::Error)]
pub enum DeclogError {
    #[error("declog corruption at offset {offset}: {what}")]
    Corruption { offset: u64, what: String },
    #[error(
        "declog stream {stream} full: {needed_bytes} bytes needed, {free_bytes} free; \
         checkpoint and truncate before the streams fill"
    )]
    Full { stream: usize, needed_bytes: u64, free_bytes: u64 },
    #[error("log entry payload of {len_bytes} bytes exceeds the limit of {max_bytes}")]
    TooLarge { len_bytes: u64, max_bytes: u64 },
    #[error("invalid declog input: {0}")]
    InvalidInput(String),
    #[error("invalid declog configuration: {0}")]
    InvalidConfig(String),
    #[error("declog refuses writes after an earlier failure ({0}); reopen it to recover")]
    Poisoned(String),
    #[error("inline flushing made no progress with transactions still pending (a logging bug)")]
    Stalled,
    #[error(transparent)]
    Pmem(#[from] PmemError),
}

impl DeclogError {
    pub fn corruption(offset: u64, what: impl Into<String>) -> Self {
        DeclogError::Corruption { offset, what: what.into() }
    }

    pub fn is_corruption(&self) -> bool {
        matches!(self, DeclogError::Corruption { .. } | DeclogError::Pmem(PmemError::Corruption { .. }))
    }
}

/// Why a transaction failed after it was queued: cloneable, so every waiter
/// of a poisoned log gets its own error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FailReason {
    Full { stream: usize, needed_bytes: u64, free_bytes: u64 },
}

impl FailReason {
    pub(crate) fn to_error(&self) -> DeclogError {
        match self {
            FailReason::Full { stream, needed_bytes, free_bytes } => {
                DeclogError::Full { stream: *stream, needed_bytes: *needed_bytes, free_bytes: *free_bytes }
            }
        }
    }

    pub(crate) fn describe(&self) -> String {
        self.to_error().to_string()
    }
}
