//! Fuzzes opening a DecLog area (`docs/format/declog-stream.md`) from an
//! arbitrary region image or a damaged valid log: see
//! `strata_declog::fuzz::fuzz_open` for the modes and the checks.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_declog::fuzz::fuzz_open(data));
