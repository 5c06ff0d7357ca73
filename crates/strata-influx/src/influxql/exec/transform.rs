//! InfluxQL transformations of an aggregate over GROUP BY time windows
//! (InfluxDB 1.8: `derivative`, `non_negative_derivative`, `difference`,
//! `non_negative_difference`, `moving_average`, `cumulative_sum`), the
//! shape Grafana's counter panels use: `non_negative_derivative(mean(x), 1s)
//! ... GROUP BY time(1m)`.
//!
//! A transformation runs after fill, as InfluxDB's do on the filled inner
//! aggregate: over the windows' values in time order (whatever ORDER BY
//! says), skipping nulls; only the windows it gives a value are reported
//! (not the first one of a derivative, a negative rate of a `non_negative_`
//! one, the first `N - 1` of a moving average). Unlike InfluxDB, the range
//! is not extended by a window before its start (InfluxDB's derivative with
//! fill(0) reports a rate at the first window from a filled window before it).
//! Transformations of raw values run the same way over windows of one
//! nanosecond, each holding the first point at its time (`AggFunc::Point`).

use std::collections::{BTreeMap, VecDeque};

use strata_series::{FieldType, FieldValue};

use super::aggregate::{add_value, as_f64, WindowRow};
use super::error::StatementError;
use super::plan::AggColumn;
use crate::influxql::ast::Expr;

/// One transformation and its argument.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Transform {
    /// Change per `unit_ns` between consecutive windows' values.
    Derivative { unit_ns: i64, non_negative: bool },
    /// Change between consecutive windows' values.
    Difference { non_negative: bool },
    /// Mean of the last `n` windows' values.
    MovingAverage { n: usize },
    /// Running sum.
    CumulativeSum,
    /// Time between consecutive values, in `unit_ns` (an integer).
    Elapsed { unit_ns: i64 },
}

const NS_PER_S: i64 = 1_000_000_000;

impl Transform {
    pub fn name(self) -> &'static str {
        match self {
            Transform::Derivative { non_negative: false, .. } => "derivative",
            Transform::Derivative { non_negative: true, .. } => "non_negative_derivative",
            Transform::Difference { non_negative: false } => "difference",
            Transform::Difference { non_negative: true } => "non_negative_difference",
            Transform::MovingAverage { .. } => "moving_average",
            Transform::CumulativeSum => "cumulative_sum",
            Transform::Elapsed { .. } => "elapsed",
        }
    }

    /// The transformation a call names and its inner expression, `None`
    /// when `name` is not a transformation.
    pub fn parse_call<'a>(
        name: &str,
        args: &'a [Expr],
    ) -> Result<Option<(Transform, &'a Expr)>, StatementError> {
        let arity = |min: usize, max: usize| {
            if (min..=max).contains(&args.len()) {
                Ok(())
            } else {
                Err(StatementError::ArgumentCount { func: name.to_string(), expected: max, got: args.len() })
            }
        };
        let unit = |i: usize| match args.get(i) {
            None => Ok(NS_PER_S),
            Some(Expr::Duration(ns)) if *ns > 0 => Ok(*ns),
            Some(other) => Err(StatementError::BadArgument(format!(
                "second argument to {name} must be a positive duration, got {other}"
            ))),
        };
        let t = match name {
            "derivative" | "non_negative_derivative" => {
                arity(1, 2)?;
                Transform::Derivative { unit_ns: unit(1)?, non_negative: name.starts_with("non_") }
            }
            "difference" | "non_negative_difference" => {
                arity(1, 1)?;
                Transform::Difference { non_negative: name.starts_with("non_") }
            }
            "moving_average" => {
                arity(2, 2)?;
                match &args[1] {
                    Expr::Integer(n) if *n >= 1 => Transform::MovingAverage { n: *n as usize },
                    other => {
                        return Err(StatementError::BadArgument(format!(
                            "second argument to moving_average must be an integer above 0, got {other}"
                        )))
                    }
                }
            }
            "cumulative_sum" => {
                arity(1, 1)?;
                Transform::CumulativeSum
            }
            "elapsed" => {
                arity(1, 2)?;
                Transform::Elapsed { unit_ns: unit(1).map(|u| if args.len() == 1 { 1 } else { u })? }
            }
            _ => return Ok(None),
        };
        Ok(Some((t, &args[0])))
    }

    /// The type of the result for an aggregate of type `t`.
    pub fn output_type(self, t: FieldType) -> FieldType {
        match self {
            Transform::Derivative { .. } | Transform::MovingAverage { .. } => FieldType::Float,
            Transform::Difference { .. } | Transform::CumulativeSum => t,
            Transform::Elapsed { .. } => FieldType::Integer,
        }
    }

    /// The transformed values of one column: `values` are the windows with
    /// a value, in time order (window start, value).
    fn apply(self, values: &[(i128, FieldValue)]) -> Vec<(i128, FieldValue)> {
        let mut out = Vec::with_capacity(values.len());
        match self {
            Transform::Derivative { unit_ns, non_negative } => {
                for pair in values.windows(2) {
                    let ((t0, v0), (t1, v1)) = (&pair[0], &pair[1]);
                    let (Some(a), Some(b)) = (as_f64(v0), as_f64(v1)) else { continue };
                    let rate = (b - a) / ((t1 - t0) as f64 / unit_ns as f64);
                    if !(non_negative && rate < 0.0) {
                        out.push((*t1, FieldValue::Float(rate)));
                    }
                }
            }
            Transform::Difference { non_negative } => {
                for pair in values.windows(2) {
                    let ((_, v0), (t1, v1)) = (&pair[0], &pair[1]);
                    let d = match (v0, v1) {
                        (FieldValue::Float(a), FieldValue::Float(b)) => FieldValue::Float(b - a),
                        (FieldValue::Integer(a), FieldValue::Integer(b)) => {
                            FieldValue::Integer(b.wrapping_sub(*a))
                        }
                        (FieldValue::Unsigned(a), FieldValue::Unsigned(b)) => {
                            FieldValue::Unsigned(b.wrapping_sub(*a))
                        }
                        _ => continue,
                    };
                    let negative = as_f64(&d).is_some_and(|x| x < 0.0) || b_below_a(v0, v1);
                    if !(non_negative && negative) {
                        out.push((*t1, d));
                    }
                }
            }
            Transform::MovingAverage { n } => {
                let mut last: VecDeque<f64> = VecDeque::with_capacity(n);
                for (t, v) in values {
                    let Some(x) = as_f64(v) else { continue };
                    if last.len() == n {
                        last.pop_front();
                    }
                    last.push_back(x);
                    if last.len() == n {
                        out.push((*t, FieldValue::Float(last.iter().sum::<f64>() / n as f64)));
                    }
                }
            }
            Transform::Elapsed { unit_ns } => {
                for pair in values.windows(2) {
                    let elapsed = (pair[1].0 - pair[0].0) / i128::from(unit_ns);
                    out.push((pair[1].0, FieldValue::Integer(elapsed.clamp(0, i128::from(i64::MAX)) as i64)));
                }
            }
            Transform::CumulativeSum => {
                let mut total: Option<FieldValue> = None;
                for (t, v) in values {
                    total = Some(add_value(total.take(), v));
                    out.push((*t, total.clone().expect("set above")));
                }
            }
        }
        out
    }
}

