//! A raw SELECT streamed to a [`ResultSink`] (issue 15 item 4): output
//! series by output series (GROUP BY key order), each read in time windows
//! sized to hold about [`TARGET_POINTS`] points, the window's rows joined,
//! filtered and ordered exactly as [`super::select`] orders a whole read
//! (by time, ties in tag set order), then handed on, so memory holds a
//! few windows and not the result: output series that fit one window are
//! read, joined and encoded `PARALLEL_SERIES` at a time on every core,
//! and sent in order; a larger one streams window by window on its own. The first window is sized from the engine's
//! point-count bounds, later ones adapt to the points the last one held.
//!
//! Each window is one snapshot read; a scan as a whole is not (as SQL's
//! scans, `strata-sql/src/series_scan.rs`). The per-query memory bound still
//! counts every point read by the statement, so a scan past it stops with
//! its error after the rows already sent; LIMIT and OFFSET count rows per
//! series across windows. ORDER BY time DESC, SLIMIT and SOFFSET are not
//! streamed ([`streamable`]).

use std::collections::BTreeMap;

use rayon::prelude::*;

use strata_series::{EngineError, SeriesId, SeriesStore, TimeRange};
use thiserror::Error;

use super::error::StatementError;
use super::plan::{ColumnSource, Projection, SelectPlan, TagSet};
use super::raw::raw_row;
use super::row::{join_by_time, Row, SeriesPoints};
use super::select::{check_memory, group_key};
use crate::influxql::response::Epoch;
use crate::influxql::sink::{ResultSink, SeriesHead, SinkStop};

/// Points a time window aims at.
pub const TARGET_POINTS: u64 = 32_768;
/// Output series read at once, on every core (each at most a window).
const PARALLEL_SERIES: usize = 8;
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

/// One output series prepared for reading: its series, where each goes in
/// the joined rows, and its time windows' plan.
struct GroupScan<'t> {
    head: SeriesHead,
    tagsets: Vec<&'t TagSet>,
    ids: Vec<SeriesId>,
    /// Per id, its tag set (index into `tagsets`) and field slot.
    where_read: Vec<(usize, usize)>,
    /// The first and last time to read, and the first window's width.
    first: i64,
    last: i64,
    width: i128,
}

