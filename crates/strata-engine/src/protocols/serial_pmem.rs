//! `serial-pmem`: the serial log in the PMem pool (`crate::pool`), one
//! centralized LSN and a fence per record (declog.txt section 3.1, the
//! paper's Beringei-NVM baseline).

use std::sync::Arc;

use strata_log::{CommitLog, LogRecord, SerialLog};
use strata_media::fs::FileSystem;
use strata_pmem::{Region, RegionOptions};
use strata_series::manifest::Manifest;
use strata_series::{EngineError, WalOpener};

use super::{Medium, OpenedLog, ProtocolFactory, Survives};
use crate::config::{Config, Protocol};
use crate::db::DbError;
use crate::pool::open_pool_log;

pub struct SerialPmemFactory;

impl SerialPmemFactory {
    fn open_log(config: &Config) -> Result<(Arc<Region>, SerialLog, Vec<LogRecord>), DbError> {
        let region = open_region(config)?;
        let (log, records, _) = open_pool_log(region.clone(), config.pmem.log_bytes).map_err(|e| {
            DbError::Pool { path: config.pool_path().display().to_string(), message: e.to_string() }
        })?;
        Ok((region, log, records))
    }
}

impl ProtocolFactory for SerialPmemFactory {
    fn protocol(&self) -> Protocol {
        Protocol::SerialPmem
    }

    fn open(&self, config: &Config, _fs: &Arc<dyn FileSystem>) -> Result<OpenedLog, DbError> {
        let (region, log, records) = Self::open_log(config)?;
        Ok(OpenedLog { opener: WalOpener::boxed(Box::new(log), records), region: Some(region) })
    }

    /// Leave room in the ring for the commits that arrive while a checkpoint runs.
    fn checkpoint_log_bytes(&self, config: &Config) -> u64 {
        config.storage.checkpoint_log_bytes.min(config.pmem.log_bytes / 2)
    }

    fn survives(&self, config: &Config) -> Survives {
        config.pmem_mode().map_or(Survives::ProcessCrash, Survives::on_pmem)
    }

    fn medium(&self, config: &Config) -> Medium {
        super::pmem_file_medium("the log ring of the PMem pool", config.pool_path(), config.pmem_mode().ok())
    }

    fn drain_for_switch(
        &self,
        config: &Config,
        _fs: &Arc<dyn FileSystem>,
        manifest: Option<&Manifest>,
    ) -> Result<usize, DbError> {
        if !config.pool_path().exists() {
            return Ok(0);
        }
        let (_, log, records) = Self::open_log(config)?;
        drain_wal(&log, &records, self.protocol(), manifest)
    }
}

/// Opens the PMem pool file.
pub(super) fn open_region(config: &Config) -> Result<Arc<Region>, DbError> {
    let mut ro = RegionOptions::new(config.pmem_mode()?, config.pmem.pool_bytes);
    ro.flush_delay_ns_per_line = config.pmem.flush_delay_ns_per_line;
    ro.fence_delay_ns = config.pmem.fence_delay_ns;
    let path = config.pool_path();
    Region::open(&path, &ro)
        .map(Arc::new)
        .map_err(|e| DbError::Pool { path: path.display().to_string(), message: e.to_string() })
}

/// The uncovered records of a serial log, or (none) erases it.
pub(super) fn drain_wal(
    log: &dyn CommitLog,
    records: &[LogRecord],
    protocol: Protocol,
    manifest: Option<&Manifest>,
) -> Result<usize, DbError> {
    let covered = manifest.filter(|m| m.protocol == protocol.name()).map_or(0, |m| m.checkpoint_lsn);
    let pending = records.iter().filter(|r| r.lsn.0 > covered).count();
    if pending == 0 && !records.is_empty() {
        log.truncate_all().map_err(EngineError::from)?;
    }
    Ok(pending)
}
