//! Fuzz entries (feature `fuzz`, for the cargo-fuzz crate in `fuzz/`; the
//! smoke test runs them on the stable toolchain).

use std::sync::Arc;

use strata_pmem::Region;
use strata_txn::{TableId, TableSchema};

use crate::db::FirDb;

/// The schemas every fuzzed image is opened with (one table of 8-byte rows).
pub fn fuzz_schemas() -> Vec<TableSchema> {
    vec![TableSchema { name: "t".into(), row_bytes: 8 }]
}

/// Opens an arbitrary region image as FIR tables (superblock, LCTT,
/// directory, Halloc, block chains, slots): an error or a database, never
/// a panic or a hang; a database that opens lists its rows.
pub fn fuzz_open(data: &[u8]) {
    // A device is a whole number of 8-byte words.
    let len = data.len() / 8 * 8;
    if len == 0 {
        return;
    }
    let region = Arc::new(Region::sim_from_image(data[..len].to_vec()));
    if let Ok((db, report)) = FirDb::open(region, &fuzz_schemas()) {
        assert!(report.versions_kept + report.versions_discarded == report.versions_scanned);
        let rows = db.rows(TableId(0)).expect("table 0 exists");
        assert!(rows.len() as u64 <= report.keys);
    }
}
