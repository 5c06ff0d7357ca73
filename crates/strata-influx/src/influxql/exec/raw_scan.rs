//! A raw SELECT streamed to a [`ResultSink`] (issue 15 item 4): output
//! series by output series (GROUP BY key order), each read in time windows
//! sized to hold about [`TARGET_POINTS`] points, the window's rows joined,
//! filtered and ordered exactly as [`super::select`] orders a whole read
//! (by time, ties in tag set order), then handed on, so memory holds one
//! window and not the result. The first window is sized from the engine's
//! point-count bounds, later ones adapt to the points the last one held.
//!
//! Each window is one snapshot read; a scan as a whole is not (as SQL's
//! scans, `strata-sql/src/series_scan.rs`). The per-query memory bound still
//! counts every point read by the statement, so a scan past it stops with
//! its error after the rows already sent; LIMIT and OFFSET count rows per
//! series across windows. ORDER BY time DESC, SLIMIT and SOFFSET are not
//! streamed ([`streamable`]).

use std::collections::BTreeMap;

use strata_series::{EngineError, FieldValue, SeriesId, SeriesStore, TimeRange, TimestampNs};
use thiserror::Error;

use super::error::StatementError;
use super::plan::{ColumnSource, Projection, SelectPlan, TagSet};
use super::raw::raw_row;
use super::row::Row;
use super::select::{check_memory, group_key};
use crate::influxql::response::Epoch;
use crate::influxql::sink::{ResultSink, SeriesHead, SinkStop};

/// Points a time window aims at.
pub const TARGET_POINTS: u64 = 32_768;
/// A window's width changes by at most this factor from one read to the next.
const WIDTH_STEP: i128 = 16;

/// Why a streamed statement stopped early.
#[derive(Debug, Error)]
pub enum ScanError {
    /// The statement failed (sent after the rows already streamed).
    #[error(transparent)]
    Statement(#[from] StatementError),
    /// The sink stopped reading.
    #[error(transparent)]
    Stopped(#[from] SinkStop),
}

impl From<EngineError> for ScanError {
    fn from(e: EngineError) -> ScanError {
        ScanError::Statement(e.into())
    }
}

/// Whether `plan` streams: raw rows in ascending time, every output series.
pub fn streamable(plan: &SelectPlan) -> bool {
    matches!(plan.projection, Projection::Raw(_))
        && !plan.order_desc
        && plan.slimit.unwrap_or(0) == 0
        && plan.soffset.unwrap_or(0) == 0
}

/// One streamed raw SELECT.
pub struct RawScan<'a> {
    pub store: &'a dyn SeriesStore,
    pub plan: &'a SelectPlan,
    pub columns: &'a [ColumnSource],
    pub epoch: Epoch,
    pub max_memory_bytes: u64,
}

impl RawScan<'_> {
    /// Sends every output series of the plan to `sink` (not the statement's end).
    pub fn run(&self, statement_id: usize, sink: &mut dyn ResultSink) -> Result<(), ScanError> {
        if self.plan.range.is_empty() {
            return Ok(());
        }
        let mut groups: BTreeMap<Vec<String>, Vec<&TagSet>> = BTreeMap::new();
        for tagset in &self.plan.tagsets {
            groups.entry(group_key(self.plan, tagset)).or_default().push(tagset);
        }
        let mut points_read = 0;
        for (key, tagsets) in groups {
            let head = SeriesHead {
                name: Some(self.plan.measurement.clone()),
                tags: (!self.plan.group_keys.is_empty())
                    .then(|| self.plan.group_keys.iter().cloned().zip(key).collect()),
                columns: self.plan.columns.clone(),
            };
            self.series(statement_id, &head, &tagsets, &mut points_read, sink)?;
        }
        Ok(())
    }

