//! The time-series storage structure (declog.txt sections 2.1 and 5.1, a
//! Beringei/Gorilla-style store): a persistent series index, per-series open
//! blocks in DRAM compressed with Gorilla, sealed blocks in immutable block
//! files on SSD, and durability through a commit log from `strata-log`.

pub mod block_file;
pub mod error;
pub mod gorilla;
pub mod model;
pub mod reference;
pub mod store;

pub use error::EngineError;
pub use model::{FieldType, FieldValue, Point, SeriesId, SeriesKey, TimeRange, TimestampNs};
pub use store::{SeriesInfo, SeriesStore, WriteOutcome};
