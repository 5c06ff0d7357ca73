//! SELECT on an event stream (a table the catalog says is of kind
//! [`strata_engine::TableKind::EventStream`]): the statement becomes one
//! [`EventSelect`] that the store answers from the stream's TAB+-tree, so
//! the series join (one value per timestamp) is never used and events with
//! equal timestamps stay separate rows.
//!
//! Supported: raw attributes and `*` (one row per event, in time order),
//! `count`, `sum`, `mean`, `min`, `max` of attributes (also `f(*)`),
//! `GROUP BY time(interval[, offset])` with every fill, a time range, and a
//! conjunction (AND) of `attribute op constant` comparisons, ORDER BY time,
//! LIMIT and OFFSET. Anything else is an error in the statement's result
//! (e.g. `stream 'stock': GROUP BY tags is not supported`), never a
//! different answer: tags (streams have none), OR, regexes, `first`/`last`,
//! unknown attributes.

use std::collections::BTreeMap;

use strata_engine::tables::streams::{
    EventAgg, EventCmp, EventFilter, EventQuery, EventRows, EventSelect, EventWindow, StreamAttr,
    StreamTables,
};
use strata_series::{FieldType, FieldValue};

use super::aggregate::fill_windows;
use super::condition::split_time;
use super::error::StatementError;
use super::plan::{column_names, AggColumn, AggFunc, ColumnSource, Projection, SelectPlan, Window};
use super::raw::raw_rows;
use super::row::Row;
use crate::influxql::ast::{BinaryOp, Dimension, Expr, RefKind, SelectStatement};
use crate::influxql::response::{cell_json, limit_rows, Epoch, SeriesOut};
use crate::influxql::QueryParams;

enum Item {
    Raw(String),
    Agg(AggFunc, String),
}

fn event_agg(func: AggFunc) -> Option<EventAgg> {
    Some(match func {
        AggFunc::Count => EventAgg::Count,
        AggFunc::Sum => EventAgg::Sum,
        AggFunc::Mean => EventAgg::Mean,
        AggFunc::Min => EventAgg::Min,
        AggFunc::Max => EventAgg::Max,
        AggFunc::First
        | AggFunc::Last
        | AggFunc::Median
        | AggFunc::Stddev
        | AggFunc::Spread
        | AggFunc::Percentile(_)
        | AggFunc::Point
        | AggFunc::Integral(_)
        | AggFunc::Top { .. } => return None,
    })
}

fn cmp_of(op: BinaryOp, flipped: bool) -> Option<EventCmp> {
    let op = match (op, flipped) {
        (BinaryOp::Lt, true) => BinaryOp::Gt,
        (BinaryOp::Lte, true) => BinaryOp::Gte,
        (BinaryOp::Gt, true) => BinaryOp::Lt,
        (BinaryOp::Gte, true) => BinaryOp::Lte,
        (op, _) => op,
    };
    Some(match op {
        BinaryOp::Eq => EventCmp::Eq,
        BinaryOp::Neq => EventCmp::Neq,
        BinaryOp::Lt => EventCmp::Lt,
        BinaryOp::Lte => EventCmp::Lte,
        BinaryOp::Gt => EventCmp::Gt,
        BinaryOp::Gte => EventCmp::Gte,
        _ => return None,
    })
}

fn literal(expr: &Expr) -> Option<FieldValue> {
    Some(match expr {
        Expr::Integer(v) => FieldValue::Integer(*v),
        Expr::Number(v) => FieldValue::Float(*v),
        Expr::Str(s) => FieldValue::String(s.clone()),
        Expr::Bool(b) => FieldValue::Boolean(*b),
        Expr::Paren(inner) => literal(inner)?,
        Expr::Neg(inner) => match literal(inner)? {
            FieldValue::Integer(v) => FieldValue::Integer(v.checked_neg()?),
            FieldValue::Float(v) => FieldValue::Float(-v),
            _ => return None,
        },
        _ => return None,
    })
}

