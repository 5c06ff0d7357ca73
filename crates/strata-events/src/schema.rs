//! A stream's schema: the fixed list of typed attributes every event of the
//! stream carries after its application timestamp (chronicledb-pmem.txt
//! section 2.2: events `e = (a_1, ..., a_n, ts)` with a fixed schema), the
//! byte offsets of the attributes inside the fixed-size binary event, and a
//! stable binary encoding of the schema so the store can persist it
//! (`docs/format/events-node.md`, section "Schema encoding").
//!
//! The timestamp (i64 nanoseconds of application time) is implicit: it is not
//! in [`StreamSchema::attrs`] and always occupies the first
//! [`TIMESTAMP_BYTES`] bytes of an event.

use std::collections::HashSet;

use crate::ids::EventError;

/// Bytes of the application timestamp at the start of every event.
pub const TIMESTAMP_BYTES: usize = 8;
/// Most attributes a schema may have.
pub const MAX_ATTRS: usize = 64;
/// Longest attribute name, in UTF-8 bytes.
pub const MAX_ATTR_NAME_BYTES: usize = 255;
/// Longest fixed-length string attribute, in bytes.
pub const MAX_FIXED_STR_BYTES: usize = 255;
/// Largest event (timestamp + attributes), so that an 8 KiB leaf holds at
/// least seven events.
pub const MAX_EVENT_BYTES: usize = 1024;

/// First four bytes of an encoded schema: the ASCII bytes `STSC`.
pub const SCHEMA_MAGIC: u32 = u32::from_le_bytes(*b"STSC");
/// Version of the schema encoding; decode rejects any other.
pub const SCHEMA_VERSION: u8 = 1;
/// Bytes of the encoded schema's header (magic, version, count, length).
pub const SCHEMA_HEADER_BYTES: usize = 8;
/// Bytes of one attribute's fixed part (type, name length, string length).
pub const SCHEMA_ATTR_HEADER_BYTES: usize = 4;
/// Bytes of the CRC32C at the end of an encoded schema.
pub const SCHEMA_CRC_BYTES: usize = 4;

/// Offset of the magic in an encoded schema.
pub const SCHEMA_OFFSET_MAGIC: usize = 0;
/// Offset of the version byte.
pub const SCHEMA_OFFSET_VERSION: usize = 4;
/// Offset of the attribute count byte.
pub const SCHEMA_OFFSET_ATTR_COUNT: usize = 5;
/// Offset of the total encoded length (u16, CRC included).
pub const SCHEMA_OFFSET_TOTAL_BYTES: usize = 6;

/// Type codes of the schema encoding.
pub const TYPE_CODE_I64: u8 = 1;
pub const TYPE_CODE_F64: u8 = 2;
pub const TYPE_CODE_I32: u8 = 3;
pub const TYPE_CODE_F32: u8 = 4;
pub const TYPE_CODE_BOOL: u8 = 5;
pub const TYPE_CODE_FIXED_STR: u8 = 6;

/// The type of one attribute. Every type has a fixed size in the event.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AttrType {
    I64,
    F64,
    I32,
    F32,
    /// One byte, 0 or 1.
    Bool,
    /// A UTF-8 string of at most `len_bytes` bytes, zero-padded to exactly
    /// `len_bytes`; it contains no NUL byte.
    FixedStr(u16),
}

impl AttrType {
    /// Bytes the attribute occupies in an event.
    pub const fn size_bytes(self) -> usize {
        match self {
            AttrType::I64 | AttrType::F64 => 8,
            AttrType::I32 | AttrType::F32 => 4,
            AttrType::Bool => 1,
            AttrType::FixedStr(len) => len as usize,
        }
    }

    /// Whether the attribute reads as a number (for aggregates and filters):
    /// everything except strings.
    pub const fn is_numeric(self) -> bool {
        !matches!(self, AttrType::FixedStr(_))
    }

