//! Bit-level I/O for the Gorilla streams (`docs/format/series-block.md`,
//! "Bit order"): bits are written most significant first, bytes fill from
//! their most significant bit, and the last byte is padded with zero bits.
//!
//! `BitWriter` gathers bits in a `u64` accumulator and appends whole 8-byte
//! words, so a write of up to 64 bits is a few shifts, never a per-bit loop.
//! `BitReader` reads up to 64 bits at once from a 128-bit window and returns
//! `CodecError::Corrupt` at the end of its input; it never panics.

use super::error::CodecError;

/// The low `n` bits set (`n` in 0..=64).
#[inline]
pub(crate) fn low_mask(n: u32) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// An append-only bit stream.
#[derive(Clone, Debug, Default)]
pub struct BitWriter {
    /// Completed 8-byte words, big-endian.
    bytes: Vec<u8>,
    /// Pending bits in the low `acc_bits` bits, oldest bit highest.
    acc: u64,
    /// 0..=63.
    acc_bits: u32,
}

impl BitWriter {
    pub fn new() -> BitWriter {
        BitWriter::default()
    }

    /// Appends the low `n` bits of `value` (`n` in 0..=64), most significant first.
    #[inline]
    pub fn write_bits(&mut self, value: u64, n: u32) {
        debug_assert!(n <= 64, "write_bits of {n} bits");
        if n == 0 {
            return;
        }
        let value = value & low_mask(n);
        let free = 64 - self.acc_bits; // 1..=64
        if n < free {
            self.acc = (self.acc << n) | value;
            self.acc_bits += n;
        } else {
            let rest = n - free; // 0..=63
            let high = if free == 64 { 0 } else { self.acc << free };
            let word = high | (value >> rest);
            self.bytes.extend_from_slice(&word.to_be_bytes());
            self.acc = value & low_mask(rest);
            self.acc_bits = rest;
        }
    }

    #[inline]
    pub fn write_bit(&mut self, bit: bool) {
        self.write_bits(bit as u64, 1);
    }

    /// Appends whole bytes (at any bit position).
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.write_bits(u64::from_be_bytes(word.try_into().expect("chunk of 8")), 64);
        }
        for &b in words.remainder() {
            self.write_bits(b as u64, 8);
        }
    }

    /// Bits written so far.
    pub fn bit_len(&self) -> u64 {
        self.bytes.len() as u64 * 8 + self.acc_bits as u64
    }

    /// Bytes of the finished stream: `ceil(bit_len / 8)`.
    pub fn byte_len(&self) -> usize {
        self.bytes.len() + self.acc_bits.div_ceil(8) as usize
    }

    /// Appends the finished stream (zero-padded to a whole byte) to `out`
    /// without consuming the writer.
    pub fn finish_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.bytes);
        if self.acc_bits > 0 {
            let tail = self.acc << (64 - self.acc_bits);
            out.extend_from_slice(&tail.to_be_bytes()[..self.acc_bits.div_ceil(8) as usize]);
        }
    }

    /// The finished stream as a new vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.byte_len());
        self.finish_into(&mut out);
        out
    }
}

/// Reads a bit stream written by `BitWriter`.
#[derive(Clone, Debug)]
pub struct BitReader<'a> {
    bytes: &'a [u8],
    /// Next bit to read, counted from the first byte's most significant bit.
    pos_bits: u64,
    /// What the stream holds, for error messages ("timestamp stream").
    stream: &'static str,
}

