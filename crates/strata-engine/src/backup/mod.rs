//! Full backups of the series data (`strata backup` / `strata restore`):
//! a checkpoint, then the manifest it wrote and every block file that
//! manifest names, hard-linked (or copied and fsynced when the backup is on
//! another file system) into the backup directory, with a backup manifest
//! (`BACKUP`, [`format`]) giving each file's length and CRC32C, and the
//! retention policies' file (`RETENTION`) when there is one. Restore checks
//! every CRC before it copies anything into the data directory.
//!
//! Consistency while writes go on: block files are written once and never
//! changed, and a checkpoint replaces `MANIFEST` by rename before it removes
//! files the new one no longer lists. So the manifest's bytes are read once,
//! each file it names is linked; a file that vanished meanwhile means a newer
//! checkpoint replaced the manifest, and the copy starts again from it.
//! Event streams (`streams/`) are not part of a backup yet.

pub mod format;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use strata_series::block_file::block_file_name;
use strata_series::manifest::{decode_manifest, MANIFEST_FILE};
use strata_series::retention_file::RETENTION_FILE;
use strata_series::{EngineError, FormatError};
use thiserror::Error;

use crate::db::Db;
use format::{decode_backup_manifest, encode_backup_manifest};
pub use format::{BackupFile, BackupFormatError, BackupManifest, BACKUP_FILE};

/// The series directory's name inside a data directory and a backup.
const SERIES_DIR: &str = "series";
/// The data directory's lock file ([`Db::lock_data_dir`]), kept by restore.
const LOCK_FILE: &str = "LOCK";
/// How many times a backup starts again after a checkpoint removed a file
/// it was copying before it gives up.
const COPY_ATTEMPTS: usize = 8;

#[derive(Debug, Error)]
pub enum BackupError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("backup directory {0} is not empty")]
    BackupDirNotEmpty(PathBuf),
    #[error("data directory {0} is not empty (pass --force to replace its contents)")]
    TargetNotEmpty(PathBuf),
    #[error("no checkpoint manifest in {0}")]
    NoManifest(PathBuf),
    #[error("manifest: {0}")]
    Manifest(#[from] FormatError),
    #[error("checkpoint before the backup: {0}")]
    Checkpoint(#[from] EngineError),
    #[error("checkpoints kept replacing the manifest; {COPY_ATTEMPTS} attempts failed")]
    Unsettled,
    #[error("{path}: {0}", path = BACKUP_FILE)]
    Format(#[from] BackupFormatError),
    #[error("backup file {path} is damaged: {what}")]
    Damaged { path: String, what: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::Io { path: path.to_path_buf(), source }
}

impl Db {
    /// Takes a checkpoint and copies it into `backup_dir` (created; must be
    /// empty) while the database keeps serving writes.
    pub fn backup(&self, backup_dir: &Path) -> Result<BackupManifest, BackupError> {
        self.engine().checkpoint()?;
        backup_series_dir(&self.config().series_dir(), backup_dir)
    }
}

/// Copies the checkpoint of `series_dir` (its current `MANIFEST` and the
/// block files it names) into `backup_dir` and writes the backup manifest.
pub fn backup_series_dir(series_dir: &Path, backup_dir: &Path) -> Result<BackupManifest, BackupError> {
    std::fs::create_dir_all(backup_dir).map_err(io(backup_dir))?;
    if std::fs::read_dir(backup_dir).map_err(io(backup_dir))?.next().is_some() {
        return Err(BackupError::BackupDirNotEmpty(backup_dir.to_path_buf()));
    }
    let target = backup_dir.join(SERIES_DIR);
    for _ in 0..COPY_ATTEMPTS {
        if target.exists() {
            std::fs::remove_dir_all(&target).map_err(io(&target))?;
        }
        std::fs::create_dir_all(&target).map_err(io(&target))?;
        if let Some(manifest) = copy_checkpoint(series_dir, &target)? {
            sync_dir(&target)?;
            let bytes = encode_backup_manifest(&manifest);
            write_synced(&backup_dir.join(BACKUP_FILE), &bytes)?;
            sync_dir(backup_dir)?;
            return Ok(manifest);
        }
    }
    Err(BackupError::Unsettled)
}

/// One attempt; `None` when a named block file vanished (a newer checkpoint).
fn copy_checkpoint(series_dir: &Path, target: &Path) -> Result<Option<BackupManifest>, BackupError> {
    let manifest_path = series_dir.join(MANIFEST_FILE);
    let manifest_bytes = match std::fs::read(&manifest_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(BackupError::NoManifest(series_dir.to_path_buf()))
        }
        Err(e) => return Err(io(&manifest_path)(e)),
    };
    let manifest = decode_manifest(&manifest_bytes)?;
    let mut files = Vec::new();
    for seq in &manifest.block_files {
        let name = block_file_name(*seq);
        let from = series_dir.join(&name);
        let to = target.join(&name);
        match link_or_copy(&from, &to) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(&from)(e)),
        }
        files.push(describe_file(&to, format!("{SERIES_DIR}/{name}"))?);
    }
    write_synced(&target.join(MANIFEST_FILE), &manifest_bytes)?;
    files.push(BackupFile {
        path: format!("{SERIES_DIR}/{MANIFEST_FILE}"),
        len_bytes: manifest_bytes.len() as u64,
        crc32c: crc32c::crc32c(&manifest_bytes),
    });
    // The retention policies (replaced whole by rename, so one read is
    // one consistent version; absent until a policy statement ran).
    let retention_path = series_dir.join(RETENTION_FILE);
    match std::fs::read(&retention_path) {
        Ok(bytes) => {
            write_synced(&target.join(RETENTION_FILE), &bytes)?;
            files.push(BackupFile {
                path: format!("{SERIES_DIR}/{RETENTION_FILE}"),
                len_bytes: bytes.len() as u64,
                crc32c: crc32c::crc32c(&bytes),
            });
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(&retention_path)(e)),
    }
    let created_unix_ns =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    Ok(Some(BackupManifest {
        checkpoint_seq: manifest.checkpoint_seq,
        checkpoint_lsn: manifest.checkpoint_lsn,
        created_unix_ns,
        files,
    }))
}

