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
//! Numbers: aggregates are kept as f64 by the tree, so sum/min/max of
//! integer attributes are exact while |values| and sums stay below 2^53;
//! they are reported as integers. Equal timestamps are separate events
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

fn number(ty: AttrType, v: f64) -> FieldValue {
    if is_integer(ty) {
        FieldValue::Integer(v as i64)
    } else {
        FieldValue::Float(v)
    }
}

/// One column's value from (count, sum, min, max) of its attribute.
fn column_value(c: &Column, count: u64, acc: Acc) -> Option<FieldValue> {
    if count == 0 {
        return None;
    }
    match c.func {
        EventAgg::Count => Some(FieldValue::Integer(count as i64)),
        EventAgg::Sum => Some(number(c.ty, acc.sum)),
        EventAgg::Mean => Some(FieldValue::Float(acc.sum / count as f64)),
        EventAgg::Min => (acc.min <= acc.max).then(|| number(c.ty, acc.min)),
        EventAgg::Max => (acc.min <= acc.max).then(|| number(c.ty, acc.max)),
    }
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

fn row(cols: &[Column], start_ns: i64, accs: &[Acc]) -> AggRow {
    let count = accs.first().map_or(0, |a| a.count);
    AggRow {
        start_ns,
        values: cols.iter().zip(accs).map(|(c, a)| column_value(c, count, *a)).collect(),
        selected_ns: None,
    }
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
        EventQuery::Raw { attrs } => {
            let idx: Vec<usize> =
                attrs.iter().map(|a| attr_index(stream_name, schema, a)).collect::<Result<_, _>>()?;
            if select.range.is_empty() {
                return Ok(EventRows::Raw(Vec::new()));
            }
            let events = matching_events(stream, schema, &filters, t_lo, t_hi)?;
            Ok(EventRows::Raw(
                events
                    .into_iter()
                    .map(|(ts, v)| (ts, idx.iter().map(|&i| field_value(&v[i])).collect()))
                    .collect(),
            ))
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
                aggregate_events(&cols, *window, t_lo, &events)
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
        let mut r = row(cols, t_lo, &accs_of(&whole));
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
            rows.push(row(cols, clamp(start), &accs_of(&aggs)));
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
) -> Vec<AggRow> {
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
            let mut r = row(cols, clamp(start), &accs);
            if window.is_none() && cols.len() == 1 {
                r.selected_ns = times[0];
            }
            r
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
