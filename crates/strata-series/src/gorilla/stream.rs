//! The open streams of a block (`docs/format/series-block.md`): the bits
//! written so far, how many values they hold, and the state `S` the stream's
//! encoder carries from one value to the next. Each stream module defines
//! its state type and `push`: `timestamps`, `floats`, `integers`,
//! `booleans`, `strings`.

use super::bits::BitWriter;

/// An open, append-only stream; `S` is its encoder's state.
#[derive(Clone, Debug, Default)]
pub struct Stream<S> {
    pub(super) bits: BitWriter,
    pub(super) len: u64,
    pub(super) state: S,
}

impl<S: Default> Stream<S> {
    pub fn new() -> Stream<S> {
        Stream::default()
    }
}

impl<S> Stream<S> {
    /// Values pushed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn bits(&self) -> &BitWriter {
        &self.bits
    }
}
