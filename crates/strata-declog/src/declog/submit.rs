//! The submission path of [`DecLog`] (declog.txt sections 4.2-4.4): input
//! checks, key registration in the stream's key table, routing each entry
//! (given as a payload, or by its points: `compress::points_source`)
//! to its stream by key hash (4.3.1), compression under the stream's
//! key-table lock (4.4.1), queueing with back-pressure, and the flush hold
//! that lets a producer queue several transactions before the logging
//! threads close their open queues (group commit across transactions, 4.4.2).

use std::sync::Arc;
use std::time::Duration;

use strata_media::TxnId;

use super::{DecLog, Shared};
use crate::compress::key_table::{KeyRecord, KeyState, KeyTable};
use crate::compress::log_codec::{
    check_payload, compress_if_registered, payload_key, register_key, undo_compression,
};
use crate::compress::points_codec::compress_points_of;
use crate::compress::{encode_source, PointsEntry, PointsSource};
use crate::config::{FlushMode, MAX_TXN_ENTRIES};
use crate::entry::{EntryIn, EntryMeta, EntryOwned, PayloadForm};
use crate::error::DeclogError;
use crate::pipeline::StepOutcome;
use crate::queues::PendingEntry;
use crate::sync::atomic::Ordering;
use crate::ticket::Ticket;

/// A hold on the flush of the open queues ([`DecLog::hold_flush`]).
#[must_use = "the hold ends when dropped"]
pub struct FlushHold {
    shared: Arc<Shared>,
}

impl Drop for FlushHold {
    fn drop(&mut self) {
        if self.shared.flush_holds.fetch_sub(1, Ordering::SeqCst) == 1 {
            for stream in &self.shared.streams {
                // Under the queue lock: a logging thread that saw the hold
                // is then already waiting, so this wakes it.
                let _queues = stream.queues.lock();
                stream.work_cv.notify_one();
            }
        }
    }
}

impl DecLog {
    /// What every submission checks: the log not poisoned, 1 to
    /// `MAX_TXN_ENTRIES` entries, one LSN for all of them.
    fn check_txn_shape(&self, lsns: impl ExactSizeIterator<Item = u32>) -> Result<(), DeclogError> {
        if let Some(reason) = self.shared.poison.get() {
            return Err(DeclogError::Poisoned(reason.describe()));
        }
        let count = lsns.len();
        if count == 0 || count > MAX_TXN_ENTRIES {
            return Err(DeclogError::InvalidInput(format!(
                "a transaction logs 1..={MAX_TXN_ENTRIES} entries, not {count}"
            )));
        }
        let mut lsns = lsns.peekable();
        let lsn = *lsns.peek().expect("at least one entry");
        if lsns.any(|l| l != lsn) {
            return Err(DeclogError::InvalidInput(
                "all entries of a transaction carry the transaction's LSN".into(),
            ));
        }
        Ok(())
    }

