//! Errors of DecLog. `Corruption` (bytes on media that no crash can produce,
//! with their offset) is distinct from `Full`, from bad input, and from the
//! log having refused writes after an earlier failure (`Poisoned`).
//! [`DecodeError`] is what the decoders of DecLog's formats return.

use strata_pmem::PmemError;

/// Why bytes do not decode as one of DecLog's formats (entry, batch header,
/// point or compressed payload, varint, bit stream). The caller decides what
/// that means: a torn tail, corruption, or bad input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("input ends inside the {what}: {need} bytes needed, {have} left")]
    Truncated { what: &'static str, need: u64, have: u64 },
    #[error("bit stream of {len_bytes} bytes ends inside a {width}-bit field at bit {at_bit}")]
    BitsExhausted { len_bytes: usize, width: u32, at_bit: usize },
    #[error("{what} of {len} bytes overruns the {room} bytes left")]
    Overrun { what: &'static str, len: u64, room: u64 },
    #[error("bad varint: {0}")]
    BadVarint(&'static str),
    #[error("no {what} (magic {found:#010x})")]
    BadMagic { what: &'static str, found: u32 },
    #[error("{what} CRC mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    BadChecksum { what: &'static str, stored: u32, computed: u32 },
    #[error("{what} stamped {stamped} found at {found_at} (stale lap)")]
    Stale { what: &'static str, stamped: u64, found_at: u64 },
    #[error("unknown {what} {value:#x}")]
    Unknown { what: &'static str, value: u64 },
    #[error("{0}")]
    Invalid(String),
}

impl DecodeError {
    /// Checks a stored CRC against the computed one.
    pub(crate) fn check_crc(what: &'static str, stored: u32, computed: u32) -> Result<(), DecodeError> {
        if stored == computed {
            Ok(())
        } else {
            Err(DecodeError::BadChecksum { what, stored, computed })
        }
    }
}

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
