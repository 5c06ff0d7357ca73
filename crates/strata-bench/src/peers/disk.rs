//! Sizes of data directories as `du` counts them: bytes allocated on the
//! file system (`st_blocks` x 512), summed over every file below a
//! directory without following symbolic links; and waiting until a
//! directory stops changing (the quiesce step after a load).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;

/// Allocated bytes of everything below `dir` (0 if it does not exist).
/// Files that vanish while walking (a peer compacting) are skipped.
pub fn allocated_bytes(dir: &Path) -> anyhow::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    let mut total = meta.blocks() * 512;
    if !meta.is_dir() {
        return Ok(total);
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
    };
    for entry in entries {
        let Ok(entry) = entry else { continue };
        total += allocated_bytes(&entry.path())?;
    }
    Ok(total)
}

/// How [`wait_until_stable`] ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settled {
    pub bytes: u64,
    /// Time from the call to the last change.
    pub waited: Duration,
    /// False if `timeout` passed before the size held still.
    pub stable: bool,
}

/// Polls `size` every `poll` until it returned the same value `repeats`
/// times in a row (so it held still for `repeats - 1` polls), at most
/// `timeout`. `size` is a closure so the rule is testable without a disk.
pub fn wait_until_stable(
    mut size: impl FnMut() -> anyhow::Result<u64>,
    poll: Duration,
    repeats: u32,
    timeout: Duration,
) -> anyhow::Result<Settled> {
    let started = Instant::now();
    let mut last = size()?;
    let mut same = 1;
    let mut changed_at = Duration::ZERO;
    while same < repeats.max(1) {
        if started.elapsed() >= timeout {
            return Ok(Settled { bytes: last, waited: changed_at, stable: false });
        }
        std::thread::sleep(poll);
        let now = size()?;
        if now == last {
            same += 1;
        } else {
            last = now;
            same = 1;
            changed_at = started.elapsed();
        }
    }
    Ok(Settled { bytes: last, waited: changed_at, stable: true })
}
