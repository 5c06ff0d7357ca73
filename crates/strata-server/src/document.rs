//! The non-chunked `/query` response written as the executor hands rows on
//! (issue 15 item 4): the same bytes `serde_json::to_string` gives for the
//! whole `{"results":[...]}` value (keys in InfluxDB's order), written
//! piece by piece, each row serialized as it comes, so a large raw SELECT
//! never holds its result as a JSON tree.
//!
//! It also applies InfluxDB's `max-row-limit` as [`crate::row_limit`]
//! does to a whole value: rows counted over statements and series in
//! order, the series in which the limit is reached ends there and carries
//! `"partial": true` if it had more rows, and the response ends (later
//! series and statements are neither sent nor executed). A statement that
//! fails after some of its rows were sent ends its open series with
//! `"partial": true`, then carries its `"error"` after its `"series"`.

use serde_json::Value;
use strata_influx::influxql::sink::{ResultSink, SeriesHead, SinkStop};

use crate::stream_body::TextOut;

/// Writes `{"results":[...]}` to `out` as results come.
pub struct DocumentSink<'o, O: TextOut> {
    out: &'o mut O,
    /// 0: no limit.
    max_rows: usize,
    rows_sent: usize,
    statements: usize,
    /// Inside a statement's object: how many series it has begun.
    statement: Option<usize>,
    /// Inside a series' object: how many rows it has written.
    series_rows: Option<usize>,
    ended: bool,
}

impl<'o, O: TextOut> DocumentSink<'o, O> {
    pub fn new(out: &'o mut O, max_rows: usize) -> Result<Self, SinkStop> {
        out.write("{\"results\":[")?;
        Ok(DocumentSink {
            out,
            max_rows,
            rows_sent: 0,
            statements: 0,
            statement: None,
            series_rows: None,
            ended: false,
        })
    }

    fn at_limit(&self) -> bool {
        self.max_rows > 0 && self.rows_sent >= self.max_rows
    }

    fn open_statement(&mut self, statement_id: usize) -> Result<(), SinkStop> {
        if self.statement.is_none() {
            let comma = if self.statements > 0 { "," } else { "" };
            self.out.write(&format!("{comma}{{\"statement_id\":{statement_id}"))?;
            self.statement = Some(0);
            self.statements += 1;
        }
        Ok(())
    }

    fn close_series(&mut self, partial: bool) -> Result<(), SinkStop> {
        let Some(rows) = self.series_rows.take() else {
            return Ok(());
        };
        let values_end = if rows > 0 { "]" } else { "" };
        let partial = if partial { ",\"partial\":true" } else { "" };
        self.out.write(&format!("{values_end}{partial}}}"))
    }

    fn close_statement(&mut self, error: Option<&str>) -> Result<(), SinkStop> {
        let Some(series) = self.statement.take() else {
            return Ok(());
        };
        if series > 0 {
            self.out.write("]")?;
        }
        if let Some(error) = error {
            self.out.write(&format!(",\"error\":{}", Value::String(error.to_string())))?;
        }
        self.out.write("}")
    }

    /// Ends the document (idempotent); `error` (a request-level failure
    /// after the body started) goes after `results`.
    pub fn end(&mut self, error: Option<&str>) -> Result<(), SinkStop> {
        if self.ended {
            return Ok(());
        }
        self.ended = true;
        self.close_series(true)?;
        self.close_statement(None)?;
        self.out.write("]")?;
        if let Some(error) = error {
            self.out.write(&format!(",\"error\":{}", Value::String(error.to_string())))?;
        }
        self.out.write("}")
    }

    /// Ends at the row limit and stops the executor.
    fn stop(&mut self, cut: bool) -> Result<(), SinkStop> {
        self.close_series(cut)?;
        self.end(None)?;
        Err(SinkStop)
    }
}

impl<O: TextOut> ResultSink for DocumentSink<'_, O> {
    fn begin_series(&mut self, statement_id: usize, head: &SeriesHead) -> Result<(), SinkStop> {
        if self.at_limit() {
            return self.stop(false);
        }
        self.open_statement(statement_id)?;
        let begun = self.statement.unwrap_or(0);
        self.out.write(if begun == 0 { ",\"series\":[" } else { "," })?;
        self.statement = Some(begun + 1);
        let text = head.to_json(Vec::new()).to_string();
        self.out.write(text.strip_suffix('}').unwrap_or(&text))?;
        self.series_rows = Some(0);
        Ok(())
    }

    fn rows(&mut self, rows: Vec<Vec<Value>>) -> Result<(), SinkStop> {
        for row in rows {
            if self.at_limit() {
                return self.stop(true);
            }
            let written = self.series_rows.unwrap_or(0);
            self.out.write(if written == 0 { ",\"values\":[" } else { "," })?;
            self.out.write(&Value::Array(row).to_string())?;
            self.series_rows = Some(written + 1);
            self.rows_sent += 1;
        }
        Ok(())
    }

    fn end_series(&mut self) -> Result<(), SinkStop> {
        self.close_series(false)
    }

    fn end_statement(&mut self, statement_id: usize, error: Option<&str>) -> Result<(), SinkStop> {
        self.open_statement(statement_id)?;
        self.close_series(true)?;
        self.close_statement(error)?;
        if self.at_limit() {
            self.end(None)?;
            return Err(SinkStop);
        }
        Ok(())
    }
}
