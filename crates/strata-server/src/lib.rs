//! HTTP server (being written).
