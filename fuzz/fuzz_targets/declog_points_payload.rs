//! Fuzzes DecLog's points payload decoder (`docs/format/declog-stream.md`,
//! "Points payloads"): `points_payload::decode` on arbitrary bytes must never
//! panic, and whatever decodes must encode back to the same bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_declog::compress::fuzz_points_payload(data));
