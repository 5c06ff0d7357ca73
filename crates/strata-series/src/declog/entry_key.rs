//! What the series engine writes into a DecLog log entry (declog.txt 4.3.1:
//! "for each time series data point accessed by a transaction, we use the
//! measurement, tag key, and field key as the key, which is recorded in each
//! log entry"; 4.4.1 compresses it).
//!
//! The engine writes one *per-key* entry per series a transaction touches
//! (DecLog format 3, `PayloadForm::PerKey`): DecLog's points payload
//! (`strata_declog::compress::points_payload`), the *key* and then each
//! operation on that series in the transaction's order, as its timestamp,
//! 64 value bits and *rest*. An operation is a write (insert or update, told
//! apart by the entry's LSN) or a point delete. This is the paper's one entry
//! per operation (4.3.1) with the operations of one key and one transaction
//! sharing one entry: they share the key, the LSN and the stream anyway, so
//! routing, ordering and replay are those of as many single entries, and
//! compression codes them as one run of the key's delta-of-delta / XOR
//! state. Version-2 logs hold single-point entries (`PayloadForm::Single`,
//! the point payload: key, timestamp, value bits, rest); replay reads both.
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

use strata_declog::compress::{point_payload, PointsPayloadBuilder};

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

/// The single-point payload of one operation on the series with key bytes
/// `key` (what a version-2 writer logged).
pub fn encode_payload(key: &[u8], ts: TimestampNs, op: &EntryOp) -> Vec<u8> {
    let value = match op {
        EntryOp::Write(v) => Some(v),
        EntryOp::Delete => None,
    };
    let mut payload = Vec::new();
    super::run_points::with_point(ts, value, &mut Vec::new(), &mut |p| {
        payload = point_payload::encode(key, p.timestamp, p.value_bits, p.rest);
    });
    payload
}

/// The value bits of a written value: float bits; i64 / u64 as is;
/// boolean 0 or 1; 0 for strings (their bytes are in the rest).
pub(crate) fn value_bits(v: &FieldValue) -> u64 {
    match v {
        FieldValue::Float(f) => f.to_bits(),
        FieldValue::Integer(i) => *i as u64,
        FieldValue::Unsigned(u) => *u,
        FieldValue::Boolean(b) => *b as u64,
        FieldValue::String(_) => 0,
    }
}

/// The per-key payloads of the operations `ops` (a write of `Some` value or
/// a delete, at a timestamp) on the series with key bytes `key`, in order:
/// one, or more when one would exceed `max_payload_bytes`. `Err(bytes)` when
/// a single operation alone does not fit. (The write path hands DecLog the
/// same points without encoding them: `run_points`.)
pub fn encode_per_key<'o>(
    key: &[u8],
    ops: impl ExactSizeIterator<Item = (TimestampNs, Option<&'o FieldValue>)>,
    max_payload_bytes: usize,
) -> Result<Vec<Vec<u8>>, usize> {
    use super::run_points::{rest_len, split_per_key, with_point};
    let ops: Vec<_> = ops.collect();
    let entries = split_per_key(key.len(), ops.iter().map(|(_, op)| rest_len(*op)), max_payload_bytes)?;
    let mut scratch = Vec::new();
    Ok(entries
        .into_iter()
        .map(|(range, len)| {
            let mut builder = PointsPayloadBuilder::new(key, range.len());
            for (ts, op) in &ops[range] {
                with_point(*ts, *op, &mut scratch, &mut |p| builder.push(p.timestamp, p.value_bits, p.rest));
            }
            let payload = builder.finish();
            debug_assert_eq!(payload.len(), len);
            payload
        })
        .collect())
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

/// Decodes a per-key payload into its key and operations.
pub fn decode_per_key(bytes: &[u8]) -> Result<(EntryKey, Vec<(TimestampNs, EntryOp)>), FormatError> {
    let p = strata_declog::compress::points_payload::decode(bytes)?;
    let key = decode_key(p.key)?;
    let ops = p
        .points()
        .map(|pt| Ok((pt.timestamp, decode_op(pt.value_bits, pt.rest, key.field_type)?)))
        .collect::<Result<_, FormatError>>()?;
    Ok((key, ops))
}

/// Fuzz entry: decoding arbitrary bytes as a single-point or a per-key
/// payload never panics, and what decodes re-encodes to the same bytes.
pub fn fuzz_entry_decode(data: &[u8]) {
    if let Ok(e) = decode_payload(data) {
        let key = encode_key(&e.key.db, &e.key.key, e.key.field_type);
        assert_eq!(encode_payload(&key, e.ts, &e.op), data, "entry re-encodes to other bytes");
    }
    if let Ok((k, ops)) = decode_per_key(data) {
        let key = encode_key(&k.db, &k.key, k.field_type);
        let items = ops.iter().map(|(ts, op)| match op {
            EntryOp::Write(v) => (*ts, Some(v)),
            EntryOp::Delete => (*ts, None),
        });
        assert_eq!(
            encode_per_key(&key, items, usize::MAX),
            Ok(vec![data.to_vec()]),
            "per-key entry re-encodes"
        );
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

    fn as_item((ts, op): &(TimestampNs, EntryOp)) -> (TimestampNs, Option<&FieldValue>) {
        match op {
            EntryOp::Write(v) => (*ts, Some(v)),
            EntryOp::Delete => (*ts, None),
        }
    }

    #[test]
    fn per_key_payloads_split_at_the_limit_and_decode_to_the_same_operations() {
        use strata_declog::compress::points_payload;
        let kb = encode_key("db", &key(), FieldType::String);
        let ops: Vec<(TimestampNs, EntryOp)> = (0..10)
            .map(|i| {
                let op =
                    if i == 4 { EntryOp::Delete } else { EntryOp::Write(FieldValue::String("v".repeat(i))) };
                (i as i64 * 7, op)
            })
            .collect();
        for limit in [kb.len() + 5 + 27, 120, 10_000] {
            let payloads = encode_per_key(&kb, ops.iter().map(as_item), limit).unwrap();
            assert!(payloads.iter().all(|p| p.len() <= limit), "limit {limit}");
            let mut back = Vec::new();
            for p in &payloads {
                let d = points_payload::decode(p).unwrap();
                assert_eq!(d.key, &kb[..]);
                for pt in d.points() {
                    back.push((pt.timestamp, decode_op(pt.value_bits, pt.rest, FieldType::String).unwrap()));
                }
            }
            assert_eq!(back, ops, "limit {limit}");
        }
        assert_eq!(encode_per_key(&kb, ops.iter().map(as_item), 20), Err(kb.len() + 5 + 18));
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
        let write = EntryOp::Write(FieldValue::String("yz".into()));
        let per_key =
            encode_per_key(&kb, [(1, Some(&FieldValue::String("yz".into()))), (5, None)].into_iter(), 4096)
                .unwrap()
                .remove(0);
        assert_eq!(decode_per_key(&per_key).unwrap().1, vec![(1, write), (5, EntryOp::Delete)]);
        let mut decoded = 0;
        for i in 0..20_000 {
            let mut input = match i % 3 {
                0 => valid.clone(),
                1 => per_key.clone(),
                _ => vec![0; rng.gen_range(0..64)],
            };
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
            decoded += decode_payload(&input).is_ok() as u32 + decode_per_key(&input).is_ok() as u32;
        }
        assert!(decoded > 0, "seed {seed:#x}: no input decoded");
        fuzz_entry_decode(&valid);
    }
}
