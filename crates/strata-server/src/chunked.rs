//! `/query?chunked=true&chunk_size=N` (InfluxDB 1.x, default N = 10000):
//! the response as a sequence of JSON objects, one per line, each
//! `{"results":[{"statement_id":K,"series":[ONE SERIES PIECE]}]}` of at most
//! N rows. A piece followed by more of the same series carries
//! `"partial": true`, and so does its result while more of the statement
//! follows, as InfluxDB's chunked emitter writes them; a statement without
//! series (or with an error) is one line. Clients (the influx CLI,
//! influxdb-python's `chunked=True`) read the lines and join the pieces.
//!
//! The executor still builds a statement's whole result before it is cut
//! (issue 15 item 4: bounding a query's memory by streaming is not built).

use serde_json::{json, Map, Value};

/// InfluxDB's `chunk_size` default.
pub const DEFAULT_CHUNK_SIZE: usize = 10_000;

/// The lines (each ending in `\n`) of `response` (`{"results": [...]}`) cut
/// into pieces of at most `chunk_size` rows (0 counts as the default).
pub fn chunk_lines(response: &Value, chunk_size: usize) -> Vec<String> {
    let size = if chunk_size == 0 { DEFAULT_CHUNK_SIZE } else { chunk_size };
    let mut lines = Vec::new();
    let empty = Vec::new();
    for result in response.get("results").and_then(Value::as_array).unwrap_or(&empty) {
        let series = result.get("series").and_then(Value::as_array);
        let Some(series) = series.filter(|s| !s.is_empty()) else {
            lines.push(line(result.clone()));
            continue;
        };
        let mut pieces: Vec<Value> = Vec::new();
        for one in series {
            let values = one.get("values").and_then(Value::as_array).cloned().unwrap_or_default();
            if values.is_empty() {
                pieces.push(one.clone());
                continue;
            }
            let count = values.len().div_ceil(size);
            for (i, chunk) in values.chunks(size).enumerate() {
                let mut piece: Map<String, Value> = one.as_object().cloned().unwrap_or_default();
                piece.insert("values".to_string(), Value::Array(chunk.to_vec()));
                if i + 1 < count {
                    piece.insert("partial".to_string(), Value::Bool(true));
                }
                pieces.push(Value::Object(piece));
            }
        }
        let last = pieces.len() - 1;
        for (i, piece) in pieces.into_iter().enumerate() {
            let mut out = json!({"statement_id": result["statement_id"].clone(), "series": [piece]});
            if i < last {
                out["partial"] = Value::Bool(true);
            }
            lines.push(line(out));
        }
    }
    lines
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
