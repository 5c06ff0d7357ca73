//! The timestamp stream: Gorilla's delta-of-delta encoding (Pelkonen et al.,
//! VLDB 2015, section 4.1.1, as Beringei and DecLog (declog.txt 2.1, 4.4.1)
//! use it), with an escape for nanosecond deltas-of-deltas beyond 32 bits.
//! Format: `docs/format/series-block.md`, "Timestamp stream".
//!
//! The first timestamp is written raw in 64 bits. Each later one writes
//! `dod = (t[i] - t[i-1]) - (t[i-1] - t[i-2])` (wrapping i64 arithmetic; the
//! delta before the second point is 0) in the first bucket that holds it:
//!
//! | control | value bits | dod range |
//! |---|---|---|
//! | `0` | 0 | 0 |
//! | `10` | 7 | [-63, 64] |
//! | `110` | 9 | [-255, 256] |
//! | `1110` | 12 | [-2047, 2048] |
//! | `1111` | 32 | [-(2^31 - 1), 2^31], else escape |
//!
//! As in Beringei, a positive dod is stored minus one (0 has its own code),
//! so a bucket of `b` bits stores `s` in `(-2^(b-1), 2^(b-1))` as `b`-bit two's
//! complement. The 32-bit value `i32::MIN` (`TS_ESCAPE_VALUE`), which no dod
//! produces, escapes to the raw dod in 64 more bits.

use super::bits::{BitReader, BitWriter};
use super::delta::{decode_delta_of_delta_stream, read_bucket, write_in_bucket, Bucket, DeltaOfDelta};
use super::error::CodecError;
use super::stream::Stream;
use crate::model::TimestampNs;

/// Bits of the first timestamp.
pub const TS_FIRST_BITS: u32 = 64;
/// The buckets for a nonzero delta-of-delta: (control code, control bits, value bits).
pub const TS_BUCKETS: [Bucket; 4] = [(0b10, 2, 7), (0b110, 3, 9), (0b1110, 4, 12), (0b1111, 4, 32)];
/// The 32-bit bucket value that escapes to a raw 64-bit delta-of-delta.
pub const TS_ESCAPE_VALUE: i32 = i32::MIN;
/// Bits of the raw delta-of-delta after the escape.
pub const TS_ESCAPE_DOD_BITS: u32 = 64;

/// Writes one delta-of-delta in its bucket.
#[inline]
pub(crate) fn write_dod(w: &mut BitWriter, dod: i64) {
    if dod == 0 {
        w.write_bits(0, 1);
        return;
    }
    let stored = if dod > 0 { dod - 1 } else { dod };
    let holds = |value_bits: u32| {
        let limit = 1i64 << (value_bits - 1);
        -limit < stored && stored < limit
    };
    if write_in_bucket(w, &TS_BUCKETS, stored as u64, holds) {
        return;
    }
    let (control, control_bits, value_bits) = TS_BUCKETS[3];
    w.write_bits(control, control_bits);
    w.write_bits(TS_ESCAPE_VALUE as u32 as u64, value_bits);
    w.write_bits(dod as u64, TS_ESCAPE_DOD_BITS);
}

/// Reads one delta-of-delta written by `write_dod`.
#[inline]
pub(crate) fn read_dod(r: &mut BitReader<'_>) -> Result<i64, CodecError> {
    let Some(bucket) = read_bucket(r, &TS_BUCKETS)? else {
        return Ok(0);
    };
    let value_bits = TS_BUCKETS[bucket].2;
    let raw = r.read_bits(value_bits)?;
    let stored = ((raw << (64 - value_bits)) as i64) >> (64 - value_bits);
    if bucket == TS_BUCKETS.len() - 1 && stored == TS_ESCAPE_VALUE as i64 {
        return Ok(r.read_bits(TS_ESCAPE_DOD_BITS)? as i64);
    }
    Ok(if stored >= 0 { stored + 1 } else { stored })
}

/// The open timestamp stream of a block.
pub type TimestampStream = Stream<TimestampState>;

/// The timestamp stream's encoder state: the previous timestamp and delta.
#[derive(Copy, Clone, Debug, Default)]
pub struct TimestampState(DeltaOfDelta);

impl TimestampStream {
    #[inline]
    pub fn push(&mut self, ts: TimestampNs) {
        self.state.0.push(&mut self.bits, self.len == 0, ts, TS_FIRST_BITS, write_dod);
        self.len += 1;
    }

    /// The last timestamp pushed (meaningless when empty).
    pub fn last(&self) -> TimestampNs {
        self.state.0.last()
    }
}

