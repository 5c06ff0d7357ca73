//! The Strata HTTP server inside the benchmark process: `strata_server::serve`
//! over a store on `127.0.0.1:0`, as a task of its own tokio runtime (worker
//! threads in the background), and beside it the SQL layer's PostgreSQL
//! listener (`strata_sql::serve`, another `127.0.0.1:0`) over the same store,
//! as `strata serve` runs them. The loader and the queries reach them over
//! loopback TCP exactly as they would reach any other server.
//!
//! [`LocalServer::stop`] shuts the runtime down instead of asking `serve` to
//! finish gracefully: by then the loader's connections are closed and the
//! benchmark has checkpointed the engine itself, so the server's shutdown
//! checkpoint (and its log line) would add nothing.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use strata_engine::Tables;
use strata_server::{NoopHooks, ServerConfig};
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

use super::http_client::HttpUrl;

/// Tokio worker threads of the server (the machine has two cores).
pub const SERVER_WORKER_THREADS: usize = 2;
/// How long [`LocalServer::stop`] waits for the runtime's threads.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

pub struct LocalServer {
    addr: SocketAddr,
    pg_addr: SocketAddr,
    runtime: Option<Runtime>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl LocalServer {
    /// Starts serving `store`; accepts bodies up to `max_body_bytes` (at
    /// least the server's default).
    pub fn start(store: Arc<dyn Tables>, max_body_bytes: usize) -> anyhow::Result<LocalServer> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(SERVER_WORKER_THREADS)
            .thread_name("strata-bench-http")
            .enable_all()
            .build()
            .context("building the server's tokio runtime")?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))
            .context("binding 127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let pg_listener = runtime
            .block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))
            .context("binding 127.0.0.1:0 for SQL")?;
        let pg_addr = pg_listener.local_addr()?;
        let pg_config = strata_sql::PgServerConfig { auth_token: None, default_database: String::new() };
        // Ends with the runtime (its error, if accepting fails, shows as failed SQL queries).
        runtime.spawn(strata_sql::serve(pg_listener, store.clone(), pg_config));
        let config = ServerConfig {
            bind: addr,
            max_body_bytes: max_body_bytes.max(ServerConfig::default().max_body_bytes),
            ..ServerConfig::default()
        };
        let serving =
            strata_server::serve(listener, store, Arc::new(NoopHooks), config, std::future::pending());
        let task = runtime.spawn(serving);
        Ok(LocalServer { addr, pg_addr, runtime: Some(runtime), task: Some(task) })
    }

    /// Where the PostgreSQL protocol is served.
    pub fn pg_addr(&self) -> SocketAddr {
        self.pg_addr
    }

    pub fn url(&self) -> HttpUrl {
        HttpUrl { host: self.addr.ip().to_string(), port: self.addr.port(), base_path: String::new() }
    }

    /// Stops the server; an error if it had stopped by itself with one.
    pub fn stop(mut self) -> anyhow::Result<()> {
        let (Some(runtime), Some(task)) = (self.runtime.take(), self.task.take()) else {
            return Ok(());
        };
        let result = if task.is_finished() {
            match runtime.block_on(task) {
                Ok(served) => served.context("the server stopped"),
                Err(e) => Err(anyhow::anyhow!("the server task failed: {e}")),
            }
        } else {
            Ok(())
        };
        runtime.shutdown_timeout(STOP_TIMEOUT);
        result
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(STOP_TIMEOUT);
        }
    }
}
