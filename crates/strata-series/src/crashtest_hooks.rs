//! The internal hooks the DecLog crash lines of `strata-crashtest`
//! (`series_declog`) need: per-thread planted bugs that break how the
//! DecLog write path classifies a written point (`declog::touched`), so
//! the crash lines that write the same point from concurrent transactions
//! can show they catch the breakage; and a compaction that deletes its
//! inputs before its manifest is durable (`core::compact`), for the
//! `series-compaction` crash line. Compiled only for this crate's tests
//! and under the `crashtest` feature, which only `strata-crashtest` turns
//! on; the product never plants a bug.

pub use crate::core::compact::{CompactionBug, COMPACTION_BUG};
pub use crate::declog::touched::{PlantedBug, PLANTED_BUG};
