//! The internal hooks the DecLog crash protocol of `strata-crashtest`
//! (`declog_stream`) needs: the per-thread planted bug that breaks one
//! persist step of the logging pipeline, so the crash test can show it
//! catches the breakage. Compiled only for this crate's tests and under the
//! `crashtest` feature, which only `strata-crashtest` turns on.

pub use crate::pipeline::{PlantedBug, PLANTED_BUG};
