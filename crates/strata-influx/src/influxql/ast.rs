//! The InfluxQL syntax tree and its canonical text form. `Display` prints
//! every statement so that parsing the text gives back an equal tree (the
//! fuzz target checks this): identifiers are quoted when they are not
//! plain words or are keywords, strings and regexes are escaped, floats
//! always carry a decimal point, durations use the largest exact unit.

use std::fmt;

use strata_series::retention::PolicySpec;

use super::lexer::keyword;
use super::time::format_duration;

mod into_target;
mod retention;
pub use into_target::IntoTarget;

/// A whole statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    Select(SelectStatement),
    ShowDatabases,
    ShowMeasurements(ShowMeasurements),
    ShowTagKeys(ShowTagKeys),
    ShowTagValues(ShowTagValues),
    ShowFieldKeys(ShowFieldKeys),
    ShowSeries(ShowSeries),
    ShowRetentionPolicies {
        on: Option<String>,
    },
    /// `SHOW SERIES|MEASUREMENT|TAG KEY|FIELD KEY|TAG VALUES [EXACT]
    /// CARDINALITY ...`: the count of what `inner` (the plain SHOW with the
    /// same clauses) lists.
    ShowCardinality {
        of: CardinalityOf,
        exact: bool,
        inner: Box<Statement>,
    },
    /// `CREATE DATABASE name [WITH [DURATION d] [REPLICATION n] [SHARD
    /// DURATION d] [NAME rp]]`: `with` is the policy spec and its name.
    CreateDatabase {
        name: String,
        with: Option<(PolicySpec, Option<String>)>,
    },
    /// `CREATE RETENTION POLICY name ON db DURATION d REPLICATION n [SHARD
    /// DURATION d] [DEFAULT]` (duration and replication always set).
    CreateRetentionPolicy {
        name: String,
        on: String,
        spec: PolicySpec,
    },
    /// `ALTER RETENTION POLICY name ON db` and at least one clause.
    AlterRetentionPolicy {
        name: String,
        on: String,
        spec: PolicySpec,
    },
    /// `DROP RETENTION POLICY name ON db`.
    DropRetentionPolicy {
        name: String,
        on: String,
    },
    DropMeasurement {
        name: String,
    },
    /// `DROP DATABASE name`.
    DropDatabase {
        name: String,
    },
    /// `DROP SERIES [FROM m] [WHERE tag predicates]`: the series leave the
    /// index with their data (no time conditions, as in InfluxDB).
    DropSeries(DeleteStatement),
    Delete(DeleteStatement),
}

impl Statement {
    /// True for statements that only read (InfluxDB accepts only these
    /// with `GET /query`).
    pub fn is_read_only(&self) -> bool {
        !matches!(
            self,
            Statement::CreateDatabase { .. }
                | Statement::CreateRetentionPolicy { .. }
                | Statement::AlterRetentionPolicy { .. }
                | Statement::DropRetentionPolicy { .. }
                | Statement::DropMeasurement { .. }
                | Statement::DropDatabase { .. }
                | Statement::DropSeries(_)
                | Statement::Delete(_)
        )
    }
}

/// What a `SHOW ... CARDINALITY` counts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CardinalityOf {
    Series,
    Measurements,
    TagKeys,
    FieldKeys,
    TagValues,
}

impl CardinalityOf {
    /// The plain SHOW's keywords and the CARDINALITY form's.
    fn keywords(self) -> (&'static str, &'static str) {
        match self {
            CardinalityOf::Series => ("SHOW SERIES", "SHOW SERIES"),
            CardinalityOf::Measurements => ("SHOW MEASUREMENTS", "SHOW MEASUREMENT"),
            CardinalityOf::TagKeys => ("SHOW TAG KEYS", "SHOW TAG KEY"),
            CardinalityOf::FieldKeys => ("SHOW FIELD KEYS", "SHOW FIELD KEY"),
            CardinalityOf::TagValues => ("SHOW TAG VALUES", "SHOW TAG VALUES"),
        }
    }
}

/// `[db.[rp].]measurement`.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasurementRef {
    pub database: Option<String>,
    pub retention_policy: Option<String>,
    pub name: String,
}

