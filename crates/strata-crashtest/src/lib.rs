//! Crash tests (DESIGN.md section 3): every commit protocol built so far, run
//! against the PMem crash simulator and the fault-injecting file system, each
//! image recovered and checked by the oracle (no acknowledged transaction
//! lost, none partial, what is present closed under dependencies).
//!
//! Owns the whole crash-test machinery, which `strata crashtest` (a product
//! command) runs:
//! - [`oracle`]: the section 3 oracle and the reports;
//! - [`pmem_harness`] and [`fs_harness`]: crash a protocol at every flush
//!   and fence of the simulator, or at every mutating file-system operation
//!   of the fault-injecting file system, and check every image;
//! - [`error`]: [`CrashCheckError`], why a recovery could not be checked;
//! - [`protocol`]: the builder setters every crash protocol shares;
//! - [`series_compaction`]: crashes inside block-file compactions (the
//!   series engine's merge, its manifest, the inputs' deletion);
//! - one module per protocol and medium, the structures' ones using their
//!   public API plus the planted bugs of their `crashtest` feature
//!   (`declog_stream`, `events_*`, `halloc_pmem`);
//! - `txn_*`: transactional tables (`strata-txn`: serial, Taurus and
//!   Silo-R logging, rows or commands, 2PL or OCC) on simulated PMem, one
//!   region per log, and on the fault-injecting file system ([`txn_lines`]
//!   lists them);
//! - [`fir_pmem`]: FIR's log-free tables (`strata-fir`): commit, and
//!   checkpoints met mid-transaction, on simulated PMem;
//! - [`suite`]: runs them all with a budget; what `strata crashtest` and the
//!   test suite call.

#![forbid(unsafe_code)]

pub mod declog_stream;
pub mod error;
pub mod events_flank;
pub mod events_ooo;
pub mod events_stream;
pub mod events_translation;
pub mod fir_pmem;
pub mod fs_harness;
pub mod halloc_pmem;
pub mod oracle;
pub mod pmem_harness;
pub mod protocol;
mod recording_fs;
pub mod serial_pmem;
pub mod serial_ssd;
pub mod series_compaction;
pub mod series_declog;
mod series_declog_oracle;
mod series_declog_recovery;
mod series_declog_shapes;
mod series_declog_workload;
pub mod series_pmem;
pub mod series_ssd;
mod series_workload;
pub mod suite;
mod txn_driver;
mod txn_gate_fs;
pub mod txn_lines;
mod txn_oracle;
pub mod txn_pmem;
mod txn_pmem_capture;
pub mod txn_ssd;
mod txn_workload;
pub mod workload;

pub use error::CrashCheckError;
pub use oracle::{AckLog, CrashFailure, CrashReport, OracleCounts, TxnOracle};
pub use strata_media::TxnId;
pub use suite::{run_suite, SuiteOptions, SuiteTarget};
