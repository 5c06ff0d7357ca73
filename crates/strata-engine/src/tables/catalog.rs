//! [`TableCatalog`]: the [`Tables`] of `strata serve`, over one data
//! directory: measurements that are event streams go to their stream,
//! everything else to the series engine ([`crate::Db::engine`]).
//!
//! - Writes are split: series points commit as one series transaction
//!   (first), then each stream's events are appended and the stream synced
//!   before the write returns. A request mixing stream and series lines is
//!   therefore *not* one atomic transaction across both: after a crash the
//!   series part may be present without the stream part (never the reverse).
//!   Within a stream the events reach PMem in batches of `k` while they are
//!   appended, so after a crash a prefix of a request's events may be present
//!   (none of them was acknowledged). Lines that do not fit a stream's schema
//!   are rejected one by one; if appending fails midway (an I/O error), the
//!   lines before are synced and reported written, that line and the rest
//!   rejected.
//! - Kinds: a name that is a stream of the database is an event stream,
//!   else a series measurement if the series engine has one.
//! - `drop_table` of a stream drops the stream.
//! - Queries of a stream hold its lock; a full raw scan (no `LIMIT`, no
//!   attribute filter) holds it one chunk of
//!   [`query::SCAN_CHUNK_EVENTS`] at a time, so a writer waits for a chunk,
//!   not a scan. [`StreamTables::scan_events`] hands each chunk on after
//!   the lock is released (the streamed `/query` path), so neither a writer
//!   nor memory waits for the whole answer. `LIMIT n` reads only the first
//!   (or, with `ORDER BY time DESC`, the last) `n` events.
//! - A stream cannot be created over a measurement that holds series
//!   (checked at creation; a series write racing the creation can still
//!   land in the series engine under the same name, and is then hidden
//!   behind the stream).

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use strata_events::event;
use strata_series::{EngineError, LineRejection, Point, SeriesEngine, SeriesStore, WriteOutcome};

use super::streams::{
    hand_on, EventPieces, EventQuery, EventRows, EventSelect, StreamAttr, StreamError, StreamInfo,
    StreamTables,
};
use super::{TableKind, Tables};
use crate::streams::placement::from_event_error;
use crate::streams::write::point_to_event;
use crate::streams::{attrs_of, query, Streams};

/// Series through the engine, streams through the stream set.
pub struct TableCatalog {
    engine: Arc<SeriesEngine>,
    streams: Arc<Streams>,
}

impl TableCatalog {
    pub fn new(engine: Arc<SeriesEngine>, streams: Arc<Streams>) -> TableCatalog {
        TableCatalog { engine, streams }
    }

    /// The event streams of the data directory.
    pub fn stream_set(&self) -> &Arc<Streams> {
        &self.streams
    }

    /// Appends the points of one stream; returns the events written and
    /// the attributes per event.
    fn write_stream(
        &self,
        db: &str,
        name: &str,
        points: &[(usize, &Point)],
        rejected: &mut Vec<(usize, LineRejection)>,
    ) -> Result<(usize, usize), EngineError> {
        let Some(open) = self.streams.get(db, name) else {
            // Dropped since the split: the points are not written.
            for (i, _) in points {
                rejected.push((*i, LineRejection::TableDropped(name.to_string())));
            }
            return Ok((0, 0));
        };
        let mut stream = open.stream.lock();
        if open.is_dropped() {
            for (i, _) in points {
                rejected.push((*i, LineRejection::TableDropped(name.to_string())));
            }
            return Ok((0, 0));
        }
        let schema = stream.config().tree.schema.clone();
        let mut written = 0;
        let mut failed: Option<String> = None;
        for (index, point) in points {
            if let Some(why) = &failed {
                rejected.push((*index, LineRejection::NotAttempted(why.clone())));
                continue;
            }
            let encoded = point_to_event(name, &schema, point)
                .and_then(|e| event::encode(&schema, &e).map_err(|e| LineRejection::Unfit(e.to_string())));
            match encoded {
                Err(reason) => rejected.push((*index, reason)),
                Ok(bytes) => match stream.append(&bytes) {
                    Ok(_) => written += 1,
                    Err(e @ strata_events::EventError::Full { .. }) => {
                        rejected.push((*index, LineRejection::TableFull(format!("stream '{name}': {e}"))))
                    }
                    Err(e) => {
                        // The events before this one are in the stream: report
                        // them written (after the sync below) and this one and
                        // the rest rejected, so a retry of the rejected lines
                        // does not duplicate the written ones.
                        let why =
                            format!("stream '{name}': {e} (this line and the following were not written)");
                        rejected.push((*index, LineRejection::NotAttempted(why.clone())));
                        failed = Some(why);
                    }
                },
            }
        }
        if written > 0 {
            stream.sync().map_err(from_event_error)?;
        }
        Ok((written, schema.attr_count()))
    }
}

