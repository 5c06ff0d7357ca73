//! Writing and reading the `MANIFEST` file through the `FileSystem` trait
//! (`docs/format/manifest.md`, "Replacing the manifest"): the new manifest is
//! written whole to `MANIFEST.tmp`, synced, renamed over `MANIFEST` and the
//! directory synced, so a crash at any point leaves the old or the new one.

use std::path::Path;

use strata_media::fs::FileSystem;

use super::codec::{decode_manifest, encode_manifest, validate_manifest};
use super::Manifest;
use crate::error::EngineError;
use crate::framed_file::{read_decoded, replace_durably};

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
    replace_durably(fs, dir, MANIFEST_TMP_FILE, MANIFEST_FILE, &encode_manifest(m))
}

/// Reads `dir/MANIFEST`: `None` if there is none (a fresh data directory).
/// A leftover `MANIFEST.tmp` (a crash before its rename) is ignored and left
/// alone: a checkpoint running concurrently may be writing it; the next
/// `write_manifest` truncates it. A manifest that does not decode is
/// `Corruption` naming the file.
pub fn read_manifest(fs: &dyn FileSystem, dir: &Path) -> Result<Option<Manifest>, EngineError> {
    read_decoded(fs, dir, MANIFEST_FILE, decode_manifest)
}
