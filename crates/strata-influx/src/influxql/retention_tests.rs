//! Retention policy statements: every parsed form (and its canonical text,
//! checked by `one`), parse errors, and the executor's SHOW output and
//! InfluxDB 1.8 errors over the reference store.

use serde_json::{json, Value};
use strata_series::reference::MemStore;
use strata_series::retention::PolicySpec;

use super::ast::Statement;
use super::exec_test_support::{run_on, store};
use super::parser_tests::{error, one};
use super::time::{NS_PER_D, NS_PER_H, NS_PER_M};

fn spec(duration_ns: Option<i64>, replication: Option<u32>, shard: Option<i64>, default: bool) -> PolicySpec {
    PolicySpec { duration_ns, replication, shard_duration_ns: shard, make_default: default }
}

#[test]
fn create_retention_policy_forms() {
    assert_eq!(
        one("CREATE RETENTION POLICY rp ON db DURATION 1h REPLICATION 1"),
        Statement::CreateRetentionPolicy {
            name: "rp".into(),
            on: "db".into(),
            spec: spec(Some(NS_PER_H), Some(1), None, false)
        }
    );
    assert_eq!(
        one("create retention policy \"rp 2\" on db duration INF replication 3 shard duration 30m default"),
        Statement::CreateRetentionPolicy {
            name: "rp 2".into(),
            on: "db".into(),
            spec: spec(Some(0), Some(3), Some(30 * NS_PER_M), true)
        }
    );
}

#[test]
fn alter_drop_and_create_database_with_forms() {
    assert_eq!(
        one("ALTER RETENTION POLICY rp ON db DEFAULT SHARD DURATION 2d REPLICATION 2 DURATION 3d"),
        Statement::AlterRetentionPolicy {
            name: "rp".into(),
            on: "db".into(),
            spec: spec(Some(3 * NS_PER_D), Some(2), Some(2 * NS_PER_D), true)
        }
    );
    assert_eq!(
        one("DROP RETENTION POLICY rp ON db"),
        Statement::DropRetentionPolicy { name: "rp".into(), on: "db".into() }
    );
    assert_eq!(
        one("CREATE DATABASE db WITH DURATION 1d REPLICATION 1 SHARD DURATION 1h NAME day"),
        Statement::CreateDatabase {
            name: "db".into(),
            with: Some((spec(Some(NS_PER_D), Some(1), Some(NS_PER_H), false), Some("day".into())))
        }
    );
    assert_eq!(
        one("CREATE DATABASE db WITH NAME rp"),
        Statement::CreateDatabase {
            name: "db".into(),
            with: Some((PolicySpec::default(), Some("rp".into())))
        }
    );
    assert!(!one("DROP RETENTION POLICY rp ON db").is_read_only());
}

#[test]
fn retention_policy_parse_errors_are_influxdbs() {
    for (text, message) in [
        (
            "CREATE RETENTION POLICY rp ON db REPLICATION 1",
            "found REPLICATION, expected DURATION at line 1, char 34",
        ),
        ("CREATE RETENTION POLICY rp DURATION 1h", "found DURATION, expected ON at line 1, char 28"),
        (
            "CREATE RETENTION POLICY rp ON db DURATION 1h",
            "found EOF, expected REPLICATION at line 1, char 45",
        ),
        (
            "CREATE RETENTION POLICY rp ON db DURATION 1h REPLICATION 0",
            "invalid value 0: must be 1 <= n <= 2147483647 at line 1, char 58",
        ),
        (
            "CREATE RETENTION POLICY rp ON db DURATION x REPLICATION 1",
            "found x, expected duration at line 1, char 43",
        ),
        (
            "ALTER RETENTION POLICY rp ON db",
            "found EOF, expected DURATION, REPLICATION, SHARD, DEFAULT at line 1, char 32",
        ),
        (
            "CREATE DATABASE db WITH",
            "found EOF, expected DURATION, REPLICATION, SHARD, NAME at line 1, char 24",
        ),
        ("DROP RETENTION POLICY rp", "found EOF, expected ON at line 1, char 25"),
        ("CREATE USER x", "found USER, expected DATABASE, RETENTION at line 1, char 8"),
    ] {
        assert_eq!(error(text), message, "{text}");
    }
}

