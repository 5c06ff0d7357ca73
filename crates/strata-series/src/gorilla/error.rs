//! Errors of the Gorilla block codec: a value of the wrong type pushed into a
//! block, or block bytes that do not decode (`Corrupt`, with what was wrong).

use crate::model::FieldType;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("type mismatch: the block holds {} values, got a {} value", .expected.influx_name(), .found.influx_name())]
    TypeMismatch { expected: FieldType, found: FieldType },
    #[error("corrupt series block: {0}")]
    Corrupt(String),
}

impl CodecError {
    pub(crate) fn corrupt(what: impl Into<String>) -> CodecError {
        CodecError::Corrupt(what.into())
    }
}
