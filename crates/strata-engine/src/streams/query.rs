//! Answers an [`EventSelect`] from one [`EventStream`] (chronicledb-pmem.txt
//! section 2.2, R2 and R3):
//! - raw events: [`EventStream::range`] (time travel), or with attribute
//!   filters [`EventStream::filter`] on the most selective numeric filter
//!   (the aggregates' min/max prune whole subtrees), then every filter is
//!   checked exactly on each event;
//! - aggregates without filters: [`EventStream::aggregate`] over the range,
//!   or once per window (logarithmic per window, from the TAB+-tree's
//!   aggregates); a single min()/max() finds its event's time with a filter
//!   on `[v, v]`;
//! - aggregates with filters: accumulated over the filtered events.
//!
//! Numbers: aggregates are kept as f64 by the tree (and in its on-media
//! aggregate records), so sum/min/max of integer attributes are exact while
//! |values| and sums stay within 2^53; they are reported as integers, and a
//! result beyond 2^53 is an overflow error (as InfluxDB errs on integer
//! overflow) rather than a rounded or saturated number. Equal timestamps are separate events
//! (one raw row each, all counted).

use std::collections::BTreeMap;

use crate::tables::streams::{
    AggRow, EventAgg, EventCmp, EventFilter, EventQuery, EventRows, EventSelect, EventWindow, StreamError,
};
use strata_events::aggregate::Aggregates;
use strata_events::event::{self, Value};
use strata_events::schema::{AttrType, StreamSchema};
use strata_events::stream::EventStream;
use strata_series::FieldValue;

use super::placement::from_event_error;

/// Most windows one query may visit.
pub const MAX_WINDOWS: i128 = 1_000_000;

fn invalid(stream: &str, what: impl std::fmt::Display) -> StreamError {
    StreamError::Invalid(format!("stream '{stream}': {what}"))
}

fn ev(e: strata_events::EventError) -> StreamError {
    StreamError::Engine(from_event_error(e))
}

/// The field value of an attribute value (integers as Integer, floats as Float).
pub fn field_value(v: &Value) -> FieldValue {
    match v {
        Value::I64(x) => FieldValue::Integer(*x),
        Value::I32(x) => FieldValue::Integer(i64::from(*x)),
        Value::F64(x) => FieldValue::Float(*x),
        Value::F32(x) => FieldValue::Float(f64::from(*x)),
        Value::Bool(x) => FieldValue::Boolean(*x),
        Value::Str(s) => FieldValue::String(s.clone()),
    }
}

fn is_integer(ty: AttrType) -> bool {
    matches!(ty, AttrType::I64 | AttrType::I32)
}

fn is_number(ty: AttrType) -> bool {
    matches!(ty, AttrType::I64 | AttrType::I32 | AttrType::F64 | AttrType::F32)
}

/// A filter resolved against the schema.
struct Compiled {
    attr: usize,
    op: EventCmp,
    value: FieldValue,
}

fn attr_index(stream: &str, schema: &StreamSchema, name: &str) -> Result<usize, StreamError> {
    schema.index_of(name).ok_or_else(|| {
        let names: Vec<&str> = schema.attrs().iter().map(|a| a.name.as_str()).collect();
        invalid(stream, format!("no attribute '{name}' (its attributes: {})", names.join(", ")))
    })
}

fn compile(stream: &str, schema: &StreamSchema, f: &EventFilter) -> Result<Compiled, StreamError> {
    let attr = attr_index(stream, schema, &f.attr)?;
    let ty = schema.attrs()[attr].ty;
    let numeric_value =
        matches!(f.value, FieldValue::Integer(_) | FieldValue::Unsigned(_) | FieldValue::Float(_));
    let fits = match ty {
        AttrType::FixedStr(_) => matches!(f.value, FieldValue::String(_)),
        AttrType::Bool => {
            matches!(f.value, FieldValue::Boolean(_)) && matches!(f.op, EventCmp::Eq | EventCmp::Neq)
        }
        _ => numeric_value,
    };
    if !fits {
        return Err(invalid(
            stream,
            format!(
                "cannot compare attribute '{}' ({}) {} {}",
                f.attr,
                ty.name(),
                f.op.symbol(),
                literal(&f.value)
            ),
        ));
    }
    Ok(Compiled { attr, op: f.op, value: f.value.clone() })
}

