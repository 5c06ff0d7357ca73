//! Constant values of plan expressions: timestamps and fixed intervals in
//! nanoseconds, as the pushdown, gap-filling and aggregate rules read them.

use datafusion::logical_expr::Expr;
use datafusion::scalar::ScalarValue;

/// The value of a literal expression.
pub fn literal(expr: &Expr) -> Option<&ScalarValue> {
    match expr {
        Expr::Literal(v, _) => Some(v),
        _ => None,
    }
}

/// A timestamp literal in nanoseconds; `None` for NULL, other types and
/// values beyond i64 nanoseconds.
pub fn timestamp_ns(expr: &Expr) -> Option<i64> {
    match literal(expr)? {
        ScalarValue::TimestampNanosecond(Some(v), _) => Some(*v),
        ScalarValue::TimestampMicrosecond(Some(v), _) => v.checked_mul(1_000),
        ScalarValue::TimestampMillisecond(Some(v), _) => v.checked_mul(1_000_000),
        ScalarValue::TimestampSecond(Some(v), _) => v.checked_mul(1_000_000_000),
        _ => None,
    }
}

/// A fixed interval literal in nanoseconds.
pub fn stride_ns(expr: &Expr) -> Option<i64> {
    const DAY_NS: i64 = 86_400_000_000_000;
    match expr {
        Expr::Literal(ScalarValue::IntervalMonthDayNano(Some(v)), _) if v.months == 0 => {
            i64::from(v.days).checked_mul(DAY_NS)?.checked_add(v.nanoseconds)
        }
        Expr::Literal(ScalarValue::IntervalDayTime(Some(v)), _) => i64::from(v.days)
            .checked_mul(DAY_NS)?
            .checked_add(i64::from(v.milliseconds).checked_mul(1_000_000)?),
        _ => None,
    }
}
