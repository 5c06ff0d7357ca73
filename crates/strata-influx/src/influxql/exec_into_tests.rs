//! Executor tests of `SELECT ... INTO` (issue 15 item 3). Every expected
//! answer but the last test's is also Debian's InfluxDB 1.6.7's on the same
//! points (written at 0s..80s after T0, queried with epoch=s): the
//! `result`/`written` row, the downsampled series with their GROUP BY tags,
//! and a raw copy whose tag becomes a field.

use serde_json::{json, Value};
use strata_series::reference::MemStore;

use super::exec_test_support::*;
use super::{execute, QueryParams};

const RANGE: &str = "time >= '2020-01-01T00:00:00Z' AND time < '2020-01-01T00:02:00Z'";
const T0_S: i64 = 1_577_836_800;

fn answer(store: &MemStore, q: &str) -> Value {
    let params = QueryParams { epoch: Some("s".into()), ..params(90) };
    let body = execute(store, q, &params).unwrap_or_else(|e| panic!("{q}: {e}"));
    body["results"][0].clone()
}

#[test]
fn select_into_downsamples_keeping_the_group_by_tags() {
    let store = cpu_two_hosts_store();
    let q = format!("SELECT max(usage) INTO cpu_max FROM cpu WHERE {RANGE} GROUP BY time(30s), host");
    let written = answer(&store, &q);
    assert_eq!(
        written["series"],
        json!([{"name": "result", "columns": ["time", "written"], "values": [[0, 4]]}]),
        "{written}"
    );
    let read = answer(&store, "SELECT * FROM cpu_max GROUP BY *");
    assert_eq!(
        read["series"],
        json!([
            {"name": "cpu_max", "tags": {"host": "a"}, "columns": ["time", "max"],
             "values": [[T0_S, 9.0], [T0_S + 60, 7.0]]},
            {"name": "cpu_max", "tags": {"host": "b"}, "columns": ["time", "max"],
             "values": [[T0_S, 9.0], [T0_S + 60, 8.0]]}
        ]),
        "{read}"
    );
}

#[test]
fn select_star_into_turns_ungrouped_tags_into_fields_and_names_another_database() {
    let store = cpu_two_hosts_store();
    strata_series::SeriesStore::create_database(&store, "archive").unwrap();
    let written = answer(&store, &format!("SELECT * INTO archive..cpu_copy FROM cpu WHERE {RANGE}"));
    assert_eq!(written["series"][0]["values"], json!([[0, 8]]), "{written}");
    let read = answer(&store, "SELECT * FROM archive..cpu_copy");
    assert_eq!(read["series"][0]["columns"], json!(["time", "host", "usage"]), "{read}");
    assert_eq!(read["series"][0]["values"][0], json!([T0_S, "a", 5.0]), "{read}");
    assert_eq!(read["series"][0]["values"].as_array().map(Vec::len), Some(8), "{read}");
    let tags = answer(&store, "SHOW TAG KEYS ON archive FROM cpu_copy");
    assert!(tags.get("series").is_none(), "host is a field of the copy, not a tag: {tags}");
}

/// Ours, not InfluxDB's: 1.6.7 writes this point, because at time 0 it
/// lands in another shard, and field types are per shard there; Strata
/// keeps one type per measurement's field (as within one InfluxDB shard,
/// where a conflicting write is a `partial write` error).
#[test]
fn select_into_a_conflicting_field_type_is_a_partial_write_error() {
    let store = cpu_two_hosts_store();
    let first = answer(&store, "SELECT count(usage) AS usage INTO cpu FROM cpu WHERE time >= 0");
    let message = first["error"].as_str().unwrap_or_else(|| panic!("no error: {first}"));
    assert!(message.starts_with("partial write:") && message.contains("dropped=1"), "{message}");
    let round_trip =
        super::parser::parse_statements(&format!("SELECT max(usage) INTO db.rp.m FROM cpu WHERE {RANGE}"))
            .expect("parses");
    assert!(round_trip[0].to_string().contains(" INTO db.rp.m FROM "), "{}", round_trip[0]);
}

/// `:MEASUREMENT` writes each source measurement into its own name (the
/// downsampling pattern of continuous queries), here into another database.
#[test]
fn select_into_measurement_backreference_keeps_each_source_name() {
    let store = cpu_two_hosts_store();
    strata_series::SeriesStore::create_database(&store, "archive").unwrap();
    let q = format!(
        "SELECT mean(*) INTO archive.autogen.:MEASUREMENT FROM /.*/ WHERE {RANGE} GROUP BY time(60s), *"
    );
    let written = answer(&store, &q);
    assert_eq!(written["series"][0]["values"], json!([[0, 4]]), "{written}");
    let read = answer(&store, "SELECT * FROM archive..cpu WHERE host = 'b'");
    assert_eq!(read["series"][0]["columns"], json!(["time", "host", "mean_usage"]), "{read}");
    assert_eq!(read["series"][0]["values"], json!([[T0_S, "b", 5.0], [T0_S + 60, "b", 5.0]]), "{read}");
    let parsed = super::parser::parse_statements(&q).expect("parses");
    assert!(parsed[0].to_string().contains(" INTO archive.autogen.:MEASUREMENT FROM "), "{}", parsed[0]);
}