fn as_f64(v: &FieldValue) -> Option<f64> {
    match v {
        FieldValue::Integer(x) => Some(*x as f64),
        FieldValue::Unsigned(x) => Some(*x as f64),
        FieldValue::Float(x) => Some(*x),
        _ => None,
    }
}

fn as_i128(v: &FieldValue) -> Option<i128> {
    match v {
        FieldValue::Integer(x) => Some(i128::from(*x)),
        FieldValue::Unsigned(x) => Some(i128::from(*x)),
        _ => None,
    }
}

/// Whether `value` (an attribute value) satisfies `op constant`.
/// A constant as InfluxQL writes it.
fn literal(value: &FieldValue) -> String {
    match value {
        FieldValue::Integer(x) => x.to_string(),
        FieldValue::Unsigned(x) => x.to_string(),
        FieldValue::Float(x) => x.to_string(),
        FieldValue::Boolean(x) => x.to_string(),
        FieldValue::String(s) => format!("'{}'", s.replace('\'', "\\'")),
    }
}

fn holds(op: EventCmp, value: &Value, constant: &FieldValue) -> bool {
    use std::cmp::Ordering;
    let ordering: Option<Ordering> = match (value, constant) {
        (Value::Str(a), FieldValue::String(b)) => Some(a.as_str().cmp(b.as_str())),
        (Value::Bool(a), FieldValue::Boolean(b)) => Some(a.cmp(b)),
        (Value::I64(_) | Value::I32(_), c) if as_i128(c).is_some() => {
            let v = match value {
                Value::I64(x) => i128::from(*x),
                Value::I32(x) => i128::from(*x),
                _ => 0,
            };
            Some(v.cmp(&as_i128(c).unwrap_or(0)))
        }
        // An f32 attribute compares with the constant rounded to f32, so
        // `x = 0.1` finds the f32 0.1 the line protocol stored.
        (Value::F32(x), c) => as_f64(c).and_then(|b| x.partial_cmp(&(b as f32))),
        (v, c) => {
            let x = field_value(v);
            match (as_f64(&x), as_f64(c)) {
                (Some(a), Some(b)) => a.partial_cmp(&b),
                _ => None,
            }
        }
    };
    let Some(ordering) = ordering else {
        return op == EventCmp::Neq; // NaN: only != holds
    };
    match op {
        EventCmp::Eq => ordering == Ordering::Equal,
        EventCmp::Neq => ordering != Ordering::Equal,
        EventCmp::Lt => ordering == Ordering::Less,
        EventCmp::Lte => ordering != Ordering::Greater,
        EventCmp::Gt => ordering == Ordering::Greater,
        EventCmp::Gte => ordering != Ordering::Less,
    }
}

/// A conservative closed f64 interval of the attribute values a numeric
/// filter can accept (rounding to f64 is monotonic, so `v > c` implies
/// `f64(v) >= f64(c)`); `None` when the filter cannot prune.
fn prune_interval(schema: &StreamSchema, c: &Compiled) -> Option<(f64, f64)> {
    if !is_number(schema.attrs()[c.attr].ty) {
        return None;
    }
    let mut v = as_f64(&c.value)?;
    if v.is_nan() {
        return None;
    }
    if schema.attrs()[c.attr].ty == AttrType::F32 {
        // `holds` compares f32 attributes with the constant rounded to f32.
        v = f64::from(v as f32);
    }
    match c.op {
        EventCmp::Eq => Some((v, v)),
        EventCmp::Lt | EventCmp::Lte => Some((f64::NEG_INFINITY, v)),
        EventCmp::Gt | EventCmp::Gte => Some((v, f64::INFINITY)),
        EventCmp::Neq => None,
    }
}

