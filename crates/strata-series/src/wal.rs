//! The series engine's redo records: what one transaction writes into the
//! commit log (format: `docs/format/series-wal.md`). One write request is one
//! record, so replay makes it all-or-nothing. Records carry series ids; a
//! series created by the transaction is defined in the same record, so replay
//! rebuilds the index in the order it was built.
//!
//! The commit log frames each payload with CRC32C; this decoder still checks
//! every length against the bytes present and never panics.

use crate::model::{FieldType, FieldValue, SeriesId, SeriesKey, TimeRange, TimestampNs};

pub const WAL_FORMAT_VERSION: u8 = 1;
pub const KIND_CREATE_DATABASE: u8 = 1;
pub const KIND_WRITE: u8 = 2;
pub const KIND_DELETE: u8 = 3;
pub const KIND_DROP_MEASUREMENT: u8 = 4;

/// A series defined by the transaction that first wrote it.
#[derive(Clone, Debug, PartialEq)]
pub struct NewSeries {
    pub id: SeriesId,
    pub key: SeriesKey,
    pub field_type: FieldType,
}

/// One redo record.
#[derive(Clone, Debug, PartialEq)]
pub enum WalRecord {
    CreateDatabase { db: String },
    Write { db: String, new_series: Vec<NewSeries>, points: Vec<(SeriesId, TimestampNs, FieldValue)> },
    Delete { db: String, series: Vec<SeriesId>, range: TimeRange },
    DropMeasurement { db: String, measurement: String },
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, v: &FieldValue) {
    out.push(v.field_type().code());
    match v {
        FieldValue::Float(f) => out.extend_from_slice(&f.to_bits().to_le_bytes()),
        FieldValue::Integer(i) => out.extend_from_slice(&i.to_le_bytes()),
        FieldValue::Unsigned(u) => out.extend_from_slice(&u.to_le_bytes()),
        FieldValue::Boolean(b) => out.push(*b as u8),
        FieldValue::String(s) => put_str(out, s),
    }
}

