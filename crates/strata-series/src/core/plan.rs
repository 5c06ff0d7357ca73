//! Planning a write request (every protocol's step 1; declog.txt 4.1.2's
//! step 1 and the baseline's write path of section 5.1): check each point
//! against the model and the index (a malformed or type-conflicting point
//! is rejected on its own, the rest go on), give new series their ids, and
//! build the WAL record of what commits. Reads the index only: the caller
//! serializes planning (its order mutex) so the ids it hands out stay free
//! until it publishes them ([`super::apply::publish_new_series`]).
//! [`SeriesCore::plan_write_existing`] plans without that serialization a
//! request whose every series exists already (the steady state of ingest):
//! it hands out no ids, and an existing series' type cannot change under it.

use std::collections::HashMap;

use super::SeriesCore;
use crate::error::EngineError;
use crate::model::{FieldType, FieldValue, Point, SeriesId, SeriesKey};
use crate::store::{LineRejection, WriteOutcome};
use crate::wal::{NewSeries, WalRecord};

/// A series created by the request being planned: (measurement, tags, field).
type NewSeriesRef<'a> = (&'a str, &'a [(String, String)], &'a str);

impl SeriesCore {
    /// Type-checks a request and assigns ids to new series (index read only).
    pub fn plan_write(&self, db: &str, points: &[Point]) -> Result<(WalRecord, WriteOutcome), EngineError> {
        self.plan(db, points, true).map(|planned| planned.expect("new series are allowed"))
    }

    /// [`Self::plan_write`] for a request that creates no series: `Ok(None)`
    /// as soon as a point would create one. Needs no serialization with
    /// other planners (its record has no new series to publish).
    pub fn plan_write_existing(
        &self,
        db: &str,
        points: &[Point],
    ) -> Result<Option<(WalRecord, WriteOutcome)>, EngineError> {
        self.plan(db, points, false)
    }

    fn plan(
        &self,
        db: &str,
        points: &[Point],
        allow_new: bool,
    ) -> Result<Option<(WalRecord, WriteOutcome)>, EngineError> {
        let index = self.index().read();
        if !index.has_database(db) {
            return Err(EngineError::UnknownDatabase(db.to_string()));
        }
        let mut outcome = WriteOutcome::default();
        let mut new_series: Vec<NewSeries> = Vec::new();
        let mut new_ids: HashMap<NewSeriesRef<'_>, SeriesId> = HashMap::new();
        let mut new_types: HashMap<(&str, &str), FieldType> = HashMap::new();
        let mut out_points = Vec::with_capacity(points.iter().map(|p| p.fields.len()).sum());
        let mut next_id = index.next_id();
        for (i, p) in points.iter().enumerate() {
            if let Some(why) = malformed(p) {
                outcome.rejected.push((i, why));
                continue;
            }
            let view = index.point_view(db, &p.measurement, &p.tags);
            let conflict = p.fields.iter().find_map(|(f, v)| {
                let have = view
                    .field_type(f)
                    .or_else(|| new_types.get(&(p.measurement.as_str(), f.as_str())).copied())?;
                (have != v.field_type()).then(|| LineRejection::FieldTypeConflict {
                    field: f.clone(),
                    measurement: p.measurement.clone(),
                    input: v.field_type(),
                    existing: have,
                })
            });
            if let Some(why) = conflict {
                outcome.rejected.push((i, why));
                continue;
            }
            for (f, v) in &p.fields {
                let id = match view.series(f) {
                    Some(id) => id,
                    None if !allow_new => return Ok(None),
                    None => *new_ids.entry((&p.measurement, &p.tags, f)).or_insert_with(|| {
                        let id = SeriesId(next_id);
                        next_id += 1;
                        new_types.insert((&p.measurement, f), v.field_type());
                        new_series.push(NewSeries {
                            id,
                            key: SeriesKey {
                                measurement: p.measurement.clone(),
                                tags: p.tags.clone(),
                                field: f.clone(),
                            },
                            field_type: v.field_type(),
                        });
                        id
                    }),
                };
                out_points.push((id, p.timestamp_ns, v.clone()));
            }
            outcome.points_written += 1;
            outcome.values_written += p.fields.len();
        }
        if let Some(limit) = self.options().max_series_per_database {
            if index.series_count(db) + new_series.len() as u64 > limit {
                return Err(EngineError::SeriesLimit { db: db.to_string(), limit });
            }
        }
        Ok(Some((WalRecord::Write { db: db.to_string(), new_series, points: out_points }, outcome)))
    }
}

/// A point the model does not allow (the line protocol parser never
/// produces one; in-process callers might).
/// Whether two fields share a name: pairwise for the usual handful of
/// fields (no allocation on the per-point path), sorted names beyond.
fn has_duplicate_field(fields: &[(String, FieldValue)]) -> bool {
    const PAIRWISE_MAX: usize = 16;
    if fields.len() <= PAIRWISE_MAX {
        return fields.iter().enumerate().any(|(i, (a, _))| fields[i + 1..].iter().any(|(b, _)| a == b));
    }
    let mut keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    keys.windows(2).any(|w| w[0] == w[1])
}

fn malformed(p: &Point) -> Option<LineRejection> {
    let why = if p.measurement.is_empty() {
        "empty measurement name".to_string()
    } else if p.fields.is_empty() {
        format!("point of measurement \"{}\" has no fields", p.measurement)
    } else if p.tags.windows(2).any(|w| w[0].0 >= w[1].0) {
        format!("tags of a point of \"{}\" are not sorted by key with unique keys", p.measurement)
    } else {
        if !has_duplicate_field(&p.fields) {
            return None;
        }
        format!("a point of \"{}\" has the same field twice", p.measurement)
    };
    Some(LineRejection::Malformed(why))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(names: &[&str]) -> Vec<(String, FieldValue)> {
        names.iter().map(|n| (n.to_string(), FieldValue::Integer(1))).collect()
    }

    #[test]
    fn duplicate_fields_are_found_pairwise_and_sorted() {
        assert!(!has_duplicate_field(&fields(&["a", "b", "c"])));
        assert!(has_duplicate_field(&fields(&["a", "b", "a"])));
        let many: Vec<String> = (0..40).map(|i| format!("f{i}")).collect();
        let mut names: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(!has_duplicate_field(&fields(&names)), "40 distinct names");
        names.push("f7");
        assert!(has_duplicate_field(&fields(&names)), "a duplicate past the pairwise bound");
    }
}
