//! The PMem pool file (format: `docs/format/pmem-pool.md`): a header naming
//! what lives where, then the serial log's ring. Later designs (DecLog's
//! queues, the event store) get their own areas through this header.
//!
//! Formatting writes the log, then the header fields and CRC (persisted),
//! then the magic word last (one failure-atomic persisted store): a pool
//! without the magic was never formatted, so formatting it again loses
//! nothing; a pool with the magic and a bad CRC is corruption, not new.

use std::sync::Arc;

use strata_log::{LogError, LogRecord, SerialLog};
use strata_pmem::{Region, RegionOffset};

/// Why the pool would not open. The header variants are corruption of the
/// pool's own header; the log variants carry the log's error, which keeps
/// corruption and I/O failure apart.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error("not a Strata PMem pool (magic {0:#018x})")]
    BadMagic(u64),
    #[error("PMem pool header CRC mismatch (corruption): stored {stored:#x}, computed {computed:#x}")]
    BadChecksum { stored: u64, computed: u32 },
    #[error("PMem pool format version {0} is not supported (expected {POOL_FORMAT_VERSION})")]
    UnsupportedVersion(u64),
    #[error("formatting the PMem log: {0}")]
    FormatLog(#[source] LogError),
    #[error("opening the PMem log: {0}")]
    OpenLog(#[source] LogError),
}

impl PoolError {
    /// Whether the pool's bytes are bad (rather than the device failing).
    pub fn is_corruption(&self) -> bool {
        match self {
            PoolError::BadMagic(_) | PoolError::BadChecksum { .. } | PoolError::UnsupportedVersion(_) => true,
            PoolError::FormatLog(e) | PoolError::OpenLog(e) => e.is_corruption(),
        }
    }
}

/// "STRATAPO" as a little-endian u64.
pub const POOL_MAGIC: u64 = u64::from_le_bytes(*b"STRATAPO");
pub const POOL_FORMAT_VERSION: u32 = 1;
/// Bytes before the first area (the log starts here).
pub const POOL_HEADER_BYTES: u64 = 4096;
pub const POOL_OFFSET_MAGIC: u64 = 0;
pub const POOL_OFFSET_VERSION: u64 = 8;
pub const POOL_OFFSET_LOG_BASE: u64 = 16;
pub const POOL_OFFSET_LOG_CAPACITY: u64 = 24;
pub const POOL_OFFSET_CRC: u64 = 32;
/// The CRC32C covers bytes 8..32 (version through log capacity).
pub const POOL_CRC_COVERED: std::ops::Range<u64> = 8..32;
/// Records in the log are packed at 8-byte alignment (the serial baseline).
pub const POOL_LOG_ALIGN_BYTES: u64 = 8;

fn header_crc(region: &Region) -> u32 {
    let bytes = region.read_vec(
        RegionOffset(POOL_CRC_COVERED.start),
        (POOL_CRC_COVERED.end - POOL_CRC_COVERED.start) as usize,
    );
    crc32c::crc32c(&bytes)
}

/// Opens the serial log in the pool, formatting the pool if it never was.
/// Returns the log, its committed records and whether it was formatted now.
pub fn open_pool_log(
    region: Arc<Region>,
    log_capacity_bytes: u64,
) -> Result<(SerialLog, Vec<LogRecord>, bool), PoolError> {
    let magic = region.load_u64(RegionOffset(POOL_OFFSET_MAGIC));
    if magic == 0 {
        let base = RegionOffset(POOL_HEADER_BYTES);
        let log = SerialLog::create_pmem(region.clone(), base, log_capacity_bytes, POOL_LOG_ALIGN_BYTES)
            .map_err(PoolError::FormatLog)?;
        region.store_u64(RegionOffset(POOL_OFFSET_VERSION), POOL_FORMAT_VERSION as u64);
        region.store_u64(RegionOffset(POOL_OFFSET_LOG_BASE), base.0);
        region.store_u64(RegionOffset(POOL_OFFSET_LOG_CAPACITY), log_capacity_bytes);
        region.store_u64(RegionOffset(POOL_OFFSET_CRC), header_crc(&region) as u64);
        region.persist(RegionOffset(0), 40);
        region.store_u64_persist(RegionOffset(POOL_OFFSET_MAGIC), POOL_MAGIC);
        return Ok((log, Vec::new(), true));
    }
    if magic != POOL_MAGIC {
        return Err(PoolError::BadMagic(magic));
    }
    let stored = region.load_u64(RegionOffset(POOL_OFFSET_CRC));
    let computed = header_crc(&region);
    if stored != computed as u64 {
        return Err(PoolError::BadChecksum { stored, computed });
    }
    let version = region.load_u64(RegionOffset(POOL_OFFSET_VERSION));
    if version != POOL_FORMAT_VERSION as u64 {
        return Err(PoolError::UnsupportedVersion(version));
    }
    let base = RegionOffset(region.load_u64(RegionOffset(POOL_OFFSET_LOG_BASE)));
    let (log, records) = SerialLog::open_pmem(region, base).map_err(PoolError::OpenLog)?;
    Ok((log, records, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_log::CommitLog;
    use strata_media::TxnId;

    #[test]
    fn format_then_reopen_replays_and_a_torn_format_reformats() {
        let region = Arc::new(Region::sim(1 << 20));
        let (log, recs, fresh) = open_pool_log(region.clone(), 64 << 10).unwrap();
        assert!(fresh && recs.is_empty());
        log.commit(TxnId(1), b"abc").unwrap();
        let image = region.as_sim().unwrap().persistent_image();
        let (_, recs, fresh) =
            open_pool_log(Arc::new(Region::sim_from_image(image.clone())), 64 << 10).unwrap();
        assert!(!fresh);
        assert_eq!(recs.len(), 1);
        let mut torn = image.clone();
        torn[..8].fill(0);
        let (_, recs, fresh) = open_pool_log(Arc::new(Region::sim_from_image(torn)), 64 << 10).unwrap();
        assert!(fresh && recs.is_empty(), "no magic: never formatted");
        let mut bad = image;
        bad[20] ^= 1;
        let e = open_pool_log(Arc::new(Region::sim_from_image(bad)), 64 << 10).err().unwrap();
        assert!(matches!(e, PoolError::BadChecksum { .. }) && e.is_corruption(), "{e}");
        assert!(e.to_string().contains("CRC mismatch"), "{e}");
    }

    #[test]
    fn format_doc_lists_every_constant() {
        let doc = include_str!("../../../docs/format/pmem-pool.md");
        for (name, value) in [
            ("POOL_FORMAT_VERSION", POOL_FORMAT_VERSION as u64),
            ("POOL_HEADER_BYTES", POOL_HEADER_BYTES),
            ("POOL_OFFSET_VERSION", POOL_OFFSET_VERSION),
            ("POOL_OFFSET_LOG_BASE", POOL_OFFSET_LOG_BASE),
            ("POOL_OFFSET_LOG_CAPACITY", POOL_OFFSET_LOG_CAPACITY),
            ("POOL_OFFSET_CRC", POOL_OFFSET_CRC),
            ("POOL_LOG_ALIGN_BYTES", POOL_LOG_ALIGN_BYTES),
        ] {
            assert!(
                doc.contains(&format!("`{name}` = {value}")),
                "docs/format/pmem-pool.md lacks `{name}` = {value}"
            );
        }
        assert!(doc.contains("STRATAPO"));
    }
}
