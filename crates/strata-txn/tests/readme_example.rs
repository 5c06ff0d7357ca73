//! The README's embedding example is the doc test of `src/db.rs`, line for
//! line, so the README shows code that compiles and runs.

#[test]
fn the_readme_example_is_the_doc_test() {
    let readme = include_str!("../../../README.md");
    let db = include_str!("../src/db.rs");
    let doc: Vec<&str> = db
        .lines()
        .skip_while(|l| *l != "//! ```")
        .skip(1)
        .take_while(|l| *l != "//! ```")
        .map(|l| l.strip_prefix("//! ").unwrap_or(l.trim_start_matches("//!")))
        .collect();
    assert!(doc.len() >= 10, "the doc test of db.rs: {doc:?}");
    let section = readme.split("## Transactional tables (embedded)").nth(1).expect("the README section");
    let code: Vec<&str> =
        section.lines().skip_while(|l| *l != "```rust").skip(1).take_while(|l| *l != "```").collect();
    assert_eq!(code, doc, "README.md's example differs from the doc test of crates/strata-txn/src/db.rs");
}
