//! Where the aggregates of a child subtree are found (chronicledb-pmem.txt
//! section 4.1 "Aggregates", Fig. 4 A.c): inline in the parent's index entry,
//! or in the flat PMem aggregate array at the child's node number ("accessing
//! the aggregates of a page with ID i translates to a lookup of slot i").
//! With separate id sequences (index nodes on PMem) there is one array per
//! node kind; with the shared sequence one array.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::aggregate::{AggregateSpec, Aggregates};
use crate::ids::{EventError, NodeId, NodeKind};
use crate::node::IndexNode;
use crate::pmem_arrays::{AggregateArray, PmemArrayCounters};

/// Inline, or PMem arrays (one, or leaf then index).
pub(crate) enum AggregateStore {
    Inline,
    Arrays { arrays: Vec<AggregateArray>, reads: AtomicU64, writes: AtomicU64 },
}

/// Aggregate-array work of a tree (zeros with inline aggregates).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct AggregateStoreStats {
    /// Records read from the PMem array(s).
    pub pmem_reads: u64,
    /// Records written to the PMem array(s) (one per completed node).
    pub pmem_writes: u64,
    /// The arrays' own counters, summed.
    pub arrays: PmemArrayCounters,
}

impl AggregateStore {
    pub(crate) fn arrays(arrays: Vec<AggregateArray>) -> AggregateStore {
        AggregateStore::Arrays { arrays, reads: AtomicU64::new(0), writes: AtomicU64::new(0) }
    }

    pub(crate) fn is_inline(&self) -> bool {
        matches!(self, AggregateStore::Inline)
    }

    fn array_of(arrays: &[AggregateArray], id: NodeId) -> &AggregateArray {
        match (arrays.len(), id.kind) {
            (1, _) | (_, NodeKind::Leaf) => &arrays[0],
            (_, NodeKind::Index) => &arrays[1],
        }
    }

    /// Stores the aggregates of completed node `id` durably (no-op inline:
    /// the parent entry carries them). Skips a slot already holding them
    /// (a redone write-out).
    pub(crate) fn put(&self, spec: &AggregateSpec, id: NodeId, aggs: &Aggregates) -> Result<(), EventError> {
        let AggregateStore::Arrays { arrays, writes, .. } = self else { return Ok(()) };
        let array = Self::array_of(arrays, id);
        let record = aggs.encode(spec)?;
        if array.get(id.number)?.as_deref() == Some(record.as_slice()) {
            return Ok(());
        }
        array.set(id.number, &record)?;
        writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The aggregates of completed node `id` from the array; `Corruption`
    /// if its slot is empty (inline stores have none: `InvalidInput`).
    pub(crate) fn get(&self, spec: &AggregateSpec, id: NodeId) -> Result<Aggregates, EventError> {
        let AggregateStore::Arrays { arrays, reads, .. } = self else {
            return Err(EventError::invalid("aggregates are inline: read them from the parent entry"));
        };
        reads.fetch_add(1, Ordering::Relaxed);
        let record = Self::array_of(arrays, id).get(id.number)?.ok_or_else(|| {
            EventError::corruption(
                format!("aggregate slot of {id}"),
                "empty, but the tree refers to the node",
            )
        })?;
        Aggregates::decode(spec, &record)
    }

    /// The aggregates of the child of entry `i` of `node`.
    pub(crate) fn of_entry<B: AsRef<[u8]>>(
        &self,
        spec: &AggregateSpec,
        node: &IndexNode<B>,
        i: usize,
    ) -> Result<Aggregates, EventError> {
        match self {
            AggregateStore::Inline => node.aggregates_at(i)?.ok_or_else(|| {
                EventError::corruption(
                    format!("index {}", node.id()),
                    format!("no inline aggregates at entry {i}"),
                )
            }),
            AggregateStore::Arrays { .. } => {
                let child = node
                    .child_at(i)
                    .ok_or_else(|| EventError::invalid(format!("no entry {i} in index {}", node.id())))?;
                self.get(spec, child)
            }
        }
    }

    pub(crate) fn stats(&self) -> AggregateStoreStats {
        let AggregateStore::Arrays { arrays, reads, writes } = self else {
            return AggregateStoreStats::default();
        };
        let mut sum = PmemArrayCounters::default();
        for a in arrays {
            let c = a.counters();
            sum.writes += c.writes;
            sum.reads += c.reads;
            sum.bytes_written += c.bytes_written;
            sum.bytes_read += c.bytes_read;
            sum.lines_flushed += c.lines_flushed;
            sum.bytes_persisted += c.bytes_persisted;
            sum.fences += c.fences;
        }
        AggregateStoreStats {
            pmem_reads: reads.load(Ordering::Relaxed),
            pmem_writes: writes.load(Ordering::Relaxed),
            arrays: sum,
        }
    }
}
