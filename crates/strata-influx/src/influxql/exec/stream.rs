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

use std::ops::ControlFlow;

use strata_engine::tables::streams::{
    EventAgg, EventCmp, EventFilter, EventQuery, EventRow, EventRows, EventSelect, EventWindow, StreamAttr,
    StreamTables,
};
use strata_series::{FieldType, FieldValue};

use super::aggregate::fill_windows;
use super::condition::split_time;
use super::error::StatementError;
use super::plan::{column_names, AggColumn, AggFunc, ColumnSource, Projection, SelectPlan, Window};
use super::raw::raw_rows;
use super::raw_scan::{ScanError, StreamedSeries};
use super::row::Row;
use super::select::{check_memory, Selected};
use crate::influxql::ast::{BinaryOp, Dimension, Expr, RefKind, SelectStatement};
use crate::influxql::response::{cell_json, limit_rows, Epoch, SeriesOut};
use crate::influxql::sink::{ResultSink, SeriesHead};
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
/// With `stream` (statement id and sink), a raw SELECT in ascending time
/// hands its rows to the sink as the store scans them
/// ([`StreamTables::scan_events`]: one chunk held at a time, the stream's
/// lock not held while the sink writes); anything else is answered whole.
pub fn select_stream(
    streams: &dyn StreamTables,
    db: &str,
    attrs: &[StreamAttr],
    stmt: &SelectStatement,
    params: &QueryParams,
    epoch: Epoch,
    stream: Option<(usize, &mut dyn ResultSink)>,
) -> Result<Selected, ScanError> {
    let ctx = Ctx {
        name: &stmt.from.name,
        types: attrs.iter().map(|a| (a.name.as_str(), a.ty.field_type())).collect(),
    };
    let (select, plan) = plan_stream_select(&ctx, db, stmt, params)?;
    if let (Some((statement_id, sink)), Projection::Raw(columns)) = (stream, &plan.projection) {
        if !plan.order_desc && plan.soffset.unwrap_or(0) == 0 {
            let scan = StreamScan { streams, ctx: &ctx, select: &select, plan: &plan, columns, epoch };
            scan.run(statement_id, sink, params.max_memory_bytes)?;
            return Ok(Selected::Streamed);
        }
    }
    let answer = streams.select_events(db, &stmt.from.name, &select).map_err(StatementError::Stream)?;
    Ok(Selected::Series(shape(&ctx, &plan, answer, epoch, params.max_memory_bytes)?))
}

/// The store's query for `stmt` and the plan that shapes its answer.
fn plan_stream_select(
    ctx: &Ctx<'_>,
    db: &str,
    stmt: &SelectStatement,
    params: &QueryParams,
) -> Result<(EventSelect, SelectPlan), StatementError> {
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
    Ok((select, plan))
}

/// The rows of raw events, after checking the store answered `width` values each.
fn event_rows(
    ctx: &Ctx<'_>,
    events: Vec<EventRow>,
    width: usize,
) -> Result<Vec<Row<'static>>, StatementError> {
    if events.iter().any(|(_, v)| v.len() != width) {
        return Err(ctx.err("the store answered rows of the wrong width"));
    }
    let row = |(time_ns, values): EventRow| Row {
        time_ns,
        tags: &[],
        values: values.into_iter().map(Some).collect(),
    };
    Ok(events.into_iter().map(row).collect())
}

/// The output series of a whole answer.
fn shape(
    ctx: &Ctx<'_>,
    plan: &SelectPlan,
    answer: EventRows,
    epoch: Epoch,
    max_memory_bytes: u64,
) -> Result<Vec<SeriesOut>, StatementError> {
    let values = match (&plan.projection, answer) {
        (Projection::Raw(columns), EventRows::Raw(events)) => {
            check_memory((events.len() * columns.len()) as u64, max_memory_bytes)?;
            raw_rows(plan, columns, &event_rows(ctx, events, columns.len())?, epoch)
        }
        (Projection::Aggregate(columns), EventRows::Aggregate(rows)) => match plan.window {
            _ if rows.iter().any(|r| r.values.len() != columns.len()) => {
                return Err(ctx.err("the store answered rows of the wrong width"))
            }
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
                limit_rows(fill_windows(plan, w, columns, &filled, epoch)?, plan.limit, plan.offset)
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

/// A raw SELECT of a stream streamed to a sink: the store's chunks, each
/// shaped and sent before the next is read. The per-query memory bound
/// counts every value read, as [`super::raw_scan`] counts points.
struct StreamScan<'a> {
    streams: &'a dyn StreamTables,
    ctx: &'a Ctx<'a>,
    select: &'a EventSelect,
    plan: &'a SelectPlan,
    columns: &'a [ColumnSource],
    epoch: Epoch,
}

impl StreamScan<'_> {
    fn run(
        &self,
        statement_id: usize,
        sink: &mut dyn ResultSink,
        max_memory_bytes: u64,
    ) -> Result<(), ScanError> {
        let plan = self.plan;
        let head =
            SeriesHead { name: Some(plan.measurement.clone()), tags: None, columns: plan.columns.clone() };
        let mut out = StreamedSeries::new(statement_id, &head, plan);
        let mut values_read = 0u64;
        let mut stopped: Option<ScanError> = None;
        let mut each = |events: Vec<EventRow>| {
            values_read += (events.len() * self.columns.len()) as u64;
            let sent = check_memory(values_read, max_memory_bytes)
                .and_then(|()| event_rows(self.ctx, events, self.columns.len()))
                .map_err(ScanError::from)
                .and_then(|rows| Ok(out.send(sink, rows, self.columns, self.epoch)?));
            match sent {
                Ok(()) if out.done() => ControlFlow::Break(()),
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    stopped = Some(e);
                    ControlFlow::Break(())
                }
            }
        };
        self.streams
            .scan_events(&plan.db, &plan.measurement, self.select, &mut each)
            .map_err(StatementError::Stream)?;
        if let Some(e) = stopped {
            return Err(e);
        }
        out.end(sink)
    }
}
