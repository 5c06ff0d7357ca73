//! Tests of the node layouts: fill and spare room, ordered inserts with
//! equal timestamps, binary search, sealing and CRC, header checks, index
//! entries with and without inline aggregates, a model-based property test
//! and the fuzz smoke test.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::header::{OFFSET_COUNT, OFFSET_TS_MAX};
use super::*;
use crate::aggregate::{AggregateSpec, Aggregates, AttrAggs};
use crate::event::{self, Event, Value};
use crate::ids::{EventError, NodeId};
use crate::schema::{Attr, AttrType, StreamSchema};

fn stock_layout() -> LeafLayout {
    LeafLayout::new(&StreamSchema::stock(), DEFAULT_SPARE_PERMILLE).unwrap()
}

/// A Stock event whose `sequence` tells events with equal timestamps apart.
fn stock(ts: i64, sequence: i32) -> Vec<u8> {
    let e =
        Event::new(ts, vec![Value::I32(sequence), Value::I32(3), Value::F64(ts as f64 / 2.0), Value::I32(9)]);
    event::encode(&StreamSchema::stock(), &e).unwrap()
}

fn sequence_of(bytes: &[u8]) -> i32 {
    event::attr_as_f64(&StreamSchema::stock(), bytes, 0).unwrap() as i32
}

fn new_leaf(layout: &LeafLayout, number: u64) -> LeafNode<Vec<u8>> {
    LeafNode::init(new_node_buffer(), layout, NodeId::leaf(number)).unwrap()
}

#[test]
fn stock_and_sine_capacities_match_the_doc() {
    let stock = StreamSchema::stock();
    let sine = StreamSchema::sine();
    assert_eq!(leaf_capacity(&stock), 290);
    assert_eq!(leaf_capacity(&sine), 145);
    assert_eq!(stock_layout().fill_limit(), 261);
    assert_eq!(LeafLayout::new(&sine, DEFAULT_SPARE_PERMILLE).unwrap().fill_limit(), 130);
    let sine_spec = AggregateSpec::default_for(&sine);
    // The paper's pair (459 vs 43 with a 20-byte header and no time range in
    // the aggregates) becomes 457 vs 39 here.
    assert_eq!(index_capacity(false, &sine_spec), 508);
    assert_eq!(index_capacity(true, &sine_spec), 44);
    assert_eq!(IndexLayout::new(&sine_spec, false, DEFAULT_SPARE_PERMILLE).unwrap().fill_limit(), 457);
    assert_eq!(IndexLayout::new(&sine_spec, true, DEFAULT_SPARE_PERMILLE).unwrap().fill_limit(), 39);
    let stock_spec = AggregateSpec::default_for(&stock);
    assert_eq!(index_capacity(true, &stock_spec), 59);
    assert_eq!(IndexLayout::new(&stock_spec, true, DEFAULT_SPARE_PERMILLE).unwrap().fill_limit(), 53);
}

#[test]
fn spare_room_is_configurable_and_bounded() {
    let schema = StreamSchema::stock();
    assert_eq!(LeafLayout::new(&schema, 0).unwrap().fill_limit(), 290);
    assert_eq!(LeafLayout::new(&schema, 500).unwrap().fill_limit(), 145);
    assert_eq!(LeafLayout::new(&schema, 900).unwrap().fill_limit(), 29);
    let err = LeafLayout::new(&schema, 901).unwrap_err();
    assert!(err.to_string().contains("at most 900 permille"), "{err}");
    assert_eq!(layout::fill_limit(1, 900), 1, "at least one entry");
}

