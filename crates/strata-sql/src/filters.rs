//! Which `WHERE` conjuncts a scan answers itself (issue 19, "Pushdown"):
//! a comparison of `time` with a timestamp, `time BETWEEN a AND b`, and a
//! tag (series) equal to a string, in a list of strings (`IN`) or equal to
//! one of several (`OR` of equalities on one tag). The scan applies them exactly, so
//! DataFusion is told `Exact` and may push `LIMIT` down too; any other
//! conjunct DataFusion evaluates above the scan.

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::utils::split_binary;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator, TableProviderFilterPushDown};
use datafusion::scalar::ScalarValue;
use strata_series::TimeRange;

use crate::literals::{literal, timestamp_ns};

/// The name of every table's time column.
pub const TIME_COLUMN: &str = "time";

/// What a scan was asked to answer itself.
#[derive(Clone, Debug, PartialEq)]
pub struct PushedFilters {
    /// Inclusive; empty when the conjuncts contradict.
    pub range: TimeRange,
    /// `(column, values)`: the column equals one of the strings.
    pub equal: Vec<(String, Vec<String>)>,
}

impl Default for PushedFilters {
    fn default() -> Self {
        PushedFilters { range: TimeRange::ALL, equal: Vec::new() }
    }
}

impl PushedFilters {
    /// Folds the conjuncts the scan was given. Each must be one that
    /// [`pushdown`] accepted with the same `string_columns`.
    pub fn from_exprs(filters: &[Expr], string_columns: &[String]) -> PushedFilters {
        let mut pushed = PushedFilters::default();
        for f in filters {
            match classify(f, string_columns) {
                Some(Conjunct::Time(r)) => pushed.range = intersect(pushed.range, r),
                Some(Conjunct::Equal(c, v)) => pushed.equal.push((c, v)),
                None => debug_assert!(false, "a filter the scan did not accept reached it: {f}"),
            }
        }
        pushed
    }
}

/// DataFusion's question: which of `filters` the scan applies exactly.
pub fn pushdown(filters: &[&Expr], string_columns: &[String]) -> Vec<TableProviderFilterPushDown> {
    filters
        .iter()
        .map(|f| match classify(f, string_columns) {
            Some(_) => TableProviderFilterPushDown::Exact,
            None => TableProviderFilterPushDown::Unsupported,
        })
        .collect()
}

/// The time range the `time` comparisons among `conjuncts` allow (other
/// conjuncts are ignored); [`TimeRange::ALL`] when there is none.
pub fn time_range_of<'a>(conjuncts: impl IntoIterator<Item = &'a Expr>) -> TimeRange {
    conjuncts.into_iter().fold(TimeRange::ALL, |range, c| match classify(c, &[]) {
        Some(Conjunct::Time(r)) => intersect(range, r),
        _ => range,
    })
}

enum Conjunct {
    Time(TimeRange),
    /// The column equals one of the strings.
    Equal(String, Vec<String>),
}

fn classify(expr: &Expr, string_columns: &[String]) -> Option<Conjunct> {
    match expr {
        Expr::BinaryExpr(BinaryExpr { op: Operator::Or, .. }) => one_of(expr, string_columns),
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (column, op, literal) = match (column_name(left), column_name(right)) {
                (Some(c), None) => (c, *op, right.as_ref()),
                (None, Some(c)) => (c, op.swap()?, left.as_ref()),
                _ => return None,
            };
            if column == TIME_COLUMN {
                let t = timestamp_ns(literal)?;
                return time_range(op, t).map(Conjunct::Time);
            }
            if op == Operator::Eq && string_columns.iter().any(|c| c == column) {
                return Some(Conjunct::Equal(column.to_string(), vec![string(literal)?]));
            }
            None
        }
        Expr::InList(InList { expr, list, negated: false }) => {
            let column = column_name(expr).filter(|c| string_columns.iter().any(|s| s == c))?;
            let values = list.iter().map(string).collect::<Option<Vec<String>>>()?;
            Some(Conjunct::Equal(column.to_string(), values))
        }
        Expr::Between(Between { expr, negated: false, low, high })
            if column_name(expr) == Some(TIME_COLUMN) =>
        {
            let (low, high) = (timestamp_ns(low)?, timestamp_ns(high)?);
            Some(Conjunct::Time(TimeRange { min_ns: low, max_ns: high }))
        }
        _ => None,
    }
}

/// `tag = 'a' OR tag = 'b' OR ...` on one tag column.
fn one_of(expr: &Expr, string_columns: &[String]) -> Option<Conjunct> {
    let mut column: Option<String> = None;
    let mut values = Vec::new();
    for alternative in split_binary(expr, Operator::Or) {
        let Some(Conjunct::Equal(c, v)) = classify(alternative, string_columns) else { return None };
        if column.get_or_insert_with(|| c.clone()) != &c {
            return None;
        }
        values.extend(v);
    }
    Some(Conjunct::Equal(column?, values))
}

/// The column an expression reads, looking through the casts DataFusion's
/// type coercion adds that keep every value (a dictionary-encoded tag to a
/// string, `time` to a nanosecond timestamp in another zone); a cast that
/// may merge values (to seconds, to a date) is not looked through.
pub(crate) fn column_name(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Column(c) => Some(c.name.as_str()),
        Expr::Cast(c) if keeps_values(c.field.data_type()) => column_name(&c.expr),
        _ => None,
    }
}

fn keeps_values(to: &DataType) -> bool {
    match to {
        DataType::Timestamp(TimeUnit::Nanosecond, _) => true,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, value) => keeps_values(value),
        _ => false,
    }
}

