//! The internal hooks the crash protocols of `strata-crashtest` need, in one
//! place: per-thread planted bugs that break one persist step of a structure
//! so its crash test can show it catches the breakage. Compiled only for
//! this crate's tests and under the `crashtest` feature, which only
//! `strata-crashtest` turns on; the product never plants a bug.

pub use crate::ooo::{PlantedBug as OooBug, PLANTED_BUG as OOO_BUG};
pub use crate::translation::{PlantedBug as TranslationBug, PLANTED_BUG as TRANSLATION_BUG};
pub use crate::tree::{MergeBug, PlantedBug as FlankBug, MERGE_BUG, PLANTED_BUG as FLANK_BUG};
