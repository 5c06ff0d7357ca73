//! WHERE conditions: splitting time comparisons into a time range (as
//! InfluxQL's `ConditionExpr` does, including its choice to intersect the
//! ranges of both sides of an OR), and evaluating the rest on tag sets and
//! rows. Evaluation is three-valued so that tag sets can be pruned before
//! any field is read: a field the caller does not know yet is `Unknown`.

use regex::Regex;
use strata_series::{FieldValue, TimeRange};

use super::error::StatementError;
use crate::influxql::ast::{BinaryOp, Expr, RefKind};
use crate::influxql::parser::compile_regex;
use crate::influxql::time::parse_time;

/// Bounds collected from time comparisons; `None` means unbounded.
/// Kept in i128 so `time > i64::MAX` cannot overflow.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TimeBounds {
    pub min_ns: Option<i128>,
    pub max_ns: Option<i128>,
}

impl TimeBounds {
    fn intersect(self, other: TimeBounds) -> TimeBounds {
        let pick = |a: Option<i128>, b: Option<i128>, keep_larger: bool| match (a, b) {
            (Some(x), Some(y)) => Some(if keep_larger { x.max(y) } else { x.min(y) }),
            (x, None) => x,
            (None, y) => y,
        };
        TimeBounds {
            min_ns: pick(self.min_ns, other.min_ns, true),
            max_ns: pick(self.max_ns, other.max_ns, false),
        }
    }

    /// The inclusive range to read, with `default_max_ns` as the upper bound
    /// when none was given. Bounds beyond i64 make the range empty or clamp.
    pub fn range(self, default_max_ns: i64) -> TimeRange {
        let clamp = |v: i128| v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        let min = self.min_ns.unwrap_or(i128::from(i64::MIN));
        let max = self.max_ns.unwrap_or(i128::from(default_max_ns));
        if min > max || min > i128::from(i64::MAX) || max < i128::from(i64::MIN) {
            return TimeRange { min_ns: 1, max_ns: 0 };
        }
        TimeRange { min_ns: clamp(min), max_ns: clamp(max) }
    }
}

fn flip(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::Lte => BinaryOp::Gte,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::Gte => BinaryOp::Lte,
        other => other,
    }
}

/// Evaluates the value side of a time comparison: `now()`, a time
/// string, an integer (ns), a duration (ns since the epoch), and `+`/`-`
/// of those.
fn time_value(expr: &Expr, now_ns: i64) -> Result<i128, StatementError> {
    match expr {
        Expr::Call { name, args } if name == "now" && args.is_empty() => Ok(i128::from(now_ns)),
        Expr::Str(s) => parse_time(s).map(i128::from).ok_or_else(|| {
            StatementError::Condition(format!(
                "invalid time '{s}': expected RFC3339 such as '2020-01-01T00:00:00Z'"
            ))
        }),
        Expr::Integer(v) => Ok(i128::from(*v)),
        Expr::Duration(v) => Ok(i128::from(*v)),
        Expr::Number(v) if v.is_finite() => Ok(*v as i128),
        Expr::Paren(inner) => time_value(inner, now_ns),
        Expr::Neg(inner) => Ok(-time_value(inner, now_ns)?),
        Expr::Binary { op: BinaryOp::Add, lhs, rhs } => {
            Ok(time_value(lhs, now_ns)? + time_value(rhs, now_ns)?)
        }
        Expr::Binary { op: BinaryOp::Sub, lhs, rhs } => {
            Ok(time_value(lhs, now_ns)? - time_value(rhs, now_ns)?)
        }
        other => Err(StatementError::Condition(format!("invalid time expression: {other}"))),
    }
}