fn show(store: &MemStore) -> Value {
    run_on(store, "SHOW RETENTION POLICIES ON db")["results"][0]["series"][0]["values"].clone()
}

fn error_on(store: &MemStore, q: &str) -> String {
    let body = run_on(store, q);
    body["results"][0]["error"].as_str().unwrap_or_else(|| panic!("{q}: no error in {body}")).to_string()
}

#[test]
fn show_lists_policies_in_creation_order_with_go_durations() {
    let store = store();
    assert_eq!(show(&store), json!([["autogen", "0s", "168h0m0s", 1, true]]));
    run_on(&store, "CREATE RETENTION POLICY week ON db DURATION 1w REPLICATION 1 DEFAULT");
    run_on(&store, "CREATE RETENTION POLICY two ON db DURATION 2d REPLICATION 2 SHARD DURATION 30m");
    assert_eq!(
        show(&store),
        json!([
            ["autogen", "0s", "168h0m0s", 1, false],
            ["week", "168h0m0s", "24h0m0s", 1, true],
            ["two", "48h0m0s", "1h0m0s", 2, false]
        ])
    );
    run_on(&store, "ALTER RETENTION POLICY autogen ON db DURATION 90m SHARD DURATION 1h DEFAULT");
    run_on(&store, "DROP RETENTION POLICY week ON db");
    assert_eq!(
        show(&store),
        json!([["autogen", "1h30m0s", "1h0m0s", 1, true], ["two", "48h0m0s", "1h0m0s", 2, false]])
    );
    let columns = &run_on(&store, "SHOW RETENTION POLICIES ON db")["results"][0]["series"][0]["columns"];
    assert_eq!(columns, &json!(["name", "duration", "shardGroupDuration", "replicaN", "default"]));
}

#[test]
fn policy_errors_are_influxdbs() {
    let store = store();
    run_on(&store, "CREATE RETENTION POLICY week ON db DURATION 1w REPLICATION 1");
    let same = run_on(&store, "CREATE RETENTION POLICY week ON db DURATION 168h REPLICATION 1");
    assert!(same["results"][0].get("error").is_none(), "the same settings again are no error: {same}");
    for (q, message) in [
        ("CREATE RETENTION POLICY week ON db DURATION 2w REPLICATION 1", "retention policy already exists"),
        (
            "CREATE RETENTION POLICY short ON db DURATION 59m REPLICATION 1",
            "retention policy duration must be at least 1h0m0s",
        ),
        (
            "ALTER RETENTION POLICY week ON db DURATION 30m",
            "retention policy duration must be at least 1h0m0s",
        ),
        ("ALTER RETENTION POLICY nope ON db DEFAULT", "retention policy not found"),
        (
            "ALTER RETENTION POLICY week ON db SHARD DURATION 2w",
            "retention policy duration must be greater than the shard duration",
        ),
        ("CREATE RETENTION POLICY rp ON nope DURATION 1h REPLICATION 1", "database not found: nope"),
        ("SHOW RETENTION POLICIES ON nope", "database not found: nope"),
        (
            "CREATE DATABASE db WITH DURATION 2h NAME autogen",
            "retention policy conflicts with an existing policy",
        ),
    ] {
        assert_eq!(error_on(&store, q), message, "{q}");
    }
    let dropped = run_on(&store, "DROP RETENTION POLICY nope ON db");
    assert!(dropped["results"][0].get("error").is_none(), "dropping a missing policy is no error: {dropped}");
}

#[test]
fn create_database_with_makes_its_policy_the_only_default() {
    let store = MemStore::new();
    run_on(&store, "CREATE DATABASE db WITH DURATION 3d REPLICATION 1 NAME three");
    assert_eq!(show(&store), json!([["three", "72h0m0s", "24h0m0s", 1, true]]));
    let again = run_on(&store, "CREATE DATABASE db WITH DURATION 3d NAME three");
    assert!(again["results"][0].get("error").is_none(), "a matching spec is no error: {again}");
    run_on(&store, "DROP DATABASE db");
    run_on(&store, "CREATE DATABASE db");
    assert_eq!(
        show(&store),
        json!([["autogen", "0s", "168h0m0s", 1, true]]),
        "a recreated database starts afresh"
    );
}
