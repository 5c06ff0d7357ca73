//! The event store of `chronicledb-pmem.txt` (ChronicleDB on a three-layer
//! DRAM + PMem + SSD hierarchy): event streams with a fixed schema, the
//! TAB+-tree over application time with aggregates per index entry
//! (section 2.2, 4.1), the storage layout with LZ4-compressed nodes in
//! fixed-size blocks and address translation (section 4.2), and the
//! out-of-order queues (section 4.3).
//!
//! Module map (reading order):
//! - [`ids`]: node ids (leaf and index sequences), errors shared by the modules.
//! - `schema`, `event`, `aggregate`: a stream's schema, the fixed-size binary
//!   event, the decomposable aggregates (count, min, max, sum per attribute).
//! - `node`: the 8 KiB leaf and index node layouts.
//! - `block_store`, `translation`: nodes compressed into 32 KiB SSD blocks,
//!   and logical-to-physical translation (interleaved ATT on SSD, flat PMem
//!   array, DRAM map).
//! - `pmem_arrays`: the flat PMem arrays of aggregates and of index nodes.
//! - `ooo`: the out-of-order queues (PMem with a DRAM application-time
//!   index, DRAM, flash).
//! - `tree`: the TAB+-tree (every Fig. 4 placement), the PMem right flank
//!   with batch flushing and its crash-safe write-out, recovery, and the
//!   queries (time travel, replay, temporal aggregation, filter, point).
//! - `stream`: an event stream = a TAB+-tree + an out-of-order queue: late
//!   events go to the flank leaf's spare room or the queue, the queue is
//!   merged into the tree when full, queries include queued events.
//!
//! Test scaffolding, compiled only for tests and under a feature: the fuzz
//! entries (`fuzz` feature), `crashtest_hooks` (planted bugs, `crashtest`
//! feature) and `sample_events` (both). The crash protocols of the event
//! store live in `strata-crashtest` (`events_*`).

#![forbid(unsafe_code)]

pub mod aggregate;
pub mod block_store;
#[cfg(any(test, feature = "crashtest"))]
pub mod crashtest_hooks;
pub mod event;
pub mod ids;
pub mod node;
pub mod ooo;
pub mod pmem_arrays;
#[cfg(any(test, feature = "crashtest", feature = "fuzz"))]
pub mod sample_events;
pub mod schema;
pub mod stream;
pub mod translation;
pub mod tree;

pub use ids::{DecodeError, EventError, NodeId, NodeKind};