    /// The type code of the schema encoding.
    pub const fn code(self) -> u8 {
        match self {
            AttrType::I64 => TYPE_CODE_I64,
            AttrType::F64 => TYPE_CODE_F64,
            AttrType::I32 => TYPE_CODE_I32,
            AttrType::F32 => TYPE_CODE_F32,
            AttrType::Bool => TYPE_CODE_BOOL,
            AttrType::FixedStr(_) => TYPE_CODE_FIXED_STR,
        }
    }

    /// The type for an encoded `code` and string length (ignored unless the
    /// code is [`TYPE_CODE_FIXED_STR`]).
    pub fn from_code(code: u8, str_len_bytes: u16) -> Option<AttrType> {
        Some(match code {
            TYPE_CODE_I64 => AttrType::I64,
            TYPE_CODE_F64 => AttrType::F64,
            TYPE_CODE_I32 => AttrType::I32,
            TYPE_CODE_F32 => AttrType::F32,
            TYPE_CODE_BOOL => AttrType::Bool,
            TYPE_CODE_FIXED_STR => AttrType::FixedStr(str_len_bytes),
            _ => return None,
        })
    }

    /// A short name for error messages.
    pub fn name(self) -> String {
        match self {
            AttrType::I64 => "i64".into(),
            AttrType::F64 => "f64".into(),
            AttrType::I32 => "i32".into(),
            AttrType::F32 => "f32".into(),
            AttrType::Bool => "bool".into(),
            AttrType::FixedStr(len) => format!("str({len})"),
        }
    }
}

/// One named, typed attribute.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Attr {
    pub name: String,
    pub ty: AttrType,
}

impl Attr {
    pub fn new(name: impl Into<String>, ty: AttrType) -> Attr {
        Attr { name: name.into(), ty }
    }
}

/// A validated schema: 1..=[`MAX_ATTRS`] attributes with unique non-empty
/// names, strings of 1..=[`MAX_FIXED_STR_BYTES`] bytes, events of at most
/// [`MAX_EVENT_BYTES`]. The binary event is the timestamp followed by the
/// attributes in order, little-endian, without padding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamSchema {
    attrs: Vec<Attr>,
    /// Byte offset of each attribute within the event.
    offsets: Vec<usize>,
    event_bytes: usize,
}

impl StreamSchema {
    /// Validates `attrs` and computes the layout.
    pub fn new(attrs: Vec<Attr>) -> Result<StreamSchema, EventError> {
        if attrs.is_empty() || attrs.len() > MAX_ATTRS {
            return Err(EventError::invalid(format!(
                "a schema has 1..={MAX_ATTRS} attributes, got {}",
                attrs.len()
            )));
        }
        let mut names = HashSet::with_capacity(attrs.len());
        let mut offsets = Vec::with_capacity(attrs.len());
        let mut offset = TIMESTAMP_BYTES;
        for (i, attr) in attrs.iter().enumerate() {
            if attr.name.is_empty() || attr.name.len() > MAX_ATTR_NAME_BYTES {
                return Err(EventError::invalid(format!(
                    "attribute {i}: names have 1..={MAX_ATTR_NAME_BYTES} bytes, got {}",
                    attr.name.len()
                )));
            }
            if !names.insert(attr.name.as_str()) {
                return Err(EventError::invalid(format!("attribute {i}: duplicate name '{}'", attr.name)));
            }
            if let AttrType::FixedStr(len) = attr.ty {
                if len == 0 || len as usize > MAX_FIXED_STR_BYTES {
                    return Err(EventError::invalid(format!(
                        "attribute '{}': fixed strings have 1..={MAX_FIXED_STR_BYTES} bytes, got {len}",
                        attr.name
                    )));
                }
            }
            offsets.push(offset);
            offset += attr.ty.size_bytes();
        }
        if offset > MAX_EVENT_BYTES {
            return Err(EventError::invalid(format!(
                "events of this schema would have {offset} bytes, at most {MAX_EVENT_BYTES} are allowed"
            )));
        }
        Ok(StreamSchema { attrs, offsets, event_bytes: offset })
    }

