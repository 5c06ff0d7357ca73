//! Fuzzes opening the event store's PMem aggregate and index-node arrays
//! (`docs/format/events-pmem-arrays.md`) from arbitrary or damaged area
//! images: see `strata_events::pmem_arrays::fuzz_open_arrays`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata_events::pmem_arrays::fuzz_open_arrays(data);
});
