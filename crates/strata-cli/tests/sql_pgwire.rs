//! SQL over the PostgreSQL protocol against the real `strata serve`
//! (issue 19's acceptance): psql reads what line protocol wrote (`count(*)`,
//! `\d cpu`, `\l`), writes with INSERT, is refused without the token when
//! auth is on; and tokio-postgres runs simple and extended (prepared,
//! parameterised) queries. psql is Debian's postgresql-client (.ci/run
//! installs it).

mod common;

use std::process::{Command, Output};

use common::{free_port, http, start_with};

const LINES: &str = "cpu,host=a,region=eu usage=1.5,idle=3i 1700000000000000000\n\
                     cpu,host=b usage=2.5 1700000001000000000\n\
                     cpu,host=a,region=eu usage=1.7 1700000002000000000\n";

struct Server {
    child: common::KillOnDrop,
    http_port: u16,
    sql_port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(token: Option<&str>) -> Server {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let (http_port, sql_port) = (free_port(), free_port());
    let sql_bind = format!("127.0.0.1:{sql_port}");
    let mut extra = vec!["--sql-bind", &sql_bind];
    if let Some(t) = token {
        extra.extend(["--auth-token", t]);
    }
    let child = start_with(&data, "", "serial-ssd", http_port, &extra);
    Server { child, http_port, sql_port, _dir: dir }
}

/// Writes the three lines into the default database (a `/write` naming none).
fn write_lines(server: &Server, token: Option<&str>) {
    let path = match token {
        Some(t) => format!("/write?p={t}&u=strata"),
        None => "/write".to_string(),
    };
    let (status, body) = http(server.http_port, "POST", &path, LINES.as_bytes()).expect("write");
    assert_eq!(status, 204, "write: {body}");
}

fn psql(port: u16, password: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new("psql");
    cmd.args(["-h", "127.0.0.1", "-p", &port.to_string(), "-X", "-v", "ON_ERROR_STOP=1", "-w"]).args(args);
    cmd.env_remove("PGDATABASE").env_remove("PGPASSWORD").env("PGCONNECT_TIMEOUT", "10");
    if let Some(p) = password {
        cmd.env("PGPASSWORD", p);
    }
    cmd.output().expect("run psql (Debian package postgresql-client)")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn psql_reads_line_protocol_writes_describes_tables_and_inserts() {
    let server = serve(None);
    write_lines(&server, None);
    // No -d: psql asks for the user's name, which lands in the default database.
    let count = psql(server.sql_port, None, &["-tA", "-c", "SELECT count(*) FROM cpu"]);
    assert!(count.status.success(), "{}", text(&count));
    assert_eq!(String::from_utf8_lossy(&count.stdout).trim(), "3");

    let described = psql(server.sql_port, None, &["-d", "strata", "-c", "\\d cpu"]);
    let out = text(&described);
    assert!(described.status.success(), "{out}");
    for column in
        ["time", "host", "region", "idle", "usage", "timestamp with time zone", "double precision", "bigint"]
    {
        assert!(out.contains(column), "\\d cpu lacks {column}: {out}");
    }
    let listed = psql(server.sql_port, None, &["-d", "strata", "-c", "\\l"]);
    assert!(text(&listed).contains("strata"), "{}", text(&listed));

    let inserted = psql(
        server.sql_port,
        None,
        &[
            "-d",
            "strata",
            "-c",
            "INSERT INTO cpu (time, host, usage) VALUES ('2023-11-14T22:13:25Z', 'c', 9.5)",
        ],
    );
    assert!(text(&inserted).contains("INSERT 0 1"), "{}", text(&inserted));
    // The INSERT is visible to InfluxQL: it went through the same engine.
    let (status, body) = http(
        server.http_port,
        "GET",
        "/query?db=strata&q=SELECT%20usage%20FROM%20cpu%20WHERE%20host%3D%27c%27",
        b"",
    )
    .expect("query");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("9.5"), "{body}");

    let missing =
        psql(server.sql_port, None, &["-d", "strata", "-v", "VERBOSITY=verbose", "-c", "SELECT * FROM nope"]);
    assert!(!missing.status.success());
    assert!(text(&missing).contains("42P01"), "{}", text(&missing));
    let unknown_db = psql(server.sql_port, None, &["-d", "no_such_db", "-c", "SELECT 1"]);
    assert!(!unknown_db.status.success());
    assert!(text(&unknown_db).contains("does not exist"), "{}", text(&unknown_db));
}

#[test]
fn with_a_token_a_connection_without_it_is_refused() {
    let token = "s3cret-token";
    let server = serve(Some(token));
    write_lines(&server, Some(token));
    let refused = psql(server.sql_port, None, &["-d", "strata", "-c", "SELECT count(*) FROM cpu"]);
    assert!(!refused.status.success(), "no password: {}", text(&refused));
    let wrong = psql(server.sql_port, Some("wrong"), &["-d", "strata", "-c", "SELECT count(*) FROM cpu"]);
    assert!(!wrong.status.success(), "a wrong password: {}", text(&wrong));
    assert!(text(&wrong).to_lowercase().contains("password"), "{}", text(&wrong));
    let allowed =
        psql(server.sql_port, Some(token), &["-d", "strata", "-tA", "-c", "SELECT count(*) FROM cpu"]);
    assert!(allowed.status.success(), "{}", text(&allowed));
    assert_eq!(String::from_utf8_lossy(&allowed.stdout).trim(), "3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_postgres_runs_simple_and_prepared_queries() {
    let (_server, client) = served_and_connected("strata").await;

    let simple = client.simple_query("SELECT count(*) FROM cpu").await.expect("simple query");
    let counts: Vec<&str> = simple
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0),
            _ => None,
        })
        .collect();
    assert_eq!(counts, ["3"]);

    let statement = client
        .prepare("SELECT CAST(host AS TEXT) AS host, usage FROM cpu WHERE host = $1 ORDER BY time")
        .await
        .expect("prepare");
    let rows = client.query(&statement, &[&"a"]).await.expect("prepared query");
    let got: Vec<(String, f64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, [("a".to_string(), 1.5), ("a".to_string(), 1.7)]);

    let typed = client.query_one("SELECT max(idle), sum(usage) FROM cpu", &[]).await.expect("aggregate");
    let (idle, usage): (i64, f64) = (typed.get(0), typed.get(1));
    assert_eq!((idle, (usage * 10.0).round()), (3, 57.0));
}