/// One source of `FROM a, /re/`.
#[derive(Clone, Debug, PartialEq)]
pub enum FromSource {
    Measurement(MeasurementRef),
    /// `/re/`: every measurement of the database whose name matches.
    Regex(String),
    /// `(SELECT ...)`: the inner statement's series, read as measurements.
    Subquery(Box<SelectStatement>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct SelectStatement {
    pub fields: Vec<Field>,
    /// The measurement read. With `from_sources` it is only the first
    /// source's name (empty for a regex) and the executor reads each source.
    pub from: MeasurementRef,
    /// `FROM a, b` or `FROM /re/`: every source, when there is more than
    /// one or a regex; empty for the plain `FROM m`.
    pub from_sources: Vec<FromSource>,
    pub condition: Option<Expr>,
    pub dimensions: Vec<Dimension>,
    pub fill: Fill,
    pub order_desc: bool,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
    /// `SLIMIT n`: at most n series.
    pub slimit: Option<u64>,
    /// `SOFFSET n`: skip the first n series.
    pub soffset: Option<u64>,
    /// `tz('Area/City')`: GROUP BY time windows aligned in this zone and
    /// RFC3339 times printed with its offset.
    pub tz: Option<chrono_tz::Tz>,
    /// `SELECT ... INTO [db.][rp.]m FROM ...`: the rows are written as
    /// points of this measurement instead of returned.
    pub into: Option<IntoTarget>,
}

/// One item of the SELECT list.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub expr: Expr,
    pub alias: Option<String>,
}

/// One item of GROUP BY.
#[derive(Clone, Debug, PartialEq)]
pub enum Dimension {
    /// `time(interval[, offset])`, nanoseconds; a zero offset is not printed.
    Time {
        interval_ns: i64,
        offset_ns: i64,
    },
    Tag(String),
    /// `*`: every tag key.
    AllTags,
}

/// `fill(...)`; `Null` is the default and is not printed.
#[derive(Clone, Debug, PartialEq)]
pub enum Fill {
    Null,
    None,
    Previous,
    /// Linear interpolation between the windows around an empty one.
    Linear,
    Integer(i64),
    Float(f64),
}

/// `::field` / `::tag` on a variable reference.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RefKind {
    Field,
    Tag,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Or,
    And,
    Eq,
    Neq,
    Lt,
    Lte,
    Gt,
    Gte,
    EqRegex,
    NeqRegex,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

impl BinaryOp {
    /// InfluxQL precedence: OR < AND < comparisons < + - < * / %.
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq
            | BinaryOp::Neq
            | BinaryOp::Lt
            | BinaryOp::Lte
            | BinaryOp::Gt
            | BinaryOp::Gte
            | BinaryOp::EqRegex
            | BinaryOp::NeqRegex => 4,
            BinaryOp::Add | BinaryOp::Sub => 5,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod => 6,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "OR",
            BinaryOp::And => "AND",
            BinaryOp::Eq => "=",
            BinaryOp::Neq => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Lte => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Gte => ">=",
            BinaryOp::EqRegex => "=~",
            BinaryOp::NeqRegex => "!~",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
        }
    }

    pub fn is_comparison(self) -> bool {
        self.precedence() == 4
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    VarRef {
        name: String,
        kind: Option<RefKind>,
    },
    Wildcard,
    /// A function call; the name is lower case (`MEAN(x)` is `mean(x)`).
    Call {
        name: String,
        args: Vec<Expr>,
    },
    Integer(i64),
    Number(f64),
    Str(String),
    Bool(bool),
    /// A duration literal in nanoseconds.
    Duration(i64),
    /// A regex literal's pattern (validated when parsed).
    Regex(String),
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// Unary minus on something that is not a number literal.
    Neg(Box<Expr>),
    Paren(Box<Expr>),
}

impl Expr {
    pub fn binary(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
        Expr::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) }
    }

    pub fn var(name: &str) -> Expr {
        Expr::VarRef { name: name.to_string(), kind: None }
    }

    /// Is this `time` (case-insensitive, no `::` kind)?
    pub fn is_time_ref(&self) -> bool {
        matches!(self, Expr::VarRef { name, kind: None } if name.eq_ignore_ascii_case("time"))
    }
}

