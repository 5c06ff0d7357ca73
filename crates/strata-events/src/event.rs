//! The fixed-size binary event of a stream (chronicledb-pmem.txt section 4.1:
//! "every incoming event is directly converted into the corresponding binary
//! representation and attached to the current leaf page"): encode and decode
//! against a [`StreamSchema`], type-checked, little-endian; validation of
//! encoded bytes without decoding; and fast accessors that read the timestamp
//! or one attribute as `f64` straight from the bytes (aggregates, filters).
//!
//! Layout: `ts` (i64) at offset 0, then each attribute at
//! [`StreamSchema::attr_offset`]: integers and floats little-endian, `Bool`
//! one byte 0 or 1, `FixedStr(n)` the UTF-8 bytes zero-padded to `n`.

use crate::ids::{DecodeError, EventError};
use crate::schema::{AttrType, StreamSchema, TIMESTAMP_BYTES};

/// One attribute value; the variant matches the attribute's [`AttrType`].
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    I64(i64),
    F64(f64),
    I32(i32),
    F32(f32),
    Bool(bool),
    /// For a `FixedStr(n)` attribute: at most `n` UTF-8 bytes, no NUL.
    Str(String),
}

impl Value {
    /// A short name of the variant for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::I64(_) => "i64",
            Value::F64(_) => "f64",
            Value::I32(_) => "i32",
            Value::F32(_) => "f32",
            Value::Bool(_) => "bool",
            Value::Str(_) => "str",
        }
    }

    /// The value as a number, as [`attr_as_f64`] reads it (strings: `None`).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::I64(v) => Some(v as f64),
            Value::F64(v) => Some(v),
            Value::I32(v) => Some(v as f64),
            Value::F32(v) => Some(v as f64),
            Value::Bool(v) => Some(if v { 1.0 } else { 0.0 }),
            Value::Str(_) => None,
        }
    }
}

/// An event: application timestamp (ns) and one value per attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub ts: i64,
    pub values: Vec<Value>,
}

impl Event {
    pub fn new(ts: i64, values: Vec<Value>) -> Event {
        Event { ts, values }
    }
}

/// Writes `event` into `out`, which must be exactly
/// [`StreamSchema::event_bytes`] long. Checks the value count and every
/// value's type and, for strings, length and the absence of NUL bytes.
/// On error `out` may be partly written.
pub fn encode_into(schema: &StreamSchema, event: &Event, out: &mut [u8]) -> Result<(), EventError> {
    if out.len() != schema.event_bytes() {
        return Err(EventError::invalid(format!(
            "an event of this schema has {} bytes, the buffer has {}",
            schema.event_bytes(),
            out.len()
        )));
    }
    if event.values.len() != schema.attr_count() {
        return Err(EventError::invalid(format!(
            "the schema has {} attributes, the event {} values",
            schema.attr_count(),
            event.values.len()
        )));
    }
    out[..TIMESTAMP_BYTES].copy_from_slice(&event.ts.to_le_bytes());
    for (i, (attr, value)) in schema.attrs().iter().zip(&event.values).enumerate() {
        let at = schema.attr_offsets()[i];
        let field = &mut out[at..at + attr.ty.size_bytes()];
        match (attr.ty, value) {
            (AttrType::I64, Value::I64(v)) => field.copy_from_slice(&v.to_le_bytes()),
            (AttrType::F64, Value::F64(v)) => field.copy_from_slice(&v.to_le_bytes()),
            (AttrType::I32, Value::I32(v)) => field.copy_from_slice(&v.to_le_bytes()),
            (AttrType::F32, Value::F32(v)) => field.copy_from_slice(&v.to_le_bytes()),
            (AttrType::Bool, Value::Bool(v)) => field[0] = *v as u8,
            (AttrType::FixedStr(len), Value::Str(s)) => {
                if s.len() > len as usize {
                    return Err(EventError::invalid(format!(
                        "attribute '{}' (index {i}) holds at most {len} bytes, got {}",
                        attr.name,
                        s.len()
                    )));
                }
                if s.as_bytes().contains(&0) {
                    return Err(EventError::invalid(format!(
                        "attribute '{}' (index {i}): strings may not contain NUL",
                        attr.name
                    )));
                }
                field[..s.len()].copy_from_slice(s.as_bytes());
                field[s.len()..].fill(0);
            }
            (ty, v) => {
                return Err(EventError::invalid(format!(
                    "attribute '{}' (index {i}) expects {}, got {}",
                    attr.name,
                    ty.name(),
                    v.type_name()
                )))
            }
        }
    }
    Ok(())
}