fn string(expr: &Expr) -> Option<String> {
    fn of(v: &ScalarValue) -> Option<String> {
        match v {
            ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => {
                Some(s.clone())
            }
            ScalarValue::Dictionary(_, inner) => of(inner),
            _ => None,
        }
    }
    of(literal(expr)?)
}

/// The times `time <op> t` admits (as an inclusive range).
fn time_range(op: Operator, t: i64) -> Option<TimeRange> {
    let all = TimeRange::ALL;
    Some(match op {
        Operator::Eq => TimeRange { min_ns: t, max_ns: t },
        Operator::Gt => match t.checked_add(1) {
            Some(min_ns) => TimeRange { min_ns, ..all },
            None => EMPTY,
        },
        Operator::GtEq => TimeRange { min_ns: t, ..all },
        Operator::Lt => match t.checked_sub(1) {
            Some(max_ns) => TimeRange { max_ns, ..all },
            None => EMPTY,
        },
        Operator::LtEq => TimeRange { max_ns: t, ..all },
        _ => return None,
    })
}

const EMPTY: TimeRange = TimeRange { min_ns: 1, max_ns: 0 };

fn intersect(a: TimeRange, b: TimeRange) -> TimeRange {
    TimeRange { min_ns: a.min_ns.max(b.min_ns), max_ns: a.max_ns.min(b.max_ns) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{col, lit};

    fn ts(v: i64) -> Expr {
        lit(ScalarValue::TimestampNanosecond(Some(v), Some("UTC".into())))
    }

    fn tags() -> Vec<String> {
        vec!["host".to_string()]
    }

    #[test]
    fn time_comparisons_fold_into_one_inclusive_range() {
        let filters = [col("time").gt_eq(ts(10)), col("time").lt(ts(20)), ts(12).lt(col("time"))];
        let refs: Vec<&Expr> = filters.iter().collect();
        assert!(pushdown(&refs, &tags()).iter().all(|p| *p == TableProviderFilterPushDown::Exact));
        let pushed = PushedFilters::from_exprs(&filters, &tags());
        assert_eq!(pushed.range, TimeRange { min_ns: 13, max_ns: 19 });
        assert!(pushed.equal.is_empty());
    }

    #[test]
    fn between_and_seconds_literals_are_converted_to_nanoseconds() {
        let filters = [col("time").between(
            lit(ScalarValue::TimestampSecond(Some(1), None)),
            lit(ScalarValue::TimestampMillisecond(Some(2_500), None)),
        )];
        let pushed = PushedFilters::from_exprs(&filters, &tags());
        assert_eq!(pushed.range, TimeRange { min_ns: 1_000_000_000, max_ns: 2_500_000_000 });
    }

    #[test]
    fn tag_equality_is_pushed_and_other_conjuncts_are_not() {
        let filters = [
            col("host").eq(lit("a")),
            lit("b").eq(col("host")),
            col("usage").gt(lit(1.0)),
            col("host").not_eq(lit("a")),
            col("time").gt(lit(5i64)),
        ];
        let refs: Vec<&Expr> = filters.iter().collect();
        use TableProviderFilterPushDown::{Exact, Unsupported};
        assert_eq!(pushdown(&refs, &tags()), vec![Exact, Exact, Unsupported, Unsupported, Unsupported]);
        let pushed = PushedFilters::from_exprs(&filters[..2], &tags());
        assert_eq!(pushed.equal, vec![("host".into(), vec!["a".into()]), ("host".into(), vec!["b".into()])]);
    }

    #[test]
    fn a_tag_in_a_list_or_equal_to_one_of_several_is_pushed() {
        let filters = [
            col("host").in_list(vec![lit("a"), lit("b")], false),
            col("host").eq(lit("c")).or(col("host").eq(lit("d")).or(lit("e").eq(col("host")))),
            col("host").in_list(vec![lit("a")], true),
            col("host").eq(lit("a")).or(col("usage").gt(lit(1.0))),
            col("host").in_list(vec![lit("a"), col("usage")], false),
        ];
        let refs: Vec<&Expr> = filters.iter().collect();
        use TableProviderFilterPushDown::{Exact, Unsupported};
        assert_eq!(pushdown(&refs, &tags()), vec![Exact, Exact, Unsupported, Unsupported, Unsupported]);
        let pushed = PushedFilters::from_exprs(&filters[..2], &tags());
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            pushed.equal,
            vec![("host".into(), strings(&["a", "b"])), ("host".into(), strings(&["c", "d", "e"]))]
        );
    }

    #[test]
    fn a_cast_that_merges_times_is_not_pushed() {
        let to_seconds = Expr::Cast(datafusion::logical_expr::Cast::new(
            Box::new(col("time")),
            DataType::Timestamp(TimeUnit::Second, None),
        ));
        let to_ns = Expr::Cast(datafusion::logical_expr::Cast::new(
            Box::new(col("time")),
            DataType::Timestamp(TimeUnit::Nanosecond, None),
        ));
        let filters = [to_seconds.eq(lit(ScalarValue::TimestampSecond(Some(1), None))), to_ns.gt_eq(ts(5))];
        let refs: Vec<&Expr> = filters.iter().collect();
        use TableProviderFilterPushDown::{Exact, Unsupported};
        assert_eq!(pushdown(&refs, &tags()), vec![Unsupported, Exact]);
    }

    #[test]
    fn bounds_at_the_ends_of_time_give_empty_ranges_instead_of_overflowing() {
        let pushed = PushedFilters::from_exprs(&[col("time").gt(ts(i64::MAX))], &tags());
        assert!(pushed.range.is_empty());
        let pushed = PushedFilters::from_exprs(&[col("time").lt(ts(i64::MIN))], &tags());
        assert!(pushed.range.is_empty());
    }
}
