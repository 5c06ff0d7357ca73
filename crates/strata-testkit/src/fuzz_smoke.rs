//! The stable-toolchain smoke test of a fuzz entry whose input is
//! `flags (1) | rest`: flag bit 0 clear means `rest` is a file image, set
//! means `rest` is a recipe the entry builds a valid file from
//! (`block_file::fuzz_block_file_parse`, `manifest::fuzz_manifest_decode`).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Inputs per smoke test.
pub const FUZZ_SMOKE_CASES: u32 = 20_000;

/// Runs `entry` on [`FUZZ_SMOKE_CASES`] inputs seeded by `seed` and asserts
/// it never panics. A quarter each: random images of up to
/// `max_random_bytes`; images from `valid` with 1 to 3 bytes overwritten,
/// then truncated; images from `valid` unchanged, which
/// `check_valid(index, image, context)` checks first; and random recipes of
/// up to `max_recipe_bytes` with flag bits 0 (and maybe 1) set.
pub fn fuzz_smoke_flagged_entry(
    seed: u64,
    valid: &[Vec<u8>],
    max_random_bytes: usize,
    max_recipe_bytes: usize,
    check_valid: impl Fn(usize, &[u8], &str),
    entry: fn(&[u8]),
) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for case in 0..FUZZ_SMOKE_CASES {
        let mut input = vec![0u8];
        match case % 4 {
            0 => input.extend((0..rng.gen_range(0..max_random_bytes)).map(|_| rng.gen::<u8>())),
            1 => {
                let mut file = valid[rng.gen_range(0..valid.len())].clone();
                for _ in 0..rng.gen_range(1..4) {
                    let at = rng.gen_range(0..file.len());
                    file[at] = rng.gen();
                }
                file.truncate(rng.gen_range(0..=file.len()));
                input.extend(file);
            }
            2 => {
                let index = rng.gen_range(0..valid.len());
                check_valid(index, &valid[index], &format!("seed {seed:#x} case {case}"));
                input.extend_from_slice(&valid[index]);
            }
            _ => {
                input[0] = rng.gen_range(0..4u8) | 1;
                input.extend((0..rng.gen_range(0..max_recipe_bytes)).map(|_| rng.gen::<u8>()));
            }
        }
        let outcome = std::panic::catch_unwind(|| entry(&input));
        assert!(outcome.is_ok(), "seed {seed:#x} case {case}: the fuzz entry panicked on {input:?}");
    }
}

#[test]
fn every_kind_of_input_reaches_the_entry() {
    use std::sync::atomic::{AtomicU32, Ordering};
    static RECIPES: AtomicU32 = AtomicU32::new(0);
    static IMAGES: AtomicU32 = AtomicU32::new(0);
    let checked = AtomicU32::new(0);
    fn count(data: &[u8]) {
        let counter = if data[0] & 1 == 1 { &RECIPES } else { &IMAGES };
        counter.fetch_add(1, Ordering::Relaxed);
    }
    let valid = vec![vec![1u8; 10], vec![2u8; 20]];
    fuzz_smoke_flagged_entry(
        1,
        &valid,
        50,
        50,
        |index, image, _| {
            assert_eq!(image, valid[index].as_slice());
            checked.fetch_add(1, Ordering::Relaxed);
        },
        count,
    );
    assert_eq!(checked.load(Ordering::Relaxed), FUZZ_SMOKE_CASES / 4);
    assert_eq!(RECIPES.load(Ordering::Relaxed), FUZZ_SMOKE_CASES / 4);
    assert_eq!(IMAGES.load(Ordering::Relaxed), 3 * FUZZ_SMOKE_CASES / 4);
}
