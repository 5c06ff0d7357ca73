//! The float value stream: Gorilla's XOR encoding (Pelkonen et al., VLDB 2015,
//! section 4.1.2, as Beringei and DecLog (declog.txt 2.1, 4.4.1) use it).
//! Format: `docs/format/series-block.md`, "Float values".
//!
//! The first value is written raw (its 64 IEEE-754 bits). Each later value is
//! XORed with the previous one:
//! - `0` when the XOR is zero (the value repeats);
//! - `10` + the meaningful bits when they fall inside the window (leading and
//!   trailing zero counts) of the last `11` entry;
//! - `11` + leading zeros in 5 bits (capped at 31) + meaningful length in 6
//!   bits (64 stored as 0) + the meaningful bits, which opens a new window.
//!
//! Everything works on the bit patterns, so NaN payloads, infinities and -0.0
//! round-trip exactly.

use super::bits::BitReader;
use super::error::CodecError;
use super::stream::Stream;

/// Bits of the first value.
pub const FLOAT_FIRST_BITS: u32 = 64;
/// Width of the leading-zero count of a `11` entry.
pub const FLOAT_LEADING_ZEROS_BITS: u32 = 5;
/// Leading zero counts above this are stored as this.
pub const FLOAT_MAX_LEADING_ZEROS: u32 = 31;
/// Width of the meaningful-length field of a `11` entry (64 is stored as 0).
pub const FLOAT_MEANINGFUL_BITS_FIELD: u32 = 6;

/// The leading/trailing zero window of the last `11` entry.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Window {
    leading: u32,
    trailing: u32,
}

impl Window {
    fn meaningful_bits(self) -> u32 {
        64 - self.leading - self.trailing
    }
}

/// The open float stream of a block.
pub type FloatStream = Stream<FloatState>;

/// The float stream's encoder state: the previous value's bits and the
/// window of the last `11` entry.
#[derive(Clone, Debug, Default)]
pub struct FloatState {
    prev_bits: u64,
    window: Option<Window>,
}

impl FloatStream {
    #[inline]
    pub fn push(&mut self, value: f64) {
        let value_bits = value.to_bits();
        self.len += 1;
        if self.len == 1 {
            self.bits.write_bits(value_bits, FLOAT_FIRST_BITS);
            self.state.prev_bits = value_bits;
            return;
        }
        let xor = value_bits ^ self.state.prev_bits;
        self.state.prev_bits = value_bits;
        if xor == 0 {
            self.bits.write_bits(0, 1);
            return;
        }
        let leading = xor.leading_zeros();
        let trailing = xor.trailing_zeros();
        if let Some(w) = self.state.window {
            if leading >= w.leading && trailing >= w.trailing {
                self.bits.write_bits(0b10, 2);
                self.bits.write_bits(xor >> w.trailing, w.meaningful_bits());
                return;
            }
        }
        let w = Window { leading: leading.min(FLOAT_MAX_LEADING_ZEROS), trailing };
        let meaningful = w.meaningful_bits();
        let head = (0b11 << (FLOAT_LEADING_ZEROS_BITS + FLOAT_MEANINGFUL_BITS_FIELD))
            | ((w.leading as u64) << FLOAT_MEANINGFUL_BITS_FIELD)
            | (meaningful as u64 & 0x3F);
        self.bits.write_bits(head, 2 + FLOAT_LEADING_ZEROS_BITS + FLOAT_MEANINGFUL_BITS_FIELD);
        self.bits.write_bits(xor >> trailing, meaningful);
        self.state.window = Some(w);
    }
}