/// A hard link (the file is never changed again), or a synced copy across
/// file systems.
fn link_or_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(e),
        Err(_) => {
            std::fs::copy(from, to)?;
            File::open(to)?.sync_all()
        }
    }
}

fn describe_file(path: &Path, relative: String) -> Result<BackupFile, BackupError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    Ok(BackupFile { path: relative, len_bytes: bytes.len() as u64, crc32c: crc32c::crc32c(&bytes) })
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), BackupError> {
    let mut f = File::create(path).map_err(io(path))?;
    f.write_all(bytes).map_err(io(path))?;
    f.sync_all().map_err(io(path))
}

fn sync_dir(dir: &Path) -> Result<(), BackupError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// Reads `backup_dir`'s backup manifest and checks every file it lists
/// (length and CRC32C).
pub fn verify_backup(backup_dir: &Path) -> Result<BackupManifest, BackupError> {
    let path = backup_dir.join(BACKUP_FILE);
    let manifest = decode_backup_manifest(&std::fs::read(&path).map_err(io(&path))?)?;
    for f in &manifest.files {
        let found = describe_file(&backup_dir.join(&f.path), f.path.clone())?;
        if found.len_bytes != f.len_bytes || found.crc32c != f.crc32c {
            return Err(BackupError::Damaged {
                path: f.path.clone(),
                what: format!(
                    "{} bytes with CRC32C {:#010x}, the backup manifest says {} bytes with {:#010x}",
                    found.len_bytes, found.crc32c, f.len_bytes, f.crc32c
                ),
            });
        }
    }
    Ok(manifest)
}

/// Restores `backup_dir` into `data_dir` (of a stopped server): verifies
/// the backup, then copies its files in, synced. A non-empty `data_dir`
/// (its `LOCK` file aside, which the caller may hold) is refused unless
/// `force`, which first empties it.
pub fn restore_backup(
    backup_dir: &Path,
    data_dir: &Path,
    force: bool,
) -> Result<BackupManifest, BackupError> {
    let manifest = verify_backup(backup_dir)?;
    std::fs::create_dir_all(data_dir).map_err(io(data_dir))?;
    let mut entries = Vec::new();
    for e in std::fs::read_dir(data_dir).map_err(io(data_dir))? {
        let e = e.map_err(io(data_dir))?;
        if e.file_name() != LOCK_FILE {
            entries.push(e);
        }
    }
    if !entries.is_empty() {
        if !force {
            return Err(BackupError::TargetNotEmpty(data_dir.to_path_buf()));
        }
        for e in entries {
            let p = e.path();
            let removed = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
            removed.map_err(io(&p))?;
        }
    }
    let series = data_dir.join(SERIES_DIR);
    std::fs::create_dir_all(&series).map_err(io(&series))?;
    for f in &manifest.files {
        let from = backup_dir.join(&f.path);
        let to = data_dir.join(&f.path);
        std::fs::copy(&from, &to).map_err(io(&from))?;
        File::open(&to).and_then(|t| t.sync_all()).map_err(io(&to))?;
    }
    sync_dir(&series)?;
    sync_dir(data_dir)?;
    Ok(manifest)
}

#[cfg(test)]
mod tests;