/// Removes the time comparisons from `expr`; returns what remains (`None`:
/// nothing, i.e. true) and the time bounds.
pub fn split_time(expr: &Expr, now_ns: i64) -> Result<(Option<Expr>, TimeBounds), StatementError> {
    match expr {
        Expr::Paren(inner) => {
            let (rest, bounds) = split_time(inner, now_ns)?;
            Ok((rest.map(|e| Expr::Paren(Box::new(e))), bounds))
        }
        Expr::Binary { op: op @ (BinaryOp::And | BinaryOp::Or), lhs, rhs } => {
            let (l, lb) = split_time(lhs, now_ns)?;
            let (r, rb) = split_time(rhs, now_ns)?;
            let rest = match (l, r) {
                (None, r) => r,
                (l, None) => l,
                (Some(l), Some(r)) => Some(Expr::binary(*op, l, r)),
            };
            Ok((rest, lb.intersect(rb)))
        }
        Expr::Binary { op, lhs, rhs } if lhs.is_time_ref() || rhs.is_time_ref() => {
            let (op, value) = if lhs.is_time_ref() { (*op, rhs) } else { (flip(*op), lhs) };
            let v = time_value(value, now_ns)?;
            let bounds = match op {
                BinaryOp::Gt => TimeBounds { min_ns: Some(v + 1), max_ns: None },
                BinaryOp::Gte => TimeBounds { min_ns: Some(v), max_ns: None },
                BinaryOp::Lt => TimeBounds { min_ns: None, max_ns: Some(v - 1) },
                BinaryOp::Lte => TimeBounds { min_ns: None, max_ns: Some(v) },
                BinaryOp::Eq => TimeBounds { min_ns: Some(v), max_ns: Some(v) },
                other => {
                    return Err(StatementError::Condition(format!(
                        "invalid time comparison operator: {}",
                        other.symbol()
                    )))
                }
            };
            Ok((None, bounds))
        }
        other => Ok((Some(other.clone()), TimeBounds::default())),
    }
}

/// Does `expr` mention `time` anywhere?
pub fn mentions_time(expr: &Expr) -> bool {
    match expr {
        Expr::VarRef { .. } => expr.is_time_ref(),
        Expr::Binary { lhs, rhs, .. } => mentions_time(lhs) || mentions_time(rhs),
        Expr::Paren(inner) | Expr::Neg(inner) => mentions_time(inner),
        Expr::Call { args, .. } => args.iter().any(mentions_time),
        _ => false,
    }
}

/// Names a condition refers to, with their `::` kinds.
pub fn referenced_names(expr: &Expr, out: &mut Vec<(String, Option<RefKind>)>) {
    match expr {
        Expr::VarRef { name, kind } => out.push((name.clone(), *kind)),
        Expr::Binary { lhs, rhs, .. } => {
            referenced_names(lhs, out);
            referenced_names(rhs, out);
        }
        Expr::Paren(inner) | Expr::Neg(inner) => referenced_names(inner, out),
        Expr::Call { args, .. } => args.iter().for_each(|a| referenced_names(a, out)),
        _ => {}
    }
}

/// A value during evaluation.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
}

impl From<&FieldValue> for Val {
    fn from(v: &FieldValue) -> Val {
        match v {
            FieldValue::Float(x) => Val::Float(*x),
            FieldValue::Integer(x) => Val::Int(*x),
            FieldValue::Unsigned(x) => Val::UInt(*x),
            FieldValue::Boolean(x) => Val::Bool(*x),
            FieldValue::String(x) => Val::Str(x.clone()),
        }
    }
}

/// A condition compiled against one measurement: names resolved to tags
/// or field slots, regexes compiled.
#[derive(Debug)]
pub enum Cond {
    Tag(String),
    Field(usize),
    Lit(Val),
    Regex(Regex),
    Binary(BinaryOp, Box<Cond>, Box<Cond>),
    Neg(Box<Cond>),
}

/// What a condition sees: tag values (missing tags read as `""`, as in
/// InfluxDB) and field values by slot (`None`: not known yet).
pub trait RowView {
    fn tag(&self, key: &str) -> &str;
    fn field(&self, slot: usize) -> Option<Option<&FieldValue>>;
}