fn stream_error(e: StreamError) -> EngineError {
    match e {
        StreamError::Engine(e) => e,
        StreamError::Unavailable(m) => EngineError::Unavailable(m),
        StreamError::Invalid(m) | StreamError::AlreadyExists(m) | StreamError::NotFound(m) => {
            EngineError::InvalidArgument(m)
        }
    }
}

impl Tables for TableCatalog {
    fn series_store(&self) -> &dyn SeriesStore {
        self.engine.as_ref()
    }

    fn stream_tables(&self) -> Option<&dyn StreamTables> {
        Some(self)
    }

    fn kind_of(&self, db: &str, name: &str) -> Option<TableKind> {
        if self.streams.get(db, name).is_some() || self.streams.failed_reason(db, name).is_some() {
            return Some(TableKind::EventStream);
        }
        let series = self.engine.measurements(db).ok()?.iter().any(|m| m == name);
        series.then_some(TableKind::Series)
    }

    /// The database's event streams first (each drop is durable on its
    /// own), then its series in one durable record: a crash between leaves
    /// the database with fewer streams, and the drop can be run again.
    fn remove_database(&self, name: &str) -> Result<(), EngineError> {
        let mut streams = self.streams.names(name);
        streams.extend(self.streams.failed().into_iter().filter(|f| f.db == name).map(|f| f.name));
        for stream in streams {
            self.streams.drop_stream(name, &stream).map_err(stream_error)?;
        }
        self.engine.drop_database(name)
    }

    fn tables(&self, db: &str) -> Result<Vec<(String, TableKind)>, EngineError> {
        let mut out: BTreeMap<String, TableKind> =
            self.engine.measurements(db)?.into_iter().map(|m| (m, TableKind::Series)).collect();
        // A stream hides series of the same name (see the module comment),
        // also one that failed to recover.
        out.extend(self.streams.names(db).into_iter().map(|n| (n, TableKind::EventStream)));
        out.extend(
            self.streams
                .failed()
                .into_iter()
                .filter(|f| f.db == db)
                .map(|f| (f.name, TableKind::EventStream)),
        );
        Ok(out.into_iter().collect())
    }

    fn write_request(&self, db: &str, points: &[Point]) -> Result<WriteOutcome, EngineError> {
        // A request with points for a stream that failed to recover writes
        // nothing (503): those points must not land in the series engine.
        for failed in self.streams.failed().into_iter().filter(|f| f.db == db) {
            if points.iter().any(|p| p.measurement == failed.name) {
                let e = self.streams.unavailable(db, &failed.name).expect("listed as failed");
                return Err(stream_error(e));
            }
        }
        let stream_names = self.streams.names(db);
        if stream_names.is_empty() {
            return self.engine.write(db, points);
        }
        let mut series_points: Vec<Point> = Vec::new();
        let mut series_index: Vec<usize> = Vec::new();
        let mut by_stream: BTreeMap<&str, Vec<(usize, &Point)>> = BTreeMap::new();
        for (i, p) in points.iter().enumerate() {
            match stream_names.iter().find(|n| **n == p.measurement) {
                Some(name) => by_stream.entry(name.as_str()).or_default().push((i, p)),
                None => {
                    series_points.push(p.clone());
                    series_index.push(i);
                }
            }
        }
        let mut outcome = WriteOutcome::default();
        if !series_points.is_empty() {
            let series = self.engine.write(db, &series_points)?;
            outcome.points_written += series.points_written;
            outcome.values_written += series.values_written;
            outcome.rejected.extend(series.rejected.into_iter().map(|(i, r)| (series_index[i], r)));
        }
        for (name, items) in by_stream {
            let (written, attrs) = self.write_stream(db, name, &items, &mut outcome.rejected)?;
            outcome.points_written += written;
            outcome.values_written += written * attrs;
        }
        outcome.rejected.sort_by_key(|(i, _)| *i);
        Ok(outcome)
    }

    fn drop_table(&self, db: &str, name: &str) -> Result<(), EngineError> {
        if self.streams.get(db, name).is_some() || self.streams.failed_reason(db, name).is_some() {
            return self.streams.drop_stream(db, name).map_err(stream_error);
        }
        self.engine.drop_measurement(db, name)
    }
}

