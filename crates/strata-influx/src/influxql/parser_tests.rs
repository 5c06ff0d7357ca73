//! Parser tests: every statement form, the canonical text of each, and
//! InfluxDB-style error messages.

use super::ast::*;
use super::error::{ParseError, Pos};
use super::time::NS_PER_M;
use super::{parse_query, QueryError};

pub(super) fn one(text: &str) -> Statement {
    let mut statements = parse_query(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(statements.len(), 1, "{text}");
    let statement = statements.remove(0);
    // Every parsed statement prints to text that parses back to itself.
    let printed = statement.to_string();
    assert_eq!(parse_query(&printed).unwrap(), vec![statement.clone()], "{printed}");
    statement
}

fn select(text: &str) -> SelectStatement {
    match one(text) {
        Statement::Select(s) => s,
        other => panic!("{other:?}"),
    }
}

pub(super) fn error(text: &str) -> String {
    match parse_query(text) {
        Err(QueryError::Parse(e)) => e.to_string(),
        other => panic!("{text}: expected a parse error, got {other:?}"),
    }
}

fn m(name: &str) -> MeasurementRef {
    MeasurementRef { database: None, retention_policy: None, name: name.to_string() }
}

#[test]
fn raw_select_with_where_order_limit_offset() {
    let s = select(
        "select usage_user, \"host\" AS h FROM cpu WHERE host = 'a' ORDER BY time DESC LIMIT 5 OFFSET 2",
    );
    assert_eq!(
        s.fields,
        vec![
            Field { expr: Expr::var("usage_user"), alias: None },
            Field { expr: Expr::var("host"), alias: Some("h".to_string()) },
        ]
    );
    assert_eq!(s.from, m("cpu"));
    assert_eq!(s.condition, Some(Expr::binary(BinaryOp::Eq, Expr::var("host"), Expr::Str("a".to_string()))));
    assert!(s.order_desc);
    assert_eq!((s.limit, s.offset), (Some(5), Some(2)));
    assert_eq!(
        s.to_string(),
        "SELECT usage_user, host AS h FROM cpu WHERE host = 'a' ORDER BY time DESC LIMIT 5 OFFSET 2"
    );
}

#[test]
fn aggregates_group_by_time_offset_tags_and_fill() {
    let s = select(
        "SELECT MEAN(usage) AS m, count(*), last(*) FROM \"db\".\"autogen\".\"cpu\" \
         WHERE time > now() - 1h GROUP BY time(10m, 5m), host, * fill(previous)",
    );
    assert_eq!(s.fields[0].expr, Expr::Call { name: "mean".to_string(), args: vec![Expr::var("usage")] });
    assert_eq!(s.fields[1].expr, Expr::Call { name: "count".to_string(), args: vec![Expr::Wildcard] });
    assert_eq!(
        s.from,
        MeasurementRef {
            database: Some("db".to_string()),
            retention_policy: Some("autogen".to_string()),
            name: "cpu".to_string()
        }
    );
    assert_eq!(
        s.dimensions,
        vec![
            Dimension::Time { interval_ns: 10 * NS_PER_M, offset_ns: 5 * NS_PER_M },
            Dimension::Tag("host".to_string()),
            Dimension::AllTags,
        ]
    );
    assert_eq!(s.fill, Fill::Previous);
    assert_eq!(
        s.to_string(),
        "SELECT mean(usage) AS m, count(*), last(*) FROM db.autogen.cpu WHERE time > now() - 1h \
         GROUP BY time(10m, 5m), host, * fill(previous)"
    );
}

#[test]
fn every_fill_mode_parses() {
    assert_eq!(select("SELECT max(v) FROM m GROUP BY time(1m) fill(none)").fill, Fill::None);
    assert_eq!(select("SELECT max(v) FROM m GROUP BY time(1m) fill(null)").fill, Fill::Null);
    assert_eq!(select("SELECT max(v) FROM m GROUP BY time(1m)").fill, Fill::Null);
    assert_eq!(select("SELECT max(v) FROM m GROUP BY time(1m) fill(-3)").fill, Fill::Integer(-3));
    assert_eq!(select("SELECT max(v) FROM m GROUP BY time(1m) fill(2.5)").fill, Fill::Float(2.5));
    assert_eq!(select("SELECT max(v) FROM m GROUP BY time(1m) fill(linear)").fill, Fill::Linear);
    assert_eq!(
        error("SELECT max(v) FROM m GROUP BY time(1m) fill(cubic)"),
        "found cubic, expected null, none, previous, linear, a number at line 1, char 45"
    );
}

#[test]
fn measurement_forms() {
    assert_eq!(select("SELECT v FROM rp.m").from.retention_policy.as_deref(), Some("rp"));
    let s = select("SELECT v FROM db..m");
    assert_eq!((s.from.database.as_deref(), s.from.retention_policy.as_deref()), (Some("db"), None));
    assert_eq!(s.to_string(), "SELECT v FROM db..m");
    assert_eq!(select("SELECT v FROM \"my db\".\"\".\"cpu load\"").from.name, "cpu load");
}

#[test]
fn where_clauses_with_precedence_regexes_and_literals() {
    let s = select(
        "SELECT v FROM m WHERE (host =~ /^web\\/[0-9]+$/ OR host !~ /db/) AND usage_user > 90 \
         AND time >= '2020-01-01T00:00:00Z' AND time < 1577836800000000000 + 1h30m AND ok = true AND x <> -1.5",
    );
    let c = s.condition.unwrap();
    let printed = c.to_string();
    assert_eq!(
        printed,
        "(host =~ /^web\\/[0-9]+$/ OR host !~ /db/) AND usage_user > 90 AND time >= '2020-01-01T00:00:00Z' \
         AND time < 1577836800000000000 + 90m AND ok = true AND x != -1.5"
    );
    // AND binds tighter than OR; arithmetic tighter than comparison.
    let s = select("SELECT v FROM m WHERE a = 1 OR b = 2 AND c + 1 * 2 > 3");
    let Some(Expr::Binary { op: BinaryOp::Or, rhs, .. }) = s.condition else { panic!("OR at the root") };
    let Expr::Binary { op: BinaryOp::And, rhs: cmp, .. } = *rhs else { panic!("AND under OR") };
    let Expr::Binary { op: BinaryOp::Gt, lhs: sum, .. } = *cmp else { panic!("comparison") };
    assert!(matches!(*sum, Expr::Binary { op: BinaryOp::Add, .. }));
    // ::field and ::tag.
    let s = select("SELECT \"v\"::field FROM m WHERE \"host\"::tag = 'a'");
    assert_eq!(s.fields[0].expr, Expr::VarRef { name: "v".to_string(), kind: Some(RefKind::Field) });
    // Negative numbers and durations, and integer extremes.
    let s = select("SELECT v FROM m WHERE a > -9223372036854775808 AND b < -5m AND c = -(d)");
    assert_eq!(s.to_string(), "SELECT v FROM m WHERE a > -9223372036854775808 AND b < -5m AND c = -(d)");
}

#[test]
fn show_statements() {
    assert_eq!(one("SHOW DATABASES"), Statement::ShowDatabases);
    assert_eq!(
        one("show measurements on db with measurement =~ /cpu.*/ limit 10"),
        Statement::ShowMeasurements(ShowMeasurements {
            on: Some("db".to_string()),
            with_measurement: Some(NameMatch::Regex("cpu.*".to_string())),
            condition: None,
            limit: Some(10),
            offset: None,
        })
    );
    assert_eq!(
        one("SHOW TAG KEYS FROM cpu"),
        Statement::ShowTagKeys(ShowTagKeys {
            on: None,
            from: Some(m("cpu")),
            condition: None,
            limit: None,
            offset: None
        })
    );
    let Statement::ShowTagValues(tv) =
        one("SHOW TAG VALUES FROM cpu WITH KEY = \"host\" WHERE region = 'eu'")
    else {
        panic!()
    };
    assert_eq!(tv.key, NameMatch::Eq("host".to_string()));
    assert!(tv.condition.is_some());
    let Statement::ShowTagValues(tv) = one("SHOW TAG VALUES WITH KEY IN (\"host\", region)") else {
        panic!()
    };
    assert_eq!(tv.key, NameMatch::In(vec!["host".to_string(), "region".to_string()]));
    let Statement::ShowTagValues(tv) = one("SHOW TAG VALUES WITH KEY =~ /ho/") else { panic!() };
    assert_eq!(tv.key, NameMatch::Regex("ho".to_string()));
    assert_eq!(
        one("SHOW FIELD KEYS FROM cpu"),
        Statement::ShowFieldKeys(ShowFieldKeys { on: None, from: Some(m("cpu")), limit: None, offset: None })
    );
    let Statement::ShowSeries(ss) = one("SHOW SERIES FROM cpu WHERE host = 'a' LIMIT 1 OFFSET 1") else {
        panic!()
    };
    assert_eq!((ss.limit, ss.offset), (Some(1), Some(1)));
    assert_eq!(
        one("SHOW RETENTION POLICIES ON db"),
        Statement::ShowRetentionPolicies { on: Some("db".to_string()) }
    );
}

#[test]
fn ddl_and_delete_statements() {
    assert_eq!(
        one("CREATE DATABASE \"my-db\""),
        Statement::CreateDatabase { name: "my-db".to_string(), with: None }
    );
    assert_eq!(one("CREATE DATABASE \"my-db\"").to_string(), "CREATE DATABASE \"my-db\"");
    assert_eq!(one("DROP MEASUREMENT cpu"), Statement::DropMeasurement { name: "cpu".to_string() });
    let Statement::Delete(d) = one("DELETE FROM cpu WHERE host = 'a' AND time < '2020-01-01'") else {
        panic!()
    };
    assert_eq!(d.from, Some(m("cpu")));
    let Statement::Delete(d) = one("DELETE WHERE time < 100") else { panic!() };
    assert!(d.from.is_none() && d.condition.is_some());
    assert!(!one("DELETE FROM cpu").is_read_only());
    assert!(one("SHOW SERIES").is_read_only());
}

#[test]
fn drop_database_and_drop_series() {
    assert_eq!(one("DROP DATABASE \"my-db\""), Statement::DropDatabase { name: "my-db".to_string() });
    assert_eq!(one("drop database db").to_string(), "DROP DATABASE db");
    let Statement::DropSeries(d) = one("DROP SERIES FROM cpu WHERE host = 'a'") else { panic!() };
    assert_eq!(d.from, Some(m("cpu")));
    assert!(d.condition.is_some());
    assert_eq!(
        one("DROP SERIES FROM cpu WHERE host = 'a'").to_string(),
        "DROP SERIES FROM cpu WHERE host = 'a'"
    );
    let Statement::DropSeries(d) = one("DROP SERIES WHERE host = 'a'") else { panic!() };
    assert!(d.from.is_none());
    let Statement::DropSeries(d) = one("DROP SERIES FROM cpu") else { panic!() };
    assert!(d.condition.is_none());
    assert!(!one("DROP SERIES FROM cpu").is_read_only());
    assert!(!one("DROP DATABASE db").is_read_only());
    assert!(error("DROP SERIES").contains("expected FROM, WHERE"), "{}", error("DROP SERIES"));
    assert!(
        error("DROP TABLE x").contains("DATABASE, MEASUREMENT, RETENTION, SERIES"),
        "{}",
        error("DROP TABLE x")
    );
}

#[test]
fn several_statements_and_empty_ones() {
    let statements = parse_query("SHOW DATABASES; ;SELECT v FROM m;").unwrap();
    assert_eq!(statements.len(), 2);
    assert!(parse_query("").unwrap().is_empty());
    assert!(parse_query("  ;  ").unwrap().is_empty());
}

#[test]
fn error_messages_name_what_was_found_and_expected() {
    for (query, message) in [
        ("SELECT", "found EOF, expected identifier, string, number, bool at line 1, char 7"),
        ("SELECT v", "found EOF, expected FROM at line 1, char 9"),
        ("SELECT v FROM", "found EOF, expected identifier at line 1, char 14"),
        (
            "SELEKT v FROM m",
            "found SELEKT, expected SELECT, DELETE, SHOW, CREATE, DROP, ALTER at line 1, char 1",
        ),
        (
            "SHOW STUFF",
            "found STUFF, expected DATABASES, FIELD, MEASUREMENTS, RETENTION, SERIES, TAG at line 1, char 6",
        ),
        ("SHOW TAG VALUES FROM cpu", "found EOF, expected WITH at line 1, char 25"),
        ("SELECT v FROM m WHERE host =~ 'a'", "found 'a', expected regex at line 1, char 31"),
        ("SELECT v FROM m extra", "found extra, expected ; at line 1, char 17"),
        (
            "SELECT v FROM m\nWHERE x = 'open",
            "found unterminated string, expected a quote at line 2, char 11",
        ),
        ("DELETE", "found EOF, expected FROM, WHERE at line 1, char 7"),
        ("SELECT v FROM m LIMIT x", "found x, expected integer at line 1, char 23"),
        ("SELECT v FROM m ORDER BY v", "only ORDER BY time supported at this time at line 1, char 26"),
        ("SELECT v FROM m WHERE d > 1x", "invalid duration 1x at line 1, char 27"),
        (
            "SELECT v FROM m WHERE d > 99999999999999999999",
            "unable to parse integer 99999999999999999999 at line 1, char 27",
        ),
        (
            "SELECT mean(v) FROM m GROUP BY time(1m), time(2m)",
            "multiple time dimensions not allowed at line 1, char 42",
        ),
        ("SELECT select FROM m", "found select, expected identifier, string, number, bool at line 1, char 8"),
    ] {
        assert_eq!(error(query), message, "{query:?}");
    }
    assert!(error("SELECT v FROM m WHERE h =~ /(/").starts_with("invalid regex /(/"));
    assert_eq!(
        QueryError::Parse(ParseError::expected("EOF", &["FROM"], Pos { line: 0, col: 8 })).to_string(),
        "error parsing query: found EOF, expected FROM at line 1, char 9"
    );
}

#[test]
fn top_and_bottom_calls_keep_their_tag_and_count_arguments() {
    let s = select("SELECT top(usage, host, 3) AS t, bottom(\"usage\", 2) FROM cpu");
    assert_eq!(
        s.fields[0],
        Field {
            expr: Expr::Call {
                name: "top".into(),
                args: vec![Expr::var("usage"), Expr::var("host"), Expr::Integer(3)]
            },
            alias: Some("t".into()),
        }
    );
    assert_eq!(
        s.fields[1].expr,
        Expr::Call { name: "bottom".into(), args: vec![Expr::var("usage"), Expr::Integer(2)] }
    );
}

#[test]
fn select_from_several_measurements_and_regexes() {
    let s = select("SELECT v FROM a, db.rp.b, /^c.*/ WHERE x = 1");
    assert_eq!(s.from, m("a"));
    assert_eq!(
        s.from_sources,
        vec![
            FromSource::Measurement(m("a")),
            FromSource::Measurement(MeasurementRef {
                database: Some("db".into()),
                retention_policy: Some("rp".into()),
                name: "b".into()
            }),
            FromSource::Regex("^c.*".into()),
        ]
    );
    let s = select("SELECT v FROM /a\\/b/");
    assert_eq!((s.from.name.as_str(), s.from_sources), ("", vec![FromSource::Regex("a/b".into())]));
    assert!(select("SELECT v FROM a").from_sources.is_empty());
    assert!(error("SELECT v FROM /(/").starts_with("invalid regex /(/"));
}

#[test]
fn select_from_a_subquery() {
    let s = select(
        "SELECT mean(max) FROM (SELECT max(usage) FROM cpu GROUP BY time(1m), host) GROUP BY time(5m)",
    );
    let [FromSource::Subquery(inner)] = s.from_sources.as_slice() else { panic!("{s:?}") };
    assert_eq!(inner.from, m("cpu"));
    assert_eq!(
        inner.dimensions,
        vec![Dimension::Time { interval_ns: NS_PER_M, offset_ns: 0 }, Dimension::Tag("host".into())]
    );
    assert_eq!(s.dimensions, vec![Dimension::Time { interval_ns: 5 * NS_PER_M, offset_ns: 0 }]);
    assert!(error("SELECT v FROM (SHOW DATABASES)").starts_with("found SHOW, expected SELECT"));
    assert!(error("SELECT v FROM (SELECT v FROM m").starts_with("found EOF, expected )"));
}

#[test]
fn tz_is_the_last_clause_of_a_select() {
    let s = select("SELECT mean(v) FROM m GROUP BY time(1d) fill(none) LIMIT 3 SLIMIT 1 tz('Europe/Paris')");
    assert_eq!(s.tz, Some(chrono_tz::Europe::Paris));
    assert_eq!(s.slimit, Some(1));
    assert_eq!(
        s.to_string(),
        "SELECT mean(v) FROM m GROUP BY time(1d) fill(none) LIMIT 3 SLIMIT 1 tz('Europe/Paris')"
    );
    assert_eq!(select("SELECT v FROM m").tz, None);
    assert!(error("SELECT v FROM m tz('Mars/Olympus')").starts_with("unable to find time zone Mars/Olympus"));
    assert!(error("SELECT v FROM m tz(3)").starts_with("found 3, expected string"));
}

#[test]
fn hostile_nesting_is_rejected_not_overflowed() {
    let deep = format!("SELECT v FROM m WHERE {}a{}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(error(&deep).contains("nested too deeply"));
    let chain = format!("SELECT v FROM m WHERE a{}", " + a".repeat(10_000));
    assert!(error(&chain).contains("nested too deeply"));
    let negs = format!("SELECT v FROM m WHERE a = {}b", "- ".repeat(10_000));
    assert!(error(&negs).contains("nested too deeply"));
    // Long but flat enough conditions are fine.
    let many = format!(
        "SELECT v FROM m WHERE a = 0{}",
        (1..400).map(|i| format!(" OR a = {i}")).collect::<String>()
    );
    assert!(parse_query(&many).is_ok());
}
