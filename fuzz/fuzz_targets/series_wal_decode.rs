//! The series engine's WAL payload decoder: never panics, and whatever
//! decodes re-encodes to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_series::wal::fuzz_wal_decode(data));
