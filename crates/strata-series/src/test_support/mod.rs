//! Helpers shared by the unit tests of several modules: reading the tables
//! of `docs/format/*.md` (`format_doc`) and the fuzz smoke test of the
//! flag-prefixed fuzz entries (`fuzz_smoke`).

pub(crate) mod format_doc;
pub(crate) mod fuzz_smoke;
