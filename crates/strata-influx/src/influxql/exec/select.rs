//! Runs a planned SELECT: one `store.read` of every needed series (one
//! snapshot), rows joined by timestamp per tag set, the condition applied,
//! rows grouped by the GROUP BY tags, then raw or aggregate output (a raw
//! SELECT given a sink streams instead: [`super::raw_scan`]; an aggregate
//! of decomposable functions reads partial aggregates per window instead
//! of points: [`super::partial`]). A
//! measurement that is an event stream goes to [`super::stream`] instead
//! (which streams a raw SELECT given a sink too).

use std::collections::BTreeMap;

use strata_engine::{TableKind, Tables};
use strata_series::{SeriesId, SeriesStore};

use serde_json::Value;

use super::aggregate::{aggregate_buckets, aggregate_rows};
use super::condition::tag_value;
use super::error::StatementError;
use super::plan::{plan_select, AggFunc, Projection, SelectPlan, TagSet};
use super::raw::raw_rows;
use super::raw_scan::{RawScan, ScanError};
pub use super::row::Row;
use super::row::{join_by_time, SeriesPoints};
use crate::influxql::ast::SelectStatement;
use crate::influxql::response::{Epoch, SeriesOut};
use crate::influxql::sink::ResultSink;
use crate::influxql::QueryParams;

pub fn run_select(
    tables: &dyn Tables,
    stmt: &SelectStatement,
    params: &QueryParams,
    epoch: Epoch,
) -> Result<Vec<SeriesOut>, StatementError> {
    match select(tables, stmt, params, epoch, None) {
        Ok(Selected::Series(series)) => Ok(series),
        Ok(Selected::Streamed) | Err(ScanError::Stopped(_)) => Ok(Vec::new()),
        Err(ScanError::Statement(e)) => Err(e),
    }
}

/// What [`select`] did with a statement's result.
pub enum Selected {
    /// The whole result, to be sent as it is.
    Series(Vec<SeriesOut>),
    /// The rows went to the sink as they were read ([`super::raw_scan`]).
    Streamed,
}