    /// The Stock stream of the paper's benchmarks (section 5.1, from [39]):
    /// `sequence` i32, `symbol` i32, `price` f64, `volume` i32. With the
    /// timestamp an event has 8 + 4 + 4 + 8 + 4 = 28 bytes, as in the paper.
    pub fn stock() -> StreamSchema {
        StreamSchema::new(vec![
            Attr::new("sequence", AttrType::I32),
            Attr::new("symbol", AttrType::I32),
            Attr::new("price", AttrType::F64),
            Attr::new("volume", AttrType::I32),
        ])
        .expect("the Stock schema is valid")
    }

    /// The Sine stream of the paper's benchmarks (section 5.1): six f64
    /// attributes `sine0`..`sine5`; with the timestamp 56 bytes.
    pub fn sine() -> StreamSchema {
        StreamSchema::new((0..6).map(|i| Attr::new(format!("sine{i}"), AttrType::F64)).collect())
            .expect("the Sine schema is valid")
    }

    pub fn attrs(&self) -> &[Attr] {
        &self.attrs
    }

    pub fn attr_count(&self) -> usize {
        self.attrs.len()
    }

    /// Bytes of one binary event: timestamp plus attributes, no padding.
    pub fn event_bytes(&self) -> usize {
        self.event_bytes
    }

    /// Byte offset of attribute `i` within an event, if it exists.
    pub fn attr_offset(&self, i: usize) -> Option<usize> {
        self.offsets.get(i).copied()
    }

    /// Byte offsets of all attributes, in attribute order.
    pub fn attr_offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// The index of the attribute called `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.attrs.iter().position(|a| a.name == name)
    }

    /// Bytes of [`StreamSchema::encode`]'s output.
    pub fn encoded_bytes(&self) -> usize {
        SCHEMA_HEADER_BYTES
            + self.attrs.iter().map(|a| SCHEMA_ATTR_HEADER_BYTES + a.name.len()).sum::<usize>()
            + SCHEMA_CRC_BYTES
    }

    /// The stable binary encoding (`docs/format/events-node.md`, "Schema
    /// encoding"): header, one entry per attribute, CRC32C of everything
    /// before it.
    pub fn encode(&self) -> Vec<u8> {
        let total = self.encoded_bytes();
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&SCHEMA_MAGIC.to_le_bytes());
        out.push(SCHEMA_VERSION);
        out.push(self.attrs.len() as u8);
        out.extend_from_slice(&(total as u16).to_le_bytes());
        for attr in &self.attrs {
            out.push(attr.ty.code());
            out.push(attr.name.len() as u8);
            let str_len = match attr.ty {
                AttrType::FixedStr(len) => len,
                _ => 0,
            };
            out.extend_from_slice(&str_len.to_le_bytes());
            out.extend_from_slice(attr.name.as_bytes());
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        debug_assert_eq!(out.len(), total);
        out
    }

    /// Decodes an encoding that fills `bytes` exactly.
    pub fn decode(bytes: &[u8]) -> Result<StreamSchema, EventError> {
        let (schema, used) = StreamSchema::decode_prefix(bytes)?;
        if used != bytes.len() {
            return Err(EventError::corruption(
                "schema",
                format!("{} trailing bytes after a {used}-byte schema", bytes.len() - used),
            ));
        }
        Ok(schema)
    }

    /// Decodes the encoding at the start of `bytes`; returns the schema and
    /// the bytes it used. Never panics; damaged bytes give `Corruption`.
    pub fn decode_prefix(bytes: &[u8]) -> Result<(StreamSchema, usize), EventError> {
        let bad = |what: String| EventError::corruption("schema", what);
        if bytes.len() < SCHEMA_HEADER_BYTES + SCHEMA_CRC_BYTES {
            return Err(bad(format!("{} bytes are too short for a schema", bytes.len())));
        }
        let magic = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes"));
        if magic != SCHEMA_MAGIC {
            return Err(bad(format!("bad magic {magic:#010x}")));
        }
        let version = bytes[SCHEMA_OFFSET_VERSION];
        if version != SCHEMA_VERSION {
            return Err(bad(format!("unknown version {version}, expected {SCHEMA_VERSION}")));
        }
        let count = bytes[SCHEMA_OFFSET_ATTR_COUNT] as usize;
        let total =
            u16::from_le_bytes([bytes[SCHEMA_OFFSET_TOTAL_BYTES], bytes[SCHEMA_OFFSET_TOTAL_BYTES + 1]])
                as usize;
        if total < SCHEMA_HEADER_BYTES + SCHEMA_CRC_BYTES || total > bytes.len() {
            return Err(bad(format!("length {total} does not fit the {} bytes given", bytes.len())));
        }
        let body = &bytes[..total - SCHEMA_CRC_BYTES];
        let stored_crc =
            u32::from_le_bytes(bytes[total - SCHEMA_CRC_BYTES..total].try_into().expect("4 bytes"));
        let crc = crc32c::crc32c(body);
        if crc != stored_crc {
            return Err(bad(format!("CRC mismatch: stored {stored_crc:#010x}, computed {crc:#010x}")));
        }
        let mut at = SCHEMA_HEADER_BYTES;
        let mut attrs = Vec::with_capacity(count);
        for i in 0..count {
            let Some(head) = body.get(at..at + SCHEMA_ATTR_HEADER_BYTES) else {
                return Err(bad(format!("attribute {i} runs past the end")));
            };
            let name_len = head[1] as usize;
            let str_len = u16::from_le_bytes([head[2], head[3]]);
            let ty = AttrType::from_code(head[0], str_len)
                .ok_or_else(|| bad(format!("attribute {i}: unknown type code {}", head[0])))?;
            if ty.code() != TYPE_CODE_FIXED_STR && str_len != 0 {
                return Err(bad(format!("attribute {i}: string length {str_len} on a {}", ty.name())));
            }
            at += SCHEMA_ATTR_HEADER_BYTES;
            let Some(name) = body.get(at..at + name_len) else {
                return Err(bad(format!("attribute {i}: name runs past the end")));
            };
            let name = std::str::from_utf8(name)
                .map_err(|_| bad(format!("attribute {i}: name is not UTF-8")))?
                .to_string();
            at += name_len;
            attrs.push(Attr { name, ty });
        }
        if at != body.len() {
            return Err(bad(format!("{} unused bytes before the CRC", body.len() - at)));
        }
        let schema = StreamSchema::new(attrs).map_err(|e| bad(format!("invalid schema: {e}")))?;
        Ok((schema, total))
    }
}

