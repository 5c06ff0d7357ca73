//! The binary encoding of the [`Manifest`] (`docs/format/manifest.md`): a
//! 24-byte header (magic, version, body CRC32C, body length) and a body of
//! little-endian integers and length-prefixed UTF-8 strings. Decoding checks
//! everything, never panics and allocates at most in proportion to its input.

use std::collections::HashSet;

use super::{Manifest, ManifestSeries, ManifestTombstone};
use crate::bytes::{put_series_key, put_str, put_u32, put_u64, ByteReader, STRING_MIN_BYTES};
use crate::error::FormatError;
use crate::framed_file::{frame, unframe, FrameKind};
use crate::model::{FieldType, SeriesId};

/// "STRATAMF" (manifest) as a little-endian u64.
pub const MANIFEST_MAGIC: u64 = u64::from_le_bytes(*b"STRATAMF");
pub const MANIFEST_FORMAT_VERSION: u32 = 2;
/// Version 1 had no `declog_cut`; it is still read (as an empty cut).
pub const MANIFEST_FORMAT_VERSION_V1: u32 = 1;
pub const MANIFEST_HEADER_BYTES: usize = 24;
pub const MF_OFFSET_MAGIC: usize = 0;
pub const MF_OFFSET_VERSION: usize = 8;
pub const MF_OFFSET_BODY_CRC: usize = 12;
pub const MF_OFFSET_BODY_LEN: usize = 16;

/// Smallest encodings of list items, to bound a count by the bytes left.
const SERIES_MIN_BYTES: usize = 8 + 3 * STRING_MIN_BYTES + 4 + 1;
const BLOCK_FILE_BYTES: usize = 8;
const TOMBSTONE_BYTES: usize = 32;

/// The file bytes of `m`: header and body. Encodes whatever it is given;
/// [`decode_manifest`] accepts the result if [`validate_manifest`] does.
pub fn encode_manifest(m: &Manifest) -> Vec<u8> {
    let mut body = Vec::new();
    put_u64(&mut body, m.checkpoint_seq);
    put_u64(&mut body, m.checkpoint_lsn);
    put_str(&mut body, &m.protocol);
    put_u64(&mut body, m.next_series_id);
    put_u64(&mut body, m.next_file_seq);
    put_u32(&mut body, m.databases.len() as u32);
    for db in &m.databases {
        put_str(&mut body, db);
    }
    put_u32(&mut body, m.series.len() as u32);
    for s in &m.series {
        put_u64(&mut body, s.id.0);
        put_str(&mut body, &s.db);
        put_series_key(&mut body, &s.key);
        body.push(s.field_type.code());
    }
    put_u32(&mut body, m.block_files.len() as u32);
    for seq in &m.block_files {
        put_u64(&mut body, *seq);
    }
    put_u32(&mut body, m.tombstones.len() as u32);
    for t in &m.tombstones {
        put_u64(&mut body, t.series.0);
        put_u64(&mut body, t.min_ts as u64);
        put_u64(&mut body, t.max_ts as u64);
        put_u64(&mut body, t.upto_file_seq);
    }
    put_u32(&mut body, m.declog_cut.len() as u32);
    for pos in &m.declog_cut {
        put_u64(&mut body, *pos);
    }
    frame(MANIFEST_MAGIC, MANIFEST_FORMAT_VERSION, &body)
}

/// Decodes and validates a whole `MANIFEST` file. Never panics; allocates at
/// most in proportion to `bytes.len()`.
pub fn decode_manifest(bytes: &[u8]) -> Result<Manifest, FormatError> {
    let kind = FrameKind { magic: MANIFEST_MAGIC, what: "manifest", bad_magic: "bad magic (not a manifest)" };
    let (version, body) =
        unframe(bytes, &kind, |v| v == MANIFEST_FORMAT_VERSION || v == MANIFEST_FORMAT_VERSION_V1)?;
    let m = decode_body(&mut ByteReader::new(body, "body offset"), version)?;
    validate_manifest(&m)?;
    Ok(m)
}