/// Compiles `expr`; `resolve` maps a name (not `time`) to a tag or field.
pub fn compile(
    expr: &Expr,
    now_ns: i64,
    resolve: &dyn Fn(&str, Option<RefKind>) -> Cond,
) -> Result<Cond, StatementError> {
    Ok(match expr {
        Expr::VarRef { .. } if expr.is_time_ref() => {
            return Err(StatementError::Condition(
                "invalid use of time in condition: compare time with a value".to_string(),
            ))
        }
        Expr::VarRef { name, kind } => resolve(name, *kind),
        Expr::Integer(v) => Cond::Lit(Val::Int(*v)),
        Expr::Number(v) => Cond::Lit(Val::Float(*v)),
        Expr::Str(s) => Cond::Lit(Val::Str(s.clone())),
        Expr::Bool(b) => Cond::Lit(Val::Bool(*b)),
        Expr::Duration(ns) => Cond::Lit(Val::Int(*ns)),
        Expr::Regex(pattern) => Cond::Regex(compile_regex(pattern)?),
        Expr::Call { name, args } if name == "now" && args.is_empty() => Cond::Lit(Val::Int(now_ns)),
        Expr::Call { .. } => {
            return Err(StatementError::Condition(format!("invalid function call in condition: {expr}")))
        }
        Expr::Wildcard => return Err(StatementError::Condition("invalid wildcard in condition".to_string())),
        Expr::Paren(inner) => compile(inner, now_ns, resolve)?,
        Expr::Neg(inner) => Cond::Neg(Box::new(compile(inner, now_ns, resolve)?)),
        Expr::Binary { op, lhs, rhs } => Cond::Binary(
            *op,
            Box::new(compile(lhs, now_ns, resolve)?),
            Box::new(compile(rhs, now_ns, resolve)?),
        ),
    })
}

fn truthy(v: &Val) -> bool {
    matches!(v, Val::Bool(true))
}

pub(crate) fn compare(op: BinaryOp, l: &Val, r: &Val) -> bool {
    use std::cmp::Ordering;
    let ordering: Option<Ordering> = match (l, r) {
        (Val::Str(a), Val::Str(b)) => Some(a.cmp(b)),
        (Val::Bool(a), Val::Bool(b)) => {
            return match op {
                BinaryOp::Eq => a == b,
                BinaryOp::Neq => a != b,
                _ => false,
            }
        }
        (Val::Int(a), Val::Int(b)) => Some(a.cmp(b)),
        (Val::UInt(a), Val::UInt(b)) => Some(a.cmp(b)),
        (Val::Int(a), Val::UInt(b)) => Some(i128::from(*a).cmp(&i128::from(*b))),
        (Val::UInt(a), Val::Int(b)) => Some(i128::from(*a).cmp(&i128::from(*b))),
        (a, b) => match (as_f64(a), as_f64(b)) {
            (Some(x), Some(y)) => {
                if x.is_nan() || y.is_nan() {
                    return op == BinaryOp::Neq;
                }
                x.partial_cmp(&y)
            }
            _ => None,
        },
    };
    let Some(ordering) = ordering else {
        return false;
    };
    match op {
        BinaryOp::Eq => ordering == Ordering::Equal,
        BinaryOp::Neq => ordering != Ordering::Equal,
        BinaryOp::Lt => ordering == Ordering::Less,
        BinaryOp::Lte => ordering != Ordering::Greater,
        BinaryOp::Gt => ordering == Ordering::Greater,
        BinaryOp::Gte => ordering != Ordering::Less,
        _ => false,
    }
}

/// Whether some value between `min` and `max` (numeric, of one field) may
/// pass `value op lit` (`op` one of [`Cond::required_comparisons`]'). The
/// comparison orders numbers monotonically, so the ends decide.
pub fn range_may_pass(op: BinaryOp, lit: &Val, min: &FieldValue, max: &FieldValue) -> bool {
    let (min, max) = (Val::from(min), Val::from(max));
    match op {
        BinaryOp::Gt | BinaryOp::Gte => compare(op, &max, lit),
        BinaryOp::Lt | BinaryOp::Lte => compare(op, &min, lit),
        BinaryOp::Eq => compare(BinaryOp::Gte, &max, lit) && compare(BinaryOp::Lte, &min, lit),
        _ => true,
    }
}

