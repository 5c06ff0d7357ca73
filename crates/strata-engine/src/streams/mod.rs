//! Event streams in the engine (chronicledb-pmem.txt; DESIGN.md section 4,
//! "Events"): the streams of a data directory, each an `EventStream` of
//! `strata-events` with its catalog file. The facade's table catalog
//! (`crate::tables::catalog`) serves them as the event-stream table kind.
//!
//! Module map:
//! - [`catalog`]: the per-stream catalog file (`docs/format/events-catalog.md`).
//! - [`placement`]: catalog to the event store's configuration and media.
//! - [`write`]: line protocol points to events.
//! - [`query`]: answering an [`crate::tables::streams::EventSelect`].
//!
//! Layout: `<data_dir>/streams/<db>/<stream>/` holds `stream.catalog`,
//! `region.pmem` (the mapped PMem file) and `data/` (block file, flash
//! queue). Crash safety of the catalog:
//! - create builds the directory under a temporary name
//!   (`.creating-<stream>`), writes the catalog atomically and formats the
//!   stream, then renames the directory into place and fsyncs the parent:
//!   a stream exists exactly when its directory has its final name;
//! - drop renames the directory to `.dropped-<stream>` and fsyncs the parent
//!   before deleting anything, so a crash never resurrects a half-dropped
//!   stream;
//! - open ([`Streams::open`]) deletes leftover `.creating-*` and
//!   `.dropped-*` directories and recovers every stream, timing each. A
//!   stream that fails to recover (a damaged catalog, region or block file)
//!   is *failed*: it is kept aside with the reason, its writes and queries
//!   get [`StreamError::Unavailable`] (HTTP 503), `/health` and `/metrics`
//!   report it, and every other stream and the series engine come up. Its
//!   files are left as they are for the operator; dropping it removes them.

pub mod catalog;
pub mod placement;
pub mod query;
pub mod write;

#[cfg(test)]
mod format_doc_tests;
#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::tables::streams::{StreamAttr, StreamAttrType, StreamError, StreamInfo};
use parking_lot::{Mutex, RwLock};
use strata_events::schema::{Attr, AttrType, StreamSchema};
use strata_events::stream::EventStream;
use strata_series::EngineError;

pub use catalog::{Catalog, Placement};
pub use placement::PmemSettings;

/// Prefix of a directory being created (deleted at open).
pub const CREATING_PREFIX: &str = ".creating-";
/// Prefix of a directory being dropped (deleted at open).
pub const DROPPED_PREFIX: &str = ".dropped-";

/// Settings of new streams (from the `[streams]` configuration section).
#[derive(Copy, Clone, Debug)]
pub struct NewStreamSettings {
    pub placement: Placement,
    pub flank_batch_events: u32,
    pub max_leaf_nodes: u64,
    pub max_index_nodes: u64,
    pub queue_capacity_bytes: u64,
}

/// One open stream.
pub struct OpenStream {
    pub catalog: Catalog,
    pub stream: Mutex<EventStream>,
    placement_name: String,
    /// Set (under the stream's lock) once the stream is dropped: a writer or
    /// query that got this handle before the drop finds it gone.
    dropped: AtomicBool,
}

impl OpenStream {
    /// Whether the stream was dropped (check it under the stream's lock).
    pub fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    pub fn info(&self) -> StreamInfo {
        StreamInfo {
            db: self.catalog.db.clone(),
            name: self.catalog.name.clone(),
            attributes: attrs_of(&self.catalog.schema),
            events: self.stream.lock().len(),
            placement: self.placement_name.clone(),
        }
    }
}

/// What the recovery of one stream found.
#[derive(Clone, Debug)]
pub struct StreamRecovered {
    pub db: String,
    pub name: String,
    pub events: u64,
    pub duration: Duration,
    pub merge_resumed: bool,
}

/// A stream that failed to recover at open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedStream {
    pub db: String,
    pub name: String,
    /// The recovery's error, as text for operators.
    pub reason: String,
}

/// The recovery of every stream at open.
#[derive(Clone, Debug, Default)]
pub struct StreamsRecovery {
    pub streams: Vec<StreamRecovered>,
    /// Streams that failed to recover (see the module comment).
    pub failed: Vec<FailedStream>,
    /// Leftover `.creating-*` / `.dropped-*` directories removed.
    pub leftovers_removed: usize,
    pub duration: Duration,
}

