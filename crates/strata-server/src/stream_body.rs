//! The byte path of a streamed `/query` response: the executor's thread
//! writes JSON text into a [`ByteOut`], which hands it on in pieces of
//! about [`FLUSH_BYTES`] through a bounded channel (so a slow client slows
//! the query instead of letting the response pile up in memory), and
//! [`ChannelBody`] is the HTTP body that reads that channel. The first
//! message tells the route whether the query started (send the body) or
//! failed as a whole before any byte (send an error status); a response
//! whose first piece is its last keeps a `Content-Length`.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use strata_influx::influxql::sink::SinkStop;
use strata_influx::influxql::QueryError;
use tokio::sync::mpsc;

/// Text is handed on once this much is buffered.
pub const FLUSH_BYTES: usize = 64 << 10;
/// Pieces in flight between the query and the connection.
pub const CHANNEL_PIECES: usize = 8;

/// One message from the query's thread.
#[derive(Debug)]
pub enum Piece {
    /// More of the response body.
    Data(Bytes),
    /// The end of the response body: a response that is all in this piece
    /// is sent with a `Content-Length`, as before streaming.
    Last(Bytes),
    /// The request failed before any of its body was sent.
    Failed(QueryError),
}

/// Where a sink writes its text: whole pieces of JSON, in order.
pub trait TextOut {
    fn write(&mut self, text: &str) -> Result<(), SinkStop>;
}

/// A [`TextOut`] that collects the pieces (one per call), for tests.
impl TextOut for Vec<String> {
    fn write(&mut self, text: &str) -> Result<(), SinkStop> {
        self.push(text.to_string());
        Ok(())
    }
}

/// Buffers text and sends it down the channel; a closed channel (the
/// client went away) answers [`SinkStop`].
pub struct ByteOut {
    tx: mpsc::Sender<Piece>,
    buf: Vec<u8>,
    sent: bool,
}

impl ByteOut {
    pub fn new(tx: mpsc::Sender<Piece>) -> ByteOut {
        ByteOut { tx, buf: Vec::with_capacity(FLUSH_BYTES), sent: false }
    }

    /// Whether any text has gone down the channel.
    pub fn has_sent(&self) -> bool {
        self.sent
    }

    /// Sends what is buffered.
    pub fn flush(&mut self) -> Result<(), SinkStop> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.sent = true;
        let bytes = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(FLUSH_BYTES)));
        self.tx.blocking_send(Piece::Data(bytes)).map_err(|_| SinkStop)
    }

    /// Ends the response: the buffered rest, or, when `error` failed the
    /// request before any byte was sent, that error instead of a body.
    pub fn finish(mut self, error: Option<QueryError>) {
        match error {
            Some(e) if !self.sent => {
                let _ = self.tx.blocking_send(Piece::Failed(e));
            }
            _ => {
                let _ = self.tx.blocking_send(Piece::Last(Bytes::from(std::mem::take(&mut self.buf))));
            }
        }
    }
}

impl TextOut for ByteOut {
    fn write(&mut self, text: &str) -> Result<(), SinkStop> {
        self.buf.extend_from_slice(text.as_bytes());
        if self.buf.len() >= FLUSH_BYTES {
            return self.flush();
        }
        Ok(())
    }
}

/// The response body: the first piece (already received), then the channel.
pub struct ChannelBody {
    first: Option<Bytes>,
    rx: mpsc::Receiver<Piece>,
}

impl ChannelBody {
    pub fn new(first: Bytes, rx: mpsc::Receiver<Piece>) -> ChannelBody {
        ChannelBody { first: Some(first), rx }
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        loop {
            return match self.rx.poll_recv(cx) {
                Poll::Ready(Some(Piece::Data(bytes) | Piece::Last(bytes))) if bytes.is_empty() => continue,
                Poll::Ready(Some(Piece::Data(bytes) | Piece::Last(bytes))) => {
                    Poll::Ready(Some(Ok(Frame::data(bytes))))
                }
                // A failure after the body started is written into the text.
                Poll::Ready(Some(Piece::Failed(_))) | Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            };
        }
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
