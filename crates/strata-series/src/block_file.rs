//! Block files (being written).
