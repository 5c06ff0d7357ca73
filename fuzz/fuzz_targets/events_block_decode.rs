//! Fuzzes opening and scanning an event store block file
//! (`docs/format/events-blocks.md`) made from arbitrary bytes or from a
//! damaged valid file: see `strata_events::block_store::fuzz_block_decode`
//! for the input layout and the checks.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_events::block_store::fuzz_block_decode(data));
