//! Gap filling (issue 19, "Time-series functions": the equivalent of
//! InfluxQL's `fill()`), as InfluxDB 3 spells it in SQL:
//!
//! ```sql
//! SELECT date_bin_gapfill(INTERVAL '1 minute', time) AS minute,
//!        locf(max(usage_user))        -- fill(previous)
//!        interpolate(avg(usage_idle)) -- fill(linear)
//!        coalesce(min(usage_user), 0) -- fill(0)
//!        count(*)                     -- fill(null)
//! FROM cpu WHERE time >= '...' AND time < '...' GROUP BY 1
//! ```
//!
//! `date_bin_gapfill` groups as `date_bin` does; every bucket of the
//! `WHERE` clause's time range then appears once per group, empty ones with
//! `NULL` aggregates (InfluxQL's default `fill(null)`), or the previous
//! value (`locf`) or the straight line between its neighbours
//! (`interpolate`). A query without it is InfluxQL's `fill(none)`.
//!
//! How: the functions only mark the query ([`udfs`]). An optimizer rule
//! ([`rule`]) turns `date_bin_gapfill` back into `date_bin`, reads the time
//! range from the filters below the aggregate, and puts a [`node::GapFill`]
//! node between the aggregate and the projection that used `locf` or
//! `interpolate`; its physical plan ([`exec`]) adds the missing rows with
//! [`fill`]'s rules. DataFusion has no gap filling of its own, and a join
//! with `generate_series` cannot carry the previous value or interpolate.

pub mod exec;
pub mod fill;
pub mod node;
pub mod rule;
pub mod udfs;

/// Rows one query may gap-fill to (groups x buckets); more is an error that
/// asks for a narrower range or wider buckets (InfluxDB's `max-select-buckets`).
pub const MAX_FILLED_ROWS: u64 = 10_000_000;
