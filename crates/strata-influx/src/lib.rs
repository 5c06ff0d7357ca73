//! InfluxDB compatibility layer: line protocol in, InfluxQL queries and
//! InfluxDB 1.x-shaped JSON out. Works over any `strata_series::SeriesStore`.

#![forbid(unsafe_code)]

pub mod influxql;
pub mod line_protocol;
