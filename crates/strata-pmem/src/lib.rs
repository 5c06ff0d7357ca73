//! Persistent-memory layer (DESIGN.md sections 1 and 3).
//!
//! Owns: [`Region`] (a byte-addressable persistent region addressed by
//! [`RegionOffset`], never by pointer), the persist primitives (`flush`,
//! `fence`, `persist`, failure-atomic aligned 8-byte stores), the backends
//! (`dax`, `emulated`, `msync`, `sim`), persist accounting ([`PersistStats`]),
//! the crash simulator and the crash images of its crash points ([`crash`]),
//! and the Halloc allocator ([`halloc`], lsm-pmem.txt section 3.4). The crash
//! harness that checks those images against the oracle lives in
//! `strata-crashtest`.
//!
//! All `unsafe` code of Strata lives in this crate (and the media crate's file
//! preallocation), each block with a `// SAFETY:` comment.

pub mod crash;
mod error;
pub mod halloc;
mod mapped;
mod offset;
mod persist_insn;
mod region;
mod sim;
mod stats;

pub use error::PmemError;
pub use offset::{RegionOffset, CACHE_LINE_BYTES, MEDIA_BLOCK_BYTES, WORD_BYTES};
pub use persist_insn::{detected_flush_instruction, FlushInstruction};
pub use region::{PmemMode, Region, RegionOptions, UnknownPmemMode};
pub use sim::{SimOpKind, SimRegion};
pub use stats::{thread_persist_stats, PersistStats};
