//! The `RETENTION` file (`docs/format/retention.md`): the retention
//! policies of every database that has an entry in the
//! [`crate::retention::RetentionCatalog`], next to the `MANIFEST`. Like the
//! manifest it is replaced whole: written to `RETENTION.tmp`, synced,
//! renamed over `RETENTION` and the directory synced, so a crash leaves the
//! old or the new catalog. It does not go through the commit log, so it is
//! equally durable under every commit protocol. Decoding checks every
//! length and the CRC32C and never panics.

use std::collections::BTreeMap;
use std::path::Path;

use strata_media::fs::FileSystem;

use crate::bytes::{put_str, put_u32, put_u64, ByteReader, STRING_MIN_BYTES};
use crate::error::{EngineError, FormatError};
use crate::framed_file::{frame, read_decoded, replace_durably, unframe, FrameKind};
use crate::retention::{DbRetention, RetentionPolicy};

/// "STRATARP" (retention policies) as a little-endian u64.
pub const RETENTION_MAGIC: u64 = u64::from_le_bytes(*b"STRATARP");
pub const RETENTION_FORMAT_VERSION: u32 = 1;
pub const RETENTION_HEADER_BYTES: usize = 24;
pub const RP_OFFSET_MAGIC: usize = 0;
pub const RP_OFFSET_VERSION: usize = 8;
pub const RP_OFFSET_BODY_CRC: usize = 12;
pub const RP_OFFSET_BODY_LEN: usize = 16;
pub const RETENTION_FILE: &str = "RETENTION";
pub const RETENTION_TMP_FILE: &str = "RETENTION.tmp";

/// Smallest encodings, to bound a count by the bytes left.
const DATABASE_MIN_BYTES: usize = STRING_MIN_BYTES + 1 + 4;
const POLICY_MIN_BYTES: usize = STRING_MIN_BYTES + 8 + 8 + 4;

/// The file bytes of `entries`: header and body.
pub fn encode_retention(entries: &BTreeMap<String, DbRetention>) -> Vec<u8> {
    let mut body = Vec::new();
    put_u32(&mut body, entries.len() as u32);
    for (db, r) in entries {
        put_str(&mut body, db);
        match &r.default {
            Some(name) => {
                body.push(1);
                put_str(&mut body, name);
            }
            None => body.push(0),
        }
        put_u32(&mut body, r.policies.len() as u32);
        for p in &r.policies {
            put_str(&mut body, &p.name);
            put_u64(&mut body, p.duration_ns as u64);
            put_u64(&mut body, p.shard_group_duration_ns as u64);
            put_u32(&mut body, p.replication);
        }
    }
    frame(RETENTION_MAGIC, RETENTION_FORMAT_VERSION, &body)
}

/// Decodes a whole `RETENTION` file.
pub fn decode_retention(bytes: &[u8]) -> Result<BTreeMap<String, DbRetention>, FormatError> {
    let kind = FrameKind {
        magic: RETENTION_MAGIC,
        what: "retention policy file",
        bad_magic: "bad magic (not a retention policy file)",
    };
    let (_, body) = unframe(bytes, &kind, |v| v == RETENTION_FORMAT_VERSION)?;
    let mut r = ByteReader::new(body, "body offset");
    let mut entries = BTreeMap::new();
    for _ in 0..r.count("databases", DATABASE_MIN_BYTES)? {
        let db = r.string("database name")?;
        let default = match r.u8()? {
            0 => None,
            1 => Some(r.string("default policy")?),
            code => return Err(FormatError::UnknownCode { what: "default policy flag", code: code.into() }),
        };
        let mut policies = Vec::new();
        for _ in 0..r.count("policies", POLICY_MIN_BYTES)? {
            policies.push(RetentionPolicy {
                name: r.string("policy name")?,
                duration_ns: r.u64()? as i64,
                shard_group_duration_ns: r.u64()? as i64,
                replication: r.u32()?,
            });
        }
        if entries.insert(db.clone(), DbRetention { policies, default }).is_some() {
            return Err(FormatError::Invalid(format!("database {db:?} listed twice")));
        }
    }
    r.finish("body")?;
    Ok(entries)
}

/// Replaces `dir/RETENTION` with `entries`, durably and atomically.
pub fn write_retention(
    fs: &dyn FileSystem,
    dir: &Path,
    entries: &BTreeMap<String, DbRetention>,
) -> Result<(), EngineError> {
    replace_durably(fs, dir, RETENTION_TMP_FILE, RETENTION_FILE, &encode_retention(entries))
}

/// Reads `dir/RETENTION`: `None` if there is none. A file that does not
/// decode is `Corruption` naming it.
pub fn read_retention(
    fs: &dyn FileSystem,
    dir: &Path,
) -> Result<Option<BTreeMap<String, DbRetention>>, EngineError> {
    read_decoded(fs, dir, RETENTION_FILE, decode_retention)
}

#[cfg(test)]
#[path = "retention_file_tests.rs"]
mod tests;
