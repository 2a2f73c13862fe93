//! Subplans a query repeats, computed once.
//!
//! DataFusion inlines a common table expression at each place the query names it: TPC-H Q15
//! names its `revenue0` view twice (joined with `supplier`, and under `max(total_revenue)`),
//! so `lineitem` was scanned and aggregated twice, the query's whole cost, where DuckDB
//! computes the view once. [`ShareRepeatedSubplans`] finds aggregates whose subplans are the
//! same and hands each consumer the rows of one run of it ([`SharedExec`]).
//!
//! Only aggregates over filters, projections, repartitions, coalescing and tamis scans are
//! shared: their output is bounded by their groups (it is held in memory for every consumer),
//! and for these operators the plan's text and schema say all they compute. The scans are compared by what
//! they read ([`TamisExec::reads_as`]), and the shared one is stripped of the runtime filters
//! joins pushed into either copy: a join above one consumer may not filter the rows of another.

use std::fmt;
use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::Result;
use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    collect_partitioned, displayable, DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties,
};
use futures::{StreamExt, TryStreamExt};
use tokio::sync::OnceCell;

use crate::exec::TamisExec;
use crate::few_groups::FewGroupsExec;

/// The batches of a subplan, by output partition, computed by the first consumer to ask.
type Computed = Arc<OnceCell<Vec<Vec<arrow::array::RecordBatch>>>>;

/// Hands every consumer the rows of one run of `input`: the first partition any consumer
/// executes runs all of `input`'s partitions, the others wait for it and read what it kept.
#[derive(Debug)]
pub struct SharedExec {
    input: Arc<dyn ExecutionPlan>,
    computed: Computed,
    consumers: usize,
}

impl SharedExec {
    fn new(input: Arc<dyn ExecutionPlan>, consumers: usize) -> SharedExec {
        SharedExec {
            input,
            computed: Arc::default(),
            consumers,
        }
    }
}

impl DisplayAs for SharedExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "SharedExec: computed once for {} consumers",
            self.consumers
        )
    }
}

impl ExecutionPlan for SharedExec {
    fn name(&self) -> &str {
        "SharedExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let child = children.swap_remove(0);
        if Arc::ptr_eq(&child, &self.input) {
            return Ok(self);
        }
        // Another input is another computation: it shares nothing with this one's.
        Ok(Arc::new(SharedExec::new(child, self.consumers)))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = Arc::clone(&self.input);
        let computed = Arc::clone(&self.computed);
        let batches = futures::stream::once(async move {
            let all = computed
                .get_or_try_init(|| collect_partitioned(input, context))
                .await?;
            let part = all.get(partition).cloned().unwrap_or_default();
            Ok::<_, DataFusionError>(futures::stream::iter(part.into_iter().map(Ok)))
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.input.schema(),
            batches.boxed(),
        )))
    }
}

/// Replaces aggregates that occur more than once in a plan, over the same subplan, with one
/// [`SharedExec`] each. Runs last: the plan it compares is the one that runs.
#[derive(Debug, Default)]
pub struct ShareRepeatedSubplans;

