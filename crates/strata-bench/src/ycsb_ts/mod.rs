//! The YCSB-TS workload generator of DecLog's evaluation (section 5.1,
//! Table 1), the deterministic half of `strata bench ycsb-ts`: it produces
//! operations, it does not run them.
//!
//! - [`spec`]: workloads A-D ([`Workload::params`]: insert / read / update
//!   mix and Zipf theta) and the [`YcsbTsSpec`];
//! - [`model`]: series keys (`usermetric,tag0=..,tag1=..,tag2=..#value`),
//!   50-byte [`DataPoint`]s with their line protocol, [`Op`]s and 10-operation
//!   [`Txn`]s;
//! - [`zipf`]: YCSB's Zipfian generator (Gray et al.) and its scrambled
//!   variant (a seeded permutation of ranks to keys);
//! - [`workload`]: [`YcsbTsGenerator`]: the load phase and the transaction
//!   stream, whole or split into disjoint per-worker streams.
//!
//! Same spec, same worker split: same operations, byte for byte.

pub mod model;
pub mod spec;
pub mod workload;
pub mod zipf;

#[cfg(test)]
mod tests;

pub use model::{DataPoint, Note, Op, OpKind, Txn, OPS_PER_TXN, POINT_BYTES};
pub use spec::{MixUnit, SpecError, Workload, WorkloadParams, YcsbTsSpec};
pub use workload::{LoadPhase, YcsbTsGenerator, LOAD_BATCH_OPS};
pub use zipf::{ScrambledZipfian, ZipfianGenerator};
