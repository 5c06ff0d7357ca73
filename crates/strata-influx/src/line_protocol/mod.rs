//! Line protocol (being written).
