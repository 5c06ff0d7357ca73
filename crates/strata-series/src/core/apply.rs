//! Applying a WAL record (`crate::wal`, the serial baseline's log payload,
//! declog.txt section 3.1) to the index and the series data:
//! live, once the record is durable, and by replay. Used by the protocols
//! that log WAL records (`crate::protocol::wal`) and by every protocol for
//! the rare whole-database operations (create, range delete, drops).

use super::data::PointChange;
use super::SeriesCore;
use crate::wal::{NewSeries, WalRecord};

impl SeriesCore {
    /// Publishes the series a planned write creates (its ids were handed
    /// out by [`SeriesCore::plan_write`] under the caller's order mutex).
    pub fn publish_new_series(&self, db: &str, new_series: &[NewSeries]) {
        if new_series.is_empty() {
            return;
        }
        let mut index = self.index().write();
        for s in new_series {
            index.insert(db, s.id, s.key.clone(), s.field_type);
        }
    }

    /// Applies one record; returns the points applied. `replay`: the record
    /// comes from the log at open, so its new series are published here and
    /// points of series the index no longer knows (dropped by a later
    /// record) are skipped.
    pub fn apply_record(&self, rec: &WalRecord, replay: bool) -> u64 {
        match rec {
            WalRecord::CreateDatabase { db } => {
                self.index().write().create_database(db);
                0
            }
            WalRecord::Write { db, new_series, points } => {
                if replay {
                    self.publish_new_series(db, new_series);
                }
                let index = self.index().read();
                let mut batch = self.data().batch();
                let mut applied = 0;
                for (id, ts, value) in points {
                    if replay && index.entry(*id).is_none_or(|e| e.field_type != value.field_type()) {
                        continue;
                    }
                    // Only a damaged or foreign log can hold a mistyped point:
                    // the write path type-checks against the index first.
                    if batch.write(*id, *ts, value.clone()) {
                        applied += 1;
                    } else {
                        debug_assert!(replay, "live apply of a mistyped point to {id}");
                    }
                }
                applied
            }
            WalRecord::Delete { series, range, .. } => {
                let max_file_seq = self.blocks().max_file_seq();
                self.data().batch().delete_range(series, *range, max_file_seq);
                0
            }
            WalRecord::DropMeasurement { db, measurement } => {
                let ids = self.index().write().drop_measurement(db, measurement);
                self.data().batch().remove(&ids);
                0
            }
            WalRecord::DropDatabase { db } => {
                let ids = self.index().write().drop_database(db);
                self.data().batch().remove(&ids);
                0
            }
            WalRecord::DropSeries { db, series } => {
                let ids = self.index().write().drop_series(db, series);
                self.data().batch().remove(&ids);
                0
            }
        }
    }

    /// The field type a change creates a series' data with.
    pub fn field_type_for(
        &self,
        id: crate::model::SeriesId,
        change: &PointChange,
    ) -> crate::model::FieldType {
        match change {
            PointChange::Insert(v) | PointChange::Update(v) => v.field_type(),
            PointChange::Delete => {
                self.index().read().entry(id).map_or(crate::model::FieldType::Float, |e| e.field_type)
            }
        }
    }
}
