//! The manifest (`docs/format/manifest.md`): the persistent series index of
//! the time-series engine and the root of its checkpoint (declog.txt section
//! 5.1). One file, `MANIFEST`, replaced whole and atomically by each
//! checkpoint, lists the series, the live block files, the delete tombstones
//! and the checkpoint LSN from which recovery replays the commit log.
//!
//! - `codec`: the binary encoding, its validation and its constants;
//! - `file`: writing (`MANIFEST.tmp`, sync, rename, directory sync) and reading;
//! - `fuzz`: the entry point of the `manifest_decode` fuzz target.

mod codec;
mod file;
#[cfg(any(test, feature = "fuzz"))]
mod fuzz;

use std::fmt::Write as _;

pub use codec::{
    decode_manifest, encode_manifest, validate_manifest, MANIFEST_FORMAT_VERSION, MANIFEST_FORMAT_VERSION_V1,
    MANIFEST_HEADER_BYTES, MANIFEST_MAGIC, MF_OFFSET_BODY_CRC, MF_OFFSET_BODY_LEN, MF_OFFSET_MAGIC,
    MF_OFFSET_VERSION,
};
pub use file::{read_manifest, write_manifest, MANIFEST_FILE, MANIFEST_TMP_FILE};
#[cfg(any(test, feature = "fuzz"))]
pub use fuzz::fuzz_manifest_decode;

use crate::model::{FieldType, SeriesId, SeriesKey, TimestampNs};

/// The state a checkpoint made durable. See `docs/format/manifest.md`
/// ("Validity") for the invariants [`validate_manifest`] enforces.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    /// Counts checkpoints (the first checkpoint writes 1).
    pub checkpoint_seq: u64,
    /// Log records with LSN <= this are covered by the block files.
    pub checkpoint_lsn: u64,
    /// Commit protocol that wrote the log: "none", "serial-pmem", "serial-ssd", ...
    pub protocol: String,
    /// Larger than every series id ever assigned.
    pub next_series_id: u64,
    /// Larger than every block file seq ever used.
    pub next_file_seq: u64,
    /// Unique names.
    pub databases: Vec<String>,
    /// Sorted by id; ids unique; (db, key) unique.
    pub series: Vec<ManifestSeries>,
    /// Live block file seqs, ascending.
    pub block_files: Vec<u64>,
    pub tombstones: Vec<ManifestTombstone>,
    /// DecLog only: per stream, the position of the checkpoint's cut; the
    /// entries before it are covered by the block files (empty otherwise).
    pub declog_cut: Vec<u64>,
}

/// One series of the index.
#[derive(Clone, Debug, PartialEq)]
pub struct ManifestSeries {
    pub id: SeriesId,
    /// One of [`Manifest::databases`].
    pub db: String,
    /// Tags sorted by key, keys unique.
    pub key: SeriesKey,
    pub field_type: FieldType,
}

/// A delete: masks the points of `series` in `[min_ts, max_ts]` held by
/// blocks in files with seq <= `upto_file_seq`.
#[derive(Clone, Debug, PartialEq)]
pub struct ManifestTombstone {
    pub series: SeriesId,
    pub min_ts: TimestampNs,
    pub max_ts: TimestampNs,
    pub upto_file_seq: u64,
}

/// A readable dump for `strata inspect`.
pub fn describe_manifest(m: &Manifest) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "manifest: format version {MANIFEST_FORMAT_VERSION}, checkpoint {} at LSN {}, protocol {:?}",
        m.checkpoint_seq, m.checkpoint_lsn, m.protocol
    );
    let _ = writeln!(out, "next series id {}, next block file seq {}", m.next_series_id, m.next_file_seq);
    let _ = writeln!(out, "databases ({}): {}", m.databases.len(), quoted_list(&m.databases));
    let _ = writeln!(out, "series ({}):", m.series.len());
    for s in &m.series {
        let _ = writeln!(out, "  {} db {:?} {} {}", s.id, s.db, s.key, s.field_type.influx_name());
    }
    let files: Vec<String> =
        m.block_files.iter().map(|seq| crate::block_file::block_file_name(*seq)).collect();
    let _ = writeln!(out, "block files ({}): {}", files.len(), files.join(" "));
    if !m.declog_cut.is_empty() {
        let _ = writeln!(out, "declog cut (per stream): {:?}", m.declog_cut);
    }
    let _ = writeln!(out, "tombstones ({}):", m.tombstones.len());
    for t in &m.tombstones {
        let _ = writeln!(
            out,
            "  {} ts [{}, {}] in block files with seq <= {}",
            t.series, t.min_ts, t.max_ts, t.upto_file_seq
        );
    }
    out
}

fn quoted_list(items: &[String]) -> String {
    items.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod crash_tests;

#[cfg(test)]
mod format_doc_tests;