/// `SHOW MEASUREMENTS [ON db] [WITH MEASUREMENT op name|/re/] [WHERE] [LIMIT] [OFFSET]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ShowMeasurements {
    pub on: Option<String>,
    pub with_measurement: Option<NameMatch>,
    pub condition: Option<Expr>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// The clauses `SHOW TAG KEYS` and `SHOW SERIES` share:
/// `[ON db] [FROM m] [WHERE] [LIMIT] [OFFSET]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ShowClauses {
    pub on: Option<String>,
    pub from: Option<MeasurementRef>,
    pub condition: Option<Expr>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// `SHOW TAG KEYS [ON db] [FROM m] [WHERE] [LIMIT] [OFFSET]`.
pub type ShowTagKeys = ShowClauses;

/// `SHOW SERIES [ON db] [FROM m] [WHERE] [LIMIT] [OFFSET]`.
pub type ShowSeries = ShowClauses;

/// `SHOW TAG VALUES [ON db] [FROM m] WITH KEY ... [WHERE] [LIMIT] [OFFSET]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ShowTagValues {
    pub on: Option<String>,
    pub from: Option<MeasurementRef>,
    pub key: NameMatch,
    pub condition: Option<Expr>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// `SHOW FIELD KEYS [ON db] [FROM m] [LIMIT] [OFFSET]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ShowFieldKeys {
    pub on: Option<String>,
    pub from: Option<MeasurementRef>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// `DELETE [FROM m] [WHERE ...]` (at least one of the two).
#[derive(Clone, Debug, PartialEq)]
pub struct DeleteStatement {
    pub from: Option<MeasurementRef>,
    pub condition: Option<Expr>,
}

/// How `WITH KEY` / `WITH MEASUREMENT` select names.
#[derive(Clone, Debug, PartialEq)]
pub enum NameMatch {
    Eq(String),
    Neq(String),
    Regex(String),
    NotRegex(String),
    In(Vec<String>),
}

/// Writes an identifier, double-quoted unless it is a plain word that is
/// not a keyword.
pub struct Ident<'a>(pub &'a str);

impl fmt::Display for Ident<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        let plain = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && keyword(s).is_none();
        if plain {
            f.write_str(s)
        } else {
            write_quoted(f, s, '"')
        }
    }
}

fn write_quoted(f: &mut fmt::Formatter<'_>, s: &str, quote: char) -> fmt::Result {
    write!(f, "{quote}")?;
    for c in s.chars() {
        match c {
            '\n' => f.write_str("\\n")?,
            '\\' => f.write_str("\\\\")?,
            c if c == quote => write!(f, "\\{c}")?,
            c => write!(f, "{c}")?,
        }
    }
    write!(f, "{quote}")
}

/// Writes a regex literal: `/` becomes `\/`; escape pairs are copied.
fn write_regex(f: &mut fmt::Formatter<'_>, pattern: &str) -> fmt::Result {
    f.write_str("/")?;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                f.write_str("\\")?;
                if let Some(next) = chars.next() {
                    write!(f, "{next}")?;
                }
            }
            '/' => f.write_str("\\/")?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("/")
}

/// A float that re-scans as a float: always with a decimal point.
pub fn format_float(v: f64) -> String {
    let text = format!("{v:?}");
    if text.contains('.') || !text.chars().any(|c| c.is_ascii_digit()) {
        return text;
    }
    match text.find('e') {
        Some(at) => format!("{}.0{}", &text[..at], &text[at..]),
        None => format!("{text}.0"),
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::VarRef { name, kind } => {
                write!(f, "{}", Ident(name))?;
                match kind {
                    Some(RefKind::Field) => f.write_str("::field"),
                    Some(RefKind::Tag) => f.write_str("::tag"),
                    None => Ok(()),
                }
            }
            Expr::Wildcard => f.write_str("*"),
            Expr::Call { name, args } => {
                write!(f, "{}(", Ident(name))?;
                for (i, arg) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{arg}")?;
                }
                f.write_str(")")
            }
            Expr::Integer(v) => write!(f, "{v}"),
            Expr::Number(v) => f.write_str(&format_float(*v)),
            Expr::Str(s) => write_quoted(f, s, '\''),
            Expr::Bool(b) => f.write_str(if *b { "true" } else { "false" }),
            Expr::Duration(ns) => f.write_str(&format_duration(*ns)),
            Expr::Regex(pattern) => write_regex(f, pattern),
            Expr::Binary { op, lhs, rhs } => write!(f, "{lhs} {} {rhs}", op.symbol()),
            Expr::Neg(inner) => {
                let text = inner.to_string();
                if text.starts_with('-') {
                    write!(f, "- {text}")
                } else {
                    write!(f, "-{text}")
                }
            }
            Expr::Paren(inner) => write!(f, "({inner})"),
        }
    }
}

