//! YCSB-TS, the benchmark of DecLog's evaluation (sections 5.1-5.3):
//! `strata bench ycsb-ts`.
//!
//! The deterministic generator (it produces operations, it does not run them):
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
//!
//! The benchmark that runs them against the engine:
//! - [`txn_ops`]: YCSB-TS operations as engine transaction operations;
//! - [`variants`]: the engine configurations (the paper's five competitors
//!   and the Fig. 12(a) ablation steps);
//! - [`job`]: what a child process runs and reports;
//! - [`run_phase`]: the load phase and the measured run (workers, latency,
//!   the checkpoint near the end);
//! - [`child`]: the child process, killed with SIGKILL after its run;
//! - [`recovery`]: spawning, killing, timing `Db::open`, verifying;
//! - [`cpu_time`]: process CPU time;
//! - [`latency`]: mean of the fastest 95 %, percentiles, CDF;
//! - [`runner`]: rounds over variants, [`run_ycsb_ts_bench`];
//! - [`report`]: metrics, tables, acceptance checks, JSON;
//! - [`figures`]: Fig. 10(a), Fig. 11, Table 2, Fig. 12(a), drawn with [`crate::svg`];
//! - [`paper`]: the paper's own numbers, printed beside ours.

pub mod child;
pub mod cpu_time;
pub mod figures;
pub mod job;
pub mod latency;
pub mod model;
pub mod paper;
pub mod recovery;
pub mod report;
pub mod run_phase;
pub mod runner;
pub mod spec;
pub mod txn_ops;
pub mod variants;
pub mod workload;
pub mod zipf;

#[cfg(test)]
mod e2e_tests;
#[cfg(test)]
mod tests;

pub use child::run_child_from_env;
pub use model::{DataPoint, Note, Op, OpKind, Txn, OPS_PER_TXN, POINT_BYTES};
pub use recovery::ChildCommand;
pub use runner::{run_ycsb_ts_bench, YcsbTsOptions, YcsbTsOutcome};
pub use spec::{MixUnit, SpecError, Workload, WorkloadParams, YcsbTsSpec};
pub use variants::Variant;
pub use workload::{LoadPhase, YcsbTsGenerator, LOAD_BATCH_OPS};
pub use zipf::{ScrambledZipfian, ZipfianGenerator};
