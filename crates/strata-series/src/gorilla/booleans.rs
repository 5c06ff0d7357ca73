//! The boolean value stream: one bit per value, 1 for true.
//! Format: `docs/format/series-block.md`, "Boolean values".

use super::bits::{BitReader, BitWriter};
use super::error::CodecError;

/// The open boolean stream of a block.
#[derive(Clone, Debug, Default)]
pub struct BooleanStream {
    bits: BitWriter,
    len: u64,
}

impl BooleanStream {
    pub fn new() -> BooleanStream {
        BooleanStream::default()
    }

    #[inline]
    pub fn push(&mut self, value: bool) {
        self.bits.write_bit(value);
        self.len += 1;
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn bits(&self) -> &BitWriter {
        &self.bits
    }
}

/// Decodes `count` booleans from a whole boolean stream.
pub fn decode_boolean_stream(bytes: &[u8], count: usize) -> Result<Vec<bool>, CodecError> {
    let mut r = BitReader::new(bytes, "boolean value stream");
    if (count as u64) > r.total_bits() {
        return Err(CodecError::corrupt(format!(
            "boolean value stream of {} bytes cannot hold {count} values",
            bytes.len()
        )));
    }
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
