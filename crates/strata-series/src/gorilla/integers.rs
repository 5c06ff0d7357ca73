//! The integer and unsigned value streams, and the variable-length unsigned
//! code they share with string lengths. Format: `docs/format/series-block.md`,
//! "Integer and unsigned values".
//!
//! The first value is written raw in 64 bits (an unsigned value as its bits
//! reinterpreted as i64). Each later value writes the zigzag of its wrapping
//! delta-of-delta (the delta before the second value is 0) with the
//! variable-length code `write_uvar`, built like the timestamp buckets
//! (`delta`):
//!
//! | control | value bits | z range |
//! |---|---|---|
//! | `0` | 0 | 0 |
//! | `10` | 7 | [0, 2^7) |
//! | `110` | 9 | [0, 2^9) |
//! | `1110` | 12 | [0, 2^12) |
//! | `11110` | 32 | [0, 2^32) |
//! | `11111` | 64 | any |
//!
//! Wrapping arithmetic makes every i64/u64 sequence round-trip; a counter
//! that grows steadily costs one bit per value.

use super::bits::{BitReader, BitWriter};
use super::delta::{decode_delta_of_delta_stream, read_bucket, write_in_bucket, Bucket, DeltaOfDelta};
use super::error::CodecError;
use super::stream::Stream;

/// Bits of the first value.
pub const INT_FIRST_BITS: u32 = 64;
/// The buckets of `write_uvar` for a nonzero value: (control code, control bits, value bits).
pub const UVAR_BUCKETS: [Bucket; 5] =
    [(0b10, 2, 7), (0b110, 3, 9), (0b1110, 4, 12), (0b11110, 5, 32), (0b11111, 5, 64)];

/// Maps signed to unsigned so that small magnitudes get small codes:
/// 0, -1, 1, -2, 2 ... become 0, 1, 2, 3, 4 ...
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
pub fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Writes `z` in the first bucket that holds it (`0` alone for zero).
#[inline]
pub(crate) fn write_uvar(w: &mut BitWriter, z: u64) {
    if z == 0 {
        w.write_bits(0, 1);
        return;
    }
    let written =
        write_in_bucket(w, &UVAR_BUCKETS, z, |value_bits| value_bits == 64 || z < 1u64 << value_bits);
    debug_assert!(written, "the 64-bit bucket holds any value");
}

/// Reads a value written by `write_uvar`.
#[inline]
pub(crate) fn read_uvar(r: &mut BitReader<'_>) -> Result<u64, CodecError> {
    match read_bucket(r, &UVAR_BUCKETS)? {
        None => Ok(0),
        Some(bucket) => r.read_bits(UVAR_BUCKETS[bucket].2),
    }
}

/// The open integer stream of a block (integer or unsigned values, the latter
/// as their bits reinterpreted as i64).
pub type IntegerStream = Stream<IntegerState>;

/// The integer stream's encoder state: the previous value and delta.
#[derive(Copy, Clone, Debug, Default)]
pub struct IntegerState(DeltaOfDelta);

impl IntegerStream {
    #[inline]
    pub fn push(&mut self, value: i64) {
        let write_dod = |w: &mut BitWriter, dod| write_uvar(w, zigzag(dod));
        self.state.0.push(&mut self.bits, self.len == 0, value, INT_FIRST_BITS, write_dod);
        self.len += 1;
    }
}

/// Decodes `count` integers from a whole integer stream.
pub fn decode_integer_stream(bytes: &[u8], count: usize) -> Result<Vec<i64>, CodecError> {
    let r = BitReader::new(bytes, "integer value stream");
    decode_delta_of_delta_stream(r, count, "values", INT_FIRST_BITS, |r| read_uvar(r).map(unzigzag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gorilla::delta::bits_spent;

    fn uvar_bits(z: u64) -> u64 {
        bits_spent(z, write_uvar, read_uvar)
    }

    fn round_trip(values: &[i64]) -> u64 {
        let mut s = IntegerStream::new();
        values.iter().for_each(|&v| s.push(v));
        assert_eq!(decode_integer_stream(&s.bits().to_bytes(), values.len()).unwrap(), values);
        s.bits().bit_len()
    }

    #[test]
    fn zigzag_maps_small_magnitudes_to_small_codes() {
        assert_eq!([0, -1, 1, -2, 2].map(zigzag), [0, 1, 2, 3, 4]);
        assert_eq!(zigzag(i64::MAX), u64::MAX - 1);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
        for v in [0, 1, -1, i64::MAX, i64::MIN, 123_456_789, -987_654_321] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn uvar_bucket_boundaries() {
        assert_eq!(uvar_bits(0), 1);
        assert_eq!(uvar_bits(1), 2 + 7);
        assert_eq!(uvar_bits(127), 2 + 7);
        assert_eq!(uvar_bits(128), 3 + 9);
        assert_eq!(uvar_bits(511), 3 + 9);
        assert_eq!(uvar_bits(512), 4 + 12);
        assert_eq!(uvar_bits(4095), 4 + 12);
        assert_eq!(uvar_bits(4096), 5 + 32);
        assert_eq!(uvar_bits(u32::MAX as u64), 5 + 32);
        assert_eq!(uvar_bits(1 << 32), 5 + 64);
        assert_eq!(uvar_bits(u64::MAX), 5 + 64);
    }

    #[test]
    fn extremes_round_trip() {
        round_trip(&[i64::MIN, i64::MAX, i64::MIN, 0, -1, i64::MAX, i64::MAX, i64::MIN, 1]);
        let unsigned = [u64::MAX, 0, u64::MAX, 1 << 63, (1 << 63) - 1, 42];
        let as_i64: Vec<i64> = unsigned.iter().map(|&u| u as i64).collect();
        round_trip(&as_i64);
        assert_eq!(as_i64.iter().map(|&v| v as u64).collect::<Vec<_>>(), unsigned);
    }

    #[test]
    fn a_steady_counter_costs_one_bit_per_value() {
        let values: Vec<i64> = (0..1000).map(|i| 1_000_000 + 17 * i).collect();
        // 64 raw bits, the first delta (zigzag 34 in 7 bits), then dod 0.
        assert_eq!(round_trip(&values), 64 + 9 + 998);
    }
}
