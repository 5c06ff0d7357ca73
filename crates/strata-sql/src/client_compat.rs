//! Rewrites of queries clients send that DataFusion cannot plan as sent.
//!
//! Grafana's PostgreSQL data source lists tables with a subquery that
//! expands the session's `search_path` with `current_setting`,
//! `generate_series` and array subscripts. datafusion-pg-catalog replaces
//! that subquery with `''`, so Grafana's table list comes back empty. Every
//! Strata table lives in `public`, the whole search path, so the subquery is
//! replaced by `'public'` first, whatever its whitespace.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// Grafana's search-path subquery (grafana-postgresql-datasource,
/// `postgresMetaQuery.ts`), whitespace-insensitive.
const GRAFANA_SEARCH_PATH: &str = r#"SELECT CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
FROM generate_series(array_lower(string_to_array(current_setting('search_path'),','),1),
array_upper(string_to_array(current_setting('search_path'),','),1)) as i,
string_to_array(current_setting('search_path'),',') s"#;

/// A regex matching `pattern` with any whitespace (or none) between its
/// characters, case-insensitively.
fn loose(pattern: &str) -> Regex {
    let mut re = String::from("(?i)");
    for c in pattern.chars().filter(|c| !c.is_whitespace()) {
        re.push_str(&regex::escape(&c.to_string()));
        re.push_str(r"\s*");
    }
    Regex::new(&re).expect("an escaped pattern is a regex")
}

static SEARCH_PATH: LazyLock<Regex> = LazyLock::new(|| loose(GRAFANA_SEARCH_PATH));

/// `query` with the known client subqueries replaced.
pub fn rewrite(query: &str) -> Cow<'_, str> {
    SEARCH_PATH.replace_all(query, "'public' ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grafanas_search_path_subquery_becomes_public_whatever_its_layout() {
        // Grafana sends it indented over many lines (the replay in
        // strata-cli's sql_pgwire.rs); here it is on one line, spaced otherwise.
        let sent = "SELECT t FROM x WHERE s IN (SELECT CASE WHEN trim( s[i] )='\"$user\"' THEN user ELSE trim(s[i]) END \
                    FROM generate_series(array_lower(string_to_array(current_setting('search_path'), ','), 1), \
                    array_upper(string_to_array(current_setting('search_path'), ','), 1)) AS i, \
                    string_to_array(current_setting('search_path'), ',') s)";
        let got = rewrite(sent);
        assert_eq!(got, "SELECT t FROM x WHERE s IN ('public' )");
        assert!(!got.contains("current_setting"));
    }

    #[test]
    fn other_queries_pass_unchanged() {
        assert!(matches!(rewrite("SELECT 1"), Cow::Borrowed("SELECT 1")));
    }
}
