//! Compression of the series Gorilla was made for: the smooth-series bound of
//! the acceptance, and the costs of regular series of other types.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::gorilla::{decode_block, BlockWriter};
use crate::model::{FieldType, FieldValue};

const SEED: u64 = 0x5300_7411;
/// A Gorilla-sized block: two hours at one point per 10 s.
const POINTS: usize = 720;
const INTERVAL_NS: i64 = 10_000_000_000;
const START_NS: i64 = 1_700_000_000_000_000_000;

/// "Smooth": a gauge sampled every 10 s (timestamps exact in ns) that holds
/// its value for 1 to 5 points, then moves by +0.5 or -0.5, staying within
/// [10, 90] (a temperature or a utilisation percentage).
fn smooth_gauge(seed: u64, points: usize) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut value = 42.0f64;
    let mut hold = 0;
    (0..points)
        .map(|_| {
            if hold == 0 {
                hold = rng.gen_range(1..=5);
                let step = if rng.gen() { 0.5 } else { -0.5 };
                value = (value + step).clamp(10.0, 90.0);
            }
            hold -= 1;
            value
        })
        .collect()
}

#[test]
fn smooth_float_series_compresses_to_at_most_two_bytes_per_point() {
    for seed in SEED..SEED + 8 {
        let values = smooth_gauge(seed, POINTS);
        let mut w = BlockWriter::new(FieldType::Float);
        for (i, v) in values.iter().enumerate() {
            w.push(START_NS + i as i64 * INTERVAL_NS, &FieldValue::Float(*v)).unwrap();
        }
        let bytes = w.to_bytes();
        let bytes_per_point = bytes.len() as f64 / POINTS as f64;
        println!("seed {seed:#x}: {bytes_per_point:.3} bytes per point");
        assert!(
            bytes_per_point <= 2.0,
            "seed {seed:#x}: {bytes_per_point:.3} bytes per point (header included)"
        );
        let block = decode_block(&bytes).unwrap();
        assert_eq!(block.len(), POINTS, "seed {seed:#x}");
        assert_eq!(block.value(POINTS - 1), FieldValue::Float(values[POINTS - 1]), "seed {seed:#x}");
    }
}

#[test]
fn regular_timestamps_with_constant_values_cost_about_two_bits_per_point() {
    let cases = [
        (FieldType::Float, FieldValue::Float(1.5)),
        (FieldType::Integer, FieldValue::Integer(-3)),
        (FieldType::Unsigned, FieldValue::Unsigned(7)),
        (FieldType::String, FieldValue::String("idle".into())),
    ];
    for (ft, value) in cases {
        let mut w = BlockWriter::new(ft);
        for i in 0..POINTS as i64 {
            w.push(START_NS + i * INTERVAL_NS, &value).unwrap();
        }
        // Fixed cost: header, first timestamp, escaped first delta, first value.
        let per_point_bits = (w.encoded_bytes() as f64 * 8.0 - 300.0) / POINTS as f64;
        assert!(per_point_bits <= 2.0, "{ft:?}: {per_point_bits:.3} bits per point");
    }
}

#[test]
fn booleans_cost_one_bit_of_value_per_point() {
    let mut w = BlockWriter::new(FieldType::Boolean);
    for i in 0..POINTS as i64 {
        w.push(START_NS + i * INTERVAL_NS, &FieldValue::Boolean(i % 3 == 0)).unwrap();
    }
    // Timestamps 64 + 100 + 718 bits (111 bytes); values 720 bits. Header:
    // version, type, count 720 (2-byte varint), 111 (1-byte varint).
    let ts_bytes = (64 + 100 + 718usize).div_ceil(8);
    assert_eq!(w.encoded_bytes(), 5 + ts_bytes + POINTS / 8);
}
