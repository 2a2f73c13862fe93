//! Physical optimizer rules of our own: probe aggregates, so join keys reach their scans
//! (paper 000, T16); tap build sides for keys too many to list; and keep the pages of a
//! table scanned twice in one plan on their first read.
//!
//! A decorrelated subquery such as TPC-H Q17's `l_quantity < (SELECT 0.2 * avg(l_quantity)
//! FROM lineitem WHERE l_partkey = p_partkey)` becomes an inner join (or, in DataFusion 55, a
//! right semi join with the comparison as its filter) between the outer rows and an aggregate
//! grouped by the join key. DataFusion's join selection builds the hash table
//! from the smaller-looking side, and the aggregate (200 000 groups) usually looks smaller than
//! the outer rows' estimate, so the aggregate is the build side: its scan reads every row, and
//! the keys of the outer side (a few hundred parts) never reach it.
//!
//! Joining on the aggregate's group key lets the join's keys filter the aggregate's input:
//! each group either survives whole or is dropped, its aggregate unchanged. This rule swaps
//! such a join when the outer side is estimated smaller than the aggregate's input, so the
//! aggregate is probed. DataFusion's dynamic filter of the join then passes through the
//! aggregate (its grouping column) into the tamis scan below, which turns it into an `IN`
//! list or a Bloom filter and reads only the groups that can join.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{JoinType, NullEquality, Result};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::AggregateExec;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
use datafusion::physical_plan::ExecutionPlan;

use crate::tap::{tappable, KeyTap, KeyTapExec};
use crate::TamisExec;

/// Makes an aggregate grouped by an inner or semi join's key the join's probe side (see the
/// module documentation). Runs right after DataFusion's join selection, before repartitioning.
#[derive(Debug, Default)]
pub struct ProbeAggregates;

