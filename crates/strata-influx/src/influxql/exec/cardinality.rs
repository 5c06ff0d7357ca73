//! `SHOW ... CARDINALITY` (InfluxDB 1.8): counts of what the plain SHOW
//! lists, shaped as Debian's InfluxDB 1.6.7 answers them:
//! - `SHOW SERIES CARDINALITY` and `SHOW MEASUREMENT CARDINALITY`: one
//!   unnamed series, column `cardinality estimation` (Strata's counts are
//!   exact: they come from the index);
//! - `SHOW SERIES EXACT CARDINALITY`: one series per measurement, column
//!   `count`; `SHOW MEASUREMENT EXACT CARDINALITY`: one unnamed `count`;
//! - `SHOW TAG KEY`, `FIELD KEY` and `TAG VALUES [EXACT] CARDINALITY`: one
//!   series per measurement, column `count`.
//!
//! A series, as in `SHOW SERIES`, is a measurement and tag set (not one
//! per field, as the engine stores them).

use serde_json::Value;
use strata_engine::Tables;

use super::error::StatementError;
use super::{execute_statement, meta};
use crate::influxql::ast::{CardinalityOf, Statement};
use crate::influxql::response::{Epoch, SeriesOut};
use crate::influxql::QueryParams;

fn count_row(n: usize) -> Vec<Vec<Value>> {
    vec![vec![Value::from(n as u64)]]
}

fn total(exact: bool, n: usize) -> Vec<SeriesOut> {
    let column = if exact { "count" } else { "cardinality estimation" };
    vec![SeriesOut::new(None, &[column], count_row(n))]
}

pub fn show_cardinality(
    tables: &dyn Tables,
    of: CardinalityOf,
    exact: bool,
    inner: &Statement,
    params: &QueryParams,
) -> Result<Vec<SeriesOut>, StatementError> {
    match (of, inner) {
        (CardinalityOf::Series, Statement::ShowSeries(s)) => {
            let selected =
                meta::selected_series(tables, &s.on, &s.from, &s.condition, "SHOW SERIES", params)?;
            let per_measurement: Vec<(String, usize)> = selected
                .iter()
                .map(|(name, series)| (name.clone(), meta::tagsets(series).len()))
                .filter(|(_, n)| *n > 0)
                .collect();
            if !exact {
                return Ok(total(false, per_measurement.iter().map(|(_, n)| n).sum()));
            }
            Ok(per_measurement
                .into_iter()
                .map(|(name, n)| SeriesOut::new(Some(&name), &["count"], count_row(n)))
                .collect())
        }
        (CardinalityOf::Measurements, _) => {
            let listed = execute_statement(tables, inner, params, Epoch::Rfc3339)?;
            Ok(total(exact, listed.iter().map(|s| s.values.len()).sum()))
        }
        _ => {
            let listed = execute_statement(tables, inner, params, Epoch::Rfc3339)?;
            Ok(listed
                .into_iter()
                .map(|s| SeriesOut::new(s.name.as_deref(), &["count"], count_row(s.values.len())))
                .collect())
        }
    }
}
