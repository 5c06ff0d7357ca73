//! What the timestamp and integer streams share
//! (`docs/format/series-block.md`, "Timestamp stream" and "Integer and
//! unsigned values"): the first value raw, then each value's wrapping
//! delta-of-delta (the delta before the second value is 0), written with a
//! prefix code of buckets. The streams differ only in how a delta-of-delta
//! fills its bucket.

use super::bits::{BitReader, BitWriter};
use super::error::CodecError;

/// A bucket of a prefix code: (control code, control bits, value bits).
pub type Bucket = (u64, u32, u32);

/// Writes `value` after the control code of the first bucket whose value
/// width `holds` accepts; false (and nothing written) when none does. The
/// single bit `0`, which callers write for zero, is not a bucket.
#[inline]
pub(crate) fn write_in_bucket(
    w: &mut BitWriter,
    buckets: &[Bucket],
    value: u64,
    holds: impl Fn(u32) -> bool,
) -> bool {
    for &(control, control_bits, value_bits) in buckets {
        if holds(value_bits) {
            w.write_bits(control, control_bits);
            w.write_bits(value, value_bits);
            return true;
        }
    }
    false
}

/// Reads a control code: `None` for the single bit `0`, else the index of
/// the bucket in `buckets` (`1` + one `1` per bucket passed, ended by a `0`
/// except after the last bucket).
#[inline]
pub(crate) fn read_bucket(r: &mut BitReader<'_>, buckets: &[Bucket]) -> Result<Option<usize>, CodecError> {
    if !r.read_bit()? {
        return Ok(None);
    }
    let mut bucket = 0;
    while bucket < buckets.len() - 1 && r.read_bit()? {
        bucket += 1;
    }
    Ok(Some(bucket))
}

/// The previous value and delta of a delta-of-delta sequence, with
/// wrapping i64 arithmetic so that every sequence round-trips.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DeltaOfDelta {
    prev: i64,
    prev_delta: i64,
}

impl DeltaOfDelta {
    /// The state after the first value, which is written raw.
    pub(crate) fn after_first(first: i64) -> DeltaOfDelta {
        DeltaOfDelta { prev: first, prev_delta: 0 }
    }

    /// Appends `value` to `bits`: raw in `first_bits` when it is the
    /// stream's first value, else its delta-of-delta as `write_dod` writes it.
    #[inline]
    pub(crate) fn push(
        &mut self,
        bits: &mut BitWriter,
        is_first: bool,
        value: i64,
        first_bits: u32,
        write_dod: impl FnOnce(&mut BitWriter, i64),
    ) {
        if is_first {
            bits.write_bits(value as u64, first_bits);
            *self = DeltaOfDelta::after_first(value);
        } else {
            write_dod(bits, self.encode(value));
        }
    }

    /// The delta-of-delta of the next value; moves on to it.
    #[inline]
    pub(crate) fn encode(&mut self, value: i64) -> i64 {
        let delta = value.wrapping_sub(self.prev);
        let dod = delta.wrapping_sub(self.prev_delta);
        *self = DeltaOfDelta { prev: value, prev_delta: delta };
        dod
    }

    /// The next value, given its delta-of-delta; moves on to it.
    #[inline]
    pub(crate) fn decode(&mut self, dod: i64) -> i64 {
        let delta = self.prev_delta.wrapping_add(dod);
        *self = DeltaOfDelta { prev: self.prev.wrapping_add(delta), prev_delta: delta };
        self.prev
    }

    /// The last value encoded or decoded.
    pub(crate) fn last(&self) -> i64 {
        self.prev
    }
}