impl PhysicalOptimizerRule for ProbeAggregates {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        rewrite_hash_joins(plan, config, |_, join| {
            // Inner, or the semi join DataFusion decorrelates Q17's subquery into (the
            // aggregate on the build side, the outer rows kept): swapped, a left semi join
            // whose build side is the outer rows, the aggregate probed.
            if !matches!(join.join_type(), JoinType::Inner | JoinType::RightSemi) {
                return Ok(None);
            }
            // Every key of the build side must be a group key of one aggregate over a scan.
            let mut scanned_rows = None;
            for (build_key, _) in join.on() {
                let Some(column) = build_key.downcast_ref::<Column>() else {
                    return Ok(None);
                };
                match grouped_scan_rows(join.left(), column.index()) {
                    Some(rows) => scanned_rows = Some(rows),
                    None => return Ok(None),
                }
            }
            let Some(scanned_rows) = scanned_rows else {
                return Ok(None);
            };
            let probe_rows = StatisticsContext::new()
                .compute(join.right().as_ref(), &StatisticsArgs::new())?
                .num_rows
                .get_value()
                .copied();
            match probe_rows {
                Some(rows) if rows < scanned_rows => {
                    Ok(Some(join.swap_inputs(*join.partition_mode())?))
                }
                _ => Ok(None),
            }
        })
    }

    fn name(&self) -> &str {
        "tamis_probe_aggregates"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `plan` with `rewrite(node, join)` applied bottom-up to every hash join (`Some`: the node
/// that replaces it), when runtime join filters are on: what both rules here share.
fn rewrite_hash_joins(
    plan: Arc<dyn ExecutionPlan>,
    config: &ConfigOptions,
    rewrite: impl Fn(&Arc<dyn ExecutionPlan>, &HashJoinExec) -> Result<Option<Arc<dyn ExecutionPlan>>>,
) -> Result<Arc<dyn ExecutionPlan>> {
    if !config.optimizer.enable_join_dynamic_filter_pushdown {
        return Ok(plan);
    }
    plan.transform_up(|node| {
        let Some(join) = node.downcast_ref::<HashJoinExec>() else {
            return Ok(Transformed::no(node));
        };
        Ok(match rewrite(&node, join)? {
            Some(replaced) => Transformed::yes(replaced),
            None => Transformed::no(node),
        })
    })
    .map(|t| t.data)
}

/// If output column `index` of `plan` is the group key of an aggregate (without grouping sets)
/// whose input is a tamis scan, the rows that scan reads (its footers' count); else `None`.
fn grouped_scan_rows(plan: &Arc<dyn ExecutionPlan>, index: usize) -> Option<usize> {
    if let Some(p) = plan.downcast_ref::<ProjectionExec>() {
        let column = p.expr().get(index)?.expr.downcast_ref::<Column>()?.index();
        return grouped_scan_rows(p.input(), column);
    }
    if plan.downcast_ref::<RepartitionExec>().is_some()
        || plan.downcast_ref::<CoalescePartitionsExec>().is_some()
    {
        return grouped_scan_rows(plan.children().first()?, index);
    }
    let aggregate = plan.downcast_ref::<AggregateExec>()?;
    let column = group_key_input(aggregate, index)?;
    // A two-phase aggregate: the partial one below groups by the same key.
    if let Some(rows) = grouped_scan_rows(aggregate.input(), column) {
        return Some(rows);
    }
    scan_rows(aggregate.input())
}

/// The input column of `aggregate` that its output column `index` groups by: `None` unless
/// that output is a plain column key of an aggregate without grouping sets.
fn group_key_input(aggregate: &AggregateExec, index: usize) -> Option<usize> {
    let group = aggregate.group_expr();
    if group.has_grouping_set() || index >= group.expr().len() {
        return None;
    }
    Some(group.expr()[index].0.downcast_ref::<Column>()?.index())
}

/// The rows of the tamis scan that `plan` reads through row-preserving or filtering operators.
fn scan_rows(plan: &Arc<dyn ExecutionPlan>) -> Option<usize> {
    if let Some(scan) = plan.downcast_ref::<TamisExec>() {
        return scan.table_rows();
    }
    match plan.children().as_slice() {
        [child] => scan_rows(child),
        _ => None,
    }
}

/// Taps the build side of a hash join whose unmatched probe rows are dropped, on one key
/// column, so that the probe side's tamis scan can probe the build side's keys even when they
/// are too many for the join's dynamic filter to list, or the join is on several keys (see
/// [`crate::tap`]). Runs after [`ProbeAggregates`].
#[derive(Debug, Default)]
pub struct TapBuildKeys;

impl PhysicalOptimizerRule for TapBuildKeys {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        rewrite_hash_joins(plan, config, |node, join| {
            // The joins whose probe rows without a match add nothing to the answer (DataFusion's
            // "probe side preserved", as for its own dynamic filters: inner and semi joins, and
            // outer, anti and mark joins that keep the build side's rows), where NULL matches
            // nothing (INTERSECT joins NULL to NULL: the tap, like the filter, skips NULLs),
            // and not NOT IN's null-aware anti join: a NULL probe key empties its answer, and
            // the filter would drop it.
            let (_, probe_preserved) = join.join_type().on_lr_is_preserved();
            if !probe_preserved
                || join.null_equality() != NullEquality::NullEqualsNothing
                || join.null_aware
                || join.left().downcast_ref::<KeyTapExec>().is_some()
            {
                return Ok(None);
            }
            // The first key pair whose build column can be tapped and whose probe column
            // comes from a tamis scan. With more than one key, filtering on one of them keeps
            // every probe row that can match (TPC-H Q20 joins on part and supplier keys).
            let build_schema = join.left().schema();
            let tapped = join.on().iter().find_map(|(build_key, probe_key)| {
                let build = build_key.downcast_ref::<Column>()?;
                let probe = probe_key.downcast_ref::<Column>()?;
                if !tappable(build_schema.field(build.index()).data_type()) {
                    return None;
                }
                let (scan, column) = probe_scan(join.right(), probe.index(), false)?;
                Some((build.index(), scan, column))
            });
            let Some((build, scan, column)) = tapped else {
                return Ok(None);
            };
            let tap = Arc::new(if join.on().len() > 1 {
                KeyTap::one_of_several_keys()
            } else {
                KeyTap::default()
            });
            let left: Arc<dyn ExecutionPlan> =
                Arc::new(KeyTapExec::new(join.left().clone(), build, tap.clone()));
            let right = join.right().clone();
            scan.add_tap(column, tap);
            let keep = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute);
            Ok(Some(
                node.clone().replace_children(vec![left, right], keep)?,
            ))
        })
    }

    fn name(&self) -> &str {
        "tamis_tap_build_keys"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The tamis scan that output column `index` of `plan` comes from, unchanged, through operators
/// that only drop, move or rename rows (projections of columns, filters, repartitions) or
/// group them by that column (an aggregate without grouping sets: a join that drops unmatched
/// probe rows drops whole groups, so filtering the aggregate's input on its group key leaves
/// every group it keeps whole, as [`ProbeAggregates`] relies on), and the scan's output column.
/// Below an aggregate (`below_aggregate`) also through inner joins: DataFusion's own filter
/// stops at the aggregate, so the tap is the only one there (TPC-H Q2: the subquery's
/// `partsupp` rows of one region, grouped by part, 159 000 rows for 460 groups that join).
/// Not through joins elsewhere: DataFusion's filter passes them, and taps of the large build
/// sides there (TPC-H Q9: 1.5 M orders, 800 000 `partsupp` rows) cost more than they saved.
fn probe_scan(
    plan: &Arc<dyn ExecutionPlan>,
    index: usize,
    below_aggregate: bool,
) -> Option<(&TamisExec, usize)> {
    if let Some(scan) = plan.downcast_ref::<TamisExec>() {
        return Some((scan, index));
    }
    if let Some(p) = plan.downcast_ref::<ProjectionExec>() {
        let column = p.expr().get(index)?.expr.downcast_ref::<Column>()?.index();
        return probe_scan(p.input(), column, below_aggregate);
    }
    if let Some(f) = plan.downcast_ref::<FilterExec>() {
        let column = projected(f.projection().as_deref(), index)?;
        return probe_scan(f.input(), column, below_aggregate);
    }
    if let Some(a) = plan.downcast_ref::<AggregateExec>() {
        // Not through a limited aggregate: which groups a top-k keeps depends on the others.
        if a.limit_options().is_some() {
            return None;
        }
        return probe_scan(a.input(), group_key_input(a, index)?, true);
    }
    if let Some(j) = plan.downcast_ref::<HashJoinExec>() {
        // Through an inner join, to the side the column comes from: each output row carries
        // that side's row unchanged, so dropping the side's rows whose value the filter drops
        // drops exactly the output rows with that value. Not through an outer join, where a
        // dropped row could turn a match into a row of NULLs.
        if !below_aggregate || *j.join_type() != JoinType::Inner {
            return None;
        }
        let column = projected(j.projection.as_deref(), index)?;
        let left = j.left().schema().fields().len();
        return match column.checked_sub(left) {
            None => probe_scan(j.left(), column, true),
            Some(right) => probe_scan(j.right(), right, true),
        };
    }
    let passes = plan.downcast_ref::<RepartitionExec>().is_some()
        || plan.downcast_ref::<CoalescePartitionsExec>().is_some()
        || plan.downcast_ref::<CooperativeExec>().is_some();
    if passes {
        return probe_scan(plan.children().first()?, index, below_aggregate);
    }
    None
}

/// The input column of output column `index` of an operator that keeps the columns
/// `projection` lists (all of them, in order, when it has none).
fn projected(projection: Option<&[usize]>, index: usize) -> Option<usize> {
    match projection {
        Some(p) => p.get(index).copied(),
        None => Some(index),
    }
}

/// Has the scans of a table that one plan reads more than once (TPC-H Q17's two `lineitem`
/// scans, Q21's three, a self-join) keep the pages of the columns another of them reads too in
/// the page cache's memory tier on the first read, so that the query decompresses each page
/// once (see [`tamis::Scan::keep_pages_on_first_read`]: other pages are kept on their second
/// read; a column only one scan reads takes no memory). Runs last.
#[derive(Debug, Default)]
pub struct KeepSharedPages;

impl PhysicalOptimizerRule for KeepSharedPages {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // Every scan's (table, columns read).
        let mut reads: Vec<(*const tamis::Dataset, Vec<String>)> = Vec::new();
        plan.apply(|node| {
            if let Some(scan) = node.downcast_ref::<TamisExec>() {
                reads.push((scan.table_id(), scan.read_columns()));
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
        // The columns of `scan` that another scan of its table reads too.
        let shared = |scan: &TamisExec| -> Vec<String> {
            let t = scan.table_id();
            let readers = |c: &String| {
                (reads.iter())
                    .filter(|(table, columns)| *table == t && columns.contains(c))
                    .count()
            };
            let read = scan.read_columns();
            read.into_iter().filter(|c| readers(c) > 1).collect()
        };
        plan.transform_up(|node| {
            let Some(scan) = node.downcast_ref::<TamisExec>() else {
                return Ok(Transformed::no(node));
            };
            let columns = shared(scan);
            if columns.is_empty() {
                return Ok(Transformed::no(node));
            }
            let kept: Arc<dyn ExecutionPlan> = Arc::new(scan.keeping_first_reads(columns));
            Ok(Transformed::yes(kept))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "tamis_keep_shared_pages"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
