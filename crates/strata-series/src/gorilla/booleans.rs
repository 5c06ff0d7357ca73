//! The boolean value stream: one bit per value, 1 for true.
//! Format: `docs/format/series-block.md`, "Boolean values".

use super::bits::BitReader;
use super::error::CodecError;
use super::stream::Stream;

/// The boolean stream's encoder carries nothing between values.
#[derive(Copy, Clone, Debug, Default)]
pub struct BooleanState;

/// The open boolean stream of a block.
pub type BooleanStream = Stream<BooleanState>;

impl BooleanStream {
    #[inline]
    pub fn push(&mut self, value: bool) {
        self.bits.write_bit(value);
        self.len += 1;
    }
}

/// Decodes `count` booleans from a whole boolean stream.
pub fn decode_boolean_stream(bytes: &[u8], count: usize) -> Result<Vec<bool>, CodecError> {
    let mut r = BitReader::new(bytes, "boolean value stream");
    // Every value takes at least one bit.
    r.check_count(count, 1, "values")?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        out.push(r.read_bit()?);
    }
    r.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bit_per_value_most_significant_first() {
        let values = [true, false, true, true, false, false, false, true, true];
        let mut s = BooleanStream::new();
        values.iter().for_each(|&v| s.push(v));
        let bytes = s.bits().to_bytes();
        assert_eq!(bytes, vec![0b1011_0001, 0b1000_0000]);
        assert_eq!(decode_boolean_stream(&bytes, values.len()).unwrap(), values);
        assert!(decode_boolean_stream(&bytes, 17).is_err());
    }
}
