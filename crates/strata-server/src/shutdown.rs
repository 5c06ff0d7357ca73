//! Graceful shutdown: wait for SIGINT or SIGTERM, let in-flight requests
//! finish (at most [`SHUTDOWN_GRACE`]), then checkpoint through the engine
//! hooks and log what the checkpoint said.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::errors::ServerError;
use crate::hooks::EngineHooks;

/// How long in-flight requests may keep running after the shutdown signal
/// before the server checkpoints anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// A future that completes on the first SIGINT or SIGTERM (Ctrl-C elsewhere).
/// The handlers are installed before it returns, so a signal that arrives
/// between this call and the first poll is not lost.
pub fn signals() -> std::io::Result<impl Future<Output = ()> + Send + 'static> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        Ok(async move {
            let name = tokio::select! {
                _ = interrupt.recv() => "SIGINT",
                _ = terminate.recv() => "SIGTERM",
            };
            eprintln!("strata serve: {name} received; finishing in-flight requests");
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
            eprintln!("strata serve: Ctrl-C received; finishing in-flight requests");
        })
    }
}

/// Runs `hooks.checkpoint()` on a blocking thread and logs its summary.
pub async fn checkpoint(hooks: Arc<dyn EngineHooks>) -> Result<String, ServerError> {
    let outcome = tokio::task::spawn_blocking(move || hooks.checkpoint())
        .await
        .map_err(|e| ServerError::Checkpoint(format!("checkpoint task failed: {e}")))?;
    match outcome {
        Ok(summary) => {
            eprintln!("strata serve: checkpoint on shutdown: {summary}");
            Ok(summary)
        }
        Err(reason) => {
            eprintln!("strata serve: checkpoint on shutdown FAILED: {reason}");
            Err(ServerError::Checkpoint(reason.to_string()))
        }
    }
}
