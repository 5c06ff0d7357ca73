//! Opening a series engine that runs DecLog (declog.txt 4.6): the
//! checkpoint (manifest, block files) as for every protocol, then the log
//! replay of DecLog.
//!
//! `DecLog::open` has already parsed the streams (one parsing pass per
//! stream, from the persisted heads), dropped incomplete transactions,
//! decompressed the entries, and split them into LSN-0 entries and update
//! buckets by LSN. Here:
//! - entries before the manifest's `declog_cut` are skipped (a crash
//!   between the manifest and the purge left them; the block files cover
//!   them);
//! - LSN-0 entries are replayed in parallel by `replay_threads` threads, a
//!   thread per group of streams (a key maps to one stream, so the entries
//!   of one series stay in log order);
//! - update buckets are replayed by one thread in ascending entry LSN; the
//!   era in the high bits splits them at each checkpoint's `t_LSN`.
//!
//! Each series' range of replayed timestamps (deletes included) becomes its
//! first span of touched time (`touched`), in which later writes are checked
//! for existence, so a point deleted in the log is never re-inserted with
//! LSN 0 (which would replay before its delete). Entries are single-point
//! (format version 2) or per-key (version 3); both replay the same way.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;
use strata_declog::compress::{point_payload, points_payload, PointItem};
use strata_declog::{DecLog, PayloadForm, Recovered as ParsedLog, RecoveredEntry};

use super::entry_key::{decode_key, decode_op, EntryOp};
use super::protocol::DeclogProtocol;
use super::side::{resume_after, DeclogEngineOptions, DeclogSide};
use super::touched::TouchedMap;
use crate::core::data::PointChange;
use crate::core::SeriesCore;
use crate::error::EngineError;
use crate::manifest::Manifest;
use crate::model::{FieldType, SeriesId, TimestampNs};
use crate::protocol::{ProtocolOpener, Recovered};
use crate::recovery::{RecoveryPhase, RecoveryReport};

/// Per replay thread: key bytes -> series, so keys are decoded once.
type KeyCache = HashMap<Vec<u8>, (SeriesId, FieldType)>;

/// An opened DecLog and its parse (`DecLog::open`), not yet replayed.
pub struct DeclogOpener {
    pub log: DecLog,
    pub parsed: ParsedLog,
    pub options: DeclogEngineOptions,
    pub replay_threads: usize,
}

impl DeclogOpener {
    pub fn boxed(
        log: DecLog,
        parsed: ParsedLog,
        options: DeclogEngineOptions,
        replay_threads: usize,
    ) -> Box<Self> {
        Box::new(DeclogOpener { log, parsed, options, replay_threads })
    }
}