impl fmt::Display for StreamsRecovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "event streams: {} recovered in {:.3} s ({} leftover directories removed)",
            self.streams.len(),
            self.duration.as_secs_f64(),
            self.leftovers_removed
        )?;
        for s in &self.streams {
            write!(
                f,
                "\n  stream {}/{}: {} events in {:.3} ms{}",
                s.db,
                s.name,
                s.events,
                s.duration.as_secs_f64() * 1e3,
                if s.merge_resumed { " (finished an interrupted out-of-order merge)" } else { "" }
            )?;
        }
        for s in &self.failed {
            write!(f, "\n  stream {}/{}: FAILED to recover, unavailable: {}", s.db, s.name, s.reason)?;
        }
        Ok(())
    }
}

/// The schema as the API shows it.
pub fn attrs_of(schema: &StreamSchema) -> Vec<StreamAttr> {
    schema
        .attrs()
        .iter()
        .map(|a| StreamAttr {
            name: a.name.clone(),
            ty: match a.ty {
                AttrType::I64 => StreamAttrType::I64,
                AttrType::F64 => StreamAttrType::F64,
                AttrType::I32 => StreamAttrType::I32,
                AttrType::F32 => StreamAttrType::F32,
                AttrType::Bool => StreamAttrType::Bool,
                AttrType::FixedStr(len) => StreamAttrType::Str { len_bytes: len },
            },
        })
        .collect()
}

/// The event store's schema for API attributes.
pub fn schema_of(attrs: &[StreamAttr]) -> Result<StreamSchema, StreamError> {
    let attrs = attrs
        .iter()
        .map(|a| {
            Attr::new(
                a.name.clone(),
                match a.ty {
                    StreamAttrType::I64 => AttrType::I64,
                    StreamAttrType::F64 => AttrType::F64,
                    StreamAttrType::I32 => AttrType::I32,
                    StreamAttrType::F32 => AttrType::F32,
                    StreamAttrType::Bool => AttrType::Bool,
                    StreamAttrType::Str { len_bytes } => AttrType::FixedStr(len_bytes),
                },
            )
        })
        .collect();
    StreamSchema::new(attrs).map_err(|e| StreamError::Invalid(format!("bad schema: {e}")))
}

fn io(e: std::io::Error) -> StreamError {
    StreamError::Engine(EngineError::Io(e))
}

/// The streams of one data directory.
pub struct Streams {
    root: PathBuf,
    settings: NewStreamSettings,
    pmem: PmemSettings,
    open: RwLock<BTreeMap<(String, String), Arc<OpenStream>>>,
    /// Streams that failed to recover, by (db, name): the reason.
    failed: RwLock<BTreeMap<(String, String), String>>,
    /// Serializes create and drop.
    ddl: Mutex<()>,
}

impl Streams {
    /// Opens `root` (creating it), removes leftovers of interrupted creates
    /// and drops, and recovers every stream.
    pub fn open(
        root: &Path,
        settings: NewStreamSettings,
        pmem: PmemSettings,
    ) -> Result<(Streams, StreamsRecovery), EngineError> {
        let started = Instant::now();
        if !root.exists() {
            std::fs::create_dir_all(root)?;
            if let Some(parent) = root.parent() {
                catalog::sync_dir(parent)?;
            }
        }
        let streams = Streams {
            root: root.to_path_buf(),
            settings,
            pmem,
            open: RwLock::new(BTreeMap::new()),
            failed: RwLock::new(BTreeMap::new()),
            ddl: Mutex::new(()),
        };
        let mut report = StreamsRecovery::default();
        for db_dir in sorted_dirs(root)? {
            let mut removed_here = false;
            for dir in sorted_dirs(&db_dir)? {
                let file_name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
                if file_name.starts_with(CREATING_PREFIX) || file_name.starts_with(DROPPED_PREFIX) {
                    std::fs::remove_dir_all(&dir)?;
                    report.leftovers_removed += 1;
                    removed_here = true;
                    continue;
                }
                let db_name = db_dir.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
                let one = Instant::now();
                match recover_one(&dir, &db_name, &file_name, &pmem) {
                    Ok((catalog, stream, merge_resumed)) => {
                        report.streams.push(StreamRecovered {
                            db: catalog.db.clone(),
                            name: catalog.name.clone(),
                            events: stream.len(),
                            duration: one.elapsed(),
                            merge_resumed,
                        });
                        streams.insert(catalog, stream);
                    }
                    Err(e) => {
                        let failed = FailedStream { db: db_name, name: file_name, reason: e.to_string() };
                        streams
                            .failed
                            .write()
                            .insert((failed.db.clone(), failed.name.clone()), failed.reason.clone());
                        report.failed.push(failed);
                    }
                }
            }
            if removed_here {
                catalog::sync_dir(&db_dir)?;
            }
        }
        report.duration = started.elapsed();
        Ok((streams, report))
    }

