//! The target of `SELECT ... INTO` (`[db.][rp.]m` or `...:MEASUREMENT`)
//! and how it prints.

use std::fmt;

use super::{write_db_rp_prefix, Ident};

/// Where `SELECT ... INTO` writes: `[db.][rp.]m`, or with `:MEASUREMENT`
/// (`measurement` `None`) each source measurement's own name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntoTarget {
    pub database: Option<String>,
    pub retention_policy: Option<String>,
    pub measurement: Option<String>,
}

impl fmt::Display for IntoTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_db_rp_prefix(f, &self.database, &self.retention_policy)?;
        match &self.measurement {
            Some(m) => write!(f, "{}", Ident(m)),
            None => f.write_str(":MEASUREMENT"),
        }
    }
}
