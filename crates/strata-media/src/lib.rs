//! Media layer (DESIGN.md sections 1 and 3): the SSD file-system trait with a
//! real implementation and a fault-injecting one (with the crash images of
//! the SSD crash model), and the transaction id the log layers record.
//!
//! Nothing here knows about logs or tables; higher layers build on these
//! traits. The crash oracle and the SSD crash harness that checks it live in
//! `strata-crashtest`.

pub mod fs;
#[cfg(any(test, feature = "fuzz"))]
pub mod fuzz_input;
pub mod ids;

pub use fs::{create_durably, rename_durably, FaultFs, FileSystem, FsFile, RealFs};
pub use ids::TxnId;
