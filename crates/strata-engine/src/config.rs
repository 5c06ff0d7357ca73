//! Configuration: a TOML file (every key optional) plus command-line
//! overrides. With no file at all, everything lives in `./strata-data`,
//! the server listens on 127.0.0.1:8086, and the commit protocol is `auto`:
//! `declog-pmem` when the PMem files' directories are on real PMem (a DAX
//! mount, or `pmem.mode = "dax"`), else `declog-ssd`, so that an
//! acknowledged write survives a power loss by default (emulated PMem does
//! not; it stays an explicit choice). `auto` is resolved once, when the
//! data directory is opened ([`Config::resolve`]). `docs/configuration.md`
//! lists every key.

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

/// A commit protocol name that is none of [`Protocol::ALL`] (nor `auto`
/// where a [`ProtocolChoice`] is read).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error(
    "unknown commit protocol `{0}` (expected none, serial-pmem, serial-ssd, declog-pmem or declog-ssd; \
     storage.protocol and --protocol also take auto)"
)]
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
    /// DecLog (declog.txt section 4) on a PMem file, in `pmem.mode`
    /// (`auto` picks it on real PMem; emulated PMem only when named).
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

/// `storage.protocol`: one protocol, or `auto` (the default), which
/// [`Config::resolve`] turns into one when the data directory is opened.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ProtocolChoice {
    Auto,
    Fixed(Protocol),
}

impl FromStr for ProtocolChoice {
    type Err = UnknownProtocol;
    fn from_str(s: &str) -> Result<Self, UnknownProtocol> {
        match s {
            "auto" => Ok(ProtocolChoice::Auto),
            other => other.parse().map(ProtocolChoice::Fixed),
        }
    }
}

/// What `auto` resolved to, and why (for the startup log).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoProtocol {
    pub protocol: Protocol,
    /// The PMem mode to open with: `dax` on a DAX mount, else as configured.
    pub pmem_mode: PmemMode,
    pub reason: String,
}

/// `auto` for the configured `pmem_mode`, given the first of the PMem
/// files' directories that is not on a DAX mount (`None`: all are), as a
/// description (`/srv/strata is on ext4 at /`). Real PMem (DAX) gets
/// `declog-pmem` in `dax` mode: a flushed and fenced entry survives a
/// power loss. Anything else gets
/// `declog-ssd`, DecLog in an msync-persisted file, which survives one too;
/// `declog-pmem` on emulated PMem (a mapped file: it survives a process
/// crash, and a power loss only from the next msync) is never picked.
pub fn resolve_auto(pmem_mode: PmemMode, not_on_dax: Option<&str>) -> AutoProtocol {
    match (pmem_mode, not_on_dax) {
        (PmemMode::Dax, _) => AutoProtocol {
            protocol: Protocol::DeclogPmem,
            pmem_mode: PmemMode::Dax,
            reason: "pmem.mode = dax: real PMem".into(),
        },
        (PmemMode::Emulated, None) => AutoProtocol {
            protocol: Protocol::DeclogPmem,
            pmem_mode: PmemMode::Dax,
            reason: "the PMem files' directories are on a DAX mount: real PMem, mapped in dax mode".into(),
        },
        (mode, Some(dir)) => AutoProtocol {
            protocol: Protocol::DeclogSsd,
            pmem_mode: mode,
            reason: format!(
                "{dir}, not a DAX mount: no real PMem, so DecLog in an msync-persisted file; \
                 --protocol declog-pmem runs it on emulated PMem instead"
            ),
        },
        (mode, None) => AutoProtocol {
            protocol: Protocol::DeclogSsd,
            pmem_mode: mode,
            reason: format!(
                "pmem.mode = {}: not a PMem backend auto picks, so DecLog in an msync-persisted file",
                mode.name()
            ),
        },
    }
}

