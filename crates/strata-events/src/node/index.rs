//! An index node of the TAB+-tree: the header (with its level), then
//! entries `key (i64) | child (NodeId as u64) | [aggregate record]` sorted
//! by key, where the key is the smallest timestamp of the child's subtree
//! (chronicledb-pmem.txt sections 2.2 and 4.1). With aggregates inline each
//! entry carries the child's aggregates; without, they live in the flat
//! PMem aggregate array and the fan-out is larger (paper: 459 vs 43).

use crate::aggregate::Aggregates;
use crate::ids::{EventError, NodeId, NodeKind};
use crate::node::frame;
use crate::node::header::{
    init_header, put_i64, read_header, u16_at, u64_at, FLAG_AGGREGATES_INLINE, NODE_KIND_INDEX, OFFSET_LEVEL,
    OFFSET_TS_MAX, OFFSET_TS_MIN,
};
use crate::node::layout::{
    IndexLayout, INDEX_ENTRY_FIXED_BYTES, INDEX_ENTRY_OFFSET_AGGREGATES, INDEX_ENTRY_OFFSET_CHILD,
    INDEX_ENTRY_OFFSET_KEY,
};

/// One decoded index entry.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexEntry {
    /// Smallest timestamp of the child's subtree.
    pub key: i64,
    pub child: NodeId,
    /// The child's aggregates, if the layout keeps them inline.
    pub aggregates: Option<Aggregates>,
}

/// A view of an index node over a node buffer `B` of exactly
/// [`NODE_BYTES`](crate::node::NODE_BYTES).
#[derive(Clone, Debug)]
pub struct IndexNode<B> {
    buf: B,
    layout: IndexLayout,
}

/// The kind of the children of an index node at `level`.
fn child_kind(level: u16) -> NodeKind {
    if level == 1 {
        NodeKind::Leaf
    } else {
        NodeKind::Index
    }
}

impl<B: AsRef<[u8]>> IndexNode<B> {
    // `layout`, `as_bytes`, `into_inner`, `header`, `len`, `is_empty`, `is_full`,
    // `is_at_capacity`, `id`, `prev`, `next`, `is_sealed`, `used_bytes`, the byte
    // ranges, the searches and `verify`, shared with the other view.
    frame::node_view_reads!(layout: IndexLayout, key: INDEX_ENTRY_OFFSET_KEY);

    /// Opens an existing index node, checking its header against the layout
    /// (not the CRC and not the entries: see [`IndexNode::verify`]).
    pub fn open(buf: B, layout: &IndexLayout) -> Result<IndexNode<B>, EventError> {
        let h = frame::open_header(buf.as_ref(), NodeKind::Index)?;
        if (h.flags & FLAG_AGGREGATES_INLINE != 0) != layout.aggregates_inline()
            || h.entry_bytes as usize != layout.entry_bytes()
        {
            return Err(EventError::corruption(
                format!("node {}", h.id),
                format!(
                    "entries of {} bytes (aggregates inline: {}), the layout's have {} (inline: {})",
                    h.entry_bytes,
                    h.flags & FLAG_AGGREGATES_INLINE != 0,
                    layout.entry_bytes(),
                    layout.aggregates_inline()
                ),
            ));
        }
        Ok(IndexNode { buf, layout: layout.clone() })
    }

    fn eb(&self) -> usize {
        self.layout.entry_bytes()
    }

    pub fn level(&self) -> u16 {
        u16_at(self.bytes(), OFFSET_LEVEL)
    }

    /// The first key (`i64::MAX` when empty).
    pub fn ts_min(&self) -> i64 {
        frame::ts_min(self.bytes())
    }

    /// The largest timestamp of the subtree as far as the node knows it: at
    /// least the last key and every inline `ts_max` (`i64::MIN` when empty).
    pub fn ts_max(&self) -> i64 {
        frame::ts_max(self.bytes())
    }

