//! Benchmarks (DESIGN.md section 6): programs that measure designs side by
//! side on one machine, print a human-readable table and write JSON in the one
//! shape every Strata benchmark shares. Never timed tests.
//!
//! Owns: the shared report type ([`report::BenchReport`]), machine detection
//! ([`machine`]), measurement helpers (timed loops, medians: [`measure`]),
//! the emulated PMem region every benchmark uses ([`emulated_region`]), the
//! SVG drawing of their figures ([`svg`]) and the benchmarks themselves:
//! - [`persist`]: what a persist costs on this machine's media (memcpy limit,
//!   flush+fence per chunk, the serial PMem log, the group-committed SSD log);
//! - [`peers`]: InfluxDB, VictoriaMetrics and QuestDB installed, started on
//!   loopback and stopped, for `bench ingest --peers`;
//! - [`logging`]: Strata's log devices against RocksDB (`db_bench --sync=1`)
//!   and SQLite in WAL mode, one durable commit per record, on ext4 and tmpfs;
//! - [`ingest`]: TSBS-like cpu-only ingest over HTTP (or in-process, or into
//!   any InfluxDB-v1-compatible endpoint) per commit protocol: rows/s,
//!   acknowledgement latency, bytes per point on SSD and PMem;
//! - [`ycsb_ts`]: YCSB-TS transactions per commit protocol (DecLog, Fig. 10-12);
//! - [`events`]: the event store's micro-benchmarks (ChronicleDB, Fig. 5-9);
//! - [`oltp`]: transactional tables per logging scheme (Taurus; YCSB and TPC-C).

#![forbid(unsafe_code)]

pub mod emulated_region;
pub mod events;
pub mod fir_recovery;
pub mod ingest;
pub mod logging;
pub mod machine;
pub mod measure;
pub mod oltp;
pub mod peers;
pub mod persist;
pub mod report;
pub mod settle;
pub mod stream_queries;
pub mod svg;
pub mod ycsb_ts;

pub use ingest::{run_ingest_bench, IngestOptions};
pub use logging::{run_logging_bench, LoggingOptions};
pub use machine::Machine;
pub use peers::PeerKind;
pub use persist::{run_persist_bench, PersistBenchOptions, PersistBudget};
pub use report::BenchReport;
