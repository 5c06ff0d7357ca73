//! The PMem variants of the persist benchmark, one timed window each:
//! - (a) memcpy into the mapping with no flush: the limit of this medium;
//! - (b) append a chunk, then flush its lines and fence, per chunk size;
//! - (c) the serial PMem log (strict ordering: head+payload, flush, fence,
//!   tail, flush, fence per entry), with persist counts per entry from this
//!   thread's [`thread_persist_stats`] deltas.

use std::time::Duration;

use strata_log::record::{HEADER_BYTES, TAIL_BYTES};
use strata_log::{CommitLog, LogError, SerialLog, TxnId};
use strata_pmem::thread_persist_stats;

use super::media::Medium;
use super::Metrics;
use crate::measure::run_for;

/// Bytes per `memcpy` of variant (a): large enough that call overhead vanishes.
pub(super) const MEMCPY_CHUNK_BYTES: u64 = 64 << 10;

/// (a) Copies into the raw area with no write-back and no fence.
pub(super) fn memcpy_round(m: &mut Medium, window: Duration) -> anyhow::Result<Metrics> {
    let src = vec![0x5a_u8; MEMCPY_CHUNK_BYTES as usize];
    let region = m.region.clone();
    let t = run_for(window, || {
        region.write(m.next_offset(MEMCPY_CHUNK_BYTES), &src);
        Ok(())
    })?;
    Ok(vec![("throughput_bytes_per_s", t.ops_per_s() * MEMCPY_CHUNK_BYTES as f64)])
}

/// (b) Appends `chunk_bytes`, then flushes its lines and fences, repeatedly.
pub(super) fn persist_round(m: &mut Medium, chunk_bytes: u64, window: Duration) -> anyhow::Result<Metrics> {
    let src = vec![0xa5_u8; chunk_bytes as usize];
    let region = m.region.clone();
    let t = run_for(window, || {
        let at = m.next_offset(chunk_bytes);
        region.write(at, &src);
        region.persist(at, chunk_bytes);
        Ok(())
    })?;
    Ok(vec![
        ("throughput_bytes_per_s", t.ops_per_s() * chunk_bytes as f64),
        ("ns_per_persist", t.ns_per_op()),
    ])
}

/// Payload bytes that make a whole log record of `entry_bytes`.
pub(super) fn payload_bytes(entry_bytes: u64) -> u64 {
    let payload = entry_bytes - HEADER_BYTES - TAIL_BYTES;
    debug_assert_eq!(strata_log::record::record_len(payload), entry_bytes);
    payload
}

/// (c) Commits `entry_bytes` records to a serial PMem log; truncates the ring
/// whenever it is full (one persisted 8-byte store, counted in the figures).
pub(super) fn serial_round(log: &SerialLog, entry_bytes: u64, window: Duration) -> anyhow::Result<Metrics> {
    let payload = vec![0x3c_u8; payload_bytes(entry_bytes) as usize];
    let mut txn = 0u64;
    let before = thread_persist_stats();
    let t = run_for(window, || {
        txn += 1;
        match log.commit(TxnId(txn), &payload) {
            Ok(_) => Ok(()),
            Err(LogError::Full { .. }) => {
                log.truncate_all()?;
                log.commit(TxnId(txn), &payload)?;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    })?;
    let d = thread_persist_stats() - before;
    let per_entry = |count: u64| count as f64 / t.ops as f64;
    Ok(vec![
        ("throughput_entries_per_s", t.ops_per_s()),
        ("throughput_bytes_per_s", t.ops_per_s() * entry_bytes as f64),
        ("fences_per_entry", per_entry(d.fences)),
        ("lines_flushed_per_entry", per_entry(d.lines_flushed)),
        ("bytes_per_entry", per_entry(d.bytes_persisted)),
        ("media_blocks_per_entry", per_entry(d.media_blocks_written)),
    ])
}
