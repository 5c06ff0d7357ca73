//! Fuzzes the Taurus / serial transaction log record decoder
//! (`docs/format/taurus-log.md`) through
//! `strata_txn::fuzz::fuzz_record_decode`: `record::decode` on arbitrary
//! bytes must never panic, and a record it accepts must re-encode to the
//! same bytes (the format is canonical). The crate's
//! `tests/fuzz_smoke.rs` runs the same checks on stable.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_txn::fuzz::fuzz_record_decode(data));
