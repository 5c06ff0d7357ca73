//! The `/query` limits and shapes of docs/http-api.md: InfluxDB's `max-row-limit`
//! (rows returned, off by default; the cut series carries "partial") and
//! the per-query memory bound (an error inside the statement's result), and
//! `chunked=true` (JSON lines of at most `chunk_size` rows).

mod common;

use common::{encode, TestServer};
use serde_json::json;
use strata_server::ServerConfig;

fn load(server: &TestServer) {
    let body: String = (0..10).map(|i| format!("cpu,host=h{} v={i} {i}\n", i % 2)).collect();
    assert_eq!(server.post("/write?db=db", &[], body.as_bytes()).status, 204);
}

fn query(server: &TestServer, q: &str) -> serde_json::Value {
    let response = server.get(&format!("/query?db=db&epoch=ns&q={}", encode(q)), &[]);
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()
}

#[test]
fn max_row_limit_cuts_rows_across_series_and_marks_the_cut_one_partial() {
    let server = TestServer::start(ServerConfig { max_row_limit: 3, ..Default::default() });
    load(&server);
    let body = query(&server, "SELECT v FROM cpu GROUP BY host; SELECT count(v) FROM cpu");
    let results = body["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "the second statement is past the limit: {body}");
    let series = results[0]["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "host h1 is past the limit: {body}");
    assert_eq!(series[0]["tags"], json!({"host": "h0"}));
    assert_eq!(series[0]["values"], json!([[0, 0.0], [2, 2.0], [4, 4.0]]));
    assert_eq!(series[0]["partial"], json!(true));
    // An aggregate over all ten points returns one row: not limited.
    let count = query(&server, "SELECT count(v) FROM cpu");
    assert_eq!(count["results"][0]["series"][0]["values"], json!([[0, 10]]));
    assert_eq!(count["results"][0]["series"][0].get("partial"), None);
}

#[test]
fn without_a_row_limit_every_row_is_returned() {
    let server = TestServer::start(ServerConfig::default());
    load(&server);
    let body = query(&server, "SELECT v FROM cpu");
    assert_eq!(body["results"][0]["series"][0]["values"].as_array().unwrap().len(), 10);
}

#[test]
fn a_select_over_the_memory_bound_fails_in_its_result_and_the_server_goes_on() {
    // 160 bytes per point read (the executor's estimate): 5 points fit, 10 do not.
    let server = TestServer::start(ServerConfig { max_query_memory_bytes: 5 * 160, ..Default::default() });
    load(&server);
    let body = query(&server, "SELECT v FROM cpu");
    let error = body["results"][0]["error"].as_str().unwrap_or_default().to_string();
    assert!(error.contains("max_query_memory_bytes") && error.contains("10 points read"), "{body}");
    let narrow = query(&server, "SELECT v FROM cpu WHERE time < 5");
    assert_eq!(narrow["results"][0]["series"][0]["values"].as_array().unwrap().len(), 5, "{narrow}");
}

#[test]
fn chunked_responses_are_json_lines_of_at_most_chunk_size_rows() {
    let server = TestServer::start(ServerConfig { max_row_limit: 2, ..Default::default() });
    load(&server);
    let q = encode("SELECT v FROM cpu");
    let response = server.get(&format!("/query?db=db&epoch=ns&chunked=true&chunk_size=4&q={q}"), &[]);
    assert_eq!(response.status, 200, "{}", response.text());
    let lines: Vec<serde_json::Value> =
        response.text().lines().map(|l| serde_json::from_str(l).expect("one JSON object per line")).collect();
    let sizes: Vec<usize> =
        lines.iter().map(|l| l["results"][0]["series"][0]["values"].as_array().unwrap().len()).collect();
    assert_eq!(sizes, vec![4, 4, 2], "chunked responses are not cut by max_row_limit, as in InfluxDB");
    let partial: Vec<bool> =
        lines.iter().map(|l| l["results"][0]["series"][0]["partial"] == json!(true)).collect();
    assert_eq!(partial, vec![true, true, false]);
    let bad = server.get(&format!("/query?db=db&chunked=true&chunk_size=many&q={q}"), &[]);
    assert_eq!(bad.status, 400);
    assert!(bad.error().contains("chunk_size"), "{}", bad.error());
}
