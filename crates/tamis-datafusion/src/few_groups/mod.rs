//! Partial aggregates over few groups, grouped by small codes instead of hashed rows.
//!
//! DataFusion's hash aggregate hashes every row's key columns, probes its table and compares
//! the key values column by column, about 10 ns a row for TPC-H Q1's two one-letter keys: a
//! sixth of the query at one thread (SF 1, `perf`), where DuckDB's is a fraction of that.
//! Most rows of such a query carry one of a handful of key values. [`FewGroupsExec`] codes
//! each key column's values (a value as it is in memory, up to 16 bytes: an integer, a date,
//! a decimal, a string of at most 12 bytes inline in its view) into a small per-column code,
//! with a branch-free pass over the batch per known value (`codes.rs`), and packs the codes
//! into one word that names the group, coded the same way. `sum`, `avg` and `count` are
//! computed here a column at a time (`sums.rs`); other aggregates by DataFusion's own
//! accumulators (`GroupsAccumulator`), fed the group indices. Either way the partial state
//! this stage emits is exactly the one DataFusion's would: its `Final` stage runs unchanged.
//!
//! When a stream meets more than [`MAX_GROUPS`] groups, a key this coding does not cover (a
//! longer string), or a memory pool that refuses its groups, it emits the groups so far and
//! hands the rest of its input on (to DataFusion's partial stage, or as one state a row): a
//! partial stage may emit a group more than once, its final stage merges them.

use std::fmt;
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array};
use arrow::compute::{concat, take};
use arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::Result;
use datafusion::error::DataFusionError;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::utils::evaluate_expressions_to_arrays;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, InputOrderMode, PlanProperties,
};
use futures::{StreamExt, TryStreamExt};

use codes::{words_of, Codes, Words};
use sums::{Summed, Sums};

mod codes;
mod sums;

/// Groups a stream keeps before it hands its input to DataFusion's hash aggregate.
pub const MAX_GROUPS: usize = 1024;

/// Key columns coded here at most (their codes are packed 16 bits each into one word).
const MAX_KEYS: usize = 4;

/// Runs the partial stage of every eligible aggregate as a [`FewGroupsExec`]. A single-stage
/// aggregate (one input partition, or inputs already partitioned by the keys) becomes a
/// final stage over one, as DataFusion plans two stages.
#[derive(Debug, Default)]
pub struct GroupFewKeysByCode;

