//! `strata bench ingest`: how fast the series engine ingests a TSBS-like
//! `cpu-only` data set, and what it costs on PMem and SSD, per commit
//! protocol (DESIGN.md sections 5 and 6).
//!
//! - [`generator`]: the deterministic data set (hosts x 10 float fields,
//!   ten tags, 10 s interval, seeded), written straight into byte buffers;
//! - [`dataset`]: those rows cut into request bodies, generated up front or
//!   streamed during the load (`--scale large`);
//! - [`load`]: the [`IngestEndpoint`] trait and the parallel loader (N
//!   connections, batches of B lines, latency per request in an HdrHistogram);
//! - [`http_client`] and [`http_loader`]: any InfluxDB-v1-compatible HTTP
//!   endpoint (`--target URL`), through a small keep-alive HTTP/1.1 client;
//! - [`in_process`]: parse and `SeriesStore::write` without HTTP;
//! - [`local_db`] and [`local_server`]: a fresh Strata database per load, with
//!   its HTTP server on 127.0.0.1:0;
//! - [`peer_run`]: one load into a peer (`--peers`: InfluxDB,
//!   VictoriaMetrics, QuestDB from [`crate::peers`]), quiesce, size, count;
//! - [`queries`]: TSBS-style queries (`--queries`) in InfluxQL and QuestDB
//!   SQL, canonical answers compared across systems, median latencies;
//! - [`warmup`]: the uncounted warm-up load every system's fresh instance
//!   takes into a database of its own before its counted load;
//! - [`checks`]: every load's row count and query answers verified, its
//!   figures collected;
//! - [`rss`]: peak resident memory of each system's server process;
//! - [`scale`] and [`scale_report`]: `--scale quick|default|large`, the
//!   large streamed loads and their figures beside the rounds';
//! - [`peer_ratios`]: each Strata query's latency over the fastest peer's;
//! - [`runner`]: rounds over variants (A B C A B C ...), checkpoint, storage
//!   figures and verification after each load;
//! - [`report`]: metrics, table columns, JSON config and notes.

pub mod checks;
pub mod dataset;
pub mod generator;
pub mod http_client;
pub mod http_loader;
pub mod in_process;
pub mod load;
pub mod local_db;
pub mod local_server;
pub mod peer_ratios;
pub mod peer_run;
pub mod queries;
pub mod report;
pub mod rss;
pub mod runner;
pub mod scale;
pub mod scale_report;
pub mod warmup;

#[cfg(test)]
pub(crate) mod queries_tests;
#[cfg(test)]
mod scale_tests;
#[cfg(test)]
mod tests;

pub use dataset::{Batch, BatchStream, Dataset};
pub use generator::{CpuGenerator, CpuSpec};
pub use http_client::HttpUrl;
pub use http_loader::HttpTarget;
pub use in_process::InProcessTarget;
pub use load::{load, IngestEndpoint, LoadOutcome};
pub use local_db::BenchDirs;
pub use runner::{default_protocols, load_order, rows_per_host_for, run_ingest_bench, IngestOptions};
pub use scale::{Scale, ScaleLoad, UnknownScale};
