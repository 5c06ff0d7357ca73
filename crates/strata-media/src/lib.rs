//! Media layer (DESIGN.md sections 1 and 3): the SSD file-system trait with a
//! real implementation and a fault-injecting one, and the transaction oracle
//! that every crash test (PMem simulator or fault-injecting file system) checks.
//!
//! Nothing here knows about logs or tables; higher layers build on these traits.

pub mod doc_table;
pub mod fs;
pub mod oracle;

pub use fs::{create_durably, rename_durably, FaultFs, FileSystem, FsFile, RealFs};
pub use oracle::{AckLog, CrashFailure, CrashReport, OracleCounts, TxnId, TxnOracle};
