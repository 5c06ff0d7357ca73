//! The string value stream: length-prefixed UTF-8 with a per-block
//! dictionary. Format: `docs/format/series-block.md`, "String values".
//!
//! Each value is either a literal, `0` + its byte length in the
//! variable-length code of `integers::write_uvar` + its bytes, which also
//! appends it to the block's dictionary; or a repeat, `1` + the index of an
//! earlier literal in `index_bits(dict_len)` bits, where `dict_len` is the
//! number of literals before it and `index_bits(n)` is ceil(log2(n)) (0 bits
//! when the dictionary holds one entry).
//!
//! Expansion bound: a repeat costs a few bits but decodes to a whole string,
//! so a corrupt block could otherwise decode to gigabytes. The decoded bytes
//! of a stream never exceed `STRING_EXPANSION_RATIO` times its encoded bytes
//! plus `STRING_EXPANSION_SLACK_BYTES`: the encoder writes a literal instead of
//! a repeat whenever the repeat would break that bound for the bytes written
//! so far, and the decoder rejects a stream that breaks it.

use std::collections::HashMap;

use super::bits::BitReader;
use super::error::CodecError;
use super::integers::{read_uvar, write_uvar};
use super::stream::Stream;

/// Decoded string bytes may be at most this many times the stream's bytes ...
pub const STRING_EXPANSION_RATIO: u64 = 64;
/// ... plus this many.
pub const STRING_EXPANSION_SLACK_BYTES: u64 = 4096;

/// Bits of a dictionary index when the dictionary holds `dict_len` (>= 1) entries.
#[inline]
pub fn index_bits(dict_len: u64) -> u32 {
    64 - dict_len.saturating_sub(1).leading_zeros()
}

/// Decoded bytes a stream of `stream_bytes` bytes may produce.
pub fn max_decoded_string_bytes(stream_bytes: u64) -> u64 {
    STRING_EXPANSION_RATIO.saturating_mul(stream_bytes).saturating_add(STRING_EXPANSION_SLACK_BYTES)
}

/// The open string stream of a block.
pub type StringStream = Stream<StringState>;

/// The string stream's encoder state: its dictionary and decoded size.
#[derive(Clone, Debug, Default)]
pub struct StringState {
    /// Each distinct string to the index of its first literal.
    dictionary: HashMap<Box<str>, u64>,
    /// Literals written so far (the decoder's dictionary length).
    literals: u64,
    decoded_bytes: u64,
}

impl StringStream {
    pub fn push(&mut self, value: &str) {
        self.len += 1;
        let len_bytes = value.len() as u64;
        if let Some(&index) = self.state.dictionary.get(value) {
            let index_bits = index_bits(self.state.literals);
            let bytes_after = (self.bits.bit_len() + 1 + index_bits as u64) / 8;
            if self.state.decoded_bytes + len_bytes <= max_decoded_string_bytes(bytes_after) {
                self.bits.write_bits(1, 1);
                self.bits.write_bits(index, index_bits);
                self.state.decoded_bytes += len_bytes;
                return;
            }
        } else {
            self.state.dictionary.insert(value.into(), self.state.literals);
        }
        self.bits.write_bits(0, 1);
        write_uvar(&mut self.bits, len_bytes);
        self.bits.write_bytes(value.as_bytes());
        self.state.literals += 1;
        self.state.decoded_bytes += len_bytes;
    }
}

/// Decodes `count` strings from a whole string stream.
pub fn decode_string_stream(bytes: &[u8], count: usize) -> Result<Vec<String>, CodecError> {
    let mut r = BitReader::new(bytes, "string value stream");
    // Every value takes at least one bit.
    r.check_count(count, 1, "values")?;
    let budget_bytes = max_decoded_string_bytes(bytes.len() as u64);
    let mut decoded_bytes = 0u64;
    let mut out: Vec<String> = Vec::with_capacity(count);
    // Positions in `out` of the literals, in order.
    let mut dictionary: Vec<usize> = Vec::new();
    for i in 0..count {
        if r.read_bit()? {
            if dictionary.is_empty() {
                return Err(CodecError::corrupt(format!(
                    "string value {i} repeats from an empty dictionary"
                )));
            }
            let index = r.read_bits(index_bits(dictionary.len() as u64))?;
            let Some(&at) = dictionary.get(index as usize) else {
                return Err(CodecError::corrupt(format!(
                    "string value {i} repeats entry {index} of a dictionary of {}",
                    dictionary.len()
                )));
            };
            decoded_bytes += out[at].len() as u64;
            if decoded_bytes > budget_bytes {
                return Err(expansion_error(bytes.len()));
            }
            out.push(out[at].clone());
        } else {
            let len_bytes = read_uvar(&mut r)?;
            if len_bytes.saturating_mul(8) > r.remaining_bits() {
                return Err(CodecError::corrupt(format!(
                    "string value {i} of {len_bytes} bytes is longer than the rest of its stream"
                )));
            }
            decoded_bytes += len_bytes;
            if decoded_bytes > budget_bytes {
                return Err(expansion_error(bytes.len()));
            }
            let mut raw = Vec::new();
            r.read_bytes_into(len_bytes as usize, &mut raw)?;
            let value = String::from_utf8(raw)
                .map_err(|e| CodecError::corrupt(format!("string value {i} is not UTF-8: {e}")))?;
            dictionary.push(out.len());
            out.push(value);
        }
    }
    r.finish()?;
    Ok(out)
}

