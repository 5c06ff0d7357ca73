//! The series engine's write path under DecLog (declog.txt 4.1-4.3): one
//! transaction, one log entry per written or deleted value, a data-driven
//! LSN, acknowledgement once every entry's tail is persisted.
//!
//! 1. Under the *cut* lock (shared) and briefly the order mutex: type-check
//!    and assign ids to new series (published at once; the entries carry
//!    full keys, so replay can recreate them), resolve read and delete
//!    targets, and classify each written point. A point above every
//!    timestamp planned so far for its series is an *insert* (rule 2 of
//!    4.1.2: it touches nothing that exists); any other is an *update* and
//!    takes part in the LSN protocol (a conservative reading: an
//!    out-of-order point that happens to be new is treated as an update).
//! 2. [`acquire`] the LSN (4.1.2): wait on lock bits of accessed points,
//!    lock the modified ones (abort and retry on conflict), validate, set
//!    `uts`. A `uts` overflow checkpoints (rule 5) and retries.
//! 3. Read the read points (after step 2 waited for their lock bits).
//! 4. Submit the entries to DecLog (queued in key-partitioned streams while
//!    the locks are held, so the thread snapshot sees every dependency),
//!    then wait for the tails outside every engine lock.
//! 5. Apply under the apply gate: inserts with [`SeriesData::apply_insert`]
//!    (a later update of the same point may have been applied first: it
//!    wins, as in replay where LSN-0 entries go first), updates and point
//!    deletes in their locks' order; then release the locks (commit).
//!
//! Inserted data becomes visible when acknowledged, never before.
//!
//! [`SeriesData::apply_insert`]: crate::series_data::SeriesData::apply_insert

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use strata_declog::{compress::key_hash, DeclogError, EntryIn};
use strata_log::LogError;
use strata_media::TxnId;

use super::control_table::PointRef;
use super::entry_key::{encode_key, encode_payload, EntryOp};
use super::lsn::{acquire, LsnError, TxnAccess};
use super::side::{DeclogSide, LogKey};
use crate::engine::SeriesEngine;
use crate::error::EngineError;
use crate::model::{FieldValue, Point, SeriesId, TimeRange, TimestampNs};
use crate::series_data::SeriesData;
use crate::txn::{TxnOp, TxnOutcome};
use crate::wal::WalRecord;

/// LSN-protocol aborts retried before giving up.
const MAX_LSN_RETRIES: u32 = 10_000;
/// Streams fuller than this fraction trigger a checkpoint before a write.
const CHECKPOINT_AT_FREE_FRACTION: f64 = 0.25;
/// Stream bytes one entry may take besides its key (header, tail, value,
/// timestamp, rest, padding share).
const ENTRY_ESTIMATE_BYTES: u64 = 128;

/// What a planned operation does to its point.
#[derive(Clone, Debug)]
enum Planned {
    Insert(FieldValue),
    Update(FieldValue),
    Delete,
}

struct PlannedTxn {
    /// (series, ts) -> what to do; one per point (the last write wins).
    ops: Vec<(SeriesId, TimestampNs, Planned)>,
    reads: Vec<Option<(SeriesId, TimestampNs)>>,
    outcome: crate::store::WriteOutcome,
}

impl PlannedTxn {
    fn with_inserts_as_updates_if_ordered(mut self) -> PlannedTxn {
        let ordered = !self.reads.iter().all(Option::is_none)
            || self.ops.iter().any(|(_, _, w)| !matches!(w, Planned::Insert(_)));
        if ordered {
            for (_, _, what) in &mut self.ops {
                if let Planned::Insert(v) = what {
                    *what = Planned::Update(v.clone());
                }
            }
        }
        self
    }
}

impl SeriesEngine {
    pub(crate) fn execute_declog(
        &self,
        dl: &DeclogSide,
        db: &str,
        ops: &[TxnOp],
    ) -> Result<TxnOutcome, EngineError> {
        let points = crate::txn::written_points(ops);
        self.run_declog_txn(dl, db, &points, ops)
    }

