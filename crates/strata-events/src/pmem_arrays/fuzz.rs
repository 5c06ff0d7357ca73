//! The fuzz entry of the PMem arrays: open an array over arbitrary area bytes,
//! read it, write it, and check that nothing panics and that what opens
//! behaves (the cargo-fuzz target `events_pmem_arrays` is a one-liner over
//! [`fuzz_open_arrays`]; the smoke test below runs it on stable).
//!
//! Input: `flags (1) | area bytes...`. Flag bit 0 rewrites the header CRC as
//! the format document specifies it, so inputs get past the CRC to the field
//! checks; bit 1 selects the index node array (else the aggregate array).

use std::sync::Arc;

use strata_pmem::{Region, RegionOffset};

use super::header::{header_crc, HEADER_BYTES, HEADER_OFFSET_CRC};
use super::{AggregateArray, IndexNodeArray};

/// What [`fuzz_open_arrays`] found.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ArraysFuzzOutcome {
    pub opened: bool,
    /// Aggregate slots or index nodes that read back (among the first 256).
    pub valid: u64,
    /// Slots whose read reported `Corruption`.
    pub corrupt: u64,
}

/// Largest area the entry builds (bigger inputs are cut).
const MAX_FUZZ_AREA_BYTES: usize = 1 << 20;
/// Slots or nodes read per input.
const MAX_READS: u64 = 256;

/// Fuzz entry; panics only on a bug (see the module comment for the input).
pub fn fuzz_open_arrays(data: &[u8]) -> ArraysFuzzOutcome {
    let Some((&flags, rest)) = data.split_first() else { return ArraysFuzzOutcome::default() };
    let mut image = rest[..rest.len().min(MAX_FUZZ_AREA_BYTES)].to_vec();
    image.resize(image.len().div_ceil(8) * 8, 0);
    if flags & 1 != 0 && image.len() >= HEADER_BYTES as usize {
        let mut header = [0u8; HEADER_BYTES as usize];
        header.copy_from_slice(&image[..HEADER_BYTES as usize]);
        let crc = header_crc(&header);
        let at = HEADER_OFFSET_CRC as usize;
        image[at..at + 4].copy_from_slice(&crc.to_le_bytes());
    }
    let area_bytes = image.len() as u64;
    let region = Arc::new(Region::sim_from_image(image));
    if flags & 2 == 0 {
        fuzz_aggregates(region, area_bytes)
    } else {
        fuzz_index_nodes(region, area_bytes)
    }
}

fn fuzz_aggregates(region: Arc<Region>, area_bytes: u64) -> ArraysFuzzOutcome {
    let mut out = ArraysFuzzOutcome::default();
    let Ok(array) = AggregateArray::open(region, RegionOffset::ZERO, area_bytes) else { return out };
    out.opened = true;
    assert!(array.capacity() >= 1);
    assert_eq!(array.stride_bytes(), array.layout().stride_bytes(array.record_bytes()));
    for i in 0..array.capacity().min(MAX_READS) {
        match array.get(i) {
            Ok(Some(record)) => {
                assert_eq!(record.len() as u64, array.record_bytes());
                out.valid += 1;
            }
            Ok(None) => {}
            Err(e) => {
                assert!(e.is_corruption(), "slot {i}: {e}");
                out.corrupt += 1;
            }
        }
    }
    // Whatever the slot held, a write makes it read back.
    let last = array.capacity() - 1;
    let record: Vec<u8> = (0..array.record_bytes()).map(|b| b as u8 ^ 0x5a).collect();
    for i in [0, last] {
        array.set(i, &record).expect("set on an opened array");
        assert_eq!(array.get(i).expect("get after set"), Some(record.clone()), "slot {i}");
    }
    out
}