/// Runs `stmt`. With `stream` (statement id and sink) a raw SELECT that
/// [`super::raw_scan::streamable`] accepts sends its rows to the sink
/// window by window instead of answering them.
pub fn select(
    tables: &dyn Tables,
    stmt: &SelectStatement,
    params: &QueryParams,
    epoch: Epoch,
    stream: Option<(usize, &mut dyn ResultSink)>,
) -> Result<Selected, ScanError> {
    // Planning lists the measurement's series and `read_rows` reads them:
    // two calls. A request landing between them could add a point to a
    // listed series and create another, and the read would show it half. The
    // listing (or the series version) is taken again after the read; if it did not change, no series
    // was created or dropped in between, so every request the read shows had
    // its series listed (the engine publishes a request's new series before
    // applying its points). Otherwise plan and read again. (A streamed scan
    // reads time windows, each one snapshot, as SQL's scans do.)
    let db = super::target::resolve_db(stmt.from.database.as_deref(), params)?;
    if tables.kind_of(&db, &stmt.from.name) == Some(TableKind::EventStream) {
        if let Some(streams) = tables.stream_tables() {
            let failed =
                streams.failed_streams().into_iter().find(|(d, n, _)| *d == db && *n == stmt.from.name);
            if let Some((d, n, why)) = failed {
                return Err(StatementError::Stream(
                    strata_engine::tables::streams::StreamError::Unavailable(format!(
                        "stream {d}/{n} is unavailable: it failed to recover at startup ({why})"
                    )),
                )
                .into());
            }
            if let Some(attrs) = streams.stream_schema(&db, &stmt.from.name) {
                return super::stream::select_stream(streams, &db, &attrs, stmt, params, epoch, stream);
            }
        }
    }
    let store = tables.series_store();
    let listing = || -> Result<Listing, StatementError> {
        if let Some(version) = store.series_version(&db, &stmt.from.name) {
            return Ok(Listing::Version(version));
        }
        let mut ids: Vec<SeriesId> = match store.series(&db, &stmt.from.name) {
            Ok(series) => series.iter().map(|s| s.id).collect(),
            Err(_) => Vec::new(), // planning reports the error
        };
        ids.sort_unstable();
        Ok(Listing::Ids(ids))
    };
    let mut attempt = 0;
    let mut stream = stream;
    loop {
        attempt += 1;
        let before = listing()?;
        let Some(plan) = plan_select(store, stmt, params)? else {
            return Ok(Selected::Series(Vec::new()));
        };
        if let (Some((statement_id, sink)), Projection::Raw(columns)) = (stream.as_mut(), &plan.projection) {
            if super::raw_scan::streamable(&plan) {
                let scan =
                    RawScan { store, plan: &plan, columns, epoch, max_memory_bytes: params.max_memory_bytes };
                scan.run(*statement_id, &mut **sink)?;
                return Ok(Selected::Streamed);
            }
        }
        if let (Some(window), Projection::Aggregate(columns)) =
            (super::partial::answerable(&plan), &plan.projection)
        {
            let groups = super::partial::read_partials(store, &plan, window)?;
            if attempt < MAX_SNAPSHOT_ATTEMPTS && listing()? != before {
                continue;
            }
            let values = |buckets| aggregate_buckets(&plan, columns, buckets, &[], epoch);
            return Ok(Selected::Series(output(&plan, groups, values)?));
        }
        let groups = read_rows(store, &plan, params.max_memory_bytes)?;
        if attempt < MAX_SNAPSHOT_ATTEMPTS && listing()? != before {
            continue;
        }
        let values = |rows: Vec<Row<'_>>| match &plan.projection {
            Projection::Raw(columns) => Ok(raw_rows(&plan, columns, &rows, epoch)),
            Projection::Aggregate(columns) => aggregate_rows(&plan, columns, &rows, epoch),
        };
        return Ok(Selected::Series(output(&plan, groups, values)?));
    }
}

/// What tells whether a measurement's set of series changed: its series
/// version where the store keeps one, else the listed ids.
#[derive(PartialEq)]
enum Listing {
    Version(u64),
    Ids(Vec<SeriesId>),
}

/// Plans are retried at most this often when series keep appearing; the last
/// attempt's answer is returned as it is.
const MAX_SNAPSHOT_ATTEMPTS: usize = 8;

/// The output series of the groups (by GROUP BY tag values), each
/// group's rows made by `values_of`.
fn output<G>(
    plan: &SelectPlan,
    groups: BTreeMap<Vec<String>, G>,
    values_of: impl Fn(G) -> Result<Vec<Vec<Value>>, StatementError>,
) -> Result<Vec<SeriesOut>, StatementError> {
    let mut out = Vec::new();
    for (key, group) in groups {
        let values = values_of(group)?;
        if values.is_empty() {
            continue;
        }
        let tags = if plan.group_keys.is_empty() {
            None
        } else {
            Some(plan.group_keys.iter().cloned().zip(key).collect())
        };
        out.push(SeriesOut {
            name: Some(plan.measurement.clone()),
            tags,
            columns: plan.columns.clone(),
            values,
        });
    }
    Ok(limit_series(out, plan.slimit, plan.soffset))
}

/// `SLIMIT` / `SOFFSET`: the series after the first `soffset`, at most
/// `slimit` of them (0 or none: no limit), in output order.
pub fn limit_series<T>(series: Vec<T>, slimit: Option<u64>, soffset: Option<u64>) -> Vec<T> {
    let skip = soffset.unwrap_or(0) as usize;
    let take = slimit.filter(|&n| n > 0).map_or(usize::MAX, |n| n as usize);
    series.into_iter().skip(skip).take(take).collect()
}