impl<'a> BitReader<'a> {
    pub fn new(bytes: &'a [u8], stream: &'static str) -> BitReader<'a> {
        BitReader { bytes, pos_bits: 0, stream }
    }

    pub fn total_bits(&self) -> u64 {
        self.bytes.len() as u64 * 8
    }

    pub fn remaining_bits(&self) -> u64 {
        self.total_bits() - self.pos_bits
    }

    /// Rejects, before anything is allocated, a `count` of values the
    /// stream cannot hold when the first takes `first_bits` and every later
    /// one at least one bit. `values` names them in the error ("timestamps").
    pub fn check_count(&self, count: usize, first_bits: u32, values: &str) -> Result<(), CodecError> {
        let min_bits = match count {
            0 => 0,
            _ => (first_bits as u64).saturating_add(count as u64 - 1),
        };
        if min_bits > self.total_bits() {
            return Err(CodecError::corrupt(format!(
                "{} of {} bytes cannot hold {count} {values}",
                self.stream,
                self.bytes.len()
            )));
        }
        Ok(())
    }

    fn ended(&self, wanted_bits: u32) -> CodecError {
        CodecError::corrupt(format!(
            "{} ended: {} bits wanted at bit {} of {}",
            self.stream,
            wanted_bits,
            self.pos_bits,
            self.total_bits()
        ))
    }

    #[inline]
    pub fn read_bit(&mut self) -> Result<bool, CodecError> {
        let byte = self.bytes.get((self.pos_bits / 8) as usize).ok_or_else(|| self.ended(1))?;
        let bit = (byte >> (7 - (self.pos_bits % 8))) & 1;
        self.pos_bits += 1;
        Ok(bit == 1)
    }

    /// Reads `n` bits (0..=64) as the low bits of the result.
    #[inline]
    pub fn read_bits(&mut self, n: u32) -> Result<u64, CodecError> {
        debug_assert!(n <= 64, "read_bits of {n} bits");
        if n == 0 {
            return Ok(0);
        }
        if (n as u64) > self.remaining_bits() {
            return Err(self.ended(n));
        }
        let start = (self.pos_bits / 8) as usize;
        let shift = (self.pos_bits % 8) as u32;
        // A 128-bit window from the current byte holds the wanted bits
        // (at most 7 + 64 = 71 of them); bytes past the end read as zero.
        let window = match self.bytes.get(start..start + 16) {
            Some(w) => u128::from_be_bytes(w.try_into().expect("16 bytes")),
            None => {
                let mut w = [0u8; 16];
                let avail = &self.bytes[start..];
                w[..avail.len()].copy_from_slice(avail);
                u128::from_be_bytes(w)
            }
        };
        self.pos_bits += n as u64;
        Ok(((window << shift) >> (128 - n)) as u64)
    }

    /// Reads `len` whole bytes (at any bit position) into `out`.
    pub fn read_bytes_into(&mut self, len: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
        if (len as u64).saturating_mul(8) > self.remaining_bits() {
            return Err(self.ended(u32::try_from(len.saturating_mul(8)).unwrap_or(u32::MAX)));
        }
        out.reserve(len);
        if self.pos_bits.is_multiple_of(8) {
            let start = (self.pos_bits / 8) as usize;
            out.extend_from_slice(&self.bytes[start..start + len]);
            self.pos_bits += len as u64 * 8;
            return Ok(());
        }
        for _ in 0..len / 8 {
            out.extend_from_slice(&self.read_bits(64)?.to_be_bytes());
        }
        for _ in 0..len % 8 {
            out.push(self.read_bits(8)? as u8);
        }
        Ok(())
    }

    /// Checks that only zero padding (fewer than 8 bits) remains.
    pub fn finish(&self) -> Result<(), CodecError> {
        let rest = self.remaining_bits();
        if rest >= 8 {
            return Err(CodecError::corrupt(format!(
                "{} has {} bytes past its last value",
                self.stream,
                rest / 8
            )));
        }
        if rest > 0 {
            let last = self.bytes[self.bytes.len() - 1];
            if last & (low_mask(rest as u32) as u8) != 0 {
                return Err(CodecError::corrupt(format!("{} has nonzero padding bits", self.stream)));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn bits_round_trip_at_every_width_and_alignment() {
        let seed = 0xB175_u64;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let writes: Vec<(u64, u32)> = (0..5000).map(|_| (rng.gen::<u64>(), rng.gen_range(0..=64))).collect();
        let mut w = BitWriter::new();
        for &(v, n) in &writes {
            w.write_bits(v, n);
        }
        let total: u64 = writes.iter().map(|&(_, n)| n as u64).sum();
        assert_eq!(w.bit_len(), total, "seed {seed:#x}");
        let bytes = w.to_bytes();
        assert_eq!(bytes.len() as u64, total.div_ceil(8));
        assert_eq!(bytes.len(), w.byte_len());
        let mut r = BitReader::new(&bytes, "test stream");
        for (i, &(v, n)) in writes.iter().enumerate() {
            assert_eq!(r.read_bits(n).unwrap(), v & low_mask(n), "write {i} of {n} bits, seed {seed:#x}");
        }
        r.finish().unwrap();
    }

    #[test]
    fn bit_order_is_most_significant_first() {
        let mut w = BitWriter::new();
        w.write_bit(true);
        w.write_bits(0b01, 2);
        w.write_bits(0xABC, 12);
        // 1 01 1010_1011_1100 + one padding bit
        assert_eq!(w.to_bytes(), vec![0b1011_0101, 0b0111_1000]);
    }

    #[test]
    fn to_bytes_does_not_consume_and_writing_continues() {
        let mut w = BitWriter::new();
        w.write_bits(0x1FF, 9);
        let first = w.to_bytes();
        w.write_bits(u64::MAX, 64);
        let second = w.to_bytes();
        assert_eq!(first, vec![0xFF, 0x80]);
        assert_eq!(second.len(), 10);
        assert_eq!(&second[..2], &[0xFF, 0xFF]);
        assert_eq!(second[9], 0x80);
    }

    #[test]
    fn reader_reports_end_of_input_instead_of_panicking() {
        let bytes = [0xAAu8; 3];
        let mut r = BitReader::new(&bytes, "test stream");
        assert_eq!(r.read_bits(20).unwrap(), 0xAAAAA);
        let err = r.read_bits(5).unwrap_err();
        assert!(err.to_string().contains("test stream ended"), "{err}");
        assert_eq!(r.read_bits(4).unwrap(), 0xA);
        assert!(r.read_bit().is_err());
        assert!(r.read_bits(64).is_err());
        let mut out = Vec::new();
        assert!(r.read_bytes_into(1, &mut out).is_err());
        assert!(out.is_empty());
    }

    #[test]
    fn bytes_round_trip_unaligned_and_aligned() {
        let data: Vec<u8> = (0..=255u8).collect();
        for lead_bits in [0u32, 3, 8] {
            let mut w = BitWriter::new();
            w.write_bits(0, lead_bits);
            w.write_bytes(&data);
            let bytes = w.to_bytes();
            let mut r = BitReader::new(&bytes, "test stream");
            r.read_bits(lead_bits).unwrap();
            let mut out = Vec::new();
            r.read_bytes_into(data.len(), &mut out).unwrap();
            assert_eq!(out, data, "lead {lead_bits} bits");
            r.finish().unwrap();
        }
    }

    #[test]
    fn check_count_needs_the_first_value_bits_and_one_bit_per_later_value() {
        let r = BitReader::new(&[0u8; 9], "s");
        assert!(r.check_count(0, 64, "values").is_ok());
        assert!(r.check_count(9, 64, "values").is_ok());
        let err = r.check_count(10, 64, "values").unwrap_err();
        assert_eq!(err.to_string(), "corrupt series block: s of 9 bytes cannot hold 10 values");
        assert!(r.check_count(72, 1, "values").is_ok());
        assert!(r.check_count(73, 1, "values").is_err());
        assert!(r.check_count(usize::MAX, 1, "values").is_err());
        assert!(BitReader::new(&[], "s").check_count(1, 1, "values").is_err());
    }

    #[test]
    fn finish_rejects_trailing_bytes_and_nonzero_padding() {
        let r = BitReader::new(&[0x00, 0x00], "s");
        assert!(r.finish().unwrap_err().to_string().contains("2 bytes past"));
        let mut r = BitReader::new(&[0b1010_0001], "s");
        r.read_bits(3).unwrap();
        assert!(r.finish().unwrap_err().to_string().contains("padding"));
        let mut r = BitReader::new(&[0b1010_0000], "s");
        r.read_bits(3).unwrap();
        assert!(r.finish().is_ok());
    }
}