/// Events in `[t_lo, t_hi]` passing every filter, in time order.
fn matching_events(
    stream: &EventStream,
    schema: &StreamSchema,
    filters: &[Compiled],
    t_lo: i64,
    t_hi: i64,
) -> Result<Vec<(i64, Vec<Value>)>, StreamError> {
    // Intersect the intervals per attribute; prune on the narrowest.
    let mut intervals: BTreeMap<usize, (f64, f64)> = BTreeMap::new();
    for c in filters {
        if let Some((lo, hi)) = prune_interval(schema, c) {
            let e = intervals.entry(c.attr).or_insert((f64::NEG_INFINITY, f64::INFINITY));
            *e = (e.0.max(lo), e.1.min(hi));
        }
    }
    let narrowest = intervals.iter().min_by(|a, b| {
        let width = |(lo, hi): (f64, f64)| hi - lo;
        width(*a.1).partial_cmp(&width(*b.1)).unwrap_or(std::cmp::Ordering::Equal)
    });
    let raw = match narrowest {
        Some((&attr, &(lo, hi))) if lo > hi => {
            let _ = attr;
            Vec::new()
        }
        Some((&attr, &(lo, hi))) => stream.filter(attr, lo, hi, t_lo, t_hi).map_err(ev)?,
        None => stream.range(t_lo, t_hi).map_err(ev)?,
    };
    let mut out = Vec::with_capacity(raw.len());
    for bytes in raw {
        let e = event::decode(schema, &bytes).map_err(ev)?;
        if filters.iter().all(|c| holds(c.op, &e.values[c.attr], &c.value)) {
            out.push((e.ts, e.values));
        }
    }
    Ok(out)
}

/// Events a full raw scan reads per hold of the stream's lock (see
/// [`crate::tables::catalog`]): writers wait for at most one chunk.
pub const SCAN_CHUNK_EVENTS: u64 = 4096;

/// Where a chunked scan stands: it has consumed every event before `ts`
/// and the first `passed` events of timestamp `ts` (matching or not).
/// Events are ordered by timestamp, then arrival; an event that arrives
/// during the scan lands after every event of its timestamp, so each event
/// present when the scan began is returned exactly once.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ScanCursor {
    pub ts: i64,
    pub passed: u64,
}

impl ScanCursor {
    pub fn start(t_lo: i64) -> ScanCursor {
        ScanCursor { ts: t_lo, passed: 0 }
    }
}

/// Where a chunked scan ends: the newest timestamp of its range when it
/// began, and how many events had it then. In-order appends made during
/// the scan land at or after this end (after the events of its timestamp),
/// so the scan leaves them out: it reads the stream as of its start, except
/// late (out-of-order) events that arrive during it with a timestamp
/// between its cursor and its end, which it returns (they land ahead of
/// the cursor and no version of the tree older than them is kept; see
/// ARCHITECTURE.md, "Event-stream scans").
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ScanEnd {
    pub ts: i64,
    pub count: u64,
}

impl ScanEnd {
    /// No end but the range's: `t_hi` and every event of it.
    pub fn at(t_hi: i64) -> ScanEnd {
        ScanEnd { ts: t_hi, count: u64::MAX }
    }
}

/// The end of a scan of `select` beginning now (of a range without events:
/// before its first event, so the scan still checks the query and ends).
pub fn scan_end(stream: &EventStream, select: &EventSelect) -> Result<ScanEnd, StreamError> {
    let nothing = ScanEnd { ts: select.range.min_ns, count: 0 };
    if select.range.is_empty() {
        return Ok(nothing);
    }
    let whole = stream.aggregate(select.range.min_ns, select.range.max_ns).map_err(ev)?;
    if whole.count == 0 {
        return Ok(nothing);
    }
    let count = stream.aggregate(whole.ts_max, whole.ts_max).map_err(ev)?.count;
    Ok(ScanEnd { ts: whole.ts_max, count })
}