fn as_f64(v: &Val) -> Option<f64> {
    match v {
        Val::Int(x) => Some(*x as f64),
        Val::UInt(x) => Some(*x as f64),
        Val::Float(x) => Some(*x),
        _ => None,
    }
}

fn arithmetic(op: BinaryOp, l: &Val, r: &Val) -> Val {
    match (l, r) {
        (Val::Int(a), Val::Int(b)) => {
            let v = match op {
                BinaryOp::Add => a.checked_add(*b),
                BinaryOp::Sub => a.checked_sub(*b),
                BinaryOp::Mul => a.checked_mul(*b),
                BinaryOp::Mod => a.checked_rem(*b),
                _ => return if *b == 0 { Val::Null } else { Val::Float(*a as f64 / *b as f64) },
            };
            v.map(Val::Int).unwrap_or(Val::Null)
        }
        (a, b) => match (as_f64(a), as_f64(b)) {
            (Some(x), Some(y)) => Val::Float(match op {
                BinaryOp::Add => x + y,
                BinaryOp::Sub => x - y,
                BinaryOp::Mul => x * y,
                BinaryOp::Div => x / y,
                _ => x % y,
            }),
            _ => Val::Null,
        },
    }
}

impl Cond {
    /// Evaluates against `row`; `None` when the result depends on a field
    /// value `row` does not know.
    pub fn eval(&self, row: &dyn RowView) -> Option<Val> {
        match self {
            Cond::Tag(key) => Some(Val::Str(row.tag(key).to_string())),
            Cond::Field(slot) => row.field(*slot).map(|v| v.map(Val::from).unwrap_or(Val::Null)),
            Cond::Lit(v) => Some(v.clone()),
            Cond::Regex(_) => Some(Val::Null),
            Cond::Neg(inner) => Some(match inner.eval(row)? {
                Val::Int(v) => v.checked_neg().map(Val::Int).unwrap_or(Val::Null),
                Val::Float(v) => Val::Float(-v),
                _ => Val::Null,
            }),
            Cond::Binary(op @ (BinaryOp::And | BinaryOp::Or), l, r) => {
                // Three-valued logic: one side equal to `decisive` (false
                // for AND, true for OR) decides alone, even when the other
                // side is unknown; otherwise both sides must be known.
                let decisive = *op == BinaryOp::Or;
                let (l, r) = (l.eval(row).map(|v| truthy(&v)), r.eval(row).map(|v| truthy(&v)));
                match (l, r) {
                    (Some(side), _) | (_, Some(side)) if side == decisive => Some(Val::Bool(decisive)),
                    (Some(_), Some(_)) => Some(Val::Bool(!decisive)),
                    _ => None,
                }
            }
            Cond::Binary(op @ (BinaryOp::EqRegex | BinaryOp::NeqRegex), l, r) => {
                let value = l.eval(row)?;
                let Cond::Regex(re) = r.as_ref() else {
                    return Some(Val::Bool(false));
                };
                Some(Val::Bool(match value {
                    Val::Str(s) => re.is_match(&s) == (*op == BinaryOp::EqRegex),
                    _ => false,
                }))
            }
            Cond::Binary(op, l, r) => {
                let (l, r) = (l.eval(row), r.eval(row));
                let (l, r) = (l?, r?);
                if matches!(l, Val::Null) || matches!(r, Val::Null) {
                    return Some(if op.is_comparison() { Val::Bool(false) } else { Val::Null });
                }
                Some(if op.is_comparison() {
                    Val::Bool(compare(*op, &l, &r))
                } else {
                    arithmetic(*op, &l, &r)
                })
            }
        }
    }

    /// Whether the condition reads a field (otherwise it sees only tags and
    /// literals, and decides a whole tag set at once).
    pub fn references_fields(&self) -> bool {
        match self {
            Cond::Field(_) => true,
            Cond::Tag(_) | Cond::Lit(_) | Cond::Regex(_) => false,
            Cond::Binary(_, l, r) => l.references_fields() || r.references_fields(),
            Cond::Neg(c) => c.references_fields(),
        }
    }

