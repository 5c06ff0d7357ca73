//! The event-stream table kind as the query and HTTP layers see it
//! (DESIGN.md section 4, "Events"; chronicledb-pmem.txt section 2.2): plain
//! data and one trait, [`StreamTables`], reached through
//! [`super::Tables::stream_tables`]. The facade implements it over the event
//! store (`crate::streams`); the query layer never sees the TAB+-tree.
//!
//! - [`StreamAttr`] / [`StreamAttrType`]: a stream's schema (typed
//!   attributes; the timestamp is implicit).
//! - [`EventSelect`]: one query, built by the InfluxQL executor: an inclusive
//!   time range, a conjunction of `attribute op constant` filters, and either
//!   projected attributes (raw events) or decomposable aggregates
//!   (count/sum/mean/min/max), optionally per time window.
//! - [`EventRows`]: the answer: raw events in time order (equal timestamps
//!   are kept, one row per event), or one aggregate row per non-empty window.
//! - [`StreamTables`]: create, list, drop and query streams.

use std::fmt;
use std::ops::ControlFlow;

use strata_series::{EngineError, FieldType, FieldValue, TimeRange};

/// The type of one attribute (mirrors the event store's attribute types).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum StreamAttrType {
    I64,
    F64,
    I32,
    F32,
    Bool,
    /// A UTF-8 string of at most `len_bytes` bytes (1..=255).
    Str {
        len_bytes: u16,
    },
}

impl StreamAttrType {
    /// The InfluxDB field type the attribute is shown (and written) as:
    /// integers are `integer`, floats `float`, bools `boolean`, strings `string`.
    pub fn field_type(self) -> FieldType {
        match self {
            StreamAttrType::I64 | StreamAttrType::I32 => FieldType::Integer,
            StreamAttrType::F64 | StreamAttrType::F32 => FieldType::Float,
            StreamAttrType::Bool => FieldType::Boolean,
            StreamAttrType::Str { .. } => FieldType::String,
        }
    }

    /// The type's name in the HTTP API: `i64`, `f64`, `i32`, `f32`, `bool`, `string`.
    pub fn name(self) -> &'static str {
        match self {
            StreamAttrType::I64 => "i64",
            StreamAttrType::F64 => "f64",
            StreamAttrType::I32 => "i32",
            StreamAttrType::F32 => "f32",
            StreamAttrType::Bool => "bool",
            StreamAttrType::Str { .. } => "string",
        }
    }

    /// Parses an API type name; strings need `len_bytes`, the others must not have it.
    pub fn parse(name: &str, len_bytes: Option<u64>) -> Result<StreamAttrType, StreamError> {
        let ty = match name {
            "i64" => StreamAttrType::I64,
            "f64" => StreamAttrType::F64,
            "i32" => StreamAttrType::I32,
            "f32" => StreamAttrType::F32,
            "bool" => StreamAttrType::Bool,
            "string" => {
                let len = len_bytes.ok_or_else(|| {
                    StreamError::Invalid("a string attribute needs \"len\" (1..=255 bytes)".to_string())
                })?;
                if !(1..=255).contains(&len) {
                    return Err(StreamError::Invalid(format!(
                        "a string attribute's \"len\" is 1..=255 bytes, got {len}"
                    )));
                }
                return Ok(StreamAttrType::Str { len_bytes: len as u16 });
            }
            other => {
                return Err(StreamError::Invalid(format!(
                    "unknown attribute type {other:?} (use i64, f64, i32, f32, bool or string)"
                )))
            }
        };
        match len_bytes {
            Some(_) => {
                Err(StreamError::Invalid(format!("\"len\" applies to string attributes only, not {name}")))
            }
            None => Ok(ty),
        }
    }
}

/// One named, typed attribute of a stream.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StreamAttr {
    pub name: String,
    pub ty: StreamAttrType,
}

/// A stream as listed.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamInfo {
    pub db: String,
    pub name: String,
    pub attributes: Vec<StreamAttr>,
    /// Events in the stream (tree and out-of-order queue).
    pub events: u64,
    /// Where the stream's structures live, e.g.
    /// `flank=pmem-k25 aggs=inline index=ssd translation=pmem ooo=pmem-indexed`.
    pub placement: String,
}

