//! The engine facade (DESIGN.md section 2): `Db::open(config)` lays out the
//! data directory, resolves `auto` to a commit protocol by the medium it
//! finds ([`medium`]), opens the PMem pool and the commit protocol,
//! recovers the series engine and the event streams ([`streams`]), serves
//! them as tables of kinds through one catalog ([`tables`]), and runs
//! background checkpoints and retention expiry ([`retention`]).

#![forbid(unsafe_code)]

pub mod backup;
pub mod config;
pub mod db;
pub mod medium;
pub mod pool;
pub mod protocols;
pub mod retention;
pub mod streams;
pub mod tables;

pub use config::{Config, ConfigError, Protocol, ProtocolChoice};
pub use db::{Db, DbError};
pub use protocols::{Durability, Survives};
pub use tables::catalog::TableCatalog;
pub use tables::{TableKind, Tables};
