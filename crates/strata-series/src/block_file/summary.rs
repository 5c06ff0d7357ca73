//! Block summaries (format version 2, `docs/format/block-file.md`, "Block
//! summary"): the decomposable aggregates of one sealed block — sum, min,
//! max, first and last value, beside the count and time range every entry
//! has — as the TAB+-tree keeps them per node (chronicledb-pmem.txt section
//! 3). A query answers a block wholly inside its window from these without
//! reading the block.
//!
//! Owns: [`BlockSummary`], computing it from a block's points, its 44 bytes
//! in an index entry and their validation. Values are kept as 8-byte
//! words in the field's own type (f64 bits, i64, u64, 0/1), so integer sums
//! are exact: a block whose integer sum overflows gets no summary (a mean
//! needs the true sum, not InfluxDB's wrapped one).

use crate::error::FormatError;
use crate::model::{FieldType, FieldValue, TimestampNs};

/// `summary_kind` of an entry without a summary (strings, floats with a
/// NaN or a negative zero, and every entry of a version-1 file).
pub const SUMMARY_KIND_NONE: u32 = 0;
pub const SUMMARY_KIND_FLOAT: u32 = 1;
pub const SUMMARY_KIND_INTEGER: u32 = 2;
pub const SUMMARY_KIND_UNSIGNED: u32 = 3;
pub const SUMMARY_KIND_BOOLEAN: u32 = 4;
/// Bytes of a summary in an index entry: the kind (u32) and five words.
pub const SUMMARY_BYTES: usize = 44;

/// The aggregates of one block's points (at least one point). The time of
/// `first` is the entry's `min_ts`, of `last` its `max_ts`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BlockSummary {
    field_type: FieldType,
    /// Sum (float: added in time order, starting from the first value;
    /// integers: wrapping; booleans: how many are true), min, max, first,
    /// last, each as the bits of the field's type.
    words: [u64; 5],
}

const SUM: usize = 0;
const MIN: usize = 1;
const MAX: usize = 2;
const FIRST: usize = 3;
const LAST: usize = 4;

fn word_of(v: &FieldValue) -> Option<u64> {
    Some(match v {
        FieldValue::Float(f) if f.is_nan() || (*f == 0.0 && f.is_sign_negative()) => return None,
        FieldValue::Float(f) => f.to_bits(),
        FieldValue::Integer(i) => *i as u64,
        FieldValue::Unsigned(u) => *u,
        FieldValue::Boolean(b) => u64::from(*b),
        FieldValue::String(_) => return None,
    })
}

impl BlockSummary {
    /// The summary of `points` (sorted by time, one type), or None when they
    /// have none: no points, strings, a float NaN or -0.0 (whose order and
    /// sums the query's aggregates treat point by point), or an integer sum
    /// that overflows.
    pub fn of_points(field_type: FieldType, points: &[(TimestampNs, FieldValue)]) -> Option<BlockSummary> {
        let (first, last) = (points.first()?, points.last()?);
        let mut words = [0u64; 5];
        words[FIRST] = word_of(&first.1)?;
        words[LAST] = word_of(&last.1)?;
        words[MIN] = words[FIRST];
        words[MAX] = words[FIRST];
        words[SUM] = if field_type == FieldType::Boolean { 0 } else { words[FIRST] };
        let mut summary = BlockSummary { field_type, words };
        for (i, (_, v)) in points.iter().enumerate() {
            if v.field_type() != field_type {
                return None;
            }
            let w = word_of(v)?;
            summary.add(w, i > 0)?;
        }
        Some(summary)
    }

    /// Adds one value's word (`to_sum`: whether it is added to the sum;
    /// the first value is the sum's start, except for booleans). None when
    /// an integer sum overflows.
    fn add(&mut self, w: u64, to_sum: bool) -> Option<()> {
        let words = &mut self.words;
        let less = |a: u64, b: u64| match self.field_type {
            FieldType::Float => f64::from_bits(a) < f64::from_bits(b),
            FieldType::Integer => (a as i64) < (b as i64),
            _ => a < b,
        };
        if less(w, words[MIN]) {
            words[MIN] = w;
        }
        if less(words[MAX], w) {
            words[MAX] = w;
        }
        words[SUM] = match self.field_type {
            FieldType::Boolean => words[SUM] + w,
            _ if !to_sum => words[SUM],
            FieldType::Float => (f64::from_bits(words[SUM]) + f64::from_bits(w)).to_bits(),
            FieldType::Integer => (words[SUM] as i64).checked_add(w as i64)? as u64,
            _ => words[SUM].checked_add(w)?,
        };
        Some(())
    }