    /// One output series: the tag sets of one GROUP BY key, window by window.
    fn series(
        &self,
        statement_id: usize,
        head: &SeriesHead,
        tagsets: &[&TagSet],
        points_read: &mut u64,
        sink: &mut dyn ResultSink,
    ) -> Result<(), ScanError> {
        let mut ids: Vec<SeriesId> = Vec::new();
        let mut where_read: Vec<(usize, usize)> = Vec::new();
        for (i, tagset) in tagsets.iter().enumerate() {
            for (slot, id) in tagset.ids.iter().enumerate() {
                if let Some(id) = id {
                    ids.push(*id);
                    where_read.push((i, slot));
                }
            }
        }
        let (store, db, range) = (self.store, self.plan.db.as_str(), self.plan.range);
        let slots: Vec<usize> = where_read.iter().map(|(_, slot)| *slot).collect();
        if ids.is_empty() {
            return Ok(());
        }
        let Some(span) = store.time_span(db, &ids)? else {
            return Ok(());
        };
        let (first, last) = (span.min_ns.max(range.min_ns), span.max_ns.min(range.max_ns));
        if first > last {
            return Ok(());
        }
        let bound: u64 =
            store.point_count_bounds(db, &ids, TimeRange { min_ns: first, max_ns: last })?.iter().sum();
        let span_ns = i128::from(last) - i128::from(first) + 1;
        let mut width = (span_ns * i128::from(TARGET_POINTS) / i128::from(bound.max(1))).clamp(1, span_ns);
        let mut next = i128::from(first);
        let mut out = StreamedSeries::new(statement_id, head, self.plan);
        while next <= i128::from(last) && !out.done() {
            let max_ns = (next + width - 1).min(i128::from(last)) as i64;
            let window = TimeRange { min_ns: next as i64, max_ns };
            let data = super::prune::read(store, self.plan, &ids, &slots, window)?;
            let points: u64 = data.iter().map(|p| p.len() as u64).sum();
            *points_read += points;
            check_memory(*points_read, self.max_memory_bytes)?;
            out.send(sink, self.window_rows(tagsets, &where_read, data), self.columns, self.epoch)?;
            next = i128::from(max_ns) + 1;
            width = next_width(width, points, span_ns);
        }
        out.end(sink)
    }

    /// The rows of one window that pass the condition: joined per tag set by
    /// time, then by time across tag sets (ties in tag set order).
    fn window_rows<'t>(
        &self,
        tagsets: &[&'t TagSet],
        where_read: &[(usize, usize)],
        data: Vec<Vec<(TimestampNs, FieldValue)>>,
    ) -> Vec<Row<'t>> {
        let slots = self.plan.slots.len();
        let mut joined: Vec<BTreeMap<i64, Vec<Option<FieldValue>>>> = vec![BTreeMap::new(); tagsets.len()];
        for (&(i, slot), points) in where_read.iter().zip(data) {
            for (t, v) in points {
                joined[i].entry(t).or_insert_with(|| vec![None; slots])[slot] = Some(v);
            }
        }
        let mut rows = Vec::new();
        for (tagset, by_time) in tagsets.iter().zip(joined) {
            for (time_ns, values) in by_time {
                let row = Row { time_ns, tags: &tagset.tags, values };
                if self.plan.condition.as_ref().is_none_or(|c| c.decide(&row) == Some(true)) {
                    rows.push(row);
                }
            }
        }
        rows.sort_by_key(|r| r.time_ns);
        rows
    }
}

/// The next window's width after one of `width` held `points`: aimed at
/// [`TARGET_POINTS`], within [`WIDTH_STEP`] of the last and the series' span.
fn next_width(width: i128, points: u64, span_ns: i128) -> i128 {
    let aimed = width * i128::from(TARGET_POINTS) / i128::from(points.max(1));
    aimed.clamp((width / WIDTH_STEP).max(1), width.saturating_mul(WIDTH_STEP)).min(span_ns).max(1)
}

/// One output series sent piece by piece: OFFSET and LIMIT counted across
/// its pieces, its head sent before the first row and its end after the
/// last (a series without rows is not sent). Streamed series scans and
/// streamed event-stream scans (`super::stream`) both send through it.
pub struct StreamedSeries<'h> {
    statement_id: usize,
    head: &'h SeriesHead,
    skip: u64,
    take: u64,
    open: bool,
}

impl<'h> StreamedSeries<'h> {
    pub fn new(statement_id: usize, head: &'h SeriesHead, plan: &SelectPlan) -> StreamedSeries<'h> {
        StreamedSeries {
            statement_id,
            head,
            skip: plan.offset.unwrap_or(0),
            take: plan.limit.filter(|&n| n > 0).unwrap_or(u64::MAX),
            open: false,
        }
    }

    /// Whether LIMIT is reached (no more rows are wanted).
    pub fn done(&self) -> bool {
        self.take == 0
    }

    /// Sends the output rows of `rows` (in output order) after OFFSET, up to LIMIT.
    pub fn send(
        &mut self,
        sink: &mut dyn ResultSink,
        rows: Vec<Row<'_>>,
        columns: &[ColumnSource],
        epoch: Epoch,
    ) -> Result<(), SinkStop> {
        let mut out = Vec::new();
        for row in rows {
            if self.take == 0 {
                break;
            }
            let Some(cells) = raw_row(columns, &row, epoch) else {
                continue;
            };
            if self.skip > 0 {
                self.skip -= 1;
            } else {
                self.take -= 1;
                out.push(cells);
            }
        }
        if out.is_empty() {
            return Ok(());
        }
        if !self.open {
            sink.begin_series(self.statement_id, self.head)?;
            self.open = true;
        }
        sink.rows(out)
    }

    /// Ends the series if any of it was sent.
    pub fn end(self, sink: &mut dyn ResultSink) -> Result<(), ScanError> {
        if self.open {
            sink.end_series()?;
        }
        Ok(())
    }
}
