//! Configuration: a TOML file (every key optional) plus command-line
//! overrides. With no file at all, everything lives in `./strata-data` with
//! an emulated PMem pool file inside it, and the server listens on
//! 127.0.0.1:8086. `docs/configuration.md` lists every key.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Deserialize;
use strata_pmem::PmemMode;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read configuration file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("invalid configuration file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid configuration: {0}")]
    Invalid(String),
    #[error("invalid configuration: {0}")]
    UnknownProtocol(#[from] UnknownProtocol),
    #[error("invalid configuration: {0}")]
    UnknownPmemMode(#[from] strata_pmem::UnknownPmemMode),
}

/// A commit protocol name that is none of [`Protocol::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("unknown commit protocol `{0}` (expected none, serial-pmem, serial-ssd, declog-pmem or declog-ssd)")]
pub struct UnknownProtocol(pub String);

/// The commit protocol of the series engine.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Not durable: only checkpointed data survives a crash.
    None,
    /// Serial logging on the PMem pool (the paper's Beringei-NVM baseline).
    SerialPmem,
    /// Serial logging to a file with group commit.
    SerialSsd,
    /// DecLog (declog.txt section 4) on a PMem file (emulated by default; the default protocol).
    DeclogPmem,
    /// DecLog's streams in a file on the SSD, persisted by msync (the
    /// paper's DecLog-SSD).
    DeclogSsd,
}

impl Protocol {
    pub const ALL: [Protocol; 5] = [
        Protocol::None,
        Protocol::SerialPmem,
        Protocol::SerialSsd,
        Protocol::DeclogPmem,
        Protocol::DeclogSsd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Protocol::None => "none",
            Protocol::SerialPmem => "serial-pmem",
            Protocol::SerialSsd => "serial-ssd",
            Protocol::DeclogPmem => "declog-pmem",
            Protocol::DeclogSsd => "declog-ssd",
        }
    }

    pub fn is_declog(self) -> bool {
        matches!(self, Protocol::DeclogPmem | Protocol::DeclogSsd)
    }
}

