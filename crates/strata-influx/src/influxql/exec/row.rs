//! [`Row`]: one joined row of a SELECT, the values of every field slot of
//! one tag set at one time. Built by `select` (series) and `stream` (event
//! streams), consumed by `raw` and `aggregate`, so those depend on this
//! file and not on each other.

use strata_series::FieldValue;

use super::condition::{tag_value, RowView};

/// One joined row: the values of every field slot of one tag set at one time.
#[derive(Debug)]
pub struct Row<'a> {
    pub time_ns: i64,
    pub tags: &'a [(String, String)],
    pub values: Vec<Option<FieldValue>>,
}

impl RowView for Row<'_> {
    fn tag(&self, key: &str) -> &str {
        tag_value(self.tags, key)
    }

    fn field(&self, slot: usize) -> Option<Option<&FieldValue>> {
        Some(self.values.get(slot).and_then(Option::as_ref))
    }
}
