//! The HTTP server behind `strata serve` (DESIGN.md section 7): InfluxDB 1.x
//! `/write`, 2.x `/api/v2/write`, `/query`, `/ping`, `/health` and
//! `/metrics` over the engine facade's table catalog ([`Tables`]), with optional token auth, request
//! limits and graceful shutdown. Endpoints, limits and status codes:
//! `docs/http-api.md`.

#![forbid(unsafe_code)]

pub mod auth;
mod batch_pool;
pub mod chunked;
pub mod config;
mod conn;
pub mod document;
pub mod errors;
pub mod gzip;
pub mod hooks;
pub mod limits;
pub mod metrics;
pub mod params;
pub mod partial_write;
pub mod prometheus;
pub mod routes;
pub mod row_limit;
pub mod shutdown;
mod state;
pub mod stream_body;
mod tls;

use std::future::Future;
use std::sync::Arc;

use strata_engine::Tables;

pub use config::{ServerConfig, TlsFiles};
pub use errors::ServerError;
pub use hooks::{BackupHookError, EngineHooks, NoopHooks};

use metrics::Metrics;
use state::AppState;

/// Serves on `listener` until `shutdown` completes, then lets in-flight
/// requests finish (at most [`shutdown::SHUTDOWN_GRACE`]) and calls
/// `hooks.checkpoint()`, logging its summary. A failed checkpoint is an error.
pub async fn serve(
    listener: tokio::net::TcpListener,
    store: Arc<dyn Tables>,
    hooks: Arc<dyn EngineHooks>,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let served = async {
        let tls = config.tls.as_ref().map(tls::acceptor).transpose()?;
        serve_until(listener, store, hooks, config, tls, shutdown).await
    };
    served.await.map_err(|e| match e {
        ServerError::Io(io) => io,
        other => std::io::Error::other(other.to_string()),
    })
}

async fn serve_until(
    listener: tokio::net::TcpListener,
    store: Arc<dyn Tables>,
    hooks: Arc<dyn EngineHooks>,
    config: ServerConfig,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    config.validate()?;
    let limits = conn::ConnLimits {
        header_read_timeout: config.header_read_timeout,
        max_connections: config.max_connections,
    };
    let metrics = Arc::new(Metrics::new());
    let state = Arc::new(AppState {
        store,
        hooks: Arc::clone(&hooks),
        config,
        metrics: metrics.clone(),
        batches: Default::default(),
    });
    let app = routes::router(state);
    let (stopping_tx, mut stopping_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stopping_tx.send(true);
    });
    let server = conn::serve_connections(listener, app, limits, tls, metrics, stopping_rx.clone());
    let grace = async move {
        let _ = stopping_rx.wait_for(|stopping| *stopping).await;
        tokio::time::sleep(shutdown::SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        served = server => served?,
        () = grace => eprintln!(
            "strata serve: requests still open after {:?}; checkpointing anyway",
            shutdown::SHUTDOWN_GRACE
        ),
    }
    shutdown::checkpoint(hooks).await.map(|_summary| ())
}

/// A task served beside the HTTP API on its runtime (the SQL listener of
/// `strata serve`); it is dropped when the runtime stops.
pub type Companion = std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Builds a multi-thread runtime, binds `config.bind`, prints `listening on
/// http://ADDR` to stderr, serves until SIGINT or SIGTERM, then checkpoints
/// through `hooks`.
pub fn run(
    store: Arc<dyn Tables>,
    hooks: Arc<dyn EngineHooks>,
    config: ServerConfig,
) -> Result<(), ServerError> {
    run_with(store, hooks, config, Vec::new())
}

/// [`run`], with `companions` spawned on the same runtime first.
pub fn run_with(
    store: Arc<dyn Tables>,
    hooks: Arc<dyn EngineHooks>,
    config: ServerConfig,
    companions: Vec<Companion>,
) -> Result<(), ServerError> {
    config.validate()?;
    // Certificate problems stop the start before anything listens.
    let tls = config.tls.as_ref().map(tls::acceptor).transpose()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("strata-http")
        .build()
        .map_err(ServerError::Runtime)?;
    runtime.block_on(async move {
        let addr = config.bind;
        let listener =
            tokio::net::TcpListener::bind(addr).await.map_err(|source| ServerError::Bind { addr, source })?;
        let signals = shutdown::signals()?;
        for companion in companions {
            tokio::spawn(companion);
        }
        let scheme = if config.tls.is_some() { "https" } else { "http" };
        eprintln!("listening on {scheme}://{}", listener.local_addr()?);
        serve_until(listener, store, hooks, config, tls, signals).await
    })
}
