//! Retention policy statements: `SHOW RETENTION POLICIES`, `CREATE`,
//! `ALTER` and `DROP RETENTION POLICY`, and `CREATE DATABASE ... WITH`.
//! The rules and their error messages are the series store's
//! (`strata_series::retention`, InfluxDB 1.8's meta rules); this module
//! routes the statements and shapes `SHOW` as InfluxDB does (durations in
//! Go's form, `168h0m0s`, `0s` for INF).
//!
//! Strata keeps one store per database: `rp` in writes and `db.rp.m` in
//! queries name the database's data whatever policy they name, and the
//! *default* policy's duration is what expires points
//! (`strata_engine::retention`).

use serde_json::Value;
use strata_engine::Tables;
use strata_series::retention::{PolicySpec, RetentionChange};

use super::error::StatementError;
use super::target::resolve_db;
use crate::influxql::response::SeriesOut;
use crate::influxql::QueryParams;

/// A duration as Go's `time.Duration.String` prints whole seconds and up
/// (`168h0m0s`, `1h30m0s`, `90s` is `1m30s`), `0s` for 0.
pub fn go_duration(ns: i64) -> String {
    const S: i64 = 1_000_000_000;
    if ns == 0 {
        return "0s".to_string();
    }
    let (h, rest) = (ns / (3600 * S), ns % (3600 * S));
    let (m, rest) = (rest / (60 * S), rest % (60 * S));
    let (s, frac) = (rest / S, rest % S);
    let seconds = match frac {
        0 => format!("{s}s"),
        frac => format!("{s}.{}s", format!("{frac:09}").trim_end_matches('0')),
    };
    match (h, m) {
        (0, 0) => seconds,
        (0, m) => format!("{m}m{seconds}"),
        (h, m) => format!("{h}h{m}m{seconds}"),
    }
}

/// `SHOW RETENTION POLICIES [ON db]`: the database's policies in creation order.
pub fn show_retention_policies(
    tables: &dyn Tables,
    on: &Option<String>,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, StatementError> {
    let db = resolve_db(on.as_deref(), params)?;
    let policies = tables.series_store().retention_policies(&db)?;
    let rows = policies
        .policies
        .iter()
        .map(|p| {
            vec![
                Value::from(p.name.as_str()),
                Value::from(go_duration(p.duration_ns)),
                Value::from(go_duration(p.shard_group_duration_ns)),
                Value::from(p.replication),
                Value::Bool(policies.default.as_deref() == Some(p.name.as_str())),
            ]
        })
        .collect();
    Ok(vec![SeriesOut::new(None, &["name", "duration", "shardGroupDuration", "replicaN", "default"], rows)])
}

/// `CREATE DATABASE name [WITH ...]`: the database, then (with `WITH`) its
/// policy: the only and default one of a new database, or one that must
/// match an existing policy of an existing database.
pub fn create_database(
    tables: &dyn Tables,
    name: &str,
    with: &Option<(PolicySpec, Option<String>)>,
) -> Result<Vec<SeriesOut>, StatementError> {
    let existed = tables.list_databases().iter().any(|db| db == name);
    tables.add_database(name)?;
    if let Some((spec, rp)) = with {
        let change =
            RetentionChange::DatabaseWith { name: rp.clone(), spec: spec.clone(), created: !existed };
        tables.series_store().change_retention(name, &change)?;
    }
    Ok(Vec::new())
}

/// `CREATE`, `ALTER` or `DROP RETENTION POLICY ... ON db`.
pub fn change_policy(
    tables: &dyn Tables,
    on: &str,
    change: RetentionChange,
) -> Result<Vec<SeriesOut>, StatementError> {
    tables.series_store().change_retention(on, &change)?;
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::go_duration;

    #[test]
    fn durations_print_as_go_does() {
        const H: i64 = 3_600_000_000_000;
        assert_eq!(go_duration(0), "0s");
        assert_eq!(go_duration(168 * H), "168h0m0s");
        assert_eq!(go_duration(H + H / 2), "1h30m0s");
        assert_eq!(go_duration(90_000_000_000), "1m30s");
        assert_eq!(go_duration(1_500_000_000), "1.5s");
    }
}
