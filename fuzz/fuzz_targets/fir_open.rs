//! Fuzzes opening FIR tables from an arbitrary region image
//! (`docs/format/fir.md`) through `strata_fir::fuzz::fuzz_open`: the
//! superblock, LCTT, region directory, Halloc area, block chains and slots
//! must give an error or a database, never a panic or a hang. The crate's
//! `tests/fuzz_smoke.rs` runs the same entry on stable.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_fir::fuzz::fuzz_open(data));
