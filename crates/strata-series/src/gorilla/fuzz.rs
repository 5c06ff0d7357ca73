//! The fuzz entry for block decoding (`fuzz/fuzz_targets/block_decode.rs`)
//! and its stable-Rust smoke test: arbitrary bytes must decode to an error or
//! to a block that re-encodes and decodes to the same values.

use super::block::{decode_block, decode_timestamps, encode_points};

/// Decodes `data` as a block; if it decodes, checks the block is consistent,
/// that `decode_timestamps` agrees, and that re-encoding decodes to the same
/// values (floats by bits) and is deterministic. Panics only when one of
/// these checks fails, which is a codec bug.
pub fn fuzz_block_decode(data: &[u8]) {
    let timestamps_only = decode_timestamps(data);
    let Ok(block) = decode_block(data) else {
        return;
    };
    assert_eq!(block.timestamps.len(), block.values.len(), "timestamps and values differ in count");
    assert_eq!(block.values.field_type(), block.field_type, "values of another type than the header's");
    assert_eq!(
        timestamps_only.as_ref().ok(),
        Some(&block.timestamps),
        "decode_timestamps disagrees with decode_block"
    );
    let again = encode_points(block.field_type, &block.clone().into_points())
        .expect("decoded values have the block's own type");
    let back = decode_block(&again).expect("a re-encoded block decodes");
    assert!(back.same_bits(&block), "re-encoded block decodes to other values");
    let third = encode_points(back.field_type, &back.into_points()).expect("same type");
    assert_eq!(third, again, "encoding the same points twice gave different bytes");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gorilla::block::BlockWriter;
    use crate::model::{FieldType, FieldValue};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const SEED: u64 = 0x5EED_B10C;
    const CASES: usize = 20_000;

    const TYPES: [FieldType; 5] =
        [FieldType::Float, FieldType::Integer, FieldType::Unsigned, FieldType::Boolean, FieldType::String];

    fn random_value(rng: &mut ChaCha8Rng, ft: FieldType, i: i64) -> FieldValue {
        match ft {
            FieldType::Float => FieldValue::Float(match rng.gen_range(0..4) {
                0 => f64::from_bits(rng.gen()),
                1 => 20.0 + (i / 3) as f64 * 0.5,
                2 => f64::NAN,
                _ => rng.gen_range(-1e6..1e6),
            }),
            FieldType::Integer => FieldValue::Integer(match rng.gen_range(0..3) {
                0 => rng.gen(),
                1 => i * 7,
                _ => rng.gen_range(-300..300),
            }),
            FieldType::Unsigned => FieldValue::Unsigned(if rng.gen() { rng.gen() } else { i as u64 * 3 }),
            FieldType::Boolean => FieldValue::Boolean(rng.gen()),
            FieldType::String => {
                let n = rng.gen_range(0..6);
                FieldValue::String(
                    ["", "ok", "fail", "日本", "🦀x", "long string value"][n].repeat(rng.gen_range(1..3)),
                )
            }
        }
    }

    /// A valid block of random type and 0..60 points of mixed regularity.
    fn valid_block(rng: &mut ChaCha8Rng) -> (FieldType, Vec<u8>) {
        let ft = TYPES[rng.gen_range(0..TYPES.len())];
        let mut w = BlockWriter::new(ft);
        let mut ts: i64 = rng.gen_range(-1 << 40..1 << 62);
        for i in 0..rng.gen_range(0..60) {
            ts = ts.wrapping_add(match rng.gen_range(0..5) {
                0 => rng.gen(),
                1 => rng.gen_range(-3000..3000),
                _ => 10_000_000_000,
            });
            w.push(ts, &random_value(rng, ft, i)).unwrap();
        }
        (ft, w.to_bytes())
    }

    fn mutate(rng: &mut ChaCha8Rng, bytes: &mut Vec<u8>) {
        for _ in 0..rng.gen_range(1..4) {
            match rng.gen_range(0..5) {
                0 if !bytes.is_empty() => {
                    let at = rng.gen_range(0..bytes.len());
                    bytes[at] ^= 1 << rng.gen_range(0..8);
                }
                1 if !bytes.is_empty() => {
                    let at = rng.gen_range(0..bytes.len());
                    bytes[at] = rng.gen();
                }
                2 => bytes.truncate(rng.gen_range(0..=bytes.len())),
                3 => {
                    let at = rng.gen_range(0..=bytes.len());
                    bytes.insert(at, rng.gen());
                }
                _ if !bytes.is_empty() => {
                    bytes.remove(rng.gen_range(0..bytes.len()));
                }
                _ => {}
            }
        }
    }

    #[test]
    fn fuzz_smoke_random_and_mutated_blocks_never_panic() {
        let mut rng = ChaCha8Rng::seed_from_u64(SEED);
        let mut decoded = 0;
        for case in 0..CASES {
            let (ft, valid) = valid_block(&mut rng);
            let input = match case % 4 {
                0 => {
                    // A valid block must decode and round-trip.
                    let block = decode_block(&valid)
                        .unwrap_or_else(|e| panic!("case {case}, seed {SEED:#x}: valid block rejected: {e}"));
                    assert_eq!(block.field_type, ft, "case {case}, seed {SEED:#x}");
                    valid
                }
                1 => {
                    let len = rng.gen_range(0..80);
                    let mut random: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                    if len >= 2 {
                        // A plausible version and type, so decoding goes past the header.
                        random[0] = 1;
                        random[1] = rng.gen_range(1..=5);
                    }
                    random
                }
                _ => {
                    let mut bytes = valid;
                    mutate(&mut rng, &mut bytes);
                    bytes
                }
            };
            let outcome = std::panic::catch_unwind(|| fuzz_block_decode(&input));
            assert!(outcome.is_ok(), "case {case}, seed {SEED:#x}: fuzz entry panicked on {input:02x?}");
            decoded += decode_block(&input).is_ok() as usize;
        }
        // Every valid case decodes, and some mutated ones still do.
        assert!(decoded > CASES / 4, "only {decoded} of {CASES} inputs decoded");
    }
}
