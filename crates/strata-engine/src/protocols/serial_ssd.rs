//! `serial-ssd`: the serial log in SSD segment files with group commit (a
//! leader's one write and one fdatasync cover every waiting commit; the
//! serial baseline of DESIGN.md section 5 on SSD).

use std::sync::Arc;
use std::time::Duration;

use strata_log::ssd_log::SsdLogOptions;
use strata_log::{LogRecord, SerialLog};
use strata_media::fs::FileSystem;
use strata_series::manifest::Manifest;
use strata_series::{EngineError, WalOpener};

use super::serial_pmem::drain_wal;
use super::{Medium, OpenedLog, ProtocolFactory, Survives};
use crate::config::{Config, Protocol};
use crate::db::DbError;

pub struct SerialSsdFactory;

impl SerialSsdFactory {
    fn open_log(config: &Config, fs: &Arc<dyn FileSystem>) -> Result<(SerialLog, Vec<LogRecord>), DbError> {
        let options = SsdLogOptions {
            max_batch_bytes: config.ssd_log.max_batch_bytes,
            max_wait: Duration::from_micros(config.ssd_log.max_wait_us),
            ..SsdLogOptions::default()
        };
        Ok(SerialLog::open_ssd(fs.clone(), &config.wal_dir(), options).map_err(EngineError::from)?)
    }
}

impl ProtocolFactory for SerialSsdFactory {
    fn protocol(&self) -> Protocol {
        Protocol::SerialSsd
    }

    fn open(&self, config: &Config, fs: &Arc<dyn FileSystem>) -> Result<OpenedLog, DbError> {
        let (log, records) = Self::open_log(config, fs)?;
        Ok(OpenedLog { opener: WalOpener::boxed(Box::new(log), records), region: None })
    }

    fn survives(&self, _config: &Config) -> Survives {
        Survives::PowerLoss
    }

    fn medium(&self, config: &Config) -> Medium {
        let dir = config.wal_dir();
        Medium {
            what: format!("log segments in {}, fdatasynced per group commit", dir.display()),
            path: Some(dir),
        }
    }

    fn drain_for_switch(
        &self,
        config: &Config,
        fs: &Arc<dyn FileSystem>,
        manifest: Option<&Manifest>,
    ) -> Result<usize, DbError> {
        if !config.wal_dir().exists() {
            return Ok(0);
        }
        let (log, records) = Self::open_log(config, fs)?;
        drain_wal(&log, &records, self.protocol(), manifest)
    }
}
