//! The engine facade (DESIGN.md section 2): `Db::open(config)` lays out the
//! data directory, opens the PMem pool and the configured commit protocol,
//! recovers the series engine and the event streams ([`streams`]), serves
//! them as tables of kinds through one catalog ([`tables`]), and runs
//! background checkpoints.

#![forbid(unsafe_code)]

pub mod config;
pub mod db;
pub mod pool;
pub mod protocols;
pub mod streams;
pub mod tables;

pub use config::{Config, ConfigError, Protocol};
pub use db::{Db, DbError};
pub use protocols::Survives;
pub use tables::catalog::TableCatalog;
pub use tables::{TableKind, Tables};