/// A comparison of a filter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EventCmp {
    Eq,
    Neq,
    Lt,
    Lte,
    Gt,
    Gte,
}

impl EventCmp {
    pub fn symbol(self) -> &'static str {
        match self {
            EventCmp::Eq => "=",
            EventCmp::Neq => "!=",
            EventCmp::Lt => "<",
            EventCmp::Lte => "<=",
            EventCmp::Gt => ">",
            EventCmp::Gte => ">=",
        }
    }
}

/// `attr op value`: numbers compare numerically (integers exactly), strings
/// by bytes, booleans with `=` and `!=` only.
#[derive(Clone, Debug, PartialEq)]
pub struct EventFilter {
    pub attr: String,
    pub op: EventCmp,
    pub value: FieldValue,
}

impl fmt::Display for EventFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {:?}", self.attr, self.op.symbol(), self.value)
    }
}

/// The decomposable aggregate functions a stream answers from its TAB+-tree.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EventAgg {
    Count,
    Sum,
    Mean,
    Min,
    Max,
}

impl EventAgg {
    pub fn name(self) -> &'static str {
        match self {
            EventAgg::Count => "count",
            EventAgg::Sum => "sum",
            EventAgg::Mean => "mean",
            EventAgg::Min => "min",
            EventAgg::Max => "max",
        }
    }
}

/// `GROUP BY time(interval, offset)`: windows `[start, start + interval)`
/// with `start = t - (t - offset) mod interval` (InfluxDB's alignment).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EventWindow {
    pub interval_ns: i64,
    /// In `[0, interval_ns)`.
    pub offset_ns: i64,
}

impl EventWindow {
    /// Start of the window holding `t` (i128: may precede `i64::MIN`).
    pub fn start(&self, t: i64) -> i128 {
        let t = i128::from(t);
        t - (t - i128::from(self.offset_ns)).rem_euclid(i128::from(self.interval_ns))
    }
}

/// What a query returns.
#[derive(Clone, Debug, PartialEq)]
pub enum EventQuery {
    /// The named attributes of the matching events: all of them, or at
    /// most `limit`, the oldest (or with `newest` the newest), answered in
    /// time order either way (`ORDER BY time DESC LIMIT n` reverses them).
    Raw { attrs: Vec<String>, limit: Option<u64>, newest: bool },
    /// One value per `(function, attribute)`, over the whole range or per window.
    Aggregate { columns: Vec<(EventAgg, String)>, window: Option<EventWindow> },
}

/// One query of one stream.
#[derive(Clone, Debug, PartialEq)]
pub struct EventSelect {
    /// Inclusive; may be empty.
    pub range: TimeRange,
    /// All must hold (a conjunction).
    pub filters: Vec<EventFilter>,
    pub query: EventQuery,
}

/// One aggregate row.
#[derive(Clone, Debug, PartialEq)]
pub struct AggRow {
    /// The window's start (clamped to i64), or `range.min_ns` without a window.
    pub start_ns: i64,
    /// One value per column; `None` for min/max/mean/sum of no value.
    pub values: Vec<Option<FieldValue>>,
    /// Without a window, for a query of exactly one min() or max(): the
    /// time of the earliest event holding that value (InfluxDB's selector time).
    pub selected_ns: Option<i64>,
}

/// One raw event row: `(timestamp, values of the projected attributes)`.
pub type EventRow = (i64, Vec<FieldValue>);

/// The answer to an [`EventSelect`].
#[derive(Clone, Debug, PartialEq)]
pub enum EventRows {
    /// `(timestamp, values of the projected attributes)`, in time order
    /// (arrival order among equal timestamps), one row per event.
    Raw(Vec<EventRow>),
    /// Rows of non-empty windows in time order (without a window: one row,
    /// or none when no event matched).
    Aggregate(Vec<AggRow>),
}