    fn field(&self, i: usize, offset: usize) -> Option<u64> {
        (i < self.len()).then(|| u64_at(self.bytes(), self.entry_range(i).start + offset))
    }

    pub fn key_at(&self, i: usize) -> Option<i64> {
        self.field(i, INDEX_ENTRY_OFFSET_KEY).map(|k| k as i64)
    }

    pub fn child_at(&self, i: usize) -> Option<NodeId> {
        self.field(i, INDEX_ENTRY_OFFSET_CHILD).map(NodeId::from_u64)
    }

    /// The raw aggregate record of entry `i` (inline layouts only).
    pub fn aggregate_bytes_at(&self, i: usize) -> Option<&[u8]> {
        if !self.layout.aggregates_inline() || i >= self.len() {
            return None;
        }
        let start = self.entry_range(i).start + INDEX_ENTRY_OFFSET_AGGREGATES;
        Some(&self.bytes()[start..start + self.layout.spec().record_bytes()])
    }

    /// The aggregates of entry `i`, `None` if not inline or no such entry.
    pub fn aggregates_at(&self, i: usize) -> Result<Option<Aggregates>, EventError> {
        self.aggregate_bytes_at(i).map(|b| Aggregates::decode(self.layout.spec(), b)).transpose()
    }

    /// Entry `i`, decoded.
    pub fn get(&self, i: usize) -> Result<Option<IndexEntry>, EventError> {
        let (Some(key), Some(child)) = (self.key_at(i), self.child_at(i)) else { return Ok(None) };
        Ok(Some(IndexEntry { key, child, aggregates: self.aggregates_at(i)? }))
    }