/// `db.rp.`, `db..`, `rp.` or nothing, before a measurement name.
fn write_db_rp_prefix(f: &mut fmt::Formatter<'_>, db: &Option<String>, rp: &Option<String>) -> fmt::Result {
    match (db, rp) {
        (Some(db), Some(rp)) => write!(f, "{}.{}.", Ident(db), Ident(rp)),
        (Some(db), None) => write!(f, "{}..", Ident(db)),
        (None, Some(rp)) => write!(f, "{}.", Ident(rp)),
        (None, None) => Ok(()),
    }
}

impl fmt::Display for MeasurementRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_db_rp_prefix(f, &self.database, &self.retention_policy)?;
        write!(f, "{}", Ident(&self.name))
    }
}

impl fmt::Display for NameMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameMatch::Eq(name) => write!(f, "= {}", Ident(name)),
            NameMatch::Neq(name) => write!(f, "!= {}", Ident(name)),
            NameMatch::Regex(re) => {
                f.write_str("=~ ")?;
                write_regex(f, re)
            }
            NameMatch::NotRegex(re) => {
                f.write_str("!~ ")?;
                write_regex(f, re)
            }
            NameMatch::In(names) => {
                f.write_str("IN (")?;
                for (i, name) in names.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", Ident(name))?;
                }
                f.write_str(")")
            }
        }
    }
}

/// The optional clauses after a statement's keywords, printed in InfluxQL's
/// order: ON, FROM, WITH, WHERE, LIMIT, OFFSET.
#[derive(Default)]
struct Clauses<'a> {
    on: Option<&'a str>,
    from: Option<&'a MeasurementRef>,
    /// `WITH KEY ...` or `WITH MEASUREMENT ...`.
    with: Option<(&'static str, &'a NameMatch)>,
    condition: Option<&'a Expr>,
    limit: Option<u64>,
    offset: Option<u64>,
}

impl fmt::Display for Clauses<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(db) = self.on {
            write!(f, " ON {}", Ident(db))?;
        }
        if let Some(m) = self.from {
            write!(f, " FROM {m}")?;
        }
        if let Some((what, names)) = self.with {
            write!(f, " WITH {what} {names}")?;
        }
        if let Some(c) = self.condition {
            write!(f, " WHERE {c}")?;
        }
        if let Some(n) = self.limit {
            write!(f, " LIMIT {n}")?;
        }
        if let Some(n) = self.offset {
            write!(f, " OFFSET {n}")?;
        }
        Ok(())
    }
}

impl ShowClauses {
    fn clauses(&self) -> Clauses<'_> {
        Clauses {
            on: self.on.as_deref(),
            from: self.from.as_ref(),
            condition: self.condition.as_ref(),
            limit: self.limit,
            offset: self.offset,
            ..Clauses::default()
        }
    }
}

