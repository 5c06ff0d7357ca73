//! Strict two-phase locking, NO_WAIT, with Taurus's LV tracking
//! (taurus.txt Algorithm 1): a read takes a shared lock and folds the
//! tuple's `writeLV` into `T.LV`; a write takes an exclusive lock and also
//! folds its `readLV` when commands are logged (WAR); the commit writes
//! the record and releases the locks as it installs (early lock release).

use super::ConcurrencyControl;
use crate::error::TxnError;
use crate::ids::{RowKey, TableId};
use crate::log::{CommitTicket, LogMode};
use crate::store::LockMode;
use crate::txn::TxnState;

pub struct TwoPlNoWait;

/// Takes the lock, or ends the transaction on a conflict.
fn lock_or_abort(
    t: &mut TxnState<'_>,
    table: TableId,
    key: RowKey,
    mode: LockMode,
) -> Result<Option<Vec<u8>>, TxnError> {
    let track = t.db.logging.tracks_lv();
    match t.db.store.lock(table, key, mode, &mut t.lv, track) {
        Ok(row) => {
            t.held.push((table, key, mode));
            Ok(row)
        }
        Err(e) => {
            t.release_all(None);
            Err(e)
        }
    }
}

impl ConcurrencyControl for TwoPlNoWait {
    fn read(&self, t: &mut TxnState<'_>, table: TableId, key: RowKey) -> Result<Option<Vec<u8>>, TxnError> {
        if t.held(table, key).is_some() {
            return Ok(t.db.store.row_locked(table, key));
        }
        lock_or_abort(t, table, key, LockMode::Shared)
    }

    fn write_intent(
        &self,
        t: &mut TxnState<'_>,
        table: TableId,
        key: RowKey,
    ) -> Result<Option<Vec<u8>>, TxnError> {
        // WAR dependencies matter only when commands are re-run (taurus.txt
        // 2.2): data logging's writers skip the tuples' readLVs.
        let track = t.db.logging.tracks_lv();
        let war = t.db.mode == LogMode::Command;
        match t.held(table, key) {
            Some(LockMode::Exclusive | LockMode::ExclusiveNoWar) => {}
            Some(LockMode::Shared) => {
                if let Err(e) = t.db.store.upgrade(table, key, &mut t.lv, track && war) {
                    t.release_all(None);
                    return Err(e);
                }
                for h in &mut t.held {
                    if (h.0, h.1) == (table, key) {
                        h.2 = LockMode::Exclusive;
                    }
                }
            }
            None => {
                let mode = if war { LockMode::Exclusive } else { LockMode::ExclusiveNoWar };
                return lock_or_abort(t, table, key, mode);
            }
        }
        Ok(match t.buffered_row(table, key) {
            Some(row) => row,
            None => t.db.store.row_locked(table, key),
        })
    }

    fn commit(&self, t: &mut TxnState<'_>) -> Result<CommitTicket, TxnError> {
        // Scanned rows stay share-locked; a row that entered a scanned range
        // shows in the index (3.4's scan-twice).
        t.log_and_release()
    }

    fn abort(&self, t: &mut TxnState<'_>) {
        t.release_all(None);
    }
}
