//! Concurrency control, one sibling per scheme behind
//! [`ConcurrencyControl`]: [`two_pl::TwoPlNoWait`] (taurus.txt Algorithm 1)
//! and [`occ::Occ`] (Algorithm 6). A transaction's reads, write intents,
//! commit and abort go through the scheme its database was opened with;
//! the log record, `T.LV` and the write buffer are common ([`TxnState`]).
//!
//! Adding a scheme: a module here implementing the trait, a [`CcKind`]
//! variant, and its line in [`open`].

pub mod occ;
pub mod two_pl;

use crate::error::TxnError;
use crate::ids::{RowKey, TableId};
use crate::log::CommitTicket;
use crate::txn::TxnState;

/// Which concurrency control a database runs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum CcKind {
    /// Strict two-phase locking, NO_WAIT (a conflict aborts at once).
    #[default]
    TwoPlNoWait,
    /// Optimistic: unlocked reads, validation at commit (Silo-style).
    Occ,
}

impl CcKind {
    pub fn name(self) -> &'static str {
        match self {
            CcKind::TwoPlNoWait => "2pl",
            CcKind::Occ => "occ",
        }
    }
}

/// One concurrency-control scheme. Every method that returns an error has
/// already ended the transaction (its locks released, nothing installed).
pub(crate) trait ConcurrencyControl: Send + Sync {
    /// Reads a row the transaction has not written: its committed image,
    /// folding the tuple's `writeLV` into `T.LV` (RAW).
    fn read(&self, t: &mut TxnState<'_>, table: TableId, key: RowKey) -> Result<Option<Vec<u8>>, TxnError>;

    /// Before `t` buffers a write of the row: its image as `t` sees it (for
    /// the existence checks of put, insert and delete).
    fn write_intent(
        &self,
        t: &mut TxnState<'_>,
        table: TableId,
        key: RowKey,
    ) -> Result<Option<Vec<u8>>, TxnError>;

    /// Commits: the log record (none if read-only), `T.LV[i]` set to its
    /// LSN, the writes installed and the tuples' LVs updated.
    fn commit(&self, t: &mut TxnState<'_>) -> Result<CommitTicket, TxnError>;

    /// Ends `t` without writing.
    fn abort(&self, t: &mut TxnState<'_>);

    /// The error to report for `e`, which `t`'s own logic raised (a row
    /// missing or already there): under OCC a transaction may have read
    /// rows that changed since, and then the real cause is a conflict.
    fn cause(&self, _t: &TxnState<'_>, e: TxnError) -> TxnError {
        e
    }
}

/// The scheme of `kind`.
pub(crate) fn open(kind: CcKind) -> Box<dyn ConcurrencyControl> {
    match kind {
        CcKind::TwoPlNoWait => Box::new(two_pl::TwoPlNoWait),
        CcKind::Occ => Box::new(occ::Occ),
    }
}