impl FromStr for Protocol {
    type Err = UnknownProtocol;
    fn from_str(s: &str) -> Result<Self, UnknownProtocol> {
        Protocol::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| UnknownProtocol(s.to_string()))
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSection {
    pub bind: String,
    pub auth_token: Option<String>,
    pub max_body_bytes: usize,
    pub max_line_bytes: usize,
    pub max_fields_per_line: usize,
}

impl Default for ServerSection {
    fn default() -> Self {
        ServerSection {
            bind: "127.0.0.1:8086".into(),
            auth_token: None,
            max_body_bytes: 25_000_000,
            // Room for InfluxDB's 64 KiB string field values (docs/http-api.md).
            max_line_bytes: 1 << 20,
            max_fields_per_line: 1000,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageSection {
    /// `declog-pmem` (default), `declog-ssd`, `serial-pmem`, `serial-ssd` or `none`.
    pub protocol: String,
    /// Created at startup if missing ("" for none).
    pub default_database: String,
    /// 0: unlimited.
    pub max_series_per_database: u64,
    pub checkpoint_log_bytes: u64,
    /// 0: checkpoint by log size only.
    pub checkpoint_interval_s: u64,
}

impl Default for StorageSection {
    fn default() -> Self {
        StorageSection {
            protocol: "declog-pmem".into(),
            default_database: "strata".into(),
            max_series_per_database: 1_000_000,
            checkpoint_log_bytes: 64 << 20,
            checkpoint_interval_s: 300,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PmemSection {
    /// `emulated`, `dax`, `msync` (or `sim` for tests).
    pub mode: String,
    /// Relative paths are inside the data directory.
    pub pool_file: PathBuf,
    pub pool_bytes: u64,
    /// Capacity of the log ring inside the pool.
    pub log_bytes: u64,
    pub flush_delay_ns_per_line: u64,
    pub fence_delay_ns: u64,
}

impl Default for PmemSection {
    fn default() -> Self {
        PmemSection {
            mode: "emulated".into(),
            pool_file: PathBuf::from("pmem.pool"),
            pool_bytes: 256 << 20,
            log_bytes: 192 << 20,
            flush_delay_ns_per_line: 0,
            fence_delay_ns: 0,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SsdLogSection {
    pub max_batch_bytes: u64,
    pub max_wait_us: u64,
}

impl Default for SsdLogSection {
    fn default() -> Self {
        SsdLogSection { max_batch_bytes: 4 << 20, max_wait_us: 0 }
    }
}

/// DecLog's parameters (declog.txt 4.2-4.5, 5.1) and the switches of its
/// components (Fig. 12(a)). Stream geometry, compression and ordering are
/// fixed when the DecLog file is created; the rest apply at every open.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeclogSection {
    /// `declog-pmem`: relative paths are inside the data directory.
    pub pmem_file: PathBuf,
    /// `declog-ssd`: the streams in an msync-persisted file.
    pub ssd_file: PathBuf,
    /// Size of the DecLog file (streams share it equally).
    pub file_bytes: u64,
    /// m: logging threads, one stream each (the paper uses 4; 2 cores here).
    pub logging_threads: usize,
    /// n: log queues per logging thread.
    pub queues_per_thread: usize,
    /// l: entries per log queue.
    pub queue_len: usize,
    /// Relaxed ordering (4.2); false = strict ordering (a fence per entry).
    pub relaxed_ordering: bool,
    /// Data-driven LSNs (4.1); false = one central LSN counter.
    pub data_driven_lsn: bool,
    /// Compression (4.4.1) and 256-byte alignment (4.4.2); false = raw
    /// entries packed at 8 bytes.
    pub compression_and_alignment: bool,
    /// Checkpoints (4.5); false = never (the file must hold the whole run).
    pub checkpoints: bool,
    /// Threads replaying LSN-0 entries at recovery (4.6).
    pub replay_threads: usize,
}

impl Default for DeclogSection {
    fn default() -> Self {
        DeclogSection {
            pmem_file: PathBuf::from("declog.pmem"),
            ssd_file: PathBuf::from("declog-ssd.log"),
            file_bytes: 256 << 20,
            logging_threads: strata_declog::DEFAULT_THREADS,
            queues_per_thread: strata_declog::DEFAULT_QUEUES_PER_THREAD,
            queue_len: strata_declog::DEFAULT_QUEUE_LEN,
            relaxed_ordering: true,
            data_driven_lsn: true,
            compression_and_alignment: true,
            checkpoints: true,
            replay_threads: 2,
        }
    }
}

/// Event streams (chronicledb-pmem.txt): where new streams live and how
/// large their structures are. A stream keeps the placement and capacities
/// it was created with (its catalog file records them).
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamsSection {
    /// `auto` (default): `pmem` when the commit protocol logs to PMem
    /// (`serial-pmem`, `declog-pmem`), else `ssd`. `pmem`: PMem right flank
    /// (batch flushing), aggregates inline, index nodes on SSD, PMem
    /// translation array, PMem indexed out-of-order queue, in a mapped file
    /// per stream opened in `pmem.mode`. `ssd`: the same tree with the file
    /// persisted by msync, and a flash indexed queue.
    pub placement: String,
    /// k of the PMem flank's batch flushing (section 4.1); a write request
    /// persists its partial batch before it is acknowledged either way.
    pub flank_batch_events: u32,
    /// Most leaves (8 KiB of events each) per stream.
    pub max_leaf_nodes: u64,
    /// Most index nodes per stream.
    pub max_index_nodes: u64,
    /// Event bytes the out-of-order queue holds before it is merged.
    pub queue_capacity_bytes: u64,
}

impl Default for StreamsSection {
    fn default() -> Self {
        StreamsSection {
            placement: "auto".into(),
            flank_batch_events: 25,
            max_leaf_nodes: 1 << 18,
            max_index_nodes: 1 << 14,
            queue_capacity_bytes: 4 << 20,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub data_dir: PathBuf,
    pub server: ServerSection,
    pub storage: StorageSection,
    pub pmem: PmemSection,
    pub ssd_log: SsdLogSection,
    pub declog: DeclogSection,
    pub streams: StreamsSection,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from("./strata-data"),
            server: ServerSection::default(),
            storage: StorageSection::default(),
            pmem: PmemSection::default(),
            ssd_log: SsdLogSection::default(),
            declog: DeclogSection::default(),
            streams: StreamsSection::default(),
        }
    }
}

impl Config {
    /// Reads a TOML file; missing keys take their defaults, unknown keys are errors.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
        Config::from_toml(&text).map_err(|e| {
            let message = match e {
                ConfigError::Invalid(message) => message,
                ConfigError::UnknownProtocol(e) => e.to_string(),
                ConfigError::UnknownPmemMode(e) => e.to_string(),
                other => return other,
            };
            ConfigError::Parse { path: path.to_path_buf(), message }
        })
    }

    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let c: Config = toml::from_str(text).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        c.validate()?;
        Ok(c)
    }

    /// Checks values that TOML types cannot.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.protocol()?;
        self.pmem_mode()?;
        self.bind_addr()?;
        let needed = crate::pool::POOL_HEADER_BYTES
            + strata_log::pmem_log::PmemLog::footprint_bytes(self.pmem.log_bytes);
        if needed > self.pmem.pool_bytes {
            return Err(ConfigError::Invalid(format!(
                "pmem.log_bytes ({}) does not fit in pmem.pool_bytes ({}): the ring with its superblock and the \
                 {}-byte pool header need {needed} bytes",
                self.pmem.log_bytes,
                self.pmem.pool_bytes,
                crate::pool::POOL_HEADER_BYTES
            )));
        }
        if self.pmem.log_bytes < 1 << 20 {
            return Err(ConfigError::Invalid("pmem.log_bytes must be at least 1 MiB".into()));
        }
        if self.declog.file_bytes < 4 << 20 {
            return Err(ConfigError::Invalid("declog.file_bytes must be at least 4 MiB".into()));
        }
        self.declog_config().validate().map_err(|e| ConfigError::Invalid(format!("declog: {e}")))?;
        if self.declog.replay_threads == 0 {
            return Err(ConfigError::Invalid("declog.replay_threads must be at least 1".into()));
        }
        self.stream_placement()?;
        let st = &self.streams;
        if st.flank_batch_events == 0 || st.max_leaf_nodes == 0 || st.max_index_nodes == 0 {
            return Err(ConfigError::Invalid(
                "streams.flank_batch_events, max_leaf_nodes and max_index_nodes must be at least 1".into(),
            ));
        }
        if st.queue_capacity_bytes < 64 << 10 {
            return Err(ConfigError::Invalid("streams.queue_capacity_bytes must be at least 64 KiB".into()));
        }
        if self.server.max_body_bytes == 0
            || self.server.max_line_bytes == 0
            || self.server.max_fields_per_line == 0
        {
            return Err(ConfigError::Invalid("server limits must be positive".into()));
        }
        Ok(())
    }

    pub fn protocol(&self) -> Result<Protocol, ConfigError> {
        Ok(self.storage.protocol.parse()?)
    }

    pub fn pmem_mode(&self) -> Result<PmemMode, ConfigError> {
        Ok(self.pmem.mode.parse()?)
    }

    pub fn bind_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.server
            .bind
            .parse()
            .map_err(|e| ConfigError::Invalid(format!("server.bind `{}`: {e}", self.server.bind)))
    }

    /// DecLog's configuration (flush mode: logging threads).
    pub fn declog_config(&self) -> strata_declog::DeclogConfig {
        let d = &self.declog;
        strata_declog::DeclogConfig {
            threads: d.logging_threads,
            queues_per_thread: d.queues_per_thread,
            queue_len: d.queue_len,
            align_bytes: if d.compression_and_alignment { strata_declog::DEFAULT_ALIGN_BYTES } else { 8 },
            compression: d.compression_and_alignment,
            strict_ordering: !d.relaxed_ordering,
            ..Default::default()
        }
    }

    /// The DecLog file of a DecLog protocol.
    pub fn declog_path(&self, protocol: Protocol) -> PathBuf {
        match protocol {
            Protocol::DeclogSsd => self.data_dir.join(&self.declog.ssd_file),
            _ => self.data_dir.join(&self.declog.pmem_file),
        }
    }

    /// The placement of new streams, `auto` resolved against the protocol.
    pub fn stream_placement(&self) -> Result<crate::streams::Placement, ConfigError> {
        use crate::streams::Placement;
        match self.streams.placement.as_str() {
            "auto" => Ok(match self.protocol()? {
                Protocol::SerialPmem | Protocol::DeclogPmem => Placement::Pmem,
                _ => Placement::Ssd,
            }),
            "pmem" => Ok(Placement::Pmem),
            "ssd" => Ok(Placement::Ssd),
            other => Err(ConfigError::Invalid(format!(
                "unknown streams.placement `{other}` (expected auto, pmem or ssd)"
            ))),
        }
    }

    /// `<data_dir>/streams`: one directory per database, one per stream.
    pub fn streams_dir(&self) -> PathBuf {
        self.data_dir.join("streams")
    }

    pub fn pool_path(&self) -> PathBuf {
        self.data_dir.join(&self.pmem.pool_file)
    }

    pub fn series_dir(&self) -> PathBuf {
        self.data_dir.join("series")
    }

    pub fn wal_dir(&self) -> PathBuf {
        self.data_dir.join("wal")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_is_the_default_configuration() {
        let c = Config::from_toml("").unwrap();
        assert_eq!(c.data_dir, PathBuf::from("./strata-data"));
        assert_eq!(c.protocol().unwrap(), Protocol::DeclogPmem);
        assert_eq!(c.declog_path(Protocol::DeclogPmem), PathBuf::from("./strata-data/declog.pmem"));
        assert_eq!(c.bind_addr().unwrap().to_string(), "127.0.0.1:8086");
        assert_eq!(c.pool_path(), PathBuf::from("./strata-data/pmem.pool"));
    }

    #[test]
    fn keys_override_and_mistakes_are_named() {
        let c = Config::from_toml("data_dir = \"/tmp/x\"\n[storage]\nprotocol = \"serial-ssd\"\n").unwrap();
        assert_eq!(c.protocol().unwrap(), Protocol::SerialSsd);
        assert_eq!(c.wal_dir(), PathBuf::from("/tmp/x/wal"));
        let e = Config::from_toml("[storage]\nprotocol = \"paxos\"\n").unwrap_err().to_string();
        assert!(e.contains("unknown commit protocol `paxos`"), "{e}");
        let e = Config::from_toml("[storage]\nprotcol = \"none\"\n").unwrap_err().to_string();
        assert!(e.contains("protcol"), "unknown keys are rejected by name: {e}");
        let e = Config::from_toml("[pmem]\npool_bytes = 1048576\n").unwrap_err().to_string();
        assert!(e.contains("does not fit"), "{e}");
        // Exactly the footprint fits; one byte less does not.
        let log = 1u64 << 20;
        let exact = crate::pool::POOL_HEADER_BYTES + strata_log::pmem_log::PmemLog::footprint_bytes(log);
        let toml = |pool: u64| format!("[pmem]\nlog_bytes = {log}\npool_bytes = {pool}\n");
        assert!(Config::from_toml(&toml(exact)).is_ok());
        assert!(Config::from_toml(&toml(exact - 1)).is_err());
    }
}
