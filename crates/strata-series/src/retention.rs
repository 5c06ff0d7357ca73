//! Retention policies (InfluxDB 1.8's meta rules): the policies of each
//! database, the rules that create, alter and drop them, and
//! [`RetentionCatalog`], the per-store map both series stores hold (the
//! durable engine persists it in the `RETENTION` file,
//! [`crate::retention_file`]; the reference model keeps it in memory).
//!
//! Strata keeps one physical store per database, so a policy does not own
//! data: the *default* policy's duration is what expires points (the
//! engine facade's retention task deletes every point older than now −
//! duration). A database without an entry has InfluxDB's implicit
//! `autogen` (infinite, replication 1, 7-day shard groups, default), so
//! plain `CREATE DATABASE` and databases of older data directories need no
//! entry; an entry exists once a policy statement changed something.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use strata_media::fs::FileSystem;
use thiserror::Error;

use crate::error::EngineError;

const NS_PER_HOUR: i64 = 3_600_000_000_000;
/// InfluxDB's `MinRetentionPolicyDuration`: finite durations below it are refused.
pub const MIN_RETENTION_NS: i64 = NS_PER_HOUR;
/// The policy every database starts with.
pub const AUTOGEN: &str = "autogen";

/// One retention policy. Durations are nanoseconds; `duration_ns == 0` is
/// `INF` (keep forever).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetentionPolicy {
    pub name: String,
    pub duration_ns: i64,
    pub shard_group_duration_ns: i64,
    pub replication: u32,
}

/// The policies of one database, in creation order, and the default's name
/// (`None` once the default was dropped, as InfluxDB allows).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbRetention {
    pub policies: Vec<RetentionPolicy>,
    pub default: Option<String>,
}

/// What a statement sets; `None` leaves a setting as it is (ALTER) or
/// takes InfluxDB's default (CREATE: INF, replication 1, shard duration by
/// the duration).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicySpec {
    pub duration_ns: Option<i64>,
    pub replication: Option<u32>,
    pub shard_duration_ns: Option<i64>,
    pub make_default: bool,
}

/// One change to a database's policies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetentionChange {
    /// `CREATE RETENTION POLICY`.
    Create { name: String, spec: PolicySpec },
    /// `ALTER RETENTION POLICY`.
    Alter { name: String, spec: PolicySpec },
    /// `DROP RETENTION POLICY` (no error if there is none).
    Drop { name: String },
    /// `CREATE DATABASE ... WITH ... [NAME name]`: on a database just
    /// created (`created`), the policy replaces `autogen` as the only and
    /// default one; on an existing database it must match an existing policy.
    DatabaseWith { name: Option<String>, spec: PolicySpec, created: bool },
}

/// Why a change is refused: InfluxDB 1.8's messages.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RetentionError {
    #[error("retention policy not found")]
    NotFound,
    #[error("retention policy already exists")]
    Exists,
    #[error("retention policy conflicts with an existing policy")]
    Conflict,
    #[error("retention policy duration must be at least 1h0m0s")]
    DurationTooLow,
    #[error("retention policy duration must be greater than the shard duration")]
    IncompatibleDurations,
    #[error("replication factor must be greater than 0")]
    ReplicationZero,
}

/// InfluxDB's shard group duration for a policy duration.
pub fn shard_group_duration(duration_ns: i64) -> i64 {
    if duration_ns == 0 || duration_ns >= 180 * 24 * NS_PER_HOUR {
        7 * 24 * NS_PER_HOUR
    } else if duration_ns >= 48 * NS_PER_HOUR {
        24 * NS_PER_HOUR
    } else {
        NS_PER_HOUR
    }
}

/// A given shard duration (0: by the duration), at least 1h.
fn normalised_shard_duration(shard_ns: i64, duration_ns: i64) -> i64 {
    match shard_ns {
        0 => shard_group_duration(duration_ns),
        s if s < MIN_RETENTION_NS => shard_group_duration(MIN_RETENTION_NS),
        s => s,
    }
}

fn check_duration(duration_ns: Option<i64>) -> Result<(), RetentionError> {
    match duration_ns {
        Some(d) if d != 0 && d < MIN_RETENTION_NS => Err(RetentionError::DurationTooLow),
        _ => Ok(()),
    }
}

fn check_policy(p: &RetentionPolicy) -> Result<(), RetentionError> {
    if p.replication == 0 {
        return Err(RetentionError::ReplicationZero);
    }
    if p.duration_ns != 0 && p.duration_ns < p.shard_group_duration_ns {
        return Err(RetentionError::IncompatibleDurations);
    }
    Ok(())
}

impl PolicySpec {
    /// The policy a CREATE makes of this spec.
    pub fn new_policy(&self, name: &str) -> RetentionPolicy {
        let duration_ns = self.duration_ns.unwrap_or(0);
        RetentionPolicy {
            name: name.to_string(),
            duration_ns,
            shard_group_duration_ns: normalised_shard_duration(
                self.shard_duration_ns.unwrap_or(0),
                duration_ns,
            ),
            replication: self.replication.unwrap_or(1),
        }
    }

    /// InfluxDB's `RetentionPolicySpec.Matches`: every given setting equals the policy's.
    fn matches(&self, p: &RetentionPolicy) -> bool {
        self.duration_ns.is_none_or(|d| d == p.duration_ns)
            && self.replication.is_none_or(|r| r == p.replication)
            && self.shard_duration_ns.is_none_or(|s| {
                normalised_shard_duration(s, self.duration_ns.unwrap_or(p.duration_ns))
                    == p.shard_group_duration_ns
            })
    }
}

