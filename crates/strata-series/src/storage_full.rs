//! Telling an out-of-space failure from other engine errors: the write
//! path answers it with HTTP 507 naming the medium, and it is transient
//! (nothing is poisoned: the failed request was not acknowledged, and the
//! next write retries once space is freed).

use std::fmt;
use std::io;

use strata_declog::DeclogError;
use strata_log::LogError;

use crate::error::EngineError;

/// The medium that ran out of space.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FullMedium {
    /// The file system of the data directory (block files, manifest, SSD log).
    Disk,
    /// The PMem log (a serial ring or a DecLog stream), when no checkpoint
    /// could free it.
    PmemLog,
}

impl fmt::Display for FullMedium {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FullMedium::Disk => "disk",
            FullMedium::PmemLog => "PMem log",
        })
    }
}

fn io_full(e: &io::Error) -> Option<FullMedium> {
    (e.kind() == io::ErrorKind::StorageFull).then_some(FullMedium::Disk)
}

impl EngineError {
    /// `Some(medium)` when this error is a medium out of space.
    pub fn storage_full(&self) -> Option<FullMedium> {
        match self {
            EngineError::Io(e) | EngineError::Log(LogError::Io(e)) => io_full(e),
            EngineError::Log(LogError::Full { .. }) | EngineError::Declog(DeclogError::Full { .. }) => {
                Some(FullMedium::PmemLog)
            }
            EngineError::Storage { source, .. } => source.downcast_ref::<io::Error>().and_then(io_full),
            EngineError::GroupFailed(inner) => inner.storage_full(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_space_errors_name_their_medium_and_others_are_not_full() {
        let enospc = || io::Error::new(io::ErrorKind::StorageFull, "no space left on device");
        assert_eq!(EngineError::Io(enospc()).storage_full(), Some(FullMedium::Disk));
        assert_eq!(EngineError::Log(LogError::Io(enospc())).storage_full(), Some(FullMedium::Disk));
        let wrapped = EngineError::Storage { what: "block file".into(), source: Box::new(enospc()) };
        assert_eq!(wrapped.storage_full(), Some(FullMedium::Disk));
        let ring = EngineError::Log(LogError::Full { needed_bytes: 10, free_bytes: 1 });
        assert_eq!(ring.storage_full(), Some(FullMedium::PmemLog));
        assert_eq!(
            EngineError::GroupFailed(std::sync::Arc::new(ring)).storage_full(),
            Some(FullMedium::PmemLog)
        );
        assert_eq!(EngineError::Io(io::Error::other("bad sector")).storage_full(), None);
        assert_eq!(FullMedium::PmemLog.to_string(), "PMem log");
    }
}
