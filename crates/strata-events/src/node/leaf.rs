//! A leaf of the TAB+-tree: the header, then events of the stream's fixed
//! size packed in application-time order (equal timestamps allowed, kept in
//! arrival order). Appends bulk-load the leaf up to its fill limit; ordered
//! inserts absorb out-of-order events in the spare room
//! (chronicledb-pmem.txt sections 2.2 and 4.1).

use std::ops::Range;

use crate::aggregate::{AggregateSpec, Aggregates};
use crate::event::{self, Event};
use crate::ids::{EventError, NodeId, NodeKind};
use crate::node::header::{
    self, check_crc, i64_at, init_header, put_i64, put_u64, read_header, sibling_from_raw, sibling_to_raw,
    u64_at, NodeHeader, FLAG_SEALED, NODE_KIND_LEAF, OFFSET_FLAGS, OFFSET_ID, OFFSET_NEXT, OFFSET_PREV,
    OFFSET_TS_MAX, OFFSET_TS_MIN,
};
use crate::node::layout::LeafLayout;
use crate::node::{frame, NODE_BYTES};

/// A view of a leaf over a node buffer `B` (`Vec<u8>`, `[u8; NODE_BYTES]`,
/// `&mut [u8]`, or `&[u8]` for reading) of exactly [`NODE_BYTES`].
#[derive(Clone, Debug)]
pub struct LeafNode<B> {
    buf: B,
    layout: LeafLayout,
}

fn check_len(len: usize) -> Result<(), EventError> {
    if len != NODE_BYTES {
        return Err(EventError::invalid(format!("a node buffer has {NODE_BYTES} bytes, got {len}")));
    }
    Ok(())
}

impl<B: AsRef<[u8]>> LeafNode<B> {
    /// Opens an existing leaf, checking its header against the layout (not
    /// the CRC and not the events: see [`LeafNode::verify`]). Damaged bytes
    /// give `Corruption`.
    pub fn open(buf: B, layout: &LeafLayout) -> Result<LeafNode<B>, EventError> {
        check_len(buf.as_ref().len())?;
        let h = read_header(buf.as_ref())?;
        if h.kind != NodeKind::Leaf {
            return Err(EventError::corruption(
                format!("node {}", h.id),
                "an index node where a leaf was expected",
            ));
        }
        if h.entry_bytes as usize != layout.event_bytes() {
            return Err(EventError::corruption(
                format!("node {}", h.id),
                format!("events of {} bytes, the schema's have {}", h.entry_bytes, layout.event_bytes()),
            ));
        }
        Ok(LeafNode { buf, layout: layout.clone() })
    }

    pub fn layout(&self) -> &LeafLayout {
        &self.layout
    }

