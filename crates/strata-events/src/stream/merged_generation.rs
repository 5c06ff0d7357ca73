//! The merged out-of-order generation of a stream whose flank is in DRAM
//! (chronicledb-pmem.txt section 4.3 merge protocol; the PMem flank keeps it
//! in its header): file `ooo-merged-generation` in the stream directory,
//! 8 bytes little-endian then their CRC32C (4 bytes), replaced by writing
//! a temporary file, syncing it and renaming it durably.

use std::path::Path;

use strata_media::fs::{create_durably, rename_durably};
use strata_media::FileSystem;

use crate::ids::EventError;

pub const MERGED_GENERATION_FILE: &str = "ooo-merged-generation";

/// Reads the recorded generation (0 if none was recorded).
pub fn read(fs: &dyn FileSystem, dir: &Path) -> Result<u64, EventError> {
    let path = dir.join(MERGED_GENERATION_FILE);
    if !fs.exists(&path) {
        return Ok(0);
    }
    let file = fs.open(&path)?;
    let mut buf = [0u8; 12];
    file.read_exact_at(0, &mut buf)?;
    let value = u64::from_le_bytes(buf[..8].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(buf[8..].try_into().expect("4 bytes"));
    if crc32c::crc32c(&buf[..8]) != crc {
        return Err(EventError::corruption(path.display().to_string(), "CRC mismatch"));
    }
    Ok(value)
}

/// Records `generation` durably.
pub fn write(fs: &dyn FileSystem, dir: &Path, generation: u64) -> Result<(), EventError> {
    let tmp = dir.join(format!("{MERGED_GENERATION_FILE}.tmp"));
    let mut buf = generation.to_le_bytes().to_vec();
    buf.extend_from_slice(&crc32c::crc32c(&buf).to_le_bytes());
    let file = create_durably(fs, &tmp)?;
    file.write_at(0, &buf)?;
    file.sync_all()?;
    rename_durably(fs, &tmp, &dir.join(MERGED_GENERATION_FILE))?;
    Ok(())
}