/// Proptest strategies for schemas, shared by the crate's tests.
#[cfg(test)]
pub(crate) mod strategies {
    use super::*;
    use proptest::prelude::*;

    pub(crate) fn attr_type_strategy() -> impl Strategy<Value = AttrType> {
        prop_oneof![
            Just(AttrType::I64),
            Just(AttrType::F64),
            Just(AttrType::I32),
            Just(AttrType::F32),
            Just(AttrType::Bool),
            (1u16..=12).prop_map(AttrType::FixedStr),
        ]
    }

    pub(crate) fn schema_strategy() -> impl Strategy<Value = StreamSchema> {
        proptest::collection::vec(("[a-zA-Z_é]{1,12}", attr_type_strategy()), 1..=20).prop_map(|attrs| {
            let attrs = attrs
                .into_iter()
                .enumerate()
                .map(|(i, (name, ty))| Attr::new(format!("{name}{i}"), ty))
                .collect();
            StreamSchema::new(attrs).expect("generated schemas are valid")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::strategies::schema_strategy;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn stock_and_sine_have_the_papers_event_sizes() {
        let stock = StreamSchema::stock();
        assert_eq!(stock.event_bytes(), 28);
        assert_eq!(stock.attr_offsets(), &[8, 12, 16, 24]);
        assert_eq!(stock.index_of("price"), Some(2));
        assert_eq!(stock.index_of("nope"), None);
        let sine = StreamSchema::sine();
        assert_eq!(sine.event_bytes(), 56);
        assert_eq!(sine.attr_offset(5), Some(48));
        assert_eq!(sine.attr_offset(6), None);
    }

    #[test]
    fn offsets_follow_sizes_without_padding() {
        let s = StreamSchema::new(vec![
            Attr::new("flag", AttrType::Bool),
            Attr::new("code", AttrType::FixedStr(3)),
            Attr::new("x", AttrType::F32),
            Attr::new("n", AttrType::I64),
        ])
        .unwrap();
        assert_eq!(s.attr_offsets(), &[8, 9, 12, 16]);
        assert_eq!(s.event_bytes(), 24);
    }

    #[test]
    fn validation_rejects_bad_schemas() {
        let cases: Vec<(Vec<Attr>, &str)> = vec![
            (vec![], "1..=64 attributes"),
            ((0..65).map(|i| Attr::new(format!("a{i}"), AttrType::Bool)).collect(), "1..=64 attributes"),
            (vec![Attr::new("", AttrType::I64)], "names have"),
            (vec![Attr::new("x".repeat(256), AttrType::I64)], "names have"),
            (vec![Attr::new("a", AttrType::I64), Attr::new("a", AttrType::F64)], "duplicate name"),
            (vec![Attr::new("s", AttrType::FixedStr(0))], "fixed strings"),
            (vec![Attr::new("s", AttrType::FixedStr(256))], "fixed strings"),
            ((0..5).map(|i| Attr::new(format!("s{i}"), AttrType::FixedStr(255))).collect(), "at most 1024"),
        ];
        for (attrs, expected) in cases {
            let err = StreamSchema::new(attrs).unwrap_err();
            assert!(err.to_string().contains(expected), "{err} lacks '{expected}'");
        }
        let widest = (0..64).map(|i| Attr::new(format!("a{i}"), AttrType::I64)).collect();
        assert_eq!(StreamSchema::new(widest).unwrap().event_bytes(), 8 + 64 * 8);
    }

    #[test]
    fn encoding_round_trips_and_has_the_documented_length() {
        for schema in [StreamSchema::stock(), StreamSchema::sine()] {
            let bytes = schema.encode();
            assert_eq!(bytes.len(), schema.encoded_bytes());
            assert_eq!(&bytes[0..4], b"STSC");
            assert_eq!(StreamSchema::decode(&bytes).unwrap(), schema);
            let mut longer = bytes.clone();
            longer.extend_from_slice(b"tail");
            assert_eq!(StreamSchema::decode_prefix(&longer).unwrap(), (schema.clone(), bytes.len()));
            assert!(StreamSchema::decode(&longer).unwrap_err().is_corruption());
        }
    }

    #[test]
    fn every_flipped_bit_and_every_truncation_is_rejected() {
        let bytes = StreamSchema::stock().encode();
        for at in 0..bytes.len() {
            for bit in 0..8 {
                let mut damaged = bytes.clone();
                damaged[at] ^= 1 << bit;
                let err = StreamSchema::decode(&damaged).unwrap_err();
                assert!(err.is_corruption(), "byte {at} bit {bit}: {err}");
            }
        }
        for len in 0..bytes.len() {
            assert!(StreamSchema::decode(&bytes[..len]).unwrap_err().is_corruption(), "length {len}");
        }
    }

    #[test]
    fn a_correct_crc_over_an_invalid_schema_is_still_rejected() {
        // Two attributes with the same name, correctly framed and checksummed.
        let mut bytes = SCHEMA_MAGIC.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[SCHEMA_VERSION, 2]);
        bytes.extend_from_slice(&22u16.to_le_bytes());
        for _ in 0..2 {
            bytes.extend_from_slice(&[TYPE_CODE_I64, 1, 0, 0, b'a']);
        }
        let crc = crc32c::crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(bytes.len(), 22);
        let err = StreamSchema::decode(&bytes).unwrap_err();
        assert!(err.is_corruption() && err.to_string().contains("duplicate name"), "{err}");
    }

    proptest! {
        #[test]
        fn schema_encoding_round_trips(schema in schema_strategy()) {
            let bytes = schema.encode();
            prop_assert_eq!(bytes.len(), schema.encoded_bytes());
            prop_assert_eq!(StreamSchema::decode(&bytes).unwrap(), schema);
        }

        #[test]
        fn schema_decode_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let result = StreamSchema::decode(&bytes);
            prop_assert!(result.is_err() || result.unwrap().encode() == bytes);
        }
    }
}
