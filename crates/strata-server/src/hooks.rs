//! What the server asks of the engine beyond [`strata_series::SeriesStore`]:
//! a checkpoint on graceful shutdown, extra metrics, and a health check.

/// Engine callbacks the server uses. Implemented by the engine facade; the
/// server calls `checkpoint` and `health` off the async workers.
pub trait EngineHooks: Send + Sync {
    /// Called once on graceful shutdown after in-flight requests finished;
    /// `Ok` carries a one-line summary that the server logs.
    fn checkpoint(&self) -> Result<String, String>;
    /// Appends engine metrics (log bytes, checkpoint and recovery times,
    /// persist counts) in Prometheus text format 0.0.4, with HELP/TYPE lines.
    fn metrics_text(&self, out: &mut String);
    /// `Err(reason)` makes `GET /health` answer 503 with the reason.
    fn health(&self) -> Result<(), String>;
}

/// Hooks of an engine with nothing to checkpoint and no extra metrics
/// (in-memory stores, tests).
#[derive(Copy, Clone, Debug, Default)]
pub struct NoopHooks;

impl EngineHooks for NoopHooks {
    fn checkpoint(&self) -> Result<String, String> {
        Ok("nothing to checkpoint".to_string())
    }

    fn metrics_text(&self, _out: &mut String) {}

    fn health(&self) -> Result<(), String> {
        Ok(())
    }
}
