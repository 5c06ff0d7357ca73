//! Parsing `CREATE DATABASE ... WITH`, `CREATE`, `ALTER` and `DROP
//! RETENTION POLICY` as InfluxDB 1.8's parser does: the same clause order
//! (any order for ALTER), `INF` as a duration, a replication factor in
//! 1..=2147483647, and its "expected" lists in errors.

use strata_series::retention::PolicySpec;

use super::{parse_duration, ParseError, Parser, Statement, Token};

impl Parser {
    /// After `CREATE`: `DATABASE ...` or `RETENTION POLICY ...`.
    pub(super) fn create(&mut self) -> Result<Statement, ParseError> {
        let t = self.next()?;
        match t.token {
            Token::Keyword("DATABASE") => self.create_database(),
            Token::Keyword("RETENTION") => {
                let (name, on) = self.policy_name_on()?;
                self.expect_keyword("DURATION")?;
                let duration_ns = Some(self.policy_duration()?);
                self.expect_keyword("REPLICATION")?;
                let replication = Some(self.replication()?);
                let shard_duration_ns = self.shard_duration()?;
                let make_default = self.accept_keyword("DEFAULT")?;
                let spec = PolicySpec { duration_ns, replication, shard_duration_ns, make_default };
                Ok(Statement::CreateRetentionPolicy { name, on, spec })
            }
            _ => Err(ParseError::expected(&t.found(), &["DATABASE", "RETENTION"], t.pos)),
        }
    }

    /// `ALTER RETENTION POLICY name ON db` and, in any order, at least one
    /// of `DURATION d`, `REPLICATION n`, `SHARD DURATION d`, `DEFAULT`.
    pub(super) fn alter(&mut self) -> Result<Statement, ParseError> {
        self.expect_keyword("RETENTION")?;
        let (name, on) = self.policy_name_on()?;
        let mut spec = PolicySpec::default();
        for i in 0..4 {
            let t = self.peek()?;
            match t.token {
                Token::Keyword("DURATION") => {
                    self.next()?;
                    spec.duration_ns = Some(self.policy_duration()?);
                }
                Token::Keyword("REPLICATION") => {
                    self.next()?;
                    spec.replication = Some(self.replication()?);
                }
                Token::Keyword("SHARD") => spec.shard_duration_ns = self.shard_duration()?,
                Token::Keyword("DEFAULT") => {
                    self.next()?;
                    spec.make_default = true;
                }
                _ if i == 0 => {
                    let expected = ["DURATION", "REPLICATION", "SHARD", "DEFAULT"];
                    return Err(ParseError::expected(&t.found(), &expected, t.pos));
                }
                _ => break,
            }
        }
        Ok(Statement::AlterRetentionPolicy { name, on, spec })
    }

    /// After `DROP RETENTION`: `POLICY name ON db`.
    pub(super) fn drop_retention_policy(&mut self) -> Result<Statement, ParseError> {
        let (name, on) = self.policy_name_on()?;
        Ok(Statement::DropRetentionPolicy { name, on })
    }

    /// `name [WITH [DURATION d] [REPLICATION n] [SHARD DURATION d] [NAME rp]]`.
    fn create_database(&mut self) -> Result<Statement, ParseError> {
        let name = self.ident()?;
        if !self.accept_keyword("WITH")? {
            return Ok(Statement::CreateDatabase { name, with: None });
        }
        let mut spec = PolicySpec::default();
        if self.accept_keyword("DURATION")? {
            spec.duration_ns = Some(self.policy_duration()?);
        }
        if self.accept_keyword("REPLICATION")? {
            spec.replication = Some(self.replication()?);
        }
        spec.shard_duration_ns = self.shard_duration()?;
        let rp = if self.accept_keyword("NAME")? { Some(self.ident()?) } else { None };
        if spec == PolicySpec::default() && rp.is_none() {
            let t = self.peek()?;
            return Err(ParseError::expected(
                &t.found(),
                &["DURATION", "REPLICATION", "SHARD", "NAME"],
                t.pos,
            ));
        }
        Ok(Statement::CreateDatabase { name, with: Some((spec, rp)) })
    }

    /// `POLICY name ON db`.
    fn policy_name_on(&mut self) -> Result<(String, String), ParseError> {
        self.expect_keyword("POLICY")?;
        let name = self.ident()?;
        self.expect_keyword("ON")?;
        Ok((name, self.ident()?))
    }

    /// A duration literal or `INF` (0).
    fn policy_duration(&mut self) -> Result<i64, ParseError> {
        let t = self.next()?;
        match &t.token {
            Token::Keyword("INF") => Ok(0),
            Token::Duration(text) => parse_duration(text, false).map_err(|e| ParseError::new(e, t.pos)),
            _ => Err(ParseError::expected(&t.found(), &["duration"], t.pos)),
        }
    }

    /// `[SHARD DURATION d]`.
    fn shard_duration(&mut self) -> Result<Option<i64>, ParseError> {
        if !self.accept_keyword("SHARD")? {
            return Ok(None);
        }
        self.expect_keyword("DURATION")?;
        Ok(Some(self.policy_duration()?))
    }

    /// A replication factor, 1 <= n <= 2147483647.
    fn replication(&mut self) -> Result<u32, ParseError> {
        let pos = self.peek()?.pos;
        let n = self.unsigned()?;
        match u32::try_from(n) {
            Ok(n) if (1..=i32::MAX as u32).contains(&n) => Ok(n),
            _ => Err(ParseError::new(format!("invalid value {n}: must be 1 <= n <= 2147483647"), pos)),
        }
    }
}
