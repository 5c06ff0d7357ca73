//! Recovery parsing (declog.txt section 4.6, "Log Parsing"): scan every
//! stream from its head (the checkpoint offset) batch by batch to its end,
//! keep the entries of complete transactions, and return insert entries
//! (LSN 0, replayable in any order) and update entries bucketed by LSN (to be
//! replayed in ascending LSN order). Replay itself belongs to the engine.
//!
//! The end of a stream: the paper stops after l consecutive zero blocks. We
//! stop at the first position that holds no valid batch header for it: a
//! header is valid when its magic and CRC32C are right, it is stamped with
//! exactly this stream position (so a batch of an earlier ring lap ends the
//! scan), and its writer epoch is not older than its predecessor's (so bytes
//! left beyond the end by a crashed incarnation end the scan once a later
//! incarnation has written up to them). This needs no zeroing ahead of the
//! writer and stops after one header read.
//!
//! Inside a batch, entries are read in order until the batch's entry count;
//! an entry whose CRC fails, or an insert entry without its tail, is torn and
//! ends that batch. An update entry without its tail is valid but not
//! committed (its tail was never persisted), and so is an insert entry
//! flagged as written with a deferred tail (strict ordering). What a crash can produce is
//! known exactly (`pipeline.rs`): only the batch written after the last
//! fence can be torn, so a torn batch followed by another batch is
//! `Corruption`, unless `open` sealed it after an earlier crash.
//!
//! A transaction is complete when entries with every index `0..entry_count`
//! are present and committed (in any streams); all its entries must agree on
//! the entry count and the LSN. Incomplete transactions are discarded: their
//! entries were never all persisted, so they were never acknowledged.
//!
//! With compression every intact entry of a stream, committed or not, is
//! decompressed in stream order against a private copy of the stream's
//! active key table (its ids; every state cleared at the head, which is a
//! point where the writer's states were all cleared): see
//! `compress::log_codec`. Entries come back with their point payloads and
//! `compressed: false`, exactly as submitted. A cut passed on the way needs
//! nothing: each key's first entry after it resets the key's state.

use std::collections::BTreeMap;

use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use crate::batch::{decode_header, BatchHeader, BATCH_HEADER_BYTES, BATCH_KIND_WRAP};
use crate::compress::key_table::KeyTable;
use crate::compress::log_codec::decompress_entry;
use crate::entry::PayloadForm;
use crate::entry::{decode_entry, Stamp};
use crate::error::DeclogError;
use crate::layout::{read_area, Control, CutPoint, Layout, Ring};

/// One entry of a complete transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveredEntry {
    pub txn: TxnId,
    pub lsn: u32,
    pub key_hash: u64,
    /// The entry's compression bit as submitted (always false with DecLog's
    /// own compression: the payload is the decompressed point payload).
    pub compressed: bool,
    pub op_index: u32,
    pub entry_count: u32,
    /// What the payload holds: one operation, or every operation of its
    /// transaction on one key (`ENTRY_FLAG_PER_KEY`, format version 3).
    pub form: PayloadForm,
    pub payload: Vec<u8>,
    /// Which stream it was found in, and where.
    pub stream: usize,
    pub pos: u64,
}

/// What parsing found in one stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamParse {
    /// Where parsing started (the persisted head) and where it ended (where
    /// writing resumes).
    pub head: u64,
    pub end: u64,
    pub batches: u64,
    pub wraps: u64,
    /// Update entries whose tails were never persisted.
    pub uncommitted_updates: u64,
    /// Insert entries written with a deferred tail (strict ordering) whose
    /// tails were never persisted.
    pub uncommitted_inserts: u64,
    /// Entries stored compressed (key by id), decompressed by the parse.
    pub compressed_entries: u64,
    /// Batches with torn entries (at most the last one, plus sealed ones).
    pub torn_batches: u64,
    /// The last batch when it is torn and not yet sealed: `open` seals it.
    pub(crate) torn_last: Option<(u64, BatchHeader)>,
    /// Why the scan stopped (the position had no valid batch header for it).
    pub stop_reason: Option<String>,
}

/// The result of parsing all streams.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Entries with LSN 0 of complete transactions: replay in any order.
    pub inserts: Vec<RecoveredEntry>,
    /// Entries with LSN > 0 of complete transactions, by LSN: replay buckets
    /// in ascending LSN order; entries within a bucket are independent.
    pub updates: BTreeMap<u32, Vec<RecoveredEntry>>,
    pub complete_txns: u64,
    /// Transactions with some but not all entries present (never acknowledged).
    pub discarded_txns: Vec<TxnId>,
    /// The largest transaction id in any intact entry, complete or not: the
    /// engine numbers new transactions above it.
    pub max_txn_id: Option<TxnId>,
    pub streams: Vec<StreamParse>,
    /// Writer epoch and head generation found.
    pub epoch: u32,
    pub generation: u64,
    /// The last checkpoint cut recorded ([`crate::DecLog::cut`]), if any.
    /// Entries before it in their stream were logged before that checkpoint
    /// (the paper's t_LSN split of the update buckets).
    pub last_cut: Option<CutPoint>,
}

