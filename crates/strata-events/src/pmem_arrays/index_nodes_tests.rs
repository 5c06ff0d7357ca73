//! Tests of [`IndexNodeArray`]: a seeded random model test, creation order,
//! capacity and size errors, header corruption, slot placement, persist
//! costs, and writes confined to the area.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_pmem::{Region, RegionOffset, CACHE_LINE_BYTES};

use super::{index_number, IndexNodeArray, HEADER_BYTES, NODE_COUNT_OFFSET};
use crate::ids::{EventError, NodeId};

fn sim(len: u64) -> Arc<Region> {
    Arc::new(Region::sim(len))
}

#[test]
fn random_creates_writes_persists_and_reopens_match_a_model() {
    let seed = 0x1D70_DE55;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let node_bytes = 512u64;
    let region = sim(64 * 1024);
    let base = RegionOffset(1024);
    let area_bytes = IndexNodeArray::area_bytes_for(40, node_bytes).unwrap();
    let mut array = IndexNodeArray::format(region.clone(), base, area_bytes, node_bytes).unwrap();
    assert_eq!(array.capacity(), 40);
    // The volatile view: what reads return (this test never crashes).
    let mut model: Vec<Vec<u8>> = Vec::new();
    for step in 0..3000 {
        let ctx = format!("seed {seed:#x} step {step}");
        match rng.gen_range(0..100) {
            0..=9 if (model.len() as u64) < array.capacity() => {
                let len = rng.gen_range(0..=node_bytes as usize);
                let bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                let i = model.len() as u64;
                array.write_node(i, &bytes).unwrap();
                // The rest of a new slot is whatever it held before.
                let mut node = region.read_vec(array.node_offset(i).unwrap(), node_bytes as usize);
                node[..len].copy_from_slice(&bytes);
                model.push(node);
            }
            10..=19 if !model.is_empty() => {
                let i = rng.gen_range(0..model.len());
                let len = rng.gen_range(0..=node_bytes as usize);
                let bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                array.write_node(i as u64, &bytes).unwrap();
                model[i][..len].copy_from_slice(&bytes);
            }
            20..=49 if !model.is_empty() => {
                let i = rng.gen_range(0..model.len());
                let off = rng.gen_range(0..node_bytes as usize);
                let len = rng.gen_range(0..=(node_bytes as usize - off).min(64));
                let bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                array.write_range(i as u64, off as u64, &bytes).unwrap();
                model[i][off..off + len].copy_from_slice(&bytes);
                if rng.gen_bool(0.5) {
                    array.persist_ranges(i as u64, &[0..16, off as u64..(off + len) as u64]).unwrap();
                }
            }
            50..=52 => {
                drop(array);
                array = IndexNodeArray::open(region.clone(), base, area_bytes).unwrap();
                assert_eq!(array.node_count(), model.len() as u64, "{ctx}");
            }
            53..=79 if !model.is_empty() => {
                let i = rng.gen_range(0..model.len());
                let off = rng.gen_range(0..node_bytes as usize);
                let mut buf = vec![0u8; rng.gen_range(0..=node_bytes as usize - off)];
                array.read_range(i as u64, off as u64, &mut buf).unwrap();
                assert_eq!(buf, model[i][off..off + buf.len()], "{ctx}: node {i} at {off}");
            }
            _ => {
                if let Some(i) = (!model.is_empty()).then(|| rng.gen_range(0..model.len())) {
                    assert_eq!(array.read_node(i as u64).unwrap(), model[i], "{ctx}: node {i}");
                }
            }
        }
        assert_eq!(array.node_count(), model.len() as u64, "{ctx}");
    }
    assert!(model.len() >= 30, "seed {seed:#x}: the test created only {} nodes", model.len());
}

#[test]
fn nodes_are_created_in_order_and_capacity_is_enforced() {
    let region = sim(16384);
    let a = IndexNodeArray::format(
        region,
        RegionOffset(0),
        IndexNodeArray::area_bytes_for(3, 1024).unwrap(),
        1024,
    )
    .unwrap();
    assert_eq!((a.capacity(), a.node_count()), (3, 0));
    let err = a.write_node(1, &[1; 8]).unwrap_err();
    assert!(err.to_string().contains("the next is 0"), "{err}");
    assert!(a.write_range(0, 0, &[1]).unwrap_err().to_string().contains("does not exist"));
    assert!(a.read_node(0).is_err() && a.persist_range(0, 0..8).is_err());
    for i in 0..3 {
        a.write_node(i, &[i as u8 + 1; 20]).unwrap();
    }
    let err = a.write_node(3, &[4; 20]).unwrap_err();
    assert!(matches!(err, EventError::Full { .. }) && err.to_string().contains("3 nodes"), "{err}");
    assert!(matches!(a.write_node(0, &[0; 1025]), Err(EventError::InvalidInput(_))), "longer than a node");
    assert!(a.write_range(2, 1020, &[0; 5]).is_err());
    assert!(a.write_range(2, u64::MAX, &[0; 5]).is_err(), "offset overflow");
    assert!(a.persist_ranges(2, &[0..8, 1000..1025]).is_err());
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = 8..0;
    assert!(a.persist_range(2, reversed).is_err());
    assert!(a.node_offset(3).is_err());
    a.write_node(1, &[9; 10]).unwrap();
    assert_eq!(&a.read_node(1).unwrap()[..20], &[[9u8; 10].as_slice(), &[2; 10]].concat()[..]);
    for bad in [0, 100, 96, MAX_PLUS] {
        assert!(IndexNodeArray::area_bytes_for(1, bad).is_err(), "node size {bad}");
    }
    assert!(IndexNodeArray::format(sim(4096), RegionOffset(0), 300, 512).is_err(), "area too small");
    assert_eq!(index_number(NodeId::index(7)).unwrap(), 7);
    assert!(index_number(NodeId::leaf(7)).unwrap_err().to_string().contains("leaf"));
}