/// Decodes `count` timestamps from a whole timestamp stream; only zero
/// padding may follow the last one.
pub fn decode_timestamp_stream(bytes: &[u8], count: usize) -> Result<Vec<TimestampNs>, CodecError> {
    let r = BitReader::new(bytes, "timestamp stream");
    decode_delta_of_delta_stream(r, count, "timestamps", TS_FIRST_BITS, read_dod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gorilla::delta::bits_spent;

    /// Bits `write_dod` spends on one delta-of-delta, and that it reads back.
    fn dod_bits(dod: i64) -> u64 {
        bits_spent(dod, write_dod, read_dod)
    }

    /// Timestamps 0, d, 2d + dod: the third point's delta-of-delta is `dod`.
    fn three_points(d: i64, dod: i64) -> Vec<i64> {
        let t2 = d.wrapping_add(d).wrapping_add(dod);
        vec![0, d, t2]
    }

    #[test]
    fn dod_zero_takes_one_bit() {
        assert_eq!(dod_bits(0), 1);
    }

    #[test]
    fn bucket_7_bits_holds_minus_63_to_64() {
        assert_eq!(dod_bits(1), 2 + 7);
        assert_eq!(dod_bits(-1), 2 + 7);
        assert_eq!(dod_bits(63), 2 + 7);
        assert_eq!(dod_bits(64), 2 + 7);
        assert_eq!(dod_bits(65), 3 + 9);
        assert_eq!(dod_bits(-63), 2 + 7);
        assert_eq!(dod_bits(-64), 3 + 9);
    }

    #[test]
    fn bucket_9_bits_holds_minus_255_to_256() {
        assert_eq!(dod_bits(255), 3 + 9);
        assert_eq!(dod_bits(256), 3 + 9);
        assert_eq!(dod_bits(257), 4 + 12);
        assert_eq!(dod_bits(-255), 3 + 9);
        assert_eq!(dod_bits(-256), 4 + 12);
    }

    #[test]
    fn bucket_12_bits_holds_minus_2047_to_2048() {
        assert_eq!(dod_bits(2047), 4 + 12);
        assert_eq!(dod_bits(2048), 4 + 12);
        assert_eq!(dod_bits(2049), 4 + 32);
        assert_eq!(dod_bits(-2047), 4 + 12);
        assert_eq!(dod_bits(-2048), 4 + 32);
    }

    #[test]
    fn bucket_32_bits_holds_the_i32_range_shifted_by_one() {
        let max = i32::MAX as i64;
        let min = i32::MIN as i64;
        assert_eq!(dod_bits(max), 4 + 32);
        assert_eq!(dod_bits(max + 1), 4 + 32, "2^31 is stored as 2^31 - 1");
        assert_eq!(dod_bits(min + 1), 4 + 32);
    }

    #[test]
    fn escape_carries_the_raw_dod() {
        let escaped = 4 + 32 + 64;
        assert_eq!(dod_bits(i32::MAX as i64 + 2), escaped);
        assert_eq!(dod_bits(i32::MIN as i64), escaped, "a real dod of i32::MIN escapes");
        assert_eq!(dod_bits(i32::MIN as i64 - 1), escaped);
        assert_eq!(dod_bits(i64::MAX), escaped);
        assert_eq!(dod_bits(i64::MIN), escaped);
        // The escape code itself: '1111', then i32::MIN as 32 bits.
        let mut w = BitWriter::new();
        write_dod(&mut w, 1 << 40);
        let bytes = w.to_bytes();
        assert_eq!(&bytes[..5], &[0xF8, 0x00, 0x00, 0x00, 0x00]);
    }

    #[test]
    fn timestamp_streams_with_each_bucket_round_trip() {
        for dod in
            [0, 1, 64, 65, -64, 256, 257, 2048, 2049, 1 << 31, (1 << 31) + 1, i32::MIN as i64, i64::MIN]
        {
            for d in [0, 10_000_000_000, -7, i64::MAX] {
                let ts = three_points(d, dod);
                let mut s = TimestampStream::new();
                ts.iter().for_each(|&t| s.push(t));
                let back = decode_timestamp_stream(&s.bits().to_bytes(), ts.len()).unwrap();
                assert_eq!(back, ts, "delta {d}, dod {dod}");
            }
        }
    }

    #[test]
    fn regular_timestamps_cost_one_bit_each_after_the_second() {
        let mut s = TimestampStream::new();
        for i in 0..1000i64 {
            s.push(1_700_000_000_000_000_000 + i * 10_000_000_000);
        }
        // 64 raw bits, the first delta (10 s in ns) escapes, then one bit each.
        assert_eq!(s.bits().bit_len(), 64 + (4 + 32 + 64) + 998);
        assert_eq!(s.last(), 1_700_000_000_000_000_000 + 999 * 10_000_000_000);
    }

    #[test]
    fn a_count_the_stream_cannot_hold_is_rejected_before_allocating() {
        let err = decode_timestamp_stream(&[0u8; 9], usize::MAX).unwrap_err();
        assert!(err.to_string().contains("cannot hold"), "{err}");
        assert!(decode_timestamp_stream(&[0u8; 7], 1).is_err());
        assert_eq!(decode_timestamp_stream(&[], 0).unwrap(), Vec::<i64>::new());
    }
}
