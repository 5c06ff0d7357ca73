//! Connections (issue 15 item 2, "no timeouts and no connection cap"):
//! the accept loop behind `strata serve`, in place of `axum::serve`, so an
//! idle or slow client cannot hold the server's sockets.
//!
//! - **Header read timeout**: a connection that has not sent a whole
//!   request head within `header_read_timeout` of starting to wait for one
//!   is closed. Hyper starts this clock whenever the connection waits for a
//!   request head, so it is also the idle keep-alive timeout: an idle
//!   connection is closed after it.
//! - **Connection cap**: at most `max_connections` open. A connection
//!   beyond it first closes the longest-idle open connection (no request in
//!   flight); when none is idle it gets `503 Service Unavailable` and is
//!   closed. When `accept` fails for want of file descriptors (a process
//!   limit below the cap), the longest-idle connection is closed too.
//! - **HTTPS** (when configured, `tls.rs`): each connection's TLS
//!   handshake must finish within `header_read_timeout` too; one that fails
//!   or is late is closed.
//! - **Shutdown**: the loop stops accepting, every connection is asked to
//!   finish its request in flight and close, and the loop waits for them.
//!
//! Every refusal is counted in `/metrics` by reason.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use parking_lot::Mutex;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio_rustls::TlsAcceptor;

use crate::metrics::{ConnEvent, Metrics};

/// The connection limits of [`crate::ServerConfig`].
#[derive(Copy, Clone, Debug)]
pub(crate) struct ConnLimits {
    pub header_read_timeout: Duration,
    pub max_connections: usize,
}

/// What the registry knows of one open connection.
struct ConnState {
    /// Requests in flight.
    busy: usize,
    /// When it last became idle (or was accepted).
    idle_since: Instant,
    /// Asked to close (counted out of the cap already).
    closing: bool,
    close: Arc<Notify>,
}

/// The open connections.
#[derive(Default)]
struct Registry {
    conns: Mutex<BTreeMap<u64, ConnState>>,
    next_id: AtomicU64,
}

impl Registry {
    /// Makes room for one more connection: `true` if there is room (after
    /// asking the longest-idle connection to close, if needed).
    fn admit(&self, max: usize) -> bool {
        let open = self.conns.lock().values().filter(|c| !c.closing).count();
        open < max || self.close_idlest()
    }

    /// Asks the longest-idle connection to close; `false` if none is idle.
    fn close_idlest(&self) -> bool {
        let mut conns = self.conns.lock();
        let idlest =
            conns.iter_mut().filter(|(_, c)| !c.closing && c.busy == 0).min_by_key(|(_, c)| c.idle_since);
        match idlest {
            Some((_, c)) => {
                c.closing = true;
                c.close.notify_one();
                true
            }
            None => false,
        }
    }

    fn register(&self) -> (u64, Arc<Notify>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let close = Arc::new(Notify::new());
        let state = ConnState { busy: 0, idle_since: Instant::now(), closing: false, close: close.clone() };
        self.conns.lock().insert(id, state);
        (id, close)
    }

    fn set_busy(&self, id: u64, delta: isize) {
        if let Some(c) = self.conns.lock().get_mut(&id) {
            c.busy = c.busy.checked_add_signed(delta).expect("busy count never goes below zero");
            if c.busy == 0 {
                c.idle_since = Instant::now();
            }
        }
    }

    fn remove(&self, id: u64) {
        self.conns.lock().remove(&id);
    }

    fn is_empty(&self) -> bool {
        self.conns.lock().is_empty()
    }
}

/// Marks a connection busy while a request is served.
struct BusyGuard {
    registry: Arc<Registry>,
    id: u64,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.registry.set_busy(self.id, -1);
    }
}

