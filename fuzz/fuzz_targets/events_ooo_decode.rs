//! Fuzzes recovering the event store's PMem out-of-order queue
//! (`docs/format/events-ooo-queue.md`) from an arbitrary or damaged area
//! image, and decoding flash queue pages: see
//! `strata_events::ooo::fuzz::fuzz_ooo_decode` for the modes and the checks.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_events::ooo::fuzz::fuzz_ooo_decode(data));
