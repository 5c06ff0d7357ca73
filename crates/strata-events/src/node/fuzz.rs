//! The fuzz entry for decoding nodes from arbitrary bytes
//! (`fuzz/fuzz_targets/events_node_decode.rs` calls [`fuzz_node_decode`];
//! a seeded smoke test in `node::tests` runs it on stable Rust).
//!
//! Input: `flags (1) | [encoded schema] | node bytes`. If the bytes after
//! `flags` start with a valid schema encoding it is used, otherwise the
//! Stock schema (flags bit 1 clear) or the Sine schema (set) and the node
//! bytes start right after `flags`. The node bytes are cut or zero-padded
//! to [`NODE_BYTES`]. With flags bit 0 the CRC is first rewritten following
//! the documented rule, so the fuzzer gets past it. Bits 4..=7 choose the
//! spare room (0..=750 permille).
//!
//! The node is opened as a leaf and as an index node (aggregates inline and
//! not); nothing may panic, and every node that verifies must obey the
//! format: its events or entries decode, and rebuilding it through the
//! public API and sealing gives the same used bytes.

use crate::aggregate::AggregateSpec;
use crate::event;
use crate::node::header::{read_header, OFFSET_COUNT, OFFSET_CRC, OFFSET_ENTRY_BYTES};
use crate::node::{IndexLayout, IndexNode, LeafLayout, LeafNode, NODE_BYTES, NODE_HEADER_BYTES};
use crate::schema::StreamSchema;

/// Rewrites the CRC field as `docs/format/events-node.md` specifies:
/// CRC32C of bytes `0..used` with the field itself read as zero, where
/// `used = 64 + count * entry_bytes` from the header (if that fits).
fn fix_crc(node: &mut [u8]) {
    let count = u32::from_le_bytes(node[OFFSET_COUNT..OFFSET_COUNT + 4].try_into().expect("4 bytes"));
    let entry_bytes = u16::from_le_bytes([node[OFFSET_ENTRY_BYTES], node[OFFSET_ENTRY_BYTES + 1]]);
    let used = NODE_HEADER_BYTES as u64 + count as u64 * entry_bytes as u64;
    if used > NODE_BYTES as u64 {
        return;
    }
    let mut covered = node[..used as usize].to_vec();
    covered[OFFSET_CRC..OFFSET_CRC + 4].fill(0);
    let crc = crc32c::crc32c(&covered);
    node[OFFSET_CRC..OFFSET_CRC + 4].copy_from_slice(&crc.to_le_bytes());
}

/// Never panics on any input; asserts the format's promises on nodes that
/// verify.
pub fn fuzz_node_decode(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else { return };
    let (schema, node_bytes) = match StreamSchema::decode_prefix(rest) {
        Ok((schema, used)) => (schema, &rest[used..]),
        Err(_) if flags & 2 != 0 => (StreamSchema::sine(), rest),
        Err(_) => (StreamSchema::stock(), rest),
    };
    let mut node = vec![0u8; NODE_BYTES];
    let n = node_bytes.len().min(NODE_BYTES);
    node[..n].copy_from_slice(&node_bytes[..n]);
    if flags & 1 != 0 {
        fix_crc(&mut node);
    }
    let spare_permille = (flags >> 4) as u32 * 50;
    let _ = read_header(&node);

    let leaf_layout = LeafLayout::new(&schema, spare_permille).expect("spare at most 750");
    fuzz_leaf(&node, &leaf_layout);
    let spec = AggregateSpec::default_for(&schema);
    for inline in [false, true] {
        if let Ok(layout) = IndexLayout::new(&spec, inline, spare_permille) {
            fuzz_index(&node, &layout);
        }
    }
}

fn fuzz_leaf(node: &[u8], layout: &LeafLayout) {
    let Ok(leaf) = LeafNode::open(node, layout) else { return };
    // Reads on an unverified node must not panic, sorted or not.
    let probe = leaf.ts_at(leaf.len() / 2).unwrap_or(0);
    let _ = (leaf.first_ge(probe), leaf.last_le(probe), leaf.time_range(probe, probe.saturating_add(9)));
    let _ = leaf.aggregates(&AggregateSpec::default_for(layout.schema()));
    let structure = leaf.verify_structure();
    if leaf.verify().is_err() {
        return;
    }
    assert!(structure.is_ok(), "verify passed where verify_structure failed");
    assert!(leaf.used_bytes() <= NODE_BYTES && leaf.len() <= layout.capacity());
    let mut rebuilt = LeafNode::init(vec![0u8; NODE_BYTES], layout, leaf.id()).expect("a leaf id");
    rebuilt.set_prev(leaf.prev()).expect("valid link");
    rebuilt.set_next(leaf.next()).expect("valid link");
    for (i, bytes) in leaf.iter().enumerate() {
        let e = event::decode(layout.schema(), bytes).expect("a verified leaf holds valid events");
        assert_eq!(event::encode(layout.schema(), &e).expect("valid event"), bytes, "event {i} round trip");
        let pos = rebuilt.insert_ordered(bytes).expect("fits: same capacity");
        assert_eq!(pos, i, "events with equal timestamps keep their order");
    }
    rebuilt.seal();
    let used = leaf.used_bytes();
    assert_eq!(rebuilt.as_bytes()[..used], leaf.as_bytes()[..used], "rebuilt leaf differs");
    assert!(rebuilt.verify().is_ok());
}

fn fuzz_index(node: &[u8], layout: &IndexLayout) {
    let Ok(index) = IndexNode::open(node, layout) else { return };
    let probe = index.key_at(index.len() / 2).unwrap_or(0);
    let _ = (index.first_ge(probe), index.last_le(probe), index.child_for_scan_from(probe));
    let _ = (index.child_for_insert(probe), index.aggregates(), index.get(0));
    let structure = index.verify_structure();
    if index.verify().is_err() {
        return;
    }
    assert!(structure.is_ok(), "verify passed where verify_structure failed");
    let mut rebuilt =
        IndexNode::init(vec![0u8; NODE_BYTES], layout, index.id(), index.level()).expect("an index id");
    rebuilt.set_prev(index.prev()).expect("valid link");
    rebuilt.set_next(index.next()).expect("valid link");
    for i in 0..index.len() {
        let entry = index.get(i).expect("verified entries decode").expect("in range");
        let pos = rebuilt.insert_ordered(entry.key, entry.child, entry.aggregates.as_ref()).expect("fits");
        assert_eq!(pos, i, "entries with equal keys keep their order");
    }
    rebuilt.widen_ts_max(index.ts_max());
    rebuilt.seal();
    let used = index.used_bytes();
    assert_eq!(rebuilt.as_bytes()[..used], index.as_bytes()[..used], "rebuilt index node differs");
    assert!(rebuilt.verify().is_ok());
}
