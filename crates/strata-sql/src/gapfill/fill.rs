//! Which rows a gap-filled group shows, and the values of its empty buckets
//! (InfluxQL `fill(null)`, `fill(previous)`, `fill(linear)`), on plain
//! indices and numbers so that the rules are tested without Arrow.

/// The buckets of a gap-filled query: `[first_ns, end_ns)` every `stride_ns`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Buckets {
    pub first_ns: i64,
    pub end_ns: i64,
    pub stride_ns: i64,
}

impl Buckets {
    /// The buckets `date_bin(stride, t, origin)` gives to the times of
    /// `[min_ns, max_ns]` (both inclusive).
    pub fn covering(min_ns: i64, max_ns: i64, stride_ns: i64, origin_ns: i64) -> Buckets {
        assert!(stride_ns > 0, "a positive stride");
        let offset = (i128::from(min_ns) - i128::from(origin_ns)).rem_euclid(i128::from(stride_ns));
        let first = (i128::from(min_ns) - offset).max(i128::from(i64::MIN));
        let end = (i128::from(max_ns) + 1).min(i128::from(i64::MAX));
        Buckets { first_ns: first as i64, end_ns: end as i64, stride_ns }
    }

    /// How many buckets there are.
    pub fn count(&self) -> u64 {
        let span = i128::from(self.end_ns) - i128::from(self.first_ns);
        if span <= 0 {
            return 0;
        }
        let n = (span + i128::from(self.stride_ns) - 1) / i128::from(self.stride_ns);
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    fn starts(&self) -> impl Iterator<Item = i64> + '_ {
        let mut next = Some(self.first_ns);
        std::iter::from_fn(move || {
            let t = next.filter(|t| *t < self.end_ns)?;
            next = t.checked_add(self.stride_ns);
            Some(t)
        })
    }
}

/// One output row of a group: an input row, or an empty bucket.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    /// The input row at this index.
    Row(usize),
    /// The empty bucket starting here.
    Gap(i64),
}

/// The rows of one group: `rows` are `(index, bucket time)` in ascending
/// time. Every bucket appears once, as its row or as a gap; a row outside
/// the buckets keeps its place in time order.
pub fn slots(rows: &[(usize, i64)], buckets: &Buckets) -> Vec<Slot> {
    let mut out = Vec::with_capacity(rows.len().max(buckets.count().min(1 << 20) as usize));
    let mut next = rows.iter().peekable();
    for t in buckets.starts() {
        while let Some(&&(i, _)) = next.peek().filter(|(_, rt)| *rt < t) {
            out.push(Slot::Row(i));
            next.next();
        }
        match next.peek() {
            Some(&&(i, rt)) if rt == t => {
                out.push(Slot::Row(i));
                next.next();
            }
            _ => out.push(Slot::Gap(t)),
        }
    }
    out.extend(next.map(|&(i, _)| Slot::Row(i)));
    out
}

/// The input row whose value each slot shows: its own row; for a gap none,
/// or with `previous` the last row before it whose value `is_valid`.
pub fn shown_rows(slots: &[Slot], previous: bool, is_valid: impl Fn(usize) -> bool) -> Vec<Option<usize>> {
    let mut last_valid = None;
    slots
        .iter()
        .map(|s| match *s {
            Slot::Row(i) => {
                if is_valid(i) {
                    last_valid = Some(i);
                }
                Some(i)
            }
            Slot::Gap(_) if previous => last_valid,
            Slot::Gap(_) => None,
        })
        .collect()
}

/// The value of each gap on the straight line between the nearest rows
/// around it that have a value (`None` for rows, and for gaps with no value
/// on one side). `time` and `value` read an input row.
pub fn interpolated(
    slots: &[Slot],
    time: impl Fn(usize) -> i64,
    value: impl Fn(usize) -> Option<f64>,
) -> Vec<Option<f64>> {
    let point = |s: &Slot| match *s {
        Slot::Row(i) => value(i).map(|v| (time(i), v)),
        Slot::Gap(_) => None,
    };
    let mut before: Vec<Option<(i64, f64)>> = Vec::with_capacity(slots.len());
    let mut last = None;
    for s in slots {
        before.push(last);
        last = point(s).or(last);
    }
    let mut out = vec![None; slots.len()];
    let mut after = None;
    for (k, s) in slots.iter().enumerate().rev() {
        if let (Slot::Gap(t), Some((t0, v0)), Some((t1, v1))) = (*s, before[k], after) {
            let share = (t - t0) as f64 / (t1 - t0) as f64;
            out[k] = Some(v0 + (v1 - v0) * share);
        }
        after = point(s).or(after);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000_000_000;

    #[test]
    fn buckets_start_at_the_bin_of_the_lower_bound_and_end_before_the_upper() {
        let b = Buckets::covering(90 * 1_000_000_000, 5 * MIN - 1, MIN, 0);
        assert_eq!(b, Buckets { first_ns: MIN, end_ns: 5 * MIN, stride_ns: MIN });
        assert_eq!(b.count(), 4);
        assert_eq!(b.starts().collect::<Vec<_>>(), vec![MIN, 2 * MIN, 3 * MIN, 4 * MIN]);
        // An origin moves the grid; an empty range has no bucket.
        assert_eq!(Buckets::covering(0, MIN, MIN, 10).first_ns, 10 - MIN);
        assert_eq!(Buckets::covering(5, 4, 1, 0).count(), 0);
        assert_eq!(Buckets::covering(i64::MIN, i64::MAX, i64::MAX, 0).count(), 3);
    }

    #[test]
    fn every_bucket_appears_once_and_rows_off_the_grid_keep_their_place() {
        let b = Buckets { first_ns: 0, end_ns: 40, stride_ns: 10 };
        let rows = [(7, 10), (8, 15), (9, 30), (3, 50)];
        assert_eq!(
            slots(&rows, &b),
            vec![Slot::Gap(0), Slot::Row(7), Slot::Row(8), Slot::Gap(20), Slot::Row(9), Slot::Row(3)]
        );
        assert_eq!(slots(&[], &b).len(), 4);
    }

    #[test]
    fn previous_carries_the_last_valid_value_and_null_leaves_gaps_empty() {
        let s = [Slot::Gap(0), Slot::Row(4), Slot::Gap(2), Slot::Row(5), Slot::Gap(4)];
        assert_eq!(shown_rows(&s, false, |_| true), vec![None, Some(4), None, Some(5), None]);
        // Row 5 holds NULL: the gap after it shows row 4's value.
        assert_eq!(shown_rows(&s, true, |i| i != 5), vec![None, Some(4), Some(4), Some(5), Some(4)]);
    }

    #[test]
    fn linear_fills_only_gaps_with_values_on_both_sides() {
        let s = [Slot::Gap(0), Slot::Row(0), Slot::Gap(20), Slot::Gap(30), Slot::Row(1), Slot::Gap(50)];
        let times = [10, 40];
        let values = [1.0, 4.0];
        let got = interpolated(&s, |i| times[i], |i| Some(values[i]));
        assert_eq!(got, vec![None, None, Some(2.0), Some(3.0), None, None]);
        // A row without a value is skipped over.
        let s = [Slot::Row(0), Slot::Row(1), Slot::Gap(20), Slot::Row(2)];
        let got = interpolated(&s, |i| [0, 10, 30][i], |i| [Some(0.0), None, Some(30.0)][i]);
        assert_eq!(got, vec![None, None, Some(20.0), None]);
    }
}
