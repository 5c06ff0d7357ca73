//! Helpers that only tests use, shared by the tests of several crates
//! (issue 13 item 5: test scaffolding out of the libraries). It is a
//! dev-dependency of every crate that uses it and a dependency of none.
//!
//! Owns: [`doc_table`], the reader of the Markdown tables of
//! `docs/format/*.md` with the field-table and constant checks of every
//! format-document agreement test (DESIGN.md section 8); and
//! [`fuzz_smoke`], the stable-toolchain smoke test of a flag-prefixed fuzz
//! entry. The fuzz input reader is not here: fuzz entries are compiled
//! into the libraries under their `fuzz` feature, which cannot use a
//! dev-dependency, so it lives in `strata_media::fuzz_input`.

#![forbid(unsafe_code)]

pub mod doc_table;
pub mod fuzz_smoke;

pub use doc_table::{check_field_table, check_fields, constant, markdown_table, table_value};
pub use fuzz_smoke::{fuzz_smoke_flagged_entry, FUZZ_SMOKE_CASES};