/// An unsigned difference wraps instead of going negative: `b < a` is the
/// negative case `non_negative_difference` drops.
fn b_below_a(a: &FieldValue, b: &FieldValue) -> bool {
    matches!((a, b), (FieldValue::Unsigned(a), FieldValue::Unsigned(b)) if b < a)
}

/// Applies each column's transformation to the filled windows (`rows`, in
/// time order; a null is skipped, as InfluxDB's transformations skip
/// nulls); a window is kept where any column has a value after it.
pub fn apply_rows(columns: &[AggColumn], rows: Vec<WindowRow>) -> Vec<WindowRow> {
    let mut out: BTreeMap<i128, Vec<Option<FieldValue>>> = BTreeMap::new();
    for (i, column) in columns.iter().enumerate() {
        let values: Vec<(i128, FieldValue)> =
            rows.iter().filter_map(|(t, row)| row[i].clone().map(|v| (*t, v))).collect();
        let transformed = match column.transform {
            Some(t) => t.apply(&values),
            None => values,
        };
        for (t, v) in transformed {
            out.entry(t).or_insert_with(|| vec![None; columns.len()])[i] = Some(v);
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floats(values: &[(i128, f64)]) -> Vec<(i128, FieldValue)> {
        values.iter().map(|(t, v)| (*t, FieldValue::Float(*v))).collect()
    }

    #[test]
    fn each_transformation_follows_influxdb() {
        let s = NS_PER_S as i128;
        let v = floats(&[(0, 10.0), (60 * s, 70.0), (120 * s, 40.0), (180 * s, 100.0)]);
        let d = Transform::Derivative { unit_ns: NS_PER_S, non_negative: false }.apply(&v);
        assert_eq!(d, floats(&[(60 * s, 1.0), (120 * s, -0.5), (180 * s, 1.0)]));
        let nn = Transform::Derivative { unit_ns: 60 * NS_PER_S, non_negative: true }.apply(&v);
        assert_eq!(nn, floats(&[(60 * s, 60.0), (180 * s, 60.0)]), "per minute; the drop is left out");
        let diff = Transform::Difference { non_negative: false }.apply(&v);
        assert_eq!(diff, floats(&[(60 * s, 60.0), (120 * s, -30.0), (180 * s, 60.0)]));
        let ma = Transform::MovingAverage { n: 2 }.apply(&v);
        assert_eq!(ma, floats(&[(60 * s, 40.0), (120 * s, 55.0), (180 * s, 70.0)]));
        let sum = Transform::CumulativeSum.apply(&v);
        assert_eq!(sum, floats(&[(0, 10.0), (60 * s, 80.0), (120 * s, 120.0), (180 * s, 220.0)]));
        let ints: Vec<(i128, FieldValue)> =
            [(0, 5i64), (1, 3), (2, 9)].iter().map(|(t, v)| (*t, FieldValue::Integer(*v))).collect();
        assert_eq!(
            Transform::Difference { non_negative: true }.apply(&ints),
            vec![(2, FieldValue::Integer(6))],
            "integers stay integers; the negative step is left out"
        );
        let uints: Vec<(i128, FieldValue)> =
            [(0, 5u64), (1, 3)].iter().map(|(t, v)| (*t, FieldValue::Unsigned(*v))).collect();
        assert!(
            Transform::Difference { non_negative: true }.apply(&uints).is_empty(),
            "an unsigned drop does not wrap in"
        );
    }
}
