//! Transactions of several operations (the YCSB-TS shape of declog.txt 5.1:
//! inserts, reads and updates, 10 per transaction; plus point deletes, the
//! tombstone bit of 4.1.1): [`SeriesEngine::execute`].
//!
//! Each commit protocol runs them its own way (`crate::protocol`): under
//! DecLog a transaction is logged as one entry per written or deleted
//! value, gets its data-driven LSN and is acknowledged when every entry's
//! tail is persisted (`crate::declog::write_path`); under the WAL protocols
//! its writes are one record like a `/write` request, and its reads run
//! after them; point deletes need DecLog (the serial WAL has range deletes
//! only, through `DELETE`).

use crate::model::{FieldValue, Point, TimestampNs};
use crate::store::WriteOutcome;

/// One value of one series: measurement, sorted tags, field key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ValueRef {
    pub measurement: String,
    pub tags: Vec<(String, String)>,
    pub field: String,
}

/// One operation of a transaction.
#[derive(Clone, Debug, PartialEq)]
pub enum TxnOp {
    /// Write every field of the point at its timestamp (insert or update:
    /// the engine tells them apart).
    Write(Point),
    /// Read one value.
    Read { value: ValueRef, ts: TimestampNs },
    /// Delete one value.
    Delete { value: ValueRef, ts: TimestampNs },
}

/// What a transaction did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TxnOutcome {
    pub write: WriteOutcome,
    /// One per `Read`, in order: the value, or None if the point is absent.
    pub reads: Vec<Option<FieldValue>>,
    /// The LSN logged (DecLog: 0 for insert-only, else era and data-driven
    /// LSN; serial protocols: 0).
    pub lsn: u32,
    /// Aborts by the LSN protocol's lock conflicts or validation before it
    /// went through (DecLog).
    pub retries: u32,
}

/// The points of a transaction's `Write` operations, in order.
pub(crate) fn written_points(ops: &[TxnOp]) -> Vec<Point> {
    ops.iter()
        .filter_map(|op| match op {
            TxnOp::Write(p) => Some(p.clone()),
            _ => None,
        })
        .collect()
}