    /// The whole node buffer.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    pub fn into_inner(self) -> B {
        self.buf
    }

    fn bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    fn eb(&self) -> usize {
        self.layout.event_bytes()
    }

    /// The parsed and checked header.
    pub fn header(&self) -> Result<NodeHeader, EventError> {
        read_header(self.bytes())
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        frame::count(self.bytes())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether bulk-loading is done: an append would exceed the fill limit.
    pub fn is_full(&self) -> bool {
        self.len() >= self.layout.fill_limit()
    }

    /// Whether even the spare room is used up: an ordered insert would fail.
    pub fn is_at_capacity(&self) -> bool {
        self.len() >= self.layout.capacity()
    }

    pub fn id(&self) -> NodeId {
        NodeId::from_u64(u64_at(self.bytes(), OFFSET_ID))
    }

    pub fn prev(&self) -> Option<NodeId> {
        sibling_from_raw(u64_at(self.bytes(), OFFSET_PREV))
    }

    pub fn next(&self) -> Option<NodeId> {
        sibling_from_raw(u64_at(self.bytes(), OFFSET_NEXT))
    }

    /// Smallest timestamp (`i64::MAX` when empty).
    pub fn ts_min(&self) -> i64 {
        i64_at(self.bytes(), OFFSET_TS_MIN)
    }

    /// Largest timestamp (`i64::MIN` when empty).
    pub fn ts_max(&self) -> i64 {
        i64_at(self.bytes(), OFFSET_TS_MAX)
    }

    pub fn is_sealed(&self) -> bool {
        self.bytes()[OFFSET_FLAGS] & FLAG_SEALED != 0
    }

    /// Bytes of header plus events: what the CRC covers and what a writer
    /// must persist.
    pub fn used_bytes(&self) -> usize {
        frame::used_bytes(self.bytes(), self.eb())
    }

    /// The byte range of the header (persist it after every change).
    pub fn header_range(&self) -> Range<usize> {
        header::header_range()
    }

    /// The byte range of event `i`.
    pub fn entry_range(&self, i: usize) -> Range<usize> {
        frame::entry_range(self.eb(), i)
    }

    /// The byte range of events `from..to`: after an ordered insert at
    /// `pos`, events `pos..len()` moved.
    pub fn entries_range(&self, from: usize, to: usize) -> Range<usize> {
        frame::entries_range(self.eb(), from, to)
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
        self.bytes()[self.entries_range(0, self.len())].chunks_exact(self.eb())
    }

    /// Index of the first event with timestamp `>= t` (`len()` if none).
    pub fn lower_bound(&self, t: i64) -> usize {
        frame::partition_point(self.bytes(), self.eb(), self.len(), 0, t, false)
    }

    /// Index of the first event with timestamp `> t` (`len()` if none).
    pub fn upper_bound(&self, t: i64) -> usize {
        frame::partition_point(self.bytes(), self.eb(), self.len(), 0, t, true)
    }

    /// The first event with timestamp `>= t`.
    pub fn first_ge(&self, t: i64) -> Option<usize> {
        let i = self.lower_bound(t);
        (i < self.len()).then_some(i)
    }

    /// The last event with timestamp `<= t`.
    pub fn last_le(&self, t: i64) -> Option<usize> {
        self.upper_bound(t).checked_sub(1)
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
        if h.count as usize > self.layout.capacity() || h.entry_bytes as usize != self.eb() {
            return Err(EventError::corruption(location(), "header does not match the layout"));
        }
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
        let expected = match (self.ts_at(0), self.len().checked_sub(1).and_then(|i| self.ts_at(i))) {
            (Some(first), Some(last)) => (first, last),
            _ => (i64::MAX, i64::MIN),
        };
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

    /// Checks a sealed leaf completely: [`LeafNode::verify_structure`] plus
    /// the sealed flag and the CRC32C of the used bytes.
    pub fn verify(&self) -> Result<(), EventError> {
        let h = read_header(self.bytes())?;
        check_crc(self.bytes(), &h)?;
        self.verify_structure()
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> LeafNode<B> {
    /// Formats `buf` as an empty leaf with id `id` (a leaf id) and no
    /// siblings. Only the header is written: the rest of a reused buffer
    /// is ignored because the count says which events are valid.
    pub fn init(mut buf: B, layout: &LeafLayout, id: NodeId) -> Result<LeafNode<B>, EventError> {
        check_len(buf.as_ref().len())?;
        if id.kind != NodeKind::Leaf {
            return Err(EventError::invalid(format!("leaf with the index id {id}")));
        }
        init_header(buf.as_mut(), NODE_KIND_LEAF, 0, 0, layout.event_bytes() as u16, id);
        Ok(LeafNode { buf, layout: layout.clone() })
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        self.buf.as_mut()
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

    fn check_sibling(&self, what: &str, link: Option<NodeId>) -> Result<(), EventError> {
        match link {
            Some(l) if l.kind != NodeKind::Leaf || l == self.id() => {
                Err(EventError::invalid(format!("{what} link {l} of leaf {}", self.id())))
            }
            _ => Ok(()),
        }
    }

    pub fn set_prev(&mut self, prev: Option<NodeId>) -> Result<(), EventError> {
        self.check_sibling("prev", prev)?;
        frame::unseal(self.bytes_mut());
        put_u64(self.bytes_mut(), OFFSET_PREV, sibling_to_raw(prev));
        Ok(())
    }

    pub fn set_next(&mut self, next: Option<NodeId>) -> Result<(), EventError> {
        self.check_sibling("next", next)?;
        frame::unseal(self.bytes_mut());
        put_u64(self.bytes_mut(), OFFSET_NEXT, sibling_to_raw(next));
        Ok(())
    }

    /// Appends an encoded event (bulk loading, in timestamp order). Fails
    /// with `Full` at the fill limit and with `InvalidInput` if the event is
    /// older than the last one (use [`LeafNode::insert_ordered`]). Returns
    /// the event's index: persist `entry_range(i)` and `header_range()`.
    pub fn append(&mut self, event: &[u8]) -> Result<usize, EventError> {
        self.check_event(event)?;
        let n = self.len();
        if n >= self.layout.fill_limit() {
            return Err(EventError::Full {
                what: "leaf",
                detail: format!("{n} events reach the fill limit {}", self.layout.fill_limit()),
            });
        }
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
        if n >= self.layout.capacity() {
            return Err(EventError::Full {
                what: "leaf",
                detail: format!("{n} events fill its capacity including the spare room"),
            });
        }
        let ts = event::timestamp_of(event);
        let pos = self.upper_bound(ts);
        let eb = self.eb();
        frame::insert_at(self.bytes_mut(), eb, pos, event);
        self.widen_ts(ts);
        Ok(pos)
    }

    fn widen_ts(&mut self, ts: i64) {
        let (min, max) = (self.ts_min().min(ts), self.ts_max().max(ts));
        put_i64(self.bytes_mut(), OFFSET_TS_MIN, min);
        put_i64(self.bytes_mut(), OFFSET_TS_MAX, max);
    }

    /// Recomputes the header's time range from the first and last event
    /// (after a crash, the count word may be newer than the range words).
    pub fn refresh_ts_range(&mut self) {
        let n = self.len();
        let (min, max) = match (self.ts_at(0), n.checked_sub(1).and_then(|i| self.ts_at(i))) {
            (Some(first), Some(last)) => (first, last),
            _ => (i64::MAX, i64::MIN),
        };
        frame::unseal(self.bytes_mut());
        put_i64(self.bytes_mut(), OFFSET_TS_MIN, min);
        put_i64(self.bytes_mut(), OFFSET_TS_MAX, max);
    }

    /// Prepares the leaf for write-out: zeroes the unused bytes, sets the
    /// sealed flag and stores the CRC32C of the used bytes.
    pub fn seal(&mut self) {
        let eb = self.eb();
        frame::seal(self.bytes_mut(), eb);
    }
}
