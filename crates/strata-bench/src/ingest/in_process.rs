//! [`InProcessTarget`]: the same batches without HTTP. Each worker parses a
//! batch with `strata_influx::line_protocol::parse_lines` and writes it with
//! one `SeriesStore::write` call (one transaction, as one HTTP request
//! would be); rows are counted through the InfluxQL executor. The difference
//! to the HTTP figures is what the server costs.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use strata_engine::Tables;
use strata_influx::influxql::{execute, QueryParams};
use strata_influx::line_protocol::{parse_lines, LineLimits, Precision};

use super::dataset::Batch;
use super::load::{count_in_influx_response, count_query, IngestEndpoint};

pub struct InProcessTarget {
    pub store: Arc<dyn Tables>,
    pub db: String,
    limits: LineLimits,
}

impl InProcessTarget {
    pub fn new(store: Arc<dyn Tables>, db: &str) -> InProcessTarget {
        InProcessTarget { store, db: db.to_string(), limits: LineLimits::default() }
    }
}

fn now_ns() -> i64 {
    let ns = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
    i64::try_from(ns).unwrap_or(i64::MAX)
}

impl IngestEndpoint for InProcessTarget {
    type Connection = ();

    fn describe(&self) -> String {
        format!("the store in-process (database {})", self.db)
    }

    fn prepare(&self) -> anyhow::Result<()> {
        self.store.add_database(&self.db).with_context(|| format!("creating database {}", self.db))
    }

    fn connect(&self) -> anyhow::Result<()> {
        Ok(())
    }

    fn write_batch(&self, _connection: &mut (), batch: &Batch) -> anyhow::Result<()> {
        let parsed = parse_lines(&batch.body, Precision::Nanoseconds, now_ns(), &self.limits);
        if let Some(e) = parsed.errors.first() {
            anyhow::bail!("{} of {} lines do not parse; first: {e}", parsed.errors.len(), batch.lines);
        }
        let outcome = self.store.write_request(&self.db, &parsed.points)?;
        if let Some((i, why)) = outcome.rejected.first() {
            anyhow::bail!("{} points rejected; first, line {}: {why}", outcome.rejected.len(), i + 1);
        }
        Ok(())
    }

    fn count_rows(&self) -> anyhow::Result<u64> {
        let params =
            QueryParams { db: Some(self.db.clone()), epoch: None, now_ns: now_ns(), ..Default::default() };
        let answer = execute(&*self.store, &count_query(), &params).map_err(|e| anyhow::anyhow!("{e}"))?;
        count_in_influx_response(&answer)
    }
}
