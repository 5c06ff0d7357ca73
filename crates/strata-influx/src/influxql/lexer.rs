//! The InfluxQL scanner: turns query text into tokens with their line and
//! column, following InfluxDB 1.x's scanner (keywords are case-insensitive
//! and never identifiers unless double-quoted; `--` starts a comment; a
//! number directly followed by letters is a duration; regex literals are
//! scanned only where the parser asks for one, after `=~` / `!~`).

pub use super::error::{ParseError, ParseErrorKind, Pos};

/// InfluxQL reserved words (InfluxDB 1.x spec, plus AND, OR, TRUE, FALSE).
pub const KEYWORDS: &[&str] = &[
    "ALL",
    "ALTER",
    "ANALYZE",
    "AND",
    "ANY",
    "AS",
    "ASC",
    "BEGIN",
    "BY",
    "CARDINALITY",
    "CREATE",
    "CONTINUOUS",
    "DATABASE",
    "DATABASES",
    "DEFAULT",
    "DELETE",
    "DESC",
    "DESTINATIONS",
    "DIAGNOSTICS",
    "DISTINCT",
    "DROP",
    "DURATION",
    "END",
    "EVERY",
    "EXACT",
    "EXPLAIN",
    "FALSE",
    "FIELD",
    "FOR",
    "FROM",
    "GRANT",
    "GRANTS",
    "GROUP",
    "GROUPS",
    "IN",
    "INF",
    "INSERT",
    "INTO",
    "KEY",
    "KEYS",
    "KILL",
    "LIMIT",
    "MEASUREMENT",
    "MEASUREMENTS",
    "NAME",
    "OFFSET",
    "ON",
    "OR",
    "ORDER",
    "PASSWORD",
    "POLICIES",
    "POLICY",
    "PRIVILEGES",
    "QUERIES",
    "QUERY",
    "READ",
    "REPLICATION",
    "RESAMPLE",
    "RETENTION",
    "REVOKE",
    "SELECT",
    "SERIES",
    "SET",
    "SHARD",
    "SHARDS",
    "SHOW",
    "SLIMIT",
    "SOFFSET",
    "STATS",
    "SUBSCRIPTION",
    "SUBSCRIPTIONS",
    "TAG",
    "TO",
    "TRUE",
    "USER",
    "USERS",
    "VALUES",
    "WHERE",
    "WITH",
    "WRITE",
];

/// The operators of two characters (`<>` is `!=`).
const TWO_CHAR_OPERATORS: [([char; 2], Token); 7] = [
    ([':', ':'], Token::DoubleColon),
    (['=', '~'], Token::EqRegex),
    (['!', '='], Token::Neq),
    (['!', '~'], Token::NeqRegex),
    (['<', '='], Token::Lte),
    (['<', '>'], Token::Neq),
    (['>', '='], Token::Gte),
];

/// The keyword `word` names, if any (case-insensitive).
pub fn keyword(word: &str) -> Option<&'static str> {
    let upper = word.to_ascii_uppercase();
    KEYWORDS.iter().find(|k| **k == upper).copied()
}

#[derive(Clone, Debug, PartialEq)]
pub enum Token {
    Eof,
    /// An unquoted identifier that is not a keyword.
    Ident(String),
    /// A double-quoted identifier (escapes resolved).
    QuotedIdent(String),
    /// A keyword, upper case.
    Keyword(&'static str),
    /// A single-quoted string (escapes resolved).
    Str(String),
    /// Decimal digits of an integer literal, not yet range-checked.
    Integer(String),
    /// A finite float literal.
    Number(f64),
    /// The text of a duration literal, not yet validated (`1h30m`).
    Duration(String),
    Comma,
    Semicolon,
    LParen,
    RParen,
    Dot,
    DoubleColon,
    /// A single `:` (only in `INTO ...:MEASUREMENT`).
    Colon,
    Mul,
    Div,
    Add,
    Sub,
    Mod,
    Eq,
    Neq,
    Lt,
    Lte,
    Gt,
    Gte,
    EqRegex,
    NeqRegex,
}

/// One scanned token, its position and its source text.
#[derive(Clone, Debug, PartialEq)]
pub struct Spanned {
    pub token: Token,
    pub pos: Pos,
    pub text: String,
    pub start: Mark,
}

impl Spanned {
    /// How `found X` names this token in an error.
    pub fn found(&self) -> String {
        match self.token {
            Token::Eof => "EOF".to_string(),
            _ => self.text.clone(),
        }
    }
}

/// A saved scanner position.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    at: usize,
    pos: Pos,
}

