//! SELECT planning: the database and measurement, the time range and
//! windows, what each output column is, which tag sets survive the tag
//! predicates, and which series ids (tag set x field) must be read.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use strata_series::tag_index::TagSetSeries;
use strata_series::{FieldType, SeriesId, SeriesStore, TimeRange};

use super::condition::{compile, referenced_names, split_time, Cond, TagsOnly};
use super::error::StatementError;
use super::tag_filter::candidate_tagsets;
use super::target::resolve_db;
use super::transform::Transform;
use crate::influxql::ast::{Dimension, Expr, Fill, RefKind, SelectStatement};
use crate::influxql::QueryParams;

/// The aggregate functions of the subset (InfluxDB 1.8's aggregations and
/// selectors; docs/influxql.md lists them).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AggFunc {
    Count,
    Sum,
    Mean,
    Median,
    /// Sample standard deviation (n - 1); null for fewer than two values.
    Stddev,
    /// max - min.
    Spread,
    Min,
    Max,
    First,
    Last,
    /// `percentile(field, N)`: N in thousandths of a percent (99.9 is 99,900).
    Percentile(u32),
    /// `integral(field[, unit])`: the area under the points (trapezoids),
    /// per `unit` nanoseconds (default 1s).
    Integral(i64),
    /// `top(field[, tag...], n)` / `bottom(...)`: the `n` largest (smallest)
    /// values, each with its point's time (see [`super::top`]).
    Top {
        n: u64,
        bottom: bool,
    },
    /// Not callable: the first point added (the input of a transformation
    /// of raw values, which keeps the first of several points at one time,
    /// in series order, as InfluxDB's derivative does).
    Point,
}

impl AggFunc {
    /// A one-argument function by name (`percentile` takes two: see
    /// [`AggFunc::parse_call`]).
    pub fn parse(name: &str) -> Option<AggFunc> {
        Some(match name {
            "count" => AggFunc::Count,
            "sum" => AggFunc::Sum,
            "mean" => AggFunc::Mean,
            "median" => AggFunc::Median,
            "stddev" => AggFunc::Stddev,
            "spread" => AggFunc::Spread,
            "min" => AggFunc::Min,
            "max" => AggFunc::Max,
            "first" => AggFunc::First,
            "last" => AggFunc::Last,
            _ => return None,
        })
    }

    /// The function of a call and its field argument, checking the number
    /// of arguments (and `percentile`'s N).
    pub fn parse_call<'a>(name: &str, args: &'a [Expr]) -> Result<(AggFunc, &'a Expr), StatementError> {
        let count = |expected: usize| {
            if args.len() == expected {
                Ok(())
            } else {
                Err(StatementError::ArgumentCount { func: name.to_string(), expected, got: args.len() })
            }
        };
        if name == "top" || name == "bottom" {
            return Err(StatementError::Unsupported(format!(
                "{name}() is supported only directly in the SELECT list, alone"
            )));
        }
        if name == "integral" {
            if !(1..=2).contains(&args.len()) {
                return Err(StatementError::ArgumentCount {
                    func: name.to_string(),
                    expected: 2,
                    got: args.len(),
                });
            }
            let unit_ns = match args.get(1) {
                None => 1_000_000_000,
                Some(Expr::Duration(ns)) if *ns > 0 => *ns,
                Some(other) => {
                    return Err(StatementError::BadArgument(format!(
                        "second argument to integral must be a positive duration, got {other}"
                    )))
                }
            };
            return Ok((AggFunc::Integral(unit_ns), &args[0]));
        }
        if name == "percentile" {
            count(2)?;
            let n = match &args[1] {
                Expr::Integer(v) => *v as f64,
                Expr::Number(v) => *v,
                other => {
                    return Err(StatementError::BadArgument(format!(
                        "expected float argument in percentile(), got {other}"
                    )))
                }
            };
            if !(0.0..=100.0).contains(&n) {
                return Err(StatementError::BadArgument(format!(
                    "percentile() N must be in 0..=100, not {n}"
                )));
            }
            return Ok((AggFunc::Percentile((n * 1000.0).round() as u32), &args[0]));
        }
        let func = AggFunc::parse(name).ok_or_else(|| StatementError::UndefinedFunction(name.to_string()))?;
        count(1)?;
        Ok((func, &args[0]))
    }

    pub fn name(self) -> &'static str {
        match self {
            AggFunc::Count => "count",
            AggFunc::Sum => "sum",
            AggFunc::Mean => "mean",
            AggFunc::Median => "median",
            AggFunc::Stddev => "stddev",
            AggFunc::Spread => "spread",
            AggFunc::Min => "min",
            AggFunc::Max => "max",
            AggFunc::First => "first",
            AggFunc::Last => "last",
            AggFunc::Percentile(_) => "percentile",
            AggFunc::Point => "point",
            AggFunc::Integral(_) => "integral",
            AggFunc::Top { bottom: false, .. } => "top",
            AggFunc::Top { bottom: true, .. } => "bottom",
        }
    }

    /// Selectors return one of the input points (and its time).
    pub fn is_selector(self) -> bool {
        matches!(
            self,
            AggFunc::Min
                | AggFunc::Max
                | AggFunc::First
                | AggFunc::Last
                | AggFunc::Percentile(_)
                | AggFunc::Point
                | AggFunc::Top { .. }
        )
    }

    /// Whether the function applies to fields of type `t`.
    pub fn accepts(self, t: FieldType) -> bool {
        let numeric = matches!(t, FieldType::Float | FieldType::Integer | FieldType::Unsigned);
        match self {
            AggFunc::Count | AggFunc::First | AggFunc::Last | AggFunc::Point => true,
            _ => numeric,
        }
    }

    /// The type of the result for an input of type `t`.
    pub fn output_type(self, t: FieldType) -> FieldType {
        match self {
            AggFunc::Count => FieldType::Integer,
            AggFunc::Mean | AggFunc::Median | AggFunc::Stddev | AggFunc::Integral(_) => FieldType::Float,
            _ => t,
        }
    }
}

