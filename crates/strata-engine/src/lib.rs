//! The engine facade (DESIGN.md section 2): `Db::open(config)` lays out the
//! data directory, opens the PMem pool and the configured commit protocol,
//! recovers the series engine and the event streams ([`streams`]), and runs
//! background checkpoints.

#![forbid(unsafe_code)]

pub mod config;
pub mod db;
pub mod pool;
pub mod protocols;
pub mod streams;

pub use config::{Config, ConfigError, Protocol};
pub use db::{Db, DbError};
pub use protocols::Survives;