/// Decodes `count` floats from a whole float stream.
pub fn decode_float_stream(bytes: &[u8], count: usize) -> Result<Vec<f64>, CodecError> {
    let mut r = BitReader::new(bytes, "float value stream");
    r.check_count(count, FLOAT_FIRST_BITS, "values")?;
    let mut out = Vec::with_capacity(count);
    if count > 0 {
        let mut prev = r.read_bits(FLOAT_FIRST_BITS)?;
        out.push(f64::from_bits(prev));
        let mut window: Option<Window> = None;
        for i in 1..count {
            if r.read_bit()? {
                let w = if r.read_bit()? {
                    let leading = r.read_bits(FLOAT_LEADING_ZEROS_BITS)? as u32;
                    let meaningful = match r.read_bits(FLOAT_MEANINGFUL_BITS_FIELD)? as u32 {
                        0 => 64,
                        m => m,
                    };
                    if leading + meaningful > 64 {
                        return Err(CodecError::corrupt(format!(
                            "float value {i}: {leading} leading zeros and {meaningful} meaningful bits exceed 64"
                        )));
                    }
                    let w = Window { leading, trailing: 64 - leading - meaningful };
                    window = Some(w);
                    w
                } else {
                    window.ok_or_else(|| {
                        CodecError::corrupt(format!("float value {i} reuses a window before any was set"))
                    })?
                };
                let xor = r.read_bits(w.meaningful_bits())? << w.trailing;
                prev ^= xor;
            }
            out.push(f64::from_bits(prev));
        }
    }
    r.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gorilla::bits::BitWriter;

    /// Encodes and decodes `values`: (decoded bit patterns, encoded bit length).
    fn encode_decode(values: &[f64]) -> (Vec<u64>, u64) {
        let mut s = FloatStream::new();
        values.iter().for_each(|&v| s.push(v));
        let back = decode_float_stream(&s.bits().to_bytes(), values.len()).unwrap();
        (back.iter().map(|v| v.to_bits()).collect(), s.bits().bit_len())
    }

    fn round_trip(values: &[f64]) -> u64 {
        let (got, bit_len) = encode_decode(values);
        let want: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want);
        bit_len
    }

    #[test]
    fn special_values_round_trip_bit_exactly() {
        let quiet_nan_payload = f64::from_bits(0x7FF8_0000_0000_1234);
        let signalling_nan = f64::from_bits(0x7FF0_0000_0000_0001);
        let negative_nan = f64::from_bits(0xFFF8_DEAD_BEEF_0000);
        let values = [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            quiet_nan_payload,
            signalling_nan,
            negative_nan,
            f64::NAN,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::MAX,
            f64::MIN,
            -0.0,
            0.0,
        ];
        let (decoded, _) = encode_decode(&values);
        let want: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(decoded, want, "NaN payloads, zero signs and infinities survive bit for bit");
    }

    #[test]
    fn repeated_value_costs_one_bit() {
        assert_eq!(round_trip(&[12.5; 100]), 64 + 99);
    }

    #[test]
    fn window_is_reused_when_the_xor_fits() {
        // 1.0 ^ 1.5 and 1.5 ^ 1.0 set the same single mantissa bit: the second
        // XOR reuses the window of the first.
        let bits = round_trip(&[1.0, 1.5, 1.0]);
        let first_xor = 2 + 5 + 6 + 1;
        assert_eq!(bits, 64 + first_xor + (2 + 1));
    }

    #[test]
    fn meaningful_length_64_is_stored_as_zero() {
        // XOR of these two has bit 63 and bit 0 set: 64 meaningful bits.
        let bits = round_trip(&[f64::from_bits(0), f64::from_bits(0x8000_0000_0000_0001)]);
        assert_eq!(bits, 64 + 2 + 5 + 6 + 64);
        let mut s = FloatStream::new();
        s.push(f64::from_bits(0));
        s.push(f64::from_bits(0x8000_0000_0000_0001));
        let bytes = s.bits().to_bytes();
        // After the 64 raw bits: '11', leading 00000, length 000000.
        assert_eq!(bytes[8], 0b1100_0000);
        assert_eq!(bytes[9] & 0b1110_0000, 0);
    }

    #[test]
    fn leading_zeros_above_31_are_capped() {
        // XOR = 1: 63 leading zeros, stored as 31 with 33 meaningful bits.
        let bits = round_trip(&[f64::from_bits(2), f64::from_bits(3)]);
        assert_eq!(bits, 64 + 2 + 5 + 6 + 33);
    }

    #[test]
    fn reusing_a_window_before_one_exists_is_corrupt() {
        let mut w = BitWriter::new();
        w.write_bits(0, 64);
        w.write_bits(0b10, 2);
        let err = decode_float_stream(&w.to_bytes(), 2).unwrap_err();
        assert!(err.to_string().contains("before any was set"), "{err}");
    }

    #[test]
    fn a_window_wider_than_64_bits_is_corrupt() {
        let mut w = BitWriter::new();
        w.write_bits(0, 64);
        w.write_bits(0b11, 2);
        w.write_bits(31, 5);
        w.write_bits(40, 6);
        w.write_bits(0, 40);
        let err = decode_float_stream(&w.to_bytes(), 2).unwrap_err();
        assert!(err.to_string().contains("exceed 64"), "{err}");
    }
}