/// The response to a connection beyond the cap when none can be closed.
const OVER_CAP_RESPONSE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
connection: close\r\ncontent-length: 72\r\n\r\n{\"error\":\"too many connections: every one is busy; retry in a moment\"}\n";

/// Accepts and serves connections until `stopping` turns true, then waits
/// for the open ones to finish their request in flight.
pub(crate) async fn serve_connections(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    tls: Option<TlsAcceptor>,
    metrics: Arc<Metrics>,
    mut stopping: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let registry = Arc::new(Registry::default());
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of file descriptors (the process limit is below
                // `max_connections`) or a reset before accept: the
                // longest-idle connection is closed to free a descriptor,
                // and the loop goes on.
                Err(e) => {
                    metrics.record_connection(ConnEvent::AcceptError);
                    if !registry.close_idlest() {
                        eprintln!("strata serve: accept failed: {e}");
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                }
            },
            () = stopped(&mut stopping) => break,
        };
        while tasks.try_join_next().is_some() {}
        if !registry.admit(limits.max_connections) {
            metrics.record_connection(ConnEvent::MaxConnections);
            tasks.spawn(refuse(stream));
            continue;
        }
        let (id, close) = registry.register();
        let conn = Conn {
            app: app.clone(),
            limits,
            registry: registry.clone(),
            id,
            close,
            metrics: metrics.clone(),
        };
        tasks.spawn(serve_one(stream, tls.clone(), conn, stopping.clone()));
    }
    drop(listener);
    while tasks.join_next().await.is_some() {}
    debug_assert!(registry.is_empty(), "every connection task removes itself");
    Ok(())
}

/// Resolves when the server is stopping (the watch's guard is dropped
/// inside, so the caller's future stays `Send`).
async fn stopped(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|s| *s).await;
}

async fn refuse(mut stream: TcpStream) {
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(OVER_CAP_RESPONSE)).await;
    let _ = stream.shutdown().await;
}

/// What serving one accepted connection needs.
struct Conn {
    app: Router,
    limits: ConnLimits,
    registry: Arc<Registry>,
    id: u64,
    close: Arc<Notify>,
    metrics: Arc<Metrics>,
}

/// Serves one connection, after its TLS handshake when HTTPS is on.
async fn serve_one(stream: TcpStream, tls: Option<TlsAcceptor>, conn: Conn, stopping: watch::Receiver<bool>) {
    let _ = stream.set_nodelay(true);
    let Some(acceptor) = tls else {
        return serve_io(TokioIo::new(stream), conn, stopping).await;
    };
    match tokio::time::timeout(conn.limits.header_read_timeout, acceptor.accept(stream)).await {
        Ok(Ok(tls_stream)) => serve_io(TokioIo::new(tls_stream), conn, stopping).await,
        Ok(Err(_)) | Err(_) => {
            conn.metrics.record_connection(ConnEvent::TlsHandshake);
            conn.registry.remove(conn.id);
        }
    }
}

async fn serve_io<I>(io: I, conn: Conn, mut stopping: watch::Receiver<bool>)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let Conn { app, limits, registry, id, close, metrics } = conn;
    let tower = TowerToHyperService::new(app);
    let reg = registry.clone();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        reg.set_busy(id, 1);
        let guard = BusyGuard { registry: reg.clone(), id };
        let response = hyper::service::Service::call(&tower, req);
        async move {
            let r = response.await;
            drop(guard);
            r
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout).keep_alive(true);
    let conn = builder.serve_connection(io, service).with_upgrades();
    tokio::pin!(conn);
    let mut asked = false;
    let result = loop {
        tokio::select! {
            r = conn.as_mut() => break r,
            _ = close.notified(), if !asked => {
                asked = true;
                metrics.record_connection(ConnEvent::IdleClosedForRoom);
                conn.as_mut().graceful_shutdown();
            }
            () = stopped(&mut stopping), if !asked => {
                asked = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    };
    if let Err(e) = result {
        if e.is_timeout() {
            metrics.record_connection(ConnEvent::HeaderReadTimeout);
        }
    }
    registry.remove(id);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_idle_connection_makes_room_and_busy_ones_never_do() {
        let r = Registry::default();
        let (a, _) = r.register();
        std::thread::sleep(Duration::from_millis(2));
        let (b, _) = r.register();
        assert!(r.admit(3), "room left");
        assert!(r.admit(2), "a and b idle: the longest idle, a, is asked to close");
        assert!(r.conns.lock()[&a].closing && !r.conns.lock()[&b].closing);
        r.set_busy(b, 1);
        assert!(!r.admit(1), "b busy and a closing already: no room");
        r.set_busy(b, -1);
        assert!(r.admit(1), "b idle again");
        r.remove(a);
        r.remove(b);
        assert!(r.is_empty());
    }
}
