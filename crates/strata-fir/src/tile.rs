//! DRAM tiles (fir.txt 4.1): one per PMem block, the 2,048 tuple headers
//! of its slots (`begin_ts`, `end_ts`, `read_ts`, `prev`, `next`). The
//! headers of a key's versions are read and written under that key's
//! index latch, so relaxed atomics suffice (the latch orders them).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::layout::SLOTS_PER_BLOCK;

/// `begin_ts` bit: the writer has not committed yet.
pub const PENDING: u64 = 1 << 63;
/// `begin_ts` bit beside [`PENDING`]: the writer has committed and waits
/// for its group-commit batch (a reader may wait for it instead of aborting).
pub const COMMITTING: u64 = 1 << 62;
/// The txnId in a `begin_ts`.
pub const TS_MASK: u64 = !(PENDING | COMMITTING);
/// `end_ts` of the newest version.
pub const OPEN: u64 = u64::MAX;

/// One version's metadata.
#[derive(Default)]
pub struct TupleHeader {
    /// The writer's txnId, with [`PENDING`] until it commits.
    pub begin_ts: AtomicU64,
    /// The txnId of the version that replaced it ([`OPEN`] if none).
    pub end_ts: AtomicU64,
    /// The largest txnId that read it (MVTO).
    pub read_ts: AtomicU64,
    /// The older version: [`crate::addr::VersionAddr`] raw + 1, 0 for none.
    pub prev: AtomicU64,
    /// The newer version, as `prev`.
    pub next: AtomicU64,
    /// The version is a delete.
    pub tombstone: AtomicU64,
}

impl TupleHeader {
    pub fn begin(&self) -> u64 {
        self.begin_ts.load(Relaxed)
    }
}

/// The headers of one block's slots.
pub struct Tile {
    pub headers: Box<[TupleHeader]>,
}

impl Default for Tile {
    fn default() -> Self {
        Tile { headers: (0..SLOTS_PER_BLOCK).map(|_| TupleHeader::default()).collect() }
    }
}