    pub fn field_type(&self) -> FieldType {
        self.field_type
    }

    fn value(&self, w: u64) -> FieldValue {
        match self.field_type {
            FieldType::Float => FieldValue::Float(f64::from_bits(w)),
            FieldType::Integer => FieldValue::Integer(w as i64),
            FieldType::Unsigned => FieldValue::Unsigned(w),
            FieldType::Boolean => FieldValue::Boolean(w != 0),
            FieldType::String => unreachable!("strings have no summary"),
        }
    }

    /// The sum in the field's type; booleans: how many are true (Unsigned).
    pub fn sum(&self) -> FieldValue {
        match self.field_type {
            FieldType::Boolean => FieldValue::Unsigned(self.words[SUM]),
            _ => self.value(self.words[SUM]),
        }
    }

    pub fn min(&self) -> FieldValue {
        self.value(self.words[MIN])
    }

    pub fn max(&self) -> FieldValue {
        self.value(self.words[MAX])
    }

    /// The value at the block's `min_ts`.
    pub fn first(&self) -> FieldValue {
        self.value(self.words[FIRST])
    }

    /// The value at the block's `max_ts`.
    pub fn last(&self) -> FieldValue {
        self.value(self.words[LAST])
    }

    /// The kind code of the entry's `summary_kind` field.
    fn kind(&self) -> u32 {
        match self.field_type {
            FieldType::Float => SUMMARY_KIND_FLOAT,
            FieldType::Integer => SUMMARY_KIND_INTEGER,
            FieldType::Unsigned => SUMMARY_KIND_UNSIGNED,
            FieldType::Boolean => SUMMARY_KIND_BOOLEAN,
            FieldType::String => unreachable!("strings have no summary"),
        }
    }

    /// Whether min <= first, last <= max (and booleans are 0/1 with at most
    /// `point_count` true, floats not NaN): what any summary obeys.
    pub(crate) fn check(&self, point_count: u32) -> Result<(), FormatError> {
        let w = &self.words;
        let bad = |what: &str| Err(FormatError::Invalid(format!("block summary: {what}")));
        let picks = [w[MIN], w[MAX], w[FIRST], w[LAST]];
        match self.field_type {
            FieldType::Float if picks.iter().any(|b| f64::from_bits(*b).is_nan()) => {
                return bad("a NaN min, max, first or last");
            }
            FieldType::Boolean if picks.iter().any(|b| *b > 1) => return bad("a boolean word above 1"),
            FieldType::Boolean if w[SUM] > u64::from(point_count) => return bad("more trues than points"),
            _ => {}
        }
        let le = |a: u64, b: u64| match self.field_type {
            FieldType::Float => f64::from_bits(a) <= f64::from_bits(b),
            FieldType::Integer => (a as i64) <= (b as i64),
            _ => a <= b,
        };
        let within = |x: u64| le(w[MIN], x) && le(x, w[MAX]);
        if !within(w[FIRST]) || !within(w[LAST]) {
            return bad("first or last outside [min, max]");
        }
        Ok(())
    }

