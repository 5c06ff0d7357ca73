//! The InfluxQL executor over a table catalog ([`Tables`]): runs statements in order
//! and shapes each result. Split by concern: [`plan`] (which series, time
//! range, columns), [`select`] (the one snapshot read, joining and
//! grouping rows), [`raw`] (raw rows), [`aggregate`] (aggregates, windows,
//! fill), [`partial`] (aggregates from the store's per-window partials),
//! [`prune`] (reads that skip blocks a required field comparison rules out), [`meta`] (SHOW, DROP, DELETE), [`retention`] (retention policies, CREATE DATABASE), [`condition`] (WHERE),
//! [`stream`] (SELECT on an event stream), [`top`] (top/bottom),
//! [`sources`] (several measurements, regexes in FROM), [`subquery`], [`into`] (SELECT INTO). It asks the engine facade's
//! table catalog ([`strata_engine::Tables`]): series through
//! `Tables::series_store`, event streams through `Tables::stream_tables`.
//!
//! Behaviour chosen to match InfluxDB 1.x (see the module docs for details):
//! - an error stops the query: later statements report `not executed`;
//! - a SELECT without a time bound reads everything; with GROUP BY time the
//!   upper bound defaults to `now()`, and without a lower bound the windows
//!   of each series start at the window of its first point;
//! - aggregate rows without GROUP BY time carry the lower time bound
//!   (epoch 0 when unbounded); a lone selector carries its point's time;
//! - `time` comparisons on both sides of OR are intersected, as InfluxQL's
//!   `ConditionExpr` does; `time != x` is an error;
//! - a name in WHERE is a field if the measurement has such a field, else
//!   a tag (`::field` / `::tag` force it); a missing tag reads as `""`;
//! - DELETE removes points; series stay listed until DROP SERIES or DROP
//!   MEASUREMENT (InfluxDB also drops series left without data);
//! - retention policies are kept per database ([`retention`]); `db.rp.m`
//!   reads the database's data whatever `rp` names, and the default
//!   policy's duration expires points (`strata_engine::retention`);
//! - windows filled with nulls are capped at [`aggregate::MAX_SELECT_BUCKETS`]
//!   per series (InfluxDB's `max-select-buckets`, unlimited there).

pub mod aggregate;
pub mod cardinality;
pub mod condition;
pub mod error;
pub mod into;
pub mod meta;
pub mod partial;
pub mod plan;
pub mod prune;
pub mod raw;
pub mod raw_scan;
pub mod retention;
pub mod row;
pub mod select;
pub mod sources;
pub mod stream;
pub mod subquery;
pub mod tag_filter;
pub mod target;
pub mod top;
pub mod transform;

use strata_engine::Tables;
use strata_series::retention::RetentionChange;

use super::ast::{SelectStatement, Statement};
use super::response::{Epoch, SeriesOut};
use super::sink::{send_statement, ResultSink};
use super::QueryParams;
pub use error::StatementError;

/// What one point read by a SELECT is estimated to hold until the response
/// is written: its copy from the store, its cell in the joined row, its
/// JSON value and its share of the row and the response text (the executor
/// materializes a statement's result before it is encoded, but for a
/// streamed raw SELECT, which counts its points read the same way).
pub const ESTIMATED_BYTES_PER_POINT_READ: u64 = 160;
pub use target::resolve_db;

/// Runs one statement.
pub fn execute_statement(
    tables: &dyn Tables,
    statement: &Statement,
    params: &QueryParams,
    epoch: Epoch,
) -> Result<Vec<SeriesOut>, StatementError> {
    match statement {
        Statement::Select(s) => {
            let epoch = select_epoch(epoch, s);
            match &s.into {
                Some(target) => into::run_select_into(tables, s, target, params, epoch),
                None => sources::run_select_sources(tables, s, params, epoch),
            }
        }
        Statement::ShowDatabases => Ok(meta::show_databases(tables)),
        Statement::CreateDatabase { name, with } => retention::create_database(tables, name, with),
        Statement::CreateRetentionPolicy { name, on, spec } => retention::change_policy(
            tables,
            on,
            RetentionChange::Create { name: name.clone(), spec: spec.clone() },
        ),
        Statement::AlterRetentionPolicy { name, on, spec } => retention::change_policy(
            tables,
            on,
            RetentionChange::Alter { name: name.clone(), spec: spec.clone() },
        ),
        Statement::DropRetentionPolicy { name, on } => {
            retention::change_policy(tables, on, RetentionChange::Drop { name: name.clone() })
        }
        Statement::ShowMeasurements(s) => meta::show_measurements(tables, s, params),
        Statement::ShowTagKeys(s) => meta::show_tag_keys(tables, s, params),
        Statement::ShowTagValues(s) => meta::show_tag_values(tables, s, params),
        Statement::ShowFieldKeys(s) => meta::show_field_keys(tables, s, params),
        Statement::ShowSeries(s) => meta::show_series(tables, s, params),
        Statement::ShowRetentionPolicies { on } => retention::show_retention_policies(tables, on, params),
        Statement::ShowCardinality { of, exact, inner } => {
            cardinality::show_cardinality(tables, *of, *exact, inner, params)
        }
        Statement::DropMeasurement { name } => meta::drop_measurement(tables, name, params),
        Statement::DropDatabase { name } => meta::drop_database(tables, name),
        Statement::DropSeries(d) => meta::drop_series(tables, d, params),
        Statement::Delete(d) => meta::delete(tables, d, params),
    }
}

/// Runs statements in order, each result to `sink` as it is made (a raw
/// SELECT of one measurement streams: [`raw_scan`]); a statement that read
/// an unavailable event stream fails the whole request. Stops quietly when
/// the sink stops.
pub fn execute_statements(
    tables: &dyn Tables,
    statements: &[Statement],
    params: &QueryParams,
    epoch: Epoch,
    sink: &mut dyn ResultSink,
) -> Result<(), crate::influxql::QueryError> {
    let mut failed = false;
    for (id, statement) in statements.iter().enumerate() {
        let outcome = if failed {
            Err(StatementError::NotExecuted)
        } else {
            match statement {
                Statement::Select(s) if s.from_sources.is_empty() && s.into.is_none() => {
                    let epoch = select_epoch(epoch, s);
                    match select::select(tables, s, params, epoch, Some((id, &mut *sink))) {
                        Ok(select::Selected::Series(series)) => Ok(series),
                        Ok(select::Selected::Streamed) => Ok(Vec::new()),
                        Err(raw_scan::ScanError::Statement(e)) => Err(e),
                        Err(raw_scan::ScanError::Stopped(_)) => return Ok(()),
                    }
                }
                _ => execute_statement(tables, statement, params, epoch),
            }
        };
        failed |= outcome.is_err();
        if let Err(StatementError::Stream(strata_engine::tables::streams::StreamError::Unavailable(m))) =
            &outcome
        {
            return Err(crate::influxql::QueryError::Unavailable(m.clone()));
        }
        if send_statement(sink, id, &outcome).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// A SELECT's time format: RFC3339 in its `tz()` zone when it names one.
fn select_epoch(epoch: Epoch, s: &SelectStatement) -> Epoch {
    match (epoch, s.tz) {
        (Epoch::Rfc3339, Some(zone)) => Epoch::Rfc3339In(zone),
        (epoch, _) => epoch,
    }
}
