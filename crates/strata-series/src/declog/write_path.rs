//! The series engine's write path under DecLog (declog.txt 4.1-4.3): one
//! transaction, one log entry per series it writes or deletes in (every
//! operation on that series, `entry_key`), a data-driven LSN,
//! acknowledgement once every entry's tail is persisted.
//!
//! 1. Under the *cut* lock (shared) and briefly the planning mutex:
//!    type-check and assign ids to new series (published at once; the
//!    entries carry full keys, so replay can recreate them), resolve read
//!    and delete targets, and classify each written point by existence
//!    (`touched`): a point that surely does not exist, in the data or in a
//!    transaction in flight, is an *insert* (rule 2 of 4.1.2: it touches
//!    nothing that exists), whatever its time order; any other is an
//!    *update* and takes part in the LSN protocol. The transaction's range
//!    of each series stays *in flight* until it is applied.
//! 2. [`acquire`] the LSN (4.1.2): wait on lock bits of accessed points,
//!    lock the modified ones (abort and retry on conflict), validate, set
//!    `uts`. A `uts` overflow checkpoints (rule 5) and retries.
//! 3. Read the read points (after step 2 waited for their lock bits).
//! 4. Submit the entries to DecLog: a transaction that holds locks at once
//!    (queued in key-partitioned streams while the locks are held, so the
//!    thread snapshot sees every dependency); an insert-only one when its
//!    group waits, with the group's other insert-only members in one push
//!    per stream. Then wait for the tails outside every engine lock,
//!    running the pipeline step meanwhile (`DecLog::wait_helping`).
//! 5. Apply under the apply gate: inserts with [`SeriesData::apply_insert`]
//!    (a later update of the same point may have been applied first: it
//!    wins, as in replay where LSN-0 entries go first), updates and point
//!    deletes in their locks' order; then release the locks (commit).
//!
//! Inserted data becomes visible when acknowledged, never before.
//!
//! Groups ([`SeriesEngine::execute_group`]): steps 1-4 run for each member
//! in turn under one cut lock, the entries of consecutive insert-only
//! members kept and queued together (one batch per stream for all of
//! them), and step 5 runs for all logged members once a member must lock,
//! or read a point they write (it waits for them first), or the group ends.
//!
//! [`SeriesEngine::execute_group`]: crate::SeriesEngine::execute_group
//!
//! [`SeriesData::apply_insert`]: crate::series_data::SeriesData::apply_insert

use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::{Mutex, RwLockReadGuard};
use strata_declog::compress::{key_hash, PointsEntry};
use strata_declog::{DeclogError, Ticket};
use strata_media::TxnId;

use super::control_table::PointRef;
use super::entry_key::encode_key;
use super::log_size;
use super::lsn::{acquire, LsnError, LsnGuard, TxnAccess};
use super::protocol::DeclogProtocol;
use super::run_points::{rest_len, split_per_key, written, RunPoints};
use super::runs::PlannedOp;
use super::side::{DeclogSide, LogKey};
use super::touched::{Existence, PlanToken, TouchedMap};
use crate::core::data::PointChange;
use crate::core::SeriesCore;
use crate::error::EngineError;
use crate::model::{FieldValue, Point, SeriesId, TimestampNs};
use crate::txn::{TxnOp, TxnOutcome};
use crate::wal::WalRecord;

/// LSN-protocol aborts retried before giving up.
const MAX_LSN_RETRIES: u32 = 10_000;
/// Streams with less than this fraction free ask for a background checkpoint.
const CHECKPOINT_AT_FREE_FRACTION: f64 = 0.25;
/// A bound on the stream bytes of a transaction's read or delete (an
/// entry's header and padding, a generous key).
const OTHER_OP_BOUND_BYTES: u64 = log_size::ENTRY_ESTIMATE_BYTES + 256;

