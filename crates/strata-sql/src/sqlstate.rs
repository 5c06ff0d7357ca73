//! SQLSTATE codes for errors (issue 19, "Errors carry proper SQLSTATE
//! codes"). pgwire reports every error a handler raises as `XX000`
//! (internal error); [`SqlStateErrors`] rewrites those from DataFusion and
//! from Strata's engine to the code PostgreSQL would send, so clients can
//! tell a missing table (`42P01`) from a syntax error (`42601`) from an
//! unavailable stream (`57P03`).

use datafusion::error::DataFusionError;
use pgwire::api::{ClientInfo, ErrorHandler};
use pgwire::error::{ErrorInfo, PgWireError};
use strata_engine::tables::streams::StreamError;
use strata_series::EngineError;

use crate::error::SqlError;
use datafusion_postgres::pgwire;

/// Codes used here (PostgreSQL's errcodes appendix).
pub mod code {
    pub const SYNTAX_ERROR: &str = "42601";
    pub const UNDEFINED_TABLE: &str = "42P01";
    pub const UNDEFINED_COLUMN: &str = "42703";
    pub const UNDEFINED_FUNCTION: &str = "42883";
    pub const DATATYPE_MISMATCH: &str = "42804";
    pub const INVALID_CATALOG_NAME: &str = "3D000";
    pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
    pub const DATA_EXCEPTION: &str = "22000";
    pub const DIVISION_BY_ZERO: &str = "22012";
    pub const NOT_NULL_VIOLATION: &str = "23502";
    pub const CHECK_VIOLATION: &str = "23514";
    pub const INSUFFICIENT_RESOURCES: &str = "53000";
    pub const CANNOT_CONNECT_NOW: &str = "57P03";
    pub const QUERY_CANCELED: &str = "57014";
    pub const IO_ERROR: &str = "58030";
    pub const DATA_CORRUPTED: &str = "XX001";
    pub const INTERNAL_ERROR: &str = "XX000";
    pub const PROGRAM_LIMIT_EXCEEDED: &str = "54000";
    pub const INVALID_PARAMETER_VALUE: &str = "22023";
    pub const READ_ONLY_SQL_TRANSACTION: &str = "25006";
    pub const DUPLICATE_TABLE: &str = "42P07";
    pub const INVALID_PASSWORD: &str = "28P01";
}

/// The SQLSTATE of a DataFusion error.
pub fn of_datafusion(e: &DataFusionError) -> &'static str {
    match e {
        DataFusionError::Context(_, inner) => of_datafusion(inner),
        DataFusionError::Shared(inner) => of_datafusion(inner),
        DataFusionError::Diagnostic(_, inner) => of_datafusion(inner),
        DataFusionError::Collection(all) => all.first().map_or(code::INTERNAL_ERROR, of_datafusion),
        DataFusionError::SQL(_, _) => code::SYNTAX_ERROR,
        DataFusionError::NotImplemented(_) => code::FEATURE_NOT_SUPPORTED,
        DataFusionError::SchemaError(e, _) => match e.as_ref() {
            datafusion::common::SchemaError::FieldNotFound { .. } => code::UNDEFINED_COLUMN,
            _ => code::SYNTAX_ERROR,
        },
        DataFusionError::Plan(msg) => of_plan_message(msg),
        DataFusionError::ArrowError(e, _) => match e.as_ref() {
            datafusion::arrow::error::ArrowError::DivideByZero => code::DIVISION_BY_ZERO,
            datafusion::arrow::error::ArrowError::CastError(_) => code::DATATYPE_MISMATCH,
            _ => code::DATA_EXCEPTION,
        },
        DataFusionError::ResourcesExhausted(_) => code::INSUFFICIENT_RESOURCES,
        DataFusionError::IoError(_) | DataFusionError::ObjectStore(_) => code::IO_ERROR,
        DataFusionError::External(e) => match e.downcast_ref::<SqlError>() {
            Some(e) => of_strata(e),
            None => match e.downcast_ref::<DataFusionError>() {
                Some(inner) => of_datafusion(inner),
                None => code::INTERNAL_ERROR,
            },
        },
        DataFusionError::ExecutionJoin(_) => code::QUERY_CANCELED,
        _ => code::INTERNAL_ERROR,
    }
}

