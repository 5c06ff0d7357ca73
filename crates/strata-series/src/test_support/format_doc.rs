//! Reading the Markdown tables of a format document (`docs/format/*.md`), so
//! that each format's tests can check the document against the code.

/// The rows of the first table after `heading` and before the next heading
/// (cells trimmed, backticks removed), header row included.
pub(crate) fn table(doc: &str, heading: &str) -> Vec<Vec<String>> {
    strata_media::doc_table::markdown_table(doc, heading)
}

/// The value column of constant `name` in the `## Constants` table.
pub(crate) fn constant(doc: &str, name: &str) -> String {
    let rows = table(doc, "## Constants");
    let row =
        rows.iter().find(|r| r[0] == name).unwrap_or_else(|| panic!("constant {name} missing from the doc"));
    row[1].clone()
}

/// Checks a field table: each `(name, offset, size)` has its row, the rows
/// are exactly these fields, and they tile `total` bytes.
pub(crate) fn check_fields(doc: &str, heading: &str, fields: &[(&str, usize, usize)], total: usize) {
    let rows = table(doc, heading);
    assert_eq!(rows[0], ["offset", "size", "type", "name", "meaning"], "{heading}: column layout");
    assert_eq!(rows.len() - 1, fields.len(), "{heading}: the doc has exactly these fields");
    let mut next = 0;
    for (row, &(name, offset, size)) in rows[1..].iter().zip(fields) {
        assert_eq!(row[3], name, "{heading}: field order");
        assert_eq!(row[0], offset.to_string(), "{heading}: offset of {name}");
        assert_eq!(row[1], size.to_string(), "{heading}: size of {name}");
        assert_eq!(offset, next, "{heading}: {name} leaves no gap");
        next = offset + size;
    }
    assert_eq!(next, total, "{heading}: fields cover the structure");
}

#[test]
fn table_reads_the_first_table_of_a_section() {
    let doc = "# T\n## A\ntext\n| x | `y` |\n|---|---|\n| `1` | 2 |\n\n| other | table |\n## B\n| z |\n";
    assert_eq!(table(doc, "## A"), [["x", "y"], ["1", "2"]]);
    assert_eq!(table(doc, "## B"), [["z"]]);
}