/// Decoded events: `(timestamp, every attribute's value)`.
type Decoded = Vec<(i64, Vec<Value>)>;
/// Raw rows: `(timestamp, the projected attributes)`.
type RawRows = Vec<(i64, Vec<FieldValue>)>;

/// The indexes of the projected attributes.
pub fn raw_columns(stream: &str, schema: &StreamSchema, attrs: &[String]) -> Result<Vec<usize>, StreamError> {
    attrs.iter().map(|a| attr_index(stream, schema, a)).collect()
}

/// Raw rows of the projected attributes.
pub fn project(events: Decoded, idx: &[usize]) -> RawRows {
    events.into_iter().map(|(ts, v)| (ts, idx.iter().map(|&i| field_value(&v[i])).collect())).collect()
}

/// Up to `max` events matching `filters` from `cursor` to `end`, read
/// lazily, and the cursor after them (`None` once the range is exhausted).
fn raw_chunk(
    stream: &EventStream,
    schema: &StreamSchema,
    filters: &[Compiled],
    cursor: ScanCursor,
    end: ScanEnd,
    max: u64,
) -> Result<(Decoded, Option<ScanCursor>), StreamError> {
    let mut out = Vec::new();
    let mut at = cursor;
    let mut skip = cursor.passed;
    for bytes in stream.range_iter(cursor.ts, end.ts).map_err(ev)? {
        let bytes = bytes.map_err(ev)?;
        let ts = event::timestamp_of(&bytes);
        if ts == cursor.ts && skip > 0 {
            skip -= 1;
            continue;
        }
        at =
            if ts == at.ts { ScanCursor { ts, passed: at.passed + 1 } } else { ScanCursor { ts, passed: 1 } };
        if at.ts == end.ts && at.passed > end.count {
            break; // appended after the scan began
        }
        let e = event::decode(schema, &bytes).map_err(ev)?;
        if filters.iter().all(|c| holds(c.op, &e.values[c.attr], &c.value)) {
            out.push((e.ts, e.values));
            if out.len() as u64 >= max {
                return Ok((out, Some(at)));
            }
        }
    }
    Ok((out, None))
}

/// A full raw scan of `select` from `cursor` to `end` ([`scan_end`] at its
/// start), one chunk: the rows and where the next chunk starts (`None`:
/// done). The caller holds the stream's lock for this call only.
pub fn select_raw_chunk(
    stream_name: &str,
    stream: &EventStream,
    select: &EventSelect,
    cursor: ScanCursor,
    end: ScanEnd,
) -> Result<(RawRows, Option<ScanCursor>), StreamError> {
    let schema = &stream.config().tree.schema;
    let EventQuery::Raw { attrs, .. } = &select.query else {
        return Err(invalid(stream_name, "a chunked scan of an aggregate query"));
    };
    let idx = raw_columns(stream_name, schema, attrs)?;
    let filters: Vec<Compiled> =
        select.filters.iter().map(|f| compile(stream_name, schema, f)).collect::<Result<_, _>>()?;
    if select.range.is_empty() {
        return Ok((Vec::new(), None));
    }
    let (events, next) = raw_chunk(stream, schema, &filters, cursor, end, SCAN_CHUNK_EVENTS)?;
    Ok((project(events, &idx), next))
}

