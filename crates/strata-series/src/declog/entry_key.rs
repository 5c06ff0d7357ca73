//! What the series engine writes into a DecLog log entry (declog.txt 4.3.1:
//! "for each time series data point accessed by a transaction, we use the
//! measurement, tag key, and field key as the key, which is recorded in each
//! log entry"; 4.4.1 compresses it).
//!
//! One entry is one operation on one series value: a write (insert or
//! update, told apart by the entry's LSN) or a point delete. Its payload is
//! DecLog's uncompressed point payload (`strata_declog::compress::
//! point_payload`): the *key*, the timestamp, 64 value bits and the *rest*.
//!
//! - key: `put_str(db)`, the series key (`put_series_key`: measurement,
//!   tags, field), then the field type code. The field type is part of the
//!   key because a series never changes type.
//! - value bits: float bits; i64 / u64 as is; boolean 0 or 1; 0 for strings
//!   and deletes (XOR compression then sees zeros).
//! - rest: one op byte ([`OP_WRITE`] or [`OP_DELETE`]), then for a string
//!   write the UTF-8 bytes.
//!
//! The same bytes come back from parsing whether compression was on or not.

use strata_declog::compress::point_payload;

use crate::bytes::{put_series_key, put_str, ByteReader};
use crate::error::FormatError;
use crate::model::{FieldType, FieldValue, SeriesKey, TimestampNs};

/// Rest byte 0: the entry writes a value.
pub const OP_WRITE: u8 = 1;
/// Rest byte 0: the entry deletes the point.
pub const OP_DELETE: u8 = 2;

/// A decoded entry key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryKey {
    pub db: String,
    pub key: SeriesKey,
    pub field_type: FieldType,
}

/// What an entry does to its point.
#[derive(Clone, Debug, PartialEq)]
pub enum EntryOp {
    Write(FieldValue),
    Delete,
}

/// A decoded entry.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryPoint {
    pub key: EntryKey,
    pub ts: TimestampNs,
    pub op: EntryOp,
}

/// The key bytes of a series.
pub fn encode_key(db: &str, key: &SeriesKey, field_type: FieldType) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    put_str(&mut out, db);
    put_series_key(&mut out, key);
    out.push(field_type.code());
    out
}

pub fn decode_key(bytes: &[u8]) -> Result<EntryKey, FormatError> {
    let mut r = ByteReader::new(bytes, "entry key offset");
    let db = r.string("database")?;
    let key = r.series_key()?;
    let code = r.u8()?;
    let field_type = FieldType::from_code(code)
        .ok_or(FormatError::UnknownCode { what: "field type code", code: code.into() })?;
    r.finish("entry key")?;
    Ok(EntryKey { db, key, field_type })
}

/// The payload of one operation on the series with key bytes `key`.
pub fn encode_payload(key: &[u8], ts: TimestampNs, op: &EntryOp) -> Vec<u8> {
    let (bits, rest): (u64, Vec<u8>) = match op {
        EntryOp::Delete => (0, vec![OP_DELETE]),
        EntryOp::Write(v) => match v {
            FieldValue::Float(f) => (f.to_bits(), vec![OP_WRITE]),
            FieldValue::Integer(i) => (*i as u64, vec![OP_WRITE]),
            FieldValue::Unsigned(u) => (*u, vec![OP_WRITE]),
            FieldValue::Boolean(b) => (*b as u64, vec![OP_WRITE]),
            FieldValue::String(s) => {
                let mut rest = Vec::with_capacity(1 + s.len());
                rest.push(OP_WRITE);
                rest.extend_from_slice(s.as_bytes());
                (0, rest)
            }
        },
    };
    point_payload::encode(key, ts, bits, &rest)
}

pub fn decode_payload(bytes: &[u8]) -> Result<EntryPoint, FormatError> {
    let p = point_payload::decode(bytes)?;
    let key = decode_key(p.key)?;
    let op = decode_op(p.value_bits, p.rest, key.field_type)?;
    Ok(EntryPoint { key, ts: p.timestamp, op })
}

