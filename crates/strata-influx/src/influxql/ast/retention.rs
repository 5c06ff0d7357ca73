//! The canonical text of the retention policy statements (`CREATE`,
//! `ALTER`, `DROP RETENTION POLICY`, `CREATE DATABASE ... WITH`), in
//! InfluxDB 1.8's clause order; `INF` for an infinite duration.

use std::fmt;

use strata_series::retention::PolicySpec;

use super::super::time::format_duration;
use super::Ident;

/// `DURATION d`, `INF` for 0.
fn duration(ns: i64) -> String {
    match ns {
        0 => "INF".to_string(),
        ns => format_duration(ns),
    }
}

/// The clauses of `spec` that are set, in InfluxDB's order; `name` is the
/// `NAME rp` of `CREATE DATABASE ... WITH`.
pub(super) struct SpecClauses<'a> {
    pub spec: &'a PolicySpec,
    pub name: Option<&'a str>,
}

impl fmt::Display for SpecClauses<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.spec;
        if let Some(d) = s.duration_ns {
            write!(f, " DURATION {}", duration(d))?;
        }
        if let Some(n) = s.replication {
            write!(f, " REPLICATION {n}")?;
        }
        if let Some(d) = s.shard_duration_ns {
            write!(f, " SHARD DURATION {}", duration(d))?;
        }
        if let Some(name) = self.name {
            write!(f, " NAME {}", Ident(name))?;
        }
        if s.make_default {
            f.write_str(" DEFAULT")?;
        }
        Ok(())
    }
}

/// `<verb> RETENTION POLICY name ON db` and its clauses.
pub(super) fn write_policy_statement(
    f: &mut fmt::Formatter<'_>,
    verb: &str,
    name: &str,
    on: &str,
    spec: Option<&PolicySpec>,
) -> fmt::Result {
    write!(f, "{verb} RETENTION POLICY {} ON {}", Ident(name), Ident(on))?;
    match spec {
        Some(spec) => write!(f, "{}", SpecClauses { spec, name: None }),
        None => Ok(()),
    }
}