/// The per-query memory bound (0: none), checked once the points are read
/// and before they are joined and encoded, which is where most of a large
/// query's memory goes.
pub fn check_memory(points: u64, max_memory_bytes: u64) -> Result<(), StatementError> {
    let estimated = points.saturating_mul(super::ESTIMATED_BYTES_PER_POINT_READ);
    if max_memory_bytes == 0 || estimated <= max_memory_bytes {
        return Ok(());
    }
    Err(StatementError::QueryMemory {
        points,
        estimated_mib: estimated.div_ceil(1 << 20),
        max_mib: max_memory_bytes >> 20,
    })
}

/// The GROUP BY tag values of `tagset`: the key of its output series.
pub fn group_key(plan: &SelectPlan, tagset: &TagSet) -> Vec<String> {
    plan.group_keys.iter().map(|k| tag_value(&tagset.tags, k).to_string()).collect()
}

/// Whether each series' newest point in the range is all the plan needs:
/// every column is a plain `last()`, without GROUP BY time, and WHERE reads
/// tags only. Then the last of a group's rows is the newest of its series'
/// newest points, ties included, and the store answers those from its
/// last-point cache (`SELECT last(*) ... GROUP BY host`, TSBS lastpoint).
pub(super) fn newest_points_suffice(plan: &SelectPlan) -> bool {
    let Projection::Aggregate(columns) = &plan.projection else { return false };
    plan.window.is_none()
        && plan.selector_tags.is_empty()
        && !columns.is_empty()
        && columns.iter().all(|c| c.func == AggFunc::Last && c.transform.is_none())
        && plan.condition.as_ref().is_none_or(|c| !c.references_fields())
}

/// Reads the plan's series in one call and returns the rows that pass the
/// condition, grouped by GROUP BY tag values, each group sorted by time
/// (ties in tag set order).
fn read_rows<'p>(
    store: &dyn SeriesStore,
    plan: &'p SelectPlan,
    max_memory_bytes: u64,
) -> Result<BTreeMap<Vec<String>, Vec<Row<'p>>>, StatementError> {
    let mut ids: Vec<SeriesId> = Vec::new();
    let mut where_read: Vec<(usize, usize)> = Vec::new();
    for (tagset_index, tagset) in plan.tagsets.iter().enumerate() {
        for (slot, id) in tagset.ids.iter().enumerate() {
            if let Some(id) = id {
                ids.push(*id);
                where_read.push((tagset_index, slot));
            }
        }
    }
    let mut groups: BTreeMap<Vec<String>, Vec<Row<'p>>> = BTreeMap::new();
    if ids.is_empty() || plan.range.is_empty() {
        return Ok(groups);
    }
    let data = if newest_points_suffice(plan) {
        let newest = store.read_last(&plan.db, &ids, plan.range)?;
        newest.into_iter().map(|point| point.into_iter().collect()).collect()
    } else {
        super::prune::read(store, plan, &ids, &where_read, plan.range)?
    };
    check_memory(data.iter().map(|points| points.len() as u64).sum(), max_memory_bytes)?;

    let mut per_tagset: Vec<Vec<(usize, SeriesPoints)>> =
        (0..plan.tagsets.len()).map(|_| Vec::new()).collect();
    for ((tagset_index, slot), points) in where_read.into_iter().zip(data) {
        per_tagset[tagset_index].push((slot, points));
    }
    for (tagset, series) in plan.tagsets.iter().zip(per_tagset) {
        let group = groups.entry(group_key(plan, tagset)).or_default();
        join_by_time(series, plan.slots.len(), |time_ns, values| {
            let row = Row { time_ns, tags: &tagset.tags, values };
            if plan.condition.as_ref().is_none_or(|c| c.decide(&row) == Some(true)) {
                group.push(row);
            }
        });
    }
    for rows in groups.values_mut() {
        rows.sort_by_key(|r| r.time_ns);
    }
    Ok(groups)
}
