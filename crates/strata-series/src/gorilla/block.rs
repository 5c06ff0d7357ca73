//! Series blocks: one series, one field type, a timestamp stream and a value
//! stream (`docs/format/series-block.md`). `BlockWriter` is an open block kept
//! compressed in DRAM (Beringei's open block, declog.txt 2.1): `push` appends
//! to both streams in O(1) amortized time and never re-encodes; `to_bytes`
//! copies the streams behind a header without closing the block.
//!
//! Decoding never panics and allocates in proportion to the input: the point
//! count is checked against the bits of both streams before any vector is
//! sized, and string output is bounded by `strings::max_decoded_string_bytes`.

use super::booleans::{decode_boolean_stream, BooleanStream};
use super::error::CodecError;
use super::floats::{decode_float_stream, FloatStream};
use super::header::BlockHeader;
use super::integers::{decode_integer_stream, IntegerStream};
use super::strings::{decode_string_stream, StringStream};
use super::timestamps::{decode_timestamp_stream, TimestampStream};
use crate::model::{FieldType, FieldValue, TimestampNs};

/// The value stream of an open block, by field type.
#[derive(Clone, Debug)]
enum ValueStream {
    Float(FloatStream),
    Integer(IntegerStream),
    /// Unsigned values as their bits reinterpreted as i64.
    Unsigned(IntegerStream),
    Boolean(BooleanStream),
    String(StringStream),
}

impl ValueStream {
    fn new(field_type: FieldType) -> ValueStream {
        match field_type {
            FieldType::Float => ValueStream::Float(FloatStream::new()),
            FieldType::Integer => ValueStream::Integer(IntegerStream::new()),
            FieldType::Unsigned => ValueStream::Unsigned(IntegerStream::new()),
            FieldType::Boolean => ValueStream::Boolean(BooleanStream::new()),
            FieldType::String => ValueStream::String(StringStream::new()),
        }
    }

    fn bits(&self) -> &super::bits::BitWriter {
        match self {
            ValueStream::Float(s) => s.bits(),
            ValueStream::Integer(s) | ValueStream::Unsigned(s) => s.bits(),
            ValueStream::Boolean(s) => s.bits(),
            ValueStream::String(s) => s.bits(),
        }
    }
}

/// An open, append-only block kept compressed in DRAM.
#[derive(Clone, Debug)]
pub struct BlockWriter {
    field_type: FieldType,
    timestamps: TimestampStream,
    values: ValueStream,
    first_ts: Option<TimestampNs>,
}

impl BlockWriter {
    pub fn new(field_type: FieldType) -> BlockWriter {
        BlockWriter {
            field_type,
            timestamps: TimestampStream::new(),
            values: ValueStream::new(field_type),
            first_ts: None,
        }
    }

    pub fn field_type(&self) -> FieldType {
        self.field_type
    }

    /// Appends a point. Timestamps need not be ordered or unique.
    /// `CodecError::TypeMismatch` (and nothing appended) if the value's type
    /// is not the block's.
    #[inline]
    pub fn push(&mut self, ts: TimestampNs, value: &FieldValue) -> Result<(), CodecError> {
        match (&mut self.values, value) {
            (ValueStream::Float(s), FieldValue::Float(v)) => s.push(*v),
            (ValueStream::Integer(s), FieldValue::Integer(v)) => s.push(*v),
            (ValueStream::Unsigned(s), FieldValue::Unsigned(v)) => s.push(*v as i64),
            (ValueStream::Boolean(s), FieldValue::Boolean(v)) => s.push(*v),
            (ValueStream::String(s), FieldValue::String(v)) => s.push(v),
            _ => {
                return Err(CodecError::TypeMismatch { expected: self.field_type, found: value.field_type() })
            }
        }
        self.timestamps.push(ts);
        self.first_ts.get_or_insert(ts);
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.timestamps.len() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.timestamps.is_empty()
    }

    /// The first timestamp pushed (not the smallest: timestamps may be unordered).
    pub fn first_ts(&self) -> Option<TimestampNs> {
        self.first_ts
    }

    /// The last timestamp pushed (not the largest).
    pub fn last_ts(&self) -> Option<TimestampNs> {
        self.first_ts.map(|_| self.timestamps.last())
    }

    fn header(&self) -> BlockHeader {
        BlockHeader {
            field_type: self.field_type,
            point_count: self.timestamps.len(),
            ts_stream_bytes: self.timestamps.bits().byte_len() as u64,
        }
    }

    /// Size of `to_bytes()` now, header included.
    pub fn encoded_bytes(&self) -> usize {
        self.header().encoded_len() + self.timestamps.bits().byte_len() + self.values.bits().byte_len()
    }

    /// A finished block of every point pushed so far; pushing may continue.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_bytes());
        self.header().write(&mut out);
        self.timestamps.bits().finish_into(&mut out);
        self.values.bits().finish_into(&mut out);
        debug_assert_eq!(out.len(), self.encoded_bytes());
        out
    }

    /// Every point pushed so far, for queries over the open block.
    pub fn decode(&self) -> DecodedBlock {
        let count = self.len();
        let invariant = "a block's own streams always decode";
        let timestamps = decode_timestamp_stream(&self.timestamps.bits().to_bytes(), count).expect(invariant);
        let values = decode_values(self.field_type, &self.values.bits().to_bytes(), count).expect(invariant);
        DecodedBlock { field_type: self.field_type, timestamps, values }
    }
}

