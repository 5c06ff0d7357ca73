//! Identifiers shared by the layers above: [`TxnId`], the transaction id the
//! log layers write into their records (and the crash oracle of
//! `strata-crashtest` keys its transactions by).

use std::fmt;

/// Identifier of a transaction.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TxnId(pub u64);

impl fmt::Display for TxnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T{}", self.0)
    }
}
