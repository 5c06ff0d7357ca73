//! [`Row`]: one joined row of a SELECT, the values of every field slot of
//! one tag set at one time. Built by `select` (series, joined by
//! [`join_by_time`]) and `stream` (event streams), consumed by `raw` and
//! `aggregate`, so those depend on this file and not on each other.

use strata_series::FieldValue;

use super::condition::{tag_value, RowView};

/// One series' points, sorted by time, one per timestamp.
pub type SeriesPoints = Vec<(i64, FieldValue)>;

/// One joined row: the values of every field slot of one tag set at one time.
#[derive(Debug)]
pub struct Row<'a> {
    pub time_ns: i64,
    pub tags: &'a [(String, String)],
    pub values: Vec<Option<FieldValue>>,
}

impl RowView for Row<'_> {
    fn tag(&self, key: &str) -> &str {
        tag_value(self.tags, key)
    }

    fn field(&self, slot: usize) -> Option<Option<&FieldValue>> {
        Some(self.values.get(slot).and_then(Option::as_ref))
    }
}

/// The unread points of one series.
type Cursor = std::iter::Peekable<std::vec::IntoIter<(i64, FieldValue)>>;

/// Joins one tag set's series (each with its field slot, each sorted by
/// time) into rows in time order: `row(time, values)` per distinct
/// timestamp, `values` holding each slot's value at that time. A merge of
/// sorted lists, so each point is handled once and no map is built.
pub fn join_by_time(
    series: Vec<(usize, SeriesPoints)>,
    slots: usize,
    mut row: impl FnMut(i64, Vec<Option<FieldValue>>),
) {
    let mut cursors: Vec<(usize, Cursor)> =
        series.into_iter().map(|(slot, points)| (slot, points.into_iter().peekable())).collect();
    loop {
        let Some(time_ns) = cursors.iter_mut().filter_map(|(_, c)| c.peek().map(|(t, _)| *t)).min() else {
            return;
        };
        let mut values = vec![None; slots];
        for (slot, cursor) in &mut cursors {
            if let Some((_, v)) = cursor.next_if(|(t, _)| *t == time_ns) {
                values[*slot] = Some(v);
            }
        }
        row(time_ns, values);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_join_into_rows_in_time_order_with_gaps_as_none() {
        let f = FieldValue::Float;
        let series =
            vec![(1, vec![(10, f(1.0)), (30, f(3.0))]), (0, vec![(20, f(2.0)), (30, f(4.0))]), (2, vec![])];
        let mut rows = Vec::new();
        join_by_time(series, 3, |t, values| rows.push((t, values)));
        assert_eq!(
            rows,
            vec![
                (10, vec![None, Some(f(1.0)), None]),
                (20, vec![Some(f(2.0)), None, None]),
                (30, vec![Some(f(4.0)), Some(f(3.0)), None]),
            ]
        );
        let mut none = 0;
        join_by_time(Vec::new(), 2, |_, _| none += 1);
        assert_eq!(none, 0);
    }
}
