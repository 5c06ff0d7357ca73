//! Writing the Prometheus text exposition format (0.0.4): the `# HELP` and
//! `# TYPE` header of a metric family, a whole single-sample family, and
//! label value escaping. The one writer behind the server's own metrics
//! ([`crate::metrics`]) and the engine's (`EngineHooks::metrics_text` in
//! the `strata` binary).

use std::fmt::{Display, Write as _};

/// Appends the `# HELP` and `# TYPE` lines of metric family `name`
/// (`kind`: `counter`, `gauge`, `histogram`).
pub fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    writeln!(out, "# HELP {name} {help}").expect("write to String");
    writeln!(out, "# TYPE {name} {kind}").expect("write to String");
}

/// Appends one unlabelled sample `name value`.
pub fn sample(out: &mut String, name: &str, value: impl Display) {
    writeln!(out, "{name} {value}").expect("write to String");
}

/// Appends a family of one unlabelled sample: its header, then `name value`.
pub fn metric(out: &mut String, name: &str, kind: &str, help: &str, value: impl Display) {
    header(out, name, kind, help);
    sample(out, name, value);
}

/// Escapes a label value (backslash, double quote, newline).
pub fn escape_label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_sample_family_has_help_type_and_value() {
        let mut out = String::new();
        metric(&mut out, "x_total", "counter", "Things counted.", 3);
        assert_eq!(out, "# HELP x_total Things counted.\n# TYPE x_total counter\nx_total 3\n");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
