//! [`HttpTarget`]: any InfluxDB-v1-compatible HTTP endpoint as an
//! [`IngestEndpoint`]: `POST /query` with `q=CREATE DATABASE ...` to prepare,
//! `POST /write?db=...&precision=n` per batch (only 204 counts as
//! acknowledged: any other status fails the load and shows the body), and
//! `POST /query` with [`count_query`] to verify. Nothing here knows which
//! server answers, so peers (InfluxDB, VictoriaMetrics, QuestDB) load the same way.

use anyhow::Context;
use serde_json::Value;

use super::dataset::Batch;
use super::http_client::{form_encode, HttpConnection, HttpResponse, HttpUrl};
use super::load::{count_in_influx_response, count_query, IngestEndpoint};

/// `precision=` of every write: `n` (nanoseconds) is the InfluxDB 1.x name,
/// which InfluxDB, VictoriaMetrics and QuestDB all accept.
pub const WRITE_PRECISION: &str = "n";
const FORM: &str = "application/x-www-form-urlencoded";

/// One endpoint and database.
#[derive(Clone, Debug)]
pub struct HttpTarget {
    pub url: HttpUrl,
    pub db: String,
    write_path: String,
}

impl HttpTarget {
    pub fn new(url: HttpUrl, db: &str) -> HttpTarget {
        let write_path = format!("/write?{}", form_encode(&[("db", db), ("precision", WRITE_PRECISION)]));
        HttpTarget { url, db: db.to_string(), write_path }
    }

    /// Runs one InfluxQL statement through `POST /query`; `Err` unless 200.
    pub fn query(&self, q: &str) -> anyhow::Result<Value> {
        let mut conn = HttpConnection::connect(&self.url)?;
        let body = form_encode(&[("db", &self.db), ("q", q)]);
        let response = conn.post("/query", FORM, body.as_bytes())?;
        let response = expect_status(response, 200, &format!("query {q:?}"))?;
        serde_json::from_slice(&response.body)
            .with_context(|| format!("query {q:?}: the answer is not JSON: {}", response.body_text()))
    }
}

fn expect_status(response: HttpResponse, want: u16, what: &str) -> anyhow::Result<HttpResponse> {
    anyhow::ensure!(
        response.status == want,
        "{what}: HTTP {} (expected {want}): {}",
        response.status,
        response.body_text()
    );
    Ok(response)
}

impl IngestEndpoint for HttpTarget {
    type Connection = HttpConnection;

    fn describe(&self) -> String {
        format!("{} (database {})", self.url, self.db)
    }

    fn prepare(&self) -> anyhow::Result<()> {
        let q = format!("CREATE DATABASE \"{}\"", self.db.replace('\\', "\\\\").replace('"', "\\\""));
        let answer = self.query(&q)?;
        if let Some(e) = answer.get("results").and_then(|r| r.get(0)).and_then(|r| r.get("error")) {
            anyhow::bail!("{q} failed: {e}");
        }
        Ok(())
    }

    fn connect(&self) -> anyhow::Result<HttpConnection> {
        HttpConnection::connect(&self.url)
    }

    fn write_batch(&self, connection: &mut HttpConnection, batch: &Batch) -> anyhow::Result<()> {
        let response = connection.post(&self.write_path, "text/plain; charset=utf-8", &batch.body)?;
        expect_status(response, 204, &format!("write to {}", self.url))?;
        Ok(())
    }

    fn count_rows(&self) -> anyhow::Result<u64> {
        count_in_influx_response(&self.query(&count_query())?)
    }
}
