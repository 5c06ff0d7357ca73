//! Crash tests (DESIGN.md section 3): every commit protocol built so far, run
//! against the PMem crash simulator and the fault-injecting file system, each
//! image recovered and checked by the oracle (no acknowledged transaction
//! lost, none partial, what is present closed under dependencies).
//!
//! One module per protocol and medium; [`suite`] runs them all with a budget
//! and is what `strata crashtest` and the test suite call.

#![forbid(unsafe_code)]

pub mod halloc_pmem;
mod recording_fs;
pub mod serial_pmem;
pub mod serial_ssd;
pub mod series_declog;
mod series_declog_oracle;
mod series_declog_recovery;
mod series_declog_workload;
pub mod series_pmem;
pub mod series_ssd;
mod series_workload;
pub mod suite;
mod workload;

pub use suite::{run_suite, SuiteOptions, SuiteTarget};
