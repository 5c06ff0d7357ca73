//! The series data model (DESIGN.md section 4, InfluxDB line protocol):
//! points, field values and types, series keys and ids, time ranges.
//! Everything above the series engine (line protocol, InfluxQL, server,
//! benchmarks) speaks these types.

use std::fmt;

/// Nanoseconds since the Unix epoch (line protocol's default precision).
pub type TimestampNs = i64;

/// Identifies one series (measurement + sorted tags + field key) within the
/// engine; assigned in creation order, never reused.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SeriesId(pub u64);

impl fmt::Display for SeriesId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "S{}", self.0)
    }
}

/// The type of a field; fixed at its first write per (database, measurement, field).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FieldType {
    Float,
    Integer,
    Unsigned,
    Boolean,
    String,
}

impl FieldType {
    /// Stable one-byte code used in on-media formats.
    pub fn code(self) -> u8 {
        match self {
            FieldType::Float => 1,
            FieldType::Integer => 2,
            FieldType::Unsigned => 3,
            FieldType::Boolean => 4,
            FieldType::String => 5,
        }
    }

    pub fn from_code(code: u8) -> Option<FieldType> {
        Some(match code {
            1 => FieldType::Float,
            2 => FieldType::Integer,
            3 => FieldType::Unsigned,
            4 => FieldType::Boolean,
            5 => FieldType::String,
            _ => return None,
        })
    }

    /// The name InfluxDB uses in `SHOW FIELD KEYS`.
    pub fn influx_name(self) -> &'static str {
        match self {
            FieldType::Float => "float",
            FieldType::Integer => "integer",
            FieldType::Unsigned => "unsigned",
            FieldType::Boolean => "boolean",
            FieldType::String => "string",
        }
    }
}

/// One field value.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    Float(f64),
    Integer(i64),
    Unsigned(u64),
    Boolean(bool),
    String(String),
}

impl FieldValue {
    pub fn field_type(&self) -> FieldType {
        match self {
            FieldValue::Float(_) => FieldType::Float,
            FieldValue::Integer(_) => FieldType::Integer,
            FieldValue::Unsigned(_) => FieldType::Unsigned,
            FieldValue::Boolean(_) => FieldType::Boolean,
            FieldValue::String(_) => FieldType::String,
        }
    }

    /// The value as a float (None: not numeric).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            FieldValue::Float(v) => Some(*v),
            FieldValue::Integer(v) => Some(*v as f64),
            FieldValue::Unsigned(v) => Some(*v as f64),
            _ => None,
        }
    }

    /// Orders two values of one type as InfluxQL's selectors do: NaN
    /// compares equal to everything, and so do values of different types.
    pub fn order(&self, other: &FieldValue) -> std::cmp::Ordering {
        use std::cmp::Ordering::Equal;
        match (self, other) {
            (FieldValue::Float(x), FieldValue::Float(y)) => x.partial_cmp(y).unwrap_or(Equal),
            (FieldValue::Integer(x), FieldValue::Integer(y)) => x.cmp(y),
            (FieldValue::Unsigned(x), FieldValue::Unsigned(y)) => x.cmp(y),
            (FieldValue::Boolean(x), FieldValue::Boolean(y)) => x.cmp(y),
            (FieldValue::String(x), FieldValue::String(y)) => x.cmp(y),
            _ => Equal,
        }
    }

    /// `total + self` in the values' type, as InfluxQL's sum adds (integers
    /// wrap); a total of another type stays as it is.
    pub fn added_to(&self, total: Option<FieldValue>) -> FieldValue {
        match (total, self) {
            (None, v) => v.clone(),
            (Some(FieldValue::Float(a)), FieldValue::Float(b)) => FieldValue::Float(a + b),
            (Some(FieldValue::Integer(a)), FieldValue::Integer(b)) => FieldValue::Integer(a.wrapping_add(*b)),
            (Some(FieldValue::Unsigned(a)), FieldValue::Unsigned(b)) => {
                FieldValue::Unsigned(a.wrapping_add(*b))
            }
            (Some(other), _) => other,
        }
    }

    /// Bit-exact equality (NaN payloads and -0.0 compare by bits).
    pub fn same_bits(&self, other: &FieldValue) -> bool {
        match (self, other) {
            (FieldValue::Float(a), FieldValue::Float(b)) => a.to_bits() == b.to_bits(),
            _ => self == other,
        }
    }
}

/// One line of line protocol: measurement, tag set (sorted by key, keys
/// unique), field set (at least one field, keys unique), timestamp.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub measurement: String,
    pub tags: Vec<(String, String)>,
    pub fields: Vec<(String, FieldValue)>,
    pub timestamp_ns: TimestampNs,
}

/// A series key without its database: measurement + sorted tags + field key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SeriesKey {
    pub measurement: String,
    pub tags: Vec<(String, String)>,
    pub field: String,
}

impl fmt::Display for SeriesKey {
    /// Line-protocol style: `cpu,host=a#usage`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.measurement)?;
        for (k, v) in &self.tags {
            write!(f, ",{k}={v}")?;
        }
        write!(f, "#{}", self.field)
    }
}

/// An inclusive time range `[min_ns, max_ns]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TimeRange {
    pub min_ns: TimestampNs,
    pub max_ns: TimestampNs,
}

impl TimeRange {
    pub const ALL: TimeRange = TimeRange { min_ns: i64::MIN, max_ns: i64::MAX };

    pub fn contains(&self, t: TimestampNs) -> bool {
        self.min_ns <= t && t <= self.max_ns
    }

    pub fn overlaps(&self, min_ns: TimestampNs, max_ns: TimestampNs) -> bool {
        self.min_ns <= max_ns && min_ns <= self.max_ns
    }

    pub fn is_empty(&self) -> bool {
        self.min_ns > self.max_ns
    }
}

/// InfluxDB's message for a point whose `field` on `measurement` has type
/// `input` while the field already holds values of type `existing`.
pub fn field_type_conflict_message(
    field: &str,
    measurement: &str,
    input: FieldType,
    existing: FieldType,
) -> String {
    format!(
        "field type conflict: input field \"{field}\" on measurement \"{measurement}\" is type {}, \
         already exists as type {}",
        input.influx_name(),
        existing.influx_name()
    )
}

/// Database names: 1..=255 bytes, no control characters, no '/' (used as
/// the v2 "db/rp" bucket separator).
pub fn validate_database_name(name: &str) -> Result<(), crate::error::EngineError> {
    let bad =
        |why: &str| Err(crate::error::EngineError::InvalidDatabaseName(name.to_string(), why.to_string()));
    if name.is_empty() {
        return bad("empty");
    }
    if name.len() > 255 {
        return bad("longer than 255 bytes");
    }
    if name.chars().any(|c| c.is_control() || c == '/') {
        return bad("contains a control character or '/'");
    }
    Ok(())
}
