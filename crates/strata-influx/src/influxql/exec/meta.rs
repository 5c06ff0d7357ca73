//! Statements about the schema and data management: SHOW DATABASES,
//! MEASUREMENTS, TAG KEYS, TAG VALUES, FIELD KEYS, SERIES; DROP
//! MEASUREMENT; DELETE (retention policies and CREATE DATABASE:
//! [`super::retention`]). Their WHERE
//! clauses see tags only (a missing tag reads as `""`).

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;
use serde_json::Value;
use strata_engine::{TableKind, Tables};
use strata_series::{FieldType, SeriesId};

use super::condition::{compile, mentions_time, referenced_names, split_time, Cond, TagsOnly, Val};
use super::error::StatementError;
use super::target::resolve_db;
use crate::influxql::ast::{
    DeleteStatement, Expr, MeasurementRef, NameMatch, RefKind, ShowFieldKeys, ShowMeasurements, ShowSeries,
    ShowTagKeys, ShowTagValues,
};
use crate::influxql::parser::compile_regex;
use crate::influxql::response::{limit_rows, SeriesOut};
use crate::influxql::QueryParams;
use crate::line_protocol::escapes::{escape_name, NameKind};

/// A compiled `WITH KEY` / `WITH MEASUREMENT` clause.
struct NameFilter {
    spec: NameMatch,
    regex: Option<Regex>,
}

impl NameFilter {
    fn new(spec: &NameMatch) -> Result<NameFilter, StatementError> {
        let regex = match spec {
            NameMatch::Regex(p) | NameMatch::NotRegex(p) => Some(compile_regex(p)?),
            _ => None,
        };
        Ok(NameFilter { spec: spec.clone(), regex })
    }

    fn matches(&self, name: &str) -> bool {
        match (&self.spec, &self.regex) {
            (NameMatch::Eq(n), _) => n == name,
            (NameMatch::Neq(n), _) => n != name,
            (NameMatch::In(names), _) => names.iter().any(|n| n == name),
            (NameMatch::Regex(_), Some(re)) => re.is_match(name),
            (NameMatch::NotRegex(_), Some(re)) => !re.is_match(name),
            _ => false,
        }
    }
}

/// Compiles a tags-only condition; `what` names the statement in errors.
fn tag_condition(condition: &Option<Expr>, what: &str, now_ns: i64) -> Result<Option<Cond>, StatementError> {
    let Some(expr) = condition else {
        return Ok(None);
    };
    if mentions_time(expr) {
        return Err(StatementError::Unsupported(format!("{what} doesn't support time in WHERE clause")));
    }
    let resolve = |name: &str, kind: Option<RefKind>| match kind {
        Some(RefKind::Field) => Cond::Lit(Val::Null),
        _ => Cond::Tag(name.to_string()),
    };
    compile(expr, now_ns, &resolve).map(Some)
}

fn passes(condition: &Option<Cond>, tags: &[(String, String)]) -> bool {
    condition.as_ref().is_none_or(|c| c.decide(&TagsOnly { tags, fields_unknown: false }) == Some(true))
}

/// The database of a SHOW: `FROM db.rp.m`, then `ON db`, then `db=`.
fn show_db(
    from: &Option<MeasurementRef>,
    on: &Option<String>,
    params: &QueryParams,
) -> Result<String, StatementError> {
    let explicit = from.as_ref().and_then(|m| m.database.as_deref()).or(on.as_deref());
    resolve_db(explicit, params)
}

/// One (tag set, field) of a table as the SHOWs list it: a series of a
/// series measurement (with its id), or an attribute of an event stream
/// (no tags, no id: a stream's attributes are not series).
pub(super) struct Listed {
    id: Option<SeriesId>,
    tags: Vec<(String, String)>,
    field: String,
    field_type: FieldType,
}

