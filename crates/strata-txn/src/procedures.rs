//! Stored procedures registered by id, written against [`RowAccess`] so
//! every transactional engine runs them; for command logging (taurus.txt
//! 3.2: "the high-level command"): a transaction run through
//! [`crate::TxnDb::run`] logs the procedure's id and arguments instead of
//! its writes, and recovery re-runs it (without locks, in the order the
//! LVs give). A procedure must be deterministic in its arguments and the
//! rows it reads: random choices belong in the arguments.

use std::collections::HashMap;
use std::sync::Arc;

use crate::access::RowAccess;
use crate::error::TxnError;

/// A stored procedure's id, as logged.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProcId(pub u32);

/// A stored procedure: runs its reads and writes in `txn`.
pub type Procedure = Arc<dyn Fn(&mut dyn RowAccess, &[u8]) -> Result<(), TxnError> + Send + Sync>;

/// The procedures a database knows (given at open: recovery needs them).
#[derive(Clone, Default)]
pub struct Procedures {
    by_id: HashMap<ProcId, Procedure>,
}

impl Procedures {
    pub fn new() -> Self {
        Procedures::default()
    }

    /// Registers `f` as procedure `id` (replacing any earlier one).
    pub fn register(
        &mut self,
        id: ProcId,
        f: impl Fn(&mut dyn RowAccess, &[u8]) -> Result<(), TxnError> + Send + Sync + 'static,
    ) -> &mut Self {
        self.by_id.insert(id, Arc::new(f));
        self
    }

    pub fn get(&self, id: ProcId) -> Result<&Procedure, TxnError> {
        self.by_id.get(&id).ok_or(TxnError::UnknownProcedure(id.0))
    }
}
