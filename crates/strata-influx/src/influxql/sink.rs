//! Where a query's results go, piece by piece ([`ResultSink`]): the
//! executor hands each statement's series to a sink as a head, batches of
//! rows and an end, then the statement's end (with its error, if any), so a
//! large raw SELECT never holds its whole result (issue 15 item 4). The
//! HTTP server's sinks write JSON as the rows come (`chunked=true` lines or
//! the one document); [`CollectSink`] builds the `{"results": [...]}` value
//! that [`crate::influxql::execute`] returns.

use std::collections::BTreeMap;

use serde_json::Value;
use thiserror::Error;

use super::exec::error::StatementError;
use super::response::{error_result, statement_result, SeriesOut};

/// A sink asks the executor to stop: its reader went away, or a row limit
/// ended the response. Not an error of the query.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[error("the result's consumer stopped reading")]
pub struct SinkStop;

/// What a series is before its rows: name, GROUP BY tags and columns.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesHead {
    pub name: Option<String>,
    pub tags: Option<BTreeMap<String, String>>,
    pub columns: Vec<String>,
}

impl SeriesHead {
    /// The series' JSON object with `values` (omitted when empty), keys in
    /// InfluxDB's order, as [`SeriesOut::to_json`] writes it.
    pub fn to_json(&self, values: Vec<Vec<Value>>) -> Value {
        SeriesOut { name: self.name.clone(), tags: self.tags.clone(), columns: self.columns.clone(), values }
            .to_json()
    }
}

/// Receives a query's results in order. Every call may answer [`SinkStop`],
/// after which the executor makes no more calls.
pub trait ResultSink {
    /// A series of statement `statement_id` starts; at least one
    /// [`ResultSink::rows`] call follows before its end.
    fn begin_series(&mut self, statement_id: usize, head: &SeriesHead) -> Result<(), SinkStop>;
    /// More rows of the open series, in output order.
    fn rows(&mut self, rows: Vec<Vec<Value>>) -> Result<(), SinkStop>;
    /// The open series has no more rows.
    fn end_series(&mut self) -> Result<(), SinkStop>;
    /// Statement `statement_id` is done; `error` fails it (series already
    /// handed on stay sent: a streaming sink writes the error after them).
    fn end_statement(&mut self, statement_id: usize, error: Option<&str>) -> Result<(), SinkStop>;
}

/// Hands a materialized statement result (the path of aggregates, SHOW and
/// the rest) to `sink`, series by series, then ends the statement.
pub fn send_statement(
    sink: &mut dyn ResultSink,
    statement_id: usize,
    outcome: &Result<Vec<SeriesOut>, StatementError>,
) -> Result<(), SinkStop> {
    if let Ok(series) = outcome {
        for one in series {
            let head =
                SeriesHead { name: one.name.clone(), tags: one.tags.clone(), columns: one.columns.clone() };
            sink.begin_series(statement_id, &head)?;
            if !one.values.is_empty() {
                sink.rows(one.values.clone())?;
            }
            sink.end_series()?;
        }
    }
    sink.end_statement(statement_id, outcome.as_ref().err().map(|e| e.to_string()).as_deref())
}

/// Builds the whole `{"results": [...]}` value, as the executor did before
/// it streamed: a failed statement shows only its error.
#[derive(Default)]
pub struct CollectSink {
    results: Vec<Value>,
    series: Vec<SeriesOut>,
}

impl CollectSink {
    /// The response value.
    pub fn into_value(self) -> Value {
        let mut body = serde_json::Map::new();
        body.insert("results".to_string(), Value::Array(self.results));
        Value::Object(body)
    }
}

impl ResultSink for CollectSink {
    fn begin_series(&mut self, _statement_id: usize, head: &SeriesHead) -> Result<(), SinkStop> {
        self.series.push(SeriesOut {
            name: head.name.clone(),
            tags: head.tags.clone(),
            columns: head.columns.clone(),
            values: Vec::new(),
        });
        Ok(())
    }

    fn rows(&mut self, rows: Vec<Vec<Value>>) -> Result<(), SinkStop> {
        if let Some(open) = self.series.last_mut() {
            open.values.extend(rows);
        }
        Ok(())
    }

    fn end_series(&mut self) -> Result<(), SinkStop> {
        Ok(())
    }

    fn end_statement(&mut self, statement_id: usize, error: Option<&str>) -> Result<(), SinkStop> {
        let series = std::mem::take(&mut self.series);
        self.results.push(match error {
            Some(e) => error_result(statement_id, e),
            None => statement_result(statement_id, &Ok(series)),
        });
        Ok(())
    }
}