impl ProtocolOpener for DeclogOpener {
    fn name(&self) -> &'static str {
        self.options.name
    }

    fn recover(
        self: Box<Self>,
        core: &SeriesCore,
        manifest: Option<&Manifest>,
        report: &mut RecoveryReport,
        progress: &dyn Fn(RecoveryPhase, u64, u64),
    ) -> Result<Recovered, EngineError> {
        let DeclogOpener { log, parsed: recovered, options, replay_threads } = *self;
        let same_log = manifest.is_none_or(|m| m.protocol == options.name);
        let streams = log.layout().threads;
        let cut: Vec<u64> = match &manifest {
            Some(m) if same_log && m.declog_cut.len() == streams => m.declog_cut.clone(),
            _ => vec![0; streams],
        };
        // A log the manifest does not name was erased by the facade when it
        // switched protocols: nothing of it is replayed.
        let foreign = manifest.is_some() && !same_log;
        let skip = |e: &RecoveredEntry| foreign || e.pos < cut[e.stream];

        let t = Instant::now();
        let total = recovered.entry_count() as u64;
        // DecLog's log records are its entries (one per operation).
        report.log_records = recovered.entry_count();
        let max_lsn = recovered.updates.keys().next_back().copied().unwrap_or(0);
        let floors: Mutex<Floors> = Mutex::new(HashMap::new());
        let done = AtomicU64::new(0);
        let replayed = AtomicU64::new(0);
        let skipped = AtomicU64::new(0);

        // LSN-0 entries, in parallel by stream group.
        let threads = replay_threads.clamp(1, streams.max(1));
        let mut by_group: Vec<Vec<&RecoveredEntry>> = vec![Vec::new(); threads];
        for e in &recovered.inserts {
            by_group[e.stream % threads].push(e);
        }
        let engine_ref = core;
        let results: Vec<Result<(), EngineError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = by_group
                .iter()
                .map(|group| {
                    let (floors, done, replayed, skipped) = (&floors, &done, &replayed, &skipped);
                    scope.spawn(move || {
                        let mut cache = KeyCache::new();
                        let mut local_floor: Floors = HashMap::new();
                        for e in group {
                            if skip(e) {
                                skipped.fetch_add(1, Ordering::Relaxed);
                            } else {
                                let n = replay_entry(engine_ref, e, &mut cache, &mut local_floor)?;
                                replayed.fetch_add(n, Ordering::Relaxed);
                            }
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        merge_floors(&mut floors.lock(), local_floor);
                        Ok(())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("replay thread panicked")).collect()
        });
        results.into_iter().collect::<Result<(), EngineError>>()?;
        progress(RecoveryPhase::Replay, done.load(Ordering::Relaxed), total);

        // Updates, bucket by bucket in ascending LSN.
        let mut cache = KeyCache::new();
        let mut local_floor = HashMap::new();
        for e in recovered.updates_in_lsn_order() {
            if skip(e) {
                skipped.fetch_add(1, Ordering::Relaxed);
            } else {
                replayed.fetch_add(replay_entry(core, e, &mut cache, &mut local_floor)?, Ordering::Relaxed);
            }
            if done.fetch_add(1, Ordering::Relaxed).is_multiple_of(4096) {
                progress(RecoveryPhase::Replay, done.load(Ordering::Relaxed), total);
            }
        }
        let mut floors = floors.into_inner();
        merge_floors(&mut floors, local_floor);
        for (id, floor) in floors.iter_mut() {
            if let Some((lo, hi)) = core.data().ts_range(*id) {
                *floor = (floor.0.min(lo), floor.1.max(hi));
            }
        }

        report.points_replayed = replayed.into_inner();
        report.log_records_skipped = skipped.into_inner() as usize;
        report.replay_s = t.elapsed().as_secs_f64();
        progress(RecoveryPhase::Replay, total, total);

        let (era, central) = resume_after(max_lsn);
        let next_txn = recovered.max_txn_id.map_or(1, |t| t.0 + 1);
        let side = DeclogSide::new(log, options, era, central, next_txn);
        let protocol = DeclogProtocol::new(side, TouchedMap::from_replay(floors));
        Ok(Recovered { protocol: Box::new(protocol), checkpoint_now: foreign })
    }
}

/// Replays one entry (a single operation, or every operation of its
/// transaction on one series); returns the points replayed, 0 if it was
/// dropped (its series' type differs: only a damaged or foreign log gets
/// there).
fn replay_entry(
    core: &SeriesCore,
    e: &RecoveredEntry,
    cache: &mut KeyCache,
    floors: &mut HashMap<SeriesId, (TimestampNs, TimestampNs)>,
) -> Result<u64, EngineError> {
    let corrupt = |why: String| {
        EngineError::corruption(
            "declog",
            format!("entry of {} in stream {} at {}: {why}", e.txn, e.stream, e.pos),
        )
    };
    let (key, points): (&[u8], Vec<PointItem<'_>>) = match e.form {
        PayloadForm::Single => {
            let p = point_payload::decode(&e.payload).map_err(|why| corrupt(why.to_string()))?;
            (p.key, vec![PointItem { timestamp: p.timestamp, value_bits: p.value_bits, rest: p.rest }])
        }
        PayloadForm::PerKey => {
            let p = points_payload::decode(&e.payload).map_err(|why| corrupt(why.to_string()))?;
            (p.key, p.points().collect())
        }
    };
    let (id, field_type) = match cache.get(key) {
        Some(hit) => *hit,
        None => {
            let k = decode_key(key).map_err(|why| corrupt(why.to_string()))?;
            let found_id = core.index().read().lookup(&k.db, &k.key);
            // The index guard is dropped before `series_type` reads it
            // again: a second read behind a waiting writer deadlocks.
            let found = found_id.map(|id| (id, series_type(core, id)));
            let resolved = match found {
                Some((id, Some(ft))) => (id, ft),
                _ => {
                    let mut index = core.index().write();
                    match index.lookup(&k.db, &k.key) {
                        Some(id) => (id, index.entry(id).map_or(k.field_type, |x| x.field_type)),
                        None => {
                            let id = index.allocate_id();
                            index.insert(&k.db, id, k.key.clone(), k.field_type);
                            (id, k.field_type)
                        }
                    }
                }
            };
            if resolved.1 != k.field_type {
                return Ok(0);
            }
            cache.insert(key.to_vec(), resolved);
            resolved
        }
    };
    let max_file_seq = core.blocks().max_file_seq();
    for p in &points {
        let op = decode_op(p.value_bits, p.rest, field_type).map_err(|why| corrupt(why.to_string()))?;
        let ts = p.timestamp;
        let floor = floors.entry(id).or_insert((ts, ts));
        *floor = (floor.0.min(ts), floor.1.max(ts));
        let change = match op {
            EntryOp::Write(v) => PointChange::Update(v),
            EntryOp::Delete => PointChange::Delete,
        };
        core.data().replay_change(id, field_type, ts, change, max_file_seq);
    }
    Ok(points.len() as u64)
}

fn series_type(core: &SeriesCore, id: SeriesId) -> Option<FieldType> {
    core.index().read().entry(id).map(|e| e.field_type)
}

/// Per series, the range of timestamps its log entries named.
type Floors = HashMap<SeriesId, (TimestampNs, TimestampNs)>;

fn merge_floors(into: &mut Floors, from: Floors) {
    for (id, (lo, hi)) in from {
        let f = into.entry(id).or_insert((lo, hi));
        *f = (f.0.min(lo), f.1.max(hi));
    }
}
