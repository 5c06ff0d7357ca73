//! InfluxQL (being written).
