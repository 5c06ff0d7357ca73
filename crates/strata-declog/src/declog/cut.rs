//! The checkpoint half of [`DecLog`] (declog.txt section 4.5): the cut
//! (queues persisted, stream ends recorded in the cut record, key tables
//! copied and their states cleared), truncation to a cut or of everything,
//! and the key table copies a checkpoint keeps.

use super::DecLog;
use crate::batch::{decode_header, BATCH_HEADER_BYTES};
use crate::compress::key_table::KeyTable;
use crate::error::DeclogError;
use crate::layout::CutPoint;
use crate::layout::{persist_cut_record, persist_heads, CutRecord, Ring};

impl DecLog {
    /// After a checkpoint covering every committed transaction: waits until
    /// nothing is queued or in flight, then frees every stream at once (one
    /// atomic switch of the head generation). With compression every key's
    /// state is cleared (in DRAM), so entries after the new heads decompress
    /// from them.
    pub fn truncate_all(&self) -> Result<(), DeclogError> {
        self.pump()?;
        let mut control = self.shared.control.lock();
        let mut pipelines: Vec<_> = self.shared.streams.iter().map(|s| s.pipeline.lock()).collect();
        // Lock order: pipeline, keys, queues (a producer compresses under
        // `keys` and pushes under `queues`).
        let mut keys: Vec<_> = self.shared.streams.iter().map(|s| s.keys.lock()).collect();
        let queues: Vec<_> = self.shared.streams.iter().map(|s| s.queues.lock()).collect();
        if !pipelines.iter().all(|p| p.is_idle()) || !queues.iter().all(|q| q.is_idle()) {
            return Err(DeclogError::InvalidInput("truncate_all ran concurrently with commits".into()));
        }
        for table in keys.iter_mut().filter_map(|k| k.as_mut()) {
            table.reset_states();
        }
        drop(queues);
        drop(keys);
        let heads: Vec<u64> = pipelines.iter_mut().map(|p| p.truncate_to_end()).collect();
        control.generation += 1;
        persist_heads(&self.shared.region, &self.shared.layout, control.generation, &heads);
        control.heads = heads;
        Ok(())
    }

    /// The checkpoint cut (declog.txt 4.5, steps 2 and 4), called while the
    /// engine lets no transaction submit: makes everything queued durable
    /// (like [`DecLog::pump`]), then with compression copies each stream's
    /// key table to its checkpoint copy and clears the key states (ids and
    /// strings kept, persisted), then persists the cut record (sequence
    /// number and every stream's end) and returns the ends. Every
    /// transaction submitted before the cut lies before the returned
    /// positions, every later one after them. `InvalidInput` if a commit ran
    /// concurrently.
    pub fn cut(&self) -> Result<CutPoint, DeclogError> {
        self.pump()?;
        let mut control = self.shared.control.lock();
        let pipelines: Vec<_> = self.shared.streams.iter().map(|s| s.pipeline.lock()).collect();
        let mut keys: Vec<_> = self.shared.streams.iter().map(|s| s.keys.lock()).collect();
        let queues: Vec<_> = self.shared.streams.iter().map(|s| s.queues.lock()).collect();
        if !pipelines.iter().all(|p| p.is_idle()) || !queues.iter().all(|q| q.is_idle()) {
            return Err(DeclogError::InvalidInput("cut ran concurrently with commits".into()));
        }
        let ends: Vec<u64> = pipelines.iter().map(|p| p.end()).collect();
        let region = &self.shared.region;
        for (s, table) in keys.iter_mut().enumerate() {
            if let Some(table) = table.as_mut() {
                table.snapshot_to(region, self.shared.layout.key_table_copy(s))?;
                table.clear_for_checkpoint();
            }
        }
        let record = CutRecord { seq: control.cut.as_ref().map_or(1, |c| c.seq + 1), ends: ends.clone() };
        persist_cut_record(region, &self.shared.layout, &record);
        control.cut = Some(record);
        drop(queues);
        drop(keys);
        drop(pipelines);
        Ok(CutPoint { ends })
    }

    /// The last cut recorded in this log (also after a restart), if any.
    pub fn last_cut(&self) -> Option<CutPoint> {
        self.shared.control.lock().cut.as_ref().map(CutPoint::from)
    }

    /// After the engine's checkpoint covers everything before `heads`: moves
    /// every stream's head to `heads[stream]` at once (one head-generation
    /// switch, like [`DecLog::truncate_all`]), freeing the space before them.
    /// Commits may run meanwhile; entries after the heads are untouched.
    ///
    /// Each position must lie in the stream's `[head, end]`, and be its
    /// current head, or with compression the last cut's position for that
    /// stream ([`DecLog::cut`], also one recorded before a restart: there
    /// every key's state was cleared, so parsing can decompress from it), or
    /// without compression any batch boundary (a position where a batch
    /// starts, or the end). Otherwise `InvalidInput`, and nothing moves.
    pub fn truncate_to(&self, heads: &[u64]) -> Result<(), DeclogError> {
        let layout = &self.shared.layout;
        if heads.len() != layout.threads {
            return Err(DeclogError::InvalidInput(format!(
                "truncate_to got {} heads for {} streams",
                heads.len(),
                layout.threads
            )));
        }
        let mut control = self.shared.control.lock();
        for (s, &pos) in heads.iter().enumerate() {
            let p = self.shared.streams[s].pipeline.lock();
            let (head, end) = (p.head(), p.end());
            let bad = |why: String| {
                Err(DeclogError::InvalidInput(format!("truncate_to stream {s} at {pos}: {why}")))
            };
            if pos < head || pos > end {
                return bad(format!("outside the live log [{head}, {end}]"));
            }
            if pos == head {
                continue;
            }
            if layout.compression {
                if control.cut.as_ref().is_none_or(|c| c.ends[s] != pos) {
                    return bad(format!(
                        "with compression a head moves only to the last cut's position ({:?})",
                        control.cut.as_ref().map(|c| c.ends[s])
                    ));
                }
            } else if !pos.is_multiple_of(layout.align_bytes) || !self.is_batch_start(p.ring(), pos, end) {
                return bad("not a batch boundary".into());
            }
        }
        control.generation += 1;
        persist_heads(&self.shared.region, layout, control.generation, heads);
        control.heads = heads.to_vec();
        // Only now may the writers reuse the space before the new heads.
        for (stream, &pos) in self.shared.streams.iter().zip(heads) {
            stream.pipeline.lock().advance_head(pos);
        }
        Ok(())
    }

    /// Whether a batch starts at `pos` (< `end`) of a ring, or after the lap
    /// rest too short for a header.
    fn is_batch_start(&self, ring: &Ring, pos: u64, end: u64) -> bool {
        let rest = ring.lap_remaining(pos);
        let at = if rest < BATCH_HEADER_BYTES { pos + rest } else { pos };
        if at >= end {
            return true;
        }
        let header = self.shared.region.read_vec(ring.offset_of(at), BATCH_HEADER_BYTES as usize);
        decode_header(&header, at).is_ok()
    }

    /// A private copy of stream `stream`'s key table as the last cut copied
    /// it (the checkpoint log's hash table, section 4.5 step 4).
    pub fn checkpoint_key_table(&self, stream: usize) -> Result<KeyTable, DeclogError> {
        let layout = &self.shared.layout;
        if !layout.compression || stream >= layout.threads {
            return Err(DeclogError::InvalidInput(format!(
                "no key table copy for stream {stream} (compression {}, {} streams)",
                layout.compression, layout.threads
            )));
        }
        KeyTable::open_detached(&self.shared.region, layout.key_table_copy(stream))
    }
}
