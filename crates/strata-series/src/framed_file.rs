//! The framing shared by the series engine's small whole-file formats
//! (`MANIFEST`, `RETENTION`; docs/format/manifest.md and retention.md):
//! a 24-byte header (magic u64, format version u32, CRC32C of the body
//! u32, body length u64, all little-endian) before the body, and how such a
//! file is replaced (write a temporary file, sync, rename durably) and read
//! back whole.

use std::io;
use std::path::Path;

use strata_media::fs::{rename_durably, FileSystem};

use crate::bytes::{put_u32, put_u64, ByteReader};
use crate::error::{EngineError, FormatError};

/// Bytes of the header.
pub const FRAME_HEADER_BYTES: usize = 24;
const _: () = assert!(FRAME_HEADER_BYTES == crate::manifest::MANIFEST_HEADER_BYTES);
const _: () = assert!(FRAME_HEADER_BYTES == crate::retention_file::RETENTION_HEADER_BYTES);

/// What a framed file is: its magic, what to call it, the message for a
/// wrong magic.
pub struct FrameKind {
    pub magic: u64,
    pub what: &'static str,
    pub bad_magic: &'static str,
}

/// `body` behind its header.
pub fn frame(magic: u64, version: u32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(FRAME_HEADER_BYTES + body.len());
    put_u64(&mut out, magic);
    put_u32(&mut out, version);
    put_u32(&mut out, crc32c::crc32c(body));
    put_u64(&mut out, body.len() as u64);
    out.extend_from_slice(body);
    out
}

/// Checks the header of `bytes` (magic, a version `accept` takes, length,
/// CRC) and returns the version and the body.
pub fn unframe<'a>(
    bytes: &'a [u8],
    kind: &FrameKind,
    accept: impl Fn(u32) -> bool,
) -> Result<(u32, &'a [u8]), FormatError> {
    if bytes.len() < FRAME_HEADER_BYTES {
        return Err(FormatError::TooShort {
            what: "header",
            need: FRAME_HEADER_BYTES as u64,
            have: bytes.len() as u64,
        });
    }
    let mut header = ByteReader::new(&bytes[..FRAME_HEADER_BYTES], "header offset");
    if header.u64()? != kind.magic {
        return Err(FormatError::BadMagic(kind.bad_magic));
    }
    let version = header.u32()?;
    if !accept(version) {
        return Err(FormatError::UnsupportedVersion { what: kind.what, version });
    }
    let body_crc = header.u32()?;
    let body_len = header.u64()?;
    let body = &bytes[FRAME_HEADER_BYTES..];
    if body_len != body.len() as u64 {
        return Err(FormatError::Invalid(format!(
            "header gives a body of {body_len} bytes, the file holds {}",
            body.len()
        )));
    }
    FormatError::check_crc("body", body_crc, crc32c::crc32c(body))?;
    Ok((version, body))
}

/// Replaces `dir/name` with `bytes`, durably and atomically, through
/// `dir/tmp_name`: on success the new content survives a crash; on error or
/// crash the file holds the old or the new content.
pub fn replace_durably(
    fs: &dyn FileSystem,
    dir: &Path,
    tmp_name: &str,
    name: &str,
    bytes: &[u8],
) -> Result<(), EngineError> {
    let tmp = dir.join(tmp_name);
    let file = fs.create(&tmp)?;
    file.write_at(0, bytes)?;
    file.sync_all()?;
    drop(file);
    rename_durably(fs, &tmp, &dir.join(name))?;
    Ok(())
}

/// Reads `dir/name` whole and decodes it: `None` if there is none; bytes
/// that do not decode are `Corruption` naming the file.
pub fn read_decoded<T>(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
    decode: impl FnOnce(&[u8]) -> Result<T, FormatError>,
) -> Result<Option<T>, EngineError> {
    let path = dir.join(name);
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
    decode(&bytes).map(Some).map_err(|e| corrupt(e.to_string()))
}