/// A server holding [`LINES`] and a tokio-postgres client of it as `user`.
async fn served_and_connected(user: &str) -> (Server, tokio_postgres::Client) {
    let server = serve(None);
    write_lines(&server, None);
    let config = format!("host=127.0.0.1 port={} user={user} dbname=strata", server.sql_port);
    let (client, connection) =
        tokio_postgres::connect(&config, tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    (server, client)
}

/// The rows of a simple query, as text (NULL as `None`).
async fn simple_rows(client: &tokio_postgres::Client, sql: &str) -> Vec<Vec<Option<String>>> {
    let messages = client.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    messages
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect()
}

/// The queries Grafana's PostgreSQL data source sends (grafana-postgresql-
/// datasource: the connection test, the query builder's table and column
/// lists, a time-series panel with `$__timeGroupAlias(time, 1m)` and
/// `$__timeFilter(time)` expanded as Grafana expands them, a table panel and
/// a variable), checked against their answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grafana_postgres_data_source_queries_replay() {
    let (_server, client) = served_and_connected("grafana").await;
    let cell = |s: &str| Some(s.to_string());

    assert_eq!(simple_rows(&client, "SELECT 1").await, [[cell("1")]]);

    let tables = simple_rows(
        &client,
        r#"SELECT quote_ident(table_name) as table_name FROM information_schema.tables
WHERE quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog', '_timescaledb_cache', '_timescaledb_catalog',
  '_timescaledb_internal', '_timescaledb_config', 'timescaledb_information', 'timescaledb_experimental')
  AND table_type = 'BASE TABLE' AND quote_ident(table_schema) IN (
    SELECT
      CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
    FROM
      generate_series(
        array_lower(string_to_array(current_setting('search_path'),','),1),
        array_upper(string_to_array(current_setting('search_path'),','),1)
      ) as i,
      string_to_array(current_setting('search_path'),',') s
    )"#,
    )
    .await;
    assert_eq!(tables, [[cell("cpu")]]);

    let columns = simple_rows(
        &client,
        r#"SELECT quote_ident(column_name) AS "column", data_type AS "type" FROM information_schema.columns WHERE quote_ident(table_name) = 'cpu'"#,
    )
    .await;
    let names: Vec<&str> = columns.iter().map(|r| r[0].as_deref().unwrap_or_default()).collect();
    assert_eq!(names, ["time", "host", "region", "idle", "usage"]);
    let types: Vec<&str> = columns.iter().map(|r| r[1].as_deref().unwrap_or_default()).collect();
    assert_eq!(types, ["timestamp with time zone", "text", "text", "bigint", "double precision"]);

    let series = simple_rows(
        &client,
        r#"SELECT floor(extract(epoch from time)/60)*60 AS "time", avg(usage) AS "usage" FROM cpu
WHERE time BETWEEN '2023-11-14T22:00:00Z' AND '2023-11-14T23:00:00Z' GROUP BY 1 ORDER BY 1"#,
    )
    .await;
    assert_eq!(series.len(), 1, "{series:?}");
    assert_eq!(series[0][0].as_deref().map(|t| t.parse::<f64>().unwrap()), Some(1_699_999_980.0));
    let mean: f64 = series[0][1].as_deref().unwrap().parse().unwrap();
    assert!((mean - 1.9).abs() < 1e-9, "{series:?}");

    let table = simple_rows(
        &client,
        r#"SELECT time AS "time", host, usage FROM cpu WHERE time BETWEEN '2023-11-14T22:00:00Z' AND '2023-11-14T23:00:00Z' ORDER BY 1 DESC LIMIT 2"#,
    )
    .await;
    let hosts: Vec<_> = table.iter().map(|r| (r[1].clone(), r[2].clone())).collect();
    assert_eq!(hosts, [(cell("a"), cell("1.7")), (cell("b"), cell("2.5"))]);

    let variable = simple_rows(&client, "SELECT DISTINCT host FROM cpu ORDER BY 1").await;
    assert_eq!(variable, [[cell("a")], [cell("b")]]);
}