#[test]
fn appends_fill_to_the_limit_then_inserts_use_the_spare_room() {
    let layout = stock_layout();
    let mut leaf = new_leaf(&layout, 0);
    for i in 0..layout.fill_limit() {
        assert_eq!(leaf.append(&stock(i as i64 * 10, i as i32)).unwrap(), i);
    }
    assert!(leaf.is_full() && !leaf.is_at_capacity());
    let err = leaf.append(&stock(1_000_000, 0)).unwrap_err();
    assert!(matches!(err, EventError::Full { what: "leaf", .. }), "{err}");
    for i in layout.fill_limit()..layout.capacity() {
        leaf.insert_ordered(&stock(5 + 10 * (i as i64 - 261), -1)).unwrap();
    }
    assert!(leaf.is_at_capacity());
    assert_eq!(leaf.len(), 290);
    assert!(matches!(leaf.insert_ordered(&stock(7, 0)), Err(EventError::Full { .. })));
    leaf.seal();
    leaf.verify().unwrap();
    assert_eq!(leaf.used_bytes(), 64 + 290 * 28);
}

#[test]
fn append_rejects_older_events_and_wrong_sizes() {
    let layout = stock_layout();
    let mut leaf = new_leaf(&layout, 0);
    leaf.append(&stock(10, 0)).unwrap();
    leaf.append(&stock(10, 1)).unwrap();
    let err = leaf.append(&stock(9, 2)).unwrap_err();
    assert!(err.to_string().contains("older than the leaf's last 10"), "{err}");
    assert!(matches!(leaf.append(&[0; 27]), Err(EventError::InvalidInput(_))));
    assert_eq!(leaf.len(), 2, "rejected events change nothing");
}

#[test]
fn ordered_inserts_go_after_equal_timestamps() {
    let layout = stock_layout();
    let mut leaf = new_leaf(&layout, 3);
    for (i, ts) in [10, 20, 20, 30].into_iter().enumerate() {
        leaf.append(&stock(ts, i as i32)).unwrap();
    }
    assert_eq!(leaf.insert_ordered(&stock(20, 100)).unwrap(), 3);
    assert_eq!(leaf.insert_ordered(&stock(5, 101)).unwrap(), 0);
    assert_eq!(leaf.insert_ordered(&stock(30, 102)).unwrap(), 6);
    assert_eq!(leaf.insert_ordered(&stock(10, 103)).unwrap(), 2);
    let seqs: Vec<i32> = leaf.iter().map(sequence_of).collect();
    assert_eq!(seqs, vec![101, 0, 103, 1, 2, 100, 3, 102]);
    let ts: Vec<i64> = leaf.iter().map(event::timestamp_of).collect();
    assert_eq!(ts, vec![5, 10, 10, 20, 20, 20, 30, 30]);
    assert_eq!((leaf.ts_min(), leaf.ts_max()), (5, 30));
    leaf.verify_structure().unwrap();
}

#[test]
fn binary_search_finds_bounds_with_duplicates() {
    let layout = stock_layout();
    let mut leaf = new_leaf(&layout, 0);
    assert_eq!((leaf.first_ge(0), leaf.last_le(0)), (None, None), "empty leaf");
    for (i, ts) in [10, 20, 20, 20, 30].into_iter().enumerate() {
        leaf.append(&stock(ts, i as i32)).unwrap();
    }
    assert_eq!(leaf.first_ge(20), Some(1));
    assert_eq!(leaf.last_le(20), Some(3));
    assert_eq!(leaf.first_ge(21), Some(4));
    assert_eq!(leaf.last_le(19), Some(0));
    assert_eq!(leaf.first_ge(31), None);
    assert_eq!(leaf.last_le(9), None);
    assert_eq!(leaf.time_range(15, 25), 1..4);
    assert_eq!(leaf.time_range(25, 15), 4..4, "an inverted range is empty");
    assert_eq!(leaf.time_range(i64::MIN, i64::MAX), 0..5);
}

#[test]
fn binary_search_agrees_with_a_linear_scan_on_random_leaves() {
    let seed = 0xE7E4_0001u64;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let layout = stock_layout();
    for round in 0..200 {
        let mut leaf = new_leaf(&layout, 0);
        let n = rng.gen_range(0..=layout.capacity());
        for i in 0..n {
            leaf.insert_ordered(&stock(rng.gen_range(-20..20), i as i32)).unwrap();
        }
        let ts: Vec<i64> = leaf.iter().map(event::timestamp_of).collect();
        for t in -22..22 {
            let first = ts.iter().position(|&x| x >= t);
            let last = ts.iter().rposition(|&x| x <= t);
            assert_eq!(leaf.first_ge(t), first, "seed {seed:#x} round {round} t {t}");
            assert_eq!(leaf.last_le(t), last, "seed {seed:#x} round {round} t {t}");
        }
    }
}

