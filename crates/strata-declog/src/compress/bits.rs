//! Bit-level writer and reader for compressed DecLog payloads (declog.txt
//! 4.4.1), plus LEB128 varints. A small local equivalent of the series
//! engine's Gorilla bit stream: strata-declog sits below strata-series and
//! must not depend on it.
//!
//! Bits are written most significant first into bytes; the last byte is
//! zero-padded. The reader reports running out of bits as an error.

use crate::error::DecodeError;

/// Appends bits, most significant first. Bits gather in a 128-bit
/// accumulator and reach the bytes 64 at a time (a point's XOR code is
/// written in one call, not byte by byte).
#[derive(Default, Debug)]
pub(crate) struct BitWriter {
    bytes: Vec<u8>,
    /// Bits not yet in `bytes`, the newest lowest; only the low `pending`
    /// bits count.
    acc: u128,
    /// Fewer than 64 between calls.
    pending: u32,
}

impl BitWriter {
    /// A writer whose bits follow the bytes already in `bytes`.
    pub(crate) fn appending_to(bytes: Vec<u8>) -> Self {
        BitWriter { bytes, acc: 0, pending: 0 }
    }

    pub(crate) fn write_bit(&mut self, bit: bool) {
        self.write_bits(u64::from(bit), 1);
    }

    /// Writes the low `count` bits of `value` (`count <= 64`).
    pub(crate) fn write_bits(&mut self, value: u64, count: u32) {
        debug_assert!(count <= 64);
        if count == 0 {
            return;
        }
        let low = if count == 64 { value } else { value & ((1u64 << count) - 1) };
        self.acc = (self.acc << count) | u128::from(low);
        self.pending += count;
        if self.pending >= 64 {
            self.pending -= 64;
            self.bytes.extend_from_slice(&((self.acc >> self.pending) as u64).to_be_bytes());
        }
    }

    /// The bytes (those it was given, then the bits written, the last byte
    /// zero-padded).
    pub(crate) fn into_bytes(mut self) -> Vec<u8> {
        while self.pending >= 8 {
            self.pending -= 8;
            self.bytes.push((self.acc >> self.pending) as u8);
        }
        if self.pending > 0 {
            self.bytes.push((self.acc << (8 - self.pending)) as u8);
        }
        self.bytes
    }
}

/// Reads bits, most significant first.
pub(crate) struct BitReader<'a> {
    bytes: &'a [u8],
    bit_pos: usize,
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        BitReader { bytes, bit_pos: 0 }
    }

    pub(crate) fn read_bit(&mut self) -> Result<bool, DecodeError> {
        let byte = self.bytes.get(self.bit_pos / 8).ok_or_else(|| self.exhausted(1))?;
        let bit = byte & (0x80 >> (self.bit_pos % 8)) != 0;
        self.bit_pos += 1;
        Ok(bit)
    }

    /// Reads `count <= 64` bits as the low bits of a u64.
    pub(crate) fn read_bits(&mut self, count: u32) -> Result<u64, DecodeError> {
        if self.bit_pos + count as usize > self.bytes.len() * 8 {
            return Err(self.exhausted(count));
        }
        let mut value = 0u64;
        let mut left = count;
        while left > 0 {
            let used = (self.bit_pos % 8) as u32;
            let take = (8 - used).min(left);
            let byte = self.bytes[self.bit_pos / 8] as u64;
            let chunk = (byte >> (8 - used - take)) & ((1u64 << take) - 1);
            value = (value << take) | chunk;
            self.bit_pos += take as usize;
            left -= take;
        }
        Ok(value)
    }

    fn exhausted(&self, width: u32) -> DecodeError {
        DecodeError::BitsExhausted { len_bytes: self.bytes.len(), width, at_bit: self.bit_pos }
    }

    /// Bytes consumed, counting a partly read byte as whole.
    pub(crate) fn bytes_consumed(&self) -> usize {
        self.bit_pos.div_ceil(8)
    }
}

