//! Fuzzes the InfluxQL parser and executor (`strata_influx::influxql`):
//! arbitrary text never panics the parser, every statement that parses
//! prints to text that parses back to an equal statement, and executing it
//! against a small in-memory store never panics.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_influx::influxql::fuzz_influxql(data));