#[test]
fn ranges_cover_header_and_entries() {
    let layout = stock_layout();
    let mut leaf = new_leaf(&layout, 0);
    assert_eq!(leaf.header_range(), 0..64);
    assert_eq!(leaf.entry_range(0), 64..92);
    assert_eq!(leaf.entry_range(2), 120..148);
    assert_eq!(leaf.entries_range(1, 3), 92..148);
    leaf.append(&stock(1, 0)).unwrap();
    assert_eq!(leaf.used_bytes(), 92);
    assert_eq!(&leaf.as_bytes()[leaf.entry_range(0)], stock(1, 0).as_slice());
}

#[test]
fn the_crc_catches_every_flipped_byte_of_the_used_range() {
    let layout = stock_layout();
    let mut leaf = new_leaf(&layout, 7);
    for i in 0..40 {
        leaf.append(&stock(i, i as i32)).unwrap();
    }
    leaf.set_next(Some(NodeId::leaf(8))).unwrap();
    leaf.seal();
    leaf.verify().unwrap();
    let good = leaf.into_inner();
    let used = 64 + 40 * 28;
    for at in 0..used {
        let mut damaged = good.clone();
        damaged[at] ^= 0x10;
        let verdict = LeafNode::open(damaged.as_slice(), &layout).and_then(|l| l.verify());
        assert!(verdict.unwrap_err().is_corruption(), "flip at byte {at} went unnoticed");
    }
    // Bytes past the used range are zero after seal and not covered.
    assert!(good[used..].iter().all(|&b| b == 0));
    let mut beyond = good.clone();
    beyond[used + 5] = 0xAA;
    LeafNode::open(beyond.as_slice(), &layout).unwrap().verify().unwrap();
}

#[test]
fn changes_after_seal_clear_the_sealed_flag() {
    let layout = stock_layout();
    let mut leaf = new_leaf(&layout, 0);
    leaf.append(&stock(1, 0)).unwrap();
    leaf.seal();
    assert!(leaf.is_sealed());
    leaf.append(&stock(2, 1)).unwrap();
    assert!(!leaf.is_sealed());
    let err = leaf.verify().unwrap_err();
    assert!(err.is_corruption() && err.to_string().contains("not sealed"), "{err}");
    leaf.verify_structure().unwrap();
    leaf.seal();
    leaf.verify().unwrap();
}

#[test]
fn init_resets_only_the_header_of_a_reused_buffer() {
    let layout = stock_layout();
    let mut leaf = new_leaf(&layout, 0);
    for i in 0..100 {
        leaf.append(&stock(i, i as i32)).unwrap();
    }
    let mut reused = LeafNode::init(leaf.into_inner(), &layout, NodeId::leaf(1)).unwrap();
    assert!(reused.is_empty());
    assert_eq!((reused.ts_min(), reused.ts_max(), reused.prev()), (i64::MAX, i64::MIN, None));
    assert_eq!(&reused.as_bytes()[64..92], stock(0, 0).as_slice(), "old events remain, ignored");
    reused.append(&stock(500, 0)).unwrap();
    reused.seal();
    reused.verify().unwrap();
    assert_eq!(reused.get(0).unwrap(), stock(500, 0).as_slice());
    assert_eq!(reused.get(1), None);
}

#[test]
fn a_crashed_flank_leaf_recovers_its_time_range() {
    // The count word reached PMem, the time range words did not.
    let layout = stock_layout();
    let mut leaf = new_leaf(&layout, 0);
    for i in 0..3 {
        leaf.append(&stock(i * 10, i as i32)).unwrap();
    }
    let mut bytes = leaf.into_inner();
    bytes[OFFSET_TS_MAX..OFFSET_TS_MAX + 8].copy_from_slice(&10i64.to_le_bytes());
    let mut leaf = LeafNode::open(bytes, &layout).unwrap();
    assert!(leaf.verify_structure().unwrap_err().to_string().contains("header time range"));
    leaf.refresh_ts_range();
    leaf.verify_structure().unwrap();
    assert_eq!(leaf.ts_max(), 20);
}

