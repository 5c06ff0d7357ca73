//! Crash test of Halloc (lsm-pmem.txt section 3.4): the allocator's own
//! workload and oracle live beside it in `strata_pmem::halloc`; this module
//! only sizes it for the suite.

pub use strata_pmem::halloc::HallocCrashProtocol;

/// The Halloc workload with `ops` allocations, frees and zone operations.
pub fn halloc_crash(seed: u64, ops: usize) -> HallocCrashProtocol {
    HallocCrashProtocol::new(seed, ops)
}
