//! Partial aggregates of one series per time window, what
//! [`SeriesStore::window_aggregates`](crate::SeriesStore::window_aggregates)
//! returns: count, sum, min, max, first and last of the points in each
//! window, folded in time order from single points and from whole blocks'
//! summaries ([`BlockSummary`]) alike. Partials of several series combine
//! (a query's group of series), which is why these are the decomposable
//! aggregates (chronicledb-pmem.txt section 3).
//!
//! Owns: [`WindowSpec`], [`PartialAggregate`] and [`WindowFold`], the one
//! fold both the engine (summaries and decoded points) and the default
//! implementation over `read` (points only) use.

use std::cmp::Ordering;

use crate::block_file::BlockSummary;
use crate::model::{FieldValue, TimeRange, TimestampNs};

/// `GROUP BY time(every, offset)`: windows start at `offset + k * every`
/// (`offset` taken modulo `every`), in UTC.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WindowSpec {
    /// Positive.
    pub every_ns: i64,
    pub offset_ns: i64,
}

impl WindowSpec {
    /// The start of the window holding `t` (i128: may precede i64::MIN).
    pub fn start(&self, t: TimestampNs) -> i128 {
        let t = i128::from(t);
        t - (t - i128::from(self.offset_ns)).rem_euclid(i128::from(self.every_ns))
    }
}

/// The aggregates of one series' points in one window (at least one point).
/// `sum`, `min` and `max` are given for floats, integers and unsigned
/// integers only; `sum` is in the field's type (integers wrap, floats are
/// added in time order, a block's summed sum at a time), `sum_f64` adds
/// the values as floats (what a mean divides: integers do not wrap).
#[derive(Clone, Debug, PartialEq)]
pub struct PartialAggregate {
    /// The window's start; without windows, the range's lower bound.
    pub window_start: i128,
    pub count: u64,
    pub sum: Option<FieldValue>,
    pub sum_f64: f64,
    pub min: Option<FieldValue>,
    pub max: Option<FieldValue>,
    /// The earliest point.
    pub first: Option<(TimestampNs, FieldValue)>,
    /// The latest point.
    pub last: Option<(TimestampNs, FieldValue)>,
}

impl PartialAggregate {
    fn empty(window_start: i128) -> PartialAggregate {
        PartialAggregate {
            window_start,
            count: 0,
            sum: None,
            sum_f64: 0.0,
            min: None,
            max: None,
            first: None,
            last: None,
        }
    }

    /// Adds `count` values later than any added so far, summed to `sum`,
    /// ranging over `[min, max]`, the earliest `first`, the latest `last`.
    fn add_run(
        &mut self,
        count: u64,
        values: [&FieldValue; 3],
        first: (TimestampNs, &FieldValue),
        last: (TimestampNs, &FieldValue),
    ) {
        let [sum, min, max] = values;
        self.count += count;
        if let Some(f) = sum.as_f64() {
            self.sum = Some(sum.added_to(self.sum.take()));
            self.sum_f64 += f;
            if self.min.as_ref().is_none_or(|m| min.order(m) == Ordering::Less) {
                self.min = Some(min.clone());
            }
            if self.max.as_ref().is_none_or(|m| max.order(m) == Ordering::Greater) {
                self.max = Some(max.clone());
            }
        }
        if self.first.is_none() {
            self.first = Some((first.0, first.1.clone()));
        }
        self.last = Some((last.0, last.1.clone()));
    }
}

/// Folds one series' points and block summaries, given in time order
/// (a summary's block overlapping nothing else added), into partials per
/// window.
#[derive(Debug)]
pub struct WindowFold {
    window: Option<WindowSpec>,
    range: TimeRange,
    out: Vec<PartialAggregate>,
}

impl WindowFold {
    /// A fold over `range` (points outside it must not be added), by
    /// `window` (None: one partial for the whole range).
    pub fn new(range: TimeRange, window: Option<WindowSpec>) -> WindowFold {
        WindowFold { window, range, out: Vec::new() }
    }

    /// The window start of `t`.
    pub fn window_of(&self, t: TimestampNs) -> i128 {
        self.window.map_or(i128::from(self.range.min_ns), |w| w.start(t))
    }