    /// The 44 bytes of an entry's summary fields (`None`: kind 0, zeros).
    pub(crate) fn encode(summary: Option<&BlockSummary>, out: &mut Vec<u8>) {
        let (kind, words) = summary.map_or((SUMMARY_KIND_NONE, [0; 5]), |s| (s.kind(), s.words));
        out.extend_from_slice(&kind.to_le_bytes());
        for w in words {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    /// Decodes an entry's summary fields (`b`: [`SUMMARY_BYTES`] bytes).
    pub(crate) fn decode(b: &[u8]) -> Result<Option<BlockSummary>, FormatError> {
        let kind = u32::from_le_bytes(b[..4].try_into().expect("4 bytes"));
        let mut words = [0u64; 5];
        for (i, w) in words.iter_mut().enumerate() {
            *w = u64::from_le_bytes(b[4 + 8 * i..12 + 8 * i].try_into().expect("8 bytes"));
        }
        let field_type = match kind {
            SUMMARY_KIND_NONE if words == [0; 5] => return Ok(None),
            SUMMARY_KIND_NONE => {
                return Err(FormatError::Invalid("block summary: kind 0 with nonzero words".into()))
            }
            SUMMARY_KIND_FLOAT => FieldType::Float,
            SUMMARY_KIND_INTEGER => FieldType::Integer,
            SUMMARY_KIND_UNSIGNED => FieldType::Unsigned,
            SUMMARY_KIND_BOOLEAN => FieldType::Boolean,
            other => return Err(FormatError::UnknownCode { what: "block summary kind", code: other.into() }),
        };
        Ok(Some(BlockSummary { field_type, words }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(values: &[FieldValue]) -> Vec<(TimestampNs, FieldValue)> {
        values.iter().enumerate().map(|(i, v)| (i as i64 * 10, v.clone())).collect()
    }

    #[test]
    fn a_summary_holds_the_aggregates_of_its_points() {
        let f = BlockSummary::of_points(
            FieldType::Float,
            &pts(&[FieldValue::Float(2.5), FieldValue::Float(-1.0), FieldValue::Float(4.0)]),
        )
        .unwrap();
        assert_eq!(
            (f.sum(), f.min(), f.max(), f.first(), f.last()),
            (
                FieldValue::Float(5.5),
                FieldValue::Float(-1.0),
                FieldValue::Float(4.0),
                FieldValue::Float(2.5),
                FieldValue::Float(4.0)
            )
        );
        let i = BlockSummary::of_points(
            FieldType::Integer,
            &pts(&[FieldValue::Integer(i64::MAX), FieldValue::Integer(-3), FieldValue::Integer(1)]),
        )
        .unwrap();
        assert_eq!(i.sum(), FieldValue::Integer(i64::MAX - 2));
        let over = [FieldValue::Integer(i64::MAX), FieldValue::Integer(1)];
        assert!(BlockSummary::of_points(FieldType::Integer, &pts(&over)).is_none(), "an overflowing sum");
        assert_eq!((i.min(), i.max()), (FieldValue::Integer(-3), FieldValue::Integer(i64::MAX)));
        let b = BlockSummary::of_points(
            FieldType::Boolean,
            &pts(&[FieldValue::Boolean(true), FieldValue::Boolean(false), FieldValue::Boolean(true)]),
        )
        .unwrap();
        assert_eq!(
            (b.sum(), b.min(), b.last()),
            (FieldValue::Unsigned(2), FieldValue::Boolean(false), FieldValue::Boolean(true))
        );
    }

    #[test]
    fn strings_nan_and_negative_zero_get_no_summary() {
        assert!(BlockSummary::of_points(FieldType::String, &pts(&[FieldValue::String("a".into())])).is_none());
        assert!(BlockSummary::of_points(FieldType::Float, &pts(&[FieldValue::Float(f64::NAN)])).is_none());
        assert!(BlockSummary::of_points(
            FieldType::Float,
            &pts(&[FieldValue::Float(1.0), FieldValue::Float(-0.0)])
        )
        .is_none());
        assert!(BlockSummary::of_points(FieldType::Float, &[]).is_none());
    }

    #[test]
    fn summaries_round_trip_and_bad_ones_are_refused() {
        let s = BlockSummary::of_points(
            FieldType::Unsigned,
            &pts(&[FieldValue::Unsigned(7), FieldValue::Unsigned(3)]),
        )
        .unwrap();
        let mut bytes = Vec::new();
        BlockSummary::encode(Some(&s), &mut bytes);
        assert_eq!(bytes.len(), SUMMARY_BYTES);
        assert_eq!(BlockSummary::decode(&bytes).unwrap(), Some(s));
        assert!(s.check(2).is_ok());
        let mut none = Vec::new();
        BlockSummary::encode(None, &mut none);
        assert_eq!(BlockSummary::decode(&none).unwrap(), None);
        none[20] = 1;
        assert!(BlockSummary::decode(&none).is_err(), "kind 0 with a nonzero word");
        bytes[0] = 9;
        assert!(BlockSummary::decode(&bytes).is_err(), "unknown kind");
        let flipped = BlockSummary { words: [10, 7, 3, 7, 3], ..s };
        assert!(flipped.check(2).is_err(), "min above max");
    }
}
