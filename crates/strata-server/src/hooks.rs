//! What the server asks of the engine beyond [`strata_series::SeriesStore`]:
//! a checkpoint on graceful shutdown, extra metrics, a health check, and
//! online backups (`POST /debug/backup`).

use std::path::Path;

use strata_series::EngineError;
use thiserror::Error;

/// Why a backup asked of a running server was not taken.
#[derive(Debug, Error)]
pub enum BackupHookError {
    #[error("this server's engine does not take backups")]
    Unsupported,
    /// The request cannot be met as given (the directory is not empty):
    /// the client's to fix.
    #[error("{0}")]
    Refused(Box<dyn std::error::Error + Send + Sync>),
    #[error("{0}")]
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

/// Engine callbacks the server uses. Implemented by the engine facade; the
/// server calls `checkpoint` and `health` off the async workers.
pub trait EngineHooks: Send + Sync {
    /// Called once on graceful shutdown after in-flight requests finished;
    /// `Ok` carries a one-line summary that the server logs.
    fn checkpoint(&self) -> Result<String, EngineError>;
    /// Appends engine metrics (log bytes, checkpoint and recovery times,
    /// persist counts) in Prometheus text format 0.0.4, with HELP/TYPE lines.
    fn metrics_text(&self, out: &mut String);
    /// `Some(reason)` makes `GET /health` answer 503 with the reason.
    fn unhealthy_because(&self) -> Option<String>;
    /// Parts of the store out of service while the rest is served (event
    /// streams that failed to recover): `(check name, reason)`. `GET
    /// /health` lists them as failed checks and still answers 200.
    fn failed_parts(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// Takes a checkpoint and copies it into `dir` (a path on the server's
    /// machine) while writes go on; `Ok` carries a one-line summary.
    fn backup(&self, _dir: &Path) -> Result<String, BackupHookError> {
        Err(BackupHookError::Unsupported)
    }
}

/// Hooks of an engine with nothing to checkpoint and no extra metrics
/// (in-memory stores, tests).
#[derive(Copy, Clone, Debug, Default)]
pub struct NoopHooks;

impl EngineHooks for NoopHooks {
    fn checkpoint(&self) -> Result<String, EngineError> {
        Ok("nothing to checkpoint".to_string())
    }

    fn metrics_text(&self, _out: &mut String) {}

    fn unhealthy_because(&self) -> Option<String> {
        None
    }
}
