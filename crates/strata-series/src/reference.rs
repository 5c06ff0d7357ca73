//! The reference model of [`SeriesStore`]: [`MemStore`], everything in
//! BTreeMaps behind one mutex, written to be obviously correct rather than
//! fast. The durable engine is property-tested against it, and the InfluxQL
//! executor and the HTTP server use it in their tests.
//!
//! Semantics (exactly the trait's documentation, plus the choices below):
//! - every call on a database that does not exist fails with
//!   [`EngineError::UnknownDatabase`] (except `create_database`);
//! - series ids come from one counter per store, in creation order (within a
//!   request: point by point, field by field in the order the point lists
//!   them), and are never reused, not even after `drop_measurement`;
//! - a field's type is fixed at its first write per (database, measurement,
//!   field); a point with a conflicting field is rejected whole, and later
//!   points of the same request see the types set by earlier accepted ones;
//! - a point without fields is rejected (`rejected`, not an error);
//! - writing an existing (series, timestamp) replaces the value;
//! - `delete` removes the points in range and keeps the series in the index;
//!   it returns how many distinct ids of `ids` name an existing series;
//! - `drop_series` removes series with their points (a measurement left
//!   without series forgets its field types); `drop_database` of a name
//!   that does not exist succeeds;
//! - `read` returns an empty list for an id the database does not know;
//! - with a series limit, a request that would make the database hold more
//!   series than the limit is rejected whole with [`EngineError::SeriesLimit`].

use std::collections::{BTreeMap, BTreeSet};

use parking_lot::Mutex;

use crate::error::EngineError;
use crate::model::{FieldType, FieldValue, Point, SeriesId, SeriesKey, TimeRange, TimestampNs};
use crate::retention::{DbRetention, RetentionCatalog, RetentionChange};
use crate::store::{LineRejection, SeriesInfo, SeriesStore, WriteOutcome};

/// One database: its series index, field types and points.
#[derive(Default)]
struct Database {
    ids_by_key: BTreeMap<SeriesKey, SeriesId>,
    info_by_id: BTreeMap<SeriesId, SeriesInfo>,
    points_by_id: BTreeMap<SeriesId, BTreeMap<TimestampNs, FieldValue>>,
    /// (measurement, field) -> type fixed at first write.
    field_types: BTreeMap<(String, String), FieldType>,
}

#[derive(Default)]
struct State {
    databases: BTreeMap<String, Database>,
    next_series_id: u64,
}

/// In-memory [`SeriesStore`]; see the module documentation for its semantics.
#[derive(Default)]
pub struct MemStore {
    state: Mutex<State>,
    max_series_per_database: Option<u64>,
    retention: RetentionCatalog,
}

impl MemStore {
    /// A store without a series limit.
    pub fn new() -> MemStore {
        MemStore::default()
    }

    /// A store that refuses writes which would make a database hold more
    /// than `max_series_per_database` series.
    pub fn with_series_limit(max_series_per_database: u64) -> MemStore {
        MemStore { max_series_per_database: Some(max_series_per_database), ..MemStore::default() }
    }

    /// The configured series limit, if any.
    pub fn max_series_per_database(&self) -> Option<u64> {
        self.max_series_per_database
    }
}

fn unknown(db: &str) -> EngineError {
    EngineError::UnknownDatabase(db.to_string())
}

fn series_key(point: &Point, field: &str) -> SeriesKey {
    let mut tags = point.tags.clone();
    tags.sort_by(|a, b| a.0.cmp(&b.0));
    SeriesKey { measurement: point.measurement.clone(), tags, field: field.to_string() }
}

impl SeriesStore for MemStore {
    fn databases(&self) -> Vec<String> {
        self.state.lock().databases.keys().cloned().collect()
    }

    fn create_database(&self, name: &str) -> Result<(), EngineError> {
        if name.is_empty() {
            return Err(EngineError::InvalidDatabaseName(name.to_string(), "name is empty".to_string()));
        }
        self.state.lock().databases.entry(name.to_string()).or_default();
        Ok(())
    }