impl DbRetention {
    /// What a database starts with: `autogen`, infinite, the default.
    pub fn autogen() -> DbRetention {
        DbRetention {
            policies: vec![PolicySpec::default().new_policy(AUTOGEN)],
            default: Some(AUTOGEN.into()),
        }
    }

    pub fn policy(&self, name: &str) -> Option<&RetentionPolicy> {
        self.policies.iter().find(|p| p.name == name)
    }

    /// The default policy, if it exists.
    pub fn default_policy(&self) -> Option<&RetentionPolicy> {
        self.default.as_deref().and_then(|name| self.policy(name))
    }

    /// Applies `change` or refuses it leaving `self` unchanged.
    pub fn apply(&mut self, change: &RetentionChange) -> Result<(), RetentionError> {
        match change {
            RetentionChange::Create { name, spec } => {
                check_duration(spec.duration_ns)?;
                let new = spec.new_policy(name);
                check_policy(&new)?;
                if let Some(old) = self.policy(name) {
                    if *old != new {
                        return Err(RetentionError::Exists);
                    }
                    if spec.make_default && self.default.as_deref() != Some(name) {
                        return Err(RetentionError::Conflict);
                    }
                    return Ok(());
                }
                self.policies.push(new);
                if spec.make_default {
                    self.default = Some(name.clone());
                }
                Ok(())
            }
            RetentionChange::Alter { name, spec } => {
                check_duration(spec.duration_ns)?;
                let index =
                    self.policies.iter().position(|p| p.name == *name).ok_or(RetentionError::NotFound)?;
                let mut p = self.policies[index].clone();
                if let Some(d) = spec.duration_ns {
                    p.duration_ns = d;
                }
                if let Some(r) = spec.replication {
                    p.replication = r;
                }
                if let Some(s) = spec.shard_duration_ns {
                    p.shard_group_duration_ns = normalised_shard_duration(s, p.duration_ns);
                }
                check_policy(&p)?;
                self.policies[index] = p;
                if spec.make_default {
                    self.default = Some(name.clone());
                }
                Ok(())
            }
            RetentionChange::Drop { name } => {
                self.policies.retain(|p| p.name != *name);
                Ok(())
            }
            RetentionChange::DatabaseWith { name, spec, created } => {
                check_duration(spec.duration_ns)?;
                let name = name.as_deref().unwrap_or(AUTOGEN);
                if *created {
                    let new = spec.new_policy(name);
                    check_policy(&new)?;
                    *self = DbRetention { policies: vec![new], default: Some(name.to_string()) };
                    return Ok(());
                }
                match self.policy(name) {
                    Some(p) if spec.matches(p) => Ok(()),
                    _ => Err(RetentionError::Conflict),
                }
            }
        }
    }
}

/// Where a durable catalog keeps its file.
pub struct RetentionFile {
    pub fs: Arc<dyn FileSystem>,
    pub dir: PathBuf,
}

/// The policies of every database of one store, behind one lock; with a
/// [`RetentionFile`], every change is written (atomically, durably) before
/// it is applied in memory, so an acknowledged change survives any crash.
#[derive(Default)]
pub struct RetentionCatalog {
    entries: Mutex<BTreeMap<String, DbRetention>>,
    file: Option<RetentionFile>,
}

impl RetentionCatalog {
    /// Loads the catalog of `file`, keeping only the entries of `databases`
    /// (a crash between a `DROP DATABASE` and the file's update leaves the
    /// dropped database's entry behind).
    pub fn open(file: RetentionFile, databases: &[String]) -> Result<RetentionCatalog, EngineError> {
        let mut entries =
            crate::retention_file::read_retention(file.fs.as_ref(), &file.dir)?.unwrap_or_default();
        entries.retain(|db, _| databases.contains(db));
        Ok(RetentionCatalog { entries: Mutex::new(entries), file: Some(file) })
    }

    /// The policies of `db` (its implicit `autogen` when it has no entry).
    pub fn get(&self, db: &str) -> DbRetention {
        self.entries.lock().get(db).cloned().unwrap_or_else(DbRetention::autogen)
    }

    /// Applies `change` to `db`'s policies and persists the result.
    pub fn change(&self, db: &str, change: &RetentionChange) -> Result<(), EngineError> {
        let mut entries = self.entries.lock();
        let mut next = entries.get(db).cloned().unwrap_or_else(DbRetention::autogen);
        next.apply(change).map_err(EngineError::Retention)?;
        let mut all = entries.clone();
        all.insert(db.to_string(), next);
        self.persist(&all)?;
        *entries = all;
        Ok(())
    }

    /// Forgets `db`'s entry (its database was dropped).
    pub fn forget(&self, db: &str) -> Result<(), EngineError> {
        let mut entries = self.entries.lock();
        if !entries.contains_key(db) {
            return Ok(());
        }
        let mut all = entries.clone();
        all.remove(db);
        self.persist(&all)?;
        *entries = all;
        Ok(())
    }

    fn persist(&self, all: &BTreeMap<String, DbRetention>) -> Result<(), EngineError> {
        match &self.file {
            Some(f) => crate::retention_file::write_retention(f.fs.as_ref(), &f.dir, all),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "retention_tests.rs"]
mod tests;