impl PhysicalOptimizerRule for GroupFewKeysByCode {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(aggregate) = node.downcast_ref::<AggregateExec>() else {
                return Ok(Transformed::no(node));
            };
            if !eligible(aggregate) {
                return Ok(Transformed::no(node));
            }
            let final_mode = match aggregate.mode() {
                AggregateMode::Partial => {
                    let few = FewGroupsExec::try_new(Arc::new(aggregate.clone()), HandOver::Hash)?;
                    return Ok(Transformed::yes(Arc::new(few) as Arc<dyn ExecutionPlan>));
                }
                AggregateMode::Single => AggregateMode::Final,
                AggregateMode::SinglePartitioned => AggregateMode::FinalPartitioned,
                _ => return Ok(Transformed::no(node)),
            };
            let partial = AggregateExec::try_new(
                AggregateMode::Partial,
                aggregate.group_expr().clone(),
                aggregate.aggr_expr().to_vec(),
                aggregate.filter_expr().to_vec(),
                Arc::clone(aggregate.input()),
                aggregate.input_schema(),
            )?;
            let few = Arc::new(FewGroupsExec::try_new(
                Arc::new(partial),
                HandOver::AsStates,
            )?);
            let final_stage = AggregateExec::try_new(
                final_mode,
                aggregate.group_expr().as_final(),
                aggregate.aggr_expr().to_vec(),
                aggregate.filter_expr().to_vec(),
                few,
                aggregate.input_schema(),
            )?;
            // The rows are the same; only the plan's stages differ.
            if final_stage.schema() != aggregate.schema() {
                return Ok(Transformed::no(node));
            }
            Ok(Transformed::yes(
                Arc::new(final_stage) as Arc<dyn ExecutionPlan>
            ))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "tamis_group_few_keys_by_code"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// A grouped aggregate whose keys can be coded and whose accumulators are plain
/// `GroupsAccumulator`s: no grouping sets, `FILTER`, `DISTINCT`, `ORDER BY` in an aggregate,
/// limit, or input order to keep.
fn eligible(aggregate: &AggregateExec) -> bool {
    let group_by = aggregate.group_expr();
    let input_schema = aggregate.input_schema();
    let keys_codable = (group_by.expr().iter()).all(|(expr, _)| {
        expr.data_type(&input_schema)
            .is_ok_and(|t| codable_type(&t))
    });
    group_by.is_single()
        && !group_by.expr().is_empty()
        && group_by.expr().len() <= MAX_KEYS
        && keys_codable
        && aggregate.filter_expr().iter().all(Option::is_none)
        && aggregate.aggr_expr().iter().all(|a| plain(a))
        && aggregate.limit_options().is_none()
        && aggregate.dynamic_expressions_produced().is_empty()
        && *aggregate.input_order_mode() == InputOrderMode::Linear
}

fn plain(aggregate: &AggregateFunctionExpr) -> bool {
    !aggregate.is_distinct()
        && aggregate.order_bys().is_empty()
        && aggregate.groups_accumulator_supported()
}

/// Key types whose values are compared here by their bits: integers, dates, times,
/// timestamps, decimals, booleans and view strings (not floats: DataFusion's grouping of NaN
/// and -0.0 is its own to define).
fn codable_type(t: &DataType) -> bool {
    use DataType::*;
    matches!(
        t,
        Boolean
            | Int8
            | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(_, _)
            | Duration(_)
            | Decimal128(_, _)
            | Utf8View
            | BinaryView
    )
}

/// DataFusion's partial aggregate stage, grouping few keys by code (see the module
/// documentation); `partial` is the stage it replaces, and runs what it hands over.
#[derive(Debug)]
pub struct FewGroupsExec {
    partial: Arc<AggregateExec>,
    hand_over: HandOver,
    metrics: ExecutionPlanMetricsSet,
}

/// What a stream does with its input once it stops coding groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HandOver {
    /// Runs DataFusion's partial stage over it: this one replaces that stage.
    Hash,
    /// Passes each row on as a partial state of its own (`convert_to_state`), for the final
    /// stage to group: this stage and the final one replace a single-stage aggregate, which
    /// grouped every row once. A partial hash stage there would group them twice (TPC-H
    /// Q18's 1.5 M orders at one thread: 370 -> 500 ms).
    AsStates,
}