/// Encodes points of one field type as a block.
pub fn encode_points(
    field_type: FieldType,
    points: &[(TimestampNs, FieldValue)],
) -> Result<Vec<u8>, CodecError> {
    let mut w = BlockWriter::new(field_type);
    for (ts, value) in points {
        w.push(*ts, value)?;
    }
    Ok(w.to_bytes())
}

fn decode_values(field_type: FieldType, bytes: &[u8], count: usize) -> Result<Values, CodecError> {
    Ok(match field_type {
        FieldType::Float => Values::Float(decode_float_stream(bytes, count)?),
        FieldType::Integer => Values::Integer(decode_integer_stream(bytes, count)?),
        FieldType::Unsigned => {
            Values::Unsigned(decode_integer_stream(bytes, count)?.into_iter().map(|v| v as u64).collect())
        }
        FieldType::Boolean => Values::Boolean(decode_boolean_stream(bytes, count)?),
        FieldType::String => Values::String(decode_string_stream(bytes, count)?),
    })
}

/// A block split into its parts.
struct BlockParts<'a> {
    header: BlockHeader,
    /// The point count; at most the bits of the timestamp stream, so it fits a usize.
    count: usize,
    ts_bytes: &'a [u8],
    value_bytes: &'a [u8],
}

fn split(bytes: &[u8]) -> Result<BlockParts<'_>, CodecError> {
    let (header, header_len) = BlockHeader::parse(bytes)?;
    let (ts_bytes, value_bytes) = bytes[header_len..].split_at(header.ts_stream_bytes as usize);
    if header.point_count > (ts_bytes.len() as u64).saturating_mul(8) {
        return Err(CodecError::corrupt(format!(
            "point count {} exceeds the {} bits of the timestamp stream",
            header.point_count,
            ts_bytes.len() as u64 * 8
        )));
    }
    Ok(BlockParts { header, count: header.point_count as usize, ts_bytes, value_bytes })
}

/// Decodes a whole block.
pub fn decode_block(bytes: &[u8]) -> Result<DecodedBlock, CodecError> {
    let parts = split(bytes)?;
    let timestamps = decode_timestamp_stream(parts.ts_bytes, parts.count)?;
    let values = decode_values(parts.header.field_type, parts.value_bytes, parts.count)?;
    Ok(DecodedBlock { field_type: parts.header.field_type, timestamps, values })
}

/// Decodes only the timestamps of a block (the value stream is not read).
pub fn decode_timestamps(bytes: &[u8]) -> Result<Vec<TimestampNs>, CodecError> {
    let parts = split(bytes)?;
    decode_timestamp_stream(parts.ts_bytes, parts.count)
}

/// The decoded values of a block, one vector of the block's type.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    Float(Vec<f64>),
    Integer(Vec<i64>),
    Unsigned(Vec<u64>),
    Boolean(Vec<bool>),
    String(Vec<String>),
}