/// What one table lists, by its kind.
fn listed(tables: &dyn Tables, db: &str, name: &str) -> Result<Vec<Listed>, StatementError> {
    if tables.kind_of(db, name) == Some(TableKind::EventStream) {
        let attrs = tables.stream_tables().and_then(|s| s.stream_schema(db, name)).unwrap_or_default();
        let mut out: Vec<Listed> = attrs
            .into_iter()
            .map(|a| Listed { id: None, tags: Vec::new(), field: a.name, field_type: a.ty.field_type() })
            .collect();
        out.sort_by(|a, b| a.field.cmp(&b.field));
        return Ok(out);
    }
    let series = tables.series_store().series(db, name)?;
    Ok(series
        .into_iter()
        .map(|s| Listed { id: Some(s.id), tags: s.tags, field: s.field, field_type: s.field_type })
        .collect())
}

/// The tables a SHOW looks at, with what each lists.
fn measurement_series(
    tables: &dyn Tables,
    db: &str,
    from: &Option<MeasurementRef>,
) -> Result<Vec<(String, Vec<Listed>)>, StatementError> {
    let names = match from {
        Some(m) => vec![m.name.clone()],
        None => tables.tables(db)?.into_iter().map(|(name, _)| name).collect(),
    };
    let mut out = Vec::new();
    for name in names {
        let listed = listed(tables, db, &name)?;
        if !listed.is_empty() {
            out.push((name, listed));
        }
    }
    Ok(out)
}

/// The series a SHOW's `ON`, `FROM` and tags-only `WHERE` select, by
/// measurement; `statement` names the SHOW in errors.
pub(super) fn selected_series(
    tables: &dyn Tables,
    on: &Option<String>,
    from: &Option<MeasurementRef>,
    condition: &Option<Expr>,
    statement: &str,
    params: &QueryParams,
) -> Result<Vec<(String, Vec<Listed>)>, StatementError> {
    let db = show_db(from, on, params)?;
    let condition = tag_condition(condition, statement, params.now_ns)?;
    let mut out = measurement_series(tables, &db, from)?;
    for (_, series) in &mut out {
        series.retain(|s| passes(&condition, &s.tags));
    }
    Ok(out)
}

/// The distinct tag sets of `series`.
pub(super) fn tagsets(series: &[Listed]) -> BTreeSet<&Vec<(String, String)>> {
    series.iter().map(|s| &s.tags).collect()
}

fn string_row(value: String) -> Vec<Value> {
    vec![Value::String(value)]
}

/// A result series of `rows` after LIMIT and OFFSET, each made a row by
/// `to_row`; none when no row is left.
fn limited_series<T>(
    name: Option<&str>,
    columns: &[&str],
    rows: Vec<T>,
    limit: Option<u64>,
    offset: Option<u64>,
    to_row: impl Fn(T) -> Vec<Value>,
) -> Option<SeriesOut> {
    let rows = limit_rows(rows, limit, offset);
    (!rows.is_empty()).then(|| SeriesOut::new(name, columns, rows.into_iter().map(to_row).collect()))
}

pub fn show_databases(tables: &dyn Tables) -> Vec<SeriesOut> {
    let rows = tables.list_databases().into_iter().map(string_row).collect();
    vec![SeriesOut::new(Some("databases"), &["name"], rows)]
}

