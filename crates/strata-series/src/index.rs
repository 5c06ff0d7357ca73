//! The series index: databases, and per database the map from series key
//! (measurement + sorted tags + field key) to series id, and each
//! measurement's established field types. Persisted in the manifest at each
//! checkpoint (`docs/format/manifest.md`) and, between checkpoints, by the
//! series definitions inside WAL records (`docs/format/series-wal.md`).

use std::collections::BTreeMap;

// foldhash, not SipHash: hashing each written point's tag set was a tenth
// of the write path's planning (its seed is still random per map).
use foldhash::HashMap;

use crate::model::{FieldType, SeriesId, SeriesKey};
use crate::store::SeriesInfo;

/// Where a series belongs and what it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesEntry {
    pub db: String,
    pub key: SeriesKey,
    pub field_type: FieldType,
}

/// Tag set -> field -> id. Hash maps keyed by owned values can be probed
/// with borrowed ones (`&[(String, String)]`, `&str`), so the write path
/// looks series up without allocating.
#[derive(Default)]
struct MeasurementIndex {
    tagsets: HashMap<Vec<(String, String)>, BTreeMap<String, SeriesId>>,
    field_types: BTreeMap<String, FieldType>,
    /// The index's generation at this measurement's last series change.
    version: u64,
}

#[derive(Default)]
struct DbIndex {
    measurements: BTreeMap<String, MeasurementIndex>,
    series_count: u64,
}

/// See [`SeriesIndex::point_view`].
pub struct PointView<'a> {
    field_types: Option<&'a BTreeMap<String, FieldType>>,
    fields: Option<&'a BTreeMap<String, SeriesId>>,
}

impl PointView<'_> {
    /// The measurement's established type of `field`.
    pub fn field_type(&self, field: &str) -> Option<FieldType> {
        self.field_types?.get(field).copied()
    }

    /// The series of `field` under this tag set.
    pub fn series(&self, field: &str) -> Option<SeriesId> {
        self.fields?.get(field).copied()
    }
}

#[derive(Default)]
pub struct SeriesIndex {
    databases: BTreeMap<String, DbIndex>,
    series: HashMap<SeriesId, SeriesEntry>,
    next_id: u64,
    /// Counts series changes (added, removed, dropped), never goes back.
    generation: u64,
}

impl SeriesIndex {
    pub fn new(next_id: u64) -> SeriesIndex {
        SeriesIndex { next_id, ..Default::default() }
    }

    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Raises the next id to at least `next_id` (ids of dropped series stay used).
    pub fn max_next_id(mut self, next_id: u64) -> SeriesIndex {
        self.next_id = self.next_id.max(next_id);
        self
    }

    /// Returns true if the database is new.
    pub fn create_database(&mut self, name: &str) -> bool {
        if self.databases.contains_key(name) {
            return false;
        }
        self.databases.insert(name.to_string(), DbIndex::default());
        true
    }

    pub fn has_database(&self, name: &str) -> bool {
        self.databases.contains_key(name)
    }

    pub fn databases(&self) -> Vec<String> {
        self.databases.keys().cloned().collect()
    }

    pub fn series_count(&self, db: &str) -> u64 {
        self.databases.get(db).map_or(0, |d| d.series_count)
    }

    pub fn total_series(&self) -> usize {
        self.series.len()
    }

    pub fn lookup(&self, db: &str, key: &SeriesKey) -> Option<SeriesId> {
        self.lookup_parts(db, &key.measurement, &key.tags, &key.field)
    }

    /// Looks a series up by borrowed key parts (no allocation).
    pub fn lookup_parts(
        &self,
        db: &str,
        measurement: &str,
        tags: &[(String, String)],
        field: &str,
    ) -> Option<SeriesId> {
        let m = self.databases.get(db)?.measurements.get(measurement)?;
        m.tagsets.get(tags)?.get(field).copied()
    }

