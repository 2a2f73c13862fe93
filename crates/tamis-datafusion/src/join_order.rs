//! Join order: a tree of inner equi-joins rebuilt by greedy operator ordering (GOO: join, at
//! each step, the two connected inputs whose join is estimated smallest), before DataFusion's
//! join selection picks each join's build side.
//!
//! DataFusion joins the tables of a `FROM` list in the order it lists them (each next one that
//! shares a key with those before), and only swaps the two sides of each join by their size.
//! In TPC-H Q7 (`supplier, lineitem, orders, customer, nation n1, nation n2`) that builds the
//! hash table of `supplier ⋈ lineitem ⋈ orders` on all 15 M `orders` rows at SF 10, while the
//! `lineitem` side is 1.5 M rows once the nations' filter reaches it: DuckDB, which orders
//! joins by cost, builds on the small side and probes `orders`. Here the inputs' estimates come
//! from DataFusion's statistics (rows, and the filters' selectivity from the footers' min/max),
//! a key's distinct values from its statistics or its value range, and a join's size is
//! `rows(a) × rows(b) / max(distinct(a.key), distinct(b.key))` on its most selective key, as in
//! DataFusion's own join estimate.
//!
//! Inner joins on column pairs with `NULL` matching nothing, and the column projections
//! between them, form a tree that is reordered; anything else is an input (reordered inside on
//! its own). A join's filter (Q7's `(n1 = FRANCE and n2 = GERMANY) or (n1 = GERMANY and n2 =
//! FRANCE)`) moves to the first join that has all its columns. Columns leave each join as soon
//! as nothing above needs them, and a projection on top restores the tree's output columns.

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{JoinSide, JoinType, NullEquality, Result, Statistics};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, Column};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::joins::utils::{ColumnIndex, JoinFilter};
use datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
use datafusion::physical_plan::{ChildrenPropertiesMode, ExecutionPlan, ReplaceChildrenOptions};

/// Reorders trees of three or more inner joins (see the module documentation). Runs right
/// before DataFusion's join selection.
#[derive(Debug, Default)]
pub struct OrderJoins;

impl PhysicalOptimizerRule for OrderJoins {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !config.optimizer.join_reordering {
            return Ok(plan);
        }
        reorder(plan)
    }

    fn name(&self) -> &str {
        "tamis_order_joins"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// A column of one of a join tree's inputs: (input, column index).
type Col = (usize, usize);

/// A join tree taken apart: its inputs, the key pairs and the filters it joins them on.
#[derive(Default)]
struct JoinTree {
    inputs: Vec<Arc<dyn ExecutionPlan>>,
    keys: Vec<(Col, Col)>,
    filters: Vec<TreeFilter>,
    /// The joins as the query has them: the inputs on each side (bit masks, smaller first).
    joins: Vec<(u64, u64)>,
}

/// A join filter of the tree: the filter, and the tree column of each of its columns.
struct TreeFilter {
    filter: JoinFilter,
    columns: Vec<Col>,
}

/// The most inputs one tree may have (their sets are bit masks).
const MAX_INPUTS: usize = 64;

/// `plan` with every join tree in it reordered, top-down: a tree's inputs are reordered
/// before the tree.
fn reorder(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    if tree_root(&plan) {
        let mut tree = JoinTree::default();
        let output = tree.take_apart(&plan)?;
        if tree.inputs.len() >= 3 && tree.inputs.len() <= MAX_INPUTS {
            if let Some(ordered) = tree.ordered(&output, &plan)? {
                return Ok(ordered);
            }
        }
        // The query's own order, over the reordered inputs.
        return tree.rebuild(&plan, &mut 0);
    }
    let children: Vec<_> = plan.children().into_iter().cloned().collect();
    if children.is_empty() {
        return Ok(plan);
    }
    let reordered = children
        .iter()
        .map(|c| reorder(c.clone()))
        .collect::<Result<Vec<_>>>()?;
    if reordered
        .iter()
        .zip(&children)
        .all(|(a, b)| Arc::ptr_eq(a, b))
    {
        return Ok(plan);
    }
    let recompute = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute);
    plan.replace_children(reordered, recompute)
}

/// Whether `plan` is a join of a tree, or a column projection over one (which a join's own
/// projection then replaces: DataFusion embeds a projection only in a join that has none).
fn tree_root(plan: &Arc<dyn ExecutionPlan>) -> bool {
    joinable(plan).is_some() || column_projection(plan).is_some_and(|(_, input)| tree_root(input))
}