/// Appends `value` as an unsigned LEB128 varint (1..=10 bytes).
pub(crate) fn write_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Reads a LEB128 varint at `*at`, advancing it. Rejects overlong or
/// overflowing encodings.
pub(crate) fn read_varint(bytes: &[u8], at: &mut usize) -> Result<u64, DecodeError> {
    let mut value = 0u64;
    for i in 0..10 {
        let b = *bytes.get(*at).ok_or(DecodeError::BadVarint("payload ends inside a varint"))?;
        *at += 1;
        let low = (b & 0x7F) as u64;
        if i == 9 && b > 1 {
            return Err(DecodeError::BadVarint("varint overflows 64 bits"));
        }
        value |= low << (7 * i);
        if b & 0x80 == 0 {
            if i > 0 && b == 0 {
                return Err(DecodeError::BadVarint("overlong varint"));
            }
            return Ok(value);
        }
    }
    Err(DecodeError::BadVarint("varint longer than 10 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_and_pad() {
        let mut w = BitWriter::default();
        w.write_bit(true);
        w.write_bits(0b1011, 4);
        w.write_bits(u64::MAX, 64);
        let bytes = w.into_bytes();
        assert_eq!(bytes.len(), 9, "69 bits pad to 9 bytes");
        let mut r = BitReader::new(&bytes);
        assert!(r.read_bit().unwrap());
        assert_eq!(r.read_bits(4).unwrap(), 0b1011);
        assert_eq!(r.read_bits(64).unwrap(), u64::MAX);
        assert_eq!(r.bytes_consumed(), 9);
        assert_eq!(r.read_bits(3).unwrap(), 0, "padding is zero");
        assert!(r.read_bits(1).is_err(), "past the end is an error");
    }

    /// Bits to bytes one bit at a time, most significant first, zero-padded:
    /// the reference the writer must agree with.
    fn reference_bytes(bits: &[bool]) -> Vec<u8> {
        bits.chunks(8)
            .map(|byte| byte.iter().enumerate().fold(0u8, |b, (i, &bit)| b | (u8::from(bit) << (7 - i))))
            .collect()
    }

    #[test]
    fn written_bits_match_a_bit_by_bit_reference() {
        use rand::{Rng, SeedableRng};
        let seed = 0xb175_u64;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut next = || rng.gen::<u64>();
        let (mut w, mut bits, mut fields) = (BitWriter::default(), Vec::new(), Vec::new());
        for _ in 0..2000 {
            let count = (next() % 65) as u32;
            // Bits above `count` must be ignored.
            let value = next();
            w.write_bits(value, count);
            let low = if count == 64 { value } else { value & ((1u64 << count) - 1) };
            bits.extend((0..count).rev().map(|i| (low >> i) & 1 == 1));
            fields.push((low, count));
        }
        let bytes = w.into_bytes();
        assert_eq!(bytes, reference_bytes(&bits), "seed {seed:#x}");
        let mut r = BitReader::new(&bytes);
        for (value, count) in fields {
            assert_eq!(r.read_bits(count).unwrap(), value, "seed {seed:#x}");
        }
    }

    #[test]
    fn an_appending_writer_keeps_the_bytes_before_its_bits() {
        let mut w = BitWriter::appending_to(vec![0xAB, 0xCD]);
        w.write_bits(0b101, 3);
        assert_eq!(w.into_bytes(), vec![0xAB, 0xCD, 0b1010_0000]);
    }

    #[test]
    fn varints_round_trip_and_reject_bad_encodings() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            let mut at = 0;
            assert_eq!(read_varint(&out, &mut at).unwrap(), v);
            assert_eq!(at, out.len());
        }
        assert!(read_varint(&[0x80, 0x00], &mut 0).is_err(), "overlong");
        assert!(read_varint(&[0xFF; 10], &mut 0).is_err(), "too long");
        assert!(read_varint(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02], &mut 0).is_err());
        assert!(read_varint(&[0x80], &mut 0).is_err(), "truncated");
    }
}
