//! Corrupt blocks: every truncation of a valid block is an error, and every
//! single-bit flip gives an error or a consistent block, never a panic.

use crate::gorilla::{decode_block, decode_timestamps, encode_points, CodecError};
use crate::model::{FieldType, FieldValue};

fn sample_blocks() -> Vec<(FieldType, Vec<u8>)> {
    let ts = |i: i64| 1_700_000_000_000_000_000 + i * 10_000_000_000 + (i % 3) * 7;
    let mut blocks = Vec::new();
    let mut add = |ft: FieldType, f: &dyn Fn(i64) -> FieldValue| {
        let points: Vec<_> = (0..24).map(|i| (ts(i), f(i))).collect();
        blocks.push((ft, encode_points(ft, &points).unwrap()));
    };
    add(FieldType::Float, &|i| FieldValue::Float(20.0 + (i / 3) as f64 * 0.5));
    add(FieldType::Integer, &|i| FieldValue::Integer(i * i - 100));
    add(FieldType::Unsigned, &|i| FieldValue::Unsigned(u64::MAX - i as u64 * 1000));
    add(FieldType::Boolean, &|i| FieldValue::Boolean(i % 5 == 1));
    add(FieldType::String, &|i| FieldValue::String(["up", "down", "ünknown", ""][i as usize % 4].into()));
    blocks
}

#[test]
fn every_truncation_of_a_valid_block_is_an_error() {
    for (ft, bytes) in sample_blocks() {
        assert!(decode_block(&bytes).is_ok(), "{ft:?}");
        for len in 0..bytes.len() {
            let err = decode_block(&bytes[..len]);
            assert!(matches!(err, Err(CodecError::Corrupt(_))), "{ft:?} truncated to {len}: {err:?}");
        }
    }
}

#[test]
fn every_bit_flip_gives_an_error_or_a_consistent_block() {
    for (ft, bytes) in sample_blocks() {
        let (mut errors, mut decoded) = (0, 0);
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 0x80 >> (bit % 8);
            match decode_block(&flipped) {
                Ok(block) => {
                    assert_eq!(block.timestamps.len(), block.values.len(), "{ft:?} bit {bit}");
                    assert_eq!(block.values.field_type(), block.field_type, "{ft:?} bit {bit}");
                    decoded += 1;
                }
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    errors += 1;
                }
            }
            let _ = decode_timestamps(&flipped);
        }
        assert_eq!(errors + decoded, bytes.len() * 8);
        // Version and length fields are checked, so some flips must fail.
        assert!(errors >= 8, "{ft:?}: only {errors} flips detected");
    }
}

#[test]
fn a_huge_claimed_point_count_fails_without_allocating() {
    // 2^60 points claimed, with a one-byte timestamp stream.
    let mut bytes = vec![1, 1];
    let mut count = 1u64 << 60;
    while count >= 0x80 {
        bytes.push(count as u8 | 0x80);
        count >>= 7;
    }
    bytes.push(count as u8);
    bytes.extend_from_slice(&[1, 0, 0]);
    assert!(matches!(decode_block(&bytes), Err(CodecError::Corrupt(_))));
    // A count the timestamp stream allows but the value stream cannot hold.
    let ts_only = encode_points(
        FieldType::Boolean,
        &(0..4000).map(|i| (i, FieldValue::Boolean(true))).collect::<Vec<_>>(),
    )
    .unwrap();
    let (_, header_len) = crate::gorilla::header::BlockHeader::parse(&ts_only).unwrap();
    let mut cut = ts_only.clone();
    cut.truncate(header_len + (ts_only.len() - header_len - 500));
    let err = decode_block(&cut).unwrap_err();
    assert!(err.to_string().contains("cannot hold"), "{err}");
}