impl StreamTables for TableCatalog {
    fn create_stream(&self, db: &str, name: &str, attrs: &[StreamAttr]) -> Result<StreamInfo, StreamError> {
        crate::streams::catalog::check_name(db, "database name")?;
        crate::streams::catalog::check_name(name, "stream name")?;
        // As for writes, the database must exist (InfluxDB 1.x does not
        // create databases on the fly either).
        if !self.engine.databases().iter().any(|d| d == db) {
            return Err(StreamError::NotFound(format!(
                "database not found: {db:?}; create it first (CREATE DATABASE on /query)"
            )));
        }
        if self.engine.measurements(db)?.iter().any(|m| m == name) {
            return Err(StreamError::AlreadyExists(format!(
                "measurement {name:?} of database {db:?} already holds series; pick another stream name"
            )));
        }
        Ok(self.streams.create(db, name, attrs)?.info())
    }

    fn list_streams(&self, db: Option<&str>) -> Vec<StreamInfo> {
        self.streams.all().iter().filter(|s| db.is_none_or(|d| s.catalog.db == d)).map(|s| s.info()).collect()
    }

    fn failed_streams(&self) -> Vec<(String, String, String)> {
        self.streams.failed().into_iter().map(|f| (f.db, f.name, f.reason)).collect()
    }

    fn stream_schema(&self, db: &str, measurement: &str) -> Option<Vec<StreamAttr>> {
        self.streams.get(db, measurement).map(|s| attrs_of(&s.catalog.schema))
    }

    fn drop_stream(&self, db: &str, name: &str) -> Result<(), StreamError> {
        self.streams.drop_stream(db, name)
    }

    fn select_events(&self, db: &str, name: &str, select: &EventSelect) -> Result<EventRows, StreamError> {
        if !matches!(select.query, EventQuery::Raw { .. }) {
            let open = self.open_stream(db, name)?;
            let stream = open.stream.lock();
            if open.is_dropped() {
                return Err(gone(db, name));
            }
            return query::select(name, &stream, select);
        }
        let mut rows = Vec::new();
        self.scan_events(db, name, select, &mut |chunk| {
            rows.extend(chunk);
            ControlFlow::Continue(())
        })?;
        Ok(EventRows::Raw(rows))
    }

    fn scan_events(
        &self,
        db: &str,
        name: &str,
        select: &EventSelect,
        each: &mut EventPieces<'_>,
    ) -> Result<(), StreamError> {
        let open = self.open_stream(db, name)?;
        let full_scan =
            matches!(select.query, EventQuery::Raw { limit: None, .. }) && select.filters.is_empty();
        if !full_scan {
            // LIMIT reads only the ends; a filtered scan prunes by the
            // tree's aggregates: one hold of the lock, one piece.
            let stream = open.stream.lock();
            if open.is_dropped() {
                return Err(gone(db, name));
            }
            let answer = query::select(name, &stream, select)?;
            drop(stream);
            return hand_on(name, answer, each);
        }
        // A full scan holds the stream's lock one chunk at a time and hands
        // the chunk on after releasing it, so writers wait for a chunk, not
        // for the scan or its reader. Its end is fixed when it begins (see
        // `ScanEnd` for what a scan sees of concurrent writes).
        let mut cursor = Some(query::ScanCursor::start(select.range.min_ns));
        let mut end = None;
        while let Some(at) = cursor {
            let stream = open.stream.lock();
            if open.is_dropped() {
                return Err(gone(db, name));
            }
            let end = match end {
                Some(end) => end,
                None => *end.insert(query::scan_end(&stream, select)?),
            };
            let (chunk, next) = query::select_raw_chunk(name, &stream, select, at, end)?;
            drop(stream);
            cursor = next;
            if !chunk.is_empty() && each(chunk).is_break() {
                break;
            }
        }
        Ok(())
    }
}

impl TableCatalog {
    /// Stream `db/name`, or why it cannot be read (failed at startup: 503; missing: 404).
    fn open_stream(&self, db: &str, name: &str) -> Result<Arc<crate::streams::OpenStream>, StreamError> {
        if let Some(e) = self.streams.unavailable(db, name) {
            return Err(e);
        }
        self.streams.get(db, name).ok_or_else(|| gone(db, name))
    }
}

fn gone(db: &str, name: &str) -> StreamError {
    StreamError::NotFound(format!("stream {db}/{name} not found"))
}
