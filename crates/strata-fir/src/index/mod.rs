//! FIR's DRAM index (fir.txt 4.1, 4.3.1): a B+-tree per index shard whose
//! nodes carry an access stamp (`UT`, the largest txnId that wrote below
//! them), set on the write path, so an incremental checkpoint can skip
//! every subtree nobody wrote since the last one ([`btree`]); a shard
//! ([`shard`]) is that tree over its keys' states plus a hash of the keys
//! read since open, for reads.

pub mod btree;
pub mod shard;
