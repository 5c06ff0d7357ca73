//! Writing and reading the `MANIFEST` file through the `FileSystem` trait
//! (`docs/format/manifest.md`, "Replacing the manifest"): the new manifest is
//! written whole to `MANIFEST.tmp`, synced, renamed over `MANIFEST` and the
//! directory synced, so a crash at any point leaves the old or the new one.

use std::io;
use std::path::Path;

use strata_media::fs::{rename_durably, FileSystem};

use super::codec::{decode_manifest, encode_manifest, validate_manifest};
use super::Manifest;
use crate::error::EngineError;

pub const MANIFEST_FILE: &str = "MANIFEST";
/// Where the next manifest is written before it is renamed over `MANIFEST`.
pub const MANIFEST_TMP_FILE: &str = "MANIFEST.tmp";

/// Replaces `dir/MANIFEST` with `m`, durably and atomically: on success the
/// new manifest survives a crash; on error or crash `read_manifest` returns
/// the old or the new one. `dir` must exist. A manifest breaking
/// `validate_manifest` is refused (`InvalidArgument`) before any I/O.
pub fn write_manifest(fs: &dyn FileSystem, dir: &Path, m: &Manifest) -> Result<(), EngineError> {
    validate_manifest(m)
        .map_err(|what| EngineError::InvalidArgument(format!("manifest not written: {what}")))?;
    let bytes = encode_manifest(m);
    let tmp = dir.join(MANIFEST_TMP_FILE);
    let file = fs.create(&tmp)?;
    file.write_at(0, &bytes)?;
    file.sync_all()?;
    drop(file);
    rename_durably(fs, &tmp, &dir.join(MANIFEST_FILE))?;
    Ok(())
}

/// Reads `dir/MANIFEST`: `None` if there is none (a fresh data directory).
/// A leftover `MANIFEST.tmp` (a crash before its rename) is ignored and left
/// alone: a checkpoint running concurrently may be writing it; the next
/// `write_manifest` truncates it. A manifest that does not decode is
/// `Corruption` naming the file.
pub fn read_manifest(fs: &dyn FileSystem, dir: &Path) -> Result<Option<Manifest>, EngineError> {
    let path = dir.join(MANIFEST_FILE);
    let file = match fs.open(&path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err.into()),
    };
    let corrupt = |what: String| EngineError::corruption(path.display().to_string(), what);
    let len = file.len()?;
    let len = usize::try_from(len).map_err(|_| corrupt(format!("{len} bytes do not fit in memory")))?;
    let mut bytes = vec![0u8; len];
    file.read_exact_at(0, &mut bytes).map_err(|err| match err.kind() {
        io::ErrorKind::UnexpectedEof => corrupt("file shrank while being read".into()),
        _ => EngineError::Io(err),
    })?;
    decode_manifest(&bytes).map(Some).map_err(|e| corrupt(e.to_string()))
}
