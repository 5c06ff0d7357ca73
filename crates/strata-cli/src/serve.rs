//! `strata serve`: open (and recover) the data directory, state the commit
//! protocol, its medium and what an acknowledged write survives, then serve
//! the InfluxDB-compatible HTTP API (and the event stream endpoints) until
//! SIGINT/SIGTERM, then checkpoint.

use std::sync::Arc;

use clap::Args;
use strata_server::ServerConfig;

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
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let mut config = args.open.load()?;
    if let Some(b) = args.bind {
        config.server.bind = b;
    }
    if args.auth_token.is_some() {
        config.server.auth_token = args.auth_token;
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
        // ILP senders that name no database write into the default one.
        default_database: Some(config.storage.default_database.clone()).filter(|d| !d.is_empty()),
        ..ServerConfig::default()
    };
    // Series through the engine, event streams through the stream catalog.
    let store = db.tables().clone();
    strata_server::run(store, Arc::new(DbHooks(db.clone())), server)?;
    Ok(())
}
