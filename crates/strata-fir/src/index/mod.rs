//! FIR's DRAM index (fir.txt 4.1, 4.3.1): a B+-tree per index shard whose
//! nodes carry an access stamp (`UT`, the largest txnId that wrote below
//! them), set on the write path, so an incremental checkpoint can skip
//! every subtree nobody wrote since the last one.

pub mod btree;
