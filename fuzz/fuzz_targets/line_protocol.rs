//! Fuzzes the InfluxDB line protocol parser and writer
//! (`strata_influx::line_protocol`): arbitrary bytes as a `/write` body must
//! parse without panicking into a well-formed batch, and every parsed point,
//! written back with `write_point` and parsed again, must be itself. The
//! checks live in `fuzz_line_protocol`, which a stable-Rust smoke test also
//! runs.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_influx::line_protocol::fuzz_line_protocol(data));
