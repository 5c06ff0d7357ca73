//! [`Health`]: whether a log failure stopped writes (DESIGN.md section 8:
//! after a write or fsync error the log is never retried). A commit protocol
//! poisons the engine when its log can no longer be trusted to make a
//! commit durable (a failed fsync, a torn device); from then on writes fail
//! with [`EngineError::WritesStopped`] until a restart recovers.

use parking_lot::Mutex;

use crate::error::EngineError;

#[derive(Default)]
pub struct Health {
    poisoned: Mutex<Option<String>>,
}

impl Health {
    /// Stops writes, keeping the first reason.
    pub fn poison(&self, why: impl std::fmt::Display) {
        self.poisoned.lock().get_or_insert_with(|| why.to_string());
    }

    /// Why writes stopped, if they did.
    pub fn stopped_because(&self) -> Option<String> {
        self.poisoned.lock().clone()
    }

    /// `Err(WritesStopped)` once writes stopped.
    pub fn check(&self) -> Result<(), EngineError> {
        match &*self.poisoned.lock() {
            Some(why) => Err(EngineError::WritesStopped { why: why.clone() }),
            None => Ok(()),
        }
    }
}