fn expansion_error(stream_bytes: usize) -> CodecError {
    CodecError::corrupt(format!(
        "string value stream of {stream_bytes} bytes decodes to more than {} bytes",
        max_decoded_string_bytes(stream_bytes as u64)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gorilla::bits::BitWriter;

    fn encode(values: &[&str]) -> StringStream {
        let mut s = StringStream::new();
        values.iter().for_each(|v| s.push(v));
        s
    }

    #[test]
    fn index_bits_is_ceil_log2() {
        assert_eq!([1, 2, 3, 4, 5, 8, 9, 1024, 1025].map(index_bits), [0, 1, 2, 2, 3, 3, 4, 10, 11]);
    }

    #[test]
    fn literal_then_repeats_exact_bits() {
        let s = encode(&["ok", "ok", "fail", "ok", "fail", ""]);
        // "ok": '0' + len 2 ('10' + 7 bits) + 16 bits; repeat with 1 entry: '1';
        // "fail": '0' + 9 + 32; repeat of entry 0 of 2: '1' + 1 bit; "fail": '1' + 1;
        // "": '0' + len 0 ('0').
        let expected = (1 + 9 + 16) + 1 + (1 + 9 + 32) + 2 + 2 + 2;
        assert_eq!(s.bits().bit_len(), expected);
        let back = decode_string_stream(&s.bits().to_bytes(), 6).unwrap();
        assert_eq!(back, ["ok", "ok", "fail", "ok", "fail", ""]);
    }

    #[test]
    fn unicode_and_empty_strings_round_trip() {
        let values = ["", "héllo wörld", "日本語", "🦀🦀", "", "日本語", "a\u{0}b"];
        let s = encode(&values);
        assert_eq!(decode_string_stream(&s.bits().to_bytes(), values.len()).unwrap(), values);
    }

    #[test]
    fn repeats_of_a_long_string_stay_within_the_expansion_bound() {
        let long = "x".repeat(10_000);
        let values: Vec<&str> = vec![long.as_str(); 2000];
        let s = encode(&values);
        let bytes = s.bits().to_bytes();
        let decoded = 10_000u64 * 2000;
        assert!(decoded <= max_decoded_string_bytes(bytes.len() as u64));
        // Mostly repeats anyway: far smaller than the decoded bytes.
        assert!((bytes.len() as u64) < decoded / 32, "{} bytes", bytes.len());
        assert_eq!(decode_string_stream(&bytes, values.len()).unwrap(), values);
    }

    #[test]
    fn a_stream_that_expands_too_far_is_corrupt() {
        // One 4 KiB literal, then repeats written by hand past the bound.
        let mut w = BitWriter::new();
        w.write_bits(0, 1);
        write_uvar(&mut w, 4096);
        w.write_bytes(&[b'a'; 4096]);
        let repeats = 8 * 4096;
        for _ in 0..repeats {
            w.write_bits(1, 1);
        }
        let err = decode_string_stream(&w.to_bytes(), repeats + 1).unwrap_err();
        assert!(err.to_string().contains("decodes to more than"), "{err}");
    }

    #[test]
    fn bad_repeats_and_bad_utf8_are_corrupt() {
        let mut w = BitWriter::new();
        w.write_bits(1, 1);
        assert!(decode_string_stream(&w.to_bytes(), 1).unwrap_err().to_string().contains("empty dictionary"));

        let s = encode(&["a", "b", "c"]);
        let mut w = s.bits().clone();
        w.write_bits(1, 1);
        w.write_bits(3, 2); // entry 3 of 3
        assert!(decode_string_stream(&w.to_bytes(), 4).unwrap_err().to_string().contains("entry 3"));

        let mut w = BitWriter::new();
        w.write_bits(0, 1);
        write_uvar(&mut w, 1);
        w.write_bits(0xFF, 8);
        assert!(decode_string_stream(&w.to_bytes(), 1).unwrap_err().to_string().contains("UTF-8"));

        let mut w = BitWriter::new();
        w.write_bits(0, 1);
        write_uvar(&mut w, u64::MAX);
        assert!(decode_string_stream(&w.to_bytes(), 1).unwrap_err().to_string().contains("longer than"));
    }
}