/// `GROUP BY time(interval, offset)`, offset normalised into `[0, interval)`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub interval_ns: i64,
    pub offset_ns: i64,
    /// `tz(...)`: windows aligned in this zone's local time.
    pub zone: Option<chrono_tz::Tz>,
}

impl Window {
    /// Start of the window holding `t` (i128: may precede i64::MIN).
    pub fn start(&self, t: i64) -> i128 {
        if let Some(zone) = self.zone {
            return crate::influxql::zone::window_start(zone, self.interval_ns, self.offset_ns, t);
        }
        let t = i128::from(t);
        t - (t - i128::from(self.offset_ns)).rem_euclid(i128::from(self.interval_ns))
    }

    /// The start of the window after the one starting at `start` (windows
    /// in a zone are not all `interval_ns` long across a DST change).
    pub fn next_start(&self, start: i128) -> i128 {
        let interval = i128::from(self.interval_ns);
        if self.zone.is_none() {
            return start + interval;
        }
        let step = (interval / 8).max(1);
        let mut t = start + interval;
        loop {
            let clamped = t.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
            let next = self.start(clamped);
            if next > start || i128::from(clamped) != t {
                return next.max(start + 1);
            }
            t += step;
        }
    }
}

/// Where a raw column's values come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnSource {
    Field(usize),
    Tag(String),
    /// Neither a field nor a tag of the measurement: always null.
    Missing,
}

/// One aggregate column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AggColumn {
    pub func: AggFunc,
    /// The field slot; `None` when the field does not exist (null column).
    pub slot: Option<usize>,
    pub field_type: Option<FieldType>,
    /// A transformation of the aggregate over the windows (`derivative(mean(x))`).
    pub transform: Option<Transform>,
}

