//! The facade's tables (DESIGN.md section 2): a data directory holds tables
//! of *kinds*, one trait per kind, and [`Tables`], the catalog that says
//! which name in a database is which kind and routes to it. The query and
//! HTTP layers (`strata-influx`, `strata-server`) see only [`Tables`].
//!
//! Kinds today:
//! - [`TableKind::Series`]: measurements of series (the InfluxDB model),
//!   served by the series engine through `strata_series::SeriesStore`;
//! - [`TableKind::EventStream`]: event streams (the ChronicleDB model),
//!   served by the event store through [`streams::StreamTables`].
//!
//! [`catalog::TableCatalog`] implements [`Tables`] for `strata serve` (the
//! series engine and the event streams of a data directory); any series
//! store alone is a catalog of series only.
//!
//! To add a table kind (transactional tables, key-value tables): a variant
//! of [`TableKind`], the kind's trait (in the crate that owns its model, or
//! here when only the facade implements it), an accessor on [`Tables`]
//! (like [`Tables::stream_tables`]) returning `Option<&dyn KindTrait>` (default `None`), and the catalog's
//! `kind_of`/`tables`/`write`/`drop_table` routing to it.

pub mod catalog;
pub mod streams;

use strata_series::{EngineError, Point, SeriesStore, WriteOutcome};

use streams::StreamTables;

/// What kind of table a name in a database is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TableKind {
    Series,
    EventStream,
}

impl TableKind {
    pub fn name(self) -> &'static str {
        match self {
            TableKind::Series => "series",
            TableKind::EventStream => "event stream",
        }
    }
}

/// The catalog of a data directory's tables, by kind.
pub trait Tables: Send + Sync {
    /// The series kind.
    fn series_store(&self) -> &dyn SeriesStore;

    /// The event-stream kind, if this catalog has one.
    fn stream_tables(&self) -> Option<&dyn StreamTables> {
        None
    }

    /// The kind of table `name` is in `db`, `None` if there is none (a
    /// write then creates series).
    fn kind_of(&self, db: &str, name: &str) -> Option<TableKind>;

    /// Database names, sorted.
    fn list_databases(&self) -> Vec<String> {
        self.series_store().databases()
    }

    /// Creates a database (no error if it exists).
    fn add_database(&self, name: &str) -> Result<(), EngineError> {
        self.series_store().create_database(name)
    }

    /// Drops a database with every table in it; a name that does not exist
    /// is no error (InfluxDB 1.x's `DROP DATABASE`).
    fn remove_database(&self, name: &str) -> Result<(), EngineError> {
        self.series_store().drop_database(name)
    }

    /// Every table of `db` with its kind, sorted by name.
    fn tables(&self, db: &str) -> Result<Vec<(String, TableKind)>, EngineError>;

    /// One write request: each point goes to the table its measurement
    /// names (series when there is none); see the catalog for atomicity.
    fn write_request(&self, db: &str, points: &[Point]) -> Result<WriteOutcome, EngineError>;

    /// Drops a table of any kind with its data.
    fn drop_table(&self, db: &str, name: &str) -> Result<(), EngineError>;
}

/// Any series store alone is a catalog of series only (the reference
/// model in tests, an embedded series engine).
impl<S: SeriesStore> Tables for S {
    fn series_store(&self) -> &dyn SeriesStore {
        self
    }

    fn kind_of(&self, db: &str, name: &str) -> Option<TableKind> {
        let known = self.measurements(db).ok()?.iter().any(|m| m == name);
        known.then_some(TableKind::Series)
    }

    fn tables(&self, db: &str) -> Result<Vec<(String, TableKind)>, EngineError> {
        Ok(self.measurements(db)?.into_iter().map(|m| (m, TableKind::Series)).collect())
    }

    fn write_request(&self, db: &str, points: &[Point]) -> Result<WriteOutcome, EngineError> {
        self.write(db, points)
    }

    fn drop_table(&self, db: &str, name: &str) -> Result<(), EngineError> {
        self.drop_measurement(db, name)
    }
}
