//! `SELECT ... INTO [db.][rp.]m FROM ...` (InfluxDB 1.8, "The INTO
//! clause"): the statement runs as a SELECT; each row of its output becomes
//! one point of the target measurement, at the row's time, with the output
//! series' GROUP BY tags as tags and every non-null column as a field (so
//! the tag columns of a raw `SELECT *` without `GROUP BY *` become fields,
//! as in InfluxDB). The answer is one row, `time` 0 and `written` (points
//! written). Points are written in batches of [`INTO_BATCH_POINTS`], each
//! its own transaction (InfluxDB writes them as separate points too).
//!
//! `INTO db.rp.:MEASUREMENT` writes each output series into the measurement
//! of its own name (the source's), as InfluxDB's back-reference does.

use serde_json::Value;
use strata_engine::Tables;

use super::error::StatementError;
use super::sources::run_select_sources;
use super::subquery::points_of;
use super::target::resolve_db;
use crate::influxql::ast::{IntoTarget, SelectStatement};
use crate::influxql::response::{Epoch, SeriesOut};
use crate::influxql::QueryParams;

/// Points per write transaction.
pub const INTO_BATCH_POINTS: usize = 5_000;

/// Runs `stmt` (whose `into` is `target`) and writes its rows.
pub fn run_select_into(
    tables: &dyn Tables,
    stmt: &SelectStatement,
    target: &IntoTarget,
    params: &QueryParams,
    epoch: Epoch,
) -> Result<Vec<SeriesOut>, StatementError> {
    let db = resolve_db(target.database.as_deref(), params)?;
    let select = SelectStatement { into: None, ..stmt.clone() };
    let series = run_select_sources(tables, &select, params, Epoch::Integer { ns_per_unit: 1 })?;
    let mut points = points_of(&series);
    if let Some(name) = &target.measurement {
        for p in &mut points {
            p.measurement.clone_from(name);
        }
    }
    let store = tables.series_store();
    let mut written = 0u64;
    for batch in points.chunks(INTO_BATCH_POINTS) {
        let outcome = store.write(&db, batch)?;
        written += outcome.points_written as u64;
        if let Some((_, why)) = outcome.rejected.first() {
            return Err(StatementError::PartialWrite {
                reason: why.to_string(),
                dropped: outcome.rejected.len() as u64,
                written,
            });
        }
    }
    Ok(vec![SeriesOut::new(
        Some("result"),
        &["time", "written"],
        vec![vec![epoch.time(0), Value::from(written)]],
    )])
}
