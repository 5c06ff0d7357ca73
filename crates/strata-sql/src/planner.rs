//! The sessions' physical planner: DataFusion's own, plus the extension
//! nodes of this crate ([`crate::gapfill::node::GapFill`]).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::error::Result;
use datafusion::execution::context::QueryPlanner;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{LogicalPlan, UserDefinedLogicalNode};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};

use crate::gapfill::exec::GapFillExec;
use crate::gapfill::node::GapFill;

/// See the module comment.
#[derive(Debug, Default)]
pub struct StrataQueryPlanner;

#[async_trait]
impl QueryPlanner for StrataQueryPlanner {
    async fn create_physical_plan(
        &self,
        plan: &LogicalPlan,
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let planner = DefaultPhysicalPlanner::with_extension_planners(vec![Arc::new(GapFillPlanner)]);
        planner.create_physical_plan(plan, session).await
    }
}

struct GapFillPlanner;

#[async_trait]
impl ExtensionPlanner for GapFillPlanner {
    async fn plan_extension(
        &self,
        _planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        _logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        _session: &dyn Session,
        _planning_ctx: &PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(gapfill) = node.as_any().downcast_ref::<GapFill>() else { return Ok(None) };
        let [input] = physical_inputs else {
            return datafusion::common::internal_err!("GapFill has one input");
        };
        Ok(Some(Arc::new(GapFillExec::new(input.clone(), gapfill.params.clone(), gapfill.buckets()?))))
    }
}