    /// Runs one transaction: `points` written, plus the reads and deletes
    /// of `others` (its writes are ignored: they are in `points`).
    pub(crate) fn run_declog_txn(
        &self,
        dl: &DeclogSide,
        db: &str,
        points: &[Point],
        others: &[TxnOp],
    ) -> Result<TxnOutcome, EngineError> {
        self.ensure_log_space(dl, points.iter().map(|p| p.fields.len()).sum::<usize>() + others.len())?;
        let mut cut = Some(dl.cut.read());
        let plan = self.plan_declog(db, points, others)?;
        let mut out = TxnOutcome { write: plan.outcome.clone(), ..Default::default() };
        // A transaction that reads, updates or deletes gets an LSN above 0,
        // which every one of its entries carries: its new points must then
        // take part in the protocol too (locked, `uts` set), or a later
        // update of such a point could get a smaller LSN and replay first.
        let plan = plan.with_inserts_as_updates_if_ordered();
        let mut access = TxnAccess::default();
        for (id, ts, what) in &plan.ops {
            let p = PointRef::new(*id, *ts);
            match what {
                Planned::Insert(_) => access.inserts += 1,
                Planned::Update(_) => access.updates.push(p),
                Planned::Delete => access.deletes.push(p),
            }
        }
        access.reads = plan.reads.iter().flatten().map(|(id, ts)| PointRef::new(*id, *ts)).collect();

        // 2. The LSN.
        let guard = loop {
            match acquire(&dl.control, &access) {
                Ok(g) => break g,
                Err(e) if e.is_conflict() => {
                    out.retries += 1;
                    if out.retries > MAX_LSN_RETRIES {
                        return Err(EngineError::Other(format!(
                            "transaction aborted {} times by conflicting updates: {e}",
                            out.retries
                        )));
                    }
                    std::thread::yield_now();
                }
                Err(LsnError::UtsOverflow { .. }) => {
                    // Rule 5: checkpoint (it needs the cut lock exclusively).
                    drop(cut.take());
                    self.checkpoint_declog(dl)?;
                    cut = Some(dl.cut.read());
                }
                Err(e) => return Err(EngineError::Other(e.to_string())),
            }
        };

        // 3. Reads.
        for r in &plan.reads {
            out.reads.push(match r {
                Some((id, ts)) => self.read_point(*id, *ts)?,
                None => None,
            });
        }
        if plan.ops.is_empty() {
            guard.commit();
            return Ok(out);
        }

        // 4. Log.
        let lsn = dl.entry_lsn(guard.lsn().get());
        out.lsn = lsn;
        let payloads: Vec<(Vec<u8>, u64)> = plan
            .ops
            .iter()
            .map(|(id, ts, what)| {
                let key = self.log_key(dl, *id)?;
                let op = match what {
                    Planned::Insert(v) | Planned::Update(v) => EntryOp::Write(v.clone()),
                    Planned::Delete => EntryOp::Delete,
                };
                Ok((encode_payload(&key.bytes, *ts, &op), key.hash))
            })
            .collect::<Result<_, EngineError>>()?;
        let max = dl.log.max_payload_bytes();
        if let Some((p, _)) = payloads.iter().find(|(p, _)| p.len() as u64 > max) {
            return Err(EngineError::RequestTooLarge { record_bytes: p.len() as u64, max_bytes: max });
        }
        let entries: Vec<EntryIn<'_>> = payloads
            .iter()
            .map(|(payload, hash)| EntryIn { key_hash: *hash, lsn, compressed: false, payload })
            .collect();
        let txn = TxnId(dl.next_txn.fetch_add(1, Ordering::Relaxed));
        let durable = dl.log.submit(txn, &entries).and_then(|ticket| dl.wait(&ticket));
        if let Err(e) = durable {
            // Dropping the guard aborts: the control words go back.
            drop(guard);
            return Err(self.declog_failed(e));
        }
        let bytes: u64 = payloads.iter().map(|(p, _)| p.len() as u64).sum();

        // 5. Apply, then release the locks.
        let max_file_seq = self.ckpt.lock().next_file_seq.saturating_sub(1);
        {
            let _gate = self.gate.write();
            for (id, ts, what) in &plan.ops {
                let mut shard = self.shard(*id).lock();
                let data = shard.entry(*id).or_insert_with(|| SeriesData::new(self.field_type_of(*id, what)));
                match what {
                    Planned::Insert(v) => data.apply_insert(*ts, v.clone()),
                    Planned::Update(v) => data.apply_update(*ts, v.clone()),
                    Planned::Delete => data.apply_point_delete(*ts, max_file_seq),
                }
            }
        }
        guard.commit();
        drop(cut);
        let c = &self.counters;
        c.txns_committed.fetch_add(1, Ordering::Relaxed);
        c.points_written.fetch_add(out.write.points_written as u64, Ordering::Relaxed);
        c.values_written.fetch_add(out.write.values_written as u64, Ordering::Relaxed);
        c.log_bytes_written.fetch_add(bytes, Ordering::Relaxed);
        Ok(out)
    }

