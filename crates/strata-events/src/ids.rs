//! Identifiers and errors shared by the event store's modules.
//!
//! The TAB+-tree gives nodes consecutive ids from 0 (chronicledb-pmem.txt
//! section 4.1). With index nodes on PMem, leaves and index nodes have two
//! separate id sequences, so a node is named by its kind and its number in
//! that kind's sequence ([`NodeId`]); with every node on SSD both kinds
//! share one sequence (the kind is still carried, for clarity).

use std::fmt;

/// Which sequence a node id belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeKind {
    Leaf,
    Index,
}

/// A logical node id: its kind and its number within that kind's sequence.
/// Encoded in 8 bytes as `number | (1 << 63 if Index)`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    pub kind: NodeKind,
    pub number: u64,
}

/// The bit of an encoded [`NodeId`] that marks an index node.
pub const NODE_ID_INDEX_BIT: u64 = 1 << 63;

impl NodeId {
    pub const fn leaf(number: u64) -> NodeId {
        NodeId { kind: NodeKind::Leaf, number }
    }

    pub const fn index(number: u64) -> NodeId {
        NodeId { kind: NodeKind::Index, number }
    }

    /// The 8-byte encoding (see the type's comment).
    pub const fn to_u64(self) -> u64 {
        match self.kind {
            NodeKind::Leaf => self.number,
            NodeKind::Index => self.number | NODE_ID_INDEX_BIT,
        }
    }

    pub const fn from_u64(raw: u64) -> NodeId {
        if raw & NODE_ID_INDEX_BIT != 0 {
            NodeId::index(raw & !NODE_ID_INDEX_BIT)
        } else {
            NodeId::leaf(raw)
        }
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            NodeKind::Leaf => write!(f, "leaf#{}", self.number),
            NodeKind::Index => write!(f, "index#{}", self.number),
        }
    }
}

/// Errors of the event store. `Corruption` (bad bytes on a medium) is kept
/// apart from `Io` (the medium failed) and `InvalidInput` (the caller's
/// mistake).
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("corruption at {location}: {what}")]
    Corruption { location: String, what: String },
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("{what} is full: {detail}")]
    Full { what: &'static str, detail: String },
    #[error("PMem: {0}")]
    Pmem(#[from] strata_pmem::PmemError),
}

impl EventError {
    pub fn corruption(location: impl Into<String>, what: impl Into<String>) -> EventError {
        EventError::Corruption { location: location.into(), what: what.into() }
    }

    pub fn invalid(what: impl Into<String>) -> EventError {
        EventError::InvalidInput(what.into())
    }

    pub fn is_corruption(&self) -> bool {
        matches!(self, EventError::Corruption { .. })
    }
}

/// Why bytes do not decode as one of the event store's formats (block-store
/// records and blocks, ATT nodes, merge step records, flank slots, event
/// fields). Decoders return it without a location; callers turn it into
/// [`EventError::Corruption`] (bytes read back from a medium) or
/// [`EventError::InvalidInput`] (bytes a caller passed in).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("{what} of {have} bytes is shorter than the {need} bytes it needs")]
    Truncated { what: &'static str, need: u64, have: u64 },
    #[error("{what} of {len} bytes at offset {offset} overruns the block")]
    Overrun { what: &'static str, offset: usize, len: u64 },
    #[error("bad {0} magic")]
    BadMagic(&'static str),
    #[error("unknown {what} version {version}")]
    UnsupportedVersion { what: &'static str, version: u32 },
    #[error("{what} CRC mismatch at offset {offset} (stored {stored:#010x}, computed {computed:#010x})")]
    BadChecksum { what: &'static str, offset: usize, stored: u32, computed: u32 },
    #[error("unknown {what} {value:#x}")]
    Unknown { what: &'static str, value: u64 },
    #[error("{what} {raw:#x} is no address")]
    BadAddress { what: &'static str, raw: u64 },
    #[error("record {index} of {count}: {inner}")]
    InRecord { index: u32, count: u32, inner: Box<DecodeError> },
    #[error("{0}")]
    Invalid(String),
}

impl DecodeError {
    /// Checks a stored CRC against the computed one.
    pub(crate) fn check_crc(
        what: &'static str,
        offset: usize,
        stored: u32,
        computed: u32,
    ) -> Result<(), DecodeError> {
        if stored == computed {
            Ok(())
        } else {
            Err(DecodeError::BadChecksum { what, offset, stored, computed })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_round_trip_through_their_encoding_and_keep_their_kind() {
        for id in [NodeId::leaf(0), NodeId::leaf(u32::MAX as u64), NodeId::index(0), NodeId::index(7)] {
            assert_eq!(NodeId::from_u64(id.to_u64()), id);
        }
        assert_ne!(NodeId::leaf(3).to_u64(), NodeId::index(3).to_u64(), "the sequences are separate");
        assert_eq!(NodeId::index(5).to_string(), "index#5");
    }
}