/// A configuration with `auto` resolved ([`Config::resolve`]).
#[derive(Clone, Debug)]
pub struct Resolved {
    /// `storage.protocol` names one protocol, `pmem.mode` the mode to open with.
    pub config: Config,
    /// `Some` when `storage.protocol` was `auto`.
    pub auto: Option<AutoProtocol>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSection {
    pub bind: String,
    pub auth_token: Option<String>,
    pub max_body_bytes: usize,
    pub max_line_bytes: usize,
    pub max_fields_per_line: usize,
    /// Milliseconds a connection may take to send a request head, and may
    /// stay idle between requests (docs/http-api.md, "Connections").
    pub header_read_timeout_ms: u64,
    /// Milliseconds to wait for a request body's next bytes.
    pub body_read_timeout_ms: u64,
    /// Slowest average body rate after `body_read_timeout_ms`.
    pub body_min_bytes_per_sec: u64,
    /// Most open connections (the longest-idle one is closed for a new one).
    pub max_connections: usize,
    /// InfluxDB's `max-row-limit`: most rows one `/query` returns (0: no limit).
    pub max_row_limit: usize,
    /// Per-query memory bound in bytes (0: none).
    pub max_query_memory_bytes: u64,
    /// HTTPS on every connection (InfluxDB's `https-enabled`), with the two
    /// PEM files below (relative paths: to the working directory).
    pub https_enabled: bool,
    pub https_certificate: String,
    pub https_private_key: String,
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
            header_read_timeout_ms: 30_000,
            body_read_timeout_ms: 30_000,
            body_min_bytes_per_sec: 1024,
            max_connections: 512,
            max_row_limit: 0,
            max_query_memory_bytes: 4 << 30,
            https_enabled: false,
            https_certificate: String::new(),
            https_private_key: String::new(),
        }
    }
}

/// The PostgreSQL-protocol listener of `strata serve` (SQL, docs/sql.md).
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SqlSection {
    /// Serve SQL at all (default true).
    pub enabled: bool,
    /// Listen address (default 127.0.0.1:5432). Authentication uses
    /// `server.auth_token` as the password.
    pub bind: String,
}

