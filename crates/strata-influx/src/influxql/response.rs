//! Response shaping: InfluxDB 1.x JSON (`{"results":[{"statement_id":0,
//! "series":[{"name","tags","columns","values"}]}]}`), the `epoch`
//! parameter, and how times and field values become JSON. Keys are inserted
//! in InfluxDB's order (visible if serde_json's `preserve_order` is on).

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value};
use strata_series::FieldValue;

use super::exec::error::StatementError;
use super::time::{format_rfc3339, NS_PER_H, NS_PER_M, NS_PER_MS, NS_PER_S, NS_PER_US};
use super::QueryError;

/// How times are written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Epoch {
    /// RFC3339 strings with trimmed nanoseconds (no `epoch` parameter).
    Rfc3339,
    /// RFC3339 strings with the offset of a `tz(...)` zone.
    Rfc3339In(chrono_tz::Tz),
    /// Integers: nanoseconds divided by this (truncated toward zero, as Go does).
    Integer { ns_per_unit: i64 },
}

impl Epoch {
    /// Reads the `epoch` parameter; absent or empty means RFC3339.
    pub fn parse(param: Option<&str>) -> Result<Epoch, QueryError> {
        let ns_per_unit = match param {
            None | Some("") => return Ok(Epoch::Rfc3339),
            Some("ns") | Some("n") => 1,
            Some("u") | Some("µ") | Some("us") => NS_PER_US,
            Some("ms") => NS_PER_MS,
            Some("s") => NS_PER_S,
            Some("m") => NS_PER_M,
            Some("h") => NS_PER_H,
            Some(other) => {
                return Err(QueryError::BadParam(format!(
                    "invalid epoch {other:?}: expected one of ns, u, µ, ms, s, m, h"
                )))
            }
        };
        Ok(Epoch::Integer { ns_per_unit })
    }

    /// The JSON for a time column value.
    pub fn time(self, ns: i64) -> Value {
        match self {
            Epoch::Rfc3339 => Value::String(format_rfc3339(ns)),
            Epoch::Rfc3339In(zone) => Value::String(super::zone::format_rfc3339_in(zone, ns)),
            Epoch::Integer { ns_per_unit } => Value::from(ns / ns_per_unit),
        }
    }
}

/// The JSON for a field value; NaN and infinities become null.
pub fn field_json(value: &FieldValue) -> Value {
    match value {
        FieldValue::Float(v) => Number::from_f64(*v).map(Value::Number).unwrap_or(Value::Null),
        FieldValue::Integer(v) => Value::from(*v),
        FieldValue::Unsigned(v) => Value::from(*v),
        FieldValue::Boolean(v) => Value::Bool(*v),
        FieldValue::String(v) => Value::String(v.clone()),
    }
}

/// The JSON for an optional field value.
pub fn cell_json(value: Option<&FieldValue>) -> Value {
    value.map(field_json).unwrap_or(Value::Null)
}

/// One series of a statement's result.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesOut {
    /// Measurement (or `databases`, `measurements`); `SHOW SERIES` has none.
    pub name: Option<String>,
    /// The GROUP BY tags; `None` when the statement groups by no tag.
    pub tags: Option<BTreeMap<String, String>>,
    pub columns: Vec<String>,
    pub values: Vec<Vec<Value>>,
}

impl SeriesOut {
    pub fn new(name: Option<&str>, columns: &[&str], values: Vec<Vec<Value>>) -> SeriesOut {
        SeriesOut {
            name: name.map(str::to_string),
            tags: None,
            columns: columns.iter().map(|c| c.to_string()).collect(),
            values,
        }
    }

    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        if let Some(name) = &self.name {
            object.insert("name".to_string(), Value::String(name.clone()));
        }
        if let Some(tags) = &self.tags {
            let tags: Map<String, Value> =
                tags.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
            object.insert("tags".to_string(), Value::Object(tags));
        }
        object.insert("columns".to_string(), Value::from(self.columns.clone()));
        if !self.values.is_empty() {
            let rows = self.values.iter().map(|row| Value::Array(row.clone())).collect();
            object.insert("values".to_string(), Value::Array(rows));
        }
        Value::Object(object)
    }
}