/// Why a stream operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// A bad name, schema or query (HTTP 400).
    #[error("{0}")]
    Invalid(String),
    /// Creating a stream that exists (HTTP 409).
    #[error("{0}")]
    AlreadyExists(String),
    /// The stream (or database) does not exist (HTTP 404).
    #[error("{0}")]
    NotFound(String),
    /// The engine failed (I/O, corruption).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The stream failed to recover at startup and is out of service (HTTP
    /// 503); the rest of the store is served.
    #[error("{0}")]
    Unavailable(String),
}

/// Where a scan hands its pieces of rows, in time order; breaking stops it.
pub type EventPieces<'a> = dyn FnMut(Vec<EventRow>) -> ControlFlow<()> + 'a;

/// Hands a whole raw answer of stream `name` to a scan's `each` in one
/// piece (nothing when it is empty); an aggregate answer is an error.
pub fn hand_on(name: &str, answer: EventRows, each: &mut EventPieces<'_>) -> Result<(), StreamError> {
    match answer {
        EventRows::Raw(rows) if rows.is_empty() => Ok(()),
        EventRows::Raw(rows) => {
            let _ = each(rows);
            Ok(())
        }
        EventRows::Aggregate(_) => {
            Err(StreamError::Invalid(format!("stream '{name}': a scan of an aggregate query")))
        }
    }
}

/// Event streams of a store: created with a schema, persistent, queried
/// through [`EventSelect`]. Writes arrive through
/// [`super::Tables::write_request`] (the measurement names the stream).
pub trait StreamTables: Send + Sync {
    /// Creates stream `name` in database `db` (the database is created too).
    fn create_stream(&self, db: &str, name: &str, attrs: &[StreamAttr]) -> Result<StreamInfo, StreamError>;
    /// Streams of `db` (every database when `None`), sorted by (db, name).
    fn list_streams(&self, db: Option<&str>) -> Vec<StreamInfo>;
    /// Streams that failed to recover at startup and are out of service:
    /// `(db, name, reason)`, sorted.
    fn failed_streams(&self) -> Vec<(String, String, String)> {
        Vec::new()
    }
    /// The schema of a stream, `None` if `measurement` is not a stream of `db`.
    fn stream_schema(&self, db: &str, measurement: &str) -> Option<Vec<StreamAttr>>;
    /// Removes a stream and its data, durably.
    fn drop_stream(&self, db: &str, name: &str) -> Result<(), StreamError>;
    /// Runs one query on one snapshot of the stream.
    fn select_events(&self, db: &str, name: &str, select: &EventSelect) -> Result<EventRows, StreamError>;
    /// Runs a raw query ([`EventQuery::Raw`]) and hands its rows to `each`
    /// in time order, in pieces, until `each` breaks: the streamed form of
    /// [`StreamTables::select_events`], so a caller holds one piece and not
    /// the answer. An implementation that scans in chunks holds the stream
    /// for one chunk at a time and never while `each` runs. This default
    /// hands the whole answer over in one piece.
    fn scan_events(
        &self,
        db: &str,
        name: &str,
        select: &EventSelect,
        each: &mut EventPieces<'_>,
    ) -> Result<(), StreamError> {
        hand_on(name, self.select_events(db, name, select)?, each)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_parse_and_map_to_influx_types() {
        assert_eq!(StreamAttrType::parse("i32", None).unwrap(), StreamAttrType::I32);
        assert_eq!(StreamAttrType::parse("string", Some(8)).unwrap(), StreamAttrType::Str { len_bytes: 8 });
        let reason = |name, len| StreamAttrType::parse(name, len).unwrap_err().to_string();
        assert!(reason("string", None).contains("needs \"len\""));
        assert!(reason("string", Some(256)).contains("1..=255"));
        assert!(reason("f64", Some(3)).contains("string attributes only"));
        assert!(reason("u8", None).contains("unknown attribute type"));
        assert_eq!(StreamAttrType::I32.field_type(), FieldType::Integer);
        assert_eq!(StreamAttrType::F32.field_type(), FieldType::Float);
        assert_eq!(StreamAttrType::Str { len_bytes: 3 }.name(), "string");
    }

    #[test]
    fn windows_align_like_influxql() {
        let w = EventWindow { interval_ns: 10, offset_ns: 3 };
        assert_eq!((w.start(3), w.start(12), w.start(13), w.start(2)), (3, 3, 13, -7));
    }
}
