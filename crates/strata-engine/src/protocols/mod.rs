//! The series commit-protocol registry: one [`ProtocolFactory`] per
//! configurable protocol (DESIGN.md section 5), each in its own module. A
//! factory opens its log device for `Db::open` (handing the series engine a
//! `strata_series::ProtocolOpener`), says what an acknowledged write
//! survives and on which medium ([`Durability`] puts both together for
//! `strata serve`'s startup log), and, when the data directory switches to another protocol,
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

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use strata_media::fs::FileSystem;
use strata_pmem::Region;
use strata_series::manifest::Manifest;
use strata_series::ProtocolOpener;

use crate::config::{AutoProtocol, Config, Protocol};
use crate::db::DbError;
use crate::medium::Mount;

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
            strata_pmem::PmemMode::Volatile => Survives::Nothing,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Survives::Nothing => {
                "nothing (no log: acknowledged writes since the last checkpoint are lost on any crash)"
            }
            Survives::ProcessCrash => "a process crash, not a power loss",
            Survives::PowerLoss => "a process crash and a power loss",
        }
    }
}

/// How a region in `mode` persists, for the startup log.
pub fn pmem_medium(mode: strata_pmem::PmemMode) -> &'static str {
    match mode {
        strata_pmem::PmemMode::Dax => "real PMem (a DAX file mapped with MAP_SYNC): flushed and fenced",
        strata_pmem::PmemMode::Emulated => {
            "emulated PMem (a mapped file, flushed and fenced; on the media only from the next msync)"
        }
        strata_pmem::PmemMode::Msync => "a mapped file persisted by msync",
        strata_pmem::PmemMode::Sim => "the crash simulator (tests only)",
        strata_pmem::PmemMode::Volatile => "DRAM (a mapped file never flushed: survives nothing)",
    }
}

/// The medium of a log in a file at `path` mapped in PMem `mode` (`what`
/// names the log and the file; `None`: the mode is not known), for the
/// startup log.
pub fn pmem_file_medium(what: &str, path: std::path::PathBuf, mode: Option<strata_pmem::PmemMode>) -> Medium {
    let how = mode.map_or("an unknown PMem mode", pmem_medium);
    Medium { what: format!("{what} {}, {how}", path.display()), path: Some(path) }
}

/// Where a protocol's log lives and how it persists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Medium {
    /// `the DecLog file ./strata-data/declog-ssd.log, a mapped file persisted by msync`.
    pub what: String,
    /// The log's file or directory (`None`: no log).
    pub path: Option<PathBuf>,
}

/// What `strata serve` states at startup ([`crate::Db::durability`]): the
/// commit protocol (and why, when `auto` picked it), the medium of its log
/// with the file system holding it, and what an acknowledged write survives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Durability {
    pub protocol: Protocol,
    pub auto: Option<AutoProtocol>,
    pub medium: Medium,
    /// The mount holding the log, when known.
    pub mount: Option<Mount>,
    pub survives: Survives,
}

impl Durability {
    /// `survives` is the factory's; on a file system in memory (tmpfs)
    /// nothing survives a power loss, whatever the protocol does.
    pub fn new(
        protocol: Protocol,
        auto: Option<AutoProtocol>,
        medium: Medium,
        mount: Option<Mount>,
        survives: Survives,
    ) -> Durability {
        let volatile = mount.as_ref().is_some_and(Mount::is_volatile);
        let survives =
            if volatile && survives == Survives::PowerLoss { Survives::ProcessCrash } else { survives };
        Durability { protocol, auto, medium, mount, survives }
    }
}

/// Three lines: the protocol, its medium, what an acknowledged write survives.
impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.auto {
            Some(a) => writeln!(f, "commit protocol {} (auto: {})", self.protocol.name(), a.reason)?,
            None => writeln!(f, "commit protocol {} (configured)", self.protocol.name())?,
        }
        write!(f, "medium: {}", self.medium.what)?;
        if let Some(m) = &self.mount {
            write!(f, ", on {}", m.describe())?;
            if m.is_volatile() {
                write!(f, " (in memory: gone at a power loss)")?;
            }
        }
        write!(f, "\nan acknowledged write survives {}", self.survives.describe())
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

    /// Where the log lives and how it persists under `config`.
    fn medium(&self, config: &Config) -> Medium;

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

    fn mount(fs_type: &str, options: &str) -> Mount {
        Mount {
            mount_point: PathBuf::from("/m"),
            fs_type: fs_type.into(),
            source: "src".into(),
            options: options.split(',').map(str::to_string).collect(),
        }
    }

    #[test]
    fn the_startup_statement_names_protocol_medium_and_what_survives() {
        let config = Config { data_dir: PathBuf::from("/srv/strata"), ..Config::default() };
        let durability = |p: Protocol, mount: Option<Mount>| {
            let f = factory(p);
            Durability::new(p, None, f.medium(&config), mount, f.survives(&config))
        };
        let ssd = durability(Protocol::DeclogSsd, Some(mount("ext4", "rw")));
        assert_eq!(ssd.survives, Survives::PowerLoss);
        assert_eq!(ssd.medium.path, Some(PathBuf::from("/srv/strata/declog-ssd.log")));
        let text = ssd.to_string();
        assert_eq!(text.lines().count(), 3, "{text}");
        for part in [
            "commit protocol declog-ssd (configured)",
            "declog-ssd.log",
            "msync",
            "on ext4 at /m",
            "survives a process crash and a power loss",
        ] {
            assert!(text.contains(part), "{part:?} in {text}");
        }
        let on_tmpfs = durability(Protocol::SerialSsd, Some(mount("tmpfs", "rw")));
        assert_eq!(on_tmpfs.survives, Survives::ProcessCrash, "fdatasync on tmpfs reaches no media");
        assert!(on_tmpfs.to_string().contains("gone at a power loss"), "{on_tmpfs}");
        let emulated = durability(Protocol::DeclogPmem, Some(mount("ext4", "rw")));
        assert_eq!(emulated.survives, Survives::ProcessCrash);
        assert!(emulated.to_string().contains("emulated PMem"), "{emulated}");
        let none = durability(Protocol::None, None);
        assert_eq!((none.medium.path.as_ref(), none.survives), (None, Survives::Nothing));
        let auto =
            crate::config::resolve_auto(strata_pmem::PmemMode::Emulated, Some("/srv/strata is on ext4 at /"));
        let picked =
            Durability::new(auto.protocol, Some(auto.clone()), ssd.medium.clone(), None, Survives::PowerLoss);
        assert!(
            picked.to_string().starts_with(&format!("commit protocol declog-ssd (auto: {})", auto.reason)),
            "{picked}"
        );
    }
}
