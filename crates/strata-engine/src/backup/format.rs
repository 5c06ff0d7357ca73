//! The backup manifest `BACKUP` (`docs/format/backup-manifest.md`): the
//! files a backup holds, each with its length and CRC32C, behind a header
//! with a magic, a version and a CRC32C of the body. Encoding and decoding
//! only; taking and restoring a backup is `backup/mod.rs`.

use thiserror::Error;

/// The ASCII bytes `STRATABK` read as a little-endian u64.
pub const BACKUP_MAGIC: u64 = u64::from_le_bytes(*b"STRATABK");
pub const BACKUP_FORMAT_VERSION: u32 = 1;
pub const BACKUP_HEADER_BYTES: usize = 24;
/// The backup manifest's file name in the backup directory.
pub const BACKUP_FILE: &str = "BACKUP";

/// One file of a backup: its path relative to the backup directory (`/`
/// separated, the same relative path in the restored data directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupFile {
    pub path: String,
    pub len_bytes: u64,
    pub crc32c: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupManifest {
    /// The series checkpoint the backup copies.
    pub checkpoint_seq: u64,
    /// Every log record at or below it is in the copied block files.
    pub checkpoint_lsn: u64,
    /// Unix time the backup was taken, in nanoseconds.
    pub created_unix_ns: u64,
    pub files: Vec<BackupFile>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum BackupFormatError {
    #[error("backup manifest is {0} bytes, shorter than its header")]
    Short(usize),
    #[error("backup manifest magic {0:#018x} is not STRATABK")]
    Magic(u64),
    #[error("backup manifest version {0} is not supported (this build reads {BACKUP_FORMAT_VERSION})")]
    Version(u32),
    #[error("backup manifest body is {actual} bytes, its header says {expected}")]
    Length { expected: u64, actual: usize },
    #[error("backup manifest body CRC32C {actual:#010x} does not match its header's {expected:#010x}")]
    Crc { expected: u32, actual: u32 },
    #[error("backup manifest body ends inside a field")]
    Truncated,
    #[error("backup manifest names a file whose path is not UTF-8")]
    Path,
    #[error("backup manifest body has {0} trailing bytes")]
    Trailing(usize),
}

pub fn encode_backup_manifest(m: &BackupManifest) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&m.checkpoint_seq.to_le_bytes());
    body.extend_from_slice(&m.checkpoint_lsn.to_le_bytes());
    body.extend_from_slice(&m.created_unix_ns.to_le_bytes());
    body.extend_from_slice(&(m.files.len() as u32).to_le_bytes());
    for f in &m.files {
        body.extend_from_slice(&(f.path.len() as u16).to_le_bytes());
        body.extend_from_slice(f.path.as_bytes());
        body.extend_from_slice(&f.len_bytes.to_le_bytes());
        body.extend_from_slice(&f.crc32c.to_le_bytes());
    }
    let mut out = Vec::with_capacity(BACKUP_HEADER_BYTES + body.len());
    out.extend_from_slice(&BACKUP_MAGIC.to_le_bytes());
    out.extend_from_slice(&BACKUP_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BackupFormatError> {
        if self.0.len() < n {
            return Err(BackupFormatError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u16(&mut self) -> Result<u16, BackupFormatError> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }
    fn u32(&mut self) -> Result<u32, BackupFormatError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64, BackupFormatError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
}

pub fn decode_backup_manifest(bytes: &[u8]) -> Result<BackupManifest, BackupFormatError> {
    if bytes.len() < BACKUP_HEADER_BYTES {
        return Err(BackupFormatError::Short(bytes.len()));
    }
    let mut header = Reader(&bytes[..BACKUP_HEADER_BYTES]);
    let magic = header.u64()?;
    if magic != BACKUP_MAGIC {
        return Err(BackupFormatError::Magic(magic));
    }
    let version = header.u32()?;
    if version != BACKUP_FORMAT_VERSION {
        return Err(BackupFormatError::Version(version));
    }
    let expected_crc = header.u32()?;
    let body_len = header.u64()?;
    let body = &bytes[BACKUP_HEADER_BYTES..];
    if body.len() as u64 != body_len {
        return Err(BackupFormatError::Length { expected: body_len, actual: body.len() });
    }
    let actual_crc = crc32c::crc32c(body);
    if actual_crc != expected_crc {
        return Err(BackupFormatError::Crc { expected: expected_crc, actual: actual_crc });
    }
    let mut r = Reader(body);
    let checkpoint_seq = r.u64()?;
    let checkpoint_lsn = r.u64()?;
    let created_unix_ns = r.u64()?;
    let count = r.u32()?;
    let mut files = Vec::new();
    for _ in 0..count {
        let path_len = r.u16()? as usize;
        let path = std::str::from_utf8(r.take(path_len)?).map_err(|_| BackupFormatError::Path)?.to_string();
        files.push(BackupFile { path, len_bytes: r.u64()?, crc32c: r.u32()? });
    }
    if !r.0.is_empty() {
        return Err(BackupFormatError::Trailing(r.0.len()));
    }
    Ok(BackupManifest { checkpoint_seq, checkpoint_lsn, created_unix_ns, files })
}
