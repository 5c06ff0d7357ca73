//! A series' run of a transaction's operations handed to DecLog by its
//! points (`strata_declog::compress::points_source`): DecLog compresses the
//! run straight from the planned operations under its stream's key-table
//! lock (declog.txt 4.4.1), so the write path builds no points payload that
//! DecLog would check, parse for its key and decode again. The points are
//! those of [`super::entry_key`]'s per-key entries (value bits, then the op
//! byte and a string's bytes as the rest), so the log holds the same bytes
//! as [`super::entry_key::encode_per_key`]'s payloads would make.

use std::ops::Range;
use std::sync::Arc;

use strata_declog::compress::{PointItem, PointsPayloadBuilder, PointsSource};

use super::entry_key::{value_bits, OP_DELETE, OP_WRITE};
use super::runs::PlannedOp;
use super::side::LogKey;
use crate::core::data::PointChange;
use crate::model::{FieldValue, TimestampNs};

/// The value a change writes, `None` for a delete.
pub(crate) fn written(change: &PointChange) -> Option<&FieldValue> {
    match change {
        PointChange::Insert(v) | PointChange::Update(v) => Some(v),
        PointChange::Delete => None,
    }
}

/// Bytes of an operation's rest: the op byte and a string's bytes.
pub(crate) fn rest_len(op: Option<&FieldValue>) -> usize {
    match op {
        Some(FieldValue::String(s)) => 1 + s.len(),
        _ => 1,
    }
}

/// Calls `f` with the point of one operation (a write of `Some` value, or
/// a delete) at `ts`; `scratch` holds a string write's rest.
pub(crate) fn with_point(
    ts: TimestampNs,
    op: Option<&FieldValue>,
    scratch: &mut Vec<u8>,
    f: &mut dyn FnMut(PointItem<'_>),
) {
    match op {
        None => f(PointItem { timestamp: ts, value_bits: 0, rest: &[OP_DELETE] }),
        Some(FieldValue::String(s)) => {
            scratch.clear();
            scratch.push(OP_WRITE);
            scratch.extend_from_slice(s.as_bytes());
            f(PointItem { timestamp: ts, value_bits: 0, rest: scratch });
        }
        Some(v) => f(PointItem { timestamp: ts, value_bits: value_bits(v), rest: &[OP_WRITE] }),
    }
}

/// Cuts a series' operations, given by their rest lengths, into per-key
/// entries whose points payloads (key of `key_len` bytes) are at most
/// `max_payload_bytes`: each entry's range of operations and its payload's
/// length. `Err(bytes)` when a single operation alone does not fit.
pub(crate) fn split_per_key(
    key_len: usize,
    rest_lens: impl Iterator<Item = usize>,
    max_payload_bytes: usize,
) -> Result<Vec<(Range<usize>, usize)>, usize> {
    let header = PointsPayloadBuilder::header_bytes(key_len);
    let mut out = Vec::with_capacity(1);
    let (mut start, mut len) = (0, header);
    let mut end = 0;
    for rest in rest_lens {
        let adds = PointsPayloadBuilder::point_bytes(rest);
        if len + adds > max_payload_bytes && end > start {
            out.push((start..end, len));
            (start, len) = (end, header);
        }
        if len + adds > max_payload_bytes {
            return Err(len + adds);
        }
        len += adds;
        end += 1;
    }
    if end > start {
        out.push((start..end, len));
    }
    Ok(out)
}

/// Operations `range` of a transaction's planned operations, all on the
/// series whose log key is `key`, as DecLog's points source.
pub(crate) struct RunPoints {
    pub ops: Arc<Vec<PlannedOp>>,
    pub range: Range<usize>,
    pub key: Arc<LogKey>,
    /// Its points payload's length ([`split_per_key`]).
    pub payload_len: usize,
}

impl PointsSource for RunPoints {
    fn key(&self) -> &[u8] {
        &self.key.bytes
    }

    fn count(&self) -> u32 {
        self.range.len() as u32
    }

    fn for_each_point(&self, f: &mut dyn FnMut(PointItem<'_>)) {
        let mut scratch = Vec::new();
        for (_, ts, change) in &self.ops[self.range.clone()] {
            with_point(*ts, written(change), &mut scratch, f);
        }
    }

    fn payload_len(&self) -> usize {
        self.payload_len
    }
}
