//! The block header (`docs/format/series-block.md`, "Block layout"): format
//! version, field type code, point count and timestamp stream length, the
//! last two as unsigned LEB128 varints so a small block pays 4 bytes.

use super::error::CodecError;
use crate::model::FieldType;

/// Value of the header's first byte.
pub const BLOCK_FORMAT_VERSION: u8 = 1;
pub const OFFSET_VERSION: usize = 0;
pub const OFFSET_FIELD_TYPE: usize = 1;
/// Where the point count varint starts; the timestamp stream length follows it.
pub const OFFSET_POINT_COUNT: usize = 2;
/// Longest varint (a u64 in 7-bit groups).
pub const MAX_VARINT_BYTES: usize = 10;
/// Header of an empty block: version, type, two one-byte varints.
pub const MIN_HEADER_BYTES: usize = 4;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub field_type: FieldType,
    pub point_count: u64,
    pub ts_stream_bytes: u64,
}

/// Bytes of `v` as an unsigned LEB128 varint.
pub fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros()).div_ceil(7) as usize
}

fn write_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a canonical varint at `*at`, advancing it.
fn read_varint(bytes: &[u8], at: &mut usize, what: &str) -> Result<u64, CodecError> {
    let mut v = 0u64;
    for i in 0..MAX_VARINT_BYTES {
        let Some(&b) = bytes.get(*at + i) else {
            return Err(CodecError::corrupt(format!("block header ends inside the {what}")));
        };
        let group = (b & 0x7F) as u64;
        if i == MAX_VARINT_BYTES - 1 && b > 1 {
            return Err(CodecError::corrupt(format!("block header {what} overflows 64 bits")));
        }
        v |= group << (7 * i);
        if b & 0x80 == 0 {
            if b == 0 && i > 0 {
                return Err(CodecError::corrupt(format!("block header {what} is not minimally encoded")));
            }
            *at += i + 1;
            return Ok(v);
        }
    }
    Err(CodecError::corrupt(format!("block header {what} overflows 64 bits")))
}

impl BlockHeader {
    pub fn encoded_len(&self) -> usize {
        OFFSET_POINT_COUNT + varint_len(self.point_count) + varint_len(self.ts_stream_bytes)
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(BLOCK_FORMAT_VERSION);
        out.push(self.field_type.code());
        write_varint(self.point_count, out);
        write_varint(self.ts_stream_bytes, out);
    }

    /// Parses the header at the start of `bytes`; returns it and its length.
    /// Checks that the timestamp stream lies within `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<(BlockHeader, usize), CodecError> {
        if bytes.len() < MIN_HEADER_BYTES {
            return Err(CodecError::corrupt(format!(
                "block of {} bytes is shorter than the {MIN_HEADER_BYTES}-byte minimum header",
                bytes.len()
            )));
        }
        let version = bytes[OFFSET_VERSION];
        if version != BLOCK_FORMAT_VERSION {
            return Err(CodecError::corrupt(format!(
                "block format version {version} is not the supported version {BLOCK_FORMAT_VERSION}"
            )));
        }
        let code = bytes[OFFSET_FIELD_TYPE];
        let field_type = FieldType::from_code(code)
            .ok_or_else(|| CodecError::corrupt(format!("unknown field type code {code}")))?;
        let mut at = OFFSET_POINT_COUNT;
        let point_count = read_varint(bytes, &mut at, "point count")?;
        let ts_stream_bytes = read_varint(bytes, &mut at, "timestamp stream length")?;
        let rest = (bytes.len() - at) as u64;
        if ts_stream_bytes > rest {
            return Err(CodecError::corrupt(format!(
                "timestamp stream of {ts_stream_bytes} bytes overruns the {rest} bytes after the header"
            )));
        }
        Ok((BlockHeader { field_type, point_count, ts_stream_bytes }, at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_has_the_documented_length() {
        for (count, ts_bytes) in [(0, 0), (1, 8), (127, 128), (300, 70_000), (u64::MAX, u64::MAX)] {
            let h = BlockHeader {
                field_type: FieldType::Unsigned,
                point_count: count,
                ts_stream_bytes: ts_bytes,
            };
            let mut out = Vec::new();
            h.write(&mut out);
            assert_eq!(out.len(), h.encoded_len());
            assert_eq!(out[OFFSET_VERSION], BLOCK_FORMAT_VERSION);
            assert_eq!(out[OFFSET_FIELD_TYPE], 3);
            let mut at = OFFSET_POINT_COUNT;
            assert_eq!(read_varint(&out, &mut at, "x").unwrap(), count);
            assert_eq!(read_varint(&out, &mut at, "x").unwrap(), ts_bytes);
            assert_eq!(at, out.len());
        }
        assert_eq!(
            [0, 127, 128, 16_383, 16_384, u64::MAX].map(varint_len),
            [1, 1, 2, 2, 3, MAX_VARINT_BYTES]
        );
    }

    #[test]
    fn bad_headers_are_corrupt() {
        let err = |b: &[u8]| BlockHeader::parse(b).unwrap_err().to_string();
        assert!(err(&[1, 1, 0]).contains("shorter"));
        assert!(err(&[2, 1, 0, 0]).contains("version 2"));
        assert!(err(&[1, 9, 0, 0]).contains("field type code 9"));
        assert!(err(&[1, 1, 0x80, 0x00, 0]).contains("minimally"));
        assert!(err(&[1, 1, 0x80, 0x80]).contains("ends inside"));
        assert!(err(&[1, 1, 0, 5, 0, 0]).contains("overruns"));
        let mut overflow = vec![1, 1];
        overflow.extend_from_slice(&[0xFF; 9]);
        overflow.extend_from_slice(&[0x02, 0]);
        assert!(err(&overflow).contains("overflows"));
        assert_eq!(BlockHeader::parse(&[1, 4, 0, 0]).unwrap().1, MIN_HEADER_BYTES);
    }
}