impl Recovered {
    /// Update entries in replay order (ascending LSN).
    pub fn updates_in_lsn_order(&self) -> impl Iterator<Item = &RecoveredEntry> {
        self.updates.values().flatten()
    }

    /// Every complete transaction with its entries in `op_index` order.
    pub fn txns(&self) -> BTreeMap<TxnId, Vec<&RecoveredEntry>> {
        let mut out: BTreeMap<TxnId, Vec<&RecoveredEntry>> = BTreeMap::new();
        for e in self.inserts.iter().chain(self.updates_in_lsn_order()) {
            out.entry(e.txn).or_default().push(e);
        }
        for entries in out.values_mut() {
            entries.sort_by_key(|e| e.op_index);
        }
        out
    }

    pub fn entry_count(&self) -> usize {
        self.inserts.len() + self.updates.values().map(Vec::len).sum::<usize>()
    }

    /// Whether `e` was logged before the last cut (false without a cut).
    pub fn before_last_cut(&self, e: &RecoveredEntry) -> bool {
        self.last_cut.as_ref().is_some_and(|c| c.ends.get(e.stream).is_some_and(|&end| e.pos < end))
    }
}

/// Parses a DecLog area without opening it for writing (read-only).
pub fn parse(region: &Region, base: RegionOffset) -> Result<Recovered, DeclogError> {
    let (layout, control) = read_area(region, base)?;
    parse_area(region, &layout, &control)
}

struct Found {
    entry: RecoveredEntry,
    committed: bool,
}

pub(crate) fn parse_area(
    region: &Region,
    layout: &Layout,
    control: &Control,
) -> Result<Recovered, DeclogError> {
    let mut found = Vec::new();
    let mut streams = Vec::with_capacity(layout.threads);
    let mut max_txn_id = None;
    for (s, &head) in control.heads.iter().enumerate() {
        let ring = layout.ring(s);
        if !head.is_multiple_of(layout.align_bytes) {
            return Err(DeclogError::corruption(
                ring.data.0,
                format!("stream {s} head {head} is not aligned"),
            ));
        }
        let mut decoder = decoder_table(region, layout, s)?;
        let parse = scan_stream(region, &ring, s, head, control.epoch, decoder.as_mut(), &mut found)?;
        streams.push(parse);
    }
    let mut by_txn: BTreeMap<TxnId, Vec<Found>> = BTreeMap::new();
    for f in found {
        max_txn_id = max_txn_id.max(Some(f.entry.txn));
        by_txn.entry(f.entry.txn).or_default().push(f);
    }
    let mut out = Recovered {
        max_txn_id,
        streams,
        epoch: control.epoch,
        generation: control.generation,
        last_cut: control.cut.as_ref().map(CutPoint::from),
        ..Default::default()
    };
    for (txn, mut entries) in by_txn {
        entries.sort_by_key(|f| f.entry.op_index);
        let first = &entries[0].entry;
        let (count, lsn) = (first.entry_count, first.lsn);
        for pair in entries.windows(2) {
            if pair[0].entry.op_index == pair[1].entry.op_index {
                let e = &pair[1].entry;
                return Err(DeclogError::corruption(
                    layout.ring(e.stream).offset_of(e.pos).0,
                    format!(
                        "{txn} has entry {} twice (transaction ids must not repeat in a log)",
                        e.op_index
                    ),
                ));
            }
        }
        if let Some(f) = entries.iter().find(|f| f.entry.entry_count != count || f.entry.lsn != lsn) {
            return Err(DeclogError::corruption(
                layout.ring(f.entry.stream).offset_of(f.entry.pos).0,
                format!("{txn}: entries disagree on the entry count or LSN"),
            ));
        }
        let complete = entries.len() as u64 == count as u64 && entries.iter().all(|f| f.committed);
        if !complete {
            out.discarded_txns.push(txn);
            continue;
        }
        out.complete_txns += 1;
        for f in entries {
            if lsn == 0 {
                out.inserts.push(f.entry);
            } else {
                out.updates.entry(lsn).or_default().push(f.entry);
            }
        }
    }
    Ok(out)
}

/// With compression, the decompressor of stream `stream`: a private copy of
/// its active key table with every state cleared.
fn decoder_table(region: &Region, layout: &Layout, stream: usize) -> Result<Option<KeyTable>, DeclogError> {
    if !layout.compression {
        return Ok(None);
    }
    let at = layout.key_table(stream);
    let mut table = KeyTable::open_detached(region, at)?;
    if table.slot_count() != layout.key_slots {
        return Err(DeclogError::corruption(
            at.0,
            format!("key table of {} slots, the superblock says {}", table.slot_count(), layout.key_slots),
        ));
    }
    table.reset_states();
    Ok(Some(table))
}

