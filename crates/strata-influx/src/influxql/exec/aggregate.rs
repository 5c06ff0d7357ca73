//! Aggregates, windows and fill (InfluxDB 1.x semantics):
//! - without GROUP BY time, one row whose time is the lower time bound
//!   (epoch 0 when unbounded); a statement with a single selector (first,
//!   last, min, max) instead reports the selected point's time;
//! - with GROUP BY time, one row per window, stamped with the window
//!   start; windows run from the window of the lower bound (or, unbounded,
//!   of the group's first point) to the window of the upper bound (`now()`
//!   when none is given); fill(none) keeps only windows with data;
//! - fill(null) reports 0 for count() (InfluxDB's special case);
//!   fill(previous) repeats the previous window's value of that column in
//!   output order; fill(linear) interpolates between the windows with
//!   values around an empty one; fill(n) casts n to the column's type;
//! - ties: min/max keep the earliest point, first/last the larger value;
//! - median: the middle value or the mean of the two middle ones (float);
//!   percentile(x, N): the value at `floor(n * N / 100 + 0.5) - 1` of the
//!   sorted values, a selector; stddev: the sample standard deviation (null
//!   below two values); spread: max - min in the field's type.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::Value;
use strata_series::{FieldType, FieldValue};

use super::error::StatementError;
use super::plan::{AggColumn, AggFunc, SelectPlan, Window};
use super::row::Row;
use crate::influxql::ast::Fill;
use crate::influxql::response::{cell_json, limit_rows, Epoch};

/// A window's start and its columns' values.
pub type WindowRow = (i128, Vec<Option<FieldValue>>);

/// One group's accumulators per window start (one entry, at 0, without
/// GROUP BY time), a column's at its index.
pub type Buckets = BTreeMap<i128, Vec<Acc>>;

/// Most windows one output series may have when empty windows are filled.
pub const MAX_SELECT_BUCKETS: i128 = 1_000_000;

/// Orders two values of one field type (NaN compares equal to everything).
pub(crate) fn order(a: &FieldValue, b: &FieldValue) -> Ordering {
    a.order(b)
}

/// The running state of one aggregate over one window.
#[derive(Clone, Debug)]
pub enum Acc {
    Count(i64),
    Sum(Option<FieldValue>),
    Mean {
        sum: f64,
        n: u64,
    },
    Pick {
        func: AggFunc,
        best: Option<(i64, FieldValue)>,
    },
    /// Welford's running mean and sum of squared deviations (stddev).
    Moments {
        n: u64,
        mean: f64,
        m2: f64,
    },
    /// The smallest and largest value (spread).
    Range(Option<(FieldValue, FieldValue)>),
    /// Every value with its time (median, percentile).
    All {
        func: AggFunc,
        values: Vec<(i64, FieldValue)>,
    },
}

/// `total + v` in the values' type (integers wrap as InfluxDB's do); a
/// value of another type leaves the total as it is.
pub(crate) fn add_value(total: Option<FieldValue>, v: &FieldValue) -> FieldValue {
    v.added_to(total)
}

/// A numeric value as a float.
pub(crate) fn as_f64(v: &FieldValue) -> Option<f64> {
    v.as_f64()
}

/// `hi - lo` in the values' type (integers wrap as InfluxDB's do).
fn difference(hi: &FieldValue, lo: &FieldValue) -> Option<FieldValue> {
    Some(match (hi, lo) {
        (FieldValue::Float(a), FieldValue::Float(b)) => FieldValue::Float(a - b),
        (FieldValue::Integer(a), FieldValue::Integer(b)) => FieldValue::Integer(a.wrapping_sub(*b)),
        (FieldValue::Unsigned(a), FieldValue::Unsigned(b)) => FieldValue::Unsigned(a.wrapping_sub(*b)),
        _ => return None,
    })
}

/// InfluxDB 1.8's median: the middle value, or the mean of the two middle
/// ones, as a float.
fn median(values: &mut [(i64, FieldValue)]) -> Option<FieldValue> {
    values.sort_by(|a, b| order(&a.1, &b.1));
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mid = |i: usize| as_f64(&values[i].1);
    Some(FieldValue::Float(if n % 2 == 1 { mid(n / 2)? } else { (mid(n / 2 - 1)? + mid(n / 2)?) / 2.0 }))
}

