//! Errors of the InfluxQL front end: [`ParseError`] (what is wrong, and
//! where ([`Pos`]), in the query text) and [`RegexError`] (a regex literal
//! that does not compile, found by the parser or the executor). Below the
//! lexer and the parser, which both produce them.

use super::time::DurationError;

/// A position in the query text, 0-based (errors print it 1-based).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

/// A parse error with its position; displays like InfluxDB:
/// `found EOF, expected FROM at line 1, char 9`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at line {}, char {}", .pos.line + 1, .pos.col + 1)]
pub struct ParseError {
    pub kind: ParseErrorKind,
    pub pos: Pos,
}

/// What is wrong at a [`ParseError`]'s position.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// A token that does not fit: `found <found>, expected <a>, <b>`.
    #[error("found {found}, expected {}", .expected.join(", "))]
    Expected { found: String, expected: Vec<String> },
    #[error(transparent)]
    Regex(#[from] RegexError),
    #[error(transparent)]
    Duration(#[from] DurationError),
    /// Any other syntax error (unterminated literal, bad escape or number,
    /// an unsupported or disallowed construct), with InfluxDB's message.
    #[error("{0}")]
    Syntax(String),
}

impl From<String> for ParseErrorKind {
    fn from(message: String) -> ParseErrorKind {
        ParseErrorKind::Syntax(message)
    }
}

impl From<&str> for ParseErrorKind {
    fn from(message: &str) -> ParseErrorKind {
        ParseErrorKind::Syntax(message.to_string())
    }
}

impl ParseError {
    pub fn new(kind: impl Into<ParseErrorKind>, pos: Pos) -> ParseError {
        ParseError { kind: kind.into(), pos }
    }

    pub fn expected(found: &str, expected: &[&str], pos: Pos) -> ParseError {
        let expected = expected.iter().map(|e| e.to_string()).collect();
        ParseError::new(ParseErrorKind::Expected { found: found.to_string(), expected }, pos)
    }
}

/// A regex literal that does not compile (or compiles too large), with the
/// regex crate's reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid regex /{pattern}/: {reason}")]
pub struct RegexError {
    pub pattern: String,
    pub reason: String,
}

/// For the executor parts that still report statement errors as text.
impl From<RegexError> for String {
    fn from(e: RegexError) -> String {
        e.to_string()
    }
}
