//! The Gorilla block codec of the time-series engine (declog.txt sections 2.1
//! and 4.4.1: the delta-of-delta and XOR compression of Gorilla, VLDB 2015, as
//! Beringei and DecLog use it). Format: `docs/format/series-block.md`.
//!
//! A block holds the points of one series and one field type as two
//! independent bit streams, timestamps and values, so timestamps decode
//! alone. `BlockWriter` is the open block kept compressed in DRAM;
//! `encode_points`, `decode_block` and `decode_timestamps` handle finished
//! block bytes. Decoding never panics and bounds its allocations by the input.
//!
//! Files: `bits` (bit I/O), `stream` (what every open stream holds), `delta`
//! (the delta-of-delta coding timestamps and integers share), `timestamps`,
//! `floats`, `integers` (also unsigned and the shared variable-length code),
//! `booleans`, `strings`, `header`, `block` (writer and decoder), `fuzz` (the
//! fuzz entry), `error`.

pub mod bits;
pub mod block;
pub mod booleans;
mod delta;
pub mod error;
pub mod floats;
#[cfg(any(test, feature = "fuzz"))]
pub mod fuzz;
pub mod header;
pub mod integers;
pub mod stream;
pub mod strings;
pub mod timestamps;

#[cfg(test)]
mod tests;

pub use block::{decode_block, decode_timestamps, encode_points, BlockWriter, DecodedBlock, Values};
pub use error::CodecError;
#[cfg(any(test, feature = "fuzz"))]
pub use fuzz::fuzz_block_decode;
