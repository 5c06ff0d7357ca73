//! `strata serve`: open (and recover) the data directory, state the commit
//! protocol, its medium and what an acknowledged write survives, then serve
//! the InfluxDB-compatible HTTP API (and the event stream endpoints) and SQL
//! over the PostgreSQL protocol until SIGINT/SIGTERM, then checkpoint.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use strata_engine::config::{ServerSection, SqlSection};
use strata_engine::{Config, Tables};
use strata_server::{Companion, ServerConfig, TlsFiles};
use strata_sql::PgServerConfig;

use crate::engine_hooks::DbHooks;
use crate::open_args::{open_db, OpenArgs};

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    open: OpenArgs,
    /// Listen address (default 127.0.0.1:8086).
    #[arg(long)]
    bind: Option<String>,
    /// Require this token on every endpoint (Authorization: Token <t>).
    #[arg(long, env = "STRATA_AUTH_TOKEN")]
    auth_token: Option<String>,
    /// SQL (PostgreSQL protocol) listen address (default 127.0.0.1:5432).
    #[arg(long)]
    sql_bind: Option<String>,
    /// Do not serve SQL.
    #[arg(long)]
    no_sql: bool,
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let mut config = args.open.load()?;
    if let Some(b) = args.bind {
        config.server.bind = b;
    }
    if args.auth_token.is_some() {
        config.server.auth_token = args.auth_token;
    }
    if let Some(b) = args.sql_bind {
        config.sql.bind = b;
    }
    if args.no_sql {
        config.sql.enabled = false;
    }
    config.validate()?;
    eprintln!("strata: data directory {}", config.data_dir.display());
    let db = Arc::new(open_db(&config)?);
    // The protocol (auto resolved, and why), its medium, what an ack survives.
    for line in db.durability().to_string().lines() {
        eprintln!("strata: {line}");
    }
    eprintln!("strata: recovered in {:.3} s\n{}", db.recovery().total_s, db.recovery());
    eprintln!("strata: {}", db.streams_recovery());
    db.start_background_checkpoints();
    let server = ServerConfig {
        bind: config.bind_addr()?,
        auth_token: config.server.auth_token.clone(),
        max_body_bytes: config.server.max_body_bytes,
        max_line_bytes: config.server.max_line_bytes,
        max_fields_per_line: config.server.max_fields_per_line,
        header_read_timeout: Duration::from_millis(config.server.header_read_timeout_ms),
        body_read_timeout: Duration::from_millis(config.server.body_read_timeout_ms),
        body_min_bytes_per_sec: config.server.body_min_bytes_per_sec,
        max_connections: config.server.max_connections,
        max_row_limit: config.server.max_row_limit,
        max_query_memory_bytes: config.server.max_query_memory_bytes,
        tls: https_files(&config.server)?,
        // ILP senders that name no database write into the default one.
        default_database: Some(config.storage.default_database.clone()).filter(|d| !d.is_empty()),
        ..ServerConfig::default()
    };
    // Series through the engine, event streams through the stream catalog.
    let store: Arc<dyn Tables> = db.tables().clone();
    let mut companions = Vec::new();
    if let Some(addr) = config.sql_bind_addr()? {
        match sql_listener(addr, store.clone(), &config) {
            Ok(listener) => companions.push(listener),
            // The default port may be a PostgreSQL server's: say so and
            // serve HTTP; a port the operator chose must be ours.
            Err(e) if config.sql.bind == SqlSection::default().bind => {
                eprintln!("strata: warning: {e:#}; SQL is not served (set [sql] bind or --sql-bind to another port)")
            }
            Err(e) => return Err(e),
        }
    }
    strata_server::run_with(store, Arc::new(DbHooks(db.clone())), server, companions)?;
    Ok(())
}

/// Binds the SQL listener now (so a taken port fails startup) and returns
/// the task serving it.
/// The HTTPS files when `server.https_enabled` (both must be named).
fn https_files(server: &ServerSection) -> anyhow::Result<Option<TlsFiles>> {
    if !server.https_enabled {
        return Ok(None);
    }
    if server.https_certificate.is_empty() || server.https_private_key.is_empty() {
        anyhow::bail!(
            "server.https_enabled needs server.https_certificate and server.https_private_key (PEM files)"
        );
    }
    Ok(Some(TlsFiles {
        certificate: server.https_certificate.clone().into(),
        private_key: server.https_private_key.clone().into(),
    }))
}

fn sql_listener(addr: SocketAddr, store: Arc<dyn Tables>, config: &Config) -> anyhow::Result<Companion> {
    let listener =
        std::net::TcpListener::bind(addr).with_context(|| format!("cannot listen for SQL on {addr}"))?;
    listener.set_nonblocking(true)?;
    eprintln!("listening for SQL (PostgreSQL protocol) on {}", listener.local_addr()?);
    let sql = PgServerConfig {
        auth_token: config.server.auth_token.clone(),
        default_database: config.storage.default_database.clone(),
    };
    Ok(Box::pin(async move {
        let served = match tokio::net::TcpListener::from_std(listener) {
            Ok(listener) => strata_sql::serve(listener, store, sql).await,
            Err(e) => Err(e),
        };
        if let Err(e) = served {
            eprintln!("strata serve: the SQL listener stopped: {e}");
        }
    }))
}
