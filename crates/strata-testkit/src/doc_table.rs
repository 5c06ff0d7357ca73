//! Reads Markdown tables out of the format documents in `docs/format/`, for
//! the tests that keep every format's code and document in agreement
//! (DESIGN.md section 8). One parser serves every crate's agreement test
//! (moved here from `strata_testkit::doc_table`, with the series crate's
//! `constant` and `check_fields` helpers).

/// The first table after the heading line `heading` (e.g. `"## Header"`, or
/// part of a heading line's text),
/// up to the next heading: one row per line, header row included, the
/// separator row dropped, cells trimmed and stripped of backticks.
/// Panics naming the heading if the document lacks it (a test helper).
pub fn markdown_table(doc: &str, heading: &str) -> Vec<Vec<String>> {
    // The heading line itself, or else the first heading line containing it
    // (`"Header"` finds `### Header (32 bytes)`; a caption line above a table
    // serves as well).
    let mut offset = 0;
    let mut found = None;
    let mut fallback = None;
    for line in doc.split_inclusive('\n') {
        let text = line.trim_end();
        if text == heading {
            found = Some(offset + line.len());
            break;
        }
        if fallback.is_none() && text.contains(heading) {
            fallback = Some(offset + line.len());
        }
        offset += line.len();
    }
    let body_start =
        found.or(fallback).unwrap_or_else(|| panic!("the document lacks the section {heading:?}"));
    let rest = &doc[body_start..];
    let end = rest.find("\n#").unwrap_or(rest.len());
    rest[..end]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.starts_with("|-") && !l.starts_with("| -"))
        .map(|l| l.trim().trim_matches('|').split('|').map(|c| c.trim().replace('`', "")).collect())
        .collect()
}

/// The second cell of the row whose first cell is `name`, in the table
/// under `heading` (a constants table: `name | value | ...`). Panics naming
/// the constant if the document lacks it (a test helper).
pub fn table_value(doc: &str, heading: &str, name: &str) -> String {
    markdown_table(doc, heading)
        .into_iter()
        .find(|row| row.first().map(String::as_str) == Some(name))
        .and_then(|row| row.get(1).cloned())
        .unwrap_or_else(|| panic!("{heading}: constant {name} missing from the document"))
}

/// Checks a field table against the code's fields `(name, offset, size)`,
/// given in layout order. The table's `offset`, `size` and `name` (or
/// `field`) columns are found by its header row. Every field has its row with that offset
/// and size (`usize::MAX`: a variable size, not checked), each field starts
/// where the one before ends, the table has no other rows, and with `total`
/// the fields end there. Panics naming the heading and field (a test helper).
pub fn check_field_table(doc: &str, heading: &str, fields: &[(&str, usize, usize)], total: Option<usize>) {
    let rows = markdown_table(doc, heading);
    let column = |titles: &[&str]| {
        rows[0]
            .iter()
            .position(|c| titles.contains(&c.as_str()))
            .unwrap_or_else(|| panic!("{heading}: no {titles:?} column"))
    };
    let (offset_col, size_col) = (column(&["offset"]), column(&["size"]));
    let name_col = column(&["name", "field"]);
    assert_eq!(rows.len() - 1, fields.len(), "{heading}: the doc has exactly these fields");
    let mut end = 0usize;
    for &(name, offset, size) in fields {
        let row = rows[1..]
            .iter()
            .find(|r| r.get(name_col).map(String::as_str) == Some(name))
            .unwrap_or_else(|| panic!("{heading}: field {name} missing from the doc"));
        assert_eq!(row[offset_col], offset.to_string(), "{heading}: offset of {name}");
        if size != usize::MAX {
            assert_eq!(row[size_col], size.to_string(), "{heading}: size of {name}");
        }
        assert_eq!(offset, end, "{heading}: {name} does not follow the previous field");
        end = offset.saturating_add(size);
    }
    if let Some(total) = total {
        assert_eq!(end, total, "{heading}: the fields do not fill {total} bytes");
    }
}

/// The value column of constant `name` in the `## Constants` table.
pub fn constant(doc: &str, name: &str) -> String {
    table_value(doc, "## Constants", name)
}

/// [`check_field_table`] on a table whose columns are exactly
/// `offset | size | type | name | meaning`, whose fields fill `total` bytes.
pub fn check_fields(doc: &str, heading: &str, fields: &[(&str, usize, usize)], total: usize) {
    let rows = markdown_table(doc, heading);
    assert_eq!(rows[0], ["offset", "size", "type", "name", "meaning"], "{heading}: column layout");
    let names: Vec<&str> = rows[1..].iter().map(|r| r[3].as_str()).collect();
    let expected: Vec<&str> = fields.iter().map(|f| f.0).collect();
    assert_eq!(names, expected, "{heading}: field order");
    check_field_table(doc, heading, fields, Some(total));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_table_under_its_heading_only() {
        let doc = "# T\n\n## A\n\n| k | v |\n|---|---|\n| `x` | 1 |\n\n## B\n\n| k |\n| - |\n| y |\n";
        assert_eq!(markdown_table(doc, "## A"), vec![vec!["k", "v"], vec!["x", "1"]]);
        assert_eq!(markdown_table(doc, "## B"), vec![vec!["k"], vec!["y"]]);
        let fields = "## F\n\n| offset | size | name |\n|---|---|---|\n| 0 | 8 | a |\n| 8 | 4 | b |\n";
        check_field_table(fields, "## F", &[("a", 0, 8), ("b", 8, 4)], Some(12));
        check_field_table(fields, "## F", &[("a", 0, 8), ("b", 8, usize::MAX)], None);
        let gap =
            std::panic::catch_unwind(|| check_field_table(fields, "## F", &[("a", 0, 4), ("b", 8, 4)], None));
        assert!(gap.is_err(), "a gap between fields is reported");
        assert_eq!(markdown_table(doc, "B"), vec![vec!["k"], vec!["y"]], "part of a heading finds it");
        assert!(
            std::panic::catch_unwind(|| markdown_table(doc, "## C")).is_err(),
            "a missing section panics"
        );
    }

    #[test]
    fn table_reads_the_first_table_of_a_section() {
        let doc = "# T\n## A\ntext\n| x | `y` |\n|---|---|\n| `1` | 2 |\n\n| other | table |\n## B\n| z |\n";
        assert_eq!(markdown_table(doc, "## A"), [["x", "y"], ["1", "2"]]);
        assert_eq!(markdown_table(doc, "## B"), [["z"]]);
    }
}
