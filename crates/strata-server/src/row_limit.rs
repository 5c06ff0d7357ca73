//! InfluxDB 1.x's `max-row-limit` on a `/query` response (its HTTP
//! handler's truncation, `services/httpd/handler.go`): rows are counted
//! over the response's statements and series in order; the series in which
//! the limit is reached keeps only the rows up to it and carries
//! `"partial": true`, and every later series and statement is dropped.
//! Aggregates are limited by the rows they return, not the points they read.

use serde_json::Value;

/// Truncates `response` (`{"results": [...]}`) to `max_rows` rows (0: no
/// limit). Returns whether anything was cut.
pub fn apply_row_limit(response: &mut Value, max_rows: usize) -> bool {
    if max_rows == 0 {
        return false;
    }
    let Some(results) = response.get_mut("results").and_then(Value::as_array_mut) else {
        return false;
    };
    let mut rows = 0;
    for (r, result) in results.iter_mut().enumerate() {
        if let Some(series) = result.get_mut("series").and_then(Value::as_array_mut) {
            for (s, one) in series.iter_mut().enumerate() {
                let Some(values) = one.get_mut("values").and_then(Value::as_array_mut) else {
                    continue;
                };
                let room = max_rows - rows;
                let cut = values.len() > room;
                if cut {
                    values.truncate(room);
                    one["partial"] = Value::Bool(true);
                }
                rows += values_len(one);
                if rows >= max_rows {
                    let cut_after = s + 1 < series.len();
                    series.truncate(s + 1);
                    let later_results = r + 1 < results.len();
                    results.truncate(r + 1);
                    return cut || cut_after || later_results;
                }
            }
        }
    }
    false
}

fn values_len(series: &Value) -> usize {
    series.get("values").and_then(Value::as_array).map_or(0, Vec::len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn series(name: &str, rows: usize) -> Value {
        let values: Vec<Value> = (0..rows).map(|i| json!([i, i])).collect();
        json!({"name": name, "columns": ["time", "v"], "values": values})
    }

    #[test]
    fn the_series_reaching_the_limit_is_cut_and_partial_and_later_ones_dropped() {
        let mut response = json!({"results": [
            {"statement_id": 0, "series": [series("a", 2), series("b", 5), series("c", 1)]},
            {"statement_id": 1, "series": [series("d", 1)]},
        ]});
        assert!(apply_row_limit(&mut response, 4));
        let results = response["results"].as_array().unwrap();
        assert_eq!(results.len(), 1, "the later statement is dropped");
        let kept = results[0]["series"].as_array().unwrap();
        assert_eq!(kept.len(), 2, "c is dropped");
        assert_eq!(kept[0]["values"].as_array().unwrap().len(), 2);
        assert_eq!(kept[0].get("partial"), None);
        assert_eq!(kept[1]["values"], json!([[0, 0], [1, 1]]));
        assert_eq!(kept[1]["partial"], json!(true));
    }

    #[test]
    fn no_limit_or_a_response_within_it_is_left_alone() {
        let original =
            json!({"results": [{"statement_id": 0, "series": [series("a", 3)]}, {"statement_id": 1}]});
        for limit in [0, 5] {
            let mut response = original.clone();
            assert!(!apply_row_limit(&mut response, limit));
            assert_eq!(response, original, "limit {limit}");
        }
        let mut exact = original.clone();
        assert!(apply_row_limit(&mut exact, 3), "the next statement is dropped at the limit");
        assert_eq!(exact["results"].as_array().unwrap().len(), 1);
        assert_eq!(exact["results"][0]["series"][0].get("partial"), None, "all of a's rows are there");
    }
}
