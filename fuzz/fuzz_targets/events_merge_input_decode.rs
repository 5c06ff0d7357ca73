//! Fuzzes decoding an event stream's spilled out-of-order merge input
//! (`docs/format/events-ooo-queue.md`, "Merge input file"): see
//! `strata_events::stream::merge_input::fuzz_decode`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_events::stream::merge_input::fuzz_decode(data));