impl FewGroupsExec {
    fn try_new(partial: Arc<AggregateExec>, hand_over: HandOver) -> Result<Self> {
        if *partial.mode() != AggregateMode::Partial {
            return datafusion::common::internal_err!("FewGroupsExec runs partial stages only");
        }
        Ok(FewGroupsExec {
            partial,
            hand_over,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

impl DisplayAs for FewGroupsExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match self.hand_over {
            HandOver::Hash => write!(f, "FewGroupsExec: ")?,
            HandOver::AsStates => write!(f, "FewGroupsExec: past few groups, rows as states: ")?,
        }
        // The stage's own text: what it computes, for plan comparisons too.
        self.partial.fmt_as(t, f)
    }
}

impl ExecutionPlan for FewGroupsExec {
    fn name(&self) -> &str {
        "FewGroupsExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.partial.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![self.partial.input()]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.partial.apply_expressions(f)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let partial = replace_children(Arc::clone(&self.partial), children)?;
        let partial = partial
            .downcast_ref::<AggregateExec>()
            .map(|a| Arc::new(a.clone()))
            .ok_or_else(|| DataFusionError::Internal("not an aggregate".into()))?;
        Ok(Arc::new(FewGroupsExec::try_new(partial, self.hand_over)?))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let mut input = self
            .partial
            .input()
            .execute(partition, Arc::clone(&context))?;
        let partial = Arc::clone(&self.partial);
        let hand_over = self.hand_over;
        let schema = self.partial.schema();
        let mut groups = FewGroups::try_new(&partial)?;
        // Time and rows of the coded groups; rows handed over (EXPLAIN ANALYZE shows whether
        // a stream stopped coding).
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let handed_over = MetricBuilder::new(&self.metrics).counter("rows_handed_over", partition);
        let reservation = MemoryConsumer::new(format!("FewGroupsExec[{partition}]"))
            .register(context.memory_pool());
        let batches = futures::stream::once(async move {
            while let Some(batch) = input.next().await {
                let batch = batch?;
                let timer = baseline.elapsed_compute().timer();
                let coded = groups.push(&batch)?;
                timer.done();
                // The groups' memory counts against the session's pool; where the pool has
                // no more (an accumulator that keeps every value, as `median` does), the
                // groups so far go out and DataFusion's stage, which can spill, takes over.
                let pending = match coded {
                    true if reservation.try_resize(groups.size()).is_ok() => continue,
                    true => None,
                    false => Some(batch),
                };
                // Too many groups, a key not coded here, or no memory: the groups so far, then
                // the batch not coded (if any) and the rest as DataFusion's partial stage or as states.
                let so_far = futures::stream::iter(emit(&mut groups, &baseline)?.map(Ok));
                reservation.free();
                let rest = futures::stream::iter(pending.map(Ok)).chain(input);
                let rest = rest.inspect(move |b| {
                    if let Ok(b) = b {
                        handed_over.add(b.num_rows());
                    }
                });
                let rest: SendableRecordBatchStream = match hand_over {
                    HandOver::Hash => hash_partial(&partial, rest, context)?,
                    HandOver::AsStates => {
                        let states = AsStates::try_new(&partial)?;
                        let rows = rest.map(move |b| states.convert(&b?));
                        Box::pin(RecordBatchStreamAdapter::new(partial.schema(), rows))
                    }
                };
                return Ok::<_, DataFusionError>(so_far.chain(rest).boxed());
            }
            Ok(futures::stream::iter(emit(&mut groups, &baseline)?.map(Ok)).boxed())
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, batches)))
    }
}

/// The groups' states, timed and counted.
fn emit(groups: &mut FewGroups, baseline: &BaselineMetrics) -> Result<Option<RecordBatch>> {
    let timer = baseline.elapsed_compute().timer();
    let batch = groups.emit()?;
    timer.done();
    baseline.record_output(batch.as_ref().map_or(0, |b| b.num_rows()));
    Ok(batch)
}

/// DataFusion's partial stage `partial` over `rest`, the rest of its input.
fn hash_partial(
    partial: &Arc<AggregateExec>,
    rest: impl futures::Stream<Item = Result<RecordBatch>> + Send + 'static,
    context: Arc<TaskContext>,
) -> Result<SendableRecordBatchStream> {
    let schema = partial.input().schema();
    let rest = RecordBatchStreamAdapter::new(Arc::clone(&schema), rest);
    let source = StreamingTableExec::try_new(
        Arc::clone(&schema),
        vec![Arc::new(Rest {
            schema,
            stream: Mutex::new(Some(Box::pin(rest))),
        })],
        None,
        vec![],
        false,
        None,
    )?;
    replace_children(Arc::clone(partial), vec![Arc::new(source)])?.execute(0, context)
}

/// What a partial stage evaluates on each batch: its group keys and every aggregate's
/// arguments.
struct StageInputs {
    keys: Vec<Arc<dyn PhysicalExpr>>,
    arguments: Vec<Vec<Arc<dyn PhysicalExpr>>>,
}

impl StageInputs {
    fn of(partial: &AggregateExec) -> Self {
        StageInputs {
            keys: (partial.group_expr().expr().iter())
                .map(|(e, _)| Arc::clone(e))
                .collect(),
            arguments: partial
                .aggr_expr()
                .iter()
                .map(|a| a.expressions())
                .collect(),
        }
    }
}

/// A fresh accumulator for each of `partial`'s aggregates.
fn accumulators(partial: &AggregateExec) -> Result<Vec<Box<dyn GroupsAccumulator>>> {
    (partial.aggr_expr().iter())
        .map(|a| a.create_groups_accumulator())
        .collect()
}

/// Turns input rows into partial states, one a row, as DataFusion's partial stage does when
/// it stops aggregating (`GroupsAccumulator::convert_to_state`).
struct AsStates {
    schema: SchemaRef,
    inputs: StageInputs,
    accumulators: Vec<Box<dyn GroupsAccumulator>>,
}

impl AsStates {
    fn try_new(partial: &AggregateExec) -> Result<Self> {
        Ok(AsStates {
            schema: partial.schema(),
            inputs: StageInputs::of(partial),
            accumulators: accumulators(partial)?,
        })
    }