    /// Step 1 (see the module comment).
    fn plan_declog(&self, db: &str, points: &[Point], others: &[TxnOp]) -> Result<PlannedTxn, EngineError> {
        let mut order = self.order.lock();
        self.check_poisoned()?;
        let (rec, outcome) = if points.is_empty() {
            if !self.index.read().has_database(db) {
                return Err(EngineError::UnknownDatabase(db.to_string()));
            }
            (None, Default::default())
        } else {
            let (rec, outcome) = self.plan_write(db, points)?;
            (Some(rec), outcome)
        };
        let mut by_point: HashMap<(SeriesId, TimestampNs), usize> = HashMap::new();
        let mut ops: Vec<(SeriesId, TimestampNs, Option<FieldValue>)> = Vec::new();
        let mut push = |id: SeriesId, ts: TimestampNs, v: Option<FieldValue>| match by_point.get(&(id, ts)) {
            Some(&i) => ops[i].2 = v,
            None => {
                by_point.insert((id, ts), ops.len());
                ops.push((id, ts, v));
            }
        };
        if let Some(WalRecord::Write { db, new_series, points }) = &rec {
            let mut index = self.index.write();
            for s in new_series {
                index.insert(db, s.id, s.key.clone(), s.field_type);
            }
            drop(index);
            for (id, ts, v) in points {
                push(*id, *ts, Some(v.clone()));
            }
        }
        let mut reads = Vec::new();
        {
            let index = self.index.read();
            for op in others {
                match op {
                    TxnOp::Write(_) => {}
                    TxnOp::Read { value, ts } => reads.push(
                        index
                            .lookup_parts(db, &value.measurement, &value.tags, &value.field)
                            .map(|id| (id, *ts)),
                    ),
                    TxnOp::Delete { value, ts } => {
                        if let Some(id) =
                            index.lookup_parts(db, &value.measurement, &value.tags, &value.field)
                        {
                            push(id, *ts, None);
                        }
                    }
                }
            }
        }
        let mut planned = Vec::with_capacity(ops.len());
        for (id, ts, v) in ops {
            let last = match order.planned_last.get(&id) {
                Some(last) => *last,
                None => self.shard(id).lock().get(&id).and_then(|d| d.max_ts()).unwrap_or(i64::MIN),
            };
            let what = match v {
                Some(v) if ts > last => Planned::Insert(v),
                Some(v) => Planned::Update(v),
                None => Planned::Delete,
            };
            order.planned_last.insert(id, last.max(ts));
            planned.push((id, ts, what));
        }
        Ok(PlannedTxn { ops: planned, reads, outcome })
    }

    /// The field type of a series (for a series whose data is created by
    /// this apply).
    fn field_type_of(&self, id: SeriesId, what: &Planned) -> crate::model::FieldType {
        match what {
            Planned::Insert(v) | Planned::Update(v) => v.field_type(),
            Planned::Delete => {
                self.index.read().entry(id).map_or(crate::model::FieldType::Float, |e| e.field_type)
            }
        }
    }

    /// A series' log key, from the cache or encoded from the index.
    fn log_key(&self, dl: &DeclogSide, id: SeriesId) -> Result<Arc<LogKey>, EngineError> {
        if let Some(k) = dl.keys.read().get(&id) {
            return Ok(k.clone());
        }
        let bytes = {
            let index = self.index.read();
            let e = index
                .entry(id)
                .ok_or_else(|| EngineError::Other(format!("{id} vanished from the index during a write")))?;
            encode_key(&e.db, &e.key, e.field_type)
        };
        let key = Arc::new(LogKey { hash: key_hash(&bytes), bytes });
        dl.keys.write().insert(id, key.clone());
        Ok(key)
    }

    /// One point's value (DRAM and sealed), or None.
    fn read_point(&self, id: SeriesId, ts: TimestampNs) -> Result<Option<FieldValue>, EngineError> {
        let mut got = self.read_series(&[id], TimeRange { min_ns: ts, max_ns: ts })?;
        Ok(got.pop().and_then(|mut pts| pts.pop()).map(|(_, v)| v))
    }

    /// Checkpoints first when a stream is getting full, so the log never
    /// fills (a full DecLog stream stops writes until reopened).
    fn ensure_log_space(&self, dl: &DeclogSide, values: usize) -> Result<(), EngineError> {
        // Room for this transaction even if all of it lands in one stream
        // (an entry is its payload plus header and tail, padded).
        let needed_bytes = values as u64 * (ENTRY_ESTIMATE_BYTES + self.max_key_bytes_hint());
        let min_free = dl.log.free_bytes().into_iter().min().unwrap_or(0);
        if !dl.options.checkpoints
            || (dl.min_free_fraction() >= CHECKPOINT_AT_FREE_FRACTION && min_free >= 2 * needed_bytes)
        {
            return Ok(());
        }
        if dl.space_low.swap(true, Ordering::AcqRel) {
            // Another writer is checkpointing; wait for it.
            drop(dl.checkpoint_running.lock());
            return Ok(());
        }
        let result = self.checkpoint_declog(dl);
        dl.space_low.store(false, Ordering::Release);
        result.map(|_| ())
    }

    /// A generous bound on a log key's bytes, for the space check.
    fn max_key_bytes_hint(&self) -> u64 {
        256
    }

    /// A DecLog failure: poisons the engine when the log stopped.
    fn declog_failed(&self, e: DeclogError) -> EngineError {
        let engine_error = EngineError::Other(format!("declog: {e}"));
        if matches!(e, DeclogError::Poisoned(_) | DeclogError::Stalled) || e.is_corruption() {
            self.poison(&LogError::Poisoned(e.to_string()));
        }
        engine_error
    }
}