/// InfluxDB 1.8's integral: trapezoids between the points in time order,
/// per `unit_ns`; of several points at one time the last added counts.
fn integral(values: &mut [(i64, FieldValue)], unit_ns: i64) -> Option<FieldValue> {
    values.sort_by_key(|(t, _)| *t);
    let mut points = values.iter().filter_map(|(t, v)| Some((*t, as_f64(v)?)));
    let mut prev = points.next()?;
    let mut area = 0.0;
    for (t, v) in points {
        area += (prev.1 + v) / 2.0 * ((t - prev.0) as f64 / unit_ns as f64);
        prev = (t, v);
    }
    Some(FieldValue::Float(area))
}

/// InfluxDB 1.8's percentile: the value at index `floor(n * N / 100 + 0.5) - 1`
/// of the values sorted (ties by time), with its time; none outside the values.
fn percentile(values: &mut [(i64, FieldValue)], milli_percent: u32) -> Option<(i64, FieldValue)> {
    values.sort_by(|a, b| order(&a.1, &b.1).then(a.0.cmp(&b.0)));
    let n = values.len() as f64;
    let i = (n * f64::from(milli_percent) / 100_000.0 + 0.5).floor() as i64 - 1;
    usize::try_from(i).ok().and_then(|i| values.get(i)).cloned()
}

impl Acc {
    pub fn new(func: AggFunc) -> Acc {
        match func {
            AggFunc::Count => Acc::Count(0),
            AggFunc::Sum => Acc::Sum(None),
            AggFunc::Mean => Acc::Mean { sum: 0.0, n: 0 },
            AggFunc::Stddev => Acc::Moments { n: 0, mean: 0.0, m2: 0.0 },
            AggFunc::Spread => Acc::Range(None),
            AggFunc::Median | AggFunc::Percentile(_) | AggFunc::Integral(_) | AggFunc::Top { .. } => {
                Acc::All { func, values: Vec::new() }
            }
            AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last | AggFunc::Point => {
                Acc::Pick { func, best: None }
            }
        }
    }

    pub fn add(&mut self, time_ns: i64, value: &FieldValue) {
        match self {
            Acc::Count(n) => *n += 1,
            Acc::Sum(total) => *total = Some(add_value(total.take(), value)),
            Acc::Mean { sum, n } => {
                let v = match value {
                    FieldValue::Float(v) => *v,
                    FieldValue::Integer(v) => *v as f64,
                    FieldValue::Unsigned(v) => *v as f64,
                    _ => return,
                };
                *sum += v;
                *n += 1;
            }
            Acc::Moments { n, mean, m2 } => {
                let Some(x) = as_f64(value) else { return };
                *n += 1;
                let delta = x - *mean;
                *mean += delta / *n as f64;
                *m2 += delta * (x - *mean);
            }
            Acc::Range(range) => match range {
                None => *range = Some((value.clone(), value.clone())),
                Some((lo, hi)) => {
                    if order(value, lo) == Ordering::Less {
                        *lo = value.clone();
                    }
                    if order(value, hi) == Ordering::Greater {
                        *hi = value.clone();
                    }
                }
            },
            Acc::All { values, .. } => values.push((time_ns, value.clone())),
            Acc::Pick { func, best } => {
                let replace = match best {
                    None => true,
                    Some((best_time, best_value)) => {
                        let by_value = order(value, best_value);
                        let earlier = time_ns < *best_time;
                        match func {
                            AggFunc::Min => {
                                by_value == Ordering::Less || (by_value == Ordering::Equal && earlier)
                            }
                            AggFunc::Max => {
                                by_value == Ordering::Greater || (by_value == Ordering::Equal && earlier)
                            }
                            AggFunc::First => {
                                earlier || (time_ns == *best_time && by_value == Ordering::Greater)
                            }
                            AggFunc::Point => false,
                            _ => {
                                time_ns > *best_time
                                    || (time_ns == *best_time && by_value == Ordering::Greater)
                            }
                        }
                    }
                };
                if replace {
                    *best = Some((time_ns, value.clone()));
                }
            }
        }
    }

