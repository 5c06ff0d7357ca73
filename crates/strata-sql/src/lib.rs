//! SQL over the PostgreSQL wire protocol (issue 19). Apache DataFusion plans
//! and runs every query; this crate only shows it the engine's tables and
//! speaks the protocol through `datafusion-postgres` (pgwire):
//!
//! - [`catalog`]: a Strata database is a DataFusion catalog (a PostgreSQL
//!   database) whose `public` schema holds its tables of every kind;
//! - [`series_table`] / [`series_scan`]: a measurement as a table
//!   `(time, tag..., field...)`, rows assembled from its series and streamed
//!   in time windows, with time-range and tag-equality filters and `LIMIT`
//!   answered by the engine;
//! - [`stream_table`]: an event stream as a table `(time, attribute...)`,
//!   streamed in chunks of the TAB+-tree's time order;
//! - [`insert`]: `INSERT INTO` as one write request through the commit
//!   protocol (acknowledged means durable);
//! - [`gapfill`]: `date_bin_gapfill` with `locf`/`interpolate` (InfluxQL's
//!   `fill()`), an analyzer rule and an extension node ([`planner`]);
//! - [`stream_aggregate`]: an event stream's temporal aggregates answered
//!   from the TAB+-tree's stored aggregates (an optimizer rule);
//! - [`info_schema`]: `information_schema` with PostgreSQL's type names;
//! - [`sessions`], [`handlers`], [`server`]: one DataFusion session per
//!   database, token authentication, SQLSTATE codes, the listener.
//!
//! No SQL parser or executor is written here: parsing, planning, the
//! `pg_catalog` that psql's `\d` reads and execution are DataFusion's and
//! datafusion-pg-catalog's.

#![forbid(unsafe_code)]

pub mod arrays;
pub mod catalog;
pub mod client_compat;
pub mod error;
pub mod filters;
pub mod functions;
pub mod gapfill;
pub mod handlers;
pub mod info_schema;
pub mod insert;
pub mod literals;
pub mod plan;
pub mod planner;
pub mod series_scan;
pub mod series_table;
pub mod server;
pub mod sessions;
pub mod sqlstate;
pub mod stream_aggregate;
pub mod stream_table;

pub use error::SqlError;
pub use server::{serve, PgServerConfig, DEFAULT_PG_BIND};