/// [`encode_into`] a fresh buffer.
pub fn encode(schema: &StreamSchema, event: &Event) -> Result<Vec<u8>, EventError> {
    let mut out = vec![0; schema.event_bytes()];
    encode_into(schema, event, &mut out)?;
    Ok(out)
}

fn bad_event(what: String) -> EventError {
    EventError::corruption("event", what)
}

fn check_len(schema: &StreamSchema, bytes: &[u8]) -> Result<(), EventError> {
    if bytes.len() != schema.event_bytes() {
        return Err(EventError::invalid(format!(
            "an event of this schema has {} bytes, got {}",
            schema.event_bytes(),
            bytes.len()
        )));
    }
    Ok(())
}

/// The string of a `FixedStr` field: the bytes before the first NUL, which
/// must be UTF-8 and followed only by NULs.
fn fixed_str(field: &[u8]) -> Result<&str, DecodeError> {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    if field[end..].iter().any(|&b| b != 0) {
        return Err(DecodeError::Invalid("string padding is not all zero".into()));
    }
    std::str::from_utf8(&field[..end]).map_err(|_| DecodeError::Invalid("string is not UTF-8".into()))
}

/// Decodes an event. A wrong length is `InvalidInput`; a `Bool` other than
/// 0/1 or a malformed string is `Corruption`.
pub fn decode(schema: &StreamSchema, bytes: &[u8]) -> Result<Event, EventError> {
    check_len(schema, bytes)?;
    let mut values = Vec::with_capacity(schema.attr_count());
    for (i, attr) in schema.attrs().iter().enumerate() {
        let at = schema.attr_offsets()[i];
        let field = &bytes[at..at + attr.ty.size_bytes()];
        values.push(match attr.ty {
            AttrType::I64 => Value::I64(i64::from_le_bytes(field.try_into().expect("8 bytes"))),
            AttrType::F64 => Value::F64(f64::from_le_bytes(field.try_into().expect("8 bytes"))),
            AttrType::I32 => Value::I32(i32::from_le_bytes(field.try_into().expect("4 bytes"))),
            AttrType::F32 => Value::F32(f32::from_le_bytes(field.try_into().expect("4 bytes"))),
            AttrType::Bool => match field[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return Err(bad_event(format!("attribute '{}': bool byte {b}", attr.name))),
            },
            AttrType::FixedStr(_) => Value::Str(
                fixed_str(field)
                    .map_err(|e| bad_event(format!("attribute '{}': {e}", attr.name)))?
                    .to_string(),
            ),
        });
    }
    Ok(Event { ts: timestamp_of(bytes), values })
}

/// Whether the schema has attributes whose bytes can be invalid (`Bool`,
/// `FixedStr`); if not, every byte string of the right length is an event.
pub fn schema_needs_validation(schema: &StreamSchema) -> bool {
    schema.attrs().iter().any(|a| matches!(a.ty, AttrType::Bool | AttrType::FixedStr(_)))
}

