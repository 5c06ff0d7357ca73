//! SELECT over several sources (`FROM cpu, mem`, `FROM /^c/`, InfluxDB
//! 1.8): each measurement named or matched (regexes against the database's
//! measurements) is read as its own statement and answers its own series,
//! measurements in name order, each once; SLIMIT and SOFFSET pick series
//! per measurement, as InfluxDB 1.6.7 does. `*` and `f(*)` expand to the
//! union of the measurements' fields (and tags), as InfluxDB's do; a `*`
//! inside a transformation (`derivative(mean(*))`) with several sources
//! is refused.

use std::collections::{BTreeMap, BTreeSet};

use strata_engine::Tables;
use strata_series::FieldType;

use super::error::StatementError;
use super::plan::AggFunc;
use super::select::run_select;
use super::target::resolve_db;
use crate::influxql::ast::{Dimension, Expr, Field, FromSource, MeasurementRef, RefKind, SelectStatement};
use crate::influxql::parser::compile_regex;
use crate::influxql::response::{Epoch, SeriesOut};
use crate::influxql::QueryParams;

/// Whether `e` is `*` or a call with a `*` argument.
fn wildcard(e: &Expr) -> bool {
    match e {
        Expr::Wildcard => true,
        Expr::Call { args, .. } => args.iter().any(|a| matches!(a, Expr::Wildcard) || wildcard(a)),
        _ => false,
    }
}

/// Runs `stmt`, one measurement or several.
pub fn run_select_sources(
    tables: &dyn Tables,
    stmt: &SelectStatement,
    params: &QueryParams,
    epoch: Epoch,
) -> Result<Vec<SeriesOut>, StatementError> {
    if stmt.from_sources.is_empty() {
        return run_select(tables, stmt, params, epoch);
    }
    if let [FromSource::Subquery(inner)] = stmt.from_sources.as_slice() {
        let mut outer = SelectStatement { from_sources: Vec::new(), ..stmt.clone() };
        return super::subquery::run_over_subquery(tables, inner, &mut outer, params, epoch);
    }
    // Every source by (name, database): sorted, without repeats.
    let mut measurements: BTreeMap<(String, String), MeasurementRef> = BTreeMap::new();
    for source in &stmt.from_sources {
        match source {
            FromSource::Measurement(m) => {
                let db = resolve_db(m.database.as_deref(), params)?;
                let key = (m.name.clone(), db.clone());
                measurements.insert(key, MeasurementRef { database: Some(db), ..m.clone() });
            }
            FromSource::Subquery(_) => {
                return Err(StatementError::Unsupported(
                    "a subquery beside other sources in FROM is not supported yet".into(),
                ))
            }
            FromSource::Regex(pattern) => {
                let db = resolve_db(None, params)?;
                let re = compile_regex(pattern)?;
                for (name, _) in tables.tables(&db)? {
                    if re.is_match(&name) {
                        let m = MeasurementRef { database: Some(db.clone()), retention_policy: None, name };
                        measurements.insert((m.name.clone(), db.clone()), m);
                    }
                }
            }
        }
    }
    let fields = if stmt.fields.iter().any(|f| wildcard(&f.expr)) {
        expand_wildcards(tables, stmt, measurements.values())?
    } else {
        stmt.fields.clone()
    };
    let mut out = Vec::new();
    for from in measurements.into_values() {
        let one = SelectStatement { from, from_sources: Vec::new(), fields: fields.clone(), ..stmt.clone() };
        out.extend(run_select(tables, &one, params, epoch)?);
    }
    Ok(out)
}

/// `*` and `f(*)` over several measurements, as InfluxDB expands them: to
/// the union of the measurements' fields (and, for `*`, tags not grouped
/// by), sorted, so every measurement answers the same columns (null where
/// it lacks one). `f(*)` takes the fields `f` accepts, named `f_field`.
fn expand_wildcards<'m>(
    tables: &dyn Tables,
    stmt: &SelectStatement,
    measurements: impl Iterator<Item = &'m MeasurementRef>,
) -> Result<Vec<Field>, StatementError> {
    let mut field_types: BTreeMap<String, FieldType> = BTreeMap::new();
    let mut tag_keys: BTreeSet<String> = BTreeSet::new();
    for m in measurements {
        let db = m.database.clone().unwrap_or_default();
        for series in tables.series_store().series(&db, &m.name).unwrap_or_default() {
            field_types.entry(series.field.clone()).or_insert(series.field_type);
            tag_keys.extend(series.tags.iter().map(|(k, _)| k.clone()));
        }
    }
    let grouped = |tag: &str| {
        stmt.dimensions.iter().any(|d| match d {
            Dimension::Tag(t) => t == tag,
            Dimension::AllTags => true,
            Dimension::Time { .. } => false,
        })
    };
    let var = |name: &str, kind: RefKind| Expr::VarRef { name: name.to_string(), kind: Some(kind) };
    let mut fields = Vec::new();
    for field in &stmt.fields {
        match &field.expr {
            Expr::Wildcard => {
                let mut all: BTreeMap<&String, Expr> = BTreeMap::new();
                for tag in tag_keys.iter().filter(|t| !grouped(t)) {
                    all.insert(tag, var(tag, RefKind::Tag));
                }
                for name in field_types.keys() {
                    all.insert(name, var(name, RefKind::Field));
                }
                fields.extend(all.into_values().map(|expr| Field { expr, alias: None }));
            }
            Expr::Call { name, args } if matches!(args.first(), Some(Expr::Wildcard)) => {
                let func = match super::top::parse_top_call(name, args)? {
                    Some(top) => top.func,
                    // A transformation of raw values takes every field, as over one measurement.
                    None if super::transform::Transform::parse_call(name, args)?.is_some() => AggFunc::Point,
                    None => AggFunc::parse_call(name, args)?.0,
                };
                let base = field.alias.clone().unwrap_or_else(|| name.clone());
                for f in field_types.iter().filter(|(_, t)| func.accepts(**t)).map(|(f, _)| f) {
                    let mut args = args.clone();
                    args[0] = var(f, RefKind::Field);
                    let expr = Expr::Call { name: name.clone(), args };
                    fields.push(Field { expr, alias: Some(format!("{base}_{f}")) });
                }
            }
            e if wildcard(e) => {
                return Err(StatementError::Unsupported(format!(
                    "{e} with several measurements in FROM is not supported yet (name the fields)"
                )))
            }
            _ => fields.push(field.clone()),
        }
    }
    Ok(fields)
}
