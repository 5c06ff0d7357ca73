//! What the SQL tests share: a data directory opened on the SSD protocols,
//! a session over database [`DB`], rows as strings, and points of `cpu`.

#![allow(dead_code)] // each test file uses its own part

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::prelude::SessionContext;
use strata_engine::{Config, Db, Tables};
use strata_series::{FieldValue, Point};
use strata_sql::sessions::Sessions;

pub const DB: &str = "metrics";
pub const BASE_NS: i64 = 1_700_000_000_000_000_000;

pub fn open(dir: &std::path::Path) -> Arc<Db> {
    let mut config = Config { data_dir: dir.to_path_buf(), ..Config::default() };
    config.storage.protocol = "serial-ssd".into();
    config.streams.placement = "ssd".into();
    Arc::new(Db::open(&config, &|_, _, _| {}).expect("open the data directory"))
}

pub fn context(db: &Db) -> SessionContext {
    let tables: Arc<dyn Tables> = db.tables().clone();
    tables.add_database(DB).expect("create the database");
    Sessions::new(tables).context(DB).expect("a session")
}

/// A fresh data directory (kept while the first value lives), its engine
/// and a session over database [`DB`].
pub fn fresh() -> (tempfile::TempDir, Arc<Db>, SessionContext) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = open(dir.path());
    let ctx = context(&db);
    (dir, db, ctx)
}

pub async fn batches(ctx: &SessionContext, sql: &str) -> datafusion::error::Result<Vec<RecordBatch>> {
    ctx.sql(sql).await?.collect().await
}

/// The rows of a query as strings, one vector per row.
pub async fn rows(ctx: &SessionContext, sql: &str) -> Vec<Vec<String>> {
    let got = batches(ctx, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = Vec::new();
    for b in &got {
        for r in 0..b.num_rows() {
            out.push(b.columns().iter().map(|c| array_value_to_string(c, r).expect("displayable")).collect());
        }
    }
    out
}

pub fn point(host: &str, ts: i64, fields: Vec<(&str, FieldValue)>) -> Point {
    let mut tags = vec![("host".to_string(), host.to_string())];
    if host == "a" {
        tags.push(("region".to_string(), "eu".to_string()));
    }
    Point {
        measurement: "cpu".into(),
        tags,
        fields: fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        timestamp_ns: ts,
    }
}