pub fn show_measurements(
    tables: &dyn Tables,
    s: &ShowMeasurements,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, StatementError> {
    let db = resolve_db(s.on.as_deref(), params)?;
    let filter = s.with_measurement.as_ref().map(NameFilter::new).transpose()?;
    let condition = tag_condition(&s.condition, "SHOW MEASUREMENTS", params.now_ns)?;
    let mut names = Vec::new();
    for (name, _) in tables.tables(&db)? {
        if filter.as_ref().is_some_and(|f| !f.matches(&name)) {
            continue;
        }
        if condition.is_some() {
            let series = listed(tables, &db, &name)?;
            if !series.iter().any(|s| passes(&condition, &s.tags)) {
                continue;
            }
        }
        names.push(name);
    }
    let out = limited_series(Some("measurements"), &["name"], names, s.limit, s.offset, string_row);
    Ok(out.into_iter().collect())
}

pub fn show_tag_keys(
    tables: &dyn Tables,
    s: &ShowTagKeys,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, StatementError> {
    let mut out = Vec::new();
    for (name, series) in selected_series(tables, &s.on, &s.from, &s.condition, "SHOW TAG KEYS", params)? {
        let keys: BTreeSet<String> =
            tagsets(&series).into_iter().flat_map(|tags| tags.iter().map(|(k, _)| k.clone())).collect();
        let keys = keys.into_iter().collect();
        out.extend(limited_series(Some(&name), &["tagKey"], keys, s.limit, s.offset, string_row));
    }
    Ok(out)
}

pub fn show_tag_values(
    tables: &dyn Tables,
    s: &ShowTagValues,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, StatementError> {
    let selected = selected_series(tables, &s.on, &s.from, &s.condition, "SHOW TAG VALUES", params)?;
    let filter = NameFilter::new(&s.key)?;
    let mut out = Vec::new();
    for (name, series) in selected {
        let pairs: BTreeSet<(String, String)> = tagsets(&series)
            .into_iter()
            .flat_map(|tags| tags.iter().filter(|(k, _)| filter.matches(k)).cloned())
            .collect();
        let pairs = pairs.into_iter().collect();
        let to_row = |(k, v)| vec![Value::String(k), Value::String(v)];
        out.extend(limited_series(Some(&name), &["key", "value"], pairs, s.limit, s.offset, to_row));
    }
    Ok(out)
}

pub fn show_field_keys(
    tables: &dyn Tables,
    s: &ShowFieldKeys,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, StatementError> {
    let mut out = Vec::new();
    for (name, series) in selected_series(tables, &s.on, &s.from, &None, "SHOW FIELD KEYS", params)? {
        let fields: BTreeMap<String, FieldType> =
            series.iter().map(|s| (s.field.clone(), s.field_type)).collect();
        let fields = fields.into_iter().collect();
        let to_row =
            |(f, t): (String, FieldType)| vec![Value::String(f), Value::String(t.influx_name().to_string())];
        let columns = ["fieldKey", "fieldType"];
        out.extend(limited_series(Some(&name), &columns, fields, s.limit, s.offset, to_row));
    }
    Ok(out)
}

/// `cpu,host=a,region=eu`, escaped as line protocol escapes names.
pub fn series_key(measurement: &str, tags: &[(String, String)]) -> String {
    let mut key = String::with_capacity(measurement.len());
    escape_name(measurement, NameKind::Measurement, &mut key);
    for (k, v) in tags {
        key.push(',');
        escape_name(k, NameKind::Key, &mut key);
        key.push('=');
        escape_name(v, NameKind::Key, &mut key);
    }
    key
}

pub fn show_series(
    tables: &dyn Tables,
    s: &ShowSeries,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, StatementError> {
    let mut keys = BTreeSet::new();
    for (name, series) in selected_series(tables, &s.on, &s.from, &s.condition, "SHOW SERIES", params)? {
        keys.extend(tagsets(&series).into_iter().map(|tags| series_key(&name, tags)));
    }
    let out = limited_series(None, &["key"], keys.into_iter().collect(), s.limit, s.offset, string_row);
    Ok(out.into_iter().collect())
}

pub fn drop_measurement(
    tables: &dyn Tables,
    name: &str,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, StatementError> {
    let db = resolve_db(None, params)?;
    tables.drop_table(&db, name)?;
    Ok(Vec::new())
}

/// `DELETE [FROM m] [WHERE tag predicates AND time range]`: removes the
/// points in range of every matching series (the series stay in the index).
pub fn delete(
    tables: &dyn Tables,
    d: &DeleteStatement,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, StatementError> {
    let (db, ids, range) = matching_series(tables, d, params, "DELETE")?;
    if !ids.is_empty() && !range.is_empty() {
        tables.series_store().delete(&db, &ids, range)?;
    }
    Ok(Vec::new())
}

/// `DROP SERIES [FROM m] [WHERE tag predicates]`: removes every matching
/// series from the index with its data. As in InfluxDB 1.8, the WHERE
/// clause may not name time.
pub fn drop_series(
    tables: &dyn Tables,
    d: &DeleteStatement,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, StatementError> {
    if d.condition.as_ref().is_some_and(mentions_time) {
        return Err(StatementError::Unsupported("DROP SERIES doesn't support time in WHERE clause".into()));
    }
    let (db, ids, _) = matching_series(tables, d, params, "DROP SERIES")?;
    if !ids.is_empty() {
        tables.series_store().drop_series(&db, &ids)?;
    }
    Ok(Vec::new())
}

/// `DROP DATABASE name`: a name that does not exist is no error.
pub fn drop_database(tables: &dyn Tables, name: &str) -> Result<Vec<SeriesOut>, StatementError> {
    tables.remove_database(name)?;
    Ok(Vec::new())
}

/// The database, the series ids matching `[FROM m] [WHERE tags]` and the
/// time range of the WHERE clause (all time without one), for `statement`
/// (DELETE or DROP SERIES: event streams support neither).
fn matching_series(
    tables: &dyn Tables,
    d: &DeleteStatement,
    params: &QueryParams,
    statement: &str,
) -> Result<(String, Vec<SeriesId>, strata_series::TimeRange), StatementError> {
    let db = resolve_db(d.from.as_ref().and_then(|m| m.database.as_deref()), params)?;
    let (rest, bounds) = match &d.condition {
        Some(c) => split_time(c, params.now_ns)?,
        None => (None, Default::default()),
    };
    let range = bounds.range(i64::MAX);
    let mut refs = Vec::new();
    if let Some(expr) = &rest {
        referenced_names(expr, &mut refs);
    }
    let condition = match &rest {
        Some(expr) => {
            let resolve = |name: &str, _: Option<RefKind>| Cond::Tag(name.to_string());
            Some(compile(expr, params.now_ns, &resolve)?)
        }
        None => None,
    };
    if let Some(m) = &d.from {
        if tables.kind_of(&db, &m.name) == Some(TableKind::EventStream) {
            return Err(StatementError::Unsupported(format!(
                "event streams do not support {statement}: drop the whole stream (DROP MEASUREMENT)"
            )));
        }
    }
    let mut ids = Vec::new();
    for (name, series) in measurement_series(tables, &db, &d.from)? {
        if tables.kind_of(&db, &name) == Some(TableKind::EventStream) {
            continue;
        }
        let tag_keys: BTreeSet<&str> =
            series.iter().flat_map(|s| s.tags.iter().map(|(k, _)| k.as_str())).collect();
        let field_keys: BTreeSet<&str> = series.iter().map(|s| s.field.as_str()).collect();
        let uses_field = refs.iter().any(|(name, kind)| {
            *kind == Some(RefKind::Field)
                || (field_keys.contains(name.as_str()) && !tag_keys.contains(name.as_str()))
        });
        if uses_field {
            return Err(StatementError::Unsupported(
                "fields not supported in WHERE clause during deletion".into(),
            ));
        }
        ids.extend(series.iter().filter(|s| passes(&condition, &s.tags)).filter_map(|s| s.id));
    }
    Ok((db, ids, range))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_keys_escape_like_line_protocol() {
        let tags = vec![("host name".to_string(), "a,b=c".to_string())];
        assert_eq!(series_key("cpu load", &tags), "cpu\\ load,host\\ name=a\\,b\\=c");
        assert_eq!(series_key("cpu", &[]), "cpu");
    }

    #[test]
    fn name_filters_match_each_form() {
        let f = |spec: NameMatch, name: &str| NameFilter::new(&spec).unwrap().matches(name);
        assert!(f(NameMatch::Eq("host".into()), "host"));
        assert!(!f(NameMatch::Neq("host".into()), "host"));
        assert!(f(NameMatch::Regex("^ho".into()), "host"));
        assert!(f(NameMatch::NotRegex("^re".into()), "host"));
        assert!(f(NameMatch::In(vec!["a".into(), "host".into()]), "host"));
    }
}
