//! Fuzzes the series engine's DecLog entry decoder
//! (`strata_series::declog::entry_key`): arbitrary bytes never panic, and
//! whatever decodes re-encodes to the same bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_series::declog::entry_key::fuzz_entry_decode(data));