/// DataFusion says "table not found" and "function not found" as planning
/// errors with a message, not as variants.
fn of_plan_message(msg: &str) -> &'static str {
    let lower = msg.to_ascii_lowercase();
    if lower.contains("table") && lower.contains("not found") {
        code::UNDEFINED_TABLE
    } else if lower.contains("invalid function") || lower.contains("function") && lower.contains("not found")
    {
        code::UNDEFINED_FUNCTION
    } else if lower.contains("no field named") {
        code::UNDEFINED_COLUMN
    } else {
        code::SYNTAX_ERROR
    }
}

/// The SQLSTATE of an error of Strata's tables.
pub fn of_strata(e: &SqlError) -> &'static str {
    match e {
        SqlError::Engine(e) => of_engine(e),
        SqlError::Stream(StreamError::Invalid(_)) => code::DATA_EXCEPTION,
        SqlError::Stream(StreamError::AlreadyExists(_)) => code::DUPLICATE_TABLE,
        SqlError::Stream(StreamError::NotFound(_)) => code::UNDEFINED_TABLE,
        SqlError::Stream(StreamError::Unavailable(_)) => code::CANNOT_CONNECT_NOW,
        SqlError::Stream(StreamError::Engine(e)) => of_engine(e),
        SqlError::Unfit(_) => code::NOT_NULL_VIOLATION,
        SqlError::Rejected(_) => code::CHECK_VIOLATION,
        SqlError::UnknownDatabase(_) => code::INVALID_CATALOG_NAME,
        SqlError::Setup(_) => code::INTERNAL_ERROR,
    }
}

fn of_engine(e: &EngineError) -> &'static str {
    match e {
        EngineError::UnknownDatabase(_) => code::INVALID_CATALOG_NAME,
        EngineError::Io(_) => code::IO_ERROR,
        EngineError::Corruption { .. } => code::DATA_CORRUPTED,
        EngineError::SeriesLimit { .. } | EngineError::RequestTooLarge { .. } => code::PROGRAM_LIMIT_EXCEEDED,
        EngineError::InvalidArgument(_) | EngineError::InvalidDatabaseName(..) => {
            code::INVALID_PARAMETER_VALUE
        }
        EngineError::WritesStopped { .. } => code::READ_ONLY_SQL_TRANSACTION,
        EngineError::GroupFailed(inner) => of_engine(inner),
        _ => code::DATA_EXCEPTION,
    }
}

/// pgwire's error hook: gives DataFusion's and Strata's errors their codes.
pub struct SqlStateErrors;

impl ErrorHandler for SqlStateErrors {
    fn on_error<C: ClientInfo>(&self, _client: &C, error: &mut PgWireError) {
        let PgWireError::ApiError(inner) = error else { return };
        let code = if let Some(df) = inner.downcast_ref::<DataFusionError>() {
            of_datafusion(df)
        } else if let Some(sql) = inner.downcast_ref::<SqlError>() {
            of_strata(sql)
        } else if inner.is::<datafusion::sql::sqlparser::parser::ParserError>() {
            code::SYNTAX_ERROR
        } else {
            return;
        };
        let message = inner.to_string();
        *error =
            PgWireError::UserError(Box::new(ErrorInfo::new("ERROR".to_string(), code.to_string(), message)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planning_and_strata_errors_get_postgres_codes() {
        let missing = DataFusionError::Plan("table 'strata.public.nope' not found".into());
        assert_eq!(of_datafusion(&missing), code::UNDEFINED_TABLE);
        let ctx = DataFusionError::Context("while planning".into(), Box::new(missing));
        assert_eq!(of_datafusion(&ctx), code::UNDEFINED_TABLE);
        let unavailable = SqlError::Stream(StreamError::Unavailable("stream s failed to recover".into()));
        assert_eq!(of_datafusion(&unavailable.into_datafusion()), code::CANNOT_CONNECT_NOW);
        assert_eq!(of_datafusion(&DataFusionError::NotImplemented("x".into())), code::FEATURE_NOT_SUPPORTED);
        assert_eq!(of_strata(&SqlError::UnknownDatabase("d".into())), code::INVALID_CATALOG_NAME);
    }
}