/// `plan` as an inner join that may be reordered: its key pairs as column indices.
fn joinable(plan: &Arc<dyn ExecutionPlan>) -> Option<(&HashJoinExec, Vec<(usize, usize)>)> {
    let join = plan.downcast_ref::<HashJoinExec>()?;
    if *join.join_type() != JoinType::Inner
        || join.null_equality() != NullEquality::NullEqualsNothing
        || join.null_aware
        || (join.filter())
            .is_some_and(|f| f.column_indices().iter().any(|c| c.side == JoinSide::None))
    {
        return None;
    }
    let keys = join
        .on()
        .iter()
        .map(|(l, r)| {
            let l = l.downcast_ref::<Column>()?.index();
            let r = r.downcast_ref::<Column>()?.index();
            Some((l, r))
        })
        .collect::<Option<Vec<_>>>()?;
    Some((join, keys))
}

/// The input columns of a projection made only of columns.
fn column_projection(
    plan: &Arc<dyn ExecutionPlan>,
) -> Option<(Vec<usize>, &Arc<dyn ExecutionPlan>)> {
    let p = plan.downcast_ref::<ProjectionExec>()?;
    let columns = p
        .expr()
        .iter()
        .map(|e| Some(e.expr.downcast_ref::<Column>()?.index()))
        .collect::<Option<Vec<_>>>()?;
    Some((columns, p.input()))
}

impl JoinTree {
    /// Adds `plan`'s joins, projections and inputs to the tree; the columns it outputs.
    fn take_apart(&mut self, plan: &Arc<dyn ExecutionPlan>) -> Result<Vec<Col>> {
        if let Some((join, keys)) = joinable(plan) {
            let first = self.inputs.len();
            let mut columns = self.take_apart(join.left())?;
            let middle = self.inputs.len();
            let right = self.take_apart(join.right())?;
            let mask = |from: usize, to: usize| (from..to).fold(0u64, |m, i| m | 1 << i);
            let (l, r) = (mask(first, middle), mask(middle, self.inputs.len()));
            self.joins.push((l.min(r), l.max(r)));
            for (l, r) in keys {
                self.keys.push((columns[l], right[r]));
            }
            if let Some(filter) = join.filter() {
                let columns = (filter.column_indices().iter())
                    .map(|c| match c.side {
                        JoinSide::Left => columns[c.index],
                        // `joinable` has ruled out a filter on a semi join's mark column.
                        JoinSide::Right | JoinSide::None => right[c.index],
                    })
                    .collect();
                let filter = filter.clone();
                self.filters.push(TreeFilter { filter, columns });
            }
            columns.extend(right);
            if let Some(p) = join.projection.as_deref() {
                columns = p.iter().map(|&i| columns[i]).collect();
            }
            return Ok(columns);
        }
        if let Some((columns, input)) = column_projection(plan) {
            if tree_root(input) {
                let below = self.take_apart(input)?;
                return Ok(columns.iter().map(|&i| below[i]).collect());
            }
        }
        let input = reorder(plan.clone())?;
        let n = input.schema().fields().len();
        let id = self.inputs.len();
        self.inputs.push(input);
        Ok((0..n).map(|c| (id, c)).collect())
    }

