//! The tag index of one measurement (issue 21, item 3): its tag sets, each
//! with its series per field, and an inverted index from a tag's key and
//! value to the tag sets that hold it (InfluxDB's TSI maps the same to
//! series ids). A query planner answers `host = 'a' OR host = 'b'` from
//! the postings instead of testing every tag set of the measurement.
//!
//! Owns: [`MeasurementTags`] (immutable once built) and
//! [`MeasurementTagsCache`], which keeps one per measurement while the
//! measurement's set of series stays the same
//! ([`crate::SeriesStore::series_version`]), so the index is rebuilt when
//! a series is added or removed, not per query. It lives in DRAM only: the
//! series index it is built from is the durable part (manifest and log).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::model::{FieldType, SeriesId};
use crate::store::SeriesInfo;

/// A tag set position in [`MeasurementTags::tagsets`].
pub type TagSetNo = u32;

/// One tag set and its series.
#[derive(Clone, Debug, PartialEq)]
pub struct TagSetSeries {
    /// Sorted by key; shared with the plans that read it.
    pub tags: Arc<Vec<(String, String)>>,
    /// Field key -> series.
    pub fields: BTreeMap<String, SeriesId>,
}

/// A measurement's tag sets, field types and tag postings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeasurementTags {
    pub field_types: BTreeMap<String, FieldType>,
    pub tag_keys: BTreeSet<String>,
    /// Sorted by tags.
    pub tagsets: Vec<TagSetSeries>,
    /// Tag key -> tag value -> the tag sets holding it, ascending.
    postings: BTreeMap<String, BTreeMap<String, Vec<TagSetNo>>>,
}

impl MeasurementTags {
    /// Builds the index of a measurement from its series (any order).
    pub fn from_series(series: &[SeriesInfo]) -> MeasurementTags {
        let mut field_types = BTreeMap::new();
        let mut by_tags: BTreeMap<&Vec<(String, String)>, BTreeMap<String, SeriesId>> = BTreeMap::new();
        for s in series {
            field_types.entry(s.field.clone()).or_insert(s.field_type);
            by_tags.entry(&s.tags).or_default().insert(s.field.clone(), s.id);
        }
        let mut tag_keys = BTreeSet::new();
        let mut postings: BTreeMap<String, BTreeMap<String, Vec<TagSetNo>>> = BTreeMap::new();
        let mut tagsets = Vec::with_capacity(by_tags.len());
        for (no, (tags, fields)) in by_tags.into_iter().enumerate() {
            let no = TagSetNo::try_from(no).expect("fewer than 2^32 tag sets in a measurement");
            for (k, v) in tags {
                tag_keys.insert(k.clone());
                postings.entry(k.clone()).or_default().entry(v.clone()).or_default().push(no);
            }
            tagsets.push(TagSetSeries { tags: Arc::new(tags.clone()), fields });
        }
        MeasurementTags { field_types, tag_keys, tagsets, postings }
    }

    /// Whether the measurement has no series.
    pub fn is_empty(&self) -> bool {
        self.tagsets.is_empty()
    }

    /// The tag sets whose tag `key` is `value`, ascending (a tag set
    /// without `key` is not among them, whatever `value` is).
    pub fn with_tag(&self, key: &str, value: &str) -> &[TagSetNo] {
        self.postings.get(key).and_then(|values| values.get(value)).map_or(&[], Vec::as_slice)
    }
}

/// A tag index and the series version it was built at.
type Versioned = (u64, Arc<MeasurementTags>);

/// The tag index of each measurement, by the series version it was built at.
#[derive(Default)]
pub struct MeasurementTagsCache {
    /// `(database, measurement)` -> its index.
    by_measurement: Mutex<HashMap<(String, String), Versioned>>,
}

impl MeasurementTagsCache {
    /// The index of `measurement` at series version `version`, built by
    /// `build` unless the cached one is of that version.
    pub fn get_or_build(
        &self,
        db: &str,
        measurement: &str,
        version: u64,
        build: impl FnOnce() -> MeasurementTags,
    ) -> Arc<MeasurementTags> {
        let key = (db.to_string(), measurement.to_string());
        if let Some((at, tags)) = self.by_measurement.lock().get(&key) {
            if *at == version {
                return tags.clone();
            }
        }
        let tags = Arc::new(build());
        self.by_measurement.lock().insert(key, (version, tags.clone()));
        tags
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(id: u64, host: &str, region: Option<&str>, field: &str) -> SeriesInfo {
        let mut tags = vec![("host".to_string(), host.to_string())];
        if let Some(r) = region {
            tags.push(("region".to_string(), r.to_string()));
        }
        SeriesInfo {
            id: SeriesId(id),
            measurement: "cpu".into(),
            tags,
            field: field.into(),
            field_type: FieldType::Float,
        }
    }

    #[test]
    fn postings_list_the_tag_sets_holding_each_tag_value_in_tag_set_order() {
        let tags = MeasurementTags::from_series(&[
            series(4, "b", Some("eu"), "usage"),
            series(1, "a", Some("eu"), "usage"),
            series(2, "a", Some("eu"), "idle"),
            series(3, "c", None, "usage"),
        ]);
        let hosts: Vec<&str> = tags.tagsets.iter().map(|t| t.tags[0].1.as_str()).collect();
        assert_eq!(hosts, ["a", "b", "c"], "tag sets sorted by tags");
        assert_eq!(tags.tagsets[0].fields.len(), 2);
        assert_eq!(tags.tagsets[0].fields["idle"], SeriesId(2));
        assert_eq!(tags.with_tag("host", "b"), &[1]);
        assert_eq!(tags.with_tag("region", "eu"), &[0, 1]);
        assert_eq!(tags.with_tag("region", ""), &[] as &[TagSetNo], "a missing tag is in no posting");
        assert_eq!(tags.with_tag("rack", "x"), &[] as &[TagSetNo]);
        assert_eq!(tags.tag_keys.iter().collect::<Vec<_>>(), ["host", "region"]);
        assert!(!tags.is_empty() && MeasurementTags::from_series(&[]).is_empty());
    }

    #[test]
    fn the_cache_rebuilds_only_when_the_version_changes() {
        let cache = MeasurementTagsCache::default();
        let built = std::cell::Cell::new(0);
        let build = || {
            built.set(built.get() + 1);
            MeasurementTags::from_series(&[series(1, "a", None, "usage")])
        };
        let first = cache.get_or_build("db", "cpu", 7, build);
        let again = cache.get_or_build("db", "cpu", 7, build);
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(built.get(), 1);
        cache.get_or_build("db", "cpu", 8, build);
        cache.get_or_build("db", "mem", 8, build);
        assert_eq!(built.get(), 3, "a new version or another measurement builds");
    }
}
