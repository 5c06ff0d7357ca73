//! Time-series functions SQL users of other time-series databases expect
//! (issue 19, "Time-series functions"), as DataFusion's own under other
//! names: `time_bucket(width, time)` (TimescaleDB) is `date_bin(width,
//! time)`. `first`/`last` by time are DataFusion's `first_value(x ORDER BY
//! time)` and `last_value(x ORDER BY time)`. Gap filling's
//! `date_bin_gapfill`, `locf` and `interpolate` are [`crate::gapfill`]'s.

use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature};
use datafusion::prelude::SessionContext;

use crate::gapfill::udfs::{DateBinGapfill, FillFunction, FillMarker};

/// `time_bucket`: `date_bin` under TimescaleDB's name. A function of its own
/// (not an alias, which would wrap the built-in `date_bin` and hide it from
/// the rules that recognise it).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TimeBucket {
    date_bin: ScalarUDF,
}

impl TimeBucket {
    pub fn udf() -> ScalarUDF {
        let date_bin = datafusion::functions::datetime::date_bin().as_ref().clone();
        ScalarUDF::new_from_impl(TimeBucket { date_bin })
    }
}

impl ScalarUDFImpl for TimeBucket {
    fn name(&self) -> &str {
        "time_bucket"
    }

    fn signature(&self) -> &Signature {
        self.date_bin.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.date_bin.return_type(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.date_bin.invoke_with_args(args)
    }
}

/// Adds the functions to a session.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(TimeBucket::udf());
    ctx.register_udf(DateBinGapfill::udf());
    ctx.register_udf(FillFunction::udf(FillMarker::Locf));
    ctx.register_udf(FillFunction::udf(FillMarker::Interpolate));
}
