//! The series commit-protocol registry: one [`ProtocolFactory`] per
//! configurable protocol (DESIGN.md section 5), each in its own module. A
//! factory opens its log device for `Db::open` (handing the series engine a
//! `strata_series::ProtocolOpener`), says what an acknowledged write
//! survives, and, when the data directory switches to another protocol,
//! checks that its old log holds nothing a checkpoint does not cover and
//! erases it.
//!
//! To add a protocol: a `Protocol` variant with its name (`crate::config`),
//! a module here implementing [`ProtocolFactory`] (with the series side in
//! `strata_series::protocol`), and one line in [`REGISTRY`].

mod declog;
mod none;
mod serial_pmem;
mod serial_ssd;

use std::sync::Arc;

use strata_media::fs::FileSystem;
use strata_pmem::Region;
use strata_series::manifest::Manifest;
use strata_series::ProtocolOpener;

use crate::config::{Config, Protocol};
use crate::db::DbError;

/// What an acknowledged write survives under a protocol on its medium.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Survives {
    /// Nothing: the protocol does not log (the upper bound).
    Nothing,
    /// A crash of the process, not a power loss (PMem emulated on a mapped
    /// file: the data reaches the media only at msync points).
    ProcessCrash,
    /// A power loss (fsync/fdatasync on SSD, msync, or flush+fence on DAX).
    PowerLoss,
}

impl Survives {
    /// What a write flushed and fenced on a region of `mode` survives.
    pub fn on_pmem(mode: strata_pmem::PmemMode) -> Survives {
        match mode {
            strata_pmem::PmemMode::Dax | strata_pmem::PmemMode::Msync => Survives::PowerLoss,
            strata_pmem::PmemMode::Emulated | strata_pmem::PmemMode::Sim => Survives::ProcessCrash,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Survives::Nothing => {
                "nothing (no log: acknowledged writes since the last checkpoint are lost on any crash)"
            }
            Survives::ProcessCrash => "a process crash, not a power loss (emulated PMem on a mapped file)",
            Survives::PowerLoss => "a process crash and a power loss",
        }
    }
}

/// A log device opened for the series engine.
pub struct OpenedLog {
    pub opener: Box<dyn ProtocolOpener>,
    /// The PMem region the log lives in, if any (for persist counters).
    pub region: Option<Arc<Region>>,
}

/// One configurable series commit protocol.
pub trait ProtocolFactory: Sync {
    fn protocol(&self) -> Protocol;

    /// Opens (formatting if new) the protocol's log device in the data directory.
    fn open(&self, config: &Config, fs: &Arc<dyn FileSystem>) -> Result<OpenedLog, DbError>;

    /// The checkpoint size trigger for this protocol's log.
    fn checkpoint_log_bytes(&self, config: &Config) -> u64 {
        config.storage.checkpoint_log_bytes
    }

    /// What an acknowledged write survives under `config`.
    fn survives(&self, config: &Config) -> Survives;

    /// When the data directory switches to another protocol: `Ok(n)` with
    /// the transactions this protocol's log holds that `manifest` does not
    /// cover (then the switch is refused), else erases what the log holds
    /// (so switching back never replays it) and returns `Ok(0)`.
    fn drain_for_switch(
        &self,
        config: &Config,
        fs: &Arc<dyn FileSystem>,
        manifest: Option<&Manifest>,
    ) -> Result<usize, DbError>;
}

/// Every protocol, by its `Protocol` value.
static REGISTRY: [&dyn ProtocolFactory; 5] = [
    &none::NoneFactory,
    &serial_pmem::SerialPmemFactory,
    &serial_ssd::SerialSsdFactory,
    &declog::DeclogFactory::PMEM,
    &declog::DeclogFactory::SSD,
];

/// The factory of `protocol`.
pub fn factory(protocol: Protocol) -> &'static dyn ProtocolFactory {
    *REGISTRY
        .iter()
        .find(|f| f.protocol() == protocol)
        .expect("every Protocol has a line in protocols::REGISTRY")
}

/// Every registered factory.
pub fn all() -> impl Iterator<Item = &'static dyn ProtocolFactory> {
    REGISTRY.iter().copied()
}

/// The refusal when `other`'s log holds uncovered transactions.
pub(crate) fn switch_refused(config: &Config, other: Protocol, pending: usize, to: Protocol) -> DbError {
    let old = other.name();
    DbError::UncoveredLog {
        data_dir: config.data_dir.display().to_string(),
        protocol: old,
        pending,
        to: to.name(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protocol_has_exactly_one_factory() {
        for p in Protocol::ALL {
            assert_eq!(factory(p).protocol(), p);
            assert_eq!(all().filter(|f| f.protocol() == p).count(), 1, "{}", p.name());
        }
        assert_eq!(all().count(), Protocol::ALL.len());
    }

    #[test]
    fn what_an_ack_survives_follows_protocol_and_medium() {
        let mut config = Config::default();
        let survives = |config: &Config, p| factory(p).survives(config);
        config.pmem.mode = "emulated".into();
        assert_eq!(survives(&config, Protocol::None), Survives::Nothing);
        assert_eq!(survives(&config, Protocol::SerialSsd), Survives::PowerLoss);
        assert_eq!(survives(&config, Protocol::DeclogSsd), Survives::PowerLoss, "msync-persisted file");
        assert_eq!(survives(&config, Protocol::DeclogPmem), Survives::ProcessCrash);
        assert_eq!(survives(&config, Protocol::SerialPmem), Survives::ProcessCrash);
        config.pmem.mode = "dax".into();
        assert_eq!(survives(&config, Protocol::DeclogPmem), Survives::PowerLoss);
        assert_eq!(survives(&config, Protocol::SerialPmem), Survives::PowerLoss);
    }
}
