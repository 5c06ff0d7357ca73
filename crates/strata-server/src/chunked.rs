//! `/query?chunked=true&chunk_size=N` (InfluxDB 1.x, default N = 10000):
//! the response as a sequence of JSON objects, one per line, each
//! `{"results":[{"statement_id":K,"series":[ONE SERIES PIECE]}]}` of at most
//! N rows. A piece followed by more of the same series carries
//! `"partial": true`, and so does its result while more of the statement
//! follows, as InfluxDB's chunked emitter writes them; a statement without
//! series (or with an error before any row) is one line. Clients (the
//! influx CLI, influxdb-python's `chunked=True`) read the lines and join the
//! pieces.
//!
//! [`ChunkedSink`] writes the lines as the executor hands rows on (issue 15
//! item 4), holding at most one piece of N rows and the piece before it
//! (whose `partial` waits on whether more of its statement follows). An
//! error after rows were sent is one more line, `{"results":[{"statement_id":
//! K,"error":"..."}]}`, after the statement's last piece (marked partial).

use serde_json::{json, Map, Value};
use strata_influx::influxql::sink::{ResultSink, SeriesHead, SinkStop};

use crate::stream_body::TextOut;

/// InfluxDB's `chunk_size` default.
pub const DEFAULT_CHUNK_SIZE: usize = 10_000;

/// The lines (each ending in `\n`) of `response` (`{"results": [...]}`) cut
/// into pieces of at most `chunk_size` rows (0 counts as the default).
pub fn chunk_lines(response: &Value, chunk_size: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut sink = ChunkedSink::new(&mut lines, chunk_size);
    let empty = Vec::new();
    for result in response.get("results").and_then(Value::as_array).unwrap_or(&empty) {
        let id = result.get("statement_id").and_then(Value::as_u64).unwrap_or(0) as usize;
        for one in result.get("series").and_then(Value::as_array).unwrap_or(&empty) {
            let tags = one.get("tags").and_then(Value::as_object).map(|t| {
                t.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect()
            });
            let columns = one.get("columns").and_then(Value::as_array).unwrap_or(&empty);
            let head = SeriesHead {
                name: one.get("name").and_then(Value::as_str).map(str::to_string),
                tags,
                columns: columns.iter().map(|c| c.as_str().unwrap_or_default().to_string()).collect(),
            };
            let values = one.get("values").and_then(Value::as_array).unwrap_or(&empty);
            let rows = values.iter().map(|r| r.as_array().cloned().unwrap_or_default()).collect();
            // A Vec<String> never stops the sink.
            let _ =
                sink.begin_series(id, &head).and_then(|_| sink.rows(rows)).and_then(|_| sink.end_series());
        }
        let _ = sink.end_statement(id, result.get("error").and_then(Value::as_str));
    }
    lines
}

/// Writes a query's results as InfluxDB's chunked JSON lines to `out`.
pub struct ChunkedSink<'o, O: TextOut> {
    out: &'o mut O,
    size: usize,
    statement_id: usize,
    /// The open series and its rows not yet written (at most `size`).
    open: Option<(SeriesHead, Vec<Vec<Value>>)>,
    /// A finished piece whose result's `partial` is not known yet.
    held: Option<Value>,
}

impl<'o, O: TextOut> ChunkedSink<'o, O> {
    /// `chunk_size` 0 counts as the default.
    pub fn new(out: &'o mut O, chunk_size: usize) -> Self {
        let size = if chunk_size == 0 { DEFAULT_CHUNK_SIZE } else { chunk_size };
        ChunkedSink { out, size, statement_id: 0, open: None, held: None }
    }

    /// Makes `piece` the held one, writing the one held before it (more of
    /// its statement follows).
    fn hold(&mut self, piece: Value) -> Result<(), SinkStop> {
        if let Some(before) = self.held.replace(piece) {
            self.write_piece(before, true)?;
        }
        Ok(())
    }

    fn write_piece(&mut self, piece: Value, more: bool) -> Result<(), SinkStop> {
        let mut result = json!({"statement_id": self.statement_id, "series": [piece]});
        if more {
            result["partial"] = Value::Bool(true);
        }
        self.out.write(&line(result))
    }

