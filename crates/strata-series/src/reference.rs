//! Reference model (being written).
