//! The errors this crate raises inside DataFusion (wrapped as
//! `DataFusionError::External`), typed so [`crate::sqlstate`] can give each
//! its SQLSTATE code.

use strata_engine::tables::streams::StreamError;
use strata_series::EngineError;

/// Why a SQL operation on Strata's tables failed.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The series engine failed or refused.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// An event stream failed or refused.
    #[error(transparent)]
    Stream(#[from] StreamError),
    /// A row of an `INSERT` does not fit the table (no field, a NULL time
    /// where one is needed, a value the table cannot hold).
    #[error("{0}")]
    Unfit(String),
    /// Part of an `INSERT` was rejected by the engine; nothing of the
    /// statement is acknowledged beyond what the message says.
    #[error("{0}")]
    Rejected(String),
    /// The connection names a database that does not exist.
    #[error("database \"{0}\" does not exist")]
    UnknownDatabase(String),
    /// A session could not be set up (the pg_catalog layer refused).
    #[error("cannot set up the SQL session: {0}")]
    Setup(String),
}

impl SqlError {
    /// Wraps this error for DataFusion.
    pub fn into_datafusion(self) -> datafusion::error::DataFusionError {
        datafusion::error::DataFusionError::External(Box::new(self))
    }
}

/// Wraps any of this crate's error sources for DataFusion.
pub fn df_err(e: impl Into<SqlError>) -> datafusion::error::DataFusionError {
    e.into().into_datafusion()
}
