//! Retention expiry: deletes the points that the default retention policy
//! of their database no longer keeps. Strata keeps one store per database,
//! so a database's *default* policy (`strata_series::retention`) is what
//! expires its data: with a finite duration `d`, every point with a
//! timestamp before `now - d` is deleted. Policies other than the default,
//! and a database whose default was dropped, expire nothing. Event streams
//! are not expired.
//!
//! Expiry uses the series store's durable `delete` (one transaction per
//! measurement, a commit-log record and tombstones like `DELETE`), so it is
//! crash safe under every commit protocol and the expired points leave the
//! block files at later checkpoints. It never deletes a point at or after
//! the cutoff. [`expire_once`] runs one pass with an explicit `now` (tests
//! and `Db::expire_retention`); `Db::start_background_checkpoints` runs a
//! pass every `storage.retention_check_interval_s`.

use strata_series::{EngineError, SeriesId, SeriesStore, TimeRange, TimestampNs};

use crate::tables::Tables;

/// What one pass deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExpiryReport {
    /// Databases with a finite default policy, checked.
    pub databases_checked: usize,
    /// Series that had expired points.
    pub series_expired: u64,
    /// Points deleted.
    pub points_expired: u64,
}

impl std::fmt::Display for ExpiryReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "retention: {} points of {} series expired ({} databases with a finite default policy)",
            self.points_expired, self.series_expired, self.databases_checked
        )
    }
}

/// The range a policy of `duration_ns` expires at `now_ns`: everything
/// before `now - duration` (empty when that is before every timestamp);
/// `None` for an infinite policy (0).
pub fn expired_range(now_ns: TimestampNs, duration_ns: i64) -> Option<TimeRange> {
    const NOTHING: TimeRange = TimeRange { min_ns: 1, max_ns: 0 };
    (duration_ns > 0).then(|| {
        match now_ns.checked_sub(duration_ns).and_then(|cutoff| cutoff.checked_sub(1)) {
            Some(max_ns) => TimeRange { min_ns: i64::MIN, max_ns },
            None => NOTHING,
        }
    })
}

/// One expiry pass over every database of `tables` as of `now_ns`. A
/// database dropped during the pass is skipped.
pub fn expire_once(tables: &dyn Tables, now_ns: TimestampNs) -> Result<ExpiryReport, EngineError> {
    let store = tables.series_store();
    let mut report = ExpiryReport::default();
    for db in store.databases() {
        match expire_database(store, &db, now_ns, &mut report) {
            Err(EngineError::UnknownDatabase(_)) => continue,
            other => other?,
        }
    }
    Ok(report)
}

fn expire_database(
    store: &dyn SeriesStore,
    db: &str,
    now_ns: TimestampNs,
    report: &mut ExpiryReport,
) -> Result<(), EngineError> {
    let policies = store.retention_policies(db)?;
    let Some(range) = policies.default_policy().and_then(|p| expired_range(now_ns, p.duration_ns)) else {
        return Ok(());
    };
    report.databases_checked += 1;
    if range.is_empty() {
        return Ok(());
    }
    for measurement in store.measurements(db)? {
        let ids: Vec<SeriesId> = store.series(db, &measurement)?.iter().map(|s| s.id).collect();
        // Block indexes first: most series hold nothing that old.
        let bounds = store.point_count_bounds(db, &ids, range)?;
        let candidates: Vec<SeriesId> =
            ids.iter().zip(&bounds).filter(|(_, bound)| **bound > 0).map(|(id, _)| *id).collect();
        if candidates.is_empty() {
            continue;
        }
        let timestamps = store.read_timestamps(db, &candidates, range)?;
        let mut expired = Vec::new();
        for (id, ts) in candidates.iter().zip(&timestamps) {
            if !ts.is_empty() {
                expired.push(*id);
                report.points_expired += ts.len() as u64;
            }
        }
        if !expired.is_empty() {
            report.series_expired += store.delete(db, &expired, range)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expired_range_ends_just_before_the_cutoff() {
        assert_eq!(expired_range(100, 0), None, "INF keeps everything");
        assert_eq!(expired_range(100, 30), Some(TimeRange { min_ns: i64::MIN, max_ns: 69 }));
        assert_eq!(expired_range(i64::MIN + 5, 30).map(|r| r.is_empty()), Some(true));
    }
}