/// One element of `results`.
pub fn statement_result(statement_id: usize, outcome: &Result<Vec<SeriesOut>, StatementError>) -> Value {
    let mut object = Map::new();
    object.insert("statement_id".to_string(), Value::from(statement_id));
    match outcome {
        Ok(series) if !series.is_empty() => {
            object
                .insert("series".to_string(), Value::Array(series.iter().map(SeriesOut::to_json).collect()));
        }
        Ok(_) => {}
        Err(e) => return error_result(statement_id, &e.to_string()),
    }
    Value::Object(object)
}

/// The element of `results` of a statement that failed with `error`.
pub fn error_result(statement_id: usize, error: &str) -> Value {
    let mut object = Map::new();
    object.insert("statement_id".to_string(), Value::from(statement_id));
    object.insert("error".to_string(), Value::String(error.to_string()));
    Value::Object(object)
}

/// Applies OFFSET then LIMIT to one series' rows.
pub fn limit_rows<T>(rows: Vec<T>, limit: Option<u64>, offset: Option<u64>) -> Vec<T> {
    let skip = usize::try_from(offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let take = match limit {
        Some(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    rows.into_iter().skip(skip).take(take).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn epoch_parameter_selects_integer_units() {
        assert_eq!(Epoch::parse(None), Ok(Epoch::Rfc3339));
        assert_eq!(Epoch::parse(Some("")), Ok(Epoch::Rfc3339));
        let t = 1_577_836_800_123_456_789;
        let cases = [
            ("ns", json!(1_577_836_800_123_456_789i64)),
            ("u", json!(1_577_836_800_123_456i64)),
            ("µ", json!(1_577_836_800_123_456i64)),
            ("ms", json!(1_577_836_800_123i64)),
            ("s", json!(1_577_836_800i64)),
            ("m", json!(26_297_280i64)),
            ("h", json!(438_288i64)),
        ];
        for (param, expected) in cases {
            assert_eq!(Epoch::parse(Some(param)).unwrap().time(t), expected, "{param}");
        }
        assert_eq!(Epoch::Rfc3339.time(t), json!("2020-01-01T00:00:00.123456789Z"));
        assert!(matches!(Epoch::parse(Some("fortnight")), Err(QueryError::BadParam(_))));
    }

    #[test]
    fn field_values_map_to_json_and_non_finite_floats_to_null() {
        assert_eq!(field_json(&FieldValue::Float(1.5)), json!(1.5));
        assert_eq!(field_json(&FieldValue::Float(f64::NAN)), Value::Null);
        assert_eq!(field_json(&FieldValue::Float(f64::INFINITY)), Value::Null);
        assert_eq!(field_json(&FieldValue::Integer(-3)), json!(-3));
        assert_eq!(field_json(&FieldValue::Unsigned(u64::MAX)), json!(u64::MAX));
        assert_eq!(field_json(&FieldValue::Boolean(true)), json!(true));
        assert_eq!(field_json(&FieldValue::String("x".into())), json!("x"));
    }

    #[test]
    fn results_omit_empty_series_and_carry_errors() {
        assert_eq!(statement_result(0, &Ok(vec![])), json!({"statement_id": 0}));
        let boom = Err(StatementError::Unsupported("boom".into()));
        assert_eq!(statement_result(1, &boom), json!({"statement_id": 1, "error": "boom"}));
        let s = SeriesOut::new(Some("cpu"), &["time", "v"], vec![vec![json!(0), json!(1)]]);
        assert_eq!(
            statement_result(2, &Ok(vec![s])),
            json!({"statement_id": 2, "series": [{"name": "cpu", "columns": ["time", "v"], "values": [[0, 1]]}]})
        );
    }

    #[test]
    fn limit_and_offset_apply_in_influx_order() {
        assert_eq!(limit_rows(vec![1, 2, 3, 4], Some(2), Some(1)), vec![2, 3]);
        assert_eq!(limit_rows(vec![1, 2, 3], Some(0), None), vec![1, 2, 3]);
        assert_eq!(limit_rows(vec![1, 2, 3], None, Some(5)), Vec::<i32>::new());
    }
}