const MAX_PLUS: u64 = super::MAX_NODE_BYTES + 64;

#[test]
fn node_slots_start_on_cache_lines_and_media_blocks() {
    let a = IndexNodeArray::format(sim(1 << 20), RegionOffset(4096), 1 << 19, 8192).unwrap();
    assert_eq!(a.capacity(), ((1 << 19) - 256) / 8192);
    for i in 0..a.capacity() {
        let at = a.node_offset(i).unwrap();
        assert!(at.is_aligned(CACHE_LINE_BYTES) && at.is_aligned(256), "node {i} at {at}");
    }
}

#[test]
fn corrupted_header_or_node_count_is_a_corruption_error() {
    let region = sim(8192);
    let a = IndexNodeArray::format(region.clone(), RegionOffset(0), 8192, 1024).unwrap();
    a.write_node(0, &[1; 64]).unwrap();
    for at in 0..HEADER_BYTES {
        let old = region.read_vec(RegionOffset(at), 1)[0];
        region.write(RegionOffset(at), &[old ^ 0x01]);
        let err = IndexNodeArray::open(region.clone(), RegionOffset(0), 8192).err();
        assert!(err.as_ref().is_some_and(EventError::is_corruption), "byte {at}: {err:?}");
        region.write(RegionOffset(at), &[old]);
    }
    assert_eq!(IndexNodeArray::open(region.clone(), RegionOffset(0), 8192).unwrap().node_count(), 1);
    region.store_u64(RegionOffset(NODE_COUNT_OFFSET), 8);
    let err = IndexNodeArray::open(region.clone(), RegionOffset(0), 8192).err().unwrap();
    assert!(err.is_corruption() && err.to_string().contains("exceeds the capacity"), "{err}");
    let err = IndexNodeArray::open(sim(8192), RegionOffset(0), 8192).err().unwrap();
    assert!(err.is_corruption() && err.to_string().contains("never formatted"), "{err}");
}

#[test]
fn persist_ranges_flush_only_what_they_name_with_one_fence() {
    let a = IndexNodeArray::format(sim(65536), RegionOffset(0), 65536, 8192).unwrap();
    let c0 = a.counters();
    a.write_node(0, &[0; 20]).unwrap();
    let c1 = a.counters();
    assert_eq!(
        (c1.fences - c0.fences, c1.lines_flushed - c0.lines_flushed),
        (2, 2),
        "node line + count line"
    );
    a.write_range(0, 20, &[1; 16]).unwrap();
    a.write_range(0, 4000, &[2; 16]).unwrap();
    a.persist_ranges(0, &[0..36, 4000..4016]).unwrap();
    let c2 = a.counters();
    assert_eq!((c2.fences - c1.fences, c2.lines_flushed - c1.lines_flushed), (1, 2));
    assert_eq!(c2.bytes_persisted - c1.bytes_persisted, 52);
    assert_eq!(c2.writes - c1.writes, 2);
    let before = a.counters();
    a.write_node(0, &[5; 8192]).unwrap();
    assert_eq!(a.counters().lines_flushed - before.lines_flushed, 128, "a whole 8 KiB node");
}

#[test]
fn writes_stay_inside_the_area() {
    let region = sim(32768);
    region.write(RegionOffset(0), &[0xEE; 8192]);
    region.write(RegionOffset(16384), &[0xEE; 16384]);
    let a = IndexNodeArray::format(region.clone(), RegionOffset(8192), 8192, 1024).unwrap();
    for i in 0..a.capacity() {
        a.write_node(i, &[0x11; 1024]).unwrap();
        a.write_range(i, 1000, &[0x22; 24]).unwrap();
        a.persist_range(i, 0..1024).unwrap();
    }
    assert!(region.read_vec(RegionOffset(0), 8192).iter().all(|b| *b == 0xEE));
    assert!(region.read_vec(RegionOffset(16384), 16384).iter().all(|b| *b == 0xEE));
    assert_eq!(a.read_node(a.capacity() - 1).unwrap()[1000..], [0x22; 24]);
}
