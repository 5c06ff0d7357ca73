//! Fuzzes the event stream catalog file (`docs/format/events-catalog.md`):
//! decoding arbitrary bytes never panics and whatever decodes re-encodes to
//! the same bytes. Input: `flags (1) | file`; flag bit 0 rewrites the length
//! and CRC first (see `strata_engine::streams::catalog::fuzz_catalog_decode`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_engine::streams::catalog::fuzz_catalog_decode(data));
