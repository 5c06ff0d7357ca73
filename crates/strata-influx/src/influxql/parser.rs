//! Recursive-descent parser for the InfluxQL subset (grammar and error
//! wording after InfluxDB 1.x's `influxql` parser). Expressions use
//! precedence climbing; their depth is bounded so hostile input cannot
//! exhaust the stack.

use regex::RegexBuilder;

use super::ast::{
    BinaryOp, CardinalityOf, DeleteStatement, Dimension, Expr, Field, Fill, FromSource, IntoTarget,
    MeasurementRef, NameMatch, RefKind, SelectStatement, ShowClauses, ShowFieldKeys, ShowMeasurements,
    ShowTagValues, Statement,
};
pub use super::error::{ParseError, RegexError};
use super::lexer::{Lexer, Pos, Spanned, Token};
use super::time::parse_duration;

mod retention;

/// Deepest expression tree accepted (operator chains count too): bounds
/// the recursion of printing, dropping and evaluating a tree.
pub const MAX_EXPR_DEPTH: usize = 500;
/// Deepest syntactic nesting (parentheses, calls, unary minus): bounds the
/// parser's own recursion.
pub const MAX_NESTING_DEPTH: usize = 100;
/// Largest compiled regex accepted, bytes.
pub const MAX_REGEX_BYTES: usize = 1 << 20;

/// Compiles a regex literal the way the executor will.
fn cardinality(of: CardinalityOf, exact: bool, inner: Statement) -> Statement {
    Statement::ShowCardinality { of, exact, inner: Box::new(inner) }
}

pub fn compile_regex(pattern: &str) -> Result<regex::Regex, RegexError> {
    RegexBuilder::new(pattern).size_limit(MAX_REGEX_BYTES).dfa_size_limit(MAX_REGEX_BYTES).build().map_err(
        |e| {
            let text = e.to_string();
            let reason = text
                .lines()
                .rev()
                .find(|l| l.starts_with("error:"))
                .unwrap_or(text.lines().next().unwrap_or(""));
            RegexError {
                pattern: pattern.to_string(),
                reason: reason.trim_start_matches("error: ").to_string(),
            }
        },
    )
}

/// Parses statements separated by `;` (empty statements are skipped).
pub fn parse_statements(text: &str) -> Result<Vec<Statement>, ParseError> {
    let mut parser = Parser { lexer: Lexer::new(text), peeked: None };
    let mut statements = Vec::new();
    let mut after_separator = true;
    loop {
        let t = parser.peek()?;
        match t.token {
            Token::Eof => return Ok(statements),
            Token::Semicolon => {
                parser.next()?;
                after_separator = true;
            }
            _ if !after_separator => return Err(ParseError::expected(&t.found(), &[";"], t.pos)),
            _ => {
                statements.push(parser.statement()?);
                after_separator = false;
            }
        }
    }
}

struct Parser {
    lexer: Lexer,
    peeked: Option<Spanned>,
}

impl Parser {
    fn peek(&mut self) -> Result<Spanned, ParseError> {
        if self.peeked.is_none() {
            self.peeked = Some(self.lexer.next_token()?);
        }
        Ok(self.peeked.clone().expect("just filled"))
    }