    fn convert(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let mut columns = evaluate_expressions_to_arrays(&self.inputs.keys, batch)?;
        for (accumulator, arguments) in self.accumulators.iter().zip(&self.inputs.arguments) {
            let values = evaluate_expressions_to_arrays(arguments, batch)?;
            columns.extend(accumulator.convert_to_state(&values, None)?);
        }
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

/// `plan` over `children`, its properties computed anew.
fn replace_children(
    plan: Arc<AggregateExec>,
    children: Vec<Arc<dyn ExecutionPlan>>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let recompute = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute);
    (plan as Arc<dyn ExecutionPlan>).replace_children(children, recompute)
}

/// The rest of an input stream, run by DataFusion's own partial stage (once).
struct Rest {
    schema: SchemaRef,
    stream: Mutex<Option<SendableRecordBatchStream>>,
}

impl fmt::Debug for Rest {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("Rest")
    }
}

impl PartitionStream for Rest {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let taken = self.stream.lock().ok().and_then(|mut s| s.take());
        taken.unwrap_or_else(|| {
            let error = DataFusionError::Internal("the rest of a stream is read once".into());
            Box::pin(RecordBatchStreamAdapter::new(
                Arc::clone(&self.schema),
                futures::stream::once(async { Err(error) }),
            ))
        })
    }
}

/// One stream's groups: each key column's codes, the groups' packed codes, the key values
/// of each group (in group order), and their aggregates: `sum`, `avg` and `count` summed
/// here ([`sums`]), the others in DataFusion's accumulators.
struct FewGroups {
    schema: SchemaRef,
    inputs: StageInputs,
    aggregates: Vec<Aggregate>,
    sums: Sums,
    codes: Vec<Codes>,
    groups: Codes,
    /// Each key column's values of the groups, a piece per batch that added groups.
    key_values: Vec<Vec<ArrayRef>>,
    /// Groups the accumulators hold (`groups` may hold more after a batch that overflowed).
    committed: usize,
    // Scratch, kept between batches.
    words: Words,
    packed: Words,
    group_codes: Vec<u32>,
    row_codes: Vec<Vec<u32>>,
    group_indices: Vec<usize>,
    first_rows: Vec<u32>,
}

/// How one aggregate of the stage is computed.
enum Aggregate {
    Summed(Summed),
    /// DataFusion's accumulator, fed the arguments at this index of [`StageInputs`].
    Accumulator(Box<dyn GroupsAccumulator>, usize),
}