    fn validate(&self, entries: &[EntryIn<'_>], form: PayloadForm) -> Result<(), DeclogError> {
        self.check_txn_shape(entries.iter().map(|e| e.lsn))?;
        let max = self.max_payload_bytes();
        if let Some(e) = entries.iter().find(|e| e.payload.len() as u64 > max) {
            return Err(DeclogError::TooLarge { len_bytes: e.payload.len() as u64, max_bytes: max });
        }
        let check_form = self.shared.layout.compression || form == PayloadForm::PerKey;
        for (i, e) in entries.iter().enumerate().filter(|_| check_form) {
            if e.compressed {
                return Err(DeclogError::InvalidInput(format!(
                    "entry {i}: with compression on or per-key payloads, DecLog compresses; submit \
                     payloads with compressed = false"
                )));
            }
            // A key the table cannot take is logged raw (ENTRY_FLAG_RAW_POINT).
            check_payload(form, e.payload).map_err(|why| {
                DeclogError::InvalidInput(format!("entry {i}: not a payload of the {form:?} form: {why}"))
            })?;
        }
        Ok(())
    }

    /// [`Self::validate`] for entries given by their points: their form is
    /// valid by construction, so only the transaction's shape and the sizes
    /// are checked.
    fn validate_points(&self, entries: &[PointsEntry]) -> Result<(), DeclogError> {
        self.check_txn_shape(entries.iter().map(|e| e.lsn))?;
        if let Some(i) = entries.iter().position(|e| e.points.count() == 0) {
            return Err(DeclogError::InvalidInput(format!("entry {i}: a per-key entry without points")));
        }
        let max = self.max_payload_bytes();
        if let Some(e) = entries.iter().find(|e| e.points.payload_len() as u64 > max) {
            return Err(DeclogError::TooLarge { len_bytes: e.points.payload_len() as u64, max_bytes: max });
        }
        Ok(())
    }

    /// With compression: every key of `entries` in its stream's key table
    /// (new ones inserted and persisted), before anything is queued.
    fn register_keys(&self, entries: &[EntryIn<'_>], form: PayloadForm) -> Result<(), DeclogError> {
        if !self.shared.layout.compression {
            return Ok(());
        }
        for (s, stream) in self.shared.streams.iter().enumerate() {
            if !entries.iter().any(|e| self.stream_of(e.key_hash) == s) {
                continue;
            }
            let mut keys = stream.keys.lock();
            let Some(table) = keys.as_mut() else { return Ok(()) };
            let mut inserted = false;
            for e in entries.iter().filter(|e| self.stream_of(e.key_hash) == s) {
                match register_key(table, payload_key(form, e.payload)?) {
                    Ok(new) => inserted |= new,
                    // Too long, or the table is full: its entries are logged raw.
                    Err(DeclogError::InvalidInput(_)) => {}
                    Err(other) => return Err(other),
                }
            }
            // One fence for the stream's new slots, before any entry naming them.
            if inserted {
                table.fence();
            }
        }
        Ok(())
    }

    /// Queues a transaction's entries and returns its ticket without waiting
    /// for durability (then [`Ticket::wait`], or in inline mode
    /// [`DecLog::pump`]). Entries are queued stream by stream in `entries`
    /// order. Blocks (or, inline, runs the pipeline) while every queue of a
    /// stream is in flight.
    pub fn submit(&self, txn: TxnId, entries: &[EntryIn<'_>]) -> Result<Ticket, DeclogError> {
        self.validate(entries, PayloadForm::Single)?;
        self.register_keys(entries, PayloadForm::Single)?;
        self.enqueue(txn, entries.iter().map(EntryOwned::from).collect(), PayloadForm::Single)
    }

    /// [`DecLog::submit`] taking the payloads by value, so they are queued
    /// without a copy.
    pub fn submit_owned(&self, txn: TxnId, entries: Vec<EntryOwned>) -> Result<Ticket, DeclogError> {
        self.submit_owned_as(txn, entries, PayloadForm::Single)
    }

    /// [`DecLog::submit_owned`] with payloads of `form`: with
    /// [`PayloadForm::PerKey`] each payload is a points payload
    /// ([`crate::compress::points_payload`]) carrying every operation of the
    /// transaction on one key, compressed together when compression is on
    /// (format version 3). Parsing returns each entry's form.
    pub fn submit_owned_as(
        &self,
        txn: TxnId,
        entries: Vec<EntryOwned>,
        form: PayloadForm,
    ) -> Result<Ticket, DeclogError> {
        {
            let borrowed: Vec<EntryIn<'_>> = entries.iter().map(EntryOwned::as_entry_in).collect();
            self.validate(&borrowed, form)?;
            self.register_keys(&borrowed, form)?;
        }
        self.enqueue(txn, entries, form)
    }

    /// Queues several transactions' entries of `form` together: each
    /// stream gets all of them in one push (one lock, so they land in one
    /// log queue and one batch unless it fills), and each transaction gets
    /// its own ticket. Group commit by the producer (declog.txt 4.4.2)
    /// without holding other producers' queues open, as
    /// [`DecLog::hold_flush`] does. Validation fails the whole call before
    /// anything is queued.
    pub fn submit_many_as(
        &self,
        txns: Vec<(TxnId, Vec<EntryOwned>)>,
        form: PayloadForm,
    ) -> Result<Vec<Ticket>, DeclogError> {
        for (_, entries) in &txns {
            let borrowed: Vec<EntryIn<'_>> = entries.iter().map(EntryOwned::as_entry_in).collect();
            self.validate(&borrowed, form)?;
            self.register_keys(&borrowed, form)?;
        }
        let mut per_stream = self.no_routes(txns.iter().map(|(_, e)| e.len()).sum());
        let tickets =
            txns.into_iter().map(|(txn, entries)| self.route(txn, entries, form, &mut per_stream)).collect();
        self.push_routes(per_stream)?;
        Ok(tickets)
    }

    /// [`DecLog::submit_owned_as`] with [`PayloadForm::PerKey`] entries given
    /// by their points (`compress::points_source`): each key is registered
    /// and its points compressed straight from the source in one step under
    /// the stream's key-table lock, with no points payload built, checked
    /// and parsed on the way. The log holds the same bytes either way.
    pub fn submit_points(&self, txn: TxnId, entries: Vec<PointsEntry>) -> Result<Ticket, DeclogError> {
        self.submit_points_many(vec![(txn, entries)])
            .map(|mut t| t.pop().expect("one ticket per transaction"))
    }

    /// [`DecLog::submit_many_as`] for entries given by their points
    /// ([`DecLog::submit_points`]).
    pub fn submit_points_many(
        &self,
        txns: Vec<(TxnId, Vec<PointsEntry>)>,
    ) -> Result<Vec<Ticket>, DeclogError> {
        for (_, entries) in &txns {
            self.validate_points(entries)?;
        }
        let mut per_stream = self.no_routes(txns.iter().map(|(_, e)| e.len()).sum());
        let tickets = txns
            .into_iter()
            .map(|(txn, entries)| {
                let parts = entries.into_iter().map(|e| Part {
                    key_hash: e.key_hash,
                    lsn: e.lsn,
                    compressed: false,
                    payload: Vec::new(),
                    source: Some(e.points),
                });
                self.route_parts(txn, parts, PayloadForm::PerKey, &mut per_stream)
            })
            .collect();
        self.push_routes(per_stream)?;
        Ok(tickets)
    }

    /// Queues validated entries whose keys are registered.
    fn enqueue(
        &self,
        txn: TxnId,
        entries: Vec<EntryOwned>,
        form: PayloadForm,
    ) -> Result<Ticket, DeclogError> {
        let mut per_stream = self.no_routes(entries.len());
        let ticket = self.route(txn, entries, form, &mut per_stream);
        self.push_routes(per_stream)?;
        Ok(ticket)
    }

    /// One empty list of pending entries per stream, for [`Self::route`]
    /// to route `entries` into (room for a fair share and some more, so
    /// they rarely grow).
    fn no_routes(&self, entries: usize) -> Vec<Vec<Submitted>> {
        let threads = self.shared.layout.threads;
        let share = entries / threads + entries / 8 + 1;
        (0..threads).map(|_| Vec::with_capacity(share)).collect()
    }

    /// Pushes each stream's routed entries, stream by stream.
    fn push_routes(&self, per_stream: Vec<Vec<Submitted>>) -> Result<(), DeclogError> {
        for (s, group) in per_stream.into_iter().enumerate() {
            if !group.is_empty() {
                self.push_group(s, group)?;
            }
        }
        Ok(())
    }

    /// Makes a transaction's pending entries and ticket, each entry in its
    /// stream's list, and counts the submission.
    fn route(
        &self,
        txn: TxnId,
        entries: Vec<EntryOwned>,
        form: PayloadForm,
        per_stream: &mut [Vec<Submitted>],
    ) -> Ticket {
        let parts = entries.into_iter().map(|e| Part {
            key_hash: e.key_hash,
            lsn: e.lsn,
            compressed: e.compressed,
            payload: e.payload,
            source: None,
        });
        self.route_parts(txn, parts, form, per_stream)
    }

    /// [`Self::route`] for entries given as payloads or by their points.
    fn route_parts(
        &self,
        txn: TxnId,
        parts: impl ExactSizeIterator<Item = Part>,
        form: PayloadForm,
        per_stream: &mut [Vec<Submitted>],
    ) -> Ticket {
        let count = parts.len() as u32;
        let ticket = Ticket::new(txn, count);
        let mut submitted = 0;
        for (i, e) in parts.enumerate() {
            submitted += e.source.as_ref().map_or(e.payload.len(), |s| s.payload_len()) as u64;
            per_stream[self.stream_of(e.key_hash)].push(Submitted {
                entry: PendingEntry {
                    meta: EntryMeta {
                        txn,
                        key_hash: e.key_hash,
                        lsn: e.lsn,
                        entry_count: count,
                        op_index: i as u32,
                        compressed: e.compressed,
                        raw: false,
                        form,
                    },
                    payload: e.payload,
                    ticket: ticket.clone(),
                    snapshot: None,
                },
                source: e.source,
            });
        }
        self.shared.stats.txns_submitted.fetch_add(1, Ordering::Relaxed);
        self.shared.stats.entries.fetch_add(u64::from(count), Ordering::Relaxed);
        self.shared.stats.payload_bytes_submitted.fetch_add(submitted, Ordering::Relaxed);
        ticket
    }

    /// Queues one transaction's entries for stream `s`, all under one lock
    /// unless the queues fill up on the way, so a batch rarely splits them.
    ///
    /// They are compressed first under the stream's key-table lock alone
    /// (held until they are queued, so stream order is compression order),
    /// then pushed under the queues' lock, which the pipeline needs to take
    /// and release queues: compressing a request's points takes
    /// milliseconds, and the pipeline no longer waits for it.
    fn push_group(&self, s: usize, group: Vec<Submitted>) -> Result<(), DeclogError> {
        let stream = &self.shared.streams[s];
        let mut todo = group;
        while !todo.is_empty() {
            if let Some(reason) = self.shared.poison.get() {
                todo[0].entry.ticket.fail(reason.clone());
                return Err(DeclogError::Poisoned(reason.describe()));
            }
            let mut keys = stream.keys.lock();
            let mut ready: Vec<(Submitted, Option<Undo>)> = Vec::with_capacity(todo.len());
            let mut inserted = false;
            for mut e in todo.drain(..) {
                match prepare(keys.as_mut(), &mut e, &mut inserted) {
                    Ok(undo) => ready.push((e, undo)),
                    Err(err) => {
                        // Nothing of the group is queued: the table goes back.
                        undo_all(keys.as_mut(), &mut ready);
                        return Err(err);
                    }
                }
            }
            // One fence for the slots of keys registered here, before any
            // entry naming them is queued (and so written).
            if inserted {
                keys.as_ref().expect("keys were inserted into the table").fence();
            }
            let qs = {
                let mut qs = stream.queues.lock();
                let mut ready = ready.into_iter();
                for (Submitted { entry: e, source }, undo) in ready.by_ref() {
                    let (logged, compressed) = (e.payload.len() as u64, e.meta.compressed);
                    match qs.push(e, &self.shared.snapshots) {
                        Ok(()) => {
                            let stats = &self.shared.stats;
                            stats.payload_bytes_logged.fetch_add(logged, Ordering::Relaxed);
                            stats.compressed_entries.fetch_add(compressed as u64, Ordering::Relaxed);
                        }
                        Err(back) => {
                            // No free queue: the rest goes back as submitted,
                            // to be retried once a queue is free.
                            let back = Submitted { entry: back, source };
                            let mut rest: Vec<_> = std::iter::once((back, undo)).chain(ready).collect();
                            undo_all(keys.as_mut(), &mut rest);
                            todo = rest.into_iter().map(|(e, _)| e).collect();
                            break;
                        }
                    }
                }
                qs
            };
            drop(keys);
            if qs.has_work(self.shared.close_open()) {
                stream.work_cv.notify_one();
            }
            if todo.is_empty() {
                return Ok(());
            }
            match self.shared.mode {
                FlushMode::Threads => {
                    // Every queue is closed or in flight: flush one here
                    // rather than sleep until a logging thread is scheduled
                    // (as `DecLog::wait_helping` does), else wait for space.
                    drop(qs);
                    if self.shared.step(s) != StepOutcome::Progress {
                        let mut qs = stream.queues.lock();
                        stream.space_cv.wait_for(&mut qs, Duration::from_millis(1));
                    }
                }
                FlushMode::Inline => {
                    drop(qs);
                    if self.shared.step(s) != StepOutcome::Progress {
                        // This stream waits for another one: run them all.
                        self.shared.pump()?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Holds the flush until the returned guard drops: the logging threads
    /// leave their open queues open meanwhile (a queue still closes when full
    /// or after an update entry), so that the entries of several
    /// transactions a producer queues one after the other go into one batch
    /// and one fence (group commit across transactions, section 4.4.2).
    /// Drop the hold before waiting for any ticket. No effect in inline mode.
    pub fn hold_flush(&self) -> FlushHold {
        self.shared.flush_holds.fetch_add(1, Ordering::SeqCst);
        FlushHold { shared: self.shared.clone() }
    }
}

/// An entry on its way into a stream's queues: its pending entry, and for
/// one given by its points, the points (kept until it is queued, so a push
/// that finds no free queue can compress it again later).
struct Submitted {
    entry: PendingEntry,
    source: Option<Box<dyn PointsSource>>,
}

/// An entry as submitted, before routing.
struct Part {
    key_hash: u64,
    lsn: u32,
    compressed: bool,
    payload: Vec<u8>,
    source: Option<Box<dyn PointsSource>>,
}

/// The payload an entry was submitted with (empty for one given by its
/// points) and its key's state before it was compressed.
type Undo = (Vec<u8>, KeyState);

/// Compresses one entry for its stream under the key-table lock (`table`
/// is `None` with compression off); returns what takes it back. An entry
/// given by its points has its key registered here (`inserted` set for a
/// new slot, which the caller fences) and is compressed from the points, or
/// encoded as its points payload when compression is off or the table
/// cannot take its key (then logged raw).
fn prepare(
    table: Option<&mut KeyTable>,
    e: &mut Submitted,
    inserted: &mut bool,
) -> Result<Option<Undo>, DeclogError> {
    let entry = &mut e.entry;
    let (table, source) = match (table, &e.source) {
        (None, None) => return Ok(None),
        (None, Some(source)) => {
            entry.payload = encode_source(&**source);
            return Ok(None);
        }
        (Some(table), None) => {
            return match compress_if_registered(table, entry.meta.form, &entry.payload, entry.meta.txn.0)? {
                Some((c, before)) => {
                    entry.meta.compressed = c.compressed;
                    Ok(Some((std::mem::replace(&mut entry.payload, c.payload), before)))
                }
                None => {
                    // Not in the table (too long, or the table is full): raw.
                    entry.meta.raw = true;
                    Ok(None)
                }
            };
        }
        (Some(table), Some(source)) => (table, source),
    };
    match record_or_insert(table, source.key(), inserted) {
        Ok(record) => {
            let before = record.state;
            let c = compress_points_of(&**source, entry.meta.txn.0, record);
            entry.meta.compressed = c.compressed;
            entry.payload = c.payload;
            Ok(Some((Vec::new(), before)))
        }
        // Too long, or the table is full: its entries are logged raw.
        Err(DeclogError::InvalidInput(_)) => {
            entry.payload = encode_source(&**source);
            entry.meta.raw = true;
            Ok(None)
        }
        Err(other) => Err(other),
    }
}

/// The record of `key` in `table`, inserted (slot written and flushed, not
/// fenced; `inserted` set) when new.
fn record_or_insert<'t>(
    table: &'t mut KeyTable,
    key: &[u8],
    inserted: &mut bool,
) -> Result<&'t mut KeyRecord, DeclogError> {
    if register_key(table, key)? {
        *inserted = true;
    }
    Ok(table.record_mut(key).expect("a registered key is in the table"))
}

/// Takes back the compression of entries not queued, newest first (so a
/// key with several of them ends at its state before the first), and
/// restores them as submitted.
fn undo_all(table: Option<&mut KeyTable>, entries: &mut [(Submitted, Option<Undo>)]) {
    let Some(table) = table else { return };
    for (Submitted { entry: e, source }, undo) in entries.iter_mut().rev() {
        if let Some((original, before)) = undo.take() {
            match source {
                Some(source) => table.set_state(source.key(), before),
                None => undo_compression(table, e.meta.form, &original, before),
            }
            e.payload = original;
            e.meta.compressed = false;
        }
        e.meta.raw = false;
    }
}