/// Decodes `count` values from a whole delta-of-delta stream read by `r`:
/// the first raw in `first_bits`, each later one from the delta-of-delta
/// `read_dod` reads; only zero padding may follow. `values` names them in
/// errors.
pub(crate) fn decode_delta_of_delta_stream(
    mut r: BitReader<'_>,
    count: usize,
    values: &str,
    first_bits: u32,
    read_dod: impl Fn(&mut BitReader<'_>) -> Result<i64, CodecError>,
) -> Result<Vec<i64>, CodecError> {
    r.check_count(count, first_bits, values)?;
    let mut out = Vec::with_capacity(count);
    if count > 0 {
        let first = r.read_bits(first_bits)? as i64;
        out.push(first);
        let mut state = DeltaOfDelta::after_first(first);
        for _ in 1..count {
            out.push(state.decode(read_dod(&mut r)?));
        }
    }
    r.finish()?;
    Ok(out)
}

/// Bits `write` spends on `value`, after checking that `read` reads back
/// exactly `value` and nothing follows (for the bucket tests of the streams).
#[cfg(test)]
pub(crate) fn bits_spent<T: PartialEq + std::fmt::Debug + Copy>(
    value: T,
    write: fn(&mut BitWriter, T),
    read: fn(&mut BitReader<'_>) -> Result<T, CodecError>,
) -> u64 {
    let mut w = BitWriter::new();
    write(&mut w, value);
    let bytes = w.to_bytes();
    let mut r = BitReader::new(&bytes, "test");
    assert_eq!(read(&mut r).unwrap(), value, "{value:?} does not read back");
    r.finish().unwrap();
    w.bit_len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_of_delta_round_trips_with_wrapping() {
        let values = [5i64, 5, 15, 25, i64::MAX, i64::MIN, 0, -1, 3];
        let mut enc = DeltaOfDelta::after_first(values[0]);
        let dods: Vec<i64> = values[1..].iter().map(|&v| enc.encode(v)).collect();
        assert_eq!(dods[..3], [0, 10, 0], "a steady step has delta-of-delta 0");
        let mut dec = DeltaOfDelta::after_first(values[0]);
        let back: Vec<i64> = dods.iter().map(|&d| dec.decode(d)).collect();
        assert_eq!(back, values[1..]);
        assert_eq!((enc.last(), dec.last()), (3, 3));
    }

    #[test]
    fn push_writes_the_first_value_raw_then_deltas_of_deltas() {
        let mut state = DeltaOfDelta::default();
        let mut w = BitWriter::new();
        let mut dods = Vec::new();
        for (i, value) in [100i64, 110, 120, 125].into_iter().enumerate() {
            state.push(&mut w, i == 0, value, 16, |w, dod| {
                dods.push(dod);
                w.write_bits(dod as u64, 8);
            });
        }
        assert_eq!(dods, [10, 0, -5]);
        assert_eq!(w.to_bytes(), [0, 100, 10, 0, (-5i8) as u8]);
        assert_eq!(state.last(), 125);
    }

    #[test]
    fn buckets_write_and_read_their_control_codes() {
        let buckets: [Bucket; 3] = [(0b10, 2, 3), (0b110, 3, 8), (0b111, 3, 16)];
        let mut w = BitWriter::new();
        w.write_bits(0, 1);
        assert!(write_in_bucket(&mut w, &buckets, 5, |bits| 5 < 1 << bits));
        assert!(write_in_bucket(&mut w, &buckets, 300, |bits| 300 < 1 << bits));
        assert!(!write_in_bucket(&mut w, &buckets, 1 << 20, |bits| 1 << 20 < 1 << bits));
        assert_eq!(w.bit_len(), 1 + (2 + 3) + (3 + 16));
        let bytes = w.to_bytes();
        let mut r = BitReader::new(&bytes, "test");
        assert_eq!(read_bucket(&mut r, &buckets).unwrap(), None);
        assert_eq!(read_bucket(&mut r, &buckets).unwrap(), Some(0));
        assert_eq!(r.read_bits(3).unwrap(), 5);
        assert_eq!(read_bucket(&mut r, &buckets).unwrap(), Some(2));
        assert_eq!(r.read_bits(16).unwrap(), 300);
        r.finish().unwrap();
    }
}