    /// `plan` (the tree as the query has it) over the tree's inputs from `next` on, in the
    /// order [`Self::take_apart`] took them.
    fn rebuild(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        next: &mut usize,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let children: Vec<Arc<dyn ExecutionPlan>> = if let Some((join, _)) = joinable(plan) {
            vec![
                self.rebuild(join.left(), next)?,
                self.rebuild(join.right(), next)?,
            ]
        } else if let Some((_, input)) = column_projection(plan).filter(|(_, i)| tree_root(i)) {
            vec![self.rebuild(input, next)?]
        } else {
            *next += 1;
            return Ok(Arc::clone(&self.inputs[*next - 1]));
        };
        if children
            .iter()
            .zip(plan.children())
            .all(|(a, b)| Arc::ptr_eq(a, b))
        {
            return Ok(Arc::clone(plan));
        }
        let recompute = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute);
        Arc::clone(plan).replace_children(children, recompute)
    }

    /// The tree joined in greedy order, with `original`'s output (`output`, the tree's columns
    /// in `original`'s order); `None` when an input's size is unknown, the inputs are not all
    /// connected by keys (a cross join stays where the query put it), or the greedy order joins
    /// the same inputs as the query's (which keeps its plan).
    fn ordered(
        &self,
        output: &[Col],
        original: &Arc<dyn ExecutionPlan>,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let mut stats = Vec::with_capacity(self.inputs.len());
        for input in &self.inputs {
            let s = StatisticsContext::new().compute(input.as_ref(), &StatisticsArgs::new())?;
            if s.num_rows.get_value().is_none() {
                return Ok(None);
            }
            stats.push(s);
        }
        let estimate = Estimate { stats: &stats };
        let Some(steps) = self.greedy(&estimate) else {
            return Ok(None);
        };
        // The joins only when their order differs from the query's.
        let mut greedy_joins: Vec<(u64, u64)> = steps.iter().map(|s| s.joins).collect();
        let mut original_joins = self.joins.clone();
        original_joins.sort_unstable();
        greedy_joins.sort_unstable();
        if greedy_joins == original_joins {
            return Ok(None);
        }
        let mut parts: Vec<Part> = (self.inputs.iter().enumerate())
            .map(|(i, input)| Part {
                plan: input.clone(),
                columns: (0..input.schema().fields().len()).map(|c| (i, c)).collect(),
                inputs: 1 << i,
            })
            .collect();
        for step in steps {
            let right = parts.remove(step.b);
            let left = parts.remove(step.a);
            let joined = self.join(left, right, &parts, output)?;
            parts.insert(step.a, joined);
        }
        let top = parts.pop().expect("one part is left");
        let schema = original.schema();
        let names = |s: &Schema| {
            s.fields()
                .iter()
                .map(|f| f.name().clone())
                .collect::<Vec<_>>()
        };
        if top.columns == output && names(&top.plan.schema()) == names(&schema) {
            return Ok(Some(top.plan));
        }
        let exprs = output.iter().enumerate().map(|(i, col)| {
            let at = top.columns.iter().position(|c| c == col).expect("kept");
            let name = schema.field(i).name();
            (
                Arc::new(Column::new(name, at)) as Arc<dyn PhysicalExpr>,
                name.clone(),
            )
        });
        Ok(Some(Arc::new(ProjectionExec::try_new(exprs, top.plan)?)))
    }

    /// Greedy operator ordering: at each step the connected pair of parts whose join is
    /// estimated smallest (the first such pair on ties); `None` when the inputs are not all
    /// connected by keys.
    fn greedy(&self, estimate: &Estimate) -> Option<Vec<Step>> {
        // Each part as (its inputs, its estimated rows).
        let mut parts: Vec<(u64, f64)> = (0..self.inputs.len())
            .map(|i| (1 << i, estimate.input_rows(i)))
            .collect();
        let mut steps = Vec::with_capacity(parts.len());
        while parts.len() > 1 {
            let mut best: Option<(usize, usize, f64)> = None;
            for a in 0..parts.len() {
                for b in a + 1..parts.len() {
                    let Some(rows) = estimate.join_rows(parts[a], parts[b], &self.keys) else {
                        continue;
                    };
                    if best.is_none_or(|(_, _, r)| rows < r) {
                        best = Some((a, b, rows));
                    }
                }
            }
            let (a, b, rows) = best?;
            let (l, r) = (parts[a].0, parts[b].0);
            steps.push(Step {
                a,
                b,
                joins: (l.min(r), l.max(r)),
            });
            parts.remove(b);
            parts[a] = (l | r, rows);
        }
        Some(steps)
    }

    /// `left ⋈ right` on every key between them, keeping the columns that `output` or a key to
    /// one of `rest` needs.
    fn join(&self, left: Part, right: Part, rest: &[Part], output: &[Col]) -> Result<Part> {
        let inputs = left.inputs | right.inputs;
        let mut on = Vec::new();
        for (a, b) in &self.keys {
            let (l, r) = if in_inputs(a, left.inputs) && in_inputs(b, right.inputs) {
                (a, b)
            } else if in_inputs(b, left.inputs) && in_inputs(a, right.inputs) {
                (b, a)
            } else {
                continue;
            };
            let l = left.columns.iter().position(|c| c == l).expect("key kept");
            let r = right.columns.iter().position(|c| c == r).expect("key kept");
            let (ls, rs) = (left.plan.schema(), right.plan.schema());
            on.push((
                Arc::new(Column::new(ls.field(l).name(), l)) as Arc<dyn PhysicalExpr>,
                Arc::new(Column::new(rs.field(r).name(), r)) as Arc<dyn PhysicalExpr>,
            ));
        }
        // The filters that have all their columns first here (a single input's own columns
        // count as not yet filtered).
        let covers = |f: &TreeFilter, p: &Part| {
            f.columns.iter().all(|c| in_inputs(c, p.inputs)) && p.inputs.count_ones() > 1
        };
        let (here, later): (Vec<&TreeFilter>, Vec<&TreeFilter>) = (self.filters.iter())
            .filter(|f| !covers(f, &left) && !covers(f, &right))
            .partition(|f| f.columns.iter().all(|c| in_inputs(c, inputs)));
        let filter = self.join_filter(&here, &left, &right)?;
        let needed = |c: &Col| {
            output.contains(c)
                || later.iter().any(|f| f.columns.contains(c))
                || self.keys.iter().any(|(a, b)| {
                    let other = if a == c {
                        b
                    } else if b == c {
                        a
                    } else {
                        return false;
                    };
                    rest.iter().any(|p| in_inputs(other, p.inputs))
                })
        };
        let all: Vec<Col> = left.columns.iter().chain(&right.columns).copied().collect();
        let kept: Vec<usize> = (0..all.len()).filter(|&i| needed(&all[i])).collect();
        let columns = kept.iter().map(|&i| all[i]).collect();
        let plan = HashJoinExec::try_new(
            left.plan,
            right.plan,
            on,
            filter,
            &JoinType::Inner,
            Some(kept),
            PartitionMode::Auto,
            NullEquality::NullEqualsNothing,
            false,
        )?;
        Ok(Part {
            plan: Arc::new(plan),
            columns,
            inputs,
        })
    }

    /// `filters` (all of them: their conjunction) as the filter of the join of `left` and
    /// `right`.
    fn join_filter(
        &self,
        filters: &[&TreeFilter],
        left: &Part,
        right: &Part,
    ) -> Result<Option<JoinFilter>> {
        let mut expression: Option<Arc<dyn PhysicalExpr>> = None;
        let mut indices = Vec::new();
        let mut fields = Vec::new();
        for f in filters {
            let offset = indices.len();
            let shifted = Arc::clone(f.filter.expression())
                .transform(|e| {
                    Ok(match e.downcast_ref::<Column>() {
                        Some(c) if offset > 0 => Transformed::yes(Arc::new(Column::new(
                            c.name(),
                            c.index() + offset,
                        )) as _),
                        _ => Transformed::no(e),
                    })
                })?
                .data;
            expression = Some(match expression {
                None => shifted,
                Some(e) => Arc::new(BinaryExpr::new(e, Operator::And, shifted)),
            });
            for c in &f.columns {
                indices.push(match left.columns.iter().position(|l| l == c) {
                    Some(index) => ColumnIndex {
                        index,
                        side: JoinSide::Left,
                    },
                    None => ColumnIndex {
                        index: right.columns.iter().position(|r| r == c).expect("kept"),
                        side: JoinSide::Right,
                    },
                });
            }
            fields.extend(f.filter.schema().fields().iter().cloned());
        }
        Ok(expression.map(|e| JoinFilter::new(e, indices, Arc::new(Schema::new(fields)))))
    }
}