impl AggColumn {
    /// The column's output type for a field of type `t`.
    pub fn output_type(&self, t: FieldType) -> FieldType {
        let t = self.func.output_type(t);
        self.transform.map_or(t, |tr| tr.output_type(t))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Projection {
    Raw(Vec<ColumnSource>),
    Aggregate(Vec<AggColumn>),
}

/// One tag set of the measurement and its series id per field slot.
#[derive(Clone, Debug, PartialEq)]
pub struct TagSet {
    /// Shared with the measurement's tag index.
    pub tags: Arc<Vec<(String, String)>>,
    pub ids: Vec<Option<SeriesId>>,
}

/// Everything the SELECT executor needs, decided before reading.
#[derive(Debug)]
pub struct SelectPlan {
    pub db: String,
    pub measurement: String,
    /// Output column names, the time column first.
    pub columns: Vec<String>,
    pub projection: Projection,
    /// The range read, inclusive (may be empty).
    pub range: TimeRange,
    /// Whether WHERE gave a lower time bound.
    pub lower_bounded: bool,
    pub window: Option<Window>,
    /// `SLIMIT` and `SOFFSET`: which output series are returned.
    pub slimit: Option<u64>,
    pub soffset: Option<u64>,
    /// Tag keys of GROUP BY, sorted.
    pub group_keys: Vec<String>,
    /// The tag keys of a `top`/`bottom` call (`top(f, host, 3)`), output
    /// as columns after its value.
    pub selector_tags: Vec<String>,
    /// Field name of each slot.
    pub slots: Vec<String>,
    /// What remains of WHERE once time is removed.
    pub condition: Option<Cond>,
    pub tagsets: Vec<TagSet>,
    pub fill: Fill,
    pub order_desc: bool,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// InfluxQL's column naming: aliases first, then generated names with
/// `_1`, `_2` suffixes on conflicts (`time` is taken by the time column).
pub fn column_names(time_name: &str, items: &[(String, Option<String>)]) -> Vec<String> {
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    taken.insert(time_name.to_string(), 1);
    let mut names: Vec<Option<String>> = items.iter().map(|(_, alias)| alias.clone()).collect();
    for name in names.iter().flatten() {
        taken.insert(name.clone(), 1);
    }
    for (i, (generated, _)) in items.iter().enumerate() {
        if names[i].is_some() {
            continue;
        }
        let mut name = generated.clone();
        if let Some(&count) = taken.get(&name) {
            let mut n = count;
            loop {
                let candidate = format!("{generated}_{n}");
                if !taken.contains_key(&candidate) {
                    taken.insert(generated.clone(), n + 1);
                    name = candidate;
                    break;
                }
                n += 1;
            }
        }
        *taken.entry(name.clone()).or_insert(0) += 1;
        names[i] = Some(name);
    }
    let mut out = vec![time_name.to_string()];
    out.extend(names.into_iter().map(|n| n.unwrap_or_default()));
    out
}

/// A projection item before field slots are assigned.
enum Item {
    Raw(RawRef),
    Agg(AggFunc, Option<String>, Option<Transform>),
}

enum RawRef {
    Field(String),
    Tag(String),
    Missing,
}

struct Schema {
    field_types: BTreeMap<String, FieldType>,
    tag_keys: BTreeSet<String>,
}

impl Schema {
    /// How a name without `::` resolves: field first, then tag.
    fn raw_ref(&self, name: &str, kind: Option<RefKind>) -> RawRef {
        let is_field = self.field_types.contains_key(name);
        match kind {
            Some(RefKind::Tag) => RawRef::Tag(name.to_string()),
            Some(RefKind::Field) | None if is_field => RawRef::Field(name.to_string()),
            None if self.tag_keys.contains(name) => RawRef::Tag(name.to_string()),
            _ => RawRef::Missing,
        }
    }
}

/// Plans `stmt`. `Ok(None)` means the measurement has no series.
pub fn plan_select(
    store: &dyn SeriesStore,
    stmt: &SelectStatement,
    params: &QueryParams,
) -> Result<Option<SelectPlan>, StatementError> {
    let db = resolve_db(stmt.from.database.as_deref(), params)?;
    let measurement = stmt.from.name.clone();
    let measurement_tags = store.measurement_tags(&db, &measurement)?;
    let schema = Schema {
        field_types: measurement_tags.field_types.clone(),
        tag_keys: measurement_tags.tag_keys.clone(),
    };

    // GROUP BY.
    let mut window = None;
    let mut raw_transforms = 0usize;
    let mut group_keys: BTreeSet<String> = BTreeSet::new();
    for dimension in &stmt.dimensions {
        match dimension {
            Dimension::Time { interval_ns, offset_ns } => {
                window = Some(Window {
                    interval_ns: *interval_ns,
                    offset_ns: offset_ns.rem_euclid(*interval_ns),
                    zone: stmt.tz,
                })
            }
            Dimension::Tag(tag) => {
                group_keys.insert(tag.clone());
            }
            Dimension::AllTags => group_keys.extend(schema.tag_keys.iter().cloned()),
        }
    }

    // The SELECT list.
    let mut time_name = "time".to_string();
    let mut items: Vec<Item> = Vec::new();
    let mut names: Vec<(String, Option<String>)> = Vec::new();
    let mut selector_tags: Vec<String> = Vec::new();
    for field in &stmt.fields {
        match &field.expr {
            Expr::Call { name, args } if name == "top" || name == "bottom" => {
                let Some(super::top::TopCall { func, field: arg, tags }) =
                    super::top::parse_top_call(name, args)?
                else {
                    unreachable!("top and bottom parse")
                };
                let field_name = match arg {
                    Expr::VarRef { name: arg, kind } if !arg.eq_ignore_ascii_case("time") => {
                        match schema.raw_ref(arg, *kind) {
                            RawRef::Field(f) if !func.accepts(schema.field_types[&f]) => {
                                return Err(StatementError::TypeMismatch {
                                    func: func.name(),
                                    field_type: schema.field_types[&f].influx_name(),
                                    field: f,
                                })
                            }
                            RawRef::Field(f) => Some(f),
                            _ => None,
                        }
                    }
                    _ => return Err(StatementError::ExpectedField(name.clone())),
                };
                items.push(Item::Agg(func, field_name, None));
                names.push((func.name().to_string(), field.alias.clone()));
                for tag in &tags {
                    names.push((tag.clone(), None));
                }
                selector_tags = tags;
            }
            e if e.is_time_ref() => {
                if let Some(alias) = &field.alias {
                    time_name = alias.clone();
                }
            }
            Expr::VarRef { name, kind } => {
                items.push(Item::Raw(schema.raw_ref(name, *kind)));
                names.push((name.clone(), field.alias.clone()));
            }
            Expr::Wildcard => {
                let mut all: BTreeMap<&String, RawRef> = BTreeMap::new();
                for tag in schema.tag_keys.iter().filter(|t| !group_keys.contains(*t)) {
                    all.insert(tag, RawRef::Tag(tag.clone()));
                }
                for name in schema.field_types.keys() {
                    all.insert(name, RawRef::Field(name.clone()));
                }
                for (name, raw) in all {
                    items.push(Item::Raw(raw));
                    names.push((name.clone(), None));
                }
            }
            Expr::Call { name, args } => {
                // A transformation of raw values runs over the points, as over
                // windows of one nanosecond holding each point's value.
                let (transform, func, arg, raw) = match Transform::parse_call(name, args)? {
                    None => {
                        let (func, arg) = AggFunc::parse_call(name, args)?;
                        (None, func, arg, false)
                    }
                    Some((t, Expr::Call { name: inner, args: inner_args })) => {
                        let (func, arg) = AggFunc::parse_call(inner, inner_args)?;
                        (Some(t), func, arg, false)
                    }
                    Some((t, arg @ (Expr::VarRef { .. } | Expr::Wildcard))) => {
                        (Some(t), AggFunc::Point, arg, true)
                    }
                    Some(_) => return Err(StatementError::ExpectedField(name.clone())),
                };
                let column_name = transform.map_or(func.name(), Transform::name);
                match arg {
                    Expr::VarRef { .. } if arg.is_time_ref() => {
                        return Err(StatementError::ExpectedField(name.clone()))
                    }
                    Expr::VarRef { name: arg, kind } => {
                        let field_name = match schema.raw_ref(arg, *kind) {
                            RawRef::Field(f) => {
                                let t = schema.field_types[&f];
                                if !func.accepts(t) {
                                    return Err(StatementError::TypeMismatch {
                                        func: func.name(),
                                        field: f,
                                        field_type: t.influx_name(),
                                    });
                                }
                                Some(f)
                            }
                            _ => None,
                        };
                        items.push(Item::Agg(func, field_name, transform));
                        raw_transforms += usize::from(raw);
                        names.push((column_name.to_string(), field.alias.clone()));
                    }
                    Expr::Wildcard => {
                        let base = field.alias.clone().unwrap_or_else(|| column_name.to_string());
                        for (f, t) in &schema.field_types {
                            if func.accepts(*t) {
                                items.push(Item::Agg(func, Some(f.clone()), transform));
                                raw_transforms += usize::from(raw);
                                names.push((String::new(), Some(format!("{base}_{f}"))));
                            }
                        }
                    }
                    _ => return Err(StatementError::ExpectedField(name.clone())),
                }
            }
            other => {
                return Err(StatementError::Unsupported(format!("unsupported expression in SELECT: {other}")))
            }
        }
    }
    if stmt.fields.iter().all(|f| f.expr.is_time_ref()) {
        return Err(StatementError::Invalid("at least 1 non-time field must be queried"));
    }
    let has_agg = stmt.fields.iter().any(|f| matches!(f.expr, Expr::Call { .. }));
    let has_raw = stmt.fields.iter().any(|f| !f.expr.is_time_ref() && !matches!(f.expr, Expr::Call { .. }));
    if has_raw && has_agg {
        return Err(StatementError::Invalid("mixing aggregate and non-aggregate queries is not supported"));
    }
    if let Some(Item::Agg(top @ AggFunc::Top { n, .. }, _, _)) =
        items.iter().find(|i| matches!(i, Item::Agg(AggFunc::Top { .. }, _, _)))
    {
        if items.len() > 1 {
            return Err(StatementError::BadArgument(format!(
                "selector function {}() cannot be combined with other functions",
                top.name()
            )));
        }
        if let Some(limit) = stmt.limit.filter(|l| *l > 0 && l < n) {
            return Err(StatementError::BadArgument(format!(
                "limit ({n}) in {} function can not be larger than the LIMIT ({limit}) in the select statement",
                top.name()
            )));
        }
    }
    let transforms = items.iter().filter(|i| matches!(i, Item::Agg(_, _, Some(_)))).count();
    let raw_transform = raw_transforms > 0;
    if raw_transform && (raw_transforms != items.len() || window.is_some()) {
        return Err(StatementError::Invalid(
            "a transformation of raw values goes with other transformations of raw values only, without GROUP BY time",
        ));
    }
    if window.is_some_and(|w| w.zone.is_some())
        && items.iter().any(|i| matches!(i, Item::Agg(AggFunc::Integral(_), _, _)))
    {
        return Err(StatementError::Unsupported(
            "integral() with GROUP BY time and tz() is not supported yet (windows of a DST change)".into(),
        ));
    }
    if window.is_none() && transforms > 0 && !raw_transform {
        return Err(StatementError::Invalid("a transformation of an aggregate needs GROUP BY time(...)"));
    }
    if !has_agg && window.is_some() {
        return Err(StatementError::Invalid("GROUP BY requires at least one aggregate function"));
    }

    // WHERE: time range, then the field slots it needs.
    let (rest, bounds) = match &stmt.condition {
        Some(c) => split_time(c, params.now_ns)?,
        None => (None, Default::default()),
    };
    let mut slots: Vec<String> = Vec::new();
    fn slot_of(name: &str, slots: &mut Vec<String>) -> usize {
        match slots.iter().position(|s| s == name) {
            Some(i) => i,
            None => {
                slots.push(name.to_string());
                slots.len() - 1
            }
        }
    }
    let projection = if has_agg {
        let mut aggs = Vec::new();
        for item in &items {
            if let Item::Agg(func, field, transform) = item {
                let slot = field.as_deref().map(|f| slot_of(f, &mut slots));
                let field_type = field.as_ref().map(|f| schema.field_types[f]);
                aggs.push(AggColumn { func: *func, slot, field_type, transform: *transform });
            }
        }
        Projection::Aggregate(aggs)
    } else {
        let mut raw = Vec::new();
        for item in &items {
            if let Item::Raw(r) = item {
                raw.push(match r {
                    RawRef::Field(f) => ColumnSource::Field(slot_of(f, &mut slots)),
                    RawRef::Tag(t) => ColumnSource::Tag(t.clone()),
                    RawRef::Missing => ColumnSource::Missing,
                });
            }
        }
        Projection::Raw(raw)
    };
    let condition = match &rest {
        Some(expr) => {
            let mut refs = Vec::new();
            referenced_names(expr, &mut refs);
            for (name, kind) in &refs {
                if let RawRef::Field(f) = schema.raw_ref(name, *kind) {
                    slot_of(&f, &mut slots);
                }
            }
            let resolve = |name: &str, kind: Option<RefKind>| match schema.raw_ref(name, kind) {
                RawRef::Field(f) => {
                    Cond::Field(slots.iter().position(|s| *s == f).expect("slot assigned above"))
                }
                RawRef::Tag(t) => Cond::Tag(t),
                RawRef::Missing if kind == Some(RefKind::Field) => Cond::Lit(super::condition::Val::Null),
                RawRef::Missing => Cond::Tag(name.to_string()),
            };
            Some(compile(expr, params.now_ns, &resolve)?)
        }
        None => None,
    };

    if measurement_tags.is_empty() || items.is_empty() {
        return Ok(None);
    }
    let default_max_ns = if window.is_some() { params.now_ns } else { i64::MAX };
    let range = bounds.range(default_max_ns);
    let fill = if raw_transform { Fill::None } else { stmt.fill.clone() };
    if raw_transform {
        window = Some(Window { interval_ns: 1, offset_ns: 0, zone: None });
    }

    // Tag sets that can match (those the tag postings allow, then those the
    // condition does not rule out by tags), and their series per slot.
    let candidates = condition.as_ref().and_then(|c| candidate_tagsets(c, &measurement_tags));
    let possible: Box<dyn Iterator<Item = &TagSetSeries>> = match &candidates {
        Some(nos) => Box::new(nos.iter().map(|no| &measurement_tags.tagsets[*no as usize])),
        None => Box::new(measurement_tags.tagsets.iter()),
    };
    let mut tagsets = Vec::new();
    for set in possible {
        if let Some(c) = &condition {
            if c.decide(&TagsOnly { tags: &set.tags, fields_unknown: true }) == Some(false) {
                continue;
            }
        }
        let ids: Vec<Option<SeriesId>> = slots.iter().map(|f| set.fields.get(f.as_str()).copied()).collect();
        if ids.iter().any(Option::is_some) {
            tagsets.push(TagSet { tags: set.tags.clone(), ids });
        }
    }

    Ok(Some(SelectPlan {
        db,
        measurement,
        columns: column_names(&time_name, &names),
        projection,
        range,
        lower_bounded: bounds.min_ns.is_some(),
        window,
        slimit: stmt.slimit,
        soffset: stmt.soffset,
        group_keys: group_keys.into_iter().collect(),
        selector_tags,
        slots,
        condition,
        tagsets,
        fill,
        order_desc: stmt.order_desc,
        limit: stmt.limit,
        offset: stmt.offset,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(list: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        list.iter().map(|(n, a)| (n.to_string(), a.map(str::to_string))).collect()
    }

    #[test]
    fn column_names_resolve_conflicts_like_influxql() {
        assert_eq!(
            column_names("time", &items(&[("mean", None), ("mean", None), ("max", Some("mean_1"))])),
            vec!["time", "mean", "mean_2", "mean_1"]
        );
        assert_eq!(column_names("t", &items(&[("a", Some("x")), ("a", None)])), vec!["t", "x", "a"]);
        assert_eq!(column_names("time", &items(&[("time", None)])), vec!["time", "time_1"]);
    }

    #[test]
    fn windows_start_at_multiples_of_the_interval_plus_offset() {
        let w = Window { interval_ns: 10, offset_ns: 3, zone: None };
        assert_eq!(w.start(3), 3);
        assert_eq!(w.start(12), 3);
        assert_eq!(w.start(13), 13);
        assert_eq!(w.start(2), -7);
        assert_eq!(Window { interval_ns: 10, offset_ns: 0, zone: None }.start(-1), -10);
    }

    #[test]
    fn aggregate_functions_know_their_types() {
        assert!(AggFunc::Count.accepts(FieldType::String));
        assert!(!AggFunc::Mean.accepts(FieldType::Boolean));
        assert_eq!(AggFunc::Mean.output_type(FieldType::Integer), FieldType::Float);
        assert_eq!(AggFunc::Sum.output_type(FieldType::Unsigned), FieldType::Unsigned);
        assert!(AggFunc::Last.is_selector() && !AggFunc::Sum.is_selector());
    }
}