fn fuzz_index_nodes(region: Arc<Region>, area_bytes: u64) -> ArraysFuzzOutcome {
    let mut out = ArraysFuzzOutcome::default();
    let Ok(array) = IndexNodeArray::open(region, RegionOffset::ZERO, area_bytes) else { return out };
    out.opened = true;
    assert!(array.node_count() <= array.capacity());
    for i in 0..array.node_count().min(MAX_READS) {
        let node = array.read_node(i).expect("read of a counted node");
        assert_eq!(node.len() as u64, array.node_bytes());
        out.valid += 1;
    }
    let count = array.node_count();
    let bytes = [0xA5u8; 16];
    if count < array.capacity() {
        array.write_node(count, &bytes).expect("create the next node");
        assert_eq!(array.node_count(), count + 1);
    } else {
        assert!(array.write_node(count, &bytes).is_err(), "a full array accepted a node");
    }
    if array.node_count() > 0 {
        let i = array.node_count() - 1;
        array.write_range(i, array.node_bytes() - 8, &[7; 8]).expect("write inside a node");
        array.persist_range(i, 0..array.node_bytes()).expect("persist a whole node");
        let mut tail = [0u8; 8];
        array.read_range(i, array.node_bytes() - 8, &mut tail).expect("read inside a node");
        assert_eq!(tail, [7; 8]);
    }
    out
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::super::SlotLayout;
    use super::*;

    /// A valid formatted area image (with some slots or nodes written).
    fn valid_image(index_nodes: bool, variant: u64) -> (Vec<u8>, u64) {
        let region = Arc::new(Region::sim(4096));
        let written = variant % 5;
        if index_nodes {
            let a = IndexNodeArray::format(region.clone(), RegionOffset::ZERO, 4096, 512).unwrap();
            for i in 0..written {
                a.write_node(i, &[i as u8 + 1; 40]).unwrap();
            }
        } else {
            let layout = if variant.is_multiple_of(2) { SlotLayout::Dense } else { SlotLayout::Aligned };
            let a =
                AggregateArray::format(region.clone(), RegionOffset::ZERO, 4096, 20 + variant % 50, layout)
                    .unwrap();
            for i in 0..written {
                a.set(i * 3, &vec![i as u8; a.record_bytes() as usize]).unwrap();
            }
        }
        (region.as_sim().unwrap().persistent_image(), written)
    }

    #[test]
    fn fuzz_smoke_never_panics_and_valid_areas_open_with_their_contents() {
        let seed = 0xA66A_44A7;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut opened = 0;
        for case in 0..20_000u64 {
            let index_nodes = rng.gen_bool(0.5);
            let flags = u8::from(rng.gen_bool(0.7)) | (u8::from(index_nodes) << 1);
            let mut input = vec![flags];
            match case % 4 {
                0 => {
                    let len = rng.gen_range(0..600);
                    input.extend((0..len).map(|_| rng.gen::<u8>()));
                }
                1 => {
                    let (image, written) = valid_image(index_nodes, case);
                    input.extend_from_slice(&image);
                    let out = fuzz_open_arrays(&input);
                    assert!(out.opened, "seed {seed:#x} case {case}: a valid area did not open");
                    assert_eq!((out.valid, out.corrupt), (written, 0), "seed {seed:#x} case {case}");
                    opened += 1;
                    continue;
                }
                _ => {
                    // A valid image with a few bytes changed, mostly in the header.
                    let (mut image, _) = valid_image(index_nodes, case);
                    for _ in 0..rng.gen_range(1..4) {
                        let at = if rng.gen_bool(0.7) {
                            rng.gen_range(0..64)
                        } else {
                            rng.gen_range(0..image.len())
                        };
                        image[at] = rng.gen();
                    }
                    if rng.gen_bool(0.1) {
                        image.truncate(rng.gen_range(0..image.len()));
                    }
                    input.extend_from_slice(&image);
                }
            }
            if fuzz_open_arrays(&input).opened {
                opened += 1;
            }
        }
        assert!(opened >= 5_000, "seed {seed:#x}: only {opened} inputs opened");
    }
}