struct PlannedTxn<'p> {
    /// (series, ts) -> what to do; one per point (the last write wins),
    /// grouped by series, each series' operations in the transaction's order.
    /// Shared with its entries' points sources while DecLog takes them
    /// (`run_points`); its own again once they are queued.
    ops: Arc<Vec<PlannedOp>>,
    reads: Vec<Option<(SeriesId, TimestampNs)>>,
    outcome: crate::store::WriteOutcome,
    /// Its ranges in flight; dropped once it is applied or failed.
    _in_flight: InFlight<'p>,
}

/// A planned transaction's in-flight ranges ([`TouchedMap::plan`]), taken
/// back when dropped: after its apply, or when it fails.
struct InFlight<'p> {
    touched: &'p Mutex<TouchedMap>,
    token: PlanToken,
    ids: Vec<SeriesId>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.ids.is_empty() {
            self.touched.lock().applied(self.token, &self.ids);
        }
    }
}

impl PlannedTxn<'_> {
    fn with_inserts_as_updates_if_ordered(mut self) -> Self {
        let ordered = !self.reads.iter().all(Option::is_none)
            || self.ops.iter().any(|(_, _, w)| !matches!(w, PointChange::Insert(_)));
        if ordered {
            let ops = Arc::get_mut(&mut self.ops).expect("a plan's operations are not shared before logging");
            for (_, _, what) in ops {
                if let PointChange::Insert(v) = what {
                    *what = PointChange::Update(v.clone());
                }
            }
        }
        self
    }
}

/// A transaction whose entries are logged (or about to be), not yet
/// acknowledged.
struct Logged<'t> {
    /// Its position in the caller's group.
    slot: usize,
    plan: PlannedTxn<'t>,
    guard: LsnGuard<'t>,
    log: LogState,
    out: TxnOutcome,
    bytes: u64,
}

/// Where a transaction's entries are.
enum LogState {
    /// Queued in DecLog: wait for the ticket.
    Queued(Ticket),
    /// An insert-only transaction's entries, kept until the group waits and
    /// then submitted with the other kept ones in one push per stream.
    Kept(TxnId, Vec<PointsEntry>),
}

/// A group being run: the cut lock (shared) it holds, the transactions
/// logged and not yet waited for, the results.
struct GroupRun<'t> {
    dl: &'t DeclogSide,
    cut: Option<RwLockReadGuard<'t, ()>>,
    pending: Vec<Logged<'t>>,
    results: Vec<Option<Result<TxnOutcome, EngineError>>>,
}

/// One transaction of a group: the points it writes, and its reads and
/// deletes (its writes in `others` are ignored: they are in `points`).
pub(crate) struct GroupTxn<'a> {
    pub points: std::borrow::Cow<'a, [Point]>,
    pub others: &'a [TxnOp],
}

impl DeclogProtocol {
    pub(crate) fn execute_declog(
        &self,
        core: &SeriesCore,
        db: &str,
        ops: &[TxnOp],
    ) -> Result<TxnOutcome, EngineError> {
        let points = crate::txn::written_points(ops);
        self.run_declog_txn(core, db, &points, ops)
    }

    /// Runs one transaction: `points` written, plus the reads and deletes
    /// of `others` (its writes are ignored: they are in `points`).
    pub(crate) fn run_declog_txn(
        &self,
        core: &SeriesCore,
        db: &str,
        points: &[Point],
        others: &[TxnOp],
    ) -> Result<TxnOutcome, EngineError> {
        let txn = GroupTxn { points: std::borrow::Cow::Borrowed(points), others };
        self.run_declog_group(core, db, std::slice::from_ref(&txn))
            .pop()
            .expect("a group of one transaction has one result")
    }