    fn at(&mut self, t: TimestampNs) -> &mut PartialAggregate {
        let start = self.window_of(t);
        if self.out.last().is_none_or(|p| p.window_start != start) {
            self.out.push(PartialAggregate::empty(start));
        }
        self.out.last_mut().expect("pushed")
    }

    /// Adds one point, later than everything added so far.
    pub fn add_point(&mut self, t: TimestampNs, v: &FieldValue) {
        self.at(t).add_run(1, [v, v, v], (t, v), (t, v));
    }

    /// Adds a whole block of `count` points from `min_ts` to `max_ts` (one
    /// window, later than everything added so far) by its summary.
    pub fn add_summary(&mut self, min_ts: TimestampNs, max_ts: TimestampNs, count: u64, s: &BlockSummary) {
        let (sum, min, max, first, last) = (s.sum(), s.min(), s.max(), s.first(), s.last());
        self.at(min_ts).add_run(count, [&sum, &min, &max], (min_ts, &first), (max_ts, &last));
    }

    /// Whether a block from `min_ts` to `max_ts` lies in one window.
    pub fn one_window(&self, min_ts: TimestampNs, max_ts: TimestampNs) -> bool {
        self.window_of(min_ts) == self.window_of(max_ts)
    }

    /// The partials, by window start.
    pub fn finish(self) -> Vec<PartialAggregate> {
        self.out
    }
}

/// The partials of sorted `points` (the default implementation's and the
/// decode-and-aggregate answer the engine's summaries are tested against).
pub fn fold_points(
    points: &[(TimestampNs, FieldValue)],
    range: TimeRange,
    window: Option<WindowSpec>,
) -> Vec<PartialAggregate> {
    let mut fold = WindowFold::new(range, window);
    for (t, v) in points {
        fold.add_point(*t, v);
    }
    fold.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FieldType;

    #[test]
    fn points_and_summaries_fold_alike() {
        let points: Vec<(TimestampNs, FieldValue)> = [(0, 4), (3, -1), (9, 7), (10, 2), (25, 5)]
            .iter()
            .map(|(t, v)| (*t, FieldValue::Integer(*v)))
            .collect();
        let window = Some(WindowSpec { every_ns: 10, offset_ns: 0 });
        let range = TimeRange { min_ns: 0, max_ns: 30 };
        let by_points = fold_points(&points, range, window);
        assert_eq!(
            by_points.iter().map(|p| (p.window_start, p.count)).collect::<Vec<_>>(),
            vec![(0, 3), (10, 1), (20, 1)]
        );
        assert_eq!(by_points[0].sum, Some(FieldValue::Integer(10)));
        assert_eq!(
            (by_points[0].min.clone(), by_points[0].max.clone()),
            (Some(FieldValue::Integer(-1)), Some(FieldValue::Integer(7)))
        );
        assert_eq!(by_points[0].first, Some((0, FieldValue::Integer(4))));
        assert_eq!(by_points[0].last, Some((9, FieldValue::Integer(7))));

        let mut fold = WindowFold::new(range, window);
        assert!(fold.one_window(0, 9) && !fold.one_window(9, 10));
        fold.add_point(0, &points[0].1);
        let s = BlockSummary::of_points(FieldType::Integer, &points[1..3]).unwrap();
        fold.add_summary(3, 9, 2, &s);
        fold.add_point(10, &points[3].1);
        let s = BlockSummary::of_points(FieldType::Integer, &points[4..]).unwrap();
        fold.add_summary(25, 25, 1, &s);
        assert_eq!(fold.finish(), by_points);
    }

    #[test]
    fn without_windows_one_partial_starts_at_the_range() {
        let points = vec![(5, FieldValue::String("a".into())), (50, FieldValue::String("b".into()))];
        let got = fold_points(&points, TimeRange { min_ns: 1, max_ns: 99 }, None);
        assert_eq!(got.len(), 1);
        assert_eq!(
            (got[0].window_start, got[0].count, got[0].sum.clone()),
            (1, 2, None),
            "strings have no sum"
        );
        assert_eq!(got[0].last, Some((50, FieldValue::String("b".into()))));
        assert_eq!(WindowSpec { every_ns: 10, offset_ns: 3 }.start(2), -7);
    }
}
