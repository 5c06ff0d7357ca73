//! FIR (fir.txt): log-free multi-version transactional tables on PMem.
//!
//! Built so far (section 4.1, 4.2.1, 4.4.1):
//! - time-ordered storage (`storage`): a region per worker per table, a
//!   chain of 2,048-version PMem blocks taken from Halloc, each with its
//!   256-byte update map and a DRAM tile of tuple headers ([`tile`]);
//!   logical addresses (region, block, slot) ([`addr`]);
//! - MVTO transactions ([`txn`]) whose versions are persisted where they
//!   lie (Algorithm 1: lines flushed as written, one fence at commit),
//!   with no log;
//! - group commit through a queue that advances each worker's LCTT entry
//!   in PMem, one fence per batch (`commit`);
//! - recovery ([`db`]): redo the versions at or below their region's LCTT
//!   entry, undo (turn into holes) the rest, rebuild the index bottom-up;
//! - the DRAM index ([`index`]): a hand-written B+-tree per latch shard
//!   whose nodes carry access stamps set on the write path (4.3.1's
//!   `MarkNode`), with the traversal an incremental checkpoint skips
//!   untouched subtrees by, and the bottom-up build of 4.4.2; beside it a
//!   hash of the keys read since open, for reads;
//! - index-leaf checkpoints ([`checkpoint`], 4.3.1-4.3.2): full, or
//!   incremental by the stamps and merged with the previous one, in two
//!   halves behind a selector word; recovery then scans only the versions
//!   after the checkpoint's time (O(m)) and rebuilds each shard bottom-up
//!   on several threads; the time cost model choosing between them
//!   ([`cost`], 4.3.3).
//!
//! DRAM tiles are rebuilt lazily: a block's tile on first touch, a
//! recovered version's header from its slot when first read. The crash
//! lines are `strata-crashtest`'s `fir-*`; `strata bench fir-recovery`
//! measures recovery against a Zen-style scan of the whole heap
//! ([`RunOptions::scan_whole_heap`]).
//!
//! Checkpoints are taken on request (`FirDb::checkpoint`), by the
//! checkpoint thread (`RunOptions::checkpoint_every`), and at a clean
//! shutdown (`FirDb::close`).
//!
//! The transactional-table API (`strata_txn::access`): [`FirEngine`] runs
//! stored procedures on FIR ([`engine`]); [`DramDb`] is fir.txt 5.1's
//! DRAM-DB baselines in the same engine, over DRAM, without or with a
//! redo log ([`baseline`]). `strata bench oltp --engine` runs them.
//!
//! Not built yet: long-transaction regions (4.2.2) and garbage collection
//! (4.5). The on-media format is `docs/format/fir.md`.

#![forbid(unsafe_code)]

pub mod addr;
pub mod baseline;
pub mod checkpoint;
mod commit;
pub mod cost;
pub mod db;
pub mod engine;
pub mod error;
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod index;
pub mod layout;
mod storage;
pub mod tile;
pub mod txn;

pub use baseline::{DramDb, DramTicket};
pub use checkpoint::{CheckpointKind, CheckpointReport};
pub use db::{FirDb, FirOptions, FirRecoveryReport, FirTicket, PlantedBug, RunOptions};
pub use engine::{FirEngine, FirLoader};
pub use error::FirError;
pub use txn::FirTxn;