impl WalRecord {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        out.push(WAL_FORMAT_VERSION);
        match self {
            WalRecord::CreateDatabase { db } => {
                out.push(KIND_CREATE_DATABASE);
                put_str(&mut out, db);
            }
            WalRecord::Write { db, new_series, points } => {
                out.push(KIND_WRITE);
                put_str(&mut out, db);
                out.extend_from_slice(&(new_series.len() as u32).to_le_bytes());
                for s in new_series {
                    out.extend_from_slice(&s.id.0.to_le_bytes());
                    out.push(s.field_type.code());
                    put_str(&mut out, &s.key.measurement);
                    out.extend_from_slice(&(s.key.tags.len() as u32).to_le_bytes());
                    for (k, v) in &s.key.tags {
                        put_str(&mut out, k);
                        put_str(&mut out, v);
                    }
                    put_str(&mut out, &s.key.field);
                }
                out.extend_from_slice(&(points.len() as u32).to_le_bytes());
                for (id, ts, v) in points {
                    out.extend_from_slice(&id.0.to_le_bytes());
                    out.extend_from_slice(&ts.to_le_bytes());
                    put_value(&mut out, v);
                }
            }
            WalRecord::Delete { db, series, range } => {
                out.push(KIND_DELETE);
                put_str(&mut out, db);
                out.extend_from_slice(&range.min_ns.to_le_bytes());
                out.extend_from_slice(&range.max_ns.to_le_bytes());
                out.extend_from_slice(&(series.len() as u32).to_le_bytes());
                for id in series {
                    out.extend_from_slice(&id.0.to_le_bytes());
                }
            }
            WalRecord::DropMeasurement { db, measurement } => {
                out.push(KIND_DROP_MEASUREMENT);
                put_str(&mut out, db);
                put_str(&mut out, measurement);
            }
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<WalRecord, String> {
        let mut r = Reader { bytes, at: 0 };
        let version = r.u8()?;
        if version != WAL_FORMAT_VERSION {
            return Err(format!("unknown series WAL format version {version}"));
        }
        let kind = r.u8()?;
        let rec = match kind {
            KIND_CREATE_DATABASE => WalRecord::CreateDatabase { db: r.string()? },
            KIND_WRITE => {
                let db = r.string()?;
                let n = r.count(8 + 1 + 4 + 4 + 4)?;
                let mut new_series = Vec::with_capacity(n);
                for _ in 0..n {
                    let id = SeriesId(r.u64()?);
                    let field_type = r.field_type()?;
                    let measurement = r.string()?;
                    let ntags = r.count(8)?;
                    let mut tags = Vec::with_capacity(ntags);
                    for _ in 0..ntags {
                        tags.push((r.string()?, r.string()?));
                    }
                    let field = r.string()?;
                    new_series.push(NewSeries {
                        id,
                        key: SeriesKey { measurement, tags, field },
                        field_type,
                    });
                }
                let n = r.count(8 + 8 + 2)?;
                let mut points = Vec::with_capacity(n);
                for _ in 0..n {
                    let id = SeriesId(r.u64()?);
                    let ts = r.u64()? as i64;
                    points.push((id, ts, r.value()?));
                }
                WalRecord::Write { db, new_series, points }
            }
            KIND_DELETE => {
                let db = r.string()?;
                let range = TimeRange { min_ns: r.u64()? as i64, max_ns: r.u64()? as i64 };
                let n = r.count(8)?;
                let mut series = Vec::with_capacity(n);
                for _ in 0..n {
                    series.push(SeriesId(r.u64()?));
                }
                WalRecord::Delete { db, series, range }
            }
            KIND_DROP_MEASUREMENT => WalRecord::DropMeasurement { db: r.string()?, measurement: r.string()? },
            other => return Err(format!("unknown series WAL record kind {other}")),
        };
        if r.at != bytes.len() {
            return Err(format!("{} trailing bytes after the record", bytes.len() - r.at));
        }
        Ok(rec)
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!("record ends early: {n} bytes needed at offset {}", self.at));
        };
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    /// A count of items each at least `min_item_bytes` long: bounded by the
    /// bytes left, so a corrupt count cannot allocate.
    fn count(&mut self, min_item_bytes: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        let left = self.bytes.len() - self.at;
        if n > left / min_item_bytes.max(1) {
            return Err(format!("count {n} at offset {} exceeds the bytes left", self.at - 4));
        }
        Ok(n)
    }
    fn string(&mut self) -> Result<String, String> {
        let n = self.u32()? as usize;
        let at = self.at;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| format!("invalid UTF-8 in string at offset {at}"))
    }
    fn field_type(&mut self) -> Result<FieldType, String> {
        let c = self.u8()?;
        FieldType::from_code(c).ok_or_else(|| format!("unknown field type code {c}"))
    }
    fn value(&mut self) -> Result<FieldValue, String> {
        Ok(match self.field_type()? {
            FieldType::Float => FieldValue::Float(f64::from_bits(self.u64()?)),
            FieldType::Integer => FieldValue::Integer(self.u64()? as i64),
            FieldType::Unsigned => FieldValue::Unsigned(self.u64()?),
            FieldType::Boolean => match self.u8()? {
                0 => FieldValue::Boolean(false),
                1 => FieldValue::Boolean(true),
                b => return Err(format!("boolean byte {b}")),
            },
            FieldType::String => FieldValue::String(self.string()?),
        })
    }
}

