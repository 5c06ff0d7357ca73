//! DecLog log compression (declog.txt 4.4.1, with the hash-table parts of 4.5
//! and 4.6): a key hash table in PMem with a DRAM mirror ([`key_table`]) and
//! the codec that turns a point into an entry payload and its compression bit
//! ([`codec`]): delta-of-delta timestamps and XOR float values per key
//! (Gorilla), keys replaced by small ids once the table knows them; the
//! uncompressed [`point_payload`] the engine submits and parsing returns (and
//! its per-key run, [`points_payload`], compressed by [`points_codec`]); and
//! how DecLog wires them into its streams (`log_codec`: per-stream tables,
//! compression in stream order, self-describing entries after a clear).
//!
//! Format: `docs/format/declog-stream.md`, "Key hash table and compressed
//! payloads" and "Point payloads". This module does not depend on the series
//! engine.

mod bits;
pub mod codec;
#[cfg(test)]
mod format_doc_tests;
#[cfg(any(test, feature = "fuzz"))]
pub mod fuzz;
pub mod key_table;
pub(crate) mod log_codec;
#[cfg(test)]
mod log_tests;
pub mod point_payload;
pub mod points_codec;
pub mod points_payload;
pub mod points_source;
#[cfg(test)]
mod points_source_tests;
#[cfg(test)]
mod tests;

pub use codec::{compress, decompress, Compressed, DecodedPoint, LogPoint};
#[cfg(any(test, feature = "fuzz"))]
pub use fuzz::{fuzz_decompress, fuzz_point_payload, fuzz_points_payload};
pub use key_table::{key_hash, key_table_area_bytes, KeyRecord, KeyState, KeyTable};
pub use log_codec::COMPRESSION_SLACK_BYTES;
pub use point_payload::PointPayloadRef;
pub use points_codec::{compress_points, decompress_points};
pub use points_payload::{PointItem, PointsPayloadBuilder, PointsPayloadRef};
pub use points_source::{encode_source, PointsEntry, PointsSource};