#[test]
fn headers_are_checked_on_open() {
    let layout = stock_layout();
    let sine = LeafLayout::new(&StreamSchema::sine(), 100).unwrap();
    let leaf = new_leaf(&layout, 0).into_inner();
    let err = LeafNode::open(leaf.as_slice(), &sine).unwrap_err();
    assert!(err.is_corruption() && err.to_string().contains("28 bytes"), "{err}");
    let spec = AggregateSpec::default_for(&StreamSchema::stock());
    let index_layout = IndexLayout::new(&spec, false, 100).unwrap();
    assert!(IndexNode::open(leaf.as_slice(), &index_layout).unwrap_err().is_corruption());
    assert!(LeafNode::open(&leaf[..100], &layout).is_err(), "short buffer");
    let mut too_many = leaf.clone();
    too_many[OFFSET_COUNT..OFFSET_COUNT + 4].copy_from_slice(&291u32.to_le_bytes());
    assert!(LeafNode::open(too_many.as_slice(), &layout).unwrap_err().is_corruption());
    assert!(LeafNode::init(new_node_buffer(), &layout, NodeId::index(0)).is_err());
    let mut leaf = LeafNode::init(new_node_buffer(), &layout, NodeId::leaf(4)).unwrap();
    assert!(leaf.set_next(Some(NodeId::index(5))).is_err());
    assert!(leaf.set_prev(Some(NodeId::leaf(4))).is_err(), "no self link");
    leaf.set_prev(Some(NodeId::leaf(3))).unwrap();
    assert_eq!(read_header(leaf.as_bytes()).unwrap().prev, Some(NodeId::leaf(3)));
    assert_eq!(peek_kind(leaf.as_bytes()).unwrap(), crate::ids::NodeKind::Leaf);
}

#[test]
fn leaves_of_schemas_with_strings_reject_malformed_events() {
    let schema =
        StreamSchema::new(vec![Attr::new("ok", AttrType::Bool), Attr::new("s", AttrType::FixedStr(3))])
            .unwrap();
    let layout = LeafLayout::new(&schema, 100).unwrap();
    let mut leaf = LeafNode::init(new_node_buffer(), &layout, NodeId::leaf(0)).unwrap();
    leaf.append_event(&Event::new(1, vec![Value::Bool(true), Value::Str("ab".into())])).unwrap();
    let mut bad =
        event::encode(&schema, &Event::new(2, vec![Value::Bool(false), Value::Str("x".into())])).unwrap();
    bad[8] = 7;
    assert!(leaf.append(&bad).unwrap_err().is_corruption());
    assert_eq!(leaf.event_at(0).unwrap().values[1], Value::Str("ab".into()));
    leaf.seal();
    let mut bytes = leaf.into_inner();
    bytes[64 + 8] = 9;
    let crc = header::node_crc(&bytes, 64 + 12);
    bytes[56..60].copy_from_slice(&crc.to_le_bytes());
    let err = LeafNode::open(bytes.as_slice(), &layout).unwrap().verify().unwrap_err();
    assert!(err.to_string().contains("bool byte 9"), "{err}");
}

fn sine_event(ts: i64, v: f64) -> Vec<u8> {
    let e = Event::new(ts, (0..6).map(|k| Value::F64(v + k as f64)).collect());
    event::encode(&StreamSchema::sine(), &e).unwrap()
}

/// Leaves of 10 Sine events each, an index node over them, the spec.
struct SineTree {
    leaves: Vec<LeafNode<Vec<u8>>>,
    index: IndexNode<Vec<u8>>,
    spec: AggregateSpec,
}

