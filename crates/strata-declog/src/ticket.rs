//! Durability tickets: a transaction is acknowledged when the tails of all its
//! entries are persisted (declog.txt section 4.2), in whichever streams and
//! batches they went. Each queued entry holds its transaction's ticket; the
//! flushing pipeline counts entries down after the fence that persisted them,
//! and the last one wakes the committing worker.

use crate::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::sync::{Condvar, Mutex};
use strata_media::TxnId;

use crate::error::{DeclogError, FailReason};

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Pending,
    Durable,
    Failed(FailReason),
}

struct Inner {
    txn: TxnId,
    remaining: AtomicU32,
    state: Mutex<State>,
    cv: Condvar,
}

/// What a ticket says now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TicketStatus {
    Pending,
    Durable,
    /// The transaction will never be acknowledged; the message says why.
    Failed(String),
}

/// A queued transaction's durability, shared by its entries.
#[derive(Clone)]
pub struct Ticket {
    inner: Arc<Inner>,
}

impl Ticket {
    pub(crate) fn new(txn: TxnId, entries: u32) -> Ticket {
        assert!(entries > 0);
        Ticket {
            inner: Arc::new(Inner {
                txn,
                remaining: AtomicU32::new(entries),
                state: Mutex::new(State::Pending),
                cv: Condvar::new(),
            }),
        }
    }

    pub fn txn(&self) -> TxnId {
        self.inner.txn
    }

    pub fn status(&self) -> TicketStatus {
        match &*self.inner.state.lock() {
            State::Pending => TicketStatus::Pending,
            State::Durable => TicketStatus::Durable,
            State::Failed(r) => TicketStatus::Failed(r.describe()),
        }
    }

    pub fn is_durable(&self) -> bool {
        *self.inner.state.lock() == State::Durable
    }

    pub fn is_resolved(&self) -> bool {
        *self.inner.state.lock() != State::Pending
    }

    /// Blocks until the transaction is durable or has failed.
    pub fn wait(&self) -> Result<(), DeclogError> {
        let mut s = self.inner.state.lock();
        loop {
            match &*s {
                State::Pending => self.inner.cv.wait(&mut s),
                State::Durable => return Ok(()),
                State::Failed(r) => return Err(r.to_error()),
            }
        }
    }

    /// The outcome if resolved, without blocking.
    pub(crate) fn outcome(&self) -> Option<Result<(), DeclogError>> {
        match &*self.inner.state.lock() {
            State::Pending => None,
            State::Durable => Some(Ok(())),
            State::Failed(r) => Some(Err(r.to_error())),
        }
    }

    /// One entry of the transaction is persisted.
    pub(crate) fn entry_durable(&self) {
        let before = self.inner.remaining.fetch_sub(1, Ordering::AcqRel);
        assert!(before > 0, "{}: more entries persisted than queued", self.inner.txn);
        if before == 1 {
            let mut s = self.inner.state.lock();
            if *s == State::Pending {
                *s = State::Durable;
            }
            self.inner.cv.notify_all();
        }
    }

    /// The transaction will never be durable (first resolution wins).
    pub(crate) fn fail(&self, reason: FailReason) {
        let mut s = self.inner.state.lock();
        if *s == State::Pending {
            *s = State::Failed(reason);
        }
        self.inner.cv.notify_all();
    }
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ticket({}, {:?})", self.inner.txn, self.status())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durable_after_the_last_entry_and_wakes_a_waiter() {
        let t = Ticket::new(TxnId(3), 3);
        t.entry_durable();
        t.entry_durable();
        assert_eq!(t.status(), TicketStatus::Pending);
        let waiter = {
            let t = t.clone();
            std::thread::spawn(move || t.wait())
        };
        t.entry_durable();
        assert!(waiter.join().unwrap().is_ok());
        assert!(t.is_durable());
    }

    #[test]
    fn failure_wins_only_while_pending() {
        let t = Ticket::new(TxnId(1), 2);
        t.fail(FailReason::Full { stream: 0, needed_bytes: 1, free_bytes: 0 });
        t.entry_durable();
        t.entry_durable();
        assert!(matches!(t.wait(), Err(DeclogError::Full { stream: 0, .. })));
        let d = Ticket::new(TxnId(2), 1);
        d.entry_durable();
        d.fail(FailReason::Full { stream: 1, needed_bytes: 1, free_bytes: 0 });
        assert!(d.wait().is_ok());
    }
}