/// A joined part of the tree: its plan, its output columns, the inputs it joins (a bit mask).
struct Part {
    plan: Arc<dyn ExecutionPlan>,
    columns: Vec<Col>,
    inputs: u64,
}

/// One join of the greedy order: the positions of the two parts it joins (`a < b`) in the list
/// of parts at that step (the joined part takes `a`'s place), and their inputs (smaller first).
struct Step {
    a: usize,
    b: usize,
    joins: (u64, u64),
}

/// Whether column `c` belongs to one of `inputs` (a bit mask of the tree's inputs).
fn in_inputs(c: &Col, inputs: u64) -> bool {
    inputs & (1 << c.0) != 0
}

/// Row and distinct-value estimates from the inputs' statistics.
struct Estimate<'a> {
    stats: &'a [Arc<Statistics>],
}

impl Estimate<'_> {
    fn input_rows(&self, input: usize) -> f64 {
        (self.stats[input].num_rows.get_value().copied().unwrap_or(0) as f64).max(1.0)
    }

    /// Distinct values of `col` in a part of `rows` rows: its statistics' count, else its
    /// integer range, else every row distinct; never more than the rows.
    fn distinct(&self, col: Col, rows: f64) -> f64 {
        let s = &self.stats[col.0].column_statistics[col.1];
        let known = s.distinct_count.get_value().map(|&d| d as f64).or_else(|| {
            let (min, max) = (s.min_value.get_value()?, s.max_value.get_value()?);
            Some(min.distance(max)? as f64 + 1.0)
        });
        known.unwrap_or(rows).min(rows).max(1.0)
    }

    /// The estimated rows of `a ⋈ b`, each part given as (its inputs, its rows), on the most
    /// selective key between them; `None` when no key joins them.
    fn join_rows(&self, a: (u64, f64), b: (u64, f64), keys: &[(Col, Col)]) -> Option<f64> {
        let ((a, a_rows), (b, b_rows)) = (a, b);
        let divisor = keys
            .iter()
            .filter_map(|(x, y)| {
                let (x, y) = if in_inputs(x, a) && in_inputs(y, b) {
                    (x, y)
                } else if in_inputs(y, a) && in_inputs(x, b) {
                    (y, x)
                } else {
                    return None;
                };
                Some(self.distinct(*x, a_rows).max(self.distinct(*y, b_rows)))
            })
            .reduce(f64::max)?;
        Some((a_rows * b_rows / divisor).max(1.0))
    }
}