    fn next(&mut self) -> Result<Spanned, ParseError> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lexer.next_token(),
        }
    }

    fn peek_keyword(&mut self, keyword: &str) -> Result<bool, ParseError> {
        Ok(matches!(self.peek()?.token, Token::Keyword(k) if k == keyword))
    }

    /// Consumes `keyword` if it is next.
    fn accept_keyword(&mut self, keyword: &str) -> Result<bool, ParseError> {
        if self.peek_keyword(keyword)? {
            self.next()?;
            return Ok(true);
        }
        Ok(false)
    }

    fn expect_keyword(&mut self, keyword: &str) -> Result<(), ParseError> {
        let t = self.next()?;
        match t.token {
            Token::Keyword(k) if k == keyword => Ok(()),
            _ => Err(ParseError::expected(&t.found(), &[keyword], t.pos)),
        }
    }

    fn accept(&mut self, token: &Token) -> Result<bool, ParseError> {
        if &self.peek()?.token == token {
            self.next()?;
            return Ok(true);
        }
        Ok(false)
    }

    fn expect(&mut self, token: Token, shown: &str) -> Result<Spanned, ParseError> {
        let t = self.next()?;
        if t.token == token {
            Ok(t)
        } else {
            Err(ParseError::expected(&t.found(), &[shown], t.pos))
        }
    }

    fn ident(&mut self) -> Result<String, ParseError> {
        let t = self.next()?;
        match t.token {
            Token::Ident(s) | Token::QuotedIdent(s) => Ok(s),
            _ => Err(ParseError::expected(&t.found(), &["identifier"], t.pos)),
        }
    }

    /// A regex literal at the current position (after `=~` / `!~`).
    fn regex(&mut self) -> Result<String, ParseError> {
        if let Some(t) = self.peeked.take() {
            self.lexer.reset(t.start);
        }
        match self.lexer.scan_regex()? {
            Some((pattern, pos)) => {
                compile_regex(&pattern).map_err(|e| ParseError::new(e, pos))?;
                Ok(pattern)
            }
            None => {
                let t = self.peek()?;
                Err(ParseError::expected(&t.found(), &["regex"], t.pos))
            }
        }
    }

    fn unsigned(&mut self) -> Result<u64, ParseError> {
        let t = self.next()?;
        match &t.token {
            Token::Integer(digits) => digits
                .parse()
                .map_err(|_| ParseError::new(format!("unable to parse integer {digits}"), t.pos)),
            _ => Err(ParseError::expected(&t.found(), &["integer"], t.pos)),
        }
    }

    fn statement(&mut self) -> Result<Statement, ParseError> {
        let t = self.next()?;
        match t.token {
            Token::Keyword("SELECT") => Ok(Statement::Select(self.select()?)),
            Token::Keyword("SHOW") => self.show(),
            Token::Keyword("CREATE") => self.create(),
            Token::Keyword("ALTER") => self.alter(),
            Token::Keyword("DROP") => self.drop(),
            Token::Keyword("DELETE") => self.delete(),
            _ => Err(ParseError::expected(
                &t.found(),
                &["SELECT", "DELETE", "SHOW", "CREATE", "DROP", "ALTER"],
                t.pos,
            )),
        }
    }

    fn show(&mut self) -> Result<Statement, ParseError> {
        let t = self.next()?;
        match t.token {
            Token::Keyword("DATABASES") => Ok(Statement::ShowDatabases),
            Token::Keyword("MEASUREMENTS") => self.show_measurements(),
            Token::Keyword("TAG") => {
                let t = self.next()?;
                match t.token {
                    Token::Keyword("KEYS") => Ok(Statement::ShowTagKeys(self.show_clauses()?)),
                    Token::Keyword("KEY") => {
                        let exact = self
                            .cardinality()?
                            .ok_or_else(|| ParseError::new("expected CARDINALITY", t.pos))?;
                        Ok(cardinality(
                            CardinalityOf::TagKeys,
                            exact,
                            Statement::ShowTagKeys(self.show_clauses()?),
                        ))
                    }
                    Token::Keyword("VALUES") => {
                        let counted = self.cardinality()?;
                        let on = self.on()?;
                        let from = self.optional_from()?;
                        self.expect_keyword("WITH")?;
                        self.expect_keyword("KEY")?;
                        let key = self.name_match(true)?;
                        let condition = self.where_clause()?;
                        let (limit, offset) = self.limit_offset()?;
                        let show = Statement::ShowTagValues(ShowTagValues {
                            on,
                            from,
                            key,
                            condition,
                            limit,
                            offset,
                        });
                        Ok(match counted {
                            Some(exact) => cardinality(CardinalityOf::TagValues, exact, show),
                            None => show,
                        })
                    }
                    _ => Err(ParseError::expected(&t.found(), &["KEY", "KEYS", "VALUES"], t.pos)),
                }
            }
            Token::Keyword("FIELD") => {
                let counted = if self.accept_keyword("KEY")? {
                    Some(self.cardinality()?.ok_or_else(|| ParseError::new("expected CARDINALITY", t.pos))?)
                } else {
                    self.expect_keyword("KEYS")?;
                    None
                };
                let on = self.on()?;
                let from = self.optional_from()?;
                let (limit, offset) = self.limit_offset()?;
                let show = Statement::ShowFieldKeys(ShowFieldKeys { on, from, limit, offset });
                Ok(match counted {
                    Some(exact) => cardinality(CardinalityOf::FieldKeys, exact, show),
                    None => show,
                })
            }
            Token::Keyword("SERIES") => match self.cardinality()? {
                Some(exact) => {
                    Ok(cardinality(CardinalityOf::Series, exact, Statement::ShowSeries(self.show_clauses()?)))
                }
                None => Ok(Statement::ShowSeries(self.show_clauses()?)),
            },
            Token::Keyword("MEASUREMENT") => {
                let exact =
                    self.cardinality()?.ok_or_else(|| ParseError::new("expected CARDINALITY", t.pos))?;
                Ok(cardinality(CardinalityOf::Measurements, exact, self.show_measurements()?))
            }
            Token::Keyword("RETENTION") => {
                self.expect_keyword("POLICIES")?;
                Ok(Statement::ShowRetentionPolicies { on: self.on()? })
            }
            _ => Err(ParseError::expected(
                &t.found(),
                &["DATABASES", "FIELD", "MEASUREMENTS", "RETENTION", "SERIES", "TAG"],
                t.pos,
            )),
        }
    }

    /// The clauses of `SHOW MEASUREMENTS`.
    fn show_measurements(&mut self) -> Result<Statement, ParseError> {
        let on = self.on()?;
        let with_measurement = if self.accept_keyword("WITH")? {
            self.expect_keyword("MEASUREMENT")?;
            Some(self.name_match(false)?)
        } else {
            None
        };
        let condition = self.where_clause()?;
        let (limit, offset) = self.limit_offset()?;
        Ok(Statement::ShowMeasurements(ShowMeasurements { on, with_measurement, condition, limit, offset }))
    }

    /// `[EXACT] CARDINALITY` after a SHOW's object: `Some(exact)`, or
    /// `None` when neither follows (a plain SHOW).
    fn cardinality(&mut self) -> Result<Option<bool>, ParseError> {
        let exact = self.accept_keyword("EXACT")?;
        if self.accept_keyword("CARDINALITY")? {
            return Ok(Some(exact));
        }
        if exact {
            let t = self.next()?;
            return Err(ParseError::expected(&t.found(), &["CARDINALITY"], t.pos));
        }
        Ok(None)
    }

    /// `[ON db] [FROM m] [WHERE ...] [LIMIT n] [OFFSET n]`.
    fn show_clauses(&mut self) -> Result<ShowClauses, ParseError> {
        let on = self.on()?;
        let from = self.optional_from()?;
        let condition = self.where_clause()?;
        let (limit, offset) = self.limit_offset()?;
        Ok(ShowClauses { on, from, condition, limit, offset })
    }

    /// `keyword` then what `parse` reads, if `keyword` is next.
    fn after_keyword<T>(
        &mut self,
        keyword: &str,
        parse: fn(&mut Parser) -> Result<T, ParseError>,
    ) -> Result<Option<T>, ParseError> {
        if self.accept_keyword(keyword)? {
            return Ok(Some(parse(self)?));
        }
        Ok(None)
    }

    fn on(&mut self) -> Result<Option<String>, ParseError> {
        self.after_keyword("ON", Parser::ident)
    }

    fn optional_from(&mut self) -> Result<Option<MeasurementRef>, ParseError> {
        self.after_keyword("FROM", Parser::measurement)
    }

    fn where_clause(&mut self) -> Result<Option<Expr>, ParseError> {
        self.after_keyword("WHERE", Parser::expr)
    }

    fn limit_offset(&mut self) -> Result<(Option<u64>, Option<u64>), ParseError> {
        let limit = self.after_keyword("LIMIT", Parser::unsigned)?;
        let offset = self.after_keyword("OFFSET", Parser::unsigned)?;
        Ok((limit, offset))
    }

    /// `= name | != name | =~ /re/ | !~ /re/ [| IN (name, ...)]`.
    fn name_match(&mut self, allow_in: bool) -> Result<NameMatch, ParseError> {
        let t = self.next()?;
        match t.token {
            Token::Eq => Ok(NameMatch::Eq(self.ident()?)),
            Token::Neq => Ok(NameMatch::Neq(self.ident()?)),
            Token::EqRegex => Ok(NameMatch::Regex(self.regex()?)),
            Token::NeqRegex => Ok(NameMatch::NotRegex(self.regex()?)),
            Token::Keyword("IN") if allow_in => {
                self.expect(Token::LParen, "(")?;
                let mut names = vec![self.ident()?];
                while self.accept(&Token::Comma)? {
                    names.push(self.ident()?);
                }
                self.expect(Token::RParen, ")")?;
                Ok(NameMatch::In(names))
            }
            _ => {
                let expected: &[&str] =
                    if allow_in { &["=", "!=", "=~", "!~", "IN"] } else { &["=", "!=", "=~", "!~"] };
                Err(ParseError::expected(&t.found(), expected, t.pos))
            }
        }
    }

    /// `m`, `rp.m`, `db.rp.m` or `db..m`.
    fn measurement(&mut self) -> Result<MeasurementRef, ParseError> {
        let mut segments: Vec<Option<String>> = vec![Some(self.ident()?)];
        while segments.len() < 3 && self.accept(&Token::Dot)? {
            if segments.len() == 1 && self.peek()?.token == Token::Dot {
                // `db..m`: an empty retention policy.
                segments.push(None);
                continue;
            }
            segments.push(Some(self.ident()?));
        }
        let name = segments.pop().flatten().expect("the last segment is an identifier");
        let (database, retention_policy) = match segments.len() {
            0 => (None, None),
            1 => (None, segments.pop().flatten()),
            _ => {
                let rp = segments.pop().flatten();
                (segments.pop().flatten(), rp)
            }
        };
        Ok(MeasurementRef { database, retention_policy, name })
    }

    /// `INTO`'s target: a measurement (`m`, `rp.m`, `db.rp.m`, `db..m`), or
    /// the same with `:MEASUREMENT` in place of `m`.
    fn select_into_target(&mut self) -> Result<IntoTarget, ParseError> {
        let mut segments: Vec<Option<String>> = Vec::new();
        loop {
            if self.accept(&Token::Colon)? {
                self.expect_keyword("MEASUREMENT")?;
                segments.push(None);
                break;
            }
            if segments.len() == 1 && self.peek()?.token == Token::Dot {
                segments.push(None); // `db..m`: an empty retention policy
            } else {
                segments.push(Some(self.ident()?));
            }
            if segments.len() == 3 || !self.accept(&Token::Dot)? {
                break;
            }
        }
        let measurement = segments.pop().flatten();
        let retention_policy = segments.pop().flatten();
        let database = segments.pop().flatten();
        Ok(IntoTarget { database, retention_policy, measurement })
    }

    /// SELECT's FROM: `m`, or several sources (`a, b`, `/re/`): then the
    /// first name (empty for a regex) and every source.
    fn select_sources(&mut self) -> Result<(MeasurementRef, Vec<FromSource>), ParseError> {
        let mut sources = Vec::new();
        loop {
            if self.accept(&Token::LParen)? {
                self.expect_keyword("SELECT")?;
                sources.push(FromSource::Subquery(Box::new(self.select()?)));
                self.expect(Token::RParen, ")")?;
            } else if self.peek()?.token == Token::Div {
                sources.push(FromSource::Regex(self.regex()?));
            } else {
                sources.push(FromSource::Measurement(self.measurement()?));
            }
            if !self.accept(&Token::Comma)? {
                break;
            }
        }
        match sources.as_slice() {
            [FromSource::Measurement(m)] => Ok((m.clone(), Vec::new())),
            [FromSource::Measurement(m), ..] => Ok((m.clone(), sources)),
            _ => {
                Ok((MeasurementRef { database: None, retention_policy: None, name: String::new() }, sources))
            }
        }
    }

    fn delete(&mut self) -> Result<Statement, ParseError> {
        Ok(Statement::Delete(self.optional_from_and_where()?))
    }

    /// `[FROM m] [WHERE cond]`, at least one of them (DELETE, DROP SERIES).
    fn optional_from_and_where(&mut self) -> Result<DeleteStatement, ParseError> {
        let from = self.optional_from()?;
        let condition = self.where_clause()?;
        if from.is_none() && condition.is_none() {
            let t = self.peek()?;
            return Err(ParseError::expected(&t.found(), &["FROM", "WHERE"], t.pos));
        }
        Ok(DeleteStatement { from, condition })
    }

    /// `DROP MEASUREMENT m`, `DROP DATABASE db`, `DROP SERIES ...`.
    fn drop(&mut self) -> Result<Statement, ParseError> {
        let t = self.next()?;
        match t.token {
            Token::Keyword("MEASUREMENT") => Ok(Statement::DropMeasurement { name: self.ident()? }),
            Token::Keyword("DATABASE") => Ok(Statement::DropDatabase { name: self.ident()? }),
            Token::Keyword("SERIES") => Ok(Statement::DropSeries(self.optional_from_and_where()?)),
            Token::Keyword("RETENTION") => self.drop_retention_policy(),
            _ => Err(ParseError::expected(
                &t.found(),
                &["DATABASE", "MEASUREMENT", "RETENTION", "SERIES"],
                t.pos,
            )),
        }
    }

    fn select(&mut self) -> Result<SelectStatement, ParseError> {
        let mut fields = vec![self.field()?];
        while self.accept(&Token::Comma)? {
            fields.push(self.field()?);
        }
        let into = if self.accept_keyword("INTO")? { Some(self.select_into_target()?) } else { None };
        self.expect_keyword("FROM")?;
        let (from, from_sources) = self.select_sources()?;
        let condition = self.where_clause()?;
        let dimensions = if self.accept_keyword("GROUP")? {
            self.expect_keyword("BY")?;
            self.dimensions()?
        } else {
            Vec::new()
        };
        let fill = self.fill()?;
        let mut order_desc = false;
        if self.accept_keyword("ORDER")? {
            self.expect_keyword("BY")?;
            let t = self.next()?;
            match &t.token {
                Token::Ident(name) if name.eq_ignore_ascii_case("time") => {}
                _ => return Err(ParseError::new("only ORDER BY time supported at this time", t.pos)),
            }
            if self.accept_keyword("DESC")? {
                order_desc = true;
            } else {
                self.accept_keyword("ASC")?;
            }
        }
        let (limit, offset) = self.limit_offset()?;
        let slimit = self.after_keyword("SLIMIT", Parser::unsigned)?;
        let soffset = self.after_keyword("SOFFSET", Parser::unsigned)?;
        let tz = self.tz()?;
        Ok(SelectStatement {
            fields,
            from,
            from_sources,
            condition,
            dimensions,
            fill,
            order_desc,
            limit,
            offset,
            slimit,
            soffset,
            tz,
            into,
        })
    }

    /// `tz('Area/City')`, the last clause of a SELECT.
    fn tz(&mut self) -> Result<Option<chrono_tz::Tz>, ParseError> {
        let t = self.peek()?;
        if !matches!(&t.token, Token::Ident(name) if name.eq_ignore_ascii_case("tz")) {
            return Ok(None);
        }
        self.next()?;
        self.expect(Token::LParen, "(")?;
        let t = self.next()?;
        let Token::Str(name) = &t.token else {
            return Err(ParseError::expected(&t.found(), &["string"], t.pos));
        };
        let zone = name
            .parse::<chrono_tz::Tz>()
            .map_err(|_| ParseError::new(format!("unable to find time zone {name}"), t.pos))?;
        self.expect(Token::RParen, ")")?;
        Ok(Some(zone))
    }

    fn field(&mut self) -> Result<Field, ParseError> {
        let expr = self.expr()?;
        let alias = self.after_keyword("AS", Parser::ident)?;
        Ok(Field { expr, alias })
    }

    fn dimensions(&mut self) -> Result<Vec<Dimension>, ParseError> {
        let mut out = Vec::new();
        loop {
            let t = self.next()?;
            match t.token {
                Token::Mul => out.push(Dimension::AllTags),
                Token::Ident(name)
                    if name.eq_ignore_ascii_case("time") && self.peek()?.token == Token::LParen =>
                {
                    self.next()?;
                    if out.iter().any(|d| matches!(d, Dimension::Time { .. })) {
                        return Err(ParseError::new("multiple time dimensions not allowed", t.pos));
                    }
                    let interval_ns = self.duration_arg()?;
                    if interval_ns <= 0 {
                        return Err(ParseError::new("time dimension must have a positive duration", t.pos));
                    }
                    let offset_ns = if self.accept(&Token::Comma)? { self.duration_arg()? } else { 0 };
                    self.expect(Token::RParen, ")")?;
                    out.push(Dimension::Time { interval_ns, offset_ns });
                }
                Token::Ident(name) | Token::QuotedIdent(name) => {
                    // Grafana's query builder writes `"host"::tag`.
                    if self.accept(&Token::DoubleColon)? {
                        let k = self.next()?;
                        if k.token != Token::Keyword("TAG") {
                            return Err(ParseError::expected(&k.found(), &["tag"], k.pos));
                        }
                    }
                    out.push(Dimension::Tag(name))
                }
                _ => return Err(ParseError::expected(&t.found(), &["identifier", "time", "*"], t.pos)),
            }
            if !self.accept(&Token::Comma)? {
                return Ok(out);
            }
        }
    }

    /// A duration literal, optionally negative.
    fn duration_arg(&mut self) -> Result<i64, ParseError> {
        let negative = self.accept(&Token::Sub)?;
        let t = self.next()?;
        match &t.token {
            Token::Duration(text) => parse_duration(text, negative).map_err(|e| ParseError::new(e, t.pos)),
            _ => Err(ParseError::expected(&t.found(), &["duration"], t.pos)),
        }
    }

    fn fill(&mut self) -> Result<Fill, ParseError> {
        let t = self.peek()?;
        let is_fill = matches!(&t.token, Token::Ident(name) if name.eq_ignore_ascii_case("fill"));
        if !is_fill {
            return Ok(Fill::Null);
        }
        self.next()?;
        self.expect(Token::LParen, "(")?;
        let negative = self.accept(&Token::Sub)?;
        let t = self.next()?;
        let fill = match &t.token {
            Token::Ident(name) if !negative && name.eq_ignore_ascii_case("null") => Fill::Null,
            Token::Ident(name) if !negative && name.eq_ignore_ascii_case("none") => Fill::None,
            Token::Ident(name) if !negative && name.eq_ignore_ascii_case("previous") => Fill::Previous,
            Token::Ident(name) if !negative && name.eq_ignore_ascii_case("linear") => Fill::Linear,
            Token::Integer(digits) => Fill::Integer(signed_integer(digits, negative, t.pos)?),
            Token::Number(v) => Fill::Float(if negative { -v } else { *v }),
            _ => {
                return Err(ParseError::expected(
                    &t.found(),
                    &["null", "none", "previous", "linear", "a number"],
                    t.pos,
                ))
            }
        };
        self.expect(Token::RParen, ")")?;
        Ok(fill)
    }

    fn expr(&mut self) -> Result<Expr, ParseError> {
        Ok(self.binary(1, 0)?.0)
    }

    fn binary_op(token: &Token) -> Option<BinaryOp> {
        Some(match token {
            Token::Keyword("OR") => BinaryOp::Or,
            Token::Keyword("AND") => BinaryOp::And,
            Token::Eq => BinaryOp::Eq,
            Token::Neq => BinaryOp::Neq,
            Token::Lt => BinaryOp::Lt,
            Token::Lte => BinaryOp::Lte,
            Token::Gt => BinaryOp::Gt,
            Token::Gte => BinaryOp::Gte,
            Token::EqRegex => BinaryOp::EqRegex,
            Token::NeqRegex => BinaryOp::NeqRegex,
            Token::Add => BinaryOp::Add,
            Token::Sub => BinaryOp::Sub,
            Token::Mul => BinaryOp::Mul,
            Token::Div => BinaryOp::Div,
            Token::Mod => BinaryOp::Mod,
            _ => return None,
        })
    }

    /// Precedence climbing over left-associative operators of at least
    /// `min_precedence`. Returns the expression and its tree depth.
    fn binary(&mut self, min_precedence: u8, nesting: usize) -> Result<(Expr, usize), ParseError> {
        let (mut lhs, mut depth) = self.unary(nesting)?;
        loop {
            let t = self.peek()?;
            let Some(op) = Self::binary_op(&t.token) else {
                return Ok((lhs, depth));
            };
            if op.precedence() < min_precedence {
                return Ok((lhs, depth));
            }
            self.next()?;
            let (rhs, rhs_depth) = if matches!(op, BinaryOp::EqRegex | BinaryOp::NeqRegex) {
                (Expr::Regex(self.regex()?), 1)
            } else {
                self.binary(op.precedence() + 1, nesting)?
            };
            depth = depth.max(rhs_depth) + 1;
            if depth > MAX_EXPR_DEPTH {
                return Err(ParseError::new("expression is nested too deeply", t.pos));
            }
            lhs = Expr::binary(op, lhs, rhs);
        }
    }

    fn unary(&mut self, nesting: usize) -> Result<(Expr, usize), ParseError> {
        let t = self.next()?;
        if nesting >= MAX_NESTING_DEPTH {
            return Err(ParseError::new("expression is nested too deeply", t.pos));
        }
        let expr = match t.token {
            Token::LParen => {
                let (inner, depth) = self.binary(1, nesting + 1)?;
                self.expect(Token::RParen, ")")?;
                return Ok((Expr::Paren(Box::new(inner)), depth + 1));
            }
            Token::Sub => {
                let next = self.peek()?;
                match &next.token {
                    Token::Integer(digits) => {
                        self.next()?;
                        Expr::Integer(signed_integer(digits, true, next.pos)?)
                    }
                    Token::Number(v) => {
                        self.next()?;
                        Expr::Number(-v)
                    }
                    Token::Duration(text) => {
                        self.next()?;
                        Expr::Duration(parse_duration(text, true).map_err(|e| ParseError::new(e, next.pos))?)
                    }
                    _ => {
                        let (inner, depth) = self.unary(nesting + 1)?;
                        return Ok((Expr::Neg(Box::new(inner)), depth + 1));
                    }
                }
            }
            Token::Mul => Expr::Wildcard,
            Token::Integer(digits) => Expr::Integer(signed_integer(&digits, false, t.pos)?),
            Token::Number(v) => Expr::Number(v),
            Token::Duration(text) => {
                Expr::Duration(parse_duration(&text, false).map_err(|e| ParseError::new(e, t.pos))?)
            }
            Token::Str(s) => Expr::Str(s),
            Token::Keyword("TRUE") => Expr::Bool(true),
            Token::Keyword("FALSE") => Expr::Bool(false),
            Token::Ident(name) | Token::QuotedIdent(name) => {
                if self.accept(&Token::LParen)? {
                    return self.call(name.to_ascii_lowercase(), nesting);
                }
                let kind = if self.accept(&Token::DoubleColon)? {
                    let k = self.next()?;
                    match k.token {
                        Token::Keyword("FIELD") => Some(RefKind::Field),
                        Token::Keyword("TAG") => Some(RefKind::Tag),
                        _ => return Err(ParseError::expected(&k.found(), &["field", "tag"], k.pos)),
                    }
                } else {
                    None
                };
                Expr::VarRef { name, kind }
            }
            _ => {
                return Err(ParseError::expected(
                    &t.found(),
                    &["identifier", "string", "number", "bool"],
                    t.pos,
                ))
            }
        };
        Ok((expr, 1))
    }

    /// The arguments of a call, after `name(`.
    fn call(&mut self, name: String, nesting: usize) -> Result<(Expr, usize), ParseError> {
        let mut args = Vec::new();
        let mut depth = 1;
        if !self.accept(&Token::RParen)? {
            loop {
                let (arg, arg_depth) = self.binary(1, nesting + 1)?;
                depth = depth.max(arg_depth + 1);
                args.push(arg);
                if self.accept(&Token::RParen)? {
                    break;
                }
                self.expect(Token::Comma, ",")?;
            }
        }
        Ok((Expr::Call { name, args }, depth))
    }
}

fn signed_integer(digits: &str, negative: bool, pos: Pos) -> Result<i64, ParseError> {
    let text = if negative { format!("-{digits}") } else { digits.to_string() };
    text.parse().map_err(|_| ParseError::new(format!("unable to parse integer {text}"), pos))
}