/// The newest `n` events of `t_lo..=t_hi` matching `filters`, in time order.
/// Without filters the tree's counts find where they begin (a binary search
/// over time, each step logarithmic); with filters, windows ending at
/// `t_hi` double until they hold `n` matching events.
fn last_events(
    stream: &EventStream,
    schema: &StreamSchema,
    filters: &[Compiled],
    t_lo: i64,
    t_hi: i64,
    n: u64,
) -> Result<Vec<(i64, Vec<Value>)>, StreamError> {
    let keep_last = |mut v: Vec<(i64, Vec<Value>)>| {
        let excess = v.len().saturating_sub(usize::try_from(n).unwrap_or(usize::MAX));
        v.drain(..excess);
        v
    };
    let count = |lo: i64| -> Result<u64, StreamError> { Ok(stream.aggregate(lo, t_hi).map_err(ev)?.count) };
    if filters.is_empty() {
        if count(t_lo)? <= n {
            return matching_events(stream, schema, filters, t_lo, t_hi);
        }
        // The largest `t` with count(t..=t_hi) >= n.
        let (mut lo, mut hi) = (i128::from(t_lo), i128::from(t_hi));
        while lo < hi {
            let mid = lo + (hi - lo + 1) / 2;
            if count(clamp(mid))? >= n {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return Ok(keep_last(matching_events(stream, schema, filters, clamp(lo), t_hi)?));
    }
    let span = i128::from(t_hi) - i128::from(t_lo);
    let mut width: i128 = (span / 1024).max(1);
    loop {
        let lo = clamp((i128::from(t_hi) - width).max(i128::from(t_lo)));
        let found = matching_events(stream, schema, filters, lo, t_hi)?;
        if found.len() as u64 >= n || lo == t_lo {
            return Ok(keep_last(found));
        }
        width = width.saturating_mul(4);
    }
}

/// A resolved aggregate column.
#[derive(Copy, Clone)]
struct Column {
    func: EventAgg,
    attr: usize,
    ty: AttrType,
}

fn columns(
    stream: &str,
    schema: &StreamSchema,
    list: &[(EventAgg, String)],
) -> Result<Vec<Column>, StreamError> {
    list.iter()
        .map(|(func, name)| {
            let attr = attr_index(stream, schema, name)?;
            let ty = schema.attrs()[attr].ty;
            if *func != EventAgg::Count && !is_number(ty) {
                return Err(invalid(
                    stream,
                    format!("unsupported {}() on attribute '{name}' of type {}", func.name(), ty.name()),
                ));
            }
            Ok(Column { func: *func, attr, ty })
        })
        .collect()
}

/// Running aggregates of one attribute.
#[derive(Copy, Clone)]
struct Acc {
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
}

impl Acc {
    const EMPTY: Acc = Acc { count: 0, sum: 0.0, min: f64::INFINITY, max: f64::NEG_INFINITY };
}

/// Integers up to this magnitude are exact as the f64 the tree's aggregate
/// records keep (sums, minima and maxima of integer attributes).
pub const EXACT_INTEGER_LIMIT: f64 = 9_007_199_254_740_992.0; // 2^53

fn number(ty: AttrType, v: f64) -> Result<FieldValue, StreamError> {
    if !is_integer(ty) {
        return Ok(FieldValue::Float(v));
    }
    if v.abs() > EXACT_INTEGER_LIMIT {
        // InfluxDB answers an integer overflow with an error; here the bound
        // is where the stored f64 aggregates stop being exact.
        return Err(StreamError::Invalid(format!(
            "integer aggregate overflow: {v:e} is beyond 2^53, the exact range of the stream's integer aggregates"
        )));
    }
    Ok(FieldValue::Integer(v as i64))
}

/// One column's value from (count, sum, min, max) of its attribute.
fn column_value(c: &Column, count: u64, acc: Acc) -> Result<Option<FieldValue>, StreamError> {
    if count == 0 {
        return Ok(None);
    }
    Ok(match c.func {
        EventAgg::Count => Some(FieldValue::Integer(count as i64)),
        EventAgg::Sum => Some(number(c.ty, acc.sum)?),
        EventAgg::Mean => Some(FieldValue::Float(acc.sum / count as f64)),
        EventAgg::Min if acc.min <= acc.max => Some(number(c.ty, acc.min)?),
        EventAgg::Max if acc.min <= acc.max => Some(number(c.ty, acc.max)?),
        EventAgg::Min | EventAgg::Max => None,
    })
}

fn from_tree(aggs: &Aggregates, attr: usize) -> Acc {
    let a = &aggs.attrs[attr];
    Acc {
        count: aggs.count,
        sum: a.sum.unwrap_or(f64::NAN),
        min: a.min.unwrap_or(f64::INFINITY),
        max: a.max.unwrap_or(f64::NEG_INFINITY),
    }
}

fn row(cols: &[Column], start_ns: i64, accs: &[Acc]) -> Result<AggRow, StreamError> {
    let count = accs.first().map_or(0, |a| a.count);
    Ok(AggRow {
        start_ns,
        values: cols.iter().zip(accs).map(|(c, a)| column_value(c, count, *a)).collect::<Result<_, _>>()?,
        selected_ns: None,
    })
}

fn clamp(t: i128) -> i64 {
    t.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Runs `select` on `stream` (the caller holds the stream's lock: one snapshot).
pub fn select(
    stream_name: &str,
    stream: &EventStream,
    select: &EventSelect,
) -> Result<EventRows, StreamError> {
    let schema = &stream.config().tree.schema;
    let filters: Vec<Compiled> =
        select.filters.iter().map(|f| compile(stream_name, schema, f)).collect::<Result<_, _>>()?;
    let (t_lo, t_hi) = (select.range.min_ns, select.range.max_ns);
    match &select.query {
        EventQuery::Raw { attrs, limit, newest } => {
            let idx = raw_columns(stream_name, schema, attrs)?;
            if select.range.is_empty() || *limit == Some(0) {
                return Ok(EventRows::Raw(Vec::new()));
            }
            let events = match (*limit, *newest) {
                (None, _) => matching_events(stream, schema, &filters, t_lo, t_hi)?,
                (Some(n), false) => {
                    raw_chunk(stream, schema, &filters, ScanCursor::start(t_lo), ScanEnd::at(t_hi), n)?.0
                }
                (Some(n), true) => last_events(stream, schema, &filters, t_lo, t_hi, n)?,
            };
            Ok(EventRows::Raw(project(events, &idx)))
        }
        EventQuery::Aggregate { columns: list, window } => {
            let cols = columns(stream_name, schema, list)?;
            if select.range.is_empty() || cols.is_empty() {
                return Ok(EventRows::Aggregate(Vec::new()));
            }
            if let Some(w) = window {
                if w.interval_ns <= 0 {
                    return Err(invalid(stream_name, "GROUP BY time() needs a positive interval"));
                }
            }
            let rows = if filters.is_empty() {
                aggregate_from_tree(stream_name, stream, &cols, *window, t_lo, t_hi)?
            } else {
                let events = matching_events(stream, schema, &filters, t_lo, t_hi)?;
                aggregate_events(&cols, *window, t_lo, &events)?
            };
            Ok(EventRows::Aggregate(rows))
        }
    }
}

/// Aggregates from the TAB+-tree: once over the range, or once per window.
fn aggregate_from_tree(
    stream_name: &str,
    stream: &EventStream,
    cols: &[Column],
    window: Option<EventWindow>,
    t_lo: i64,
    t_hi: i64,
) -> Result<Vec<AggRow>, StreamError> {
    let whole = stream.aggregate(t_lo, t_hi).map_err(ev)?;
    if whole.count == 0 {
        return Ok(Vec::new());
    }
    let accs_of = |aggs: &Aggregates| cols.iter().map(|c| from_tree(aggs, c.attr)).collect::<Vec<Acc>>();
    let Some(w) = window else {
        let mut r = row(cols, t_lo, &accs_of(&whole))?;
        if let [c] = cols {
            if matches!(c.func, EventAgg::Min | EventAgg::Max) {
                let a = from_tree(&whole, c.attr);
                let v = if c.func == EventAgg::Min { a.min } else { a.max };
                if v.is_finite() {
                    let hit = stream.filter(c.attr, v, v, t_lo, t_hi).map_err(ev)?;
                    r.selected_ns = hit.first().map(|e| event::timestamp_of(e));
                }
            }
        }
        return Ok(vec![r]);
    };
    // Only windows between the first and the last event of the range.
    let first = w.start(whole.ts_min);
    let last = w.start(whole.ts_max);
    let interval = i128::from(w.interval_ns);
    if (last - first) / interval + 1 > MAX_WINDOWS {
        return Err(invalid(
            stream_name,
            format!(
                "more than {MAX_WINDOWS} windows of {} ns; use a larger GROUP BY time() interval",
                w.interval_ns
            ),
        ));
    }
    let mut rows = Vec::new();
    let mut start = first;
    while start <= last {
        let lo = clamp(start.max(i128::from(t_lo)));
        let hi = clamp((start + interval - 1).min(i128::from(t_hi)));
        let aggs = stream.aggregate(lo, hi).map_err(ev)?;
        if aggs.count > 0 {
            rows.push(row(cols, clamp(start), &accs_of(&aggs))?);
        }
        start += interval;
    }
    Ok(rows)
}

/// Aggregates accumulated over already filtered events.
fn aggregate_events(
    cols: &[Column],
    window: Option<EventWindow>,
    t_lo: i64,
    events: &[(i64, Vec<Value>)],
) -> Result<Vec<AggRow>, StreamError> {
    // Per bucket: the accumulators and, per column, the earliest time of its min/max.
    let mut buckets: BTreeMap<i128, (Vec<Acc>, Vec<Option<i64>>)> = BTreeMap::new();
    for (ts, values) in events {
        let key = window.map_or(i128::from(t_lo), |w| w.start(*ts));
        let (accs, times) =
            buckets.entry(key).or_insert_with(|| (vec![Acc::EMPTY; cols.len()], vec![None; cols.len()]));
        for (i, c) in cols.iter().enumerate() {
            let acc = &mut accs[i];
            acc.count += 1;
            let Some(v) = field_value(&values[c.attr]).pipe_f64() else { continue };
            acc.sum += v;
            if v < acc.min {
                acc.min = v;
                if c.func == EventAgg::Min {
                    times[i] = Some(*ts);
                }
            }
            if v > acc.max {
                acc.max = v;
                if c.func == EventAgg::Max {
                    times[i] = Some(*ts);
                }
            }
        }
    }
    buckets
        .into_iter()
        .map(|(start, (accs, times))| {
            let mut r = row(cols, clamp(start), &accs)?;
            if window.is_none() && cols.len() == 1 {
                r.selected_ns = times[0];
            }
            Ok(r)
        })
        .collect()
}

/// `f64` of a numeric field value (booleans as 0/1, as the tree reads them).
trait PipeF64 {
    fn pipe_f64(&self) -> Option<f64>;
}

impl PipeF64 for FieldValue {
    fn pipe_f64(&self) -> Option<f64> {
        match self {
            FieldValue::Boolean(b) => Some(if *b { 1.0 } else { 0.0 }),
            other => as_f64(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_f32_attribute_equals_the_constant_rounded_to_f32() {
        let stored = Value::F32(0.1);
        assert!(holds(EventCmp::Eq, &stored, &FieldValue::Float(0.1)), "x = 0.1 finds the f32 0.1");
        assert!(!holds(EventCmp::Neq, &stored, &FieldValue::Float(0.1)));
        assert!(holds(EventCmp::Lt, &stored, &FieldValue::Float(0.2)));
        assert!(!holds(EventCmp::Gt, &stored, &FieldValue::Float(0.1)));
        assert!(holds(EventCmp::Eq, &Value::F64(0.1), &FieldValue::Float(0.1)));
    }

    #[test]
    fn constants_print_as_influxql_literals() {
        assert_eq!(literal(&FieldValue::Integer(5)), "5");
        assert_eq!(literal(&FieldValue::String("it's".into())), "'it\\'s'");
        assert_eq!(literal(&FieldValue::Boolean(true)), "true");
    }
}
