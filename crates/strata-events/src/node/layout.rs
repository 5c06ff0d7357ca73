//! Node capacities and the spare room (chronicledb-pmem.txt sections 2.2
//! and 5.1: "each node maintains a spare space of 10% for absorbing OOO
//! events"). A node has room for `capacity` entries; bulk-loading appends
//! fill it only to `fill_limit = floor(capacity * (1000 - spare_permille) /
//! 1000)` (at least 1), and ordered inserts of out-of-order data may use the
//! rest. Index nodes keep the same spare room, for entries added by splits.
//!
//! The layouts are cheap to clone (shared), so node views can own one.

use std::sync::Arc;

use crate::aggregate::AggregateSpec;
use crate::ids::EventError;
use crate::node::{MAX_SPARE_PERMILLE, NODE_BYTES, NODE_HEADER_BYTES};
use crate::schema::StreamSchema;

/// Bytes of an index entry without aggregates: key (i64) and child (u64).
pub const INDEX_ENTRY_FIXED_BYTES: usize = 16;
/// Offset of the key in an index entry.
pub const INDEX_ENTRY_OFFSET_KEY: usize = 0;
/// Offset of the child id in an index entry.
pub const INDEX_ENTRY_OFFSET_CHILD: usize = 8;
/// Offset of the inline aggregate record in an index entry.
pub const INDEX_ENTRY_OFFSET_AGGREGATES: usize = 16;

/// Entries of `entry_bytes` that fit after the header.
const fn capacity_for(entry_bytes: usize) -> usize {
    (NODE_BYTES - NODE_HEADER_BYTES) / entry_bytes
}

/// Events of `schema` that fit in a leaf (before the spare room).
pub fn leaf_capacity(schema: &StreamSchema) -> usize {
    capacity_for(schema.event_bytes())
}

/// Entries that fit in an index node (before the spare room), with or
/// without the child's aggregates inline.
pub fn index_capacity(aggregates_inline: bool, spec: &AggregateSpec) -> usize {
    capacity_for(index_entry_bytes(aggregates_inline, spec))
}

/// Bytes of one index entry.
pub fn index_entry_bytes(aggregates_inline: bool, spec: &AggregateSpec) -> usize {
    INDEX_ENTRY_FIXED_BYTES + if aggregates_inline { spec.record_bytes() } else { 0 }
}

/// How many of `capacity` entries bulk-loading appends may fill.
pub fn fill_limit(capacity: usize, spare_permille: u32) -> usize {
    (capacity * (1000 - spare_permille as usize) / 1000).max(1).min(capacity)
}

fn check_spare(spare_permille: u32) -> Result<(), EventError> {
    if spare_permille > MAX_SPARE_PERMILLE {
        return Err(EventError::invalid(format!(
            "spare room is at most {MAX_SPARE_PERMILLE} permille, got {spare_permille}"
        )));
    }
    Ok(())
}

#[derive(Debug)]
struct LeafLayoutInner {
    schema: StreamSchema,
    capacity: usize,
    fill_limit: usize,
    spare_permille: u32,
    validate_events: bool,
}

/// The layout of the leaves of one stream.
#[derive(Clone, Debug)]
pub struct LeafLayout(Arc<LeafLayoutInner>);

impl LeafLayout {
    pub fn new(schema: &StreamSchema, spare_permille: u32) -> Result<LeafLayout, EventError> {
        check_spare(spare_permille)?;
        let capacity = leaf_capacity(schema);
        Ok(LeafLayout(Arc::new(LeafLayoutInner {
            schema: schema.clone(),
            capacity,
            fill_limit: fill_limit(capacity, spare_permille),
            spare_permille,
            validate_events: crate::event::schema_needs_validation(schema),
        })))
    }

    pub fn schema(&self) -> &StreamSchema {
        &self.0.schema
    }

    pub fn event_bytes(&self) -> usize {
        self.0.schema.event_bytes()
    }

    /// Events that fit in a leaf.
    pub fn capacity(&self) -> usize {
        self.0.capacity
    }

    /// Events a bulk-loading append fills a leaf to.
    pub fn fill_limit(&self) -> usize {
        self.0.fill_limit
    }

    pub fn spare_permille(&self) -> u32 {
        self.0.spare_permille
    }

    /// Whether event bytes can be invalid (the schema has bools or strings).
    pub(crate) fn validate_events(&self) -> bool {
        self.0.validate_events
    }
}

#[derive(Debug)]
struct IndexLayoutInner {
    spec: AggregateSpec,
    aggregates_inline: bool,
    entry_bytes: usize,
    capacity: usize,
    fill_limit: usize,
    spare_permille: u32,
}

/// The layout of the index nodes of one stream: entries with or without
/// the child's aggregates inline (without: they live in the flat PMem
/// aggregate array, and the fan-out is larger).
#[derive(Clone, Debug)]
pub struct IndexLayout(Arc<IndexLayoutInner>);

impl IndexLayout {
    pub fn new(
        spec: &AggregateSpec,
        aggregates_inline: bool,
        spare_permille: u32,
    ) -> Result<IndexLayout, EventError> {
        check_spare(spare_permille)?;
        let entry_bytes = index_entry_bytes(aggregates_inline, spec);
        let capacity = capacity_for(entry_bytes);
        if capacity < 2 {
            return Err(EventError::invalid(format!(
                "index entries of {entry_bytes} bytes leave a fan-out of {capacity}"
            )));
        }
        Ok(IndexLayout(Arc::new(IndexLayoutInner {
            spec: spec.clone(),
            aggregates_inline,
            entry_bytes,
            capacity,
            fill_limit: fill_limit(capacity, spare_permille).max(2),
            spare_permille,
        })))
    }

    pub fn spec(&self) -> &AggregateSpec {
        &self.0.spec
    }

    pub fn aggregates_inline(&self) -> bool {
        self.0.aggregates_inline
    }

    /// Bytes of one entry: 16, plus the aggregate record if inline.
    pub fn entry_bytes(&self) -> usize {
        self.0.entry_bytes
    }

    /// Entries that fit in an index node.
    pub fn capacity(&self) -> usize {
        self.0.capacity
    }

    /// Entries a bulk-loading append fills an index node to (the fan-out).
    pub fn fill_limit(&self) -> usize {
        self.0.fill_limit
    }

    pub fn spare_permille(&self) -> u32 {
        self.0.spare_permille
    }
}