    /// The comparisons of a field with a literal that every row passing the
    /// condition passes (those on its top-level AND chain), as (slot, op,
    /// literal) with the field on the left.
    pub fn required_comparisons(&self) -> Vec<(usize, BinaryOp, Val)> {
        let flipped = |op: BinaryOp| match op {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::Lte => BinaryOp::Gte,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::Gte => BinaryOp::Lte,
            other => other,
        };
        let ordered =
            |op| matches!(op, BinaryOp::Eq | BinaryOp::Lt | BinaryOp::Lte | BinaryOp::Gt | BinaryOp::Gte);
        match self {
            Cond::Binary(BinaryOp::And, l, r) => {
                let mut all = l.required_comparisons();
                all.extend(r.required_comparisons());
                all
            }
            Cond::Binary(op, l, r) if ordered(*op) => match (l.as_ref(), r.as_ref()) {
                (Cond::Field(slot), Cond::Lit(v)) => vec![(*slot, *op, v.clone())],
                (Cond::Lit(v), Cond::Field(slot)) => vec![(*slot, flipped(*op), v.clone())],
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// `Some(false)` when the condition is false whatever the unknown
    /// fields hold; `Some(true)` when it is true; `None` otherwise.
    pub fn decide(&self, row: &dyn RowView) -> Option<bool> {
        self.eval(row).map(|v| truthy(&v))
    }
}

/// A tag set with no field values: for pruning tag sets, and for
/// statements whose conditions only see tags.
pub struct TagsOnly<'a> {
    pub tags: &'a [(String, String)],
    /// Whether unknown fields make the result unknown (`true`) or null.
    pub fields_unknown: bool,
}

impl RowView for TagsOnly<'_> {
    fn tag(&self, key: &str) -> &str {
        tag_value(self.tags, key)
    }

    fn field(&self, _slot: usize) -> Option<Option<&FieldValue>> {
        if self.fields_unknown {
            None
        } else {
            Some(None)
        }
    }
}

/// The value of `key` in a sorted tag list, `""` when absent.
pub fn tag_value<'a>(tags: &'a [(String, String)], key: &str) -> &'a str {
    match tags.binary_search_by(|(k, _)| k.as_str().cmp(key)) {
        Ok(i) => &tags[i].1,
        Err(_) => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::influxql::parse_query;
    use crate::influxql::Statement;

    fn condition(text: &str) -> Expr {
        match parse_query(&format!("DELETE WHERE {text}")).unwrap().remove(0) {
            Statement::Delete(d) => d.condition.unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn time_comparisons_become_bounds() {
        let now = 10_000_000_000_000;
        let (rest, b) = split_time(&condition("time > now() - 1h AND host = 'a'"), now).unwrap();
        assert_eq!(rest.unwrap().to_string(), "host = 'a'");
        assert_eq!(b, TimeBounds { min_ns: Some(i128::from(now - 3_600_000_000_000 + 1)), max_ns: None });
        let (rest, b) =
            split_time(&condition("'2020-01-01T00:00:00Z' <= time AND time < 1577836810s"), 0).unwrap();
        assert!(rest.is_none());
        assert_eq!(
            b.range(i64::MAX),
            TimeRange { min_ns: 1_577_836_800_000_000_000, max_ns: 1_577_836_809_999_999_999 }
        );
        let (_, b) = split_time(&condition("time = 5"), 0).unwrap();
        assert_eq!(b.range(i64::MAX), TimeRange { min_ns: 5, max_ns: 5 });
        assert!(split_time(&condition("time != 5"), 0).unwrap_err().to_string().contains("!="));
        assert!(split_time(&condition("time > 'yesterday'"), 0)
            .unwrap_err()
            .to_string()
            .contains("invalid time"));
        assert!(split_time(&condition("time > 9223372036854775807"), 0)
            .unwrap()
            .1
            .range(i64::MAX)
            .is_empty());
    }

    struct Row<'a> {
        tags: &'a [(String, String)],
        fields: Vec<Option<FieldValue>>,
    }

    impl RowView for Row<'_> {
        fn tag(&self, key: &str) -> &str {
            tag_value(self.tags, key)
        }
        fn field(&self, slot: usize) -> Option<Option<&FieldValue>> {
            Some(self.fields[slot].as_ref())
        }
    }

    fn compiled(text: &str) -> Cond {
        compile(&condition(text), 0, &|name, _| {
            if name == "usage" {
                Cond::Field(0)
            } else {
                Cond::Tag(name.to_string())
            }
        })
        .unwrap()
    }

    #[test]
    fn tag_and_field_predicates_evaluate_three_valued() {
        let tags = vec![("host".to_string(), "server01".to_string())];
        let unknown = TagsOnly { tags: &tags, fields_unknown: true };
        assert_eq!(compiled("host =~ /^server/ AND usage > 5").decide(&unknown), None);
        assert_eq!(compiled("host = 'b' AND usage > 5").decide(&unknown), Some(false));
        assert_eq!(compiled("host = 'server01' OR usage > 5").decide(&unknown), Some(true));
        assert_eq!(compiled("region = ''").decide(&unknown), Some(true));
        assert_eq!(compiled("region !~ /x/").decide(&unknown), Some(true));
        let row = Row { tags: &tags, fields: vec![Some(FieldValue::Integer(7))] };
        assert_eq!(compiled("usage > 5 AND usage <= 7.0").decide(&row), Some(true));
        assert_eq!(compiled("usage * 2 = 14").decide(&row), Some(true));
        assert_eq!(compiled("usage != 7").decide(&row), Some(false));
        let null = Row { tags: &tags, fields: vec![None] };
        assert_eq!(compiled("usage != 7").decide(&null), Some(false));
    }

    #[test]
    fn required_comparisons_come_from_the_and_chain_and_rule_out_ranges() {
        let required = compiled("usage > 5 AND host = 'a' AND 10 >= usage").required_comparisons();
        assert_eq!(
            required,
            vec![(0, BinaryOp::Gt, Val::Int(5)), (0, BinaryOp::Lte, Val::Int(10))],
            "a literal on the left is turned around"
        );
        assert!(compiled("usage > 5 OR host = 'a'").required_comparisons().is_empty(), "not under OR");
        assert!(compiled("usage * 2 > 5").required_comparisons().is_empty(), "not over arithmetic");
        let (lo, hi) = (FieldValue::Float(2.0), FieldValue::Float(4.0));
        let may = |op, v: f64| range_may_pass(op, &Val::Float(v), &lo, &hi);
        assert!(may(BinaryOp::Gt, 3.9) && !may(BinaryOp::Gt, 4.0) && may(BinaryOp::Gte, 4.0));
        assert!(may(BinaryOp::Lt, 2.1) && !may(BinaryOp::Lt, 2.0) && may(BinaryOp::Lte, 2.0));
        assert!(may(BinaryOp::Eq, 3.0) && !may(BinaryOp::Eq, 4.5) && !may(BinaryOp::Eq, 1.0));
        let ints = (FieldValue::Integer(-3), FieldValue::Integer(3));
        assert!(!range_may_pass(BinaryOp::Gt, &Val::Float(3.5), &ints.0, &ints.1));
        assert!(!range_may_pass(BinaryOp::Gt, &Val::Str("x".into()), &ints.0, &ints.1), "never true");
    }

    #[test]
    fn and_or_follow_kleene_logic_with_unknown_sides() {
        let tags = vec![("host".to_string(), "a".to_string())];
        let unknown = TagsOnly { tags: &tags, fields_unknown: true };
        let sides = [("host = 'a'", Some(true)), ("host = 'b'", Some(false)), ("usage > 5", None)];
        for (l, lv) in sides {
            for (r, rv) in sides {
                let and = match (lv, rv) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
                let or = match (lv, rv) {
                    (Some(true), _) | (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                };
                assert_eq!(compiled(&format!("{l} AND {r}")).decide(&unknown), and, "{l} AND {r}");
                assert_eq!(compiled(&format!("{l} OR {r}")).decide(&unknown), or, "{l} OR {r}");
            }
        }
    }
}
