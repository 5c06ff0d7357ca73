//! Time-series functions SQL users of other time-series databases expect
//! (issue 19, "Time-series functions"), as aliases of DataFusion's own:
//! `time_bucket(width, time)` (TimescaleDB) is `date_bin(width, time)`.
//! `first`/`last` by time are DataFusion's `first_value(x ORDER BY time)`
//! and `last_value(x ORDER BY time)`.

use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;

/// Adds the aliases to a session.
pub fn register(ctx: &SessionContext) {
    let date_bin = datafusion::functions::datetime::date_bin();
    let time_bucket: ScalarUDF = date_bin.as_ref().clone().with_aliases(["time_bucket"]);
    ctx.register_udf(time_bucket);
}
