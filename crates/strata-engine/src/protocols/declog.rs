//! `declog-pmem` and `declog-ssd`: DecLog (declog.txt section 4) in its own
//! file, PMem in the pool's mode (`declog-pmem`: real PMem with `dax`,
//! which `auto` picks on a DAX mount, else emulated) or an msync-persisted
//! file on the SSD (`declog-ssd`, the default without real PMem). The
//! series side is `strata_series::declog`.

use std::sync::Arc;

use strata_declog::{DecLog, FlushMode, Recovered};
use strata_media::fs::FileSystem;
use strata_pmem::{PmemMode, Region, RegionOffset, RegionOptions};
use strata_series::manifest::Manifest;
use strata_series::{DeclogEngineOptions, DeclogOpener};

use super::{Medium, OpenedLog, ProtocolFactory, Survives};
use crate::config::{Config, Protocol};
use crate::db::DbError;

pub struct DeclogFactory {
    protocol: Protocol,
}

impl DeclogFactory {
    pub const PMEM: DeclogFactory = DeclogFactory { protocol: Protocol::DeclogPmem };
    pub const SSD: DeclogFactory = DeclogFactory { protocol: Protocol::DeclogSsd };

    fn mode(&self, config: &Config) -> Result<PmemMode, DbError> {
        Ok(match self.protocol {
            Protocol::DeclogSsd => PmemMode::Msync,
            _ => config.pmem_mode()?,
        })
    }

    /// The DecLog file.
    fn open_region(&self, config: &Config) -> Result<Arc<Region>, DbError> {
        let mut ro = RegionOptions::new(self.mode(config)?, config.declog.file_bytes);
        ro.flush_delay_ns_per_line = config.pmem.flush_delay_ns_per_line;
        ro.fence_delay_ns = config.pmem.fence_delay_ns;
        let path = config.declog_path(self.protocol);
        Region::open(&path, &ro)
            .map(Arc::new)
            .map_err(|e| DbError::Pool { path: path.display().to_string(), message: e.to_string() })
    }

    /// Opens (formatting a new file) DecLog at the start of `region`.
    fn open_log(&self, config: &Config, region: Arc<Region>) -> Result<(DecLog, Recovered), DbError> {
        let path = config.declog_path(self.protocol).display().to_string();
        let fail =
            |e: strata_declog::DeclogError| DbError::Pool { path: path.clone(), message: e.to_string() };
        if region.load_u64(RegionOffset(0)) == 0 {
            let len = region.len();
            let log = DecLog::format(region, RegionOffset(0), len, config.declog_config()).map_err(fail)?;
            return Ok((log, Recovered::default()));
        }
        DecLog::open_with_mode(region, RegionOffset(0), FlushMode::Threads).map_err(fail)
    }
}

impl ProtocolFactory for DeclogFactory {
    fn protocol(&self) -> Protocol {
        self.protocol
    }

    fn open(&self, config: &Config, _fs: &Arc<dyn FileSystem>) -> Result<OpenedLog, DbError> {
        let region = self.open_region(config)?;
        let (log, recovered) = self.open_log(config, region.clone())?;
        let options = DeclogEngineOptions {
            name: self.protocol.name(),
            data_driven_lsn: config.declog.data_driven_lsn,
            checkpoints: config.declog.checkpoints,
        };
        let opener = DeclogOpener::boxed(log, recovered, options, config.declog.replay_threads);
        Ok(OpenedLog { opener, region: Some(region) })
    }

    fn checkpoint_log_bytes(&self, config: &Config) -> u64 {
        if !config.declog.checkpoints {
            return u64::MAX;
        }
        config.storage.checkpoint_log_bytes.min(config.declog.file_bytes / 4)
    }

    fn survives(&self, config: &Config) -> Survives {
        self.mode(config).map_or(Survives::ProcessCrash, Survives::on_pmem)
    }

    fn medium(&self, config: &Config) -> Medium {
        super::pmem_file_medium("the DecLog file", config.declog_path(self.protocol), self.mode(config).ok())
    }

    fn drain_for_switch(
        &self,
        config: &Config,
        _fs: &Arc<dyn FileSystem>,
        manifest: Option<&Manifest>,
    ) -> Result<usize, DbError> {
        if !config.declog_path(self.protocol).exists() {
            return Ok(0);
        }
        let region = self.open_region(config)?;
        if region.load_u64(RegionOffset(0)) == 0 {
            return Ok(0);
        }
        let (log, recovered) = self.open_log(config, region)?;
        let cut = manifest
            .filter(|m| m.protocol == self.protocol.name() && m.declog_cut.len() == recovered.streams.len())
            .map(|m| m.declog_cut.clone())
            .unwrap_or_else(|| vec![0; recovered.streams.len()]);
        let all = recovered.inserts.iter().chain(recovered.updates.values().flatten());
        let pending: std::collections::BTreeSet<_> =
            all.filter(|e| e.pos >= cut[e.stream]).map(|e| e.txn).collect();
        if pending.is_empty() && recovered.entry_count() > 0 {
            log.truncate_all().map_err(|e| DbError::Pool {
                path: config.declog_path(self.protocol).display().to_string(),
                message: format!("erasing the log: {e}"),
            })?;
        }
        Ok(pending.len())
    }
}