/// The statement's stream context: its name and attribute types.
struct Ctx<'a> {
    name: &'a str,
    types: BTreeMap<&'a str, FieldType>,
}

impl Ctx<'_> {
    fn err(&self, what: impl std::fmt::Display) -> StatementError {
        StatementError::Unsupported(format!("stream '{}': {what}", self.name))
    }

    fn attribute(&self, name: &str, kind: Option<RefKind>) -> Result<FieldType, StatementError> {
        if kind == Some(RefKind::Tag) {
            return Err(self.err(format!("event streams have no tags ('{name}::tag')")));
        }
        self.types.get(name).copied().ok_or_else(|| {
            let names: Vec<&str> = self.types.keys().copied().collect();
            self.err(format!("no attribute '{name}' (its attributes: {})", names.join(", ")))
        })
    }

    /// Adds the comparisons of a conjunction to `out`.
    fn filters(&self, expr: &Expr, out: &mut Vec<EventFilter>) -> Result<(), StatementError> {
        match expr {
            Expr::Paren(inner) => self.filters(inner, out),
            Expr::Binary { op: BinaryOp::And, lhs, rhs } => {
                self.filters(lhs, out)?;
                self.filters(rhs, out)
            }
            Expr::Binary { op: BinaryOp::Or, .. } => {
                Err(self.err("OR in WHERE is not supported (only AND of attribute comparisons)"))
            }
            Expr::Binary { op, lhs, rhs } => {
                let (var, value, flipped) = match (&**lhs, &**rhs) {
                    (Expr::VarRef { name, kind }, other) => ((name, kind), other, false),
                    (other, Expr::VarRef { name, kind }) => ((name, kind), other, true),
                    _ => return Err(self.err(format!("unsupported condition {expr}"))),
                };
                self.attribute(var.0, *var.1)?;
                let cmp = cmp_of(*op, flipped)
                    .ok_or_else(|| self.err(format!("unsupported operator {} in WHERE", op.symbol())))?;
                let value = literal(value)
                    .ok_or_else(|| self.err(format!("compare attributes with constants, not {value}")))?;
                out.push(EventFilter { attr: var.0.clone(), op: cmp, value });
                Ok(())
            }
            other => Err(self.err(format!("unsupported condition {other}"))),
        }
    }
}