pub struct Lexer {
    chars: Vec<char>,
    at: usize,
    pos: Pos,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl Lexer {
    pub fn new(text: &str) -> Lexer {
        Lexer { chars: text.chars().collect(), at: 0, pos: Pos { line: 0, col: 0 } }
    }

    pub fn mark(&self) -> Mark {
        Mark { at: self.at, pos: self.pos }
    }

    pub fn reset(&mut self, mark: Mark) {
        self.at = mark.at;
        self.pos = mark.pos;
    }

    fn peek_char(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.at).copied()?;
        self.at += 1;
        if c == '\n' {
            self.pos.line += 1;
            self.pos.col = 0;
        } else {
            self.pos.col += 1;
        }
        Some(c)
    }

    fn skip_whitespace_and_comments(&mut self) {
        loop {
            match self.peek_char(0) {
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some('-') if self.peek_char(1) == Some('-') => {
                    while let Some(c) = self.bump() {
                        if c == '\n' {
                            break;
                        }
                    }
                }
                _ => return,
            }
        }
    }

    fn text_since(&self, mark: Mark) -> String {
        self.chars[mark.at..self.at].iter().collect()
    }

    /// The operator of two characters that starts with `first` (already
    /// consumed) and the next character, which it consumes.
    fn two_char_operator(&mut self, first: char) -> Option<Token> {
        let second = self.peek_char(0)?;
        let (_, token) = TWO_CHAR_OPERATORS.iter().find(|(chars, _)| *chars == [first, second])?;
        self.bump();
        Some(token.clone())
    }

    /// Scans the next token.
    pub fn next_token(&mut self) -> Result<Spanned, ParseError> {
        self.skip_whitespace_and_comments();
        let start = self.mark();
        let pos = self.pos;
        let Some(c) = self.bump() else {
            return Ok(Spanned { token: Token::Eof, pos, text: String::new(), start });
        };
        if let Some(token) = self.two_char_operator(c) {
            return Ok(Spanned { token, pos, text: self.text_since(start), start });
        }
        let token = match c {
            c if is_ident_start(c) => {
                while self.peek_char(0).is_some_and(is_ident_char) {
                    self.bump();
                }
                let word = self.text_since(start);
                match keyword(&word) {
                    Some(k) => Token::Keyword(k),
                    None => Token::Ident(word),
                }
            }
            '"' => Token::QuotedIdent(self.scan_quoted('"', pos)?),
            '\'' => Token::Str(self.scan_quoted('\'', pos)?),
            '0'..='9' => self.scan_number(start, pos)?,
            '.' if self.peek_char(0).is_some_and(|d| d.is_ascii_digit()) => self.scan_number(start, pos)?,
            '.' => Token::Dot,
            ':' => Token::Colon,
            ',' => Token::Comma,
            ';' => Token::Semicolon,
            '(' => Token::LParen,
            ')' => Token::RParen,
            '*' => Token::Mul,
            '/' => Token::Div,
            '+' => Token::Add,
            '-' => Token::Sub,
            '%' => Token::Mod,
            '=' => Token::Eq,
            '<' => Token::Lt,
            '>' => Token::Gt,
            other => return Err(ParseError::new(format!("found {other}, expected a token"), pos)),
        };
        Ok(Spanned { token, pos, text: self.text_since(start), start })
    }

