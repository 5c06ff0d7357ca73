//! Fuzzes DecLog's compressed-payload decoder (`docs/format/declog-stream.md`,
//! "Key hash table and compressed payloads"): `decompress` on arbitrary
//! bytes against a primed key table must never panic, and must leave the
//! table unchanged when it fails. Input: `flags (1) | payload...`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_declog::compress::fuzz_decompress(data));