    fn insert(&self, catalog: Catalog, stream: EventStream) -> Arc<OpenStream> {
        let placement_name = format!("{} ({})", stream.config().name(), catalog.placement.name());
        let key = (catalog.db.clone(), catalog.name.clone());
        let open = Arc::new(OpenStream {
            catalog,
            stream: Mutex::new(stream),
            placement_name,
            dropped: AtomicBool::new(false),
        });
        self.open.write().insert(key, Arc::clone(&open));
        open
    }

    /// [`EventStream::sync_to_media`] of every open stream (the engine's
    /// checkpoints and graceful shutdown call it); returns how many.
    pub fn sync_to_media(&self) -> Result<usize, EngineError> {
        let mut synced = 0;
        for open in self.all() {
            let mut stream = open.stream.lock();
            if !open.is_dropped() {
                stream.sync_to_media().map_err(placement::from_event_error)?;
                synced += 1;
            }
        }
        Ok(synced)
    }

    /// The open stream `db`/`name`.
    pub fn get(&self, db: &str, name: &str) -> Option<Arc<OpenStream>> {
        self.open.read().get(&(db.to_string(), name.to_string())).cloned()
    }

    /// Why stream `db`/`name` is unavailable, if it failed to recover.
    pub fn failed_reason(&self, db: &str, name: &str) -> Option<String> {
        self.failed.read().get(&(db.to_string(), name.to_string())).cloned()
    }

    /// The streams that failed to recover, sorted by (db, name).
    pub fn failed(&self) -> Vec<FailedStream> {
        self.failed
            .read()
            .iter()
            .map(|((db, name), reason)| FailedStream {
                db: db.clone(),
                name: name.clone(),
                reason: reason.clone(),
            })
            .collect()
    }

    /// [`StreamError::Unavailable`] for a failed stream.
    pub fn unavailable(&self, db: &str, name: &str) -> Option<StreamError> {
        self.failed_reason(db, name).map(|why| {
            StreamError::Unavailable(format!(
                "stream {db}/{name} is unavailable: it failed to recover at startup ({why}); drop it or restore its files and restart"
            ))
        })
    }

    /// Every open stream, sorted by (db, name).
    pub fn all(&self) -> Vec<Arc<OpenStream>> {
        self.open.read().values().cloned().collect()
    }

    /// Names of the streams of `db`, sorted.
    pub fn names(&self, db: &str) -> Vec<String> {
        self.open.read().keys().filter(|(d, _)| d == db).map(|(_, n)| n.clone()).collect()
    }

