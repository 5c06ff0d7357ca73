//! Fuzzes DecLog's point payload decoder (`docs/format/declog-stream.md`,
//! "Point payloads"): `point_payload::decode` on arbitrary bytes must never
//! panic, and whatever decodes must encode back to the same bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_declog::compress::fuzz_point_payload(data));
