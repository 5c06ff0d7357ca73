//! [`CrashCheckError`]: why a crash protocol could not check a recovered
//! image (recovery itself failed, or the recovered state is inconsistent in
//! a way the oracle's counts do not express). The harnesses count such an
//! image as `partial` and report the error as its failure description.

use std::error::Error;
use std::fmt;

/// A crash image that recovery could not bring to a checkable state.
#[derive(Debug)]
pub enum CrashCheckError {
    /// A recovery step (open, parse, replay, resume, reopen) returned an
    /// error of the layer under test.
    Step { step: &'static str, source: Box<dyn Error + Send + Sync> },
    /// No file-system state was captured at or before the crash point.
    NoFileSystemState,
    /// A recovered event or entry lacks the identity the workload gave it.
    Unidentified(String),
    /// A recovery or check step panicked (`what`: the step).
    Panicked { what: String, message: String },
    /// A recovery step ran past its time limit (a deadlock?).
    TimedOut { what: String, secs: u64 },
    /// The recovered state contradicts itself (a transaction twice, LSNs out
    /// of order, a second recovery disagreeing with the first, ...).
    Inconsistent(String),
}

impl CrashCheckError {
    /// `map_err(CrashCheckError::step("recovery"))`: wraps a layer's error.
    pub fn step<E: Error + Send + Sync + 'static>(step: &'static str) -> impl FnOnce(E) -> CrashCheckError {
        move |e| CrashCheckError::Step { step, source: Box::new(e) }
    }

    /// [`CrashCheckError::Inconsistent`] from anything printable.
    pub fn inconsistent(what: impl fmt::Display) -> CrashCheckError {
        CrashCheckError::Inconsistent(what.to_string())
    }
}

impl fmt::Display for CrashCheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CrashCheckError::Step { step, source } => write!(f, "{step}: {source}"),
            CrashCheckError::NoFileSystemState => write!(f, "no file system state before the crash point"),
            CrashCheckError::Unidentified(what) => write!(f, "unidentified {what}"),
            CrashCheckError::Panicked { what, message } => write!(f, "{what} panicked: {message}"),
            CrashCheckError::TimedOut { what, secs } => {
                write!(f, "{what} did not finish in {secs} s (a deadlock?)")
            }
            CrashCheckError::Inconsistent(what) => f.write_str(what),
        }
    }
}

impl Error for CrashCheckError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            CrashCheckError::Step { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

/// The verdict of one checked image: the oracle's counts and a description
/// of the first violation.
pub type CheckResult = Result<(crate::oracle::OracleCounts, Option<String>), CrashCheckError>;
