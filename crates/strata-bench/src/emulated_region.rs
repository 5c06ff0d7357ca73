//! The emulated PMem region every benchmark measures on (DESIGN.md section
//! 1: PMem emulated on a mapped file): opened in `emulated` mode, every page
//! written once so the file system allocates it before any timing, then
//! msynced so the touch's dirty pages are not written back in the middle of
//! a measurement.

use std::path::Path;

use anyhow::Context;
use strata_pmem::{PmemMode, Region, RegionOffset, RegionOptions};

/// Bytes written per call while touching the region.
const TOUCH_CHUNK_BYTES: usize = 1 << 20;

/// Opens (creating) an emulated region of `len` bytes at `path`, every page
/// allocated and clean.
pub fn open_touched(path: &Path, len: u64) -> anyhow::Result<Region> {
    let region = Region::open(path, &RegionOptions::new(PmemMode::Emulated, len))
        .with_context(|| format!("opening an emulated PMem region at {}", path.display()))?;
    touch(&region).with_context(|| format!("msync of {}", path.display()))?;
    Ok(region)
}

/// Writes every page of `region` once (zeros), then msyncs it.
pub fn touch(region: &Region) -> anyhow::Result<()> {
    let zeros = vec![0u8; TOUCH_CHUNK_BYTES];
    let mut at = 0;
    while at < region.len() {
        let n = (region.len() - at).min(TOUCH_CHUNK_BYTES as u64) as usize;
        region.write(RegionOffset(at), &zeros[..n]);
        at += n as u64;
    }
    region.sync_to_media()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_region_is_zeroed_allocated_and_of_the_asked_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.pmem");
        let region = open_touched(&path, 3 * TOUCH_CHUNK_BYTES as u64 / 2).unwrap();
        assert_eq!(region.len(), 3 * TOUCH_CHUNK_BYTES as u64 / 2);
        assert_eq!(region.load_u64(RegionOffset(region.len() - 8)), 0);
        let allocated = {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(&path).unwrap().blocks() * 512
        };
        assert!(allocated >= region.len(), "every page allocated: {allocated} bytes");
    }
}