/// Fuzz entry: decoding arbitrary bytes never panics, and whatever decodes
/// re-encodes to the same bytes.
pub fn fuzz_wal_decode(data: &[u8]) {
    if let Ok(rec) = WalRecord::decode(data) {
        assert_eq!(rec.encode(), data, "a decoded WAL record re-encodes to its bytes");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn sample() -> Vec<WalRecord> {
        let key = SeriesKey {
            measurement: "cpu".into(),
            tags: vec![("host".into(), "a".into()), ("region".into(), "eu".into())],
            field: "usage".into(),
        };
        vec![
            WalRecord::CreateDatabase { db: "db0".into() },
            WalRecord::Write {
                db: "db0".into(),
                new_series: vec![NewSeries { id: SeriesId(7), key, field_type: FieldType::Float }],
                points: vec![
                    (SeriesId(7), -5, FieldValue::Float(f64::from_bits(0x7ff8_0000_0000_0001))),
                    (SeriesId(3), i64::MAX, FieldValue::Integer(i64::MIN)),
                    (SeriesId(4), 0, FieldValue::Unsigned(u64::MAX)),
                    (SeriesId(5), 1, FieldValue::Boolean(true)),
                    (SeriesId(6), 2, FieldValue::String("naïve \"q\"".into())),
                ],
            },
            WalRecord::Delete {
                db: "db0".into(),
                series: vec![SeriesId(1), SeriesId(9)],
                range: TimeRange { min_ns: -1, max_ns: 10 },
            },
            WalRecord::DropMeasurement { db: "db0".into(), measurement: "cpu".into() },
        ]
    }

    #[test]
    fn every_kind_round_trips_bit_exactly() {
        for rec in sample() {
            let bytes = rec.encode();
            let back = WalRecord::decode(&bytes).unwrap();
            assert_eq!(back.encode(), bytes);
            if let (WalRecord::Write { points: a, .. }, WalRecord::Write { points: b, .. }) = (&rec, &back) {
                assert!(a.iter().zip(b).all(|(x, y)| x.0 == y.0 && x.1 == y.1 && x.2.same_bits(&y.2)));
            }
        }
    }

    #[test]
    fn every_truncation_is_an_error() {
        for rec in sample() {
            let bytes = rec.encode();
            for cut in 0..bytes.len() {
                assert!(WalRecord::decode(&bytes[..cut]).is_err(), "cut at {cut} of {rec:?}");
            }
        }
    }

    #[test]
    fn fuzz_smoke_random_and_mutated_inputs() {
        let seed = 0x3a1_u64;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let valid: Vec<Vec<u8>> = sample().iter().map(WalRecord::encode).collect();
        let mut decoded = 0;
        for i in 0..20_000 {
            let mut data = if i % 2 == 0 {
                valid[rng.gen_range(0..valid.len())].clone()
            } else {
                (0..rng.gen_range(0..64)).map(|_| rng.gen()).collect()
            };
            if !data.is_empty() && i % 2 == 0 {
                let at = rng.gen_range(0..data.len());
                data[at] ^= 1 << rng.gen_range(0..8);
            }
            let r = std::panic::catch_unwind(|| fuzz_wal_decode(&data));
            assert!(r.is_ok(), "seed {seed} input {i} panicked: {data:?}");
            decoded += WalRecord::decode(&data).is_ok() as u32;
        }
        assert!(decoded > 0, "some mutated inputs still decode");
    }
}

#[cfg(test)]
mod format_doc {
    use super::*;

    #[test]
    fn format_doc_lists_every_constant() {
        let doc = include_str!("../../../docs/format/series-wal.md");
        for (name, value) in [
            ("WAL_FORMAT_VERSION", WAL_FORMAT_VERSION),
            ("KIND_CREATE_DATABASE", KIND_CREATE_DATABASE),
            ("KIND_WRITE", KIND_WRITE),
            ("KIND_DELETE", KIND_DELETE),
            ("KIND_DROP_MEASUREMENT", KIND_DROP_MEASUREMENT),
        ] {
            assert!(doc.contains(&format!("`{name}` = {value}")), "series-wal.md lacks `{name}` = {value}");
        }
        for t in
            [FieldType::Float, FieldType::Integer, FieldType::Unsigned, FieldType::Boolean, FieldType::String]
        {
            assert!(doc.contains(&format!("{} {}", t.code(), t.influx_name())), "type code of {t:?}");
        }
    }
}