/// Scans one stream from `head`, appending intact entries to `found`
/// (decompressed with `decoder` when there is one).
fn scan_stream(
    region: &Region,
    ring: &Ring,
    stream: usize,
    head: u64,
    current_epoch: u32,
    mut decoder: Option<&mut KeyTable>,
    found: &mut Vec<Found>,
) -> Result<StreamParse, DeclogError> {
    let limit = head + ring.capacity_bytes;
    let mut out = StreamParse { head, ..Default::default() };
    let mut pos = head;
    let mut prev_epoch = 0u32;
    // A torn, unsealed batch: legal only as the last thing in the stream.
    let mut torn: Option<(u64, BatchHeader, String)> = None;
    while pos < limit {
        let rest = ring.lap_remaining(pos);
        if rest < BATCH_HEADER_BYTES {
            pos += rest;
            continue;
        }
        let at = ring.offset_of(pos);
        let header = region.read_vec(at, BATCH_HEADER_BYTES as usize);
        let h = match decode_header(&header, pos) {
            Ok(h) => h,
            Err(why) => {
                out.stop_reason = Some(why.to_string());
                break;
            }
        };
        if h.epoch < prev_epoch || h.epoch > current_epoch {
            out.stop_reason = Some(format!("batch of epoch {} after epoch {prev_epoch} (stale)", h.epoch));
            break;
        }
        if let Some((torn_pos, _, why)) = &torn {
            return Err(DeclogError::corruption(
                ring.offset_of(*torn_pos).0,
                format!("stream {stream}: torn batch ({why}) followed by a valid batch at offset {}", at.0),
            ));
        }
        let len = h.batch_bytes as u64;
        let geometry_ok = if h.kind == BATCH_KIND_WRAP {
            len == rest && h.entry_count == 0
        } else {
            len <= rest && pos + len <= limit && len.is_multiple_of(ring.align_bytes)
        };
        if !geometry_ok {
            return Err(DeclogError::corruption(
                at.0,
                format!(
                    "stream {stream}: batch of {len} bytes with {} entries does not fit at {pos}",
                    h.entry_count
                ),
            ));
        }
        prev_epoch = h.epoch;
        if h.kind == BATCH_KIND_WRAP {
            out.wraps += 1;
            pos += len;
            continue;
        }
        out.batches += 1;
        let bytes = region.read_vec(at, len as usize);
        let mut off = BATCH_HEADER_BYTES;
        let mut torn_why = None;
        for k in 0..h.entry_count {
            let d = match decode_entry(&bytes[off as usize..], Stamp { pos: pos + off, epoch: h.epoch }) {
                Ok(d) => d,
                Err(why) => {
                    torn_why = Some(format!("entry {k}: {why}"));
                    break;
                }
            };
            if d.tail_deferred && k + 1 != h.entry_count {
                let what = if d.meta.lsn > 0 { "update entry" } else { "entry with a deferred tail" };
                return Err(DeclogError::corruption(
                    (at + off).0,
                    format!("stream {stream}: {what} {k} of {} is not its batch's last", h.entry_count),
                ));
            }
            if !d.tail_deferred && !d.committed {
                torn_why = Some(format!("entry {k}: insert entry without its tail"));
                break;
            }
            if !d.committed {
                if d.meta.lsn > 0 {
                    out.uncommitted_updates += 1;
                } else {
                    out.uncommitted_inserts += 1;
                }
            }
            let (payload, compressed) = match decoder.as_deref_mut() {
                Some(_) if d.meta.raw => (d.payload, false),
                Some(table) => {
                    let point =
                        decompress_entry(table, d.meta.form, d.meta.compressed, &d.payload, d.meta.txn.0)
                            .map_err(|e| {
                                DeclogError::corruption(
                                    (at + off).0,
                                    format!("stream {stream}: entry {k}: {e}"),
                                )
                            })?;
                    out.compressed_entries += d.meta.compressed as u64;
                    (point, false)
                }
                None => (d.payload, d.meta.compressed),
            };
            let entry = RecoveredEntry {
                txn: d.meta.txn,
                lsn: d.meta.lsn,
                key_hash: d.meta.key_hash,
                compressed,
                op_index: d.meta.op_index,
                entry_count: d.meta.entry_count,
                form: d.meta.form,
                payload,
                stream,
                pos: pos + off,
            };
            found.push(Found { entry, committed: d.committed });
            off += d.len;
        }
        if let Some(why) = torn_why {
            out.torn_batches += 1;
            if h.seal == 0 {
                torn = Some((pos, h, why));
            }
        }
        pos += len;
    }
    out.end = pos;
    out.torn_last = torn.map(|(p, h, _)| (p, h));
    Ok(out)
}