    /// The (key, child) pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, NodeId)> + '_ {
        frame::entries(self.bytes(), self.eb()).map(|e| {
            let key = i64::from_le_bytes(e[0..8].try_into().expect("8 bytes"));
            let child = u64::from_le_bytes(e[8..16].try_into().expect("8 bytes"));
            (key, NodeId::from_u64(child))
        })
    }

    /// The entry whose child an event with timestamp `t` belongs in: the
    /// last with key `<= t`, or the first if `t` precedes every key.
    pub fn child_for_insert(&self, t: i64) -> Option<usize> {
        (!self.is_empty()).then(|| self.last_le(t).unwrap_or(0))
    }

    /// The entry where a scan for the first event `>= t` starts: the last
    /// with key `< t` (events equal to a key may also end the previous
    /// child), or the first.
    pub fn child_for_scan_from(&self, t: i64) -> Option<usize> {
        (!self.is_empty()).then(|| self.lower_bound(t).saturating_sub(1))
    }

    /// The merge of all inline aggregates (propagated to the parent when
    /// the node is full); `None` if the layout keeps none inline.
    pub fn aggregates(&self) -> Result<Option<Aggregates>, EventError> {
        if !self.layout.aggregates_inline() {
            return Ok(None);
        }
        let mut all = Aggregates::empty(self.layout.spec());
        for i in 0..self.len() {
            if let Some(a) = self.aggregates_at(i)? {
                all.merge(&a);
            }
        }
        Ok(Some(all))
    }

    /// Checks everything but the CRC: header, keys sorted, children of the
    /// kind the level implies, the header's time range, and the inline
    /// aggregate records (decodable, key equal to the child's `ts_min`).
    pub fn verify_structure(&self) -> Result<(), EventError> {
        let h = read_header(self.bytes())?;
        let location = || format!("index {}", h.id);
        let bad = |what: String| EventError::corruption(location(), what);
        frame::check_fits_layout(&h, self.layout.capacity(), self.eb(), &location())?;
        let kind = child_kind(h.level);
        let mut last = i64::MIN;
        let mut ts_max_needed = i64::MIN;
        for (i, (key, child)) in self.iter().enumerate() {
            if key < last {
                return Err(bad(format!("entry {i} has key {key} after {last}: not sorted")));
            }
            last = key;
            ts_max_needed = ts_max_needed.max(key);
            if child.kind != kind {
                return Err(bad(format!("entry {i}: child {child} at level {}", h.level)));
            }
            if let Some(aggs) = self.aggregates_at(i).map_err(|e| bad(format!("entry {i}: {e}")))? {
                if aggs.count > 0 {
                    if aggs.ts_min != key {
                        return Err(bad(format!(
                            "entry {i}: key {key}, but the child's smallest timestamp is {}",
                            aggs.ts_min
                        )));
                    }
                    ts_max_needed = ts_max_needed.max(aggs.ts_max);
                }
            }
        }
        let first = self.key_at(0).unwrap_or(i64::MAX);
        let range_ok = if h.count == 0 {
            h.ts_min == i64::MAX && h.ts_max == i64::MIN
        } else {
            h.ts_min == first && h.ts_max >= ts_max_needed
        };
        if !range_ok {
            return Err(bad(format!(
                "header time range [{}, {}] with first key {first} and largest timestamp {ts_max_needed}",
                h.ts_min, h.ts_max
            )));
        }
        Ok(())
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> IndexNode<B> {
    // `set_prev`, `set_next` and `seal`, shared with the other view.
    frame::node_view_writes!(kind: NodeKind::Index);

    /// Formats `buf` as an empty index node at `level` (1 = children are
    /// leaves) with id `id` (an index id). Only the header is written.
    pub fn init(
        mut buf: B,
        layout: &IndexLayout,
        id: NodeId,
        level: u16,
    ) -> Result<IndexNode<B>, EventError> {
        frame::check_len(buf.as_ref().len())?;
        if id.kind != NodeKind::Index || level == 0 {
            return Err(EventError::invalid(format!("index node {id} at level {level}")));
        }
        let flags = if layout.aggregates_inline() { FLAG_AGGREGATES_INLINE } else { 0 };
        init_header(buf.as_mut(), NODE_KIND_INDEX, flags, level, layout.entry_bytes() as u16, id);
        Ok(IndexNode { buf, layout: layout.clone() })
    }

    /// The entry bytes for `(key, child, aggregates)`, checked.
    fn build_entry(
        &self,
        key: i64,
        child: NodeId,
        aggregates: Option<&Aggregates>,
    ) -> Result<Vec<u8>, EventError> {
        let kind = child_kind(self.level());
        if child.kind != kind {
            return Err(EventError::invalid(format!(
                "child {child} in an index node at level {}",
                self.level()
            )));
        }
        let mut entry = vec![0; self.eb()];
        entry[INDEX_ENTRY_OFFSET_KEY..INDEX_ENTRY_OFFSET_KEY + 8].copy_from_slice(&key.to_le_bytes());
        entry[INDEX_ENTRY_OFFSET_CHILD..INDEX_ENTRY_OFFSET_CHILD + 8]
            .copy_from_slice(&child.to_u64().to_le_bytes());
        if self.layout.aggregates_inline() {
            let aggs = aggregates.ok_or_else(|| {
                EventError::invalid("this index layout keeps aggregates inline: an entry needs them")
            })?;
            if aggs.count > 0 && aggs.ts_min != key {
                return Err(EventError::invalid(format!(
                    "key {key} is not the child's smallest timestamp {}",
                    aggs.ts_min
                )));
            }
            aggs.encode_into(self.layout.spec(), &mut entry[INDEX_ENTRY_FIXED_BYTES..])?;
        }
        Ok(entry)
    }

    fn widen_ts(&mut self, ts_min: i64, ts_max: i64) {
        frame::widen_ts(self.bytes_mut(), ts_min, ts_max);
    }

    fn entry_ts_max(key: i64, aggregates: Option<&Aggregates>) -> i64 {
        aggregates.filter(|a| a.count > 0).map_or(key, |a| a.ts_max.max(key))
    }

    /// Appends an entry (bulk loading: keys in order). With aggregates
    /// inline they are required and stored; otherwise they are optional and
    /// only raise the header's `ts_max`. Fails with `Full` at the fill limit.
    pub fn append(
        &mut self,
        key: i64,
        child: NodeId,
        aggregates: Option<&Aggregates>,
    ) -> Result<usize, EventError> {
        let n = self.len();
        frame::check_fill_limit(n, self.layout.fill_limit(), "index node", "entries")?;
        if let Some(last) = n.checked_sub(1).and_then(|i| self.key_at(i)) {
            if key < last {
                return Err(EventError::invalid(format!("key {key} is smaller than the last key {last}")));
            }
        }
        let entry = self.build_entry(key, child, aggregates)?;
        let eb = self.eb();
        frame::insert_at(self.bytes_mut(), eb, n, &entry);
        self.widen_ts(key, Self::entry_ts_max(key, aggregates));
        Ok(n)
    }

    /// Inserts an entry at its place by key, after equal keys (a split
    /// child's new sibling). Fails with `Full` only at capacity. Returns the
    /// position; entries from it on moved.
    pub fn insert_ordered(
        &mut self,
        key: i64,
        child: NodeId,
        aggregates: Option<&Aggregates>,
    ) -> Result<usize, EventError> {
        frame::check_capacity(self.len(), self.layout.capacity(), "index node", "entries")?;
        let entry = self.build_entry(key, child, aggregates)?;
        let pos = self.upper_bound(key);
        let eb = self.eb();
        frame::insert_at(self.bytes_mut(), eb, pos, &entry);
        self.widen_ts(key, Self::entry_ts_max(key, aggregates));
        Ok(pos)
    }

    /// Replaces the key of entry `i` (an out-of-order event lowered the
    /// child's smallest timestamp); the keys must stay sorted.
    pub fn set_key(&mut self, i: usize, key: i64) -> Result<(), EventError> {
        let n = self.len();
        if i >= n {
            return Err(EventError::invalid(format!("no entry {i} in an index node of {n}")));
        }
        let before = i.checked_sub(1).and_then(|j| self.key_at(j)).unwrap_or(i64::MIN);
        let after = self.key_at(i + 1).unwrap_or(i64::MAX);
        if key < before || key > after {
            return Err(EventError::invalid(format!(
                "key {key} of entry {i} is outside [{before}, {after}]"
            )));
        }
        let at = self.entry_range(i).start + INDEX_ENTRY_OFFSET_KEY;
        frame::unseal(self.bytes_mut());
        put_i64(self.bytes_mut(), at, key);
        if i == 0 {
            put_i64(self.bytes_mut(), OFFSET_TS_MIN, key);
        }
        let max = self.ts_max().max(key);
        put_i64(self.bytes_mut(), OFFSET_TS_MAX, max);
        Ok(())
    }

    /// Replaces the inline aggregates of entry `i` (and the key, which is
    /// the child's smallest timestamp). Inline layouts only.
    pub fn set_aggregates(&mut self, i: usize, aggregates: &Aggregates) -> Result<(), EventError> {
        if !self.layout.aggregates_inline() {
            return Err(EventError::invalid("this index layout keeps no aggregates inline"));
        }
        let Some(child) = self.child_at(i) else {
            return Err(EventError::invalid(format!("no entry {i} in an index node of {}", self.len())));
        };
        let key = if aggregates.count > 0 { aggregates.ts_min } else { self.key_at(i).unwrap_or(i64::MIN) };
        let entry = self.build_entry(key, child, Some(aggregates))?;
        self.set_key(i, key)?;
        let range = self.entry_range(i);
        self.bytes_mut()[range].copy_from_slice(&entry);
        self.widen_ts(key, Self::entry_ts_max(key, Some(aggregates)));
        Ok(())
    }

    /// Raises the header's `ts_max` to at least `ts` (the tree tells the
    /// node about newer events in its subtree).
    pub fn widen_ts_max(&mut self, ts: i64) {
        if ts > self.ts_max() {
            frame::unseal(self.bytes_mut());
            put_i64(self.bytes_mut(), OFFSET_TS_MAX, ts);
        }
    }
}