impl FewGroups {
    fn try_new(partial: &AggregateExec) -> Result<Self> {
        let inputs = StageInputs::of(partial);
        let keys = inputs.keys.len();
        let input_schema = partial.input_schema();
        let mut sums = Sums::default();
        let aggregates = (partial.aggr_expr().iter().enumerate())
            .map(|(i, a)| match sums.add(a, &input_schema) {
                Some(summed) => Ok(Aggregate::Summed(summed)),
                None => Ok(Aggregate::Accumulator(a.create_groups_accumulator()?, i)),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(FewGroups {
            schema: partial.schema(),
            inputs,
            sums,
            aggregates,
            codes: (0..keys).map(|_| Codes::default()).collect(),
            groups: Codes::default(),
            key_values: vec![Vec::new(); keys],
            row_codes: vec![Vec::new(); keys],
            committed: 0,
            words: Words::default(),
            packed: Words::default(),
            group_codes: Vec::new(),
            group_indices: Vec::new(),
            first_rows: Vec::new(),
        })
    }

    /// Adds `batch` to the groups; false (and nothing added) when its keys cannot be coded
    /// or it would take the groups past [`MAX_GROUPS`].
    fn push(&mut self, batch: &RecordBatch) -> Result<bool> {
        let rows = batch.num_rows();
        let key_arrays = evaluate_expressions_to_arrays(&self.inputs.keys, batch)?;
        for (c, array) in key_arrays.iter().enumerate() {
            if !words_of(array.as_ref(), &mut self.words) {
                return Ok(false);
            }
            let nulls = array.logical_nulls();
            let out = &mut self.row_codes[c];
            if !self.codes[c].code_all(&self.words, nulls.as_ref(), out) {
                return Ok(false);
            }
        }
        let total = if key_arrays.len() == 1 {
            // One key: its codes are the groups.
            std::mem::swap(&mut self.group_codes, &mut self.row_codes[0]);
            self.codes[0].len()
        } else {
            // Each row's group: its columns' codes packed, 16 bits each.
            let packed = &mut self.packed;
            (packed.lo).clear();
            (packed.lo).resize(rows, 0);
            packed.wide = false;
            for (c, codes) in self.row_codes.iter().enumerate() {
                for (p, &code) in packed.lo.iter_mut().zip(codes) {
                    *p |= u64::from(code) << (16 * c);
                }
            }
            if !(self.groups).code_all(packed, None, &mut self.group_codes) {
                return Ok(false);
            }
            self.groups.len()
        };
        // The first row of each new group, in group order (every new group has one: codes
        // are only made for rows of this batch).
        self.first_rows.clear();
        self.first_rows.resize(total - self.committed, u32::MAX);
        let mut missing = self.first_rows.len();
        for (r, &g) in self.group_codes.iter().enumerate() {
            if missing == 0 {
                break;
            }
            if let Some(first) = (g as usize).checked_sub(self.committed) {
                if self.first_rows[first] == u32::MAX {
                    self.first_rows[first] = r as u32;
                    missing -= 1;
                }
            }
        }
        if !self.first_rows.is_empty() {
            let rows = UInt32Array::from(self.first_rows.clone());
            for (c, array) in key_arrays.iter().enumerate() {
                let piece = take(array.as_ref(), &rows, None)?;
                // Inline views only: `gc` drops the data buffers `take` kept (a page's).
                let piece: ArrayRef = match piece.data_type() {
                    DataType::Utf8View => Arc::new(piece.as_string_view().gc()),
                    DataType::BinaryView => Arc::new(piece.as_binary_view().gc()),
                    _ => piece,
                };
                self.key_values[c].push(piece);
            }
        }
        self.group_indices.clear();
        self.sums.update(batch, &self.group_codes, total)?;
        for aggregate in &mut self.aggregates {
            if let Aggregate::Accumulator(accumulator, i) = aggregate {
                if self.group_indices.is_empty() {
                    (self.group_indices).extend(self.group_codes.iter().map(|&g| g as usize));
                }
                let values = evaluate_expressions_to_arrays(&self.inputs.arguments[*i], batch)?;
                accumulator.update_batch(&values, &self.group_indices, None, total)?;
            }
        }
        self.committed = total;
        Ok(true)
    }

    /// Bytes the groups hold: sums, accumulators and key values.
    fn size(&self) -> usize {
        let accumulators: usize = (self.aggregates.iter())
            .map(|a| match a {
                Aggregate::Accumulator(a, _) => a.size(),
                Aggregate::Summed(_) => 0,
            })
            .sum::<usize>()
            + self.sums.size();
        let keys: usize = (self.key_values.iter().flatten())
            .map(|k| k.get_array_memory_size())
            .sum();
        accumulators + keys
    }

    /// The partial state of every group so far (none when there are none).
    fn emit(&mut self) -> Result<Option<RecordBatch>> {
        if self.committed == 0 {
            return Ok(None);
        }
        let mut columns = Vec::with_capacity(self.schema.fields().len());
        for pieces in &self.key_values {
            let pieces: Vec<&dyn Array> = pieces.iter().map(|p| p.as_ref()).collect();
            columns.push(concat(&pieces)?);
        }
        for aggregate in &mut self.aggregates {
            match aggregate {
                Aggregate::Summed(s) => columns.extend(self.sums.state(s)?),
                Aggregate::Accumulator(a, _) => columns.extend(a.state(EmitTo::All)?),
            }
        }
        self.sums.clear();
        self.committed = 0;
        Ok(Some(RecordBatch::try_new(
            Arc::clone(&self.schema),
            columns,
        )?))
    }
}
