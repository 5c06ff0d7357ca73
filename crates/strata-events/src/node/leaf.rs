//! A leaf of the TAB+-tree: the header, then events of the stream's fixed
//! size packed in application-time order (equal timestamps allowed, kept in
//! arrival order). Appends bulk-load the leaf up to its fill limit; ordered
//! inserts absorb out-of-order events in the spare room
//! (chronicledb-pmem.txt sections 2.2 and 4.1).

use std::ops::Range;

use crate::aggregate::{AggregateSpec, Aggregates};
use crate::event::{self, Event};
use crate::ids::{EventError, NodeId, NodeKind};
use crate::node::frame;
use crate::node::header::{i64_at, init_header, read_header, NODE_KIND_LEAF};
use crate::node::layout::LeafLayout;

/// A view of a leaf over a node buffer `B` (`Vec<u8>`, `[u8; NODE_BYTES]`,
/// `&mut [u8]`, or `&[u8]` for reading) of exactly
/// [`NODE_BYTES`](crate::node::NODE_BYTES).
#[derive(Clone, Debug)]
pub struct LeafNode<B> {
    buf: B,
    layout: LeafLayout,
}

/// Byte offset of the timestamp in an event (the search key).
const TS_FIELD: usize = 0;

impl<B: AsRef<[u8]>> LeafNode<B> {
    // `layout`, `as_bytes`, `into_inner`, `header`, `len`, `is_empty`, `is_full`,
    // `is_at_capacity`, `id`, `prev`, `next`, `is_sealed`, `used_bytes`, the byte
    // ranges, the searches and `verify`, shared with the other view.
    frame::node_view_reads!(layout: LeafLayout, key: TS_FIELD);

    /// Opens an existing leaf, checking its header against the layout (not
    /// the CRC and not the events: see [`LeafNode::verify`]). Damaged bytes
    /// give `Corruption`.
    pub fn open(buf: B, layout: &LeafLayout) -> Result<LeafNode<B>, EventError> {
        let h = frame::open_header(buf.as_ref(), NodeKind::Leaf)?;
        if h.entry_bytes as usize != layout.event_bytes() {
            return Err(EventError::corruption(
                format!("node {}", h.id),
                format!("events of {} bytes, the schema's have {}", h.entry_bytes, layout.event_bytes()),
            ));
        }
        Ok(LeafNode { buf, layout: layout.clone() })
    }

    fn eb(&self) -> usize {
        self.layout.event_bytes()
    }

    /// Smallest timestamp (`i64::MAX` when empty).
    pub fn ts_min(&self) -> i64 {
        frame::ts_min(self.bytes())
    }

    /// Largest timestamp (`i64::MIN` when empty).
    pub fn ts_max(&self) -> i64 {
        frame::ts_max(self.bytes())
    }

