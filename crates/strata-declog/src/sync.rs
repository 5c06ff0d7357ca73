//! The synchronisation primitives of the log queues, thread snapshots,
//! flushing pipeline and tickets (declog.txt sections 4.2-4.3): the shared
//! shim of `strata-sync` (parking_lot and std, or shuttle's with the
//! `shuttle` feature; see that crate for shuttle's semantics).

pub(crate) use strata_sync::*;