impl Values {
    pub fn len(&self) -> usize {
        match self {
            Values::Float(v) => v.len(),
            Values::Integer(v) => v.len(),
            Values::Unsigned(v) => v.len(),
            Values::Boolean(v) => v.len(),
            Values::String(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn field_type(&self) -> FieldType {
        match self {
            Values::Float(_) => FieldType::Float,
            Values::Integer(_) => FieldType::Integer,
            Values::Unsigned(_) => FieldType::Unsigned,
            Values::Boolean(_) => FieldType::Boolean,
            Values::String(_) => FieldType::String,
        }
    }

    /// Equality with floats compared by their bits (NaN payloads, -0.0).
    pub fn same_bits(&self, other: &Values) -> bool {
        match (self, other) {
            (Values::Float(a), Values::Float(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            _ => self == other,
        }
    }
}

/// A decoded block: parallel vectors of timestamps and values.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedBlock {
    pub field_type: FieldType,
    pub timestamps: Vec<TimestampNs>,
    pub values: Values,
}

impl DecodedBlock {
    pub fn len(&self) -> usize {
        self.timestamps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.timestamps.is_empty()
    }

    /// The value of point `i`. Panics if `i >= len()`, like slice indexing.
    pub fn value(&self, i: usize) -> FieldValue {
        match &self.values {
            Values::Float(v) => FieldValue::Float(v[i]),
            Values::Integer(v) => FieldValue::Integer(v[i]),
            Values::Unsigned(v) => FieldValue::Unsigned(v[i]),
            Values::Boolean(v) => FieldValue::Boolean(v[i]),
            Values::String(v) => FieldValue::String(v[i].clone()),
        }
    }

    pub fn into_points(self) -> Vec<(TimestampNs, FieldValue)> {
        let ts = self.timestamps;
        match self.values {
            Values::Float(v) => ts.into_iter().zip(v).map(|(t, v)| (t, FieldValue::Float(v))).collect(),
            Values::Integer(v) => ts.into_iter().zip(v).map(|(t, v)| (t, FieldValue::Integer(v))).collect(),
            Values::Unsigned(v) => ts.into_iter().zip(v).map(|(t, v)| (t, FieldValue::Unsigned(v))).collect(),
            Values::Boolean(v) => ts.into_iter().zip(v).map(|(t, v)| (t, FieldValue::Boolean(v))).collect(),
            Values::String(v) => ts.into_iter().zip(v).map(|(t, v)| (t, FieldValue::String(v))).collect(),
        }
    }

    /// Equality with floats compared by their bits.
    pub fn same_bits(&self, other: &DecodedBlock) -> bool {
        self.field_type == other.field_type
            && self.timestamps == other.timestamps
            && self.values.same_bits(&other.values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_of_the_wrong_type_is_refused_and_appends_nothing() {
        let mut w = BlockWriter::new(FieldType::Float);
        w.push(1, &FieldValue::Float(1.0)).unwrap();
        let err = w.push(2, &FieldValue::Integer(1)).unwrap_err();
        assert_eq!(err, CodecError::TypeMismatch { expected: FieldType::Float, found: FieldType::Integer });
        assert_eq!(err.to_string(), "type mismatch: the block holds float values, got a integer value");
        assert_eq!(w.len(), 1);
        assert_eq!(w.last_ts(), Some(1));
        assert_eq!(encode_points(FieldType::String, &[(0, FieldValue::Boolean(true))]).unwrap_err(), {
            CodecError::TypeMismatch { expected: FieldType::String, found: FieldType::Boolean }
        });
    }

    #[test]
    fn empty_block_is_a_four_byte_header() {
        for ft in
            [FieldType::Float, FieldType::Integer, FieldType::Unsigned, FieldType::Boolean, FieldType::String]
        {
            let w = BlockWriter::new(ft);
            assert!(w.is_empty());
            assert_eq!(w.first_ts(), None);
            assert_eq!(w.last_ts(), None);
            let bytes = w.to_bytes();
            assert_eq!(bytes, vec![1, ft.code(), 0, 0]);
            assert_eq!(w.encoded_bytes(), 4);
            let d = decode_block(&bytes).unwrap();
            assert!(d.is_empty());
            assert_eq!(d.field_type, ft);
            assert_eq!(d.values.field_type(), ft);
            assert!(w.decode().same_bits(&d));
        }
    }

    #[test]
    fn writer_tracks_first_last_and_size_while_open() {
        let mut w = BlockWriter::new(FieldType::Integer);
        for (i, ts) in [50i64, 10, 30].into_iter().enumerate() {
            w.push(ts, &FieldValue::Integer(i as i64)).unwrap();
            assert_eq!(w.encoded_bytes(), w.to_bytes().len());
        }
        assert_eq!(w.first_ts(), Some(50));
        assert_eq!(w.last_ts(), Some(30));
        assert_eq!(w.len(), 3);
        let d = w.decode();
        assert_eq!(d.timestamps, [50, 10, 30]);
        assert_eq!(d.value(2), FieldValue::Integer(2));
        assert_eq!(d.into_points()[1], (10, FieldValue::Integer(1)));
    }

    #[test]
    fn to_bytes_snapshots_decode_to_their_prefix_while_pushing_continues() {
        let mut w = BlockWriter::new(FieldType::String);
        let mut snapshots = Vec::new();
        for i in 0..40i64 {
            w.push(i * 1000, &FieldValue::String(format!("v{}", i % 5))).unwrap();
            snapshots.push(w.to_bytes());
        }
        for (i, snap) in snapshots.iter().enumerate() {
            let d = decode_block(snap).unwrap();
            assert_eq!(d.len(), i + 1);
            assert_eq!(d.value(i), FieldValue::String(format!("v{}", i % 5)));
            assert_eq!(decode_timestamps(snap).unwrap(), d.timestamps);
        }
    }

    #[test]
    fn a_point_count_beyond_the_timestamp_bits_is_rejected() {
        // Header claims u64::MAX points in an 8-byte timestamp stream.
        let mut bytes = vec![1, 1];
        bytes.extend_from_slice(&[0xFF; 9]);
        bytes.push(0x01);
        bytes.push(8);
        bytes.extend_from_slice(&[0; 16]);
        let err = decode_block(&bytes).unwrap_err();
        assert!(err.to_string().contains("exceeds the 64 bits"), "{err}");
        assert!(decode_timestamps(&bytes).is_err());
    }

    #[test]
    fn timestamps_decode_without_a_valid_value_stream() {
        let mut bytes =
            encode_points(FieldType::Float, &[(5, FieldValue::Float(1.0)), (9, FieldValue::Float(2.0))])
                .unwrap();
        let values_start = bytes.len() - 3;
        bytes.truncate(values_start);
        assert!(decode_block(&bytes).is_err());
        assert_eq!(decode_timestamps(&bytes).unwrap(), [5, 9]);
    }
}
