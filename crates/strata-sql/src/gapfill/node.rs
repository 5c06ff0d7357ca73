//! The logical plan node of gap filling: between an aggregate grouped by
//! `date_bin` and what reads its rows, it adds a row for every empty bucket
//! of each group. Its schema is its input's.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{plan_err, DFSchema, DFSchemaRef};
use datafusion::error::Result;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNodeCore};

use super::fill::Buckets;
use super::udfs::FillMarker;
use crate::filters::time_range_of;

/// How columns (by index) fill when not with NULL.
pub type Fills = Vec<(usize, FillMarker)>;

/// What [`super::exec::GapFillExec`] needs: columns by index in the input.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GapFillParams {
    /// The bucket column (`date_bin`'s output, nanosecond timestamps).
    pub time: usize,
    /// The other grouping columns: each of their value sets is a group.
    pub groups: Vec<usize>,
    /// Columns filled otherwise than with NULL.
    pub fills: Fills,
    /// `date_bin`'s stride and origin.
    pub stride_ns: i64,
    pub origin_ns: i64,
}

impl GapFillParams {
    /// Whether empty buckets get a value in `column` (not the time or a group key).
    pub fn is_filled(&self, column: usize) -> bool {
        column != self.time && !self.groups.contains(&column)
    }

    /// How `column` fills when not with NULL.
    pub fn fill_of(&self, column: usize) -> Option<FillMarker> {
        self.fills.iter().find(|(c, _)| *c == column).map(|(_, m)| *m)
    }
}

/// Gap filling over `input`: its schema is the input's with the filled
/// (aggregate) columns nullable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GapFill {
    pub input: LogicalPlan,
    pub params: GapFillParams,
    schema: DFSchemaRef,
}

impl GapFill {
    pub fn try_new(input: LogicalPlan, params: GapFillParams) -> Result<GapFill> {
        let fields = input
            .schema()
            .iter()
            .enumerate()
            .map(|(i, (qualifier, field))| {
                let field = if params.is_filled(i) {
                    Arc::new(field.as_ref().clone().with_nullable(true))
                } else {
                    field.clone()
                };
                (qualifier.cloned(), field)
            })
            .collect();
        let schema = DFSchema::new_with_metadata(fields, input.schema().metadata().clone())?;
        Ok(GapFill { input, params, schema: Arc::new(schema) })
    }
}

impl GapFill {
    /// The buckets: those of the time range the filters below allow, which
    /// must have both ends. Asked at physical planning, when the filters
    /// are simplified and may have moved into the table scans.
    pub fn buckets(&self) -> Result<Buckets> {
        let range = time_range_of(input_conjuncts(&self.input).iter());
        if range.min_ns == i64::MIN || range.max_ns == i64::MAX {
            return plan_err!(
                "date_bin_gapfill() needs a time range in WHERE with both ends (time >= ... AND time < ...)"
            );
        }
        Ok(Buckets::covering(range.min_ns, range.max_ns, self.params.stride_ns, self.params.origin_ns))
    }
}

/// Every filter conjunct below `plan`: its `Filter` predicates and the
/// filters its table scans answer.
fn input_conjuncts(plan: &LogicalPlan) -> Vec<Expr> {
    let mut out = Vec::new();
    let _ = plan.apply(|node| {
        match node {
            LogicalPlan::Filter(f) => out.extend(split_conjunction(&f.predicate).into_iter().cloned()),
            LogicalPlan::TableScan(s) => {
                for f in &s.filters {
                    out.extend(split_conjunction(f).into_iter().cloned());
                }
            }
            _ => {}
        }
        Ok(TreeNodeRecursion::Continue)
    });
    out
}

impl PartialOrd for GapFill {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        match self.input.partial_cmp(&other.input)? {
            Ordering::Equal => Some(self.params.cmp(&other.params)),
            o => Some(o),
        }
    }
}

impl UserDefinedLogicalNodeCore for GapFill {
    fn name(&self) -> &str {
        "GapFill"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.input]
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        Vec::new()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let p = &self.params;
        let fills: Vec<String> = p.fills.iter().map(|(c, m)| format!("#{c} {}", m.name())).collect();
        write!(
            f,
            "GapFill: time=#{} every {} ns from {}, groups={:?}, fills=[{}]",
            p.time,
            p.stride_ns,
            p.origin_ns,
            p.groups,
            fills.join(", ")
        )
    }

    fn with_exprs_and_inputs(&self, _exprs: Vec<Expr>, mut inputs: Vec<LogicalPlan>) -> Result<Self> {
        if inputs.len() != 1 {
            return plan_err!("GapFill has one input, not {}", inputs.len());
        }
        let input = inputs.swap_remove(0);
        // The parameters index columns: the input's columns must not change.
        if input.schema().fields().len() != self.input.schema().fields().len() {
            return plan_err!("GapFill's input lost or gained columns");
        }
        GapFill::try_new(input, self.params.clone())
    }
}