    /// Scans the rest of a quoted string or identifier (the opening quote
    /// is consumed). Escapes: `\n`, `\\`, `\'`, `\"`.
    fn scan_quoted(&mut self, quote: char, pos: Pos) -> Result<String, ParseError> {
        let mut out = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => {
                    return Err(ParseError::new("found unterminated string, expected a quote", pos))
                }
                Some(c) if c == quote => return Ok(out),
                Some('\\') => match self.bump() {
                    Some('n') => out.push('\n'),
                    Some('\\') => out.push('\\'),
                    Some('\'') => out.push('\''),
                    Some('"') => out.push('"'),
                    other => {
                        let shown = other.map(String::from).unwrap_or_default();
                        return Err(ParseError::new(format!("bad escape \\{shown} in string"), pos));
                    }
                },
                Some(c) => out.push(c),
            }
        }
    }

    /// Scans a number (first character consumed): an integer, a float
    /// (`1.5`, `.5`, `1.5e3`) or, when letters follow the digits, a
    /// duration.
    fn scan_number(&mut self, start: Mark, pos: Pos) -> Result<Token, ParseError> {
        while self.peek_char(0).is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
        }
        let first = self.chars[start.at];
        let mut is_float = first == '.';
        if !is_float
            && self.peek_char(0) == Some('.')
            && self.peek_char(1).is_some_and(|c| c.is_ascii_digit())
        {
            self.bump();
            is_float = true;
            while self.peek_char(0).is_some_and(|c| c.is_ascii_digit()) {
                self.bump();
            }
        } else if is_float {
            // `.5`: the digits after the dot are already consumed.
        } else if self.peek_char(0).is_some_and(|c| c.is_ascii_alphabetic() || c == 'µ') {
            while self.peek_char(0).is_some_and(|c| c.is_ascii_alphanumeric() || c == 'µ') {
                self.bump();
            }
            return Ok(Token::Duration(self.text_since(start)));
        }
        if !is_float {
            return Ok(Token::Integer(self.text_since(start)));
        }
        if matches!(self.peek_char(0), Some('e' | 'E')) {
            let sign = usize::from(matches!(self.peek_char(1), Some('+' | '-')));
            if self.peek_char(1 + sign).is_some_and(|c| c.is_ascii_digit()) {
                for _ in 0..=sign {
                    self.bump();
                }
                while self.peek_char(0).is_some_and(|c| c.is_ascii_digit()) {
                    self.bump();
                }
            }
        }
        let text = self.text_since(start);
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Token::Number(v)),
            _ => Err(ParseError::new(format!("unable to parse number {text}"), pos)),
        }
    }

    /// Scans a regex literal `/.../` (used after `=~` and `!~`). `\/`
    /// stands for `/`; every other escape is kept for the regex engine.
    /// Returns `None` (position unchanged) when the next token is not a
    /// regex.
    pub fn scan_regex(&mut self) -> Result<Option<(String, Pos)>, ParseError> {
        self.skip_whitespace_and_comments();
        let pos = self.pos;
        if self.peek_char(0) != Some('/') {
            return Ok(None);
        }
        self.bump();
        let mut pattern = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => {
                    return Err(ParseError::new("found unterminated regex, expected /", pos))
                }
                Some('/') => return Ok(Some((pattern, pos))),
                Some('\\') => match self.bump() {
                    Some('/') => pattern.push('/'),
                    Some('\n') | None => {
                        return Err(ParseError::new("found unterminated regex, expected /", pos));
                    }
                    Some(c) => {
                        pattern.push('\\');
                        pattern.push(c);
                    }
                },
                Some(c) => pattern.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<Token> {
        let mut lexer = Lexer::new(text);
        let mut out = Vec::new();
        loop {
            let t = lexer.next_token().unwrap();
            if t.token == Token::Eof {
                return out;
            }
            out.push(t.token);
        }
    }

    #[test]
    fn scans_keywords_identifiers_literals_and_operators() {
        assert_eq!(
            tokens(
                "select \"a b\" FROM cpu WHERE x >= 1.5 AND y != 'it\\'s' -- comment\n; 10 1h30m .5 2.5e3"
            ),
            vec![
                Token::Keyword("SELECT"),
                Token::QuotedIdent("a b".to_string()),
                Token::Keyword("FROM"),
                Token::Ident("cpu".to_string()),
                Token::Keyword("WHERE"),
                Token::Ident("x".to_string()),
                Token::Gte,
                Token::Number(1.5),
                Token::Keyword("AND"),
                Token::Ident("y".to_string()),
                Token::Neq,
                Token::Str("it's".to_string()),
                Token::Semicolon,
                Token::Integer("10".to_string()),
                Token::Duration("1h30m".to_string()),
                Token::Number(0.5),
                Token::Number(2500.0),
            ]
        );
        use Token::*;
        assert_eq!(
            tokens("<> =~ !~ :: <= >= != > < = * / + - % <>= =="),
            [
                Neq,
                EqRegex,
                NeqRegex,
                DoubleColon,
                Lte,
                Gte,
                Neq,
                Gt,
                Lt,
                Eq,
                Mul,
                Div,
                Add,
                Sub,
                Mod,
                Neq,
                Eq,
                Eq,
                Eq
            ]
        );
        for lone in ["!", "! ="] {
            assert!(Lexer::new(lone).next_token().is_err(), "{lone:?}");
        }
        // A lone `:` is its own token (`INTO ...:MEASUREMENT`), `::` another.
        assert_eq!(Lexer::new(": :").next_token().unwrap().token, Token::Colon);
        assert_eq!(Lexer::new("::").next_token().unwrap().token, Token::DoubleColon);
    }

    #[test]
    fn scan_errors_carry_positions() {
        let err = Lexer::new("\n  'abc").next_token().unwrap_err();
        assert_eq!(err.to_string(), "found unterminated string, expected a quote at line 2, char 3");
        let err = Lexer::new("'a\\q'").next_token().unwrap_err();
        assert!(matches!(&err.kind, ParseErrorKind::Syntax(m) if m.contains("bad escape")), "{err}");
        let err = Lexer::new("1.5e999").next_token().unwrap_err();
        assert!(err.to_string().contains("unable to parse number"), "{err}");
        assert!(Lexer::new("#").next_token().is_err());
    }

    #[test]
    fn regex_literals_unescape_only_slashes() {
        let mut lexer = Lexer::new(" /a\\/b\\d+/ rest");
        assert_eq!(lexer.scan_regex().unwrap().unwrap().0, "a/b\\d+");
        assert_eq!(lexer.next_token().unwrap().token, Token::Ident("rest".to_string()));
        assert_eq!(Lexer::new("x").scan_regex().unwrap(), None);
        assert!(Lexer::new("/abc").scan_regex().is_err());
    }
}