    /// Runs a group of independent transactions, as concurrent clients
    /// submit them: each is atomic and acknowledged on its own, in one
    /// result per transaction, in order. The entries of consecutive
    /// insert-only transactions (LSN 0) are all queued before the first
    /// wait, so one flush round of each logging thread can acknowledge them
    /// together (what the paper's many concurrent workers give its logging
    /// threads, with fewer threads). A transaction that locks points, or
    /// reads a point a queued member writes, first waits for the group
    /// queued before it, so it sees every earlier transaction of the group
    /// and never waits on a lock of its own group; one that holds locks is
    /// waited for at once. A read-only one that reads none of the queued
    /// points runs beside them.
    pub(crate) fn run_declog_group(
        &self,
        core: &SeriesCore,
        db: &str,
        txns: &[GroupTxn<'_>],
    ) -> Vec<Result<TxnOutcome, EngineError>> {
        let dl = &self.side;
        // A transaction whose lower bound is already over the log's limit is
        // refused before it is planned, so it leaves no series or field
        // types behind; the exact check after encoding catches the rest.
        let mut results: Vec<Option<Result<TxnOutcome, EngineError>>> =
            (0..txns.len()).map(|_| None).collect();
        let mut needed_bytes = 0;
        for (slot, txn) in txns.iter().enumerate() {
            match log_size::check_request(&dl.log, db, txn.points.iter()) {
                Ok(bound) => needed_bytes += bound + txn.others.len() as u64 * OTHER_OP_BOUND_BYTES,
                Err(e) => results[slot] = Some(Err(e)),
            }
        }
        if let Err(e) = self.ensure_log_space(core, needed_bytes) {
            if txns.len() == 1 {
                return vec![Err(e)];
            }
            let e = Arc::new(e);
            return txns.iter().map(|_| Err(EngineError::GroupFailed(e.clone()))).collect();
        }
        let mut group = GroupRun { dl, cut: Some(dl.cut.read()), pending: Vec::new(), results };
        for (slot, txn) in txns.iter().enumerate() {
            if group.results[slot].is_some() {
                continue;
            }
            match self.start_declog_txn(core, &mut group, db, slot, txn) {
                Ok(Some(logged)) => {
                    // One holding locks is waited for at once, so no later
                    // transaction of the group can wait on its own group's lock.
                    let locks = logged.guard.modified_points().next().is_some();
                    group.pending.push(logged);
                    if locks {
                        self.finish_declog_group(core, &mut group);
                    }
                }
                Ok(None) => {}
                Err(e) => group.results[slot] = Some(Err(e)),
            }
        }
        self.finish_declog_group(core, &mut group);
        drop(group.cut.take());
        group.results.into_iter().map(|r| r.expect("every transaction of the group has a result")).collect()
    }

    /// Steps 1 to 4 of one transaction of a group: plan, LSN, reads, queue
    /// the entries. `Ok(None)` when it finished here (nothing to log: its
    /// result is stored in the group).
    fn start_declog_txn<'t>(
        &'t self,
        core: &SeriesCore,
        group: &mut GroupRun<'t>,
        db: &str,
        slot: usize,
        txn: &GroupTxn<'_>,
    ) -> Result<Option<Logged<'t>>, EngineError> {
        let dl = group.dl;
        let plan = self.plan_declog(core, db, &txn.points, txn.others)?;
        let mut out = TxnOutcome { write: plan.outcome.clone(), ..Default::default() };
        // A transaction that reads, updates or deletes gets an LSN above 0,
        // which every one of its entries carries: its new points must then
        // take part in the protocol too (locked, `uts` set), or a later
        // update of such a point could get a smaller LSN and replay first.
        let plan = plan.with_inserts_as_updates_if_ordered();
        let mut access = TxnAccess::default();
        for (id, ts, what) in plan.ops.iter() {
            let p = PointRef::new(*id, *ts);
            match what {
                PointChange::Insert(_) => access.inserts += 1,
                PointChange::Update(_) => access.updates.push(p),
                PointChange::Delete => access.deletes.push(p),
            }
        }
        access.reads = plan.reads.iter().flatten().map(|(id, ts)| PointRef::new(*id, *ts)).collect();
        // One that locks must see (and may wait on) the group queued before
        // it; one that only reads, only when it reads a point a queued
        // member writes (the members queued so far are insert-only, so it
        // cannot wait on their locks, and it is ordered before them otherwise).
        let reads_queued = access.reads.iter().any(|p| {
            group
                .pending
                .iter()
                .any(|l| l.plan.ops.binary_search_by(|(i, t, _)| (*i, *t).cmp(&(p.series, p.ts))).is_ok())
        });
        if !access.updates.is_empty() || !access.deletes.is_empty() || reads_queued {
            self.finish_declog_group(core, group);
        }

