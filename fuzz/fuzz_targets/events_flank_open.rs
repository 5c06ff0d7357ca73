//! Fuzzes recovering the event store's TAB+-tree from an arbitrary or
//! damaged PMem image of its right flank (`docs/format/events-flank.md`):
//! see `strata_events::tree::fuzz::fuzz_flank_open`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata_events::tree::fuzz::fuzz_flank_open(data);
});