    /// The result; `None` when nothing was added.
    pub fn value(&self) -> Option<FieldValue> {
        match self {
            Acc::Count(0) => None,
            Acc::Count(n) => Some(FieldValue::Integer(*n)),
            Acc::Sum(total) => total.clone(),
            Acc::Mean { n: 0, .. } => None,
            Acc::Mean { sum, n } => Some(FieldValue::Float(sum / *n as f64)),
            Acc::Pick { best, .. } => best.as_ref().map(|(_, v)| v.clone()),
            Acc::Moments { n, m2, .. } if *n >= 2 => Some(FieldValue::Float((m2 / (*n - 1) as f64).sqrt())),
            Acc::Moments { .. } => None,
            Acc::Range(range) => range.as_ref().and_then(|(lo, hi)| difference(hi, lo)),
            Acc::All { func: AggFunc::Median, values } => median(&mut values.clone()),
            Acc::All { func, values } => match func {
                AggFunc::Percentile(p) => percentile(&mut values.clone(), *p).map(|(_, v)| v),
                AggFunc::Integral(unit_ns) => integral(&mut values.clone(), *unit_ns),
                _ => None,
            },
        }
    }

    /// Whether any value was added (a window with input is reported even
    /// when its value is null: InfluxDB's stddev of one value).
    pub fn has_input(&self) -> bool {
        match self {
            Acc::Count(n) => *n > 0,
            Acc::Sum(total) => total.is_some(),
            Acc::Mean { n, .. } | Acc::Moments { n, .. } => *n > 0,
            Acc::Pick { best, .. } => best.is_some(),
            Acc::Range(range) => range.is_some(),
            Acc::All { values, .. } => !values.is_empty(),
        }
    }

    /// The selected point's time (selectors only).
    pub fn selected_time(&self) -> Option<i64> {
        match self {
            Acc::Pick { best, .. } => best.as_ref().map(|(t, _)| *t),
            Acc::All { func: AggFunc::Percentile(p), values } => {
                percentile(&mut values.clone(), *p).map(|(t, _)| t)
            }
            _ => None,
        }
    }
}

/// Whether every column selects a point (a selector without a point, e.g.
/// a percentile index outside the values, reports no row at all).
fn only_selectors(columns: &[AggColumn]) -> bool {
    columns.iter().all(|c| c.func.is_selector())
}

fn accumulate(columns: &[AggColumn], accs: &mut [Acc], row: &Row<'_>) {
    for (column, acc) in columns.iter().zip(accs.iter_mut()) {
        if let Some(Some(v)) = column.slot.map(|s| &row.values[s]) {
            acc.add(row.time_ns, v);
        }
    }
}

/// `fill(n)` as a value of the column's output type.
fn fill_number(fill: &Fill, output: FieldType) -> Option<FieldValue> {
    let (as_int, as_float) = match fill {
        Fill::Integer(v) => (*v, *v as f64),
        Fill::Float(v) => (*v as i64, *v),
        _ => return None,
    };
    Some(match output {
        FieldType::Float => FieldValue::Float(as_float),
        FieldType::Integer => FieldValue::Integer(as_int),
        FieldType::Unsigned => FieldValue::Unsigned(u64::try_from(as_int).unwrap_or(0)),
        _ => match fill {
            Fill::Integer(v) => FieldValue::Integer(*v),
            _ => FieldValue::Float(as_float),
        },
    })
}

/// The value of an empty window of `column`.
fn fill_cell(fill: &Fill, column: &AggColumn, previous: Option<&FieldValue>) -> Option<FieldValue> {
    let field_type = column.field_type?;
    match fill {
        Fill::Null | Fill::None => (column.func == AggFunc::Count).then_some(FieldValue::Integer(0)),
        Fill::Previous => previous.cloned(),
        // Interpolated by `fill_windows`, which sees the neighbours.
        Fill::Linear => None,
        Fill::Integer(_) | Fill::Float(_) => fill_number(fill, column.output_type(field_type)),
    }
}

