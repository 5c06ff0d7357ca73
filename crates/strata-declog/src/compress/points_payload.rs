//! The uncompressed *points payload* (format: `docs/format/declog-stream.md`,
//! "Points payloads"): every point one transaction writes to one key, in one
//! entry ([`crate::PayloadForm::PerKey`]). What the engine submits, and what
//! parsing gives back byte for byte, whether the log compressed it or not.
//!
//! Layout: key length (unsigned LEB128 varint), key bytes, point count (u32
//! LE, at least 1), then per point: timestamp (i64 LE), value bits (u64 LE),
//! rest length (varint), rest (opaque, e.g. a string field or the engine's
//! operation byte). The encoding is canonical, so `encode(decode(b)) == b`
//! for every `b` that decodes.
//!
//! The paper logs one entry per operation (declog.txt 4.3.1); a points
//! payload carries the operations of one transaction on one key, in the
//! order the transaction performs them. They share the entry's key, LSN and
//! stream, so they are routed, ordered and replayed exactly as that many
//! single-point entries would be, and the key's compression state runs
//! through them in order (4.4.1).

use super::bits::{read_varint, write_varint};
use super::point_payload::split_key;
use crate::error::DecodeError;

/// Bytes of a point's two fixed fields (timestamp and value bits).
pub const POINTS_FIXED_BYTES: usize = 16;

/// One point of a points payload, borrowing from its bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PointItem<'a> {
    pub timestamp: i64,
    pub value_bits: u64,
    pub rest: &'a [u8],
}

/// A decoded (validated) points payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointsPayloadRef<'a> {
    pub key: &'a [u8],
    /// Points, at least 1.
    pub count: u32,
    /// The encoded points (validated by [`decode`]).
    body: &'a [u8],
}

impl<'a> PointsPayloadRef<'a> {
    /// The points, in order.
    pub fn points(&self) -> impl Iterator<Item = PointItem<'a>> + 'a {
        let body = self.body;
        let mut at = 0;
        (0..self.count).map(move |_| read_point(body, &mut at).expect("validated by decode"))
    }

    /// Bytes of the payload.
    pub fn encoded_len(&self) -> usize {
        PointsPayloadBuilder::header_bytes(self.key.len()) + self.body.len()
    }
}

/// Builds a points payload point by point.
#[derive(Debug)]
pub struct PointsPayloadBuilder {
    buf: Vec<u8>,
    count_at: usize,
    count: u32,
}

impl PointsPayloadBuilder {
    /// A payload for `key`, with room for about `points` points.
    pub fn new(key: &[u8], points: usize) -> Self {
        let mut buf = Vec::with_capacity(key.len() + 8 + points * (POINTS_FIXED_BYTES + 2));
        write_varint(&mut buf, key.len() as u64);
        buf.extend_from_slice(key);
        let count_at = buf.len();
        buf.extend_from_slice(&0u32.to_le_bytes());
        PointsPayloadBuilder { buf, count_at, count: 0 }
    }

    pub fn push(&mut self, timestamp: i64, value_bits: u64, rest: &[u8]) {
        self.buf.extend_from_slice(&timestamp.to_le_bytes());
        self.buf.extend_from_slice(&value_bits.to_le_bytes());
        write_varint(&mut self.buf, rest.len() as u64);
        self.buf.extend_from_slice(rest);
        self.count += 1;
    }

    /// Bytes so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes of a payload's key and count, for a key of `key_len` bytes.
    pub fn header_bytes(key_len: usize) -> usize {
        varint_len(key_len as u64) + key_len + 4
    }

    /// Bytes a point with `rest_len` rest bytes adds.
    pub fn point_bytes(rest_len: usize) -> usize {
        POINTS_FIXED_BYTES + varint_len(rest_len as u64) + rest_len
    }

    /// The payload (at least one point must have been pushed).
    pub fn finish(mut self) -> Vec<u8> {
        assert!(self.count > 0, "a points payload has at least one point");
        self.buf[self.count_at..self.count_at + 4].copy_from_slice(&self.count.to_le_bytes());
        self.buf
    }
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Encodes `key` and its points.
pub fn encode<'p>(key: &[u8], points: impl IntoIterator<Item = PointItem<'p>>) -> Vec<u8> {
    let mut b = PointsPayloadBuilder::new(key, 0);
    for p in points {
        b.push(p.timestamp, p.value_bits, p.rest);
    }
    b.finish()
}