    /// Creates a stream (crash-atomic: see the module comment).
    pub fn create(&self, db: &str, name: &str, attrs: &[StreamAttr]) -> Result<Arc<OpenStream>, StreamError> {
        catalog::check_name(db, "database name")?;
        catalog::check_name(name, "stream name")?;
        let schema = schema_of(attrs)?;
        let _ddl = self.ddl.lock();
        if self.get(db, name).is_some() {
            return Err(StreamError::AlreadyExists(format!("stream {db}/{name} already exists")));
        }
        if let Some(why) = self.failed_reason(db, name) {
            return Err(StreamError::AlreadyExists(format!(
                "stream {db}/{name} exists but failed to recover ({why}); drop it first"
            )));
        }
        let s = self.settings;
        let mut catalog = Catalog {
            db: db.to_string(),
            name: name.to_string(),
            schema,
            placement: s.placement,
            flank_batch_events: s.flank_batch_events,
            max_leaf_nodes: s.max_leaf_nodes,
            max_index_nodes: s.max_index_nodes,
            queue_capacity_bytes: s.queue_capacity_bytes,
            region_bytes: 0,
            created_unix_ns: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64),
        };
        let config = placement::stream_config(&catalog);
        catalog.region_bytes = placement::region_bytes(&config).map_err(|e| match e {
            EngineError::InvalidArgument(m) => StreamError::Invalid(format!("bad schema: {m}")),
            other => StreamError::Engine(other),
        })?;
        let db_dir = self.root.join(db);
        std::fs::create_dir_all(&db_dir).map_err(io)?;
        catalog::sync_dir(&self.root)?;
        let tmp = db_dir.join(format!("{CREATING_PREFIX}{name}"));
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(io)?;
        }
        std::fs::create_dir(&tmp).map_err(io)?;
        catalog.write_atomic(&tmp)?;
        let media = placement::open_media(&tmp, &catalog, &self.pmem)?;
        let mut stream = EventStream::create(config, media)
            .map_err(|e| StreamError::Engine(placement::from_event_error(e)))?;
        stream.sync().map_err(|e| StreamError::Engine(placement::from_event_error(e)))?;
        drop(stream);
        // The entries the stream created in it (its data directory, region).
        catalog::sync_dir(&tmp)?;
        let dir = db_dir.join(name);
        std::fs::rename(&tmp, &dir).map_err(io)?;
        catalog::sync_dir(&db_dir)?;
        // Reopen from the final directory (the region is mapped from there).
        let config = placement::stream_config(&catalog);
        let media = placement::open_media(&dir, &catalog, &self.pmem)?;
        let (stream, _) = EventStream::recover(config, media)
            .map_err(|e| StreamError::Engine(placement::from_event_error(e)))?;
        Ok(self.insert(catalog, stream))
    }

    /// Drops a stream durably (see the module comment). If the rename fails
    /// nothing changed: the stream stays open and listed.
    pub fn drop_stream(&self, db: &str, name: &str) -> Result<(), StreamError> {
        let _ddl = self.ddl.lock();
        let key = (db.to_string(), name.to_string());
        let Some(open) = self.get(db, name) else {
            if self.failed_reason(db, name).is_some() {
                return self.drop_failed(db, name);
            }
            return Err(StreamError::NotFound(format!("stream {db}/{name} not found")));
        };
        // Wait for in-flight writes and queries of the stream.
        let _quiet = open.stream.lock();
        let db_dir = self.root.join(db);
        let tomb = db_dir.join(format!("{DROPPED_PREFIX}{name}"));
        if tomb.exists() {
            std::fs::remove_dir_all(&tomb).map_err(io)?;
        }
        std::fs::rename(db_dir.join(name), &tomb).map_err(io)?;
        open.dropped.store(true, Ordering::Release);
        self.open.write().remove(&key);
        catalog::sync_dir(&db_dir)?;
        std::fs::remove_dir_all(&tomb).map_err(io)?;
        catalog::sync_dir(&db_dir)?;
        Ok(())
    }
}

impl Streams {
    /// Drops a stream that failed to recover: its directory goes the way of
    /// any dropped stream's (caller holds the DDL lock).
    fn drop_failed(&self, db: &str, name: &str) -> Result<(), StreamError> {
        let db_dir = self.root.join(db);
        let tomb = db_dir.join(format!("{DROPPED_PREFIX}{name}"));
        if tomb.exists() {
            std::fs::remove_dir_all(&tomb).map_err(io)?;
        }
        std::fs::rename(db_dir.join(name), &tomb).map_err(io)?;
        self.failed.write().remove(&(db.to_string(), name.to_string()));
        catalog::sync_dir(&db_dir)?;
        std::fs::remove_dir_all(&tomb).map_err(io)?;
        catalog::sync_dir(&db_dir)?;
        Ok(())
    }
}

/// Reads the catalog of the stream in `dir` (database `db`, directory name
/// `name`) and recovers the stream; whether it finished an interrupted merge.
fn recover_one(
    dir: &Path,
    db: &str,
    name: &str,
    pmem: &PmemSettings,
) -> Result<(Catalog, EventStream, bool), EngineError> {
    let catalog = Catalog::read(dir)?;
    if catalog.db != db || catalog.name != name {
        return Err(EngineError::corruption(
            dir.display().to_string(),
            format!("the catalog names stream {}/{}", catalog.db, catalog.name),
        ));
    }
    let config = placement::stream_config(&catalog);
    let media = placement::open_media(dir, &catalog, pmem)?;
    let (stream, r) = EventStream::recover(config, media).map_err(|e| EngineError::Storage {
        what: format!("recovering stream {}/{}", catalog.db, catalog.name),
        source: Box::new(e),
    })?;
    Ok((catalog, stream, r.merge_resumed.is_some()))
}

/// Subdirectories of `dir`, sorted (none if `dir` does not exist).
fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>, EngineError> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e.into()),
    };
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}