impl fmt::Display for SelectStatement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SELECT ")?;
        for (i, field) in self.fields.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", field.expr)?;
            if let Some(alias) = &field.alias {
                write!(f, " AS {}", Ident(alias))?;
            }
        }
        if let Some(into) = &self.into {
            write!(f, " INTO {into}")?;
        }
        for (i, source) in self.from_sources.iter().enumerate() {
            f.write_str(if i == 0 { " FROM " } else { ", " })?;
            match source {
                FromSource::Measurement(m) => write!(f, "{m}")?,
                FromSource::Regex(pattern) => write_regex(f, pattern)?,
                FromSource::Subquery(inner) => write!(f, "({inner})")?,
            }
        }
        let from = if self.from_sources.is_empty() { Some(&self.from) } else { None };
        let from = Clauses { from, condition: self.condition.as_ref(), ..Clauses::default() };
        write!(f, "{from}")?;
        if !self.dimensions.is_empty() {
            f.write_str(" GROUP BY ")?;
            for (i, dimension) in self.dimensions.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                match dimension {
                    Dimension::Time { interval_ns, offset_ns: 0 } => {
                        write!(f, "time({})", format_duration(*interval_ns))?
                    }
                    Dimension::Time { interval_ns, offset_ns } => {
                        write!(f, "time({}, {})", format_duration(*interval_ns), format_duration(*offset_ns))?
                    }
                    Dimension::Tag(tag) => write!(f, "{}", Ident(tag))?,
                    Dimension::AllTags => f.write_str("*")?,
                }
            }
        }
        match &self.fill {
            Fill::Null => {}
            Fill::None => f.write_str(" fill(none)")?,
            Fill::Previous => f.write_str(" fill(previous)")?,
            Fill::Linear => f.write_str(" fill(linear)")?,
            Fill::Integer(v) => write!(f, " fill({v})")?,
            Fill::Float(v) => write!(f, " fill({})", format_float(*v))?,
        }
        if self.order_desc {
            f.write_str(" ORDER BY time DESC")?;
        }
        write!(f, "{}", Clauses { limit: self.limit, offset: self.offset, ..Clauses::default() })?;
        if let Some(n) = self.slimit {
            write!(f, " SLIMIT {n}")?;
        }
        if let Some(n) = self.soffset {
            write!(f, " SOFFSET {n}")?;
        }
        if let Some(tz) = self.tz {
            write!(f, " tz({})", Expr::Str(tz.name().to_string()))?;
        }
        Ok(())
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (keywords, clauses) = match self {
            Statement::Select(s) => return write!(f, "{s}"),
            Statement::CreateDatabase { name, with } => {
                write!(f, "CREATE DATABASE {}", Ident(name))?;
                return match with {
                    Some((spec, rp)) => {
                        write!(f, " WITH{}", retention::SpecClauses { spec, name: rp.as_deref() })
                    }
                    None => Ok(()),
                };
            }
            Statement::CreateRetentionPolicy { name, on, spec } => {
                return retention::write_policy_statement(f, "CREATE", name, on, Some(spec))
            }
            Statement::AlterRetentionPolicy { name, on, spec } => {
                return retention::write_policy_statement(f, "ALTER", name, on, Some(spec))
            }
            Statement::DropRetentionPolicy { name, on } => {
                return retention::write_policy_statement(f, "DROP", name, on, None)
            }
            Statement::DropMeasurement { name } => return write!(f, "DROP MEASUREMENT {}", Ident(name)),
            Statement::DropDatabase { name } => return write!(f, "DROP DATABASE {}", Ident(name)),
            Statement::ShowCardinality { of, exact, inner } => {
                let (plain, counted) = of.keywords();
                let inner = inner.to_string();
                let rest = inner.strip_prefix(plain).unwrap_or(&inner);
                let exact = if *exact { " EXACT" } else { "" };
                return write!(f, "{counted}{exact} CARDINALITY{rest}");
            }
            Statement::ShowDatabases => ("SHOW DATABASES", Clauses::default()),
            Statement::ShowMeasurements(s) => (
                "SHOW MEASUREMENTS",
                Clauses {
                    on: s.on.as_deref(),
                    with: s.with_measurement.as_ref().map(|names| ("MEASUREMENT", names)),
                    condition: s.condition.as_ref(),
                    limit: s.limit,
                    offset: s.offset,
                    ..Clauses::default()
                },
            ),
            Statement::ShowTagKeys(s) => ("SHOW TAG KEYS", s.clauses()),
            Statement::ShowTagValues(s) => (
                "SHOW TAG VALUES",
                Clauses {
                    on: s.on.as_deref(),
                    from: s.from.as_ref(),
                    with: Some(("KEY", &s.key)),
                    condition: s.condition.as_ref(),
                    limit: s.limit,
                    offset: s.offset,
                },
            ),
            Statement::ShowFieldKeys(s) => (
                "SHOW FIELD KEYS",
                Clauses {
                    on: s.on.as_deref(),
                    from: s.from.as_ref(),
                    limit: s.limit,
                    offset: s.offset,
                    ..Clauses::default()
                },
            ),
            Statement::ShowSeries(s) => ("SHOW SERIES", s.clauses()),
            Statement::ShowRetentionPolicies { on } => {
                ("SHOW RETENTION POLICIES", Clauses { on: on.as_deref(), ..Clauses::default() })
            }
            Statement::DropSeries(d) => (
                "DROP SERIES",
                Clauses { from: d.from.as_ref(), condition: d.condition.as_ref(), ..Clauses::default() },
            ),
            Statement::Delete(d) => (
                "DELETE",
                Clauses { from: d.from.as_ref(), condition: d.condition.as_ref(), ..Clauses::default() },
            ),
        };
        write!(f, "{keywords}{clauses}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_only_when_needed() {
        assert_eq!(Ident("cpu_1").to_string(), "cpu_1");
        assert_eq!(Ident("select").to_string(), "\"select\"");
        assert_eq!(Ident("key").to_string(), "\"key\"");
        assert_eq!(Ident("a b").to_string(), "\"a b\"");
        assert_eq!(Ident("1x").to_string(), "\"1x\"");
        assert_eq!(Ident("").to_string(), "\"\"");
        assert_eq!(Ident("say \"hi\"\n").to_string(), "\"say \\\"hi\\\"\\n\"");
    }

    #[test]
    fn statements_print_their_clauses_in_influxql_order() {
        for text in [
            "SHOW DATABASES",
            "SHOW MEASUREMENTS ON db WITH MEASUREMENT =~ /c/ WHERE a = 'x' LIMIT 2 OFFSET 1",
            "SHOW TAG KEYS ON db FROM cpu WHERE a = 'x' LIMIT 2 OFFSET 1",
            "SHOW TAG VALUES ON db FROM cpu WITH KEY IN (a, b) WHERE a = 'x' LIMIT 2 OFFSET 1",
            "SHOW FIELD KEYS ON db FROM db.rp.cpu LIMIT 2 OFFSET 1",
            "SHOW SERIES ON db FROM cpu WHERE a = 'x' LIMIT 2 OFFSET 1",
            "SHOW SERIES",
            "SHOW RETENTION POLICIES ON db",
            "CREATE DATABASE \"my db\"",
            "CREATE DATABASE db WITH DURATION 3d REPLICATION 1 SHARD DURATION 1h NAME week",
            "CREATE DATABASE db WITH NAME rp",
            "CREATE RETENTION POLICY week ON db DURATION 1w REPLICATION 1 SHARD DURATION 1d DEFAULT",
            "CREATE RETENTION POLICY forever ON db DURATION INF REPLICATION 2",
            "ALTER RETENTION POLICY \"default\" ON db DURATION 2h DEFAULT",
            "ALTER RETENTION POLICY autogen ON db SHARD DURATION INF",
            "DROP RETENTION POLICY week ON db",
            "DROP MEASUREMENT cpu",
            "DELETE FROM cpu WHERE time < 5",
            concat!(
                "SELECT v FROM cpu WHERE a = 'x' GROUP BY time(1m), host fill(none)",
                " ORDER BY time DESC LIMIT 2 OFFSET 1"
            ),
        ] {
            let statements = crate::influxql::parse_query(text).unwrap();
            assert_eq!(statements[0].to_string(), text);
        }
    }

    #[test]
    fn floats_always_print_a_decimal_point() {
        assert_eq!(format_float(1.0), "1.0");
        assert_eq!(format_float(0.25), "0.25");
        assert_eq!(format_float(1e300), "1.0e300");
        assert_eq!(format_float(1.5e-9), "1.5e-9");
    }

    #[test]
    fn expressions_print_in_source_form() {
        let e = Expr::binary(
            BinaryOp::And,
            Expr::binary(BinaryOp::EqRegex, Expr::var("host"), Expr::Regex("a/b".to_string())),
            Expr::binary(
                BinaryOp::Gt,
                Expr::var("time"),
                Expr::binary(
                    BinaryOp::Sub,
                    Expr::Call { name: "now".to_string(), args: vec![] },
                    Expr::Duration(3_600_000_000_000),
                ),
            ),
        );
        assert_eq!(e.to_string(), "host =~ /a\\/b/ AND time > now() - 1h");
        assert_eq!(Expr::Str("it's".to_string()).to_string(), "'it\\'s'");
        assert_eq!(Expr::Neg(Box::new(Expr::Integer(-1))).to_string(), "- -1");
    }
}