impl PhysicalOptimizerRule for ShareRepeatedSubplans {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // Candidates in plan order, with their text (the quick test before the exact one).
        let mut candidates: Vec<(String, Arc<dyn ExecutionPlan>)> = Vec::new();
        plan.apply(|node| {
            if is_candidate(node) {
                let text = displayable(node.as_ref()).indent(true).to_string();
                candidates.push((text, Arc::clone(node)));
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
        // Groups of the same subplan, each in plan order.
        let mut groups: Vec<Vec<Arc<dyn ExecutionPlan>>> = Vec::new();
        for (i, (text, node)) in candidates.iter().enumerate() {
            let first = (candidates[..i].iter())
                .find(|(t, n)| t == text && same_subplan(n, node))
                .map(|(_, n)| n);
            match first.and_then(|f| groups.iter_mut().find(|g| Arc::ptr_eq(&g[0], f))) {
                Some(group) => group.push(Arc::clone(node)),
                None => groups.push(vec![Arc::clone(node)]),
            }
        }
        groups.retain(|g| g.len() > 1);
        if groups.is_empty() {
            return Ok(plan);
        }
        let reads = reads_once(&plan, &groups)?;
        // Each group's one node, for all its members.
        let shared = (groups.iter())
            .map(|g| {
                let input = for_sharing(Arc::clone(&g[0]), &reads)?;
                Ok(Arc::new(SharedExec::new(input, g.len())) as Arc<dyn ExecutionPlan>)
            })
            .collect::<Result<Vec<_>>>()?;
        // Outermost first: a member inside another group's shared subplan stays as it is.
        plan.transform_down(|node| {
            let group = (groups.iter()).position(|g| g.iter().any(|m| Arc::ptr_eq(m, &node)));
            Ok(match group {
                Some(g) => Transformed::new(Arc::clone(&shared[g]), true, TreeNodeRecursion::Jump),
                None => Transformed::no(node),
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "tamis_share_repeated_subplans"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// An aggregate's final stage over operators whose text says all they compute.
fn is_candidate(node: &Arc<dyn ExecutionPlan>) -> bool {
    let final_stage = node.downcast_ref::<AggregateExec>().is_some_and(|a| {
        matches!(
            a.mode(),
            AggregateMode::Final
                | AggregateMode::FinalPartitioned
                | AggregateMode::Single
                | AggregateMode::SinglePartitioned
        )
    });
    final_stage && all_shareable(node)
}

fn all_shareable(node: &Arc<dyn ExecutionPlan>) -> bool {
    let known = node.is::<AggregateExec>()
        || node.is::<ProjectionExec>()
        || node.is::<FilterExec>()
        || node.is::<RepartitionExec>()
        || node.is::<CoalescePartitionsExec>()
        || node.is::<CooperativeExec>()
        || node.is::<FewGroupsExec>()
        || node.is::<TamisExec>();
    known && node.children().into_iter().all(all_shareable)
}

/// Whether `a` and `b` compute the same rows: the same operators with the same text and
/// schemas, over scans that read the same ([`TamisExec::reads_as`]).
fn same_subplan(a: &Arc<dyn ExecutionPlan>, b: &Arc<dyn ExecutionPlan>) -> bool {
    if let (Some(x), Some(y)) = (a.downcast_ref::<TamisExec>(), b.downcast_ref::<TamisExec>()) {
        return x.reads_as(y);
    }
    let line = |p: &Arc<dyn ExecutionPlan>| displayable(p.as_ref()).one_line().to_string();
    let (ca, cb) = (a.children(), b.children());
    a.name() == b.name()
        && a.schema() == b.schema()
        && line(a) == line(b)
        && ca.len() == cb.len()
        && ca.iter().zip(&cb).all(|(x, y)| same_subplan(x, y))
}

/// Each scan's (table, columns read), a group's subplan counted once (only its first member
/// is walked).
fn reads_once(
    plan: &Arc<dyn ExecutionPlan>,
    groups: &[Vec<Arc<dyn ExecutionPlan>>],
) -> Result<Vec<(*const tamis::Dataset, Vec<String>)>> {
    let mut reads = Vec::new();
    plan.apply(|node| {
        if groups
            .iter()
            .any(|g| g[1..].iter().any(|m| Arc::ptr_eq(m, node)))
        {
            return Ok(TreeNodeRecursion::Jump);
        }
        if let Some(scan) = node.downcast_ref::<TamisExec>() {
            reads.push((scan.table_id(), scan.read_columns()));
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(reads)
}

/// `plan` to be shared: its scans without runtime filters, and keeping on their first read
/// only the pages of columns a scan outside it reads too ([`crate::rules::KeepSharedPages`],
/// which ran before, counted the copies this rule merges: Q15's one scan of `lineitem` kept
/// every page it read, for a second scan that no longer runs).
fn for_sharing(
    plan: Arc<dyn ExecutionPlan>,
    reads: &[(*const tamis::Dataset, Vec<String>)],
) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        let Some(scan) = node.downcast_ref::<TamisExec>() else {
            return Ok(Transformed::no(node));
        };
        let table = scan.table_id();
        let read_elsewhere = |column: &String| {
            let readers = (reads.iter())
                .filter(|(t, columns)| *t == table && columns.contains(column))
                .count();
            readers > 1
        };
        let kept: Vec<String> = (scan.first_reads_kept().iter())
            .filter(|c| read_elsewhere(c))
            .cloned()
            .collect();
        let shared = scan.without_runtime_filters().keeping_first_reads(kept);
        Ok(Transformed::yes(Arc::new(shared) as Arc<dyn ExecutionPlan>))
    })
    .map(|t| t.data)
}
