//! The uncompressed *point payload* (declog.txt 4.4.1; format:
//! `docs/format/declog-stream.md`, "Point payloads"): what the engine hands
//! [`crate::DecLog::submit`] for one data point when compression is on, and
//! what parsing gives back, byte for byte, whether the log compressed it or
//! not.
//!
//! Layout: key length (unsigned LEB128 varint), key bytes, timestamp (i64
//! LE), value bits (u64 LE, the IEEE-754 bits of the float), rest (to the
//! end; opaque, e.g. a string field or the engine's own operation bytes).
//! The encoding is canonical (no overlong varint), so
//! `encode(decode(b)) == b` for every `b` that decodes.

use super::bits::{read_varint, write_varint};
use crate::error::DecodeError;

/// Bytes of the two fixed fields (timestamp and value bits).
pub const POINT_PAYLOAD_FIXED_BYTES: usize = 16;

/// A decoded point payload, borrowing from its bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PointPayloadRef<'a> {
    /// The series key (measurement, tags, field key).
    pub key: &'a [u8],
    pub timestamp: i64,
    /// The value's IEEE-754 bits.
    pub value_bits: u64,
    /// Everything after the fixed fields, verbatim.
    pub rest: &'a [u8],
}

impl PointPayloadRef<'_> {
    pub fn value(&self) -> f64 {
        f64::from_bits(self.value_bits)
    }

    /// The payload's bytes again (identical to the bytes it was decoded from).
    pub fn encode(&self) -> Vec<u8> {
        encode(self.key, self.timestamp, self.value_bits, self.rest)
    }
}

/// Bytes of the point payload of a key of `key_len` bytes and `rest_len` rest bytes.
pub fn encoded_len(key_len: usize, rest_len: usize) -> usize {
    let mut varint_len = 1;
    let mut v = key_len as u64;
    while v >= 0x80 {
        v >>= 7;
        varint_len += 1;
    }
    varint_len + key_len + POINT_PAYLOAD_FIXED_BYTES + rest_len
}

/// Encodes one point.
pub fn encode(key: &[u8], timestamp: i64, value_bits: u64, rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded_len(key.len(), rest.len()));
    write_varint(&mut out, key.len() as u64);
    out.extend_from_slice(key);
    out.extend_from_slice(&timestamp.to_le_bytes());
    out.extend_from_slice(&value_bits.to_le_bytes());
    out.extend_from_slice(rest);
    out
}

/// The leading key of a point or points payload (a length varint, then the
/// bytes) and the offset after it; `what` names it in errors.
pub(crate) fn split_key<'a>(bytes: &'a [u8], what: &'static str) -> Result<(&'a [u8], usize), DecodeError> {
    let mut at = 0;
    let key_len = read_varint(bytes, &mut at)?;
    let left = (bytes.len() - at) as u64;
    if key_len > left {
        return Err(DecodeError::Overrun { what, len: key_len, room: left });
    }
    let end = at + key_len as usize;
    Ok((&bytes[at..end], end))
}

/// Decodes a point payload; `Err` (never a panic) for bytes that are not one.
pub fn decode(bytes: &[u8]) -> Result<PointPayloadRef<'_>, DecodeError> {
    let (key, key_end) = split_key(bytes, "point payload key")?;
    let at = key_end - key.len();
    let fixed = bytes.get(key_end..key_end + POINT_PAYLOAD_FIXED_BYTES).ok_or(DecodeError::Truncated {
        what: "point payload's timestamp and value",
        need: POINT_PAYLOAD_FIXED_BYTES as u64,
        have: (bytes.len() - key_end) as u64,
    })?;
    let timestamp = i64::from_le_bytes(fixed[..8].try_into().expect("8 bytes"));
    let value_bits = u64::from_le_bytes(fixed[8..].try_into().expect("8 bytes"));
    Ok(PointPayloadRef {
        key: &bytes[at..key_end],
        timestamp,
        value_bits,
        rest: &bytes[key_end + POINT_PAYLOAD_FIXED_BYTES..],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_long_keys_and_empty_parts() {
        for (key_len, rest_len) in [(0usize, 0usize), (1, 0), (127, 3), (128, 0), (192, 40), (20_000, 1)] {
            let key: Vec<u8> = (0..key_len).map(|i| i as u8).collect();
            let rest: Vec<u8> = (0..rest_len).map(|i| !(i as u8)).collect();
            let b = encode(&key, -5, f64::NAN.to_bits(), &rest);
            assert_eq!(b.len(), encoded_len(key_len, rest_len));
            let p = decode(&b).unwrap();
            assert_eq!(
                (p.key, p.timestamp, p.value_bits, p.rest),
                (&key[..], -5, f64::NAN.to_bits(), &rest[..])
            );
            assert_eq!(p.encode(), b);
        }
    }

    #[test]
    fn layout_is_varint_key_then_le_fields_then_rest() {
        let b = encode(b"ab", 0x0102, 2.5f64.to_bits(), b"z");
        let mut expect = vec![2, b'a', b'b'];
        expect.extend_from_slice(&0x0102i64.to_le_bytes());
        expect.extend_from_slice(&2.5f64.to_bits().to_le_bytes());
        expect.push(b'z');
        assert_eq!(b, expect);
        assert_eq!(decode(&b).unwrap().value(), 2.5);
    }

    #[test]
    fn short_or_overlong_input_is_an_error() {
        assert!(decode(&[]).is_err());
        assert!(matches!(decode(&[5, b'a']), Err(DecodeError::Overrun { len: 5, room: 1, .. })));
        assert!(decode(&[0; 16]).unwrap_err().to_string().contains("ends inside"));
        assert!(matches!(decode(&[0x80, 0x00]), Err(DecodeError::BadVarint(_))), "overlong varint");
        assert!(decode(&[0; 17]).is_ok(), "empty key, zero fields");
    }
}