fn clamp_time(t: i128) -> i64 {
    t.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Output rows of one group.
pub fn aggregate_rows(
    plan: &SelectPlan,
    columns: &[AggColumn],
    rows: &[Row<'_>],
    epoch: Epoch,
) -> Result<Vec<Vec<Value>>, StatementError> {
    if let [column @ AggColumn { func: AggFunc::Top { .. }, .. }] = columns {
        return Ok(super::top::top_rows(plan, column, rows, epoch));
    }
    let mut buckets = Buckets::new();
    for row in rows {
        let start = plan.window.map_or(0, |w| w.start(row.time_ns));
        let accs = buckets.entry(start).or_insert_with(|| fresh_accs(columns));
        accumulate(columns, accs, row);
    }
    aggregate_buckets(plan, columns, buckets, rows, epoch)
}

/// Fresh accumulators of `columns`.
pub fn fresh_accs(columns: &[AggColumn]) -> Vec<Acc> {
    columns.iter().map(|c| Acc::new(c.func)).collect()
}

/// Output rows of one group from its accumulators; `rows` are the group's
/// rows, which only integral() reads (it needs the points themselves).
pub fn aggregate_buckets(
    plan: &SelectPlan,
    columns: &[AggColumn],
    buckets: Buckets,
    rows: &[Row<'_>],
    epoch: Epoch,
) -> Result<Vec<Vec<Value>>, StatementError> {
    let out = match plan.window {
        None => {
            let accs = buckets.into_values().next().unwrap_or_else(|| fresh_accs(columns));
            let values: Vec<Option<FieldValue>> = accs.iter().map(Acc::value).collect();
            if !accs.iter().any(Acc::has_input)
                || (values.iter().all(Option::is_none) && only_selectors(columns))
            {
                return Ok(Vec::new());
            }
            let single_selector = columns.len() == 1 && columns[0].func.is_selector();
            let time_ns = match accs[0].selected_time() {
                Some(t) if single_selector => t,
                _ if plan.lower_bounded => plan.range.min_ns,
                _ => 0,
            };
            let mut cells = vec![epoch.time(time_ns)];
            cells.extend(values.iter().map(|v| cell_json(v.as_ref())));
            vec![cells]
        }
        Some(window) => windowed_rows(plan, window, columns, buckets, rows, epoch)?,
    };
    Ok(limit_rows(out, plan.limit, plan.offset))
}

fn windowed_rows(
    plan: &SelectPlan,
    window: Window,
    columns: &[AggColumn],
    buckets: Buckets,
    rows: &[Row<'_>],
    epoch: Epoch,
) -> Result<Vec<Vec<Value>>, StatementError> {
    let mut values: BTreeMap<i128, Vec<Option<FieldValue>>> = buckets
        .into_iter()
        .map(|(start, accs)| (start, accs.iter().map(Acc::value).collect::<Vec<_>>()))
        .collect();
    for (i, column) in columns.iter().enumerate() {
        if let (AggFunc::Integral(unit_ns), Some(slot)) = (column.func, column.slot) {
            let areas = windowed_integral(window, rows, slot, unit_ns);
            for (start, cells) in values.iter_mut() {
                cells[i] = areas.get(start).map(|a| FieldValue::Float(*a));
            }
        }
    }
    let filled: BTreeMap<i128, Vec<Option<FieldValue>>> =
        values.into_iter().filter(|(_, values)| values.iter().any(Option::is_some)).collect();
    // (A window whose only values are nulls of a stddev reads as empty: it
    // is filled, which gives the same null under the default fill.)
    fill_windows(plan, window, columns, &filled, epoch)
}

/// InfluxDB 1.8's integral with `GROUP BY time` (its `IntegralReducer`):
/// one pass over the series' points in time order, trapezoids between
/// consecutive points; a point past the current window first closes it,
/// adding the area up to the window's end at the value interpolated there,
/// and the window gets that sum; the area from that end to the point counts
/// in the point's window (all of it, also across empty windows between).
/// The last window is reported unless its only point is at its start.
/// Several points at one time: the last counts.
fn windowed_integral(window: Window, rows: &[Row<'_>], slot: usize, unit_ns: i64) -> BTreeMap<i128, f64> {
    let mut points: Vec<(i64, f64)> =
        rows.iter().filter_map(|r| Some((r.time_ns, as_f64(r.values[slot].as_ref()?)?))).collect();
    points.sort_by_key(|(t, _)| *t);
    let mut out = BTreeMap::new();
    let mut points = points.into_iter();
    let Some(mut prev) = points.next() else { return out };
    let mut start = window.start(prev.0);
    let unit = unit_ns as f64;
    let mut sum = 0.0;
    for (t, v) in points {
        if t == prev.0 {
            prev = (t, v);
            continue;
        }
        let end = start + i128::from(window.interval_ns);
        if i128::from(t) >= end {
            let end = end as i64;
            if prev.0 != end {
                // As InfluxDB's `linearFloat` computes it (slope first).
                let slope = (v - prev.1) / (t - prev.0) as f64;
                let at_end = slope * (end - prev.0) as f64 + prev.1;
                sum += 0.5 * (at_end + prev.1) * ((end - prev.0) as f64 / unit);
                prev = (end, at_end);
            }
            out.insert(start, sum);
            start = window.start(t);
            sum = 0.0;
        }
        sum += 0.5 * (v + prev.1) * ((t - prev.0) as f64 / unit);
        prev = (t, v);
    }
    if i128::from(prev.0) != start {
        out.insert(start, sum);
    }
    out
}

/// `fill(linear)`: the value at `start` on the line between the windows
/// with values on either side (none before the first or after the last);
/// integers are truncated toward zero, as InfluxDB's are.
fn interpolate(known: &[(i128, FieldValue)], start: i128) -> Option<FieldValue> {
    let i = known.partition_point(|(t, _)| *t < start);
    let ((t0, v0), (t1, v1)) = (known.get(i.checked_sub(1)?)?, known.get(i)?);
    let at = |a: f64, b: f64| a + (b - a) * ((start - t0) as f64 / (t1 - t0) as f64);
    Some(match (v0, v1) {
        (FieldValue::Integer(a), FieldValue::Integer(b)) => {
            FieldValue::Integer(at(*a as f64, *b as f64) as i64)
        }
        (FieldValue::Unsigned(a), FieldValue::Unsigned(b)) => {
            FieldValue::Unsigned(at(*a as f64, *b as f64) as u64)
        }
        (a, b) => FieldValue::Float(at(as_f64(a)?, as_f64(b)?)),
    })
}

/// Output rows from the values of the non-empty windows (`filled`, keyed by
/// window start): the windows of the range, empty ones filled per `fill`;
/// then each column's transformation, if any, over the filled values (as
/// InfluxDB fills the inner aggregate first), keeping the windows it gives
/// a value. Shared by the series path and the event-stream path.
pub fn fill_windows(
    plan: &SelectPlan,
    window: Window,
    columns: &[AggColumn],
    filled: &BTreeMap<i128, Vec<Option<FieldValue>>>,
    epoch: Epoch,
) -> Result<Vec<Vec<Value>>, StatementError> {
    let transformed = columns.iter().any(|c| c.transform.is_some());
    // Fill runs in output order (fill(previous) repeats the value before
    // in that order), except under a transformation, which runs forwards.
    let descending = plan.order_desc && !transformed;
    let mut rows = filled_rows(plan, window, columns, filled, descending)?;
    if transformed {
        rows = super::transform::apply_rows(columns, rows);
        if plan.order_desc {
            rows.reverse();
        }
    }
    Ok(rows
        .into_iter()
        .map(|(start, values)| {
            let mut cells = vec![epoch.time(clamp_time(start))];
            cells.extend(values.iter().map(|v| cell_json(v.as_ref())));
            cells
        })
        .collect())
}

/// The windows of the range (or only the non-empty ones for fill(none)),
/// each with its filled values, ascending or `descending`.
fn filled_rows(
    plan: &SelectPlan,
    window: Window,
    columns: &[AggColumn],
    filled: &BTreeMap<i128, Vec<Option<FieldValue>>>,
    descending: bool,
) -> Result<Vec<WindowRow>, StatementError> {
    let Some(&first_start) = filled.keys().next() else {
        return Ok(Vec::new());
    };

    let mut starts: Vec<i128> = if plan.fill == Fill::None {
        filled.keys().copied().collect()
    } else {
        let from = if plan.lower_bounded { window.start(plan.range.min_ns) } else { first_start };
        let to = window.start(plan.range.max_ns);
        let interval = i128::from(window.interval_ns);
        let count = (to - from) / interval + 1;
        if count > MAX_SELECT_BUCKETS {
            return Err(StatementError::TooManyBuckets { count, max: MAX_SELECT_BUCKETS });
        }
        let mut starts = Vec::with_capacity(count.max(0) as usize);
        let mut start = from;
        while start <= to {
            starts.push(start);
            start = window.next_start(start);
        }
        starts
    };
    if descending {
        starts.reverse();
    }

    let mut previous: Vec<Option<FieldValue>> = vec![None; columns.len()];
    let known: Vec<Vec<(i128, FieldValue)>> = if plan.fill == Fill::Linear {
        (0..columns.len())
            .map(|i| filled.iter().filter_map(|(t, row)| row[i].clone().map(|v| (*t, v))).collect())
            .collect()
    } else {
        Vec::new()
    };
    let mut out = Vec::with_capacity(starts.len());
    for start in starts {
        let bucket = filled.get(&start);
        let mut values = Vec::with_capacity(columns.len());
        for (i, column) in columns.iter().enumerate() {
            values.push(match bucket.and_then(|values| values[i].clone()) {
                Some(v) => {
                    previous[i] = Some(v.clone());
                    Some(v)
                }
                None if plan.fill == Fill::None => None,
                None if plan.fill == Fill::Linear => interpolate(&known[i], start),
                None => fill_cell(&plan.fill, column, previous[i].as_ref()),
            });
        }
        out.push((start, values));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(func: AggFunc, points: &[(i64, FieldValue)]) -> (Option<FieldValue>, Option<i64>) {
        let mut acc = Acc::new(func);
        for (t, v) in points {
            acc.add(*t, v);
        }
        (acc.value(), acc.selected_time())
    }

    #[test]
    fn accumulators_compute_each_function() {
        let pts = [(3, FieldValue::Integer(5)), (1, FieldValue::Integer(9)), (2, FieldValue::Integer(5))];
        assert_eq!(run(AggFunc::Count, &pts).0, Some(FieldValue::Integer(3)));
        assert_eq!(run(AggFunc::Sum, &pts).0, Some(FieldValue::Integer(19)));
        assert_eq!(run(AggFunc::Mean, &pts).0, Some(FieldValue::Float(19.0 / 3.0)));
        assert_eq!(run(AggFunc::Min, &pts), (Some(FieldValue::Integer(5)), Some(2)));
        assert_eq!(run(AggFunc::Max, &pts), (Some(FieldValue::Integer(9)), Some(1)));
        assert_eq!(run(AggFunc::First, &pts), (Some(FieldValue::Integer(9)), Some(1)));
        assert_eq!(run(AggFunc::Last, &pts), (Some(FieldValue::Integer(5)), Some(3)));
        assert_eq!(run(AggFunc::Count, &[]).0, None);
        assert_eq!(run(AggFunc::Mean, &[]).0, None);
    }

    #[test]
    fn selector_ties_follow_influxdb() {
        let same_time = [(1, FieldValue::Float(1.0)), (1, FieldValue::Float(2.0))];
        assert_eq!(run(AggFunc::First, &same_time).0, Some(FieldValue::Float(2.0)));
        assert_eq!(run(AggFunc::Last, &same_time).0, Some(FieldValue::Float(2.0)));
        let same_value = [(5, FieldValue::Float(1.0)), (2, FieldValue::Float(1.0))];
        assert_eq!(run(AggFunc::Min, &same_value).1, Some(2));
        assert_eq!(run(AggFunc::Max, &same_value).1, Some(2));
    }

    #[test]
    fn fill_values_take_the_column_type() {
        let count = AggColumn {
            func: AggFunc::Count,
            slot: Some(0),
            field_type: Some(FieldType::Float),
            transform: None,
        };
        let mean = AggColumn {
            func: AggFunc::Mean,
            slot: Some(0),
            field_type: Some(FieldType::Integer),
            transform: None,
        };
        let sum = AggColumn {
            func: AggFunc::Sum,
            slot: Some(0),
            field_type: Some(FieldType::Integer),
            transform: None,
        };
        assert_eq!(fill_cell(&Fill::Null, &count, None), Some(FieldValue::Integer(0)));
        assert_eq!(fill_cell(&Fill::Null, &mean, None), None);
        assert_eq!(fill_cell(&Fill::Integer(7), &mean, None), Some(FieldValue::Float(7.0)));
        assert_eq!(fill_cell(&Fill::Float(2.5), &sum, None), Some(FieldValue::Integer(2)));
        assert_eq!(
            fill_cell(&Fill::Previous, &sum, Some(&FieldValue::Integer(4))),
            Some(FieldValue::Integer(4))
        );
        let missing = AggColumn { func: AggFunc::Count, slot: None, field_type: None, transform: None };
        assert_eq!(fill_cell(&Fill::Null, &missing, None), None);
    }
}
