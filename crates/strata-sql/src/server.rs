//! The PostgreSQL-protocol listener of `strata serve` (issue 19, "Server"):
//! default `127.0.0.1:5432`, the same token as the HTTP API (given as the
//! password), plain TCP (no TLS; `sslmode=prefer` clients fall back).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use datafusion_postgres::pgwire::tokio::process_socket;
use strata_engine::Tables;
use tokio::net::TcpListener;

use crate::handlers::StrataHandlers;

/// PostgreSQL's port on loopback.
pub const DEFAULT_PG_BIND: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 5432);

/// What the SQL server needs besides the tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgServerConfig {
    /// When set, the password every connection must give.
    pub auth_token: Option<String>,
    /// The database of connections that name none (see [`crate::handlers`]).
    pub default_database: String,
}

/// Serves the PostgreSQL protocol on `listener` until the task is dropped
/// or accepting fails.
pub async fn serve(
    listener: TcpListener,
    tables: Arc<dyn Tables>,
    config: PgServerConfig,
) -> std::io::Result<()> {
    let handlers = Arc::new(StrataHandlers::new(tables, config.auth_token, &config.default_database));
    loop {
        let (socket, peer) = listener.accept().await?;
        let handlers = handlers.clone();
        tokio::spawn(async move {
            if let Err(e) = process_socket(socket, None, handlers).await {
                eprintln!("strata sql: connection from {peer} ended with an error: {e}");
            }
        });
    }
}
