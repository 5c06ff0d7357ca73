//! Halloc (lsm-pmem.txt section 3.4) — being written.