impl Default for SqlSection {
    fn default() -> Self {
        SqlSection { enabled: true, bind: "127.0.0.1:5432".into() }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageSection {
    /// `auto` (default: `declog-pmem` on real PMem, else `declog-ssd`),
    /// `declog-pmem`, `declog-ssd`, `serial-pmem`, `serial-ssd` or `none`.
    pub protocol: String,
    /// Created at startup if missing ("" for none).
    pub default_database: String,
    /// 0: unlimited.
    pub max_series_per_database: u64,
    pub checkpoint_log_bytes: u64,
    /// 0: checkpoint by log size only.
    pub checkpoint_interval_s: u64,
    /// How often the background task deletes points older than their
    /// database's default retention policy keeps (0: never).
    pub retention_check_interval_s: u64,
    /// A checkpoint that leaves more block files merges the newest ones
    /// (bounds the open files; at least 1).
    pub compact_above_files: usize,
    /// Sealed blocks end at the edges of spans this long (seconds, aligned
    /// to the epoch), so `GROUP BY time` windows of whole spans are answered
    /// from block summaries (0: blocks span any time).
    pub block_span_s: u64,
}

impl Default for StorageSection {
    fn default() -> Self {
        StorageSection {
            protocol: "auto".into(),
            default_database: "strata".into(),
            max_series_per_database: 1_000_000,
            checkpoint_log_bytes: 64 << 20,
            checkpoint_interval_s: 300,
            retention_check_interval_s: 60,
            compact_above_files: strata_series::core::compact::COMPACT_ABOVE_FILES_DEFAULT,
            block_span_s: (strata_series::core::cut::BLOCK_SPAN_NS_DEFAULT / 1_000_000_000) as u64,
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

/// `declog.key_slots` by default: 16,384 a stream (8 MiB a table, 32 MiB
/// for two streams' tables and copies), about 16,000 series at half load.
/// (The library's 1,024 filled up at the default ingest bench's 2,000.)
pub const DEFAULT_DECLOG_KEY_SLOTS: u32 = 16_384;

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
    /// Slots of each stream's key table (4.4.1): series keys a stream
    /// compresses. A key that finds the table full is logged raw (its key
    /// in every entry, no delta-of-delta or XOR state), so size it above the
    /// series count divided by `logging_threads`, with room: linear probing
    /// slows as the table fills. 512 bytes of the DecLog file per slot,
    /// four times over with two streams (each stream's table and its
    /// checkpoint copy).
    pub key_slots: u32,
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
            key_slots: DEFAULT_DECLOG_KEY_SLOTS,
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
    pub sql: SqlSection,
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
            sql: SqlSection::default(),
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

    /// Checks values that TOML types cannot (without looking at the machine:
    /// `auto` is resolved by [`Config::resolve`]).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.protocol_choice()?;
        self.pmem_mode()?;
        self.bind_addr()?;
        self.sql_bind_addr()?;
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
        let key_tables_bytes = self.declog_key_tables_bytes();
        if key_tables_bytes > self.declog.file_bytes / 2 {
            return Err(ConfigError::Invalid(format!(
                "declog.key_slots = {} take {key_tables_bytes} bytes of the DecLog file (512 bytes a slot, \
                 4 tables with 2 logging threads), more than half of declog.file_bytes ({}): lower the \
                 slots or raise the file",
                self.declog.key_slots, self.declog.file_bytes
            )));
        }
        if self.declog.replay_threads == 0 {
            return Err(ConfigError::Invalid("declog.replay_threads must be at least 1".into()));
        }
        self.placement_choice()?;
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

    pub fn protocol_choice(&self) -> Result<ProtocolChoice, ConfigError> {
        Ok(self.storage.protocol.parse()?)
    }

    /// The commit protocol; `auto` is resolved against this machine (see
    /// [`Config::resolve`], which `Db::open` calls once).
    pub fn protocol(&self) -> Result<Protocol, ConfigError> {
        match self.protocol_choice()? {
            ProtocolChoice::Fixed(p) => Ok(p),
            ProtocolChoice::Auto => Ok(self.resolve()?.config.protocol()?),
        }
    }

    /// Directories of the files `declog-pmem` maps in `pmem.mode`: the
    /// pool's, the DecLog PMem file's and the event streams'.
    pub fn pmem_dirs(&self) -> [PathBuf; 3] {
        let dir = |p: PathBuf| p.parent().map_or_else(|| self.data_dir.clone(), Path::to_path_buf);
        [dir(self.pool_path()), dir(self.declog_path(Protocol::DeclogPmem)), self.streams_dir()]
    }

    /// This configuration with `auto` resolved: [`resolve_auto`] with the
    /// mounts of [`Config::pmem_dirs`] read from `/proc/self/mountinfo`.
    /// Other protocols are returned as they are.
    pub fn resolve(&self) -> Result<Resolved, ConfigError> {
        let mode = self.pmem_mode()?;
        if self.protocol_choice()? != ProtocolChoice::Auto {
            return Ok(Resolved { config: self.clone(), auto: None });
        }
        let not_on_dax = self.pmem_dirs().into_iter().find_map(|dir| match crate::medium::mount_of(&dir) {
            Some(m) if m.is_dax() => None,
            Some(m) => Some(format!("{} is on {}", dir.display(), m.describe())),
            None => Some(format!("the mount of {} is unknown", dir.display())),
        });
        let auto = resolve_auto(mode, not_on_dax.as_deref());
        let mut config = self.clone();
        config.storage.protocol = auto.protocol.name().into();
        config.pmem.mode = auto.pmem_mode.name().into();
        Ok(Resolved { config, auto: Some(auto) })
    }

    pub fn pmem_mode(&self) -> Result<PmemMode, ConfigError> {
        match self.pmem.mode.parse()? {
            PmemMode::Volatile => Err(ConfigError::Invalid(
                "pmem.mode `volatile` keeps nothing (flushes and fences do nothing): it is for benchmark baselines, never for a server's data".into(),
            )),
            mode => Ok(mode),
        }
    }

    /// The SQL listener's address, `None` when SQL is off.
    pub fn sql_bind_addr(&self) -> Result<Option<SocketAddr>, ConfigError> {
        if !self.sql.enabled {
            return Ok(None);
        }
        let addr = self
            .sql
            .bind
            .parse()
            .map_err(|e| ConfigError::Invalid(format!("sql.bind `{}`: {e}", self.sql.bind)))?;
        Ok(Some(addr))
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
            key_slots: d.key_slots,
            ..Default::default()
        }
    }

    /// Bytes of the DecLog file the key tables take (each stream's table and
    /// its checkpoint copy; none without compression).
    pub fn declog_key_tables_bytes(&self) -> u64 {
        let d = &self.declog;
        if !d.compression_and_alignment {
            return 0;
        }
        2 * d.logging_threads as u64 * strata_declog::compress::key_table::key_table_area_bytes(d.key_slots)
    }

    /// The DecLog file of a DecLog protocol.
    pub fn declog_path(&self, protocol: Protocol) -> PathBuf {
        match protocol {
            Protocol::DeclogSsd => self.data_dir.join(&self.declog.ssd_file),
            _ => self.data_dir.join(&self.declog.pmem_file),
        }
    }

    /// `streams.placement`: `None` for `auto`.
    fn placement_choice(&self) -> Result<Option<crate::streams::Placement>, ConfigError> {
        use crate::streams::Placement;
        match self.streams.placement.as_str() {
            "auto" => Ok(None),
            "pmem" => Ok(Some(Placement::Pmem)),
            "ssd" => Ok(Some(Placement::Ssd)),
            other => Err(ConfigError::Invalid(format!(
                "unknown streams.placement `{other}` (expected auto, pmem or ssd)"
            ))),
        }
    }

    /// The placement of new streams, `auto` resolved against the protocol.
    pub fn stream_placement(&self) -> Result<crate::streams::Placement, ConfigError> {
        use crate::streams::Placement;
        match self.placement_choice()? {
            Some(p) => Ok(p),
            None => Ok(match self.protocol()? {
                Protocol::SerialPmem | Protocol::DeclogPmem => Placement::Pmem,
                _ => Placement::Ssd,
            }),
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
        assert_eq!(c.protocol_choice().unwrap(), ProtocolChoice::Auto);
        assert_eq!(c.declog_path(Protocol::DeclogPmem), PathBuf::from("./strata-data/declog.pmem"));
        assert_eq!(c.bind_addr().unwrap().to_string(), "127.0.0.1:8086");
        assert_eq!(c.pool_path(), PathBuf::from("./strata-data/pmem.pool"));
    }

    #[test]
    fn declog_key_slots_reach_the_log_and_must_fit_the_file() {
        let c = Config::from_toml("[declog]\nkey_slots = 4096\n").unwrap();
        assert_eq!(c.declog_config().key_slots, 4096);
        assert_eq!(c.declog_key_tables_bytes(), 4 * (256 + 4096 * 512), "two streams, table and copy each");
        assert_eq!(Config::default().declog_config().key_slots, DEFAULT_DECLOG_KEY_SLOTS);
        Config::default().validate().expect("the default key tables fit the default file");
        let mut small = Config::default();
        small.declog.file_bytes = 8 << 20;
        let err = small.validate().expect_err("32 MiB of key tables in an 8 MiB file");
        assert!(err.to_string().contains("declog.key_slots"), "{err}");
        small.declog.key_slots = 1024;
        small.validate().expect("1,024 slots fit");
    }

    #[test]
    fn auto_is_declog_pmem_only_on_real_pmem() {
        let ext4 = Some("/srv/strata is on ext4 at /");
        let ssd = resolve_auto(PmemMode::Emulated, ext4);
        assert_eq!((ssd.protocol, ssd.pmem_mode), (Protocol::DeclogSsd, PmemMode::Emulated));
        assert!(
            ssd.reason.contains("/srv/strata is on ext4 at /"),
            "the reason names the directory: {}",
            ssd.reason
        );
        let dax = resolve_auto(PmemMode::Emulated, None);
        assert_eq!(
            (dax.protocol, dax.pmem_mode),
            (Protocol::DeclogPmem, PmemMode::Dax),
            "a DAX mount is real PMem"
        );
        let named = resolve_auto(PmemMode::Dax, ext4);
        assert_eq!(
            (named.protocol, named.pmem_mode),
            (Protocol::DeclogPmem, PmemMode::Dax),
            "pmem.mode = dax"
        );
        for mode in [PmemMode::Msync, PmemMode::Sim] {
            for dirs in [None, ext4] {
                let a = resolve_auto(mode, dirs);
                assert_eq!((a.protocol, a.pmem_mode), (Protocol::DeclogSsd, mode), "{mode:?} {dirs:?}");
            }
        }
    }

    #[test]
    fn resolve_turns_auto_into_a_protocol_once_and_keeps_a_named_one() {
        let dir = tempfile::tempdir().unwrap();
        let base = Config { data_dir: dir.path().join("new"), ..Config::default() };
        let resolved = base.resolve().unwrap();
        let on_dax = base.pmem_dirs().iter().all(|d| crate::medium::mount_of(d).is_some_and(|m| m.is_dax()));
        let (want, mode) =
            if on_dax { (Protocol::DeclogPmem, "dax") } else { (Protocol::DeclogSsd, "emulated") };
        assert_eq!(
            resolved.config.protocol().unwrap(),
            want,
            "what mountinfo says of {}",
            dir.path().display()
        );
        assert_eq!(resolved.config.pmem.mode, mode);
        assert_eq!(resolved.auto.as_ref().map(|a| a.protocol), Some(want));
        assert_eq!(base.protocol().unwrap(), want, "protocol() resolves auto the same way");
        let again = resolved.config.resolve().unwrap();
        assert!(again.auto.is_none(), "a resolved configuration names its protocol");
        assert_eq!(again.config.storage.protocol, want.name());

        let mut named = base.clone();
        named.storage.protocol = "declog-pmem".into();
        let r = named.resolve().unwrap();
        assert!(r.auto.is_none());
        assert_eq!(
            (r.config.protocol().unwrap(), r.config.pmem.mode.as_str()),
            (Protocol::DeclogPmem, "emulated")
        );

        let mut dax = base.clone();
        dax.pmem.mode = "dax".into();
        assert_eq!(dax.resolve().unwrap().config.protocol().unwrap(), Protocol::DeclogPmem);
    }

    #[test]
    fn the_pmem_dirs_follow_the_configured_files() {
        let mut c = Config { data_dir: PathBuf::from("/d"), ..Config::default() };
        assert_eq!(c.pmem_dirs(), [PathBuf::from("/d"), PathBuf::from("/d"), PathBuf::from("/d/streams")]);
        c.pmem.pool_file = PathBuf::from("/mnt/pmem0/pool");
        c.declog.pmem_file = PathBuf::from("/mnt/pmem1/declog.pmem");
        assert_eq!(
            c.pmem_dirs(),
            [PathBuf::from("/mnt/pmem0"), PathBuf::from("/mnt/pmem1"), PathBuf::from("/d/streams")]
        );
    }

    #[test]
    fn keys_override_and_mistakes_are_named() {
        let c = Config::from_toml("data_dir = \"/tmp/x\"\n[storage]\nprotocol = \"serial-ssd\"\n").unwrap();
        assert_eq!(c.protocol().unwrap(), Protocol::SerialSsd);
        assert_eq!(c.wal_dir(), PathBuf::from("/tmp/x/wal"));
        let e = Config::from_toml("[storage]\nprotocol = \"paxos\"\n").unwrap_err().to_string();
        assert!(e.contains("unknown commit protocol `paxos`"), "{e}");
        assert!(e.contains("also take auto"), "{e}");
        let c = Config::from_toml("[storage]\nprotocol = \"auto\"\n").unwrap();
        assert_eq!(c.protocol_choice().unwrap(), ProtocolChoice::Auto);
        assert!("auto".parse::<Protocol>().is_err(), "auto is a choice, not a protocol");
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

    #[test]
    fn a_volatile_pmem_mode_is_refused_with_the_reason() {
        let mut c = Config::default();
        c.pmem.mode = "volatile".into();
        let e = c.pmem_mode().unwrap_err().to_string();
        assert!(e.contains("keeps nothing"), "{e}");
    }
}
