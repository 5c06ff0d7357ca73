//! Fuzz smoke (stable toolchain) of [`super::catalog::fuzz_catalog_decode`]:
//! 20,000 seeded inputs (random bytes, mutated valid catalogs with and
//! without the CRC fixed up, valid catalogs) never panic, and valid
//! catalogs round-trip.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_events::schema::{Attr, AttrType, StreamSchema};

use super::catalog::{fuzz_catalog_decode, Catalog, Placement};

const SEED: u64 = 0x5EED_CA7A;
const CASES: u32 = 20_000;

fn valid_catalog(i: usize) -> Catalog {
    let schema = match i % 3 {
        0 => StreamSchema::stock(),
        1 => StreamSchema::sine(),
        _ => StreamSchema::new(vec![Attr::new("ok", AttrType::Bool), Attr::new("s", AttrType::FixedStr(9))])
            .unwrap(),
    };
    Catalog {
        db: format!("db{i}"),
        name: "stock_1.a-b".into(),
        schema,
        placement: if i.is_multiple_of(2) { Placement::Pmem } else { Placement::Ssd },
        flank_batch_events: 25,
        max_leaf_nodes: 1 << 18,
        max_index_nodes: 1 << 14,
        queue_capacity_bytes: 4 << 20,
        region_bytes: 10 << 20,
        created_unix_ns: 1_600_000_000_000_000_000 + i as u64,
    }
}

#[test]
fn catalog_decode_fuzz_smoke() {
    let valid: Vec<Vec<u8>> = (0..6).map(|i| valid_catalog(i).encode()).collect();
    for (i, bytes) in valid.iter().enumerate() {
        assert_eq!(Catalog::decode(bytes).unwrap(), valid_catalog(i), "seed {SEED:#x}: round trip {i}");
    }
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let mut decoded = 0;
    for case in 0..CASES {
        let mut input = vec![rng.gen::<u8>() & 1];
        match case % 3 {
            0 => input.extend((0..rng.gen_range(0..200)).map(|_| rng.gen::<u8>())),
            1 => {
                let mut file = valid[rng.gen_range(0..valid.len())].clone();
                for _ in 0..rng.gen_range(1..4) {
                    let at = rng.gen_range(0..file.len());
                    file[at] = rng.gen();
                }
                if rng.gen_bool(0.3) {
                    file.truncate(rng.gen_range(0..=file.len()));
                }
                input.extend(file);
            }
            _ => input.extend(valid[rng.gen_range(0..valid.len())].iter()),
        }
        let ok = Catalog::decode(&input[1..]).is_ok();
        decoded += ok as u32;
        let outcome = std::panic::catch_unwind(|| fuzz_catalog_decode(&input));
        assert!(outcome.is_ok(), "seed {SEED:#x}, case {case}: the entry panicked on {input:?}");
    }
    assert!(decoded >= CASES / 3, "seed {SEED:#x}: the valid third decodes ({decoded})");
}