    fn measurements(&self, db: &str) -> Result<Vec<String>, EngineError> {
        let state = self.state.lock();
        let database = state.databases.get(db).ok_or_else(|| unknown(db))?;
        let names: BTreeSet<String> = database.ids_by_key.keys().map(|k| k.measurement.clone()).collect();
        Ok(names.into_iter().collect())
    }

    fn series(&self, db: &str, measurement: &str) -> Result<Vec<SeriesInfo>, EngineError> {
        let state = self.state.lock();
        let database = state.databases.get(db).ok_or_else(|| unknown(db))?;
        let mut out: Vec<SeriesInfo> =
            database.info_by_id.values().filter(|s| s.measurement == measurement).cloned().collect();
        out.sort_by(|a, b| (&a.tags, &a.field).cmp(&(&b.tags, &b.field)));
        Ok(out)
    }

    fn read(
        &self,
        db: &str,
        ids: &[SeriesId],
        range: TimeRange,
    ) -> Result<Vec<Vec<(TimestampNs, FieldValue)>>, EngineError> {
        let state = self.state.lock();
        let database = state.databases.get(db).ok_or_else(|| unknown(db))?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let mut points = Vec::new();
            if let Some(values) = database.points_by_id.get(id) {
                if !range.is_empty() {
                    for (t, v) in values.range(range.min_ns..=range.max_ns) {
                        points.push((*t, v.clone()));
                    }
                }
            }
            out.push(points);
        }
        Ok(out)
    }

    fn write(&self, db: &str, points: &[Point]) -> Result<WriteOutcome, EngineError> {
        let mut state = self.state.lock();
        let database = state.databases.get(db).ok_or_else(|| unknown(db))?;

        // Pass 1: decide which points are accepted, without changing anything.
        let mut types_in_request: BTreeMap<(String, String), FieldType> = BTreeMap::new();
        let mut new_keys: BTreeSet<SeriesKey> = BTreeSet::new();
        let mut accepted: Vec<usize> = Vec::new();
        let mut outcome = WriteOutcome::default();
        'points: for (index, point) in points.iter().enumerate() {
            if point.fields.is_empty() {
                outcome.rejected.push((
                    index,
                    LineRejection::Malformed(format!(
                        "point on measurement \"{}\" has no fields",
                        point.measurement
                    )),
                ));
                continue;
            }
            let mut types_in_point: BTreeMap<(String, String), FieldType> = BTreeMap::new();
            for (field, value) in &point.fields {
                let slot = (point.measurement.clone(), field.clone());
                let existing = types_in_point
                    .get(&slot)
                    .or_else(|| types_in_request.get(&slot))
                    .or_else(|| database.field_types.get(&slot));
                match existing {
                    Some(&t) if t != value.field_type() => {
                        outcome.rejected.push((
                            index,
                            LineRejection::FieldTypeConflict {
                                field: field.clone(),
                                measurement: point.measurement.clone(),
                                input: value.field_type(),
                                existing: t,
                            },
                        ));
                        continue 'points;
                    }
                    _ => {
                        types_in_point.insert(slot, value.field_type());
                    }
                }
            }
            types_in_request.extend(types_in_point);
            for (field, _) in &point.fields {
                let key = series_key(point, field);
                if !database.ids_by_key.contains_key(&key) {
                    new_keys.insert(key);
                }
            }
            accepted.push(index);
        }

        if let Some(limit) = self.max_series_per_database {
            let total = database.ids_by_key.len() as u64 + new_keys.len() as u64;
            if total > limit {
                return Err(EngineError::SeriesLimit { db: db.to_string(), limit });
            }
        }

        // Pass 2: apply the accepted points.
        let mut next_series_id = state.next_series_id;
        let database = state.databases.get_mut(db).ok_or_else(|| unknown(db))?;
        for index in accepted {
            let point = &points[index];
            for (field, value) in &point.fields {
                let key = series_key(point, field);
                let id = match database.ids_by_key.get(&key) {
                    Some(&id) => id,
                    None => {
                        let id = SeriesId(next_series_id);
                        next_series_id += 1;
                        database.info_by_id.insert(
                            id,
                            SeriesInfo {
                                id,
                                measurement: key.measurement.clone(),
                                tags: key.tags.clone(),
                                field: key.field.clone(),
                                field_type: value.field_type(),
                            },
                        );
                        database.ids_by_key.insert(key, id);
                        id
                    }
                };
                database
                    .field_types
                    .entry((point.measurement.clone(), field.clone()))
                    .or_insert(value.field_type());
                database.points_by_id.entry(id).or_default().insert(point.timestamp_ns, value.clone());
                outcome.values_written += 1;
            }
            outcome.points_written += 1;
        }
        state.next_series_id = next_series_id;
        Ok(outcome)
    }

    fn delete(&self, db: &str, ids: &[SeriesId], range: TimeRange) -> Result<u64, EngineError> {
        let mut state = self.state.lock();
        let database = state.databases.get_mut(db).ok_or_else(|| unknown(db))?;
        let distinct: BTreeSet<SeriesId> = ids.iter().copied().collect();
        let mut touched = 0;
        for id in distinct {
            if !database.info_by_id.contains_key(&id) {
                continue;
            }
            touched += 1;
            if let Some(values) = database.points_by_id.get_mut(&id) {
                values.retain(|t, _| !range.contains(*t));
            }
        }
        Ok(touched)
    }

    fn drop_measurement(&self, db: &str, measurement: &str) -> Result<(), EngineError> {
        let mut state = self.state.lock();
        let database = state.databases.get_mut(db).ok_or_else(|| unknown(db))?;
        let doomed: Vec<SeriesKey> =
            database.ids_by_key.keys().filter(|k| k.measurement == measurement).cloned().collect();
        for key in doomed {
            if let Some(id) = database.ids_by_key.remove(&key) {
                database.info_by_id.remove(&id);
                database.points_by_id.remove(&id);
            }
        }
        database.field_types.retain(|(m, _), _| m != measurement);
        Ok(())
    }

    fn drop_database(&self, db: &str) -> Result<(), EngineError> {
        self.state.lock().databases.remove(db);
        self.retention.forget(db)
    }

    fn retention_policies(&self, db: &str) -> Result<DbRetention, EngineError> {
        self.state.lock().databases.get(db).ok_or_else(|| unknown(db))?;
        Ok(self.retention.get(db))
    }

    fn change_retention(&self, db: &str, change: &RetentionChange) -> Result<(), EngineError> {
        self.state.lock().databases.get(db).ok_or_else(|| unknown(db))?;
        self.retention.change(db, change)
    }

    fn drop_series(&self, db: &str, ids: &[SeriesId]) -> Result<u64, EngineError> {
        let mut state = self.state.lock();
        let database = state.databases.get_mut(db).ok_or_else(|| unknown(db))?;
        let mut removed = 0;
        for id in ids.iter().collect::<BTreeSet<_>>() {
            if let Some(info) = database.info_by_id.remove(id) {
                let key = SeriesKey { measurement: info.measurement, tags: info.tags, field: info.field };
                database.ids_by_key.remove(&key);
                database.points_by_id.remove(id);
                removed += 1;
            }
        }
        let live: BTreeSet<&str> = database.ids_by_key.keys().map(|k| k.measurement.as_str()).collect();
        database.field_types.retain(|(m, _), _| live.contains(m.as_str()));
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(measurement: &str, tags: &[(&str, &str)], fields: &[(&str, FieldValue)], t: i64) -> Point {
        Point {
            measurement: measurement.to_string(),
            tags: tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            fields: fields.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            timestamp_ns: t,
        }
    }

    fn store_with_db() -> MemStore {
        let store = MemStore::new();
        store.create_database("db").unwrap();
        store
    }

    #[test]
    fn write_to_missing_database_is_unknown_database() {
        let store = MemStore::new();
        let err = store.write("nope", &[point("m", &[], &[("f", FieldValue::Float(1.0))], 1)]).unwrap_err();
        assert!(matches!(err, EngineError::UnknownDatabase(ref d) if d == "nope"), "{err}");
        assert!(matches!(store.measurements("nope"), Err(EngineError::UnknownDatabase(_))));
    }

    #[test]
    fn create_database_is_idempotent_and_sorted() {
        let store = MemStore::new();
        store.create_database("b").unwrap();
        store.create_database("a").unwrap();
        store.create_database("b").unwrap();
        assert_eq!(store.databases(), vec!["a".to_string(), "b".to_string()]);
        assert!(matches!(store.create_database(""), Err(EngineError::InvalidDatabaseName(..))));
    }

    #[test]
    fn series_ids_follow_creation_order() {
        let store = store_with_db();
        let points = [
            point(
                "cpu",
                &[("host", "b")],
                &[("user", FieldValue::Float(1.0)), ("sys", FieldValue::Float(2.0))],
                1,
            ),
            point("cpu", &[("host", "a")], &[("user", FieldValue::Float(1.0))], 1),
        ];
        store.write("db", &points).unwrap();
        let series = store.series("db", "cpu").unwrap();
        // Sorted by (tags, field); ids by creation order.
        let listed: Vec<(String, String, u64)> =
            series.iter().map(|s| (s.tags[0].1.clone(), s.field.clone(), s.id.0)).collect();
        assert_eq!(
            listed,
            vec![
                ("a".to_string(), "user".to_string(), 2),
                ("b".to_string(), "sys".to_string(), 1),
                ("b".to_string(), "user".to_string(), 0),
            ]
        );
    }

    #[test]
    fn type_conflict_rejects_the_whole_point_and_later_points_see_earlier_types() {
        let store = store_with_db();
        store.write("db", &[point("m", &[], &[("f", FieldValue::Float(1.0))], 1)]).unwrap();
        let outcome = store
            .write(
                "db",
                &[
                    point("m", &[], &[("g", FieldValue::Integer(1)), ("f", FieldValue::Integer(2))], 2),
                    point("m", &[], &[("g", FieldValue::Integer(5))], 3),
                    point("m", &[], &[("g", FieldValue::Boolean(true))], 4),
                ],
            )
            .unwrap();
        assert_eq!(outcome.points_written, 1);
        assert_eq!(outcome.values_written, 1);
        let rejected: Vec<(usize, String)> =
            outcome.rejected.iter().map(|(i, r)| (*i, r.to_string())).collect();
        assert_eq!(
            rejected,
            vec![
                (
                    0,
                    "field type conflict: input field \"f\" on measurement \"m\" is type integer, \
                     already exists as type float"
                        .to_string()
                ),
                (
                    2,
                    "field type conflict: input field \"g\" on measurement \"m\" is type boolean, \
                     already exists as type integer"
                        .to_string()
                ),
            ]
        );
        let series = store.series("db", "m").unwrap();
        assert_eq!(series.iter().map(|s| s.field.as_str()).collect::<Vec<_>>(), vec!["f", "g"]);
        let g = series.iter().find(|s| s.field == "g").unwrap();
        assert_eq!(g.field_type, FieldType::Integer);
        let data = store.read("db", &[g.id], TimeRange::ALL).unwrap();
        assert_eq!(data, vec![vec![(3, FieldValue::Integer(5))]]);
    }

    #[test]
    fn latest_write_wins_and_read_respects_range() {
        let store = store_with_db();
        for (t, v) in [(10, 1.0), (20, 2.0), (10, 3.0), (30, 4.0)] {
            store.write("db", &[point("m", &[], &[("f", FieldValue::Float(v))], t)]).unwrap();
        }
        let id = store.series("db", "m").unwrap()[0].id;
        let all = store.read("db", &[id, SeriesId(999)], TimeRange::ALL).unwrap();
        assert_eq!(
            all,
            vec![
                vec![
                    (10, FieldValue::Float(3.0)),
                    (20, FieldValue::Float(2.0)),
                    (30, FieldValue::Float(4.0))
                ],
                vec![]
            ]
        );
        let some = store.read("db", &[id], TimeRange { min_ns: 15, max_ns: 30 }).unwrap();
        assert_eq!(some, vec![vec![(20, FieldValue::Float(2.0)), (30, FieldValue::Float(4.0))]]);
        let empty = store.read("db", &[id], TimeRange { min_ns: 30, max_ns: 15 }).unwrap();
        assert_eq!(empty, vec![vec![]]);
    }

    #[test]
    fn delete_removes_points_in_range_only() {
        let store = store_with_db();
        for t in 1..=5 {
            store.write("db", &[point("m", &[], &[("f", FieldValue::Integer(t))], t)]).unwrap();
        }
        let id = store.series("db", "m").unwrap()[0].id;
        let touched =
            store.delete("db", &[id, id, SeriesId(77)], TimeRange { min_ns: 2, max_ns: 4 }).unwrap();
        assert_eq!(touched, 1);
        let left = store.read("db", &[id], TimeRange::ALL).unwrap();
        assert_eq!(left, vec![vec![(1, FieldValue::Integer(1)), (5, FieldValue::Integer(5))]]);
        assert_eq!(store.measurements("db").unwrap(), vec!["m".to_string()]);
    }

    #[test]
    fn drop_measurement_removes_series_and_types() {
        let store = store_with_db();
        store.write("db", &[point("m", &[], &[("f", FieldValue::Float(1.0))], 1)]).unwrap();
        store.write("db", &[point("n", &[], &[("f", FieldValue::Float(1.0))], 1)]).unwrap();
        store.drop_measurement("db", "m").unwrap();
        assert_eq!(store.measurements("db").unwrap(), vec!["n".to_string()]);
        assert!(store.series("db", "m").unwrap().is_empty());
        // The type is forgotten: an integer is accepted now, under a new id.
        let outcome = store.write("db", &[point("m", &[], &[("f", FieldValue::Integer(1))], 1)]).unwrap();
        assert!(outcome.rejected.is_empty());
        let s = store.series("db", "m").unwrap();
        assert_eq!((s[0].id, s[0].field_type), (SeriesId(2), FieldType::Integer));
    }

    #[test]
    fn series_limit_rejects_whole_request() {
        let store = MemStore::with_series_limit(2);
        store.create_database("db").unwrap();
        store.write("db", &[point("m", &[("h", "a")], &[("f", FieldValue::Float(1.0))], 1)]).unwrap();
        let err = store
            .write(
                "db",
                &[
                    point("m", &[("h", "a")], &[("f", FieldValue::Float(2.0))], 2),
                    point("m", &[("h", "b")], &[("f", FieldValue::Float(1.0))], 1),
                    point("m", &[("h", "c")], &[("f", FieldValue::Float(1.0))], 1),
                ],
            )
            .unwrap_err();
        assert!(matches!(err, EngineError::SeriesLimit { limit: 2, .. }), "{err}");
        assert_eq!(store.series("db", "m").unwrap().len(), 1);
        let id = store.series("db", "m").unwrap()[0].id;
        assert_eq!(store.read("db", &[id], TimeRange::ALL).unwrap(), vec![vec![(1, FieldValue::Float(1.0))]]);
        // Exactly at the limit is fine.
        store.write("db", &[point("m", &[("h", "b")], &[("f", FieldValue::Float(1.0))], 1)]).unwrap();
        assert_eq!(store.series("db", "m").unwrap().len(), 2);
    }

    #[test]
    fn point_without_fields_is_rejected() {
        let store = store_with_db();
        let outcome = store.write("db", &[point("m", &[], &[], 1)]).unwrap();
        assert_eq!(outcome.points_written, 0);
        assert_eq!(outcome.rejected.len(), 1);
        assert!(store.measurements("db").unwrap().is_empty());
    }

    #[test]
    fn unsorted_input_tags_are_stored_sorted() {
        let store = store_with_db();
        store
            .write("db", &[point("m", &[("z", "1"), ("a", "2")], &[("f", FieldValue::Float(1.0))], 1)])
            .unwrap();
        let s = store.series("db", "m").unwrap();
        assert_eq!(s[0].tags, vec![("a".to_string(), "2".to_string()), ("z".to_string(), "1".to_string())]);
    }
}
