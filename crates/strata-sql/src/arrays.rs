//! Arrow arrays from engine values: one column of a field (or an event
//! attribute) of a known type, NULL where there is no value.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder, UInt64Builder,
};
use datafusion::error::{DataFusionError, Result};
use strata_series::{FieldType, FieldValue};

/// The column of `values` (one per row) of type `ty`; `name` says whose
/// column it is when a value has another type.
pub fn values_array<'a>(
    name: &str,
    ty: FieldType,
    values: impl ExactSizeIterator<Item = Option<&'a FieldValue>>,
) -> Result<ArrayRef> {
    let mismatch = |v: &FieldValue| {
        DataFusionError::Internal(format!("{name} holds a {:?} value, not {ty:?}", v.field_type()))
    };
    let rows = values.len();
    macro_rules! column {
        ($builder:expr, $variant:ident, $conv:expr) => {{
            let mut b = $builder;
            for v in values {
                match v {
                    None => b.append_null(),
                    Some(FieldValue::$variant(v)) => b.append_value($conv(v)),
                    Some(other) => return Err(mismatch(other)),
                }
            }
            Arc::new(b.finish()) as ArrayRef
        }};
    }
    Ok(match ty {
        FieldType::Float => column!(Float64Builder::with_capacity(rows), Float, |v: &f64| *v),
        FieldType::Integer => column!(Int64Builder::with_capacity(rows), Integer, |v: &i64| *v),
        FieldType::Unsigned => column!(UInt64Builder::with_capacity(rows), Unsigned, |v: &u64| *v),
        FieldType::Boolean => column!(BooleanBuilder::with_capacity(rows), Boolean, |v: &bool| *v),
        FieldType::String => column!(StringBuilder::with_capacity(rows, 0), String, String::as_str),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, AsArray};

    #[test]
    fn values_of_the_column_type_become_an_array_with_nulls() {
        let values = [Some(FieldValue::String("a".into())), None];
        let a = values_array("s", FieldType::String, values.iter().map(Option::as_ref)).unwrap();
        assert_eq!(a.as_string::<i32>().value(0), "a");
        assert!(a.is_null(1));
    }

    #[test]
    fn a_value_of_another_type_is_an_error_naming_the_column() {
        let values = [Some(FieldValue::Integer(1))];
        let err = values_array("usage", FieldType::Float, values.iter().map(Option::as_ref)).unwrap_err();
        assert!(err.to_string().contains("usage holds a Integer value"), "{err}");
    }
}