fn sine_tree(inline: bool) -> SineTree {
    let schema = StreamSchema::sine();
    let spec = AggregateSpec::default_for(&schema);
    let leaf_layout = LeafLayout::new(&schema, 100).unwrap();
    let index_layout = IndexLayout::new(&spec, inline, 100).unwrap();
    let mut index = IndexNode::init(new_node_buffer(), &index_layout, NodeId::index(0), 1).unwrap();
    let mut leaves = Vec::new();
    for l in 0..5u64 {
        let mut leaf = LeafNode::init(new_node_buffer(), &leaf_layout, NodeId::leaf(l)).unwrap();
        for i in 0..10 {
            // Duplicates across leaf borders; values with exact sums.
            let ts = (l * 10 + i) as i64 / 2;
            leaf.append(&sine_event(ts, ((ts % 7) as f64 - 3.0) * 0.5)).unwrap();
        }
        let aggs = leaf.aggregates(&spec).unwrap();
        index.append(leaf.ts_min(), leaf.id(), Some(&aggs)).unwrap();
        leaves.push(leaf);
    }
    SineTree { leaves, index, spec }
}

#[test]
fn index_entries_carry_key_child_and_inline_aggregates() {
    let SineTree { leaves, mut index, spec } = sine_tree(true);
    assert_eq!(index.len(), 5);
    assert_eq!(index.layout().entry_bytes(), 16 + 168);
    let whole = Aggregates::of_events(&spec, leaves.iter().flat_map(|l| l.iter())).unwrap();
    assert_eq!(index.aggregates().unwrap().unwrap(), whole, "merged entries equal the whole");
    let entry = index.get(2).unwrap().unwrap();
    assert_eq!((entry.key, entry.child), (10, NodeId::leaf(2)));
    assert_eq!(entry.aggregates.unwrap(), leaves[2].aggregates(&spec).unwrap());
    assert_eq!((index.ts_min(), index.ts_max()), (0, 24));
    index.seal();
    index.verify().unwrap();
    let bytes = index.as_bytes();
    assert_eq!(&bytes[64 + 184..64 + 192], &5i64.to_le_bytes(), "key of entry 1 at its documented offset");
    assert_eq!(&bytes[64 + 192..64 + 200], &1u64.to_le_bytes(), "child of entry 1");
    assert_eq!(&bytes[64 + 200..64 + 208], &10u64.to_le_bytes(), "count of entry 1's aggregates");
}

