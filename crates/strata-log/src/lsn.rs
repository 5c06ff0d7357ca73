//! Log positions. A [`StreamPos`] is a byte position in the log's logical
//! stream (it only grows, across ring wrap-arounds and file segments). A
//! record's [`Lsn`] is the stream position of its end, so
//! `LSN_{i+1} = LSN_i + |L_{i+1}|` as in declog.txt section 3.1, and a stale
//! record left over from an earlier lap can never carry the LSN expected at
//! its position.

use std::fmt;

/// Log sequence number: the stream position just past a record.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lsn(pub u64);

/// A byte position in the logical log stream.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamPos(pub u64);

/// The largest LSN a record can carry (63 bits: bit 63 is the commit flag).
pub const MAX_LSN: u64 = (1 << 63) - 1;

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lsn:{}", self.0)
    }
}

impl fmt::Display for StreamPos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pos:{}", self.0)
    }
}
