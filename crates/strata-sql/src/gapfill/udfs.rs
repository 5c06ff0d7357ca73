//! The gap-filling functions as markers: `date_bin_gapfill(stride, time
//! [, origin])` types as `date_bin`, `locf(x)` and `interpolate(x)` as their
//! argument. [`super::rule`] rewrites them away; one left in a plan (outside
//! a grouped query with a time range) fails with an error that says how to
//! use it.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{exec_err, plan_err};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// `date_bin_gapfill(stride, time [, origin])`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DateBinGapfill {
    date_bin: ScalarUDF,
}

impl DateBinGapfill {
    pub const NAME: &'static str = "date_bin_gapfill";

    pub fn udf() -> ScalarUDF {
        let date_bin = datafusion::functions::datetime::date_bin().as_ref().clone();
        ScalarUDF::new_from_impl(DateBinGapfill { date_bin })
    }
}

impl ScalarUDFImpl for DateBinGapfill {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn signature(&self) -> &Signature {
        self.date_bin.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.date_bin.return_type(arg_types)
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        exec_err!(
            "date_bin_gapfill() must be a GROUP BY expression of a query with a time range \
             (WHERE time >= ... AND time < ...)"
        )
    }
}

/// How a marked column fills an empty bucket.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FillMarker {
    /// `locf(x)`: the last non-null value before it (InfluxQL `fill(previous)`).
    Locf,
    /// `interpolate(x)`: on the line between the non-null values around it
    /// (InfluxQL `fill(linear)`).
    Interpolate,
}

impl FillMarker {
    pub fn name(self) -> &'static str {
        match self {
            FillMarker::Locf => "locf",
            FillMarker::Interpolate => "interpolate",
        }
    }
}

/// `locf(x)` or `interpolate(x)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct FillFunction {
    marker: FillMarker,
    signature: Signature,
}

impl FillFunction {
    pub fn udf(marker: FillMarker) -> ScalarUDF {
        ScalarUDF::new_from_impl(FillFunction { marker, signature: Signature::any(1, Volatility::Immutable) })
    }

    pub fn marker(&self) -> FillMarker {
        self.marker
    }
}

impl ScalarUDFImpl for FillFunction {
    fn name(&self) -> &str {
        self.marker.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [t] if self.marker == FillMarker::Interpolate && !t.is_numeric() => {
                plan_err!("interpolate() needs a numeric aggregate, not {t}")
            }
            [t] => Ok(t.clone()),
            _ => plan_err!("{}() takes one argument", self.marker.name()),
        }
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        exec_err!(
            "{}() fills the gaps of date_bin_gapfill(): use it on an aggregate, as in \
             SELECT date_bin_gapfill(INTERVAL '1 minute', time), {}(max(x)) ... GROUP BY 1",
            self.marker.name(),
            self.marker.name()
        )
    }
}