    /// What the index knows about one point's measurement and tag set, found
    /// with one probe per level so the write path's per-field lookups are
    /// small map probes.
    pub fn point_view(&self, db: &str, measurement: &str, tags: &[(String, String)]) -> PointView<'_> {
        let m = self.databases.get(db).and_then(|d| d.measurements.get(measurement));
        PointView { field_types: m.map(|m| &m.field_types), fields: m.and_then(|m| m.tagsets.get(tags)) }
    }

    pub fn field_type(&self, db: &str, measurement: &str, field: &str) -> Option<FieldType> {
        self.databases.get(db)?.measurements.get(measurement)?.field_types.get(field).copied()
    }

    pub fn entry(&self, id: SeriesId) -> Option<&SeriesEntry> {
        self.series.get(&id)
    }

    /// A fresh id (never reused, also across drops).
    pub fn allocate_id(&mut self) -> SeriesId {
        let id = SeriesId(self.next_id);
        self.next_id += 1;
        id
    }

    /// Adds a series (live creation, manifest load or replay). If the key is
    /// bound to another id (replay of a record a checkpoint already
    /// covers), it is rebound to `id`. The database is created if missing.
    pub fn insert(&mut self, db: &str, id: SeriesId, key: SeriesKey, field_type: FieldType) {
        if let Some(e) = self.series.get(&id) {
            if e.db == db && e.key == key {
                return;
            }
        }
        if let Some(old) = self.lookup(db, &key) {
            self.remove(old);
        }
        self.create_database(db);
        self.generation += 1;
        let d = self.databases.get_mut(db).expect("created");
        let m = d.measurements.entry(key.measurement.clone()).or_default();
        m.version = self.generation;
        m.tagsets.entry(key.tags.clone()).or_default().insert(key.field.clone(), id);
        m.field_types.entry(key.field.clone()).or_insert(field_type);
        d.series_count += 1;
        self.next_id = self.next_id.max(id.0 + 1);
        self.series.insert(id, SeriesEntry { db: db.to_string(), key, field_type });
    }

    fn remove(&mut self, id: SeriesId) {
        let Some(e) = self.series.remove(&id) else { return };
        self.generation += 1;
        if let Some(d) = self.databases.get_mut(&e.db) {
            if let Some(m) = d.measurements.get_mut(&e.key.measurement) {
                m.version = self.generation;
                if let Some(fields) = m.tagsets.get_mut(e.key.tags.as_slice()) {
                    fields.remove(&e.key.field);
                    if fields.is_empty() {
                        m.tagsets.remove(e.key.tags.as_slice());
                    }
                }
            }
            d.series_count -= 1;
        }
    }

    /// Removes a measurement; returns the ids of its series.
    pub fn drop_measurement(&mut self, db: &str, measurement: &str) -> Vec<SeriesId> {
        let Some(d) = self.databases.get_mut(db) else { return Vec::new() };
        let Some(m) = d.measurements.remove(measurement) else { return Vec::new() };
        let ids: Vec<SeriesId> = m.tagsets.values().flat_map(|f| f.values().copied()).collect();
        d.series_count -= ids.len() as u64;
        for id in &ids {
            self.series.remove(id);
        }
        ids
    }

    /// Removes a database with its series; returns their ids (empty when
    /// the database does not exist).
    pub fn drop_database(&mut self, db: &str) -> Vec<SeriesId> {
        let Some(d) = self.databases.remove(db) else { return Vec::new() };
        self.generation += 1;
        let ids: Vec<SeriesId> = d
            .measurements
            .values()
            .flat_map(|m| m.tagsets.values().flat_map(|f| f.values().copied()))
            .collect();
        for id in &ids {
            self.series.remove(id);
        }
        ids
    }

    /// Removes these series of `db` (ids of other databases or unknown ones
    /// are ignored); a measurement left without series goes too, as in
    /// InfluxDB. Returns the ids removed.
    pub fn drop_series(&mut self, db: &str, ids: &[SeriesId]) -> Vec<SeriesId> {
        let mut removed = Vec::with_capacity(ids.len());
        for id in ids {
            if self.series.get(id).is_some_and(|e| e.db == db) {
                self.remove(*id);
                removed.push(*id);
            }
        }
        if let Some(d) = self.databases.get_mut(db) {
            d.measurements.retain(|_, m| !m.tagsets.is_empty());
        }
        removed
    }

    /// Changes whenever a series of the measurement is added or removed,
    /// and never comes back to an earlier value (a measurement dropped and
    /// written again gets a new one); `None` if it does not exist.
    pub fn measurement_version(&self, db: &str, measurement: &str) -> Option<u64> {
        Some(self.databases.get(db)?.measurements.get(measurement)?.version)
    }

    pub fn measurements(&self, db: &str) -> Option<Vec<String>> {
        Some(self.databases.get(db)?.measurements.keys().cloned().collect())
    }

    pub fn series_of(&self, db: &str, measurement: &str) -> Option<Vec<SeriesInfo>> {
        let d = self.databases.get(db)?;
        let Some(m) = d.measurements.get(measurement) else { return Some(Vec::new()) };
        let mut tagsets: Vec<_> = m.tagsets.iter().collect();
        tagsets.sort_unstable_by(|a, b| a.0.cmp(b.0));
        Some(
            tagsets
                .into_iter()
                .flat_map(|(tags, fields)| {
                    fields.iter().map(|(field, id)| SeriesInfo {
                        id: *id,
                        measurement: measurement.to_string(),
                        tags: tags.clone(),
                        field: field.clone(),
                        field_type: m.field_types[field],
                    })
                })
                .collect(),
        )
    }

    /// Every series, sorted by id (for the manifest).
    pub fn all(&self) -> Vec<(SeriesId, &SeriesEntry)> {
        let mut v: Vec<_> = self.series.iter().map(|(id, e)| (*id, e)).collect();
        v.sort_by_key(|(id, _)| *id);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(m: &str, host: &str, f: &str) -> SeriesKey {
        SeriesKey { measurement: m.into(), tags: vec![("host".into(), host.into())], field: f.into() }
    }

    #[test]
    fn insert_lookup_drop_and_ids_never_reused() {
        let mut ix = SeriesIndex::new(0);
        ix.create_database("db");
        let a = ix.allocate_id();
        ix.insert("db", a, key("cpu", "a", "u"), FieldType::Float);
        let b = ix.allocate_id();
        ix.insert("db", b, key("mem", "a", "free"), FieldType::Integer);
        assert_eq!(ix.lookup("db", &key("cpu", "a", "u")), Some(a));
        assert_eq!(ix.field_type("db", "cpu", "u"), Some(FieldType::Float));
        assert_eq!(ix.series_count("db"), 2);
        assert_eq!(ix.drop_measurement("db", "cpu"), vec![a]);
        assert_eq!(ix.lookup("db", &key("cpu", "a", "u")), None);
        assert_eq!(ix.field_type("db", "cpu", "u"), None, "a dropped measurement forgets its types");
        assert_eq!(ix.series_count("db"), 1);
        assert!(ix.allocate_id().0 > b.0);
        assert_eq!(ix.measurements("db").unwrap(), vec!["mem".to_string()]);
    }

    #[test]
    fn a_measurement_version_changes_with_its_series_and_never_repeats() {
        let mut ix = SeriesIndex::new(0);
        assert_eq!(ix.measurement_version("db", "cpu"), None);
        let a = ix.allocate_id();
        ix.insert("db", a, key("cpu", "a", "u"), FieldType::Float);
        let v1 = ix.measurement_version("db", "cpu").unwrap();
        ix.insert("db", a, key("cpu", "a", "u"), FieldType::Float);
        assert_eq!(ix.measurement_version("db", "cpu"), Some(v1), "no change, same version");
        let m = ix.allocate_id();
        ix.insert("db", m, key("mem", "a", "free"), FieldType::Integer);
        assert_eq!(ix.measurement_version("db", "cpu"), Some(v1), "another measurement's series");
        let b = ix.allocate_id();
        ix.insert("db", b, key("cpu", "b", "u"), FieldType::Float);
        let v2 = ix.measurement_version("db", "cpu").unwrap();
        assert!(v2 > v1);
        ix.drop_measurement("db", "cpu");
        assert_eq!(ix.measurement_version("db", "cpu"), None);
        let c = ix.allocate_id();
        ix.insert("db", c, key("cpu", "a", "u"), FieldType::Float);
        assert!(ix.measurement_version("db", "cpu").unwrap() > v2, "written again: a new version");
    }

    #[test]
    fn drop_database_and_drop_series_forget_their_series() {
        let mut ix = SeriesIndex::new(0);
        let a = ix.allocate_id();
        ix.insert("db", a, key("cpu", "a", "u"), FieldType::Float);
        let b = ix.allocate_id();
        ix.insert("db", b, key("cpu", "b", "u"), FieldType::Float);
        let c = ix.allocate_id();
        ix.insert("other", c, key("cpu", "a", "u"), FieldType::Float);
        assert_eq!(ix.drop_series("db", &[a, c]), vec![a], "an id of another database stays");
        assert_eq!(ix.lookup("db", &key("cpu", "a", "u")), None);
        assert_eq!(ix.measurements("db").unwrap(), vec!["cpu".to_string()]);
        assert_eq!(ix.drop_series("db", &[b]), vec![b]);
        assert!(ix.measurements("db").unwrap().is_empty(), "a measurement without series goes");
        assert_eq!(ix.drop_database("other"), vec![c]);
        assert!(!ix.has_database("other") && ix.entry(c).is_none());
        assert_eq!(ix.drop_database("other"), Vec::<SeriesId>::new());
        assert_eq!(ix.databases(), vec!["db".to_string()]);
    }

    #[test]
    fn replay_rebinds_a_key_to_the_record_id() {
        let mut ix = SeriesIndex::new(0);
        ix.insert("db", SeriesId(9), key("cpu", "a", "u"), FieldType::Float);
        ix.insert("db", SeriesId(7), key("cpu", "a", "u"), FieldType::Float);
        assert_eq!(ix.lookup("db", &key("cpu", "a", "u")), Some(SeriesId(7)));
        assert!(ix.entry(SeriesId(9)).is_none());
        assert_eq!(ix.series_count("db"), 1);
        assert_eq!(ix.next_id(), 10);
    }
}
