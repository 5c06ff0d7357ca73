//! Statements about the schema and data management: SHOW DATABASES,
//! MEASUREMENTS, TAG KEYS, TAG VALUES, FIELD KEYS, SERIES, RETENTION
//! POLICIES; CREATE DATABASE; DROP MEASUREMENT; DELETE. Their WHERE
//! clauses see tags only (a missing tag reads as `""`).

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;
use serde_json::Value;
use strata_series::{FieldType, SeriesInfo, SeriesStore};

use super::condition::{compile, mentions_time, referenced_names, split_time, Cond, TagsOnly, Val};
use super::resolve_db;
use crate::influxql::ast::{
    DeleteStatement, Expr, MeasurementRef, NameMatch, RefKind, ShowFieldKeys, ShowMeasurements, ShowSeries,
    ShowTagKeys, ShowTagValues,
};
use crate::influxql::parser::compile_regex;
use crate::influxql::response::{limit_rows, SeriesOut};
use crate::influxql::QueryParams;

fn engine(e: strata_series::EngineError) -> String {
    e.to_string()
}

/// A compiled `WITH KEY` / `WITH MEASUREMENT` clause.
struct NameFilter {
    spec: NameMatch,
    regex: Option<Regex>,
}

impl NameFilter {
    fn new(spec: &NameMatch) -> Result<NameFilter, String> {
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
fn tag_condition(condition: &Option<Expr>, what: &str, now_ns: i64) -> Result<Option<Cond>, String> {
    let Some(expr) = condition else {
        return Ok(None);
    };
    if mentions_time(expr) {
        return Err(format!("{what} doesn't support time in WHERE clause"));
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
) -> Result<String, String> {
    let explicit = from.as_ref().and_then(|m| m.database.as_deref()).or(on.as_deref());
    resolve_db(explicit, params)
}

/// The measurements a SHOW looks at, with their series.
fn measurement_series(
    store: &dyn SeriesStore,
    db: &str,
    from: &Option<MeasurementRef>,
) -> Result<Vec<(String, Vec<SeriesInfo>)>, String> {
    let names = match from {
        Some(m) => vec![m.name.clone()],
        None => store.measurements(db).map_err(engine)?,
    };
    let mut out = Vec::new();
    for name in names {
        let series = store.series(db, &name).map_err(engine)?;
        if !series.is_empty() {
            out.push((name, series));
        }
    }
    Ok(out)
}

fn tagsets(series: &[SeriesInfo]) -> BTreeSet<&Vec<(String, String)>> {
    series.iter().map(|s| &s.tags).collect()
}

fn strings(values: impl IntoIterator<Item = String>) -> Vec<Vec<Value>> {
    values.into_iter().map(|v| vec![Value::String(v)]).collect()
}

pub fn show_databases(store: &dyn SeriesStore) -> Vec<SeriesOut> {
    vec![SeriesOut::new(Some("databases"), &["name"], strings(store.databases()))]
}

pub fn show_measurements(
    store: &dyn SeriesStore,
    s: &ShowMeasurements,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, String> {
    let db = resolve_db(s.on.as_deref(), params)?;
    let filter = s.with_measurement.as_ref().map(NameFilter::new).transpose()?;
    let condition = tag_condition(&s.condition, "SHOW MEASUREMENTS", params.now_ns)?;
    let mut names = Vec::new();
    for name in store.measurements(&db).map_err(engine)? {
        if filter.as_ref().is_some_and(|f| !f.matches(&name)) {
            continue;
        }
        if condition.is_some() {
            let series = store.series(&db, &name).map_err(engine)?;
            if !tagsets(&series).into_iter().any(|tags| passes(&condition, tags)) {
                continue;
            }
        }
        names.push(name);
    }
    let names = limit_rows(names, s.limit, s.offset);
    if names.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![SeriesOut::new(Some("measurements"), &["name"], strings(names))])
}

pub fn show_tag_keys(
    store: &dyn SeriesStore,
    s: &ShowTagKeys,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, String> {
    let db = show_db(&s.from, &s.on, params)?;
    let condition = tag_condition(&s.condition, "SHOW TAG KEYS", params.now_ns)?;
    let mut out = Vec::new();
    for (name, series) in measurement_series(store, &db, &s.from)? {
        let keys: BTreeSet<String> = tagsets(&series)
            .into_iter()
            .filter(|tags| passes(&condition, tags))
            .flat_map(|tags| tags.iter().map(|(k, _)| k.clone()))
            .collect();
        let keys = limit_rows(keys.into_iter().collect(), s.limit, s.offset);
        if !keys.is_empty() {
            out.push(SeriesOut::new(Some(&name), &["tagKey"], strings(keys)));
        }
    }
    Ok(out)
}

pub fn show_tag_values(
    store: &dyn SeriesStore,
    s: &ShowTagValues,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, String> {
    let db = show_db(&s.from, &s.on, params)?;
    let filter = NameFilter::new(&s.key)?;
    let condition = tag_condition(&s.condition, "SHOW TAG VALUES", params.now_ns)?;
    let mut out = Vec::new();
    for (name, series) in measurement_series(store, &db, &s.from)? {
        let pairs: BTreeSet<(String, String)> = tagsets(&series)
            .into_iter()
            .filter(|tags| passes(&condition, tags))
            .flat_map(|tags| tags.iter().filter(|(k, _)| filter.matches(k)).cloned())
            .collect();
        let pairs = limit_rows(pairs.into_iter().collect(), s.limit, s.offset);
        if !pairs.is_empty() {
            let values = pairs.into_iter().map(|(k, v)| vec![Value::String(k), Value::String(v)]).collect();
            out.push(SeriesOut::new(Some(&name), &["key", "value"], values));
        }
    }
    Ok(out)
}

pub fn show_field_keys(
    store: &dyn SeriesStore,
    s: &ShowFieldKeys,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, String> {
    let db = show_db(&s.from, &s.on, params)?;
    let mut out = Vec::new();
    for (name, series) in measurement_series(store, &db, &s.from)? {
        let fields: BTreeMap<String, FieldType> =
            series.iter().map(|s| (s.field.clone(), s.field_type)).collect();
        let fields = limit_rows(fields.into_iter().collect(), s.limit, s.offset);
        if !fields.is_empty() {
            let values = fields
                .into_iter()
                .map(|(f, t)| vec![Value::String(f), Value::String(t.influx_name().to_string())])
                .collect();
            out.push(SeriesOut::new(Some(&name), &["fieldKey", "fieldType"], values));
        }
    }
    Ok(out)
}

/// Line-protocol escaping for series keys: `,` and space in measurement
/// names; `,`, `=` and space in tag keys and values.
fn escape(text: &str, specials: &[char]) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if specials.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `cpu,host=a,region=eu`.
pub fn series_key(measurement: &str, tags: &[(String, String)]) -> String {
    let mut key = escape(measurement, &[',', ' ']);
    for (k, v) in tags {
        key.push(',');
        key.push_str(&escape(k, &[',', '=', ' ']));
        key.push('=');
        key.push_str(&escape(v, &[',', '=', ' ']));
    }
    key
}

pub fn show_series(
    store: &dyn SeriesStore,
    s: &ShowSeries,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, String> {
    let db = show_db(&s.from, &s.on, params)?;
    let condition = tag_condition(&s.condition, "SHOW SERIES", params.now_ns)?;
    let mut keys = BTreeSet::new();
    for (name, series) in measurement_series(store, &db, &s.from)? {
        for tags in tagsets(&series) {
            if passes(&condition, tags) {
                keys.insert(series_key(&name, tags));
            }
        }
    }
    let keys = limit_rows(keys.into_iter().collect(), s.limit, s.offset);
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![SeriesOut::new(None, &["key"], strings(keys))])
}

/// Strata has one implicit retention policy per database: `autogen`,
/// infinite, the default.
pub fn show_retention_policies(
    store: &dyn SeriesStore,
    on: &Option<String>,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, String> {
    let db = resolve_db(on.as_deref(), params)?;
    if !store.databases().contains(&db) {
        return Err(format!("database not found: {db}"));
    }
    let row = vec![
        Value::from("autogen"),
        Value::from("0s"),
        Value::from("168h0m0s"),
        Value::from(1),
        Value::Bool(true),
    ];
    Ok(vec![SeriesOut::new(
        None,
        &["name", "duration", "shardGroupDuration", "replicaN", "default"],
        vec![row],
    )])
}

pub fn drop_measurement(
    store: &dyn SeriesStore,
    name: &str,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, String> {
    let db = resolve_db(None, params)?;
    store.drop_measurement(&db, name).map_err(engine)?;
    Ok(Vec::new())
}

/// `DELETE [FROM m] [WHERE tag predicates AND time range]`: removes the
/// points in range of every matching series (the series stay in the index).
pub fn delete(
    store: &dyn SeriesStore,
    d: &DeleteStatement,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, String> {
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
    let mut ids = Vec::new();
    for (_, series) in measurement_series(store, &db, &d.from)? {
        let tag_keys: BTreeSet<&str> =
            series.iter().flat_map(|s| s.tags.iter().map(|(k, _)| k.as_str())).collect();
        let field_keys: BTreeSet<&str> = series.iter().map(|s| s.field.as_str()).collect();
        let uses_field = refs.iter().any(|(name, kind)| {
            *kind == Some(RefKind::Field)
                || (field_keys.contains(name.as_str()) && !tag_keys.contains(name.as_str()))
        });
        if uses_field {
            return Err("fields not supported in WHERE clause during deletion".to_string());
        }
        ids.extend(series.iter().filter(|s| passes(&condition, &s.tags)).map(|s| s.id));
    }
    if !ids.is_empty() && !range.is_empty() {
        store.delete(&db, &ids, range).map_err(engine)?;
    }
    Ok(Vec::new())
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
