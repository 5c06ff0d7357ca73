//! Fuzzes the series block decoder (`docs/format/series-block.md`): any bytes
//! must decode to an error or to a consistent block whose points re-encode
//! and decode to the same values (floats by bits). The checks live in
//! `strata_series::gorilla::fuzz_block_decode`, which the crate's fuzz smoke
//! test also runs on stable Rust.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_series::gorilla::fuzz_block_decode(data));