    /// The encoded event `i`.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        (i < self.len()).then(|| &self.bytes()[self.entry_range(i)])
    }

    /// The timestamp of event `i`.
    pub fn ts_at(&self, i: usize) -> Option<i64> {
        (i < self.len()).then(|| i64_at(self.bytes(), self.entry_range(i).start))
    }

    /// Event `i`, decoded.
    pub fn event_at(&self, i: usize) -> Result<Event, EventError> {
        let bytes = self.get(i).ok_or_else(|| EventError::invalid(format!("no event {i} in the leaf")))?;
        event::decode(self.layout.schema(), bytes)
    }

    /// The encoded events in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        frame::entries(self.bytes(), self.eb())
    }

    /// The timestamps of the first and the last event, or the empty range
    /// `(i64::MAX, i64::MIN)`: what the header's time range must be.
    fn ts_span(&self) -> (i64, i64) {
        match (self.ts_at(0), self.len().checked_sub(1).and_then(|i| self.ts_at(i))) {
            (Some(first), Some(last)) => (first, last),
            _ => (i64::MAX, i64::MIN),
        }
    }

    /// The events with `from <= ts <= to` (time travel).
    pub fn time_range(&self, from: i64, to: i64) -> Range<usize> {
        let start = self.lower_bound(from);
        start..self.upper_bound(to).max(start)
    }

    /// The aggregates of all events (computed in batch when the leaf is
    /// written out, then propagated to the parent).
    pub fn aggregates(&self, spec: &AggregateSpec) -> Result<Aggregates, EventError> {
        Aggregates::of_events(spec, self.iter())
    }

    /// Checks everything but the CRC: header, event order, time range and,
    /// for schemas with bools or strings, every event's bytes. This is the
    /// check for an unsealed node (the PMem right flank after a crash).
    pub fn verify_structure(&self) -> Result<(), EventError> {
        let h = read_header(self.bytes())?;
        let location = || format!("leaf {}", h.id);
        frame::check_fits_layout(&h, self.layout.capacity(), self.eb(), &location())?;
        let mut last = i64::MIN;
        for (i, e) in self.iter().enumerate() {
            let ts = event::timestamp_of(e);
            if ts < last {
                return Err(EventError::corruption(
                    location(),
                    format!("event {i} has timestamp {ts} after {last}: not sorted"),
                ));
            }
            last = ts;
            if self.layout.validate_events() {
                event::validate(self.layout.schema(), e)
                    .map_err(|err| EventError::corruption(location(), format!("event {i}: {err}")))?;
            }
        }
        let expected = self.ts_span();
        if (h.ts_min, h.ts_max) != expected {
            return Err(EventError::corruption(
                location(),
                format!(
                    "header time range [{}, {}], events span [{}, {}]",
                    h.ts_min, h.ts_max, expected.0, expected.1
                ),
            ));
        }
        Ok(())
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> LeafNode<B> {
    // `set_prev`, `set_next` and `seal`, shared with the other view.
    frame::node_view_writes!(kind: NodeKind::Leaf);

    /// Formats `buf` as an empty leaf with id `id` (a leaf id) and no
    /// siblings. Only the header is written: the rest of a reused buffer
    /// is ignored because the count says which events are valid.
    pub fn init(mut buf: B, layout: &LeafLayout, id: NodeId) -> Result<LeafNode<B>, EventError> {
        frame::check_len(buf.as_ref().len())?;
        if id.kind != NodeKind::Leaf {
            return Err(EventError::invalid(format!("leaf with the index id {id}")));
        }
        init_header(buf.as_mut(), NODE_KIND_LEAF, 0, 0, layout.event_bytes() as u16, id);
        Ok(LeafNode { buf, layout: layout.clone() })
    }

    fn check_event(&self, event: &[u8]) -> Result<(), EventError> {
        if event.len() != self.eb() {
            return Err(EventError::invalid(format!(
                "an event of this leaf has {} bytes, got {}",
                self.eb(),
                event.len()
            )));
        }
        if self.layout.validate_events() {
            event::validate(self.layout.schema(), event)?;
        }
        Ok(())
    }

    /// Appends an encoded event (bulk loading, in timestamp order). Fails
    /// with `Full` at the fill limit and with `InvalidInput` if the event is
    /// older than the last one (use [`LeafNode::insert_ordered`]). Returns
    /// the event's index: persist `entry_range(i)` and `header_range()`.
    pub fn append(&mut self, event: &[u8]) -> Result<usize, EventError> {
        self.check_event(event)?;
        let n = self.len();
        frame::check_fill_limit(n, self.layout.fill_limit(), "leaf", "events")?;
        let ts = event::timestamp_of(event);
        if n > 0 && ts < self.ts_max() {
            return Err(EventError::invalid(format!(
                "timestamp {ts} is older than the leaf's last {}: insert it in order",
                self.ts_max()
            )));
        }
        let eb = self.eb();
        frame::insert_at(self.bytes_mut(), eb, n, event);
        self.widen_ts(ts);
        Ok(n)
    }

    /// Encodes and appends `event`.
    pub fn append_event(&mut self, event: &Event) -> Result<usize, EventError> {
        let bytes = event::encode(self.layout.schema(), event)?;
        self.append(&bytes)
    }

    /// Inserts an encoded event at its place in timestamp order, after any
    /// events with the same timestamp, using the spare room if needed.
    /// Fails with `Full` only at capacity. Returns the event's index `pos`:
    /// events `pos..len()` moved (persist `entries_range(pos, len())`).
    pub fn insert_ordered(&mut self, event: &[u8]) -> Result<usize, EventError> {
        self.check_event(event)?;
        let n = self.len();
        frame::check_capacity(n, self.layout.capacity(), "leaf", "events")?;
        let ts = event::timestamp_of(event);
        let pos = self.upper_bound(ts);
        let eb = self.eb();
        frame::insert_at(self.bytes_mut(), eb, pos, event);
        self.widen_ts(ts);
        Ok(pos)
    }

    fn widen_ts(&mut self, ts: i64) {
        frame::widen_ts(self.bytes_mut(), ts, ts);
    }

    /// Recomputes the header's time range from the first and last event
    /// (after a crash, the count word may be newer than the range words).
    pub fn refresh_ts_range(&mut self) {
        let (min, max) = self.ts_span();
        frame::set_ts_range(self.bytes_mut(), min, max);
    }
}