fn decode_body(r: &mut ByteReader<'_>, version: u32) -> Result<Manifest, FormatError> {
    let checkpoint_seq = r.u64()?;
    let checkpoint_lsn = r.u64()?;
    let protocol = r.string("protocol")?;
    let next_series_id = r.u64()?;
    let next_file_seq = r.u64()?;
    let count = r.count("databases", STRING_MIN_BYTES)?;
    let mut databases = Vec::with_capacity(count);
    for _ in 0..count {
        databases.push(r.string("database name")?);
    }
    let count = r.count("series", SERIES_MIN_BYTES)?;
    let mut series = Vec::with_capacity(count);
    for _ in 0..count {
        series.push(decode_series(r)?);
    }
    let count = r.count("block files", BLOCK_FILE_BYTES)?;
    let mut block_files = Vec::with_capacity(count);
    for _ in 0..count {
        block_files.push(r.u64()?);
    }
    let count = r.count("tombstones", TOMBSTONE_BYTES)?;
    let mut tombstones = Vec::with_capacity(count);
    for _ in 0..count {
        tombstones.push(ManifestTombstone {
            series: SeriesId(r.u64()?),
            min_ts: r.u64()? as i64,
            max_ts: r.u64()? as i64,
            upto_file_seq: r.u64()?,
        });
    }
    let mut declog_cut = Vec::new();
    if version >= MANIFEST_FORMAT_VERSION {
        let count = r.count("declog cut positions", BLOCK_FILE_BYTES)?;
        for _ in 0..count {
            declog_cut.push(r.u64()?);
        }
    }
    r.finish(if version >= MANIFEST_FORMAT_VERSION { "declog cut" } else { "tombstones" })?;
    Ok(Manifest {
        checkpoint_seq,
        checkpoint_lsn,
        protocol,
        next_series_id,
        next_file_seq,
        databases,
        series,
        block_files,
        tombstones,
        declog_cut,
    })
}

fn decode_series(r: &mut ByteReader<'_>) -> Result<ManifestSeries, FormatError> {
    let id = SeriesId(r.u64()?);
    let db = r.string("series database")?;
    let key = r.series_key()?;
    let code = r.u8()?;
    let field_type = FieldType::from_code(code)
        .ok_or_else(|| FormatError::Invalid(format!("series {id}: unknown field type code {code}")))?;
    Ok(ManifestSeries { id, db, key, field_type })
}

/// The invariants of a manifest (`docs/format/manifest.md`, "Validity").
/// `write_manifest` refuses, and `decode_manifest` rejects, a manifest
/// breaking one.
pub fn validate_manifest(m: &Manifest) -> Result<(), FormatError> {
    let fits = |what: &str, len: usize| {
        u32::try_from(len)
            .map(|_| ())
            .map_err(|_| FormatError::Invalid(format!("{what}: {len} exceeds u32::MAX")))
    };
    fits("protocol length", m.protocol.len())?;
    for list in [
        ("databases", m.databases.len()),
        ("series", m.series.len()),
        ("block files", m.block_files.len()),
        ("tombstones", m.tombstones.len()),
    ] {
        fits(list.0, list.1)?;
    }
    let mut databases = HashSet::with_capacity(m.databases.len());
    for db in &m.databases {
        fits("database name length", db.len())?;
        if !databases.insert(db.as_str()) {
            return Err(FormatError::Invalid(format!("database {db:?} listed twice")));
        }
    }
    let mut keys = HashSet::with_capacity(m.series.len());
    for (i, s) in m.series.iter().enumerate() {
        if i > 0 && m.series[i - 1].id >= s.id {
            return Err(FormatError::Invalid(format!(
                "series {} follows series {}: ids not strictly ascending",
                s.id,
                m.series[i - 1].id
            )));
        }
        if s.id.0 >= m.next_series_id {
            return Err(FormatError::Invalid(format!(
                "series {} is not below next_series_id {}",
                s.id, m.next_series_id
            )));
        }
        if !databases.contains(s.db.as_str()) {
            return Err(FormatError::Invalid(format!(
                "series {} belongs to unlisted database {:?}",
                s.id, s.db
            )));
        }
        for text in [&s.db, &s.key.measurement, &s.key.field] {
            fits("string length", text.len())?;
        }
        fits("tag count", s.key.tags.len())?;
        for (j, (k, v)) in s.key.tags.iter().enumerate() {
            fits("tag length", k.len().max(v.len()))?;
            if j > 0 && s.key.tags[j - 1].0 >= *k {
                return Err(FormatError::Invalid(format!(
                    "series {}: tag keys not strictly ascending at {k:?}",
                    s.id
                )));
            }
        }
        if !keys.insert((s.db.as_str(), &s.key)) {
            return Err(FormatError::Invalid(format!(
                "series {}: key {} in database {:?} listed twice",
                s.id, s.key, s.db
            )));
        }
    }
    for (i, seq) in m.block_files.iter().enumerate() {
        if i > 0 && m.block_files[i - 1] >= *seq {
            return Err(FormatError::Invalid(format!("block file seqs not strictly ascending at {seq}")));
        }
        if *seq >= m.next_file_seq {
            return Err(FormatError::Invalid(format!(
                "block file seq {seq} is not below next_file_seq {}",
                m.next_file_seq
            )));
        }
    }
    for t in &m.tombstones {
        if t.min_ts > t.max_ts {
            return Err(FormatError::Invalid(format!(
                "tombstone of series {}: min_ts {} > max_ts {}",
                t.series, t.min_ts, t.max_ts
            )));
        }
        if t.series.0 >= m.next_series_id {
            return Err(FormatError::Invalid(format!(
                "tombstone of series {} is not below next_series_id {}",
                t.series, m.next_series_id
            )));
        }
    }
    Ok(())
}