#[test]
fn index_nodes_without_inline_aggregates_store_key_and_child_only() {
    let mut index = sine_tree(false).index;
    assert_eq!(index.layout().entry_bytes(), 16);
    assert_eq!(index.aggregates_at(0).unwrap(), None);
    assert_eq!(index.aggregates().unwrap(), None);
    assert_eq!(index.ts_max(), 24, "the optional aggregates still raise ts_max");
    assert_eq!(index.iter().map(|(_, c)| c.number).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
    index.seal();
    index.verify().unwrap();
    assert_eq!(&index.as_bytes()[64 + 16..64 + 24], &5i64.to_le_bytes());
    assert_eq!(&index.as_bytes()[64 + 24..64 + 32], &1u64.to_le_bytes());
}

#[test]
fn index_search_picks_the_child_to_descend() {
    let index = sine_tree(false).index;
    // keys: 0, 5, 10, 15, 20 (each child also holds its key's duplicates).
    assert_eq!(index.child_for_insert(-3), Some(0));
    assert_eq!(index.child_for_insert(5), Some(1));
    assert_eq!(index.child_for_insert(7), Some(1));
    assert_eq!(index.child_for_insert(99), Some(4));
    assert_eq!(index.child_for_scan_from(5), Some(0), "a 5 may end child 0");
    assert_eq!(index.child_for_scan_from(6), Some(1));
    assert_eq!(index.first_ge(11), Some(3));
    assert_eq!(index.last_le(11), Some(2));
}

#[test]
fn index_updates_keep_keys_sorted_and_aggregates_consistent() {
    let SineTree { leaves, mut index, spec } = sine_tree(true);
    assert!(index.set_key(2, 4).is_err(), "below the previous key");
    assert!(index.set_key(2, 16).is_err(), "above the next key");
    // An out-of-order event with timestamp -1 lands in child 0.
    let mut leaf0 = leaves[0].clone();
    leaf0.insert_ordered(&sine_event(-1, 0.5)).unwrap();
    index.set_aggregates(0, &leaf0.aggregates(&spec).unwrap()).unwrap();
    assert_eq!((index.key_at(0), index.ts_min()), (Some(-1), -1));
    index.widen_ts_max(40);
    assert_eq!(index.ts_max(), 40);
    index.seal();
    index.verify().unwrap();
    // A split child gets a new sibling entry after the equal key.
    let extra = Aggregates::of_events(&spec, [sine_event(10, 1.0).as_slice()]).unwrap();
    assert_eq!(index.insert_ordered(10, NodeId::leaf(9), Some(&extra)).unwrap(), 3);
    assert!(index.append(3, NodeId::leaf(10), Some(&extra)).is_err(), "key below the last");
    assert!(index.append(30, NodeId::index(1), Some(&extra)).is_err(), "children of level 1 are leaves");
    assert!(index.append(30, NodeId::leaf(11), None).is_err(), "inline layouts need aggregates");
    let mismatched = Aggregates::of_events(&spec, [sine_event(31, 1.0).as_slice()]).unwrap();
    assert!(index.append(30, NodeId::leaf(11), Some(&mismatched)).is_err(), "key must be the child's ts_min");
    index.seal();
    index.verify().unwrap();
}

#[test]
fn index_nodes_fill_to_the_fan_out() {
    let spec = AggregateSpec::default_for(&StreamSchema::sine());
    let layout = IndexLayout::new(&spec, false, 100).unwrap();
    let mut index = IndexNode::init(new_node_buffer(), &layout, NodeId::index(3), 2).unwrap();
    for i in 0..457 {
        index.append(i, NodeId::index(100 + i as u64), None).unwrap();
    }
    assert!(index.is_full());
    assert!(matches!(index.append(500, NodeId::index(1), None), Err(EventError::Full { .. })));
    for i in 0..51 {
        index.insert_ordered(i, NodeId::index(1000 + i as u64), None).unwrap();
    }
    assert!(index.is_at_capacity() && index.len() == 508);
    index.seal();
    index.verify().unwrap();
    assert!(IndexNode::init(new_node_buffer(), &layout, NodeId::index(0), 0).is_err(), "level 0 is a leaf");
    assert!(IndexNode::init(new_node_buffer(), &layout, NodeId::leaf(0), 1).is_err());
}

#[test]
fn index_verify_catches_inconsistent_entries() {
    let mut index = sine_tree(true).index;
    index.seal();
    let layout = index.layout().clone();
    let good = index.into_inner();
    let reseal = |bytes: &mut Vec<u8>| {
        let used = 64 + 5 * 184;
        let crc = header::node_crc(bytes, used);
        bytes[56..60].copy_from_slice(&crc.to_le_bytes());
    };
    // Key of entry 1 no longer equals its child's ts_min (CRC fixed up).
    let mut bytes = good.clone();
    bytes[64 + 184..64 + 192].copy_from_slice(&6i64.to_le_bytes());
    reseal(&mut bytes);
    let err = IndexNode::open(bytes.as_slice(), &layout).unwrap().verify().unwrap_err();
    assert!(err.to_string().contains("smallest timestamp"), "{err}");
    // Keys out of order.
    let mut bytes = good.clone();
    bytes[64 + 184..64 + 192].copy_from_slice(&(-4i64).to_le_bytes());
    reseal(&mut bytes);
    assert!(IndexNode::open(bytes.as_slice(), &layout).unwrap().verify().unwrap_err().is_corruption());
    // A child of the wrong kind.
    let mut bytes = good.clone();
    bytes[64 + 8 + 7] |= 0x80;
    reseal(&mut bytes);
    let err = IndexNode::open(bytes.as_slice(), &layout).unwrap().verify().unwrap_err();
    assert!(err.to_string().contains("at level 1"), "{err}");
    // An index node opened with the other layout.
    let other = IndexLayout::new(layout.spec(), false, 100).unwrap();
    assert!(IndexNode::open(good.as_slice(), &other).unwrap_err().is_corruption());
}

#[test]
fn custom_aggregate_specs_shrink_the_entries() {
    let schema = StreamSchema::sine();
    let mut per_attr = vec![AttrAggs::NONE; 6];
    per_attr[0] = AttrAggs { min: true, max: true, sum: false };
    let spec = AggregateSpec::new(&schema, per_attr).unwrap();
    assert_eq!(index_capacity(true, &spec), (8192 - 64) / (16 + 24 + 16));
}

#[derive(Debug, Clone)]
enum Op {
    Append(i64),
    Insert(i64),
}

proptest! {
    /// Any sequence of appends and ordered inserts leaves the leaf equal to
    /// a stable sort of what was accepted, and it seals and verifies.
    #[test]
    fn leaf_matches_a_sorted_model(ops in proptest::collection::vec(
        prop_oneof![(-50i64..50).prop_map(Op::Append), (-50i64..50).prop_map(Op::Insert)], 0..400)
    ) {
        let layout = stock_layout();
        let mut leaf = new_leaf(&layout, 0);
        let mut model: Vec<(i64, i32)> = Vec::new();
        for (seq, op) in ops.iter().enumerate() {
            let seq = seq as i32;
            match *op {
                Op::Append(ts) => {
                    let ok = model.len() < layout.fill_limit() && model.last().is_none_or(|&(t, _)| t <= ts);
                    prop_assert_eq!(leaf.append(&stock(ts, seq)).is_ok(), ok);
                    if ok {
                        model.push((ts, seq));
                    }
                }
                Op::Insert(ts) => {
                    let ok = model.len() < layout.capacity();
                    prop_assert_eq!(leaf.insert_ordered(&stock(ts, seq)).is_ok(), ok);
                    if ok {
                        let pos = model.partition_point(|&(t, _)| t <= ts);
                        model.insert(pos, (ts, seq));
                    }
                }
            }
        }
        let got: Vec<(i64, i32)> = leaf.iter().map(|e| (event::timestamp_of(e), sequence_of(e))).collect();
        prop_assert_eq!(got, model);
        leaf.seal();
        prop_assert!(leaf.verify().is_ok());
    }
}

/// A sealed node image for the smoke test: random events in a leaf, or a
/// random index node, of the schema encoded in front of it.
fn valid_fuzz_input(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let schema = if rng.gen() {
        StreamSchema::stock()
    } else {
        StreamSchema::new(vec![
            Attr::new("x", AttrType::F32),
            Attr::new("ok", AttrType::Bool),
            Attr::new("tag", AttrType::FixedStr(5)),
            Attr::new("n", AttrType::I64),
        ])
        .unwrap()
    };
    let spare_code: u8 = rng.gen_range(0..16);
    let spare = spare_code as u32 * 50;
    let mut input = vec![spare_code << 4];
    input.extend(schema.encode());
    let node = if rng.gen_bool(0.6) {
        let layout = LeafLayout::new(&schema, spare).unwrap();
        let mut leaf =
            LeafNode::init(new_node_buffer(), &layout, NodeId::leaf(rng.gen_range(0..100))).unwrap();
        if rng.gen() {
            leaf.set_prev(Some(NodeId::leaf(1000))).unwrap();
        }
        for _ in 0..rng.gen_range(0..=layout.capacity()) {
            let values = schema
                .attrs()
                .iter()
                .map(|a| match a.ty {
                    AttrType::I32 => Value::I32(rng.gen()),
                    AttrType::F64 => Value::F64(rng.gen()),
                    AttrType::F32 => Value::F32(rng.gen()),
                    AttrType::Bool => Value::Bool(rng.gen()),
                    AttrType::I64 => Value::I64(rng.gen()),
                    AttrType::FixedStr(_) => Value::Str(["", "a", "bcd", "é€"][rng.gen_range(0..4)].into()),
                })
                .collect();
            let bytes = event::encode(&schema, &Event::new(rng.gen_range(-30..30), values)).unwrap();
            leaf.insert_ordered(&bytes).unwrap();
        }
        leaf.seal();
        leaf.into_inner()
    } else {
        let spec = AggregateSpec::default_for(&schema);
        let inline = rng.gen();
        let layout = IndexLayout::new(&spec, inline, spare).unwrap();
        let level = rng.gen_range(1..4);
        let mut index = IndexNode::init(new_node_buffer(), &layout, NodeId::index(7), level).unwrap();
        let child = |n: u64| if level == 1 { NodeId::leaf(n) } else { NodeId::index(n) };
        for n in 0..rng.gen_range(0..=layout.capacity().min(60)) as u64 {
            let key = rng.gen_range(-30..30);
            let mut aggs = Aggregates::empty(&spec);
            if rng.gen() {
                aggs.count = rng.gen_range(1..100);
                aggs.ts_min = key;
                aggs.ts_max = key + rng.gen_range(0..5);
                for a in &mut aggs.attrs {
                    a.min = a.min.map(|_| rng.gen());
                    a.sum = a.sum.map(|_| rng.gen::<f64>() * 1e6);
                }
            }
            index.insert_ordered(key, child(n), Some(&aggs)).unwrap();
        }
        index.seal();
        index.into_inner()
    };
    input.extend(node);
    input
}

/// The fuzz target's entry on 20,000 seeded inputs: random bytes, random
/// bytes behind a valid schema, valid sealed nodes (which must verify and
/// round-trip inside the entry), and valid nodes with 1-4 damaged bytes,
/// half of them with the CRC fixed up so the structural checks run.
#[test]
fn fuzz_smoke_never_panics_and_valid_nodes_round_trip() {
    let seed = 0xE7E4_F022u64;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut verified = 0;
    for case in 0..20_000u32 {
        let input: Vec<u8> = match case % 4 {
            0 => (0..rng.gen_range(0..300)).map(|_| rng.gen()).collect(),
            1 => {
                let mut v = vec![rng.gen::<u8>() | 1];
                v.extend(StreamSchema::sine().encode());
                v.extend(crate::node::header::NODE_MAGIC.to_le_bytes());
                v.extend((0..rng.gen_range(0..2000)).map(|_| rng.gen::<u8>()));
                v
            }
            2 => valid_fuzz_input(&mut rng),
            _ => {
                let mut v = valid_fuzz_input(&mut rng);
                v[0] |= rng.gen::<u8>() & 1;
                let start = v.len() - NODE_BYTES;
                for _ in 0..rng.gen_range(1..5) {
                    let at = start + rng.gen_range(0..(NODE_BYTES / 8));
                    v[at] ^= 1 << rng.gen_range(0..8);
                }
                v
            }
        };
        let outcome = std::panic::catch_unwind(|| fuzz_node_decode(&input));
        assert!(outcome.is_ok(), "seed {seed:#x} case {case}: fuzz_node_decode panicked");
        if case % 4 == 2 {
            // A valid node must verify under the layout it was written with.
            let (schema, used) = StreamSchema::decode_prefix(&input[1..]).unwrap();
            let node = &input[1 + used..];
            let spare = (input[0] >> 4) as u32 * 50;
            let ok = match peek_kind(node).unwrap() {
                crate::ids::NodeKind::Leaf => {
                    LeafNode::open(node, &LeafLayout::new(&schema, spare).unwrap()).unwrap().verify().is_ok()
                }
                crate::ids::NodeKind::Index => {
                    let spec = AggregateSpec::default_for(&schema);
                    let inline = read_header(node).unwrap().flags & header::FLAG_AGGREGATES_INLINE != 0;
                    let layout = IndexLayout::new(&spec, inline, spare).unwrap();
                    IndexNode::open(node, &layout).unwrap().verify().is_ok()
                }
            };
            assert!(ok, "seed {seed:#x} case {case}: a valid node does not verify");
            verified += 1;
        }
    }
    assert_eq!(verified, 5000);
}