    /// The open series' buffered rows as a piece (`partial`: more follow).
    fn cut(&mut self, partial: bool) -> Result<(), SinkStop> {
        let Some((head, rows)) = self.open.as_mut() else {
            return Ok(());
        };
        let mut piece = head.to_json(std::mem::take(rows));
        if partial {
            if let Some(object) = piece.as_object_mut() {
                object.insert("partial".to_string(), Value::Bool(true));
            }
        }
        self.hold(piece)
    }
}

impl<O: TextOut> ResultSink for ChunkedSink<'_, O> {
    fn begin_series(&mut self, statement_id: usize, head: &SeriesHead) -> Result<(), SinkStop> {
        self.statement_id = statement_id;
        self.open = Some((head.clone(), Vec::new()));
        Ok(())
    }

    fn rows(&mut self, rows: Vec<Vec<Value>>) -> Result<(), SinkStop> {
        for row in rows {
            if self.open.as_ref().is_some_and(|(_, buffered)| buffered.len() >= self.size) {
                self.cut(true)?;
            }
            if let Some((_, buffered)) = self.open.as_mut() {
                buffered.push(row);
            }
        }
        Ok(())
    }

    fn end_series(&mut self) -> Result<(), SinkStop> {
        self.cut(false)?;
        self.open = None;
        Ok(())
    }

    fn end_statement(&mut self, statement_id: usize, error: Option<&str>) -> Result<(), SinkStop> {
        self.statement_id = statement_id;
        // A series cut short by an error is partial.
        self.cut(true)?;
        self.open = None;
        if let Some(error) = error {
            if let Some(piece) = self.held.take() {
                self.write_piece(piece, true)?;
            }
            return self.out.write(&line(json!({"statement_id": statement_id, "error": error})));
        }
        match self.held.take() {
            Some(piece) => self.write_piece(piece, false),
            None => {
                let mut result = Map::new();
                result.insert("statement_id".to_string(), Value::from(statement_id));
                self.out.write(&line(Value::Object(result)))
            }
        }
    }
}

fn line(result: Value) -> String {
    let mut text = json!({ "results": [result] }).to_string();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(lines: &[String]) -> Vec<Value> {
        lines.iter().map(|l| serde_json::from_str(l.trim_end()).unwrap()).collect()
    }

    #[test]
    fn series_are_cut_into_pieces_marked_partial_until_the_last() {
        let response = json!({"results": [
            {"statement_id": 0, "series": [
                {"name": "cpu", "columns": ["time", "v"], "values": [[1, 1], [2, 2], [3, 3]]},
                {"name": "mem", "columns": ["time", "v"], "values": [[1, 9]]},
            ]},
            {"statement_id": 1, "error": "boom"},
            {"statement_id": 2},
        ]});
        let lines = chunk_lines(&response, 2);
        assert!(lines.iter().all(|l| l.ends_with('\n') && l.matches('\n').count() == 1));
        assert_eq!(
            parse(&lines),
            vec![
                json!({"results": [{"statement_id": 0, "partial": true, "series": [
                    {"name": "cpu", "columns": ["time", "v"], "values": [[1, 1], [2, 2]], "partial": true}]}]}),
                json!({"results": [{"statement_id": 0, "partial": true, "series": [
                    {"name": "cpu", "columns": ["time", "v"], "values": [[3, 3]]}]}]}),
                json!({"results": [{"statement_id": 0, "series": [
                    {"name": "mem", "columns": ["time", "v"], "values": [[1, 9]]}]}]}),
                json!({"results": [{"statement_id": 1, "error": "boom"}]}),
                json!({"results": [{"statement_id": 2}]}),
            ]
        );
    }

    #[test]
    fn a_zero_chunk_size_is_the_default() {
        let values: Vec<Value> = (0..DEFAULT_CHUNK_SIZE + 1).map(|i| json!([i, i])).collect();
        let response = json!({"results": [{"statement_id": 0, "series": [{"name": "m", "columns": ["time", "v"], "values": values}]}]});
        let lines = parse(&chunk_lines(&response, 0));
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0]["results"][0]["series"][0]["values"].as_array().unwrap().len(),
            DEFAULT_CHUNK_SIZE
        );
    }
}
