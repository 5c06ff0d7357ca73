//! Fuzzes the event store's node decoding (`docs/format/events-node.md`):
//! an encoded schema (or a built-in one) followed by node bytes, opened as a
//! leaf and as an index node and verified; nothing may panic, and nodes that
//! verify must round-trip. See `strata_events::node::fuzz` for the input
//! layout.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_events::node::fuzz_node_decode(data));