/// What the parallel part of a scan did for one output series.
enum Prepared<'t> {
    /// Nothing to read.
    Empty,
    /// It fit one window: its output rows, and the points read for them.
    Whole { rows: Vec<Vec<serde_json::Value>>, points: u64, head: SeriesHead },
    /// It is read window by window, one after the other.
    Windows(GroupScan<'t>),
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
        let groups: Vec<(Vec<String>, Vec<&TagSet>)> = groups.into_iter().collect();
        let mut points_read = 0;
        // Output series are read, joined and encoded on every core a few at
        // a time (issue 21, item 5), and sent in order; one larger than a
        // window streams window by window on its own.
        for chunk in groups.chunks(PARALLEL_SERIES) {
            let prepared: Vec<Result<Prepared, ScanError>> =
                chunk.par_iter().map(|(key, tagsets)| self.prepare(key, tagsets)).collect();
            for prepared in prepared {
                match prepared? {
                    Prepared::Empty => {}
                    Prepared::Whole { rows, points, head } => {
                        points_read += points;
                        check_memory(points_read, self.max_memory_bytes)?;
                        let mut out = StreamedSeries::new(statement_id, &head, self.plan);
                        out.send_cells(sink, rows)?;
                        out.end(sink)?;
                    }
                    Prepared::Windows(scan) => self.series(statement_id, scan, &mut points_read, sink)?,
                }
            }
        }
        Ok(())
    }

    /// Plans one output series (the tag sets of one GROUP BY key) and, if
    /// it fits one window, reads it and makes its output rows.
    fn prepare<'t>(&self, key: &[String], tagsets: &[&'t TagSet]) -> Result<Prepared<'t>, ScanError> {
        let head = SeriesHead {
            name: Some(self.plan.measurement.clone()),
            tags: (!self.plan.group_keys.is_empty())
                .then(|| self.plan.group_keys.iter().cloned().zip(key.iter().cloned()).collect()),
            columns: self.plan.columns.clone(),
        };
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
        if ids.is_empty() {
            return Ok(Prepared::Empty);
        }
        let Some(span) = store.time_span(db, &ids)? else {
            return Ok(Prepared::Empty);
        };
        let (first, last) = (span.min_ns.max(range.min_ns), span.max_ns.min(range.max_ns));
        if first > last {
            return Ok(Prepared::Empty);
        }
        let bound: u64 =
            store.point_count_bounds(db, &ids, TimeRange { min_ns: first, max_ns: last })?.iter().sum();
        let span_ns = i128::from(last) - i128::from(first) + 1;
        let width = (span_ns * i128::from(TARGET_POINTS) / i128::from(bound.max(1))).clamp(1, span_ns);
        let scan = GroupScan { head, tagsets: tagsets.to_vec(), ids, where_read, first, last, width };
        if width < span_ns {
            return Ok(Prepared::Windows(scan));
        }
        let data = super::prune::read(
            store,
            self.plan,
            &scan.ids,
            &scan.where_read,
            TimeRange { min_ns: first, max_ns: last },
        )?;
        let points: u64 = data.iter().map(|p| p.len() as u64).sum();
        check_memory(points, self.max_memory_bytes)?;
        let rows = self
            .window_rows(&scan.tagsets, &scan.where_read, data)
            .iter()
            .filter_map(|row| raw_row(self.columns, row, self.epoch))
            .collect();
        Ok(Prepared::Whole { rows, points, head: scan.head })
    }

    /// One output series read window by window.
    fn series(
        &self,
        statement_id: usize,
        scan: GroupScan<'_>,
        points_read: &mut u64,
        sink: &mut dyn ResultSink,
    ) -> Result<(), ScanError> {
        let store = self.store;
        let span_ns = i128::from(scan.last) - i128::from(scan.first) + 1;
        let mut width = scan.width;
        let mut next = i128::from(scan.first);
        let mut out = StreamedSeries::new(statement_id, &scan.head, self.plan);
        while next <= i128::from(scan.last) && !out.done() {
            let max_ns = (next + width - 1).min(i128::from(scan.last)) as i64;
            let window = TimeRange { min_ns: next as i64, max_ns };
            let data = super::prune::read(store, self.plan, &scan.ids, &scan.where_read, window)?;
            let points: u64 = data.iter().map(|p| p.len() as u64).sum();
            *points_read += points;
            check_memory(*points_read, self.max_memory_bytes)?;
            out.send(
                sink,
                self.window_rows(&scan.tagsets, &scan.where_read, data),
                self.columns,
                self.epoch,
            )?;
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
        data: Vec<SeriesPoints>,
    ) -> Vec<Row<'t>> {
        let mut per_tagset: Vec<Vec<(usize, SeriesPoints)>> =
            (0..tagsets.len()).map(|_| Vec::new()).collect();
        for (&(i, slot), points) in where_read.iter().zip(data) {
            per_tagset[i].push((slot, points));
        }
        let mut rows = Vec::new();
        for (tagset, series) in tagsets.iter().zip(per_tagset) {
            join_by_time(series, self.plan.slots.len(), |time_ns, values| {
                let row = Row { time_ns, tags: &tagset.tags, values };
                if self.plan.condition.as_ref().is_none_or(|c| c.decide(&row) == Some(true)) {
                    rows.push(row);
                }
            });
        }
        if tagsets.len() > 1 {
            rows.sort_by_key(|r| r.time_ns);
        }
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
        self.send_cells(sink, rows.iter().filter_map(|row| raw_row(columns, row, epoch)))
    }

    /// [`Self::send`] of rows already made output rows.
    pub fn send_cells(
        &mut self,
        sink: &mut dyn ResultSink,
        rows: impl IntoIterator<Item = Vec<serde_json::Value>>,
    ) -> Result<(), SinkStop> {
        let mut out = Vec::new();
        for cells in rows {
            if self.take == 0 {
                break;
            }
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
