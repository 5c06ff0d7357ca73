//! Fuzzes block file validation (`docs/format/block-file.md`) through
//! `strata_series::block_file::fuzz_block_file_parse`: `BlockFile::parse` on
//! arbitrary images and on valid files with one damaged byte must never
//! panic, must reject damage outside the blocks, and whatever it accepts must
//! re-encode to the same bytes. The input layout is documented on that
//! function; the crate's `fuzz_smoke_block_file_parse` test runs the same
//! checks on stable.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_series::block_file::fuzz_block_file_parse(data));
