//! SELECT over several sources (`FROM cpu, mem`, `FROM /^c/`, InfluxDB
//! 1.8): each measurement named or matched (regexes against the database's
//! measurements) is read as its own statement and answers its own series,
//! measurements in name order, each once; SLIMIT and SOFFSET pick series
//! per measurement, as InfluxDB 1.6.7 does. Wildcards (`*`, `f(*)`) with
//! several sources are refused: InfluxDB expands them to the union of the
//! measurements' fields, which is not done yet.

use std::collections::BTreeMap;

use strata_engine::Tables;

use super::error::StatementError;
use super::select::run_select;
use super::target::resolve_db;
use crate::influxql::ast::{Expr, FromSource, MeasurementRef, SelectStatement};
use crate::influxql::parser::compile_regex;
use crate::influxql::response::{Epoch, SeriesOut};
use crate::influxql::QueryParams;

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
    let wildcard = |e: &Expr| match e {
        Expr::Wildcard => true,
        Expr::Call { args, .. } => args.iter().any(|a| matches!(a, Expr::Wildcard)),
        _ => false,
    };
    if stmt.fields.iter().any(|f| wildcard(&f.expr)) {
        return Err(StatementError::Unsupported(
            "* with several measurements in FROM is not supported yet (name the fields)".into(),
        ));
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
    let mut out = Vec::new();
    for from in measurements.into_values() {
        let one = SelectStatement { from, from_sources: Vec::new(), ..stmt.clone() };
        out.extend(run_select(tables, &one, params, epoch)?);
    }
    Ok(out)
}