/// The operation of an entry from its value bits and rest, for a series of
/// type `field_type` (replay decodes each key once and then only this).
pub fn decode_op(bits: u64, rest: &[u8], field_type: FieldType) -> Result<EntryOp, FormatError> {
    let (op_byte, tail) =
        rest.split_first().ok_or_else(|| FormatError::Invalid("entry payload has no op byte".into()))?;
    let op = match *op_byte {
        OP_DELETE if tail.is_empty() && bits == 0 => EntryOp::Delete,
        OP_WRITE => EntryOp::Write(match field_type {
            FieldType::Float => FieldValue::Float(f64::from_bits(bits)),
            FieldType::Integer => FieldValue::Integer(bits as i64),
            FieldType::Unsigned => FieldValue::Unsigned(bits),
            FieldType::Boolean if bits <= 1 => FieldValue::Boolean(bits == 1),
            FieldType::Boolean => {
                return Err(FormatError::Invalid(format!("boolean entry with value bits {bits}")))
            }
            FieldType::String if bits != 0 => {
                return Err(FormatError::Invalid(format!("string entry with value bits {bits}")))
            }
            FieldType::String => FieldValue::String(
                String::from_utf8(tail.to_vec())
                    .map_err(|_| FormatError::Invalid("string entry is not UTF-8".into()))?,
            ),
        }),
        other => {
            return Err(FormatError::Invalid(format!(
                "unknown entry op byte {other} ({} rest bytes)",
                rest.len()
            )))
        }
    };
    if matches!(op, EntryOp::Write(ref v) if v.field_type() != FieldType::String) && !tail.is_empty() {
        return Err(FormatError::Invalid(format!(
            "{} trailing rest bytes after a non-string write",
            tail.len()
        )));
    }
    Ok(op)
}

/// Fuzz entry: decoding arbitrary bytes never panics, and what decodes
/// re-encodes to the same bytes.
pub fn fuzz_entry_decode(data: &[u8]) {
    if let Ok(e) = decode_payload(data) {
        let key = encode_key(&e.key.db, &e.key.key, e.key.field_type);
        assert_eq!(encode_payload(&key, e.ts, &e.op), data, "entry re-encodes to other bytes");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn key() -> SeriesKey {
        SeriesKey {
            measurement: "cpu".into(),
            tags: vec![("host".into(), "a".into()), ("region".into(), "eu".into())],
            field: "usage".into(),
        }
    }

    #[test]
    fn every_value_type_and_deletes_round_trip() {
        let values = [
            FieldValue::Float(-0.0),
            FieldValue::Float(f64::NAN),
            FieldValue::Integer(i64::MIN),
            FieldValue::Unsigned(u64::MAX),
            FieldValue::Boolean(true),
            FieldValue::String("naïve \"quoted\"".into()),
        ];
        for v in values {
            let kb = encode_key("db", &key(), v.field_type());
            let bytes = encode_payload(&kb, -17, &EntryOp::Write(v.clone()));
            let back = decode_payload(&bytes).unwrap();
            assert_eq!(back.key, EntryKey { db: "db".into(), key: key(), field_type: v.field_type() });
            assert_eq!(back.ts, -17);
            match (&back.op, &v) {
                (EntryOp::Write(FieldValue::Float(a)), FieldValue::Float(b)) => {
                    assert_eq!(a.to_bits(), b.to_bits())
                }
                (got, _) => assert_eq!(got, &EntryOp::Write(v.clone())),
            }
        }
        let kb = encode_key("db", &key(), FieldType::Integer);
        let del = decode_payload(&encode_payload(&kb, 5, &EntryOp::Delete)).unwrap();
        assert_eq!(del.op, EntryOp::Delete);
    }

    #[test]
    fn damaged_payloads_are_errors_that_say_what() {
        let kb = encode_key("db", &key(), FieldType::Boolean);
        let mut bytes = encode_payload(&kb, 1, &EntryOp::Write(FieldValue::Boolean(true)));
        let last = bytes.len() - 1;
        bytes[last] = 9;
        let err = decode_payload(&bytes).unwrap_err();
        assert!(err.to_string().contains("op byte 9"), "{err}");
        let kb = encode_key("db", &key(), FieldType::Boolean);
        let bytes = point_payload::encode(&kb, 1, 7, &[OP_WRITE]);
        assert!(decode_payload(&bytes).unwrap_err().to_string().contains("boolean"));
    }

    #[test]
    fn fuzz_smoke_entry_decode() {
        let seed = 0x5eed_e417_u64;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let kb = encode_key("db", &key(), FieldType::String);
        let valid = encode_payload(&kb, 99, &EntryOp::Write(FieldValue::String("x".into())));
        let mut decoded = 0;
        for i in 0..20_000 {
            let mut input = if i % 2 == 0 { valid.clone() } else { vec![0; rng.gen_range(0..64)] };
            for _ in 0..rng.gen_range(0..4) {
                if !input.is_empty() {
                    let at = rng.gen_range(0..input.len());
                    input[at] = rng.gen();
                }
            }
            if rng.gen_bool(0.1) {
                input.truncate(rng.gen_range(0..=input.len()));
            }
            fuzz_entry_decode(&input);
            decoded += decode_payload(&input).is_ok() as u32;
        }
        assert!(decoded > 0, "seed {seed:#x}: no input decoded");
        fuzz_entry_decode(&valid);
    }
}
