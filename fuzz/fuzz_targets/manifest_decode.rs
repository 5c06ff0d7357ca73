//! Fuzzes the manifest decoder (`docs/format/manifest.md`) through
//! `strata_series::manifest::fuzz_manifest_decode`: `decode_manifest` on
//! arbitrary bytes must never panic and whatever it accepts must re-encode to
//! the same bytes; a valid manifest built from the input must round-trip and
//! any single damaged byte or truncation of it must be rejected. The crate's
//! `fuzz_smoke_manifest_decode` test runs the same checks on stable.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_series::manifest::fuzz_manifest_decode(data));