/// Runs a SELECT on stream `name` of `db` whose attributes are `attrs`.
pub fn run_stream_select(
    streams: &dyn StreamTables,
    db: &str,
    attrs: &[StreamAttr],
    stmt: &SelectStatement,
    params: &QueryParams,
    epoch: Epoch,
) -> Result<Vec<SeriesOut>, StatementError> {
    let ctx = Ctx {
        name: &stmt.from.name,
        types: attrs.iter().map(|a| (a.name.as_str(), a.ty.field_type())).collect(),
    };
    let mut window = None;
    for dimension in &stmt.dimensions {
        match dimension {
            Dimension::Time { interval_ns, offset_ns } => {
                window = Some(Window {
                    interval_ns: *interval_ns,
                    offset_ns: offset_ns.rem_euclid(*interval_ns),
                    zone: None,
                })
            }
            Dimension::Tag(_) | Dimension::AllTags => {
                return Err(ctx.err("GROUP BY tags is not supported (event streams have no tags)"))
            }
        }
    }

    if window.is_some() && stmt.tz.is_some() {
        return Err(ctx.err("GROUP BY time with tz() is not supported"));
    }
    let mut time_name = "time".to_string();
    let mut items: Vec<Item> = Vec::new();
    let mut names: Vec<(String, Option<String>)> = Vec::new();
    for field in &stmt.fields {
        match &field.expr {
            e if e.is_time_ref() => {
                if let Some(alias) = &field.alias {
                    time_name = alias.clone();
                }
            }
            Expr::VarRef { name, kind } => {
                ctx.attribute(name, *kind)?;
                items.push(Item::Raw(name.clone()));
                names.push((name.clone(), field.alias.clone()));
            }
            Expr::Wildcard => {
                for name in ctx.types.keys() {
                    items.push(Item::Raw(name.to_string()));
                    names.push((name.to_string(), None));
                }
            }
            Expr::Call { name, args } => {
                let (func, arg) = AggFunc::parse_call(name, args)?;
                if event_agg(func).is_none() {
                    return Err(
                        ctx.err(format!("{name}() is not supported (use count, sum, mean, min or max)"))
                    );
                }
                match arg {
                    arg @ Expr::VarRef { .. } if arg.is_time_ref() => {
                        return Err(StatementError::ExpectedField(name.to_string()))
                    }
                    Expr::VarRef { name: arg, kind } => {
                        let t = ctx.attribute(arg, *kind)?;
                        if !func.accepts(t) {
                            return Err(StatementError::TypeMismatch {
                                func: func.name(),
                                field: arg.clone(),
                                field_type: t.influx_name(),
                            });
                        }
                        items.push(Item::Agg(func, arg.clone()));
                        names.push((func.name().to_string(), field.alias.clone()));
                    }
                    Expr::Wildcard => {
                        let base = field.alias.clone().unwrap_or_else(|| func.name().to_string());
                        for (f, t) in &ctx.types {
                            if func.accepts(*t) {
                                items.push(Item::Agg(func, f.to_string()));
                                names.push((String::new(), Some(format!("{base}_{f}"))));
                            }
                        }
                    }
                    _ => return Err(StatementError::ExpectedField(name.to_string())),
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
    let has_agg = items.iter().any(|i| matches!(i, Item::Agg(..)));
    let has_raw = items.iter().any(|i| matches!(i, Item::Raw(_)));
    if has_raw && has_agg {
        return Err(StatementError::Invalid("mixing aggregate and non-aggregate queries is not supported"));
    }
    if !has_agg && window.is_some() {
        return Err(StatementError::Invalid("GROUP BY requires at least one aggregate function"));
    }

    let (rest, bounds) = match &stmt.condition {
        Some(c) => split_time(c, params.now_ns)?,
        None => (None, Default::default()),
    };
    let mut filters = Vec::new();
    if let Some(rest) = &rest {
        ctx.filters(rest, &mut filters)?;
    }
    let range = bounds.range(if window.is_some() { params.now_ns } else { i64::MAX });

    let (query, projection, slots) = if has_agg {
        let mut columns = Vec::new();
        let mut aggs = Vec::new();
        let mut slots = Vec::new();
        for item in &items {
            if let Item::Agg(func, attr) = item {
                columns.push((event_agg(*func).expect("checked above"), attr.clone()));
                let field_type = Some(ctx.types[attr.as_str()]);
                aggs.push(AggColumn { func: *func, slot: Some(aggs.len()), field_type, transform: None });
                slots.push(attr.clone());
            }
        }
        let window = window.map(|w| EventWindow { interval_ns: w.interval_ns, offset_ns: w.offset_ns });
        (EventQuery::Aggregate { columns, window }, Projection::Aggregate(aggs), slots)
    } else {
        let attrs: Vec<String> =
            items.iter().filter_map(|i| if let Item::Raw(a) = i { Some(a.clone()) } else { None }).collect();
        let columns = (0..attrs.len()).map(ColumnSource::Field).collect();
        // LIMIT (with OFFSET) goes to the store, which stops reading there:
        // the first events, or the last ones for ORDER BY time DESC (every
        // event of a stream is one row).
        let limit = stmt.limit.filter(|&n| n > 0).map(|n| n.saturating_add(stmt.offset.unwrap_or(0)));
        let query = EventQuery::Raw { attrs: attrs.clone(), limit, newest: stmt.order_desc };
        (query, Projection::Raw(columns), attrs)
    };
    let select = EventSelect { range, filters, query };
    let answer = streams.select_events(db, &stmt.from.name, &select).map_err(StatementError::Stream)?;

    let plan = SelectPlan {
        db: db.to_string(),
        measurement: stmt.from.name.clone(),
        columns: column_names(&time_name, &names),
        projection,
        range,
        lower_bounded: bounds.min_ns.is_some(),
        window,
        // One series: SOFFSET 1 or more leaves none.
        slimit: stmt.slimit,
        soffset: stmt.soffset,
        group_keys: Vec::new(),
        selector_tags: Vec::new(),
        slots,
        condition: None,
        tagsets: Vec::new(),
        fill: stmt.fill.clone(),
        order_desc: stmt.order_desc,
        limit: stmt.limit,
        offset: stmt.offset,
    };
    let width = match &plan.projection {
        Projection::Raw(columns) => columns.len(),
        Projection::Aggregate(columns) => columns.len(),
    };
    let widths_ok = match &answer {
        EventRows::Raw(rows) => rows.iter().all(|(_, v)| v.len() == width),
        EventRows::Aggregate(rows) => rows.iter().all(|r| r.values.len() == width),
    };
    if !widths_ok {
        return Err(ctx.err("the store answered rows of the wrong width"));
    }
    let values = match (&plan.projection, answer) {
        (Projection::Raw(columns), EventRows::Raw(events)) => {
            let rows: Vec<Row<'_>> = events
                .into_iter()
                .map(|(time_ns, values)| Row {
                    time_ns,
                    tags: &[],
                    values: values.into_iter().map(Some).collect(),
                })
                .collect();
            raw_rows(&plan, columns, &rows, epoch)
        }
        (Projection::Aggregate(columns), EventRows::Aggregate(rows)) => match plan.window {
            None => {
                let out = match rows.into_iter().next() {
                    None => Vec::new(),
                    Some(r) if r.values.iter().all(Option::is_none) => Vec::new(),
                    Some(r) => {
                        let single_selector = columns.len() == 1 && columns[0].func.is_selector();
                        let time_ns = match r.selected_ns {
                            Some(t) if single_selector => t,
                            _ if plan.lower_bounded => plan.range.min_ns,
                            _ => 0,
                        };
                        let mut cells = vec![epoch.time(time_ns)];
                        cells.extend(r.values.iter().map(|v| cell_json(v.as_ref())));
                        vec![cells]
                    }
                };
                limit_rows(out, plan.limit, plan.offset)
            }
            Some(w) => {
                let filled: BTreeMap<i128, Vec<Option<FieldValue>>> = rows
                    .into_iter()
                    .filter(|r| r.values.iter().any(Option::is_some))
                    .map(|r| (w.start(r.start_ns), r.values))
                    .collect();
                limit_rows(fill_windows(&plan, w, columns, &filled, epoch)?, plan.limit, plan.offset)
            }
        },
        _ => return Err(ctx.err("the store answered a different kind of query")),
    };
    if values.is_empty() {
        return Ok(Vec::new());
    }
    let series = vec![SeriesOut {
        name: Some(plan.measurement.clone()),
        tags: None,
        columns: plan.columns.clone(),
        values,
    }];
    Ok(super::select::limit_series(series, plan.slimit, plan.soffset))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;
    use strata_engine::tables::streams::{AggRow, StreamError, StreamInfo};
    use strata_engine::{TableKind, Tables};
    use strata_series::reference::MemStore;
    use strata_series::{EngineError, Point, SeriesStore, TimeRange, WriteOutcome};

    use super::*;
    use crate::influxql::execute;

    /// A catalog with one stream `s` (price f64, n i32, sym string) that
    /// records the query it is asked and answers with canned rows.
    struct Fake {
        series: MemStore,
        asked: Mutex<Vec<EventSelect>>,
        answer: Mutex<Option<EventRows>>,
    }

    impl Fake {
        fn new(answer: EventRows) -> Fake {
            let series = MemStore::new();
            series.create_database("db").unwrap();
            Fake { series, asked: Mutex::new(Vec::new()), answer: Mutex::new(Some(answer)) }
        }
    }

    impl Tables for Fake {
        fn series_store(&self) -> &dyn SeriesStore {
            &self.series
        }
        fn stream_tables(&self) -> Option<&dyn StreamTables> {
            Some(self)
        }
        fn kind_of(&self, db: &str, name: &str) -> Option<TableKind> {
            if self.stream_schema(db, name).is_some() {
                return Some(TableKind::EventStream);
            }
            Tables::kind_of(&self.series, db, name)
        }
        fn tables(&self, db: &str) -> Result<Vec<(String, TableKind)>, EngineError> {
            let mut out = Tables::tables(&self.series, db)?;
            out.push(("s".to_string(), TableKind::EventStream));
            out.sort();
            Ok(out)
        }
        fn write_request(&self, db: &str, points: &[Point]) -> Result<WriteOutcome, EngineError> {
            self.series.write(db, points)
        }
        fn drop_table(&self, db: &str, m: &str) -> Result<(), EngineError> {
            self.series.drop_measurement(db, m)
        }
    }

    impl StreamTables for Fake {
        fn create_stream(&self, _: &str, _: &str, _: &[StreamAttr]) -> Result<StreamInfo, StreamError> {
            Err(StreamError::Invalid("not in this fake".into()))
        }
        fn list_streams(&self, _: Option<&str>) -> Vec<StreamInfo> {
            Vec::new()
        }
        fn stream_schema(&self, db: &str, m: &str) -> Option<Vec<StreamAttr>> {
            use strata_engine::tables::streams::StreamAttrType as T;
            let a = |name: &str, ty| StreamAttr { name: name.into(), ty };
            (db == "db" && m == "s")
                .then(|| vec![a("price", T::F64), a("n", T::I32), a("sym", T::Str { len_bytes: 4 })])
        }
        fn drop_stream(&self, _: &str, _: &str) -> Result<(), StreamError> {
            Ok(())
        }
        fn select_events(&self, _: &str, _: &str, s: &EventSelect) -> Result<EventRows, StreamError> {
            self.asked.lock().unwrap().push(s.clone());
            Ok(self.answer.lock().unwrap().take().expect("one query per fake"))
        }
    }

    fn params() -> QueryParams {
        QueryParams { db: Some("db".into()), epoch: Some("ns".into()), now_ns: 1000, ..Default::default() }
    }

    fn run(store: &Fake, q: &str) -> serde_json::Value {
        execute(store, q, &params()).unwrap()["results"][0].clone()
    }

    #[test]
    fn raw_queries_become_one_event_select_and_keep_equal_timestamps() {
        let answer = EventRows::Raw(vec![
            (5, vec![FieldValue::Integer(1), FieldValue::Float(2.5), FieldValue::String("AB".into())]),
            (5, vec![FieldValue::Integer(2), FieldValue::Float(3.5), FieldValue::String("AB".into())]),
        ]);
        let store = Fake::new(answer);
        let out = run(&store, "SELECT * FROM s WHERE price > 2 AND 'AB' = sym AND time >= 3 AND time < 9");
        let asked = store.asked.lock().unwrap()[0].clone();
        assert_eq!(asked.range, TimeRange { min_ns: 3, max_ns: 8 });
        let attrs = vec!["n".into(), "price".into(), "sym".into()];
        assert_eq!(asked.query, EventQuery::Raw { attrs, limit: None, newest: false });
        assert_eq!(
            asked.filters,
            vec![
                EventFilter { attr: "price".into(), op: EventCmp::Gt, value: FieldValue::Integer(2) },
                EventFilter { attr: "sym".into(), op: EventCmp::Eq, value: FieldValue::String("AB".into()) },
            ]
        );
        assert_eq!(out["series"][0]["values"], json!([[5, 1, 2.5, "AB"], [5, 2, 3.5, "AB"]]), "{out}");
        assert_eq!(out["series"][0]["columns"], json!(["time", "n", "price", "sym"]));
    }

    #[test]
    fn limits_go_to_the_store_which_answers_the_newest_in_time_order_for_desc() {
        let ev = |t: i64| (t, vec![FieldValue::Integer(t)]);
        // The store's answer to "the newest 3": in time order.
        let store = Fake::new(EventRows::Raw(vec![ev(7), ev(8), ev(9)]));
        let out = run(&store, "SELECT n FROM s ORDER BY time DESC LIMIT 2 OFFSET 1");
        let asked = store.asked.lock().unwrap()[0].clone();
        assert_eq!(asked.query, EventQuery::Raw { attrs: vec!["n".into()], limit: Some(3), newest: true });
        assert_eq!(out["series"][0]["values"], json!([[8, 8], [7, 7]]), "{out}");
        let store = Fake::new(EventRows::Raw(vec![ev(1), ev(2)]));
        let out = run(&store, "SELECT n FROM s LIMIT 2");
        let asked = store.asked.lock().unwrap()[0].clone();
        assert_eq!(asked.query, EventQuery::Raw { attrs: vec!["n".into()], limit: Some(2), newest: false });
        assert_eq!(out["series"][0]["values"], json!([[1, 1], [2, 2]]), "{out}");
    }

    #[test]
    fn windows_are_filled_and_selectors_carry_their_time() {
        let row = |start_ns, v: f64| AggRow {
            start_ns,
            values: vec![Some(FieldValue::Integer(2)), Some(FieldValue::Float(v))],
            selected_ns: None,
        };
        let store = Fake::new(EventRows::Aggregate(vec![row(0, 1.0), row(20_000_000_000, 3.0)]));
        let out = run(
            &store,
            "SELECT count(price), max(price) FROM s WHERE time >= 0 AND time < 30s GROUP BY time(10s)",
        );
        let asked = store.asked.lock().unwrap()[0].clone();
        let window = Some(EventWindow { interval_ns: 10_000_000_000, offset_ns: 0 });
        assert_eq!(
            asked.query,
            EventQuery::Aggregate {
                columns: vec![(EventAgg::Count, "price".into()), (EventAgg::Max, "price".into())],
                window
            }
        );
        assert_eq!(
            out["series"][0]["values"],
            json!([[0, 2, 1.0], [10_000_000_000i64, 0, null], [20_000_000_000i64, 2, 3.0]]),
            "the empty window is filled (count 0, max null)"
        );

        let store = Fake::new(EventRows::Aggregate(vec![AggRow {
            start_ns: 0,
            values: vec![Some(FieldValue::Float(9.0))],
            selected_ns: Some(7),
        }]));
        let out = run(&store, "SELECT max(price) FROM s");
        assert_eq!(out["series"][0]["values"], json!([[7, 9.0]]), "a lone selector reports its event's time");
    }

    #[test]
    fn what_the_stream_path_cannot_answer_is_an_error() {
        for (q, message) in [
            ("SELECT price FROM s GROUP BY sym", "GROUP BY tags is not supported"),
            ("SELECT first(price) FROM s", "first() is not supported"),
            ("SELECT * FROM s WHERE price > 1 OR n < 2", "OR in WHERE is not supported"),
            ("SELECT * FROM s WHERE sym =~ /a/", "unsupported operator"),
            ("SELECT nope FROM s", "no attribute 'nope'"),
            ("SELECT sum(sym) FROM s", "unsupported sum()"),
            ("SELECT * FROM s WHERE price > n", "compare attributes with constants"),
        ] {
            let store = Fake::new(EventRows::Raw(Vec::new()));
            let out = run(&store, q);
            let error = out["error"].as_str().unwrap_or_else(|| panic!("{q}: {out}"));
            assert!(error.contains(message), "{q}: {error}");
            assert!(store.asked.lock().unwrap().is_empty(), "{q}: nothing was read");
        }
    }
}
