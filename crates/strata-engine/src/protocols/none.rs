//! `none`: no log (the upper bound of every figure). Acknowledged writes
//! live in DRAM until the next checkpoint.

use std::sync::Arc;

use strata_log::{Lsn, NoLog};
use strata_media::fs::FileSystem;
use strata_series::manifest::{read_manifest, Manifest};
use strata_series::WalOpener;

use super::{Medium, OpenedLog, ProtocolFactory, Survives};
use crate::config::{Config, Protocol};
use crate::db::DbError;

pub struct NoneFactory;

impl ProtocolFactory for NoneFactory {
    fn protocol(&self) -> Protocol {
        Protocol::None
    }

    fn open(&self, config: &Config, fs: &Arc<dyn FileSystem>) -> Result<OpenedLog, DbError> {
        // The LSN continues from the checkpoint's, so a later switch to a
        // serial log compares positions of one sequence.
        let manifest = read_manifest(fs.as_ref(), &config.series_dir())?;
        let start = manifest.as_ref().map_or(0, |m| m.checkpoint_lsn);
        Ok(OpenedLog {
            opener: WalOpener::boxed(Box::new(NoLog::starting_at(Lsn(start))), Vec::new()),
            region: None,
        })
    }

    fn survives(&self, _config: &Config) -> Survives {
        Survives::Nothing
    }

    fn medium(&self, _config: &Config) -> Medium {
        Medium { what: "no commit log: DRAM until the next checkpoint".into(), path: None }
    }

    fn drain_for_switch(
        &self,
        _: &Config,
        _: &Arc<dyn FileSystem>,
        _: Option<&Manifest>,
    ) -> Result<usize, DbError> {
        Ok(0)
    }
}