/// Checks that `bytes` decode (see [`decode`]) without allocating.
pub fn validate(schema: &StreamSchema, bytes: &[u8]) -> Result<(), EventError> {
    check_len(schema, bytes)?;
    for (i, attr) in schema.attrs().iter().enumerate() {
        let at = schema.attr_offsets()[i];
        let field = &bytes[at..at + attr.ty.size_bytes()];
        match attr.ty {
            AttrType::Bool if field[0] > 1 => {
                return Err(bad_event(format!("attribute '{}': bool byte {}", attr.name, field[0])))
            }
            AttrType::FixedStr(_) => {
                fixed_str(field).map_err(|e| bad_event(format!("attribute '{}': {e}", attr.name)))?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// The timestamp of an encoded event: its first 8 bytes (little-endian).
/// Shorter input reads as `i64::MIN` (never panics).
#[inline]
pub fn timestamp_of(bytes: &[u8]) -> i64 {
    match bytes.get(..TIMESTAMP_BYTES) {
        Some(ts) => i64::from_le_bytes(ts.try_into().expect("8 bytes")),
        None => i64::MIN,
    }
}

/// Reads a numeric field of type `ty` at `offset` as `f64`; `None` for
/// strings or when the bytes are too short.
#[inline]
pub(crate) fn numeric_at(bytes: &[u8], offset: usize, ty: AttrType) -> Option<f64> {
    match ty {
        AttrType::I64 => Some(i64::from_le_bytes(bytes.get(offset..offset + 8)?.try_into().ok()?) as f64),
        AttrType::F64 => Some(f64::from_le_bytes(bytes.get(offset..offset + 8)?.try_into().ok()?)),
        AttrType::I32 => Some(i32::from_le_bytes(bytes.get(offset..offset + 4)?.try_into().ok()?) as f64),
        AttrType::F32 => Some(f32::from_le_bytes(bytes.get(offset..offset + 4)?.try_into().ok()?) as f64),
        AttrType::Bool => Some(if *bytes.get(offset)? == 0 { 0.0 } else { 1.0 }),
        AttrType::FixedStr(_) => None,
    }
}

/// Attribute `i` of the encoded event `bytes` as `f64`, without decoding
/// the rest: integers convert (i64 beyond 2^53 loses precision), `Bool` is
/// 0 or 1 (any nonzero byte reads as 1), strings are not numeric (`None`).
/// `None` also when `i` is out of range or `bytes` too short.
#[inline]
pub fn attr_as_f64(schema: &StreamSchema, bytes: &[u8], i: usize) -> Option<f64> {
    let attr = schema.attrs().get(i)?;
    numeric_at(bytes, schema.attr_offsets()[i], attr.ty)
}

/// Attribute `i` of the encoded event `bytes` as a string slice, for a
/// `FixedStr` attribute with valid bytes; `None` otherwise.
pub fn attr_as_str<'a>(schema: &StreamSchema, bytes: &'a [u8], i: usize) -> Option<&'a str> {
    let attr = schema.attrs().get(i)?;
    let AttrType::FixedStr(len) = attr.ty else { return None };
    let at = schema.attr_offsets()[i];
    fixed_str(bytes.get(at..at + len as usize)?).ok()
}

/// Proptest strategies for events, shared by the crate's tests.
#[cfg(test)]
pub(crate) mod strategies {
    use super::*;
    use proptest::prelude::*;

    /// A value of type `ty`. When `wild`, floats include NaN and infinities and
    /// integers span their type; otherwise every value is exact in an f64 and
    /// sums of a few thousand of them are exact too.
    pub(crate) fn value_strategy(ty: AttrType, wild: bool) -> BoxedStrategy<Value> {
        match ty {
            AttrType::I64 if wild => any::<i64>().prop_map(Value::I64).boxed(),
            // Within 2^40, so sums of many values stay exact in an f64.
            AttrType::I64 => (-(1i64 << 40)..(1i64 << 40)).prop_map(Value::I64).boxed(),
            AttrType::F64 if wild => any::<f64>().prop_map(Value::F64).boxed(),
            AttrType::F64 => (-1_000_000i32..1_000_000).prop_map(|v| Value::F64(v as f64 / 4.0)).boxed(),
            AttrType::I32 => any::<i32>().prop_map(Value::I32).boxed(),
            AttrType::F32 if wild => any::<f32>().prop_map(Value::F32).boxed(),
            AttrType::F32 => (-100_000i32..100_000).prop_map(|v| Value::F32(v as f32 / 4.0)).boxed(),
            AttrType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
            AttrType::FixedStr(len) => proptest::string::string_regex(&format!("[a-zé€😀]{{0,{len}}}"))
                .expect("valid regex")
                .prop_map(move |mut s| {
                    while s.len() > len as usize {
                        s.pop();
                    }
                    Value::Str(s)
                })
                .boxed(),
        }
    }

    /// Events of `schema`, timestamps from `ts`.
    pub(crate) fn event_strategy(
        schema: &StreamSchema,
        ts: impl Strategy<Value = i64>,
        wild: bool,
    ) -> impl Strategy<Value = Event> {
        let values: Vec<BoxedStrategy<Value>> =
            schema.attrs().iter().map(|a| value_strategy(a.ty, wild)).collect();
        (ts, values).prop_map(|(ts, values)| Event { ts, values })
    }
}

#[cfg(test)]
mod tests {
    use super::strategies::event_strategy;
    use super::*;
    use crate::schema::strategies::schema_strategy;
    use crate::schema::Attr;
    use proptest::prelude::*;
    use proptest::test_runner::RngSeed;

    fn mixed() -> StreamSchema {
        StreamSchema::new(vec![
            Attr::new("n", AttrType::I64),
            Attr::new("x", AttrType::F64),
            Attr::new("m", AttrType::I32),
            Attr::new("y", AttrType::F32),
            Attr::new("ok", AttrType::Bool),
            Attr::new("sym", AttrType::FixedStr(4)),
        ])
        .unwrap()
    }

    fn mixed_event() -> Event {
        Event::new(
            -5,
            vec![
                Value::I64(-7),
                Value::F64(2.5),
                Value::I32(40),
                Value::F32(-0.5),
                Value::Bool(true),
                Value::Str("ab".into()),
            ],
        )
    }

    #[test]
    fn encodes_little_endian_at_the_schema_offsets() {
        let schema = mixed();
        let bytes = encode(&schema, &mixed_event()).unwrap();
        assert_eq!(bytes.len(), 8 + 8 + 8 + 4 + 4 + 1 + 4);
        assert_eq!(&bytes[0..8], &(-5i64).to_le_bytes());
        assert_eq!(&bytes[8..16], &(-7i64).to_le_bytes());
        assert_eq!(&bytes[16..24], &2.5f64.to_le_bytes());
        assert_eq!(&bytes[24..28], &40i32.to_le_bytes());
        assert_eq!(&bytes[28..32], &(-0.5f32).to_le_bytes());
        assert_eq!(bytes[32], 1);
        assert_eq!(&bytes[33..37], b"ab\0\0");
        assert_eq!(decode(&schema, &bytes).unwrap(), mixed_event());
        assert_eq!(timestamp_of(&bytes), -5);
    }

    #[test]
    fn fast_accessors_read_single_attributes() {
        let schema = mixed();
        let bytes = encode(&schema, &mixed_event()).unwrap();
        let read: Vec<Option<f64>> = (0..7).map(|i| attr_as_f64(&schema, &bytes, i)).collect();
        assert_eq!(read, vec![Some(-7.0), Some(2.5), Some(40.0), Some(-0.5), Some(1.0), None, None]);
        assert_eq!(attr_as_str(&schema, &bytes, 5), Some("ab"));
        assert_eq!(attr_as_str(&schema, &bytes, 0), None);
        assert_eq!(attr_as_f64(&schema, &bytes[..20], 1), None, "short bytes read as None");
        assert_eq!(timestamp_of(&bytes[..3]), i64::MIN);
        for (i, v) in mixed_event().values.iter().enumerate() {
            assert_eq!(v.as_f64(), attr_as_f64(&schema, &bytes, i), "attribute {i}");
        }
    }

    #[test]
    fn type_errors_are_clear() {
        let schema = mixed();
        let mut event = mixed_event();
        event.values[1] = Value::I32(3);
        let err = encode(&schema, &event).unwrap_err().to_string();
        assert!(err.contains("attribute 'x' (index 1) expects f64, got i32"), "{err}");
        event.values.pop();
        let err = encode(&schema, &event).unwrap_err().to_string();
        assert!(err.contains("6 attributes, the event 5 values"), "{err}");
        let mut event = mixed_event();
        event.values[5] = Value::Str("abcde".into());
        let err = encode(&schema, &event).unwrap_err().to_string();
        assert!(err.contains("at most 4 bytes, got 5"), "{err}");
        event.values[5] = Value::Str("a\0".into());
        assert!(encode(&schema, &event).unwrap_err().to_string().contains("NUL"));
        let mut short = vec![0; 10];
        assert!(encode_into(&schema, &mixed_event(), &mut short).is_err());
        assert!(matches!(decode(&schema, &short), Err(EventError::InvalidInput(_))));
    }

    #[test]
    fn malformed_bools_and_strings_are_corruption() {
        let schema = mixed();
        let good = encode(&schema, &mixed_event()).unwrap();
        assert!(validate(&schema, &good).is_ok());
        let mut bad_bool = good.clone();
        bad_bool[32] = 2;
        let mut bad_pad = good.clone();
        bad_pad[36] = b'x'; // "ab\0x": padding not zero
        let mut bad_utf8 = good.clone();
        bad_utf8[33] = 0xff;
        for bytes in [bad_bool, bad_pad, bad_utf8] {
            assert!(decode(&schema, &bytes).unwrap_err().is_corruption());
            assert!(validate(&schema, &bytes).unwrap_err().is_corruption());
        }
        assert!(schema_needs_validation(&schema));
        assert!(!schema_needs_validation(&StreamSchema::sine()));
    }

    #[test]
    fn full_width_strings_have_no_padding() {
        let schema = StreamSchema::new(vec![Attr::new("s", AttrType::FixedStr(3))]).unwrap();
        let event = Event::new(1, vec![Value::Str("€".into())]);
        let bytes = encode(&schema, &event).unwrap();
        assert_eq!(&bytes[8..], "€".as_bytes());
        assert_eq!(decode(&schema, &bytes).unwrap(), event);
    }

    /// The property tests' fixed proptest seed: they are deterministic and
    /// every assertion message prints it.
    const PROPTEST_SEED: u64 = 0x000E_7E27;

    fn proptest_config() -> ProptestConfig {
        ProptestConfig {
            rng_seed: RngSeed::Fixed(PROPTEST_SEED),
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    /// A random schema and a random event of it.
    fn schema_and_event() -> impl Strategy<Value = (StreamSchema, Event)> {
        schema_strategy().prop_flat_map(|s| {
            let events = event_strategy(&s, any::<i64>(), true);
            (Just(s), events)
        })
    }

    proptest! {
        #![proptest_config(proptest_config())]

        #[test]
        fn events_round_trip((schema, event) in schema_and_event()) {
            let seed = PROPTEST_SEED;
            let bytes = encode(&schema, &event).unwrap();
            prop_assert_eq!(bytes.len(), schema.event_bytes(), "seed {:#x}", seed);
            prop_assert!(validate(&schema, &bytes).is_ok(), "seed {:#x}: encoded bytes must validate", seed);
            let back = decode(&schema, &bytes).unwrap();
            // Compare through the bytes so NaN payloads count as equal.
            prop_assert_eq!(encode(&schema, &back).unwrap(), bytes.clone(), "seed {:#x}", seed);
            prop_assert_eq!(back.ts, event.ts, "seed {:#x}", seed);
            for i in 0..schema.attr_count() {
                let direct = attr_as_f64(&schema, &bytes, i).map(f64::to_bits);
                prop_assert_eq!(
                    direct,
                    event.values[i].as_f64().map(f64::to_bits),
                    "seed {:#x}: attribute {}", seed, i
                );
            }
        }

        #[test]
        fn decode_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 37)) {
            let schema = mixed();
            match decode(&schema, &bytes) {
                Ok(event) => {
                    prop_assert_eq!(encode(&schema, &event).unwrap(), bytes, "seed {:#x}", PROPTEST_SEED)
                }
                Err(e) => prop_assert!(
                    e.is_corruption() && validate(&schema, &bytes).is_err(),
                    "seed {:#x}: {}", PROPTEST_SEED, e
                ),
            }
        }
    }
}
