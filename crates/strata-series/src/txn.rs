//! Transactions of several operations (the YCSB-TS shape of declog.txt 5.1:
//! inserts, reads and updates, 10 per transaction; plus point deletes, the
//! tombstone bit of 4.1.1): [`SeriesEngine::execute`].
//!
//! Under DecLog a transaction is logged as one entry per written or deleted
//! value, gets its data-driven LSN and is acknowledged when every entry's
//! tail is persisted (`crate::declog::write_path`). Under the serial
//! protocols its writes are one WAL record like a `/write` request, and its
//! reads run after them; point deletes need DecLog (the serial WAL has range
//! deletes only, through `DELETE`).

use crate::engine::SeriesEngine;
use crate::error::EngineError;
use crate::model::{FieldValue, Point, TimeRange, TimestampNs};
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

impl SeriesEngine {
    /// Runs `ops` as one transaction in `db`.
    pub fn execute(&self, db: &str, ops: &[TxnOp]) -> Result<TxnOutcome, EngineError> {
        if let Some(dl) = &self.declog {
            return self.execute_declog(dl, db, ops);
        }
        if ops.iter().any(|op| matches!(op, TxnOp::Delete { .. })) {
            return Err(EngineError::Other(format!(
                "point deletes in transactions need the declog protocol (this engine runs {}); use DELETE",
                self.protocol()
            )));
        }
        let points = written_points(ops);
        let mut out = TxnOutcome::default();
        if !points.is_empty() {
            out.write = self.write_points(db, &points)?;
        }
        for op in ops {
            if let TxnOp::Read { value, ts } = op {
                out.reads.push(self.read_value(db, value, *ts)?);
            }
        }
        Ok(out)
    }

    /// Runs independent transactions submitted together, as concurrent
    /// clients would: each is atomic and acknowledged on its own, and the
    /// result of each is at its index; each sees every earlier one. Under
    /// DecLog consecutive insert-only transactions are all logged before
    /// the first wait, so the logging threads persist them in one flush
    /// round (group commit across transactions); the others run as
    /// [`execute`](Self::execute) does. Other protocols run them one after
    /// the other.
    pub fn execute_group(&self, db: &str, txns: &[Vec<TxnOp>]) -> Vec<Result<TxnOutcome, EngineError>> {
        match &self.declog {
            Some(dl) => {
                let group: Vec<crate::declog::GroupTxn<'_>> = txns
                    .iter()
                    .map(|ops| crate::declog::GroupTxn { points: written_points(ops), others: ops })
                    .collect();
                self.run_declog_group(dl, db, &group)
            }
            None => txns.iter().map(|ops| self.execute(db, ops)).collect(),
        }
    }

    /// The value of one point, or None.
    pub fn read_value(
        &self,
        db: &str,
        value: &ValueRef,
        ts: TimestampNs,
    ) -> Result<Option<FieldValue>, EngineError> {
        let id = self.index.read().lookup_parts(db, &value.measurement, &value.tags, &value.field);
        let Some(id) = id else { return Ok(None) };
        let mut got = self.read_series(&[id], TimeRange { min_ns: ts, max_ns: ts })?;
        Ok(got.pop().and_then(|mut pts| pts.pop()).map(|(_, v)| v))
    }
}
