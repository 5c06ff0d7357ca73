//! Fuzzes decoding a whole transaction log (`docs/format/taurus-log.md`)
//! through `strata_txn::fuzz::fuzz_log_decode`: `recovery::decode_log` on
//! arbitrary bytes and the committed prefix recovery computes from it must
//! never panic, and stay within the bytes and records decoded. The crate's
//! `tests/fuzz_smoke.rs` runs the same checks on stable.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_txn::fuzz::fuzz_log_decode(data));