        // 2. The LSN.
        let guard = loop {
            match acquire(&dl.control, &access) {
                Ok(g) => break g,
                Err(e) if e.is_conflict() => {
                    out.retries += 1;
                    if out.retries > MAX_LSN_RETRIES {
                        return Err(EngineError::TxnAborted { retries: out.retries, last: e });
                    }
                    std::thread::yield_now();
                }
                Err(LsnError::UtsOverflow { .. }) => {
                    // Rule 5: checkpoint (it needs the cut lock exclusively;
                    // the group is already finished: this one is not insert-only).
                    drop(group.cut.take());
                    self.checkpoint_declog(core)?;
                    group.cut = Some(dl.cut.read());
                }
                Err(e) => return Err(EngineError::Lsn(e)),
            }
        };

        // 3. Reads (the group before it is applied: see above).
        for r in &plan.reads {
            out.reads.push(match r {
                Some((id, ts)) => core.read_point(*id, *ts)?,
                None => None,
            });
        }
        if plan.ops.is_empty() {
            guard.commit();
            group.results[slot] = Some(Ok(out));
            return Ok(None);
        }

        // 4. Log: one entry per series (more if its operations exceed the
        // largest payload).
        let lsn = dl.entry_lsn(guard.lsn().get());
        out.lsn = lsn;
        let max = dl.log.max_payload_bytes();
        let mut entries = Vec::new();
        let mut run_start = 0;
        for run in plan.ops.chunk_by(|a, b| a.0 == b.0) {
            let key = self.log_key(core, run[0].0)?;
            let rests = run.iter().map(|(_, _, what)| rest_len(written(what)));
            let pieces = split_per_key(key.bytes.len(), rests, max as usize).map_err(|record_bytes| {
                EngineError::RequestTooLarge { record_bytes: record_bytes as u64, max_bytes: max }
            })?;
            for (range, payload_len) in pieces {
                let range = run_start + range.start..run_start + range.end;
                let points = RunPoints { ops: plan.ops.clone(), range, key: key.clone(), payload_len };
                entries.push(PointsEntry { key_hash: key.hash, lsn, points: Box::new(points) });
            }
            run_start += run.len();
        }
        let sizes = entries.iter().map(|e| (e.key_hash, e.points.payload_len() as u64));
        log_size::check_entries(&dl.log, sizes)?;
        let bytes: u64 = entries.iter().map(|e| e.points.payload_len() as u64).sum();
        let txn_id = TxnId(dl.next_txn.fetch_add(1, Ordering::Relaxed));
        if lsn == 0 {
            // Insert-only: queued with the rest of the group when it waits,
            // one push per stream (one batch and one fence for all).
            let log = LogState::Kept(txn_id, entries);
            return Ok(Some(Logged { slot, plan, guard, log, out, bytes }));
        }
        // It holds locks: queued now, while it holds them, so the thread
        // snapshot sees every dependency. On an error the guard drops,
        // which aborts: the control words go back.
        let ticket = dl.log.submit_points(txn_id, entries).map_err(|e| self.declog_failed(core, e))?;
        Ok(Some(Logged { slot, plan, guard, log: LogState::Queued(ticket), out, bytes }))
    }

    /// Submits the kept entries of the group's insert-only transactions
    /// together; a failure fails each of them.
    fn submit_kept(&self, core: &SeriesCore, group: &mut GroupRun<'_>) {
        let (kept, txns): (Vec<usize>, Vec<(TxnId, Vec<PointsEntry>)>) = group
            .pending
            .iter_mut()
            .enumerate()
            .filter_map(|(i, l)| match &mut l.log {
                LogState::Kept(txn, entries) => Some((i, (*txn, std::mem::take(entries)))),
                LogState::Queued(_) => None,
            })
            .unzip();
        if kept.is_empty() {
            return;
        }
        match group.dl.log.submit_points_many(txns) {
            Ok(tickets) => {
                for (i, ticket) in kept.into_iter().zip(tickets) {
                    group.pending[i].log = LogState::Queued(ticket);
                }
            }
            Err(e) => {
                let e = self.declog_failed(core, e);
                // Dropping the guards aborts: the control words go back.
                let failed: Vec<Logged<'_>> = kept.iter().rev().map(|&i| group.pending.remove(i)).collect();
                if let [one] = &failed[..] {
                    group.results[one.slot] = Some(Err(e));
                } else {
                    let e = Arc::new(e);
                    for logged in &failed {
                        group.results[logged.slot] = Some(Err(EngineError::GroupFailed(e.clone())));
                    }
                }
            }
        }
    }

    /// Step 5 for every logged transaction of a group: queue the kept
    /// entries, wait for the tails, apply the durable ones in queue order
    /// under one apply gate, release their locks (commit), store every result.
    fn finish_declog_group(&self, core: &SeriesCore, group: &mut GroupRun<'_>) {
        self.submit_kept(core, group);
        if group.pending.is_empty() {
            return;
        }
        let mut durable = Vec::with_capacity(group.pending.len());
        for logged in group.pending.drain(..) {
            let LogState::Queued(ticket) = &logged.log else {
                unreachable!("submit_kept queued every kept one")
            };
            match group.dl.wait(ticket) {
                Ok(()) => durable.push(logged),
                Err(e) => {
                    // Dropping the guard aborts: the control words go back.
                    group.results[logged.slot] = Some(Err(self.declog_failed(core, e)));
                }
            }
        }
        let max_file_seq = core.blocks().max_file_seq();
        if !durable.is_empty() {
            let mut batch = core.data().batch();
            for logged in &mut durable {
                // One run per series (planning grouped them), one shard lock each.
                // DecLog dropped the entries' points sources once it queued them.
                let mut planned = Arc::unwrap_or_clone(std::mem::take(&mut logged.plan.ops));
                let mut ops = planned.drain(..).peekable();
                while let Some((id, _, first)) = ops.peek() {
                    let (id, field_type) = (*id, core.field_type_for(*id, first));
                    let run =
                        std::iter::from_fn(|| ops.next_if(|(i, ..)| *i == id)).map(|(_, ts, c)| (ts, c));
                    let applied = batch.apply_run(id, field_type, run, max_file_seq);
                    debug_assert!(applied, "a type-checked change to {id} did not apply");
                }
                drop(ops);
                self.run_buffers.give_back(planned);
            }
        }
        for logged in durable {
            logged.guard.commit();
            core.count_commit(logged.out.write.points_written, logged.out.write.values_written, logged.bytes);
            group.results[logged.slot] = Some(Ok(logged.out));
        }
    }

    /// Step 1 (see the module comment).
    fn plan_declog(
        &self,
        core: &SeriesCore,
        db: &str,
        points: &[Point],
        others: &[TxnOp],
    ) -> Result<PlannedTxn<'_>, EngineError> {
        // Type checks and new series ids, serialized (two requests creating
        // one series must agree on its id), unless every series the request
        // writes exists already; the rest of the planning runs beside other
        // transactions' until the classification.
        let existing = match points.is_empty() {
            true => None,
            false => {
                core.health().check()?;
                core.plan_write_existing(db, points)?
            }
        };
        let (rec, outcome) = if let Some((rec, outcome)) = existing {
            (Some(rec), outcome)
        } else {
            let _planning = self.touched.lock();
            core.health().check()?;
            if points.is_empty() {
                if !core.index().read().has_database(db) {
                    return Err(EngineError::UnknownDatabase(db.to_string()));
                }
                (None, Default::default())
            } else {
                let (rec, outcome) = core.plan_write(db, points)?;
                if let WalRecord::Write { db, new_series, .. } = &rec {
                    core.publish_new_series(db, new_series);
                }
                (Some(rec), outcome)
            }
        };
        // Built in place from the record's points (same layout: no copy).
        let mut ops: Vec<(SeriesId, TimestampNs, Option<FieldValue>)> = match rec {
            Some(WalRecord::Write { points, .. }) => {
                points.into_iter().map(|(id, ts, v)| (id, ts, Some(v))).collect()
            }
            _ => Vec::new(),
        };
        let mut reads = Vec::new();
        {
            let index = core.index().read();
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
                            ops.push((id, *ts, None));
                        }
                    }
                }
            }
        }
        // One run per series in time order, one operation per point: the
        // transaction's last one wins.
        let mut ops = self.run_buffers.sort(&mut ops);
        // Classify each series' run against the transactions planned before
        // (their ranges are in flight), then put its own range in flight.
        // Every write starts as an insert; one that may exist becomes an update.
        let mut touched = self.touched.lock();
        let token = touched.token();
        let mut ids = Vec::new();
        for run in ops.chunk_by_mut(|a, b| a.0 == b.0) {
            let id = run[0].0;
            let series = touched.series(core, id);
            for (_, ts, what) in run.iter_mut() {
                if matches!(what, PointChange::Insert(_))
                    && series.classify(core, id, *ts) == Existence::MayExist
                {
                    if let PointChange::Insert(v) = std::mem::replace(what, PointChange::Delete) {
                        *what = PointChange::Update(v);
                    }
                }
            }
            series.plan(token, run[0].1, run[run.len() - 1].1);
            ids.push(id);
        }
        drop(touched);
        let in_flight = InFlight { touched: &self.touched, token, ids };
        Ok(PlannedTxn { ops: Arc::new(ops), reads, outcome, _in_flight: in_flight })
    }

    /// A series' log key, from the cache or encoded from the index.
    fn log_key(&self, core: &SeriesCore, id: SeriesId) -> Result<Arc<LogKey>, EngineError> {
        let dl = &self.side;
        if let Some(k) = dl.keys.read().get(&id) {
            return Ok(k.clone());
        }
        let bytes = {
            let index = core.index().read();
            // Series are dropped only under the cut lock held exclusively,
            // never while a transaction (holding it shared) writes them.
            let e = index.entry(id).expect("a planned series stays in the index until its transaction ends");
            encode_key(&e.db, &e.key, e.field_type)
        };
        let key = Arc::new(LogKey { hash: key_hash(&bytes), bytes });
        dl.keys.write().insert(id, key.clone());
        Ok(key)
    }

    /// Keeps the log from filling: a stream below [`CHECKPOINT_AT_FREE_FRACTION`]
    /// free asks the engine's background checkpointer for a checkpoint and
    /// the writer goes on; only a stream without room for this transaction
    /// holds the writer back (a full DecLog stream stops writes until
    /// reopened) until a checkpoint frees it, counted as a throttle.
    fn ensure_log_space(&self, core: &SeriesCore, needed_bytes: u64) -> Result<(), EngineError> {
        let dl = &self.side;
        if !dl.options.checkpoints {
            return Ok(());
        }
        if dl.min_free_fraction() < CHECKPOINT_AT_FREE_FRACTION {
            dl.checkpoint_wanted.store(true, Ordering::Release);
        }
        // Room for the group twice over, even if all of it lands in one stream.
        let min_free = dl.log.free_bytes().into_iter().min().unwrap_or(0);
        if min_free >= 2 * needed_bytes {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let result = if dl.space_low.swap(true, Ordering::AcqRel) {
            // Another writer is checkpointing; wait for it.
            drop(core.checkpoint_running().lock());
            Ok(())
        } else {
            let r = self.checkpoint_declog(core).map(|_| ());
            dl.space_low.store(false, Ordering::Release);
            r
        };
        dl.throttles.fetch_add(1, Ordering::Relaxed);
        dl.throttled_ns.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        result
    }

    /// A DecLog failure: poisons the engine when the log stopped.
    pub(crate) fn declog_failed(&self, core: &SeriesCore, e: DeclogError) -> EngineError {
        if matches!(e, DeclogError::Poisoned(_) | DeclogError::Stalled) || e.is_corruption() {
            core.health().poison(format_args!("declog: {e}"));
        }
        EngineError::Declog(e)
    }
}