fn read_point<'a>(body: &'a [u8], at: &mut usize) -> Result<PointItem<'a>, DecodeError> {
    let fixed = body.get(*at..*at + POINTS_FIXED_BYTES).ok_or(DecodeError::Truncated {
        what: "points payload's timestamp and value",
        need: POINTS_FIXED_BYTES as u64,
        have: body.len().saturating_sub(*at) as u64,
    })?;
    let timestamp = i64::from_le_bytes(fixed[..8].try_into().expect("8 bytes"));
    let value_bits = u64::from_le_bytes(fixed[8..].try_into().expect("8 bytes"));
    *at += POINTS_FIXED_BYTES;
    let rest_len = read_varint(body, at)?;
    let room = (body.len() - *at) as u64;
    if rest_len > room {
        return Err(DecodeError::Overrun { what: "points payload rest", len: rest_len, room });
    }
    let rest = &body[*at..*at + rest_len as usize];
    *at += rest_len as usize;
    Ok(PointItem { timestamp, value_bits, rest })
}

/// The key of a points payload, without validating its points (for
/// payloads [`decode`] already accepted).
pub fn key_of(bytes: &[u8]) -> Result<&[u8], DecodeError> {
    split_key(bytes, "points payload key").map(|(key, _)| key)
}

/// A points payload [`decode`] already accepted, without walking its
/// points again (they are read when iterated).
pub(crate) fn decode_accepted(bytes: &[u8]) -> PointsPayloadRef<'_> {
    let (key, at) = split_key(bytes, "points payload key").expect("an accepted payload");
    let count = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("an accepted payload"));
    PointsPayloadRef { key, count, body: &bytes[at + 4..] }
}

/// Decodes and validates a points payload; `Err` (never a panic) for bytes
/// that are not one.
pub fn decode(bytes: &[u8]) -> Result<PointsPayloadRef<'_>, DecodeError> {
    let (key, at) = split_key(bytes, "points payload key")?;
    let count_bytes = bytes.get(at..at + 4).ok_or(DecodeError::Truncated {
        what: "points payload's count",
        need: 4,
        have: (bytes.len() - at) as u64,
    })?;
    let count = u32::from_le_bytes(count_bytes.try_into().expect("4 bytes"));
    if count == 0 {
        return Err(DecodeError::Invalid("points payload without points".into()));
    }
    let body = &bytes[at + 4..];
    let mut pos = 0;
    for _ in 0..count {
        read_point(body, &mut pos)?;
    }
    if pos != body.len() {
        return Err(DecodeError::Invalid(format!(
            "{} bytes after the last of {count} points",
            body.len() - pos
        )));
    }
    Ok(PointsPayloadRef { key, count, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(timestamp: i64, value_bits: u64, rest: &[u8]) -> PointItem<'_> {
        PointItem { timestamp, value_bits, rest }
    }

    #[test]
    fn round_trips_with_long_keys_rests_and_many_points() {
        let long_rest = vec![7u8; 300];
        for key_len in [0usize, 1, 127, 128, 448] {
            let key: Vec<u8> = (0..key_len).map(|i| i as u8).collect();
            let points =
                [item(-5, f64::NAN.to_bits(), b""), item(i64::MAX, 0, b"\x01"), item(0, 1, &long_rest)];
            let b = encode(&key, points);
            let p = decode(&b).unwrap();
            assert_eq!(p.key, &key[..]);
            assert_eq!(p.count, 3);
            assert_eq!(p.points().collect::<Vec<_>>(), points);
            assert_eq!(encode(p.key, p.points()), b, "canonical");
            assert_eq!(key_of(&b).unwrap(), &key[..]);
            assert_eq!(decode_accepted(&b), p);
        }
    }

    #[test]
    fn layout_is_key_count_then_points_with_rest_lengths() {
        let b = encode(b"ab", [item(0x0102, 2.5f64.to_bits(), b"z")]);
        let mut expect = vec![2, b'a', b'b', 1, 0, 0, 0];
        expect.extend_from_slice(&0x0102i64.to_le_bytes());
        expect.extend_from_slice(&2.5f64.to_bits().to_le_bytes());
        expect.extend_from_slice(&[1, b'z']);
        assert_eq!(b, expect);
        let mut builder = PointsPayloadBuilder::new(b"ab", 1);
        builder.push(0x0102, 2.5f64.to_bits(), b"z");
        assert_eq!(builder.len(), expect.len());
        assert_eq!(PointsPayloadBuilder::point_bytes(1), 18);
        assert_eq!(builder.finish(), expect);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let good = encode(b"k", [item(1, 2, b"r"), item(3, 4, b"")]);
        for cut in 0..good.len() {
            assert!(decode(&good[..cut]).is_err(), "truncated at {cut}");
        }
        let mut extra = good.clone();
        extra.push(0);
        assert!(decode(&extra).unwrap_err().to_string().contains("after the last"));
        let none = vec![1, b'k', 0, 0, 0, 0];
        assert!(decode(&none).unwrap_err().to_string().contains("without points"));
        let mut huge_count = good.clone();
        huge_count[2..6].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&huge_count).is_err());
    }
}
