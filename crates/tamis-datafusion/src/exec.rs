//! The physical scan: partitions of about equal bytes (`split.rs`), each a tamis scan on its own
//! thread.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use arrow::array::{RecordBatch, RecordBatchOptions};
use arrow::datatypes::SchemaRef;
use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Result, ScalarValue, Statistics};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::expressions::DynamicFilterPhysicalExpr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::statistics::StatisticsArgs;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};

use crate::df_error;
use crate::dynamic::{convert_dynamic, KeyFilters};
use crate::split::{split, Part};
use crate::stats::TableStats;
use crate::tap::KeyTap;

/// Batches in flight between a partition's scan thread and DataFusion: the scan decodes the
/// next ranges while the operators work on the last. Taking turns instead (decoding a range
/// only once the operators ask for it, one busy thread per partition) was slower on 16 cores:
/// TPC-H SF 10 Q1 0.83 s against 0.74 s at 16 threads, 2.44 against 2.16 s at 4. With two
/// threads per partition on as many CPUs as partitions, two batches of slack made each thread
/// block and be woken every batch or two; eight let each run longer (2 cores, tpchgen-cli
/// SF 10, 2 threads, medians of 5–7: Q1 0.92–0.93, Q5 0.89–0.92 of the time with two; SF 1,
/// all 22 queries: geometric mean 0.97). At most eight batches of 8 Ki rows a partition.
const CHANNEL_BATCHES: usize = 8;

/// DataFusion's `FilterExec` default selectivity (percent of rows kept) for a predicate its
/// interval analysis cannot bound.
const FILTER_SELECTIVITY_PERCENT: usize = 20;

/// Rows a partition's scan decodes at a time: one batch. The operators above read each batch
/// right after it is decoded (`ScanStream::drive`), so a range that fits in L2 leaves its
/// arrays there for them; with the scan's default of 128 Ki rows, TPC-H Q1's six columns
/// (about 9 MB a range) were gone from L2 before their batches were aggregated. `threads=1`
/// on two cores, medians of 5: Q1 434 → 309 ms, Q9 382 → 336, Q5 196 → 179, Q21 374 → 354;
/// Q3 and Q18 4 % slower. Confined to one CPU, Q1 gains 2 %; at 2 threads, 16 %.
const RANGE_ROWS: usize = 8192;

/// A column of the scan and the build side whose keys it probes.
type Tapped = (String, Arc<KeyTap>);

/// Scans a tamis dataset: projection, filter and limit pushed into the scan.
pub struct TamisExec {
    dataset: Arc<tamis::Dataset>,
    table_schema: SchemaRef,
    stats: Arc<TableStats>,
    /// Table columns read, in output order.
    projection: Vec<usize>,
    schema: SchemaRef,
    filter: Option<tamis::expr::Expr>,
    limit: Option<usize>,
    partitions: Vec<Part>,
    /// Runtime filters pushed in by joins (and TopK): read when a partition starts.
    dynamic: Vec<Arc<dyn PhysicalExpr>>,
    /// Whether to take runtime filters at all (`tamis.runtime_filters`).
    runtime_filters: bool,
    /// Strings and binaries as views ([`crate::TamisTable::with_string_views`]).
    string_views: bool,
    /// Columns whose pages are kept in the page cache on their first read
    /// ([`crate::rules::KeepSharedPages`]).
    first_reads_kept: Vec<String>,
    /// Join-key Bloom filters shared by the table's scans.
    key_filters: Arc<KeyFilters>,
    /// Build sides whose keys this scan probes, by column ([`crate::tap`]); shared by clones.
    taps: Arc<Mutex<Vec<Tapped>>>,
    /// The runtime filters as converted by the first partition to start: the others take
    /// them from here (a filter of many keys took 50 ms to convert, in each of 16 partitions).
    converted: Arc<Converted>,
    metrics: ExecutionPlanMetricsSet,
    properties: Arc<PlanProperties>,
}

impl Clone for TamisExec {
    fn clone(&self) -> Self {
        TamisExec {
            dataset: self.dataset.clone(),
            table_schema: self.table_schema.clone(),
            stats: self.stats.clone(),
            projection: self.projection.clone(),
            schema: self.schema.clone(),
            filter: self.filter.clone(),
            limit: self.limit,
            partitions: self.partitions.clone(),
            dynamic: self.dynamic.clone(),
            runtime_filters: self.runtime_filters,
            string_views: self.string_views,
            first_reads_kept: self.first_reads_kept.clone(),
            key_filters: self.key_filters.clone(),
            taps: self.taps.clone(),
            converted: self.converted.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
            properties: self.properties.clone(),
        }
    }
}

impl fmt::Debug for TamisExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TamisExec")
            .field("projection", &self.projection)
            .field("filter", &self.filter.as_ref().map(|e| e.to_string()))
            .field("limit", &self.limit)
            .field("partitions", &self.partitions.len())
            .field("dynamic", &self.dynamic.len())
            .finish()
    }
}

impl TamisExec {
    /// A scan of `table` reading the table columns `projection` (in output order).
    pub fn new(
        table: &crate::TamisTable,
        projection: Vec<usize>,
        filter: Option<tamis::expr::Expr>,
        limit: Option<usize>,
        target_partitions: usize,
    ) -> Result<TamisExec> {
        let dataset = table.dataset.clone();
        let table_schema = table.schema.clone();
        let schema = Arc::new(table_schema.project(&projection)?);
        let files: Vec<crate::split::FileGroups> = (dataset.plan().files.iter())
            .map(|f| {
                let groups = f.metadata.row_groups().iter();
                let sizes = groups.map(|rg| {
                    let bytes = rg.compressed_size().max(0) as u64;
                    (bytes, rg.num_rows().max(0) as usize)
                });
                (f.location.clone(), sizes.collect())
            })
            .collect();
        let partitions = split(&files, target_partitions, table.row_group_slices);
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(partitions.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Ok(TamisExec {
            dataset,
            table_schema,
            stats: table.stats.clone(),
            projection,
            schema,
            filter,
            limit,
            partitions,
            dynamic: Vec::new(),
            runtime_filters: table.runtime_filters,
            string_views: table.string_views,
            first_reads_kept: Vec::new(),
            key_filters: table.key_filters.clone(),
            taps: Arc::default(),
            converted: Arc::default(),
            metrics: ExecutionPlanMetricsSet::new(),
            properties,
        })
    }

    /// Has this scan probe the keys `tap` collects from a join's build side, on output column
    /// `index` (see [`crate::tap`]). Nothing when runtime filters are off.
    pub fn add_tap(&self, index: usize, tap: Arc<KeyTap>) {
        if !self.runtime_filters {
            return;
        }
        let name = self.schema.field(index).name().clone();
        if let Ok(mut taps) = self.taps.lock() {
            taps.push((name, tap));
        }
    }

    /// Which table the scan reads: the same for every scan of one registered table.
    pub fn table_id(&self) -> *const tamis::Dataset {
        Arc::as_ptr(&self.dataset)
    }

    /// The table columns the scan reads: its projection and its filter's columns (a join's
    /// runtime filters test projected columns, the join keys).
    pub fn read_columns(&self) -> Vec<String> {
        let fields = self.table_schema.fields();
        let mut read: Vec<String> = (self.projection.iter())
            .map(|&i| fields[i].name().clone())
            .collect();
        let leaves = &self.dataset.plan().leaves;
        let filtered = (self.filter.as_ref()).and_then(|f| tamis::expr::bind(f, leaves).ok());
        for leaf in filtered.map(|p| p.columns()).unwrap_or_default() {
            if let Some(field) = leaves.get(leaf).and_then(|l| fields.get(l.root)) {
                read.push(field.name().clone());
            }
        }
        read.sort();
        read.dedup();
        read
    }

    /// This scan, keeping the pages of `columns` it decompresses in the page cache on their
    /// first read (see [`tamis::Scan::keep_pages_on_first_read`]).
    pub fn keeping_first_reads(&self, columns: Vec<String>) -> TamisExec {
        TamisExec {
            first_reads_kept: columns,
            ..self.clone()
        }
    }

    /// Whether `other` reads the same rows and columns of the same table the same way (both
    /// as planned, runtime filters aside): [`crate::share`] computes such scans once.
    pub fn reads_as(&self, other: &TamisExec) -> bool {
        Arc::ptr_eq(&self.dataset, &other.dataset)
            && self.projection == other.projection
            && self.schema == other.schema
            && self.filter == other.filter
            && self.limit == other.limit
            && self.partitions == other.partitions
            && self.string_views == other.string_views
    }

    /// The scan without the runtime filters joins pushed into it (DataFusion's dynamic
    /// filters, tamis's taps): for a scan whose rows several consumers share, none of whose
    /// joins may filter them for the others.
    pub fn without_runtime_filters(&self) -> TamisExec {
        TamisExec {
            dynamic: Vec::new(),
            taps: Arc::default(),
            converted: Arc::default(),
            ..self.clone()
        }
    }

    /// The columns whose pages the scan keeps in the page cache on their first read.
    pub fn first_reads_kept(&self) -> &[String] {
        &self.first_reads_kept
    }

    /// The tamis filter pushed into the scan, as SQL text.
    pub fn filter(&self) -> Option<String> {
        self.filter.as_ref().map(|e| e.to_string())
    }

    /// The rows of the files the scan reads, before any filter (from the footers).
    pub fn table_rows(&self) -> Option<usize> {
        self.stats
            .table(&self.table_schema)
            .num_rows
            .get_value()
            .copied()
    }

    /// The table's value range of each numeric column with footer statistics.
    fn value_ranges(&self) -> crate::dynamic::Ranges {
        let stats = self.stats.table(&self.table_schema);
        let number = |p: &Precision<ScalarValue>| p.get_value().and_then(crate::dynamic::as_number);
        self.table_schema
            .fields()
            .iter()
            .zip(&stats.column_statistics)
            .filter_map(|(f, c)| {
                let range = (number(&c.min_value)?, number(&c.max_value)?);
                Some((f.name().clone(), range))
            })
            .collect()
    }

    /// How many partitions (runs of rows of about equal bytes) the scan has.
    pub fn partition_count(&self) -> usize {
        self.partitions.len()
    }
}

impl DisplayAs for TamisExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let names: Vec<&str> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(
                    f,
                    "TamisExec: partitions={}, projection=[{}]",
                    self.partitions.len(),
                    names.join(", ")
                )?;
                if let Some(p) = &self.filter {
                    write!(f, ", filter={p}")?;
                }
                if let Some(l) = self.limit {
                    write!(f, ", limit={l}")?;
                }
                if !self.first_reads_kept.is_empty() {
                    let kept = self.first_reads_kept.join(", ");
                    write!(f, ", pages kept on first read=[{kept}]")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => {
                if let Some(p) = &self.filter {
                    writeln!(f, "filter={p}")?;
                }
                Ok(())
            }
        }
    }
}

impl ExecutionPlan for TamisExec {
    fn name(&self) -> &str {
        "TamisExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        // The join that made a dynamic filter looks for it here to know it is used.
        for d in &self.dynamic {
            if f(d)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn handle_child_pushdown_result(
        &self,
        phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let filters: Vec<Arc<dyn PhysicalExpr>> = child_pushdown_result
            .parent_filters
            .into_iter()
            .map(|f| f.filter)
            .collect();
        // Never reported as applied: tamis applies a superset of each, the operator that made
        // it (or a FilterExec above) keeps doing the exact work.
        let answers = vec![PushedDown::No; filters.len()];
        let dynamic: Vec<Arc<dyn PhysicalExpr>> = filters
            .into_iter()
            .filter(|f| f.downcast_ref::<DynamicFilterPhysicalExpr>().is_some())
            .collect();
        let mut result = FilterPushdownPropagation::with_parent_pushdown_result(answers);
        if phase == FilterPushdownPhase::Post && self.runtime_filters && !dynamic.is_empty() {
            let mut node = self.clone();
            node.dynamic.extend(dynamic);
            result = result.with_updated_node(Arc::new(node) as Arc<dyn ExecutionPlan>);
        }
        Ok(result)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        let mut s = match args.partition() {
            None => self.stats.table(&self.table_schema),
            Some(p) => match self.partitions.get(p) {
                Some(part) => self.stats.parts(&self.table_schema, part),
                None => Statistics::new_unknown(&self.table_schema),
            },
        }
        .project(Some(&self.projection));
        // Bytes of the projected columns only: join selection compares them, and the whole
        // table's bytes made a one-column dimension look larger than a filtered fact table
        // (TPC-H Q13 built its hash table on 1.5 M orders instead of 150 K customers).
        let projected: Option<usize> = s
            .column_statistics
            .iter()
            .map(|c| c.byte_size.get_value().copied())
            .sum();
        if let Some(bytes) = projected {
            s.total_byte_size = Precision::Inexact(bytes);
        }
        // Not per column: DataFusion's inner joins pass their inputs' column sizes on
        // unscaled, and a semi join above sums them into its total. TPC-H Q21's 60 000 joined
        // rows then weighed 19.4 MB, more than the 1.2 M-row `lineitem` scan beside them, and
        // its anti join built its hash table on that scan (3.8 M rows).
        for c in &mut s.column_statistics {
            c.byte_size = Precision::Absent;
        }
        if self.filter.is_some() {
            // The filter removes rows: the footers' counts are upper bounds, scaled by the
            // selectivity DataFusion's FilterExec assumes for a predicate it cannot analyse, so
            // that joins above are ordered as they would be over a FilterExec.
            let scale = |p: Precision<usize>| match p {
                Precision::Exact(n) | Precision::Inexact(n) => {
                    Precision::Inexact(n.saturating_mul(FILTER_SELECTIVITY_PERCENT) / 100)
                }
                Precision::Absent => Precision::Absent,
            };
            s.num_rows = scale(s.num_rows);
            s.total_byte_size = scale(s.total_byte_size);
            for c in &mut s.column_statistics {
                c.null_count = c.null_count.to_inexact();
            }
        }
        if let Some(limit) = self.limit {
            if let Precision::Exact(n) | Precision::Inexact(n) = s.num_rows {
                if n > limit {
                    s = s.with_fetch(Some(limit), 0, 1)?;
                }
            }
        }
        Ok(Arc::new(s))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let part = self.partitions.get(partition).cloned().ok_or_else(|| {
            datafusion::error::DataFusionError::Internal(format!(
                "TamisExec: no partition {partition}"
            ))
        })?;
        let names: Vec<String> = self
            .projection
            .iter()
            .map(|&i| self.table_schema.field(i).name().clone())
            .collect();
        // Nothing projected (`count(*)`): read the first column and drop it.
        let read: Vec<String> = if names.is_empty() {
            self.table_schema
                .fields()
                .first()
                .map(|f| vec![f.name().clone()])
                .unwrap_or_default()
        } else {
            names
        };
        let scan = self
            .dataset
            .scan()
            .parts(part)
            .threads(1)
            .range_rows(RANGE_ROWS)
            .string_views(self.string_views)
            .keep_pages_on_first_read(self.first_reads_kept.clone())
            .limit(self.limit);
        let static_filter = self.filter.clone();
        let dynamic = self.dynamic.clone();
        let dataset = self.dataset.clone();
        let table_schema = self.table_schema.clone();
        let key_filters = self.key_filters.clone();
        let taps: Vec<Tapped> = self.taps.lock().map(|t| t.clone()).unwrap_or_default();
        let ranges = if dynamic.is_empty() && taps.is_empty() {
            crate::dynamic::Ranges::new()
        } else {
            self.value_ranges()
        };
        let converted = self.converted.clone();
        let key_list_limit =
            crate::sql::keys_per_partition(context.session_config().target_partitions());
        let schema = self.schema.clone();
        let metrics = TamisMetrics::new(&self.metrics, partition);
        // Runs on the partition's own thread, started when DataFusion first asks for rows: a
        // hash join asks only once its build side is complete, so its dynamic filter is final.
        let local = self
            .dataset
            .plan()
            .files
            .iter()
            .all(|f| !f.file.is_remote());
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(CHANNEL_BATCHES);
        let guard = Arc::new(CancelOnDrop::default());
        let shared = guard.clone();
        let out_schema = schema.clone();
        let errors = tx.clone();
        let run = move || -> Result<()> {
            let mut parts: Vec<tamis::expr::Expr> = static_filter.into_iter().collect();
            // The joins' dynamic filters, then the build sides too large for a key list (their
            // keys as a Bloom filter, once the join has collected them all).
            // A filter that does not bind to the files (a type tamis reads otherwise) is left
            // to the join.
            let binds =
                |e: &tamis::expr::Expr| tamis::expr::bind(e, &dataset.plan().leaves).is_ok();
            let before = parts.len();
            for d in &dynamic {
                let convert = || convert_dynamic(d, &table_schema, &key_filters, &ranges);
                parts.extend(converted.get_or_convert(d, convert)?.filter(binds));
            }
            let mut listed = Vec::new();
            for part in &parts[before..] {
                keyed_columns(part, &mut listed);
            }
            let listed: Vec<String> = listed.into_iter().map(str::to_string).collect();
            for (name, tap) in &taps {
                // Keys the join's own filter listed are not probed twice; the tap is for
                // build sides too large for its lists.
                if listed.contains(name) {
                    continue;
                }
                let keys = tap.filter(name, key_list_limit).filter(|f| {
                    let span = f.int_span().map(|(lo, hi)| (lo as f64, hi as f64));
                    !crate::dynamic::too_dense_on(&ranges, name, f.keys(), span)
                });
                let keys = keys.map(|f| tamis::expr::col(name).in_keys(f));
                parts.extend(keys.filter(binds));
            }
            let runtime = parts.len() - before;
            let scan = if parts.is_empty() {
                scan
            } else {
                scan.filter_expr(tamis::expr::Expr::all(parts))
                    .map_err(df_error)?
            };
            let mut stream = scan
                .select(&read)
                .map_err(df_error)?
                .batches()
                .map_err(df_error)?;
            shared.set(stream.canceller());
            let mut rows = 0u64;
            let (mut failed, mut gone) = (None, false);
            let mut forward = |batch: tamis_arrow::array::RecordBatch| {
                rows += batch.num_rows() as u64;
                let crossed = if out_schema.fields().is_empty() {
                    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
                    RecordBatch::try_new_with_options(out_schema.clone(), vec![], &options)
                        .map_err(Into::into)
                } else {
                    crate::cross::batch_to_datafusion(&batch, &out_schema)
                };
                match crossed {
                    // A send fails once the consumer is gone: stop the scan.
                    Ok(batch) => {
                        gone = tx.blocking_send(Ok(batch)).is_err();
                        !gone
                    }
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                }
            };
            if local {
                // On this thread, a range ahead of the consumer at most (the bounded channel
                // paces it): DataFusion's operators read the rows while they are in cache.
                stream.drive(&mut forward).map_err(df_error)?;
            } else {
                // Remote reads overlap with the consumer on the scan's own worker.
                for batch in &mut stream {
                    if !forward(batch.map_err(df_error)?) {
                        break;
                    }
                }
            }
            if let Some(e) = failed {
                return Err(e);
            }
            if gone {
                stream.canceller().cancel();
                return Ok(());
            }
            metrics.record(&stream.metrics(), rows, runtime);
            Ok(())
        };
        let mut start = Some(move || -> Result<()> {
            std::thread::Builder::new()
                .name(format!("tamis-df-{partition}"))
                .spawn(move || {
                    // A panic would drop the channel's senders: the stream would just end, a
                    // short result taken for the whole. It becomes the stream's error instead.
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run));
                    let failure = match outcome {
                        Ok(Ok(())) => return,
                        Ok(Err(e)) => e,
                        Err(panic) => datafusion::error::DataFusionError::Internal(format!(
                            "the scan of partition {partition} panicked: {}",
                            panic_message(panic.as_ref())
                        )),
                    };
                    let _ = errors.blocking_send(Err(failure));
                })
                .map(|_| ())
                .map_err(|e| {
                    datafusion::error::DataFusionError::Execution(format!(
                        "cannot start a scan thread: {e}"
                    ))
                })
        });
        let stream = futures::stream::poll_fn(move |cx| {
            // The guard lives as long as the stream: dropping the stream cancels the scan.
            let _ = &guard;
            if let Some(start) = start.take() {
                if let Err(e) = start() {
                    return std::task::Poll::Ready(Some(Err(e)));
                }
            }
            rx.poll_recv(cx)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// A panic's message, where it is text.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    (panic.downcast_ref::<&str>().copied())
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

/// The columns a runtime filter tests against a key list or key filter (in its top-level
/// conjunction).
fn keyed_columns<'e>(e: &'e tamis::expr::Expr, out: &mut Vec<&'e str>) {
    use tamis::expr::Expr as T;
    match e {
        T::And(l, r) => {
            keyed_columns(l, out);
            keyed_columns(r, out);
        }
        T::InList {
            expr,
            negated: false,
            ..
        }
        | T::InKeys { expr, .. } => {
            if let T::Column(c) = expr.as_ref() {
                out.push(&c.path);
            }
        }
        _ => {}
    }
}

/// Dynamic filters converted to tamis trees, by filter and snapshot generation: every
/// partition of a scan starts after the same build, so they convert the same state.
#[derive(Default)]
struct Converted {
    done: Mutex<Vec<Conversion>>,
}

/// (filter, its generation when converted, the tree); the filter is kept so that its address
/// is never another's.
type Conversion = (Arc<dyn PhysicalExpr>, u64, Option<tamis::expr::Expr>);

impl Converted {
    /// `filter`'s current state as converted by `convert`, once per generation.
    fn get_or_convert(
        &self,
        filter: &Arc<dyn PhysicalExpr>,
        convert: impl FnOnce() -> Result<Option<tamis::expr::Expr>>,
    ) -> Result<Option<tamis::expr::Expr>> {
        let generation = filter.snapshot_generation();
        // Held while converting: the partitions starting meanwhile wait for this conversion
        // instead of repeating it.
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        let found = (done.iter()).find(|(f, g, _)| Arc::ptr_eq(f, filter) && *g == generation);
        if let Some((_, _, tree)) = found {
            return Ok(tree.clone());
        }
        let tree = convert()?;
        done.retain(|(f, _, _)| !Arc::ptr_eq(f, filter));
        done.push((filter.clone(), generation, tree.clone()));
        Ok(tree)
    }
}

/// Cancels a partition's scan when DataFusion drops its stream (a LIMIT met, a query
/// cancelled), even while the scan thread is busy between batches.
#[derive(Default)]
struct CancelOnDrop {
    canceller: Mutex<Option<tamis::Canceller>>,
    dropped: AtomicBool,
}

impl CancelOnDrop {
    fn set(&self, c: tamis::Canceller) {
        if self.dropped.load(Ordering::SeqCst) {
            c.cancel();
        }
        if let Ok(mut slot) = self.canceller.lock() {
            *slot = Some(c);
        }
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
        if let Ok(slot) = self.canceller.lock() {
            if let Some(c) = slot.as_ref() {
                c.cancel();
            }
        }
    }
}

/// tamis's pruning funnel and I/O as DataFusion metrics (`EXPLAIN ANALYZE`).
struct TamisMetrics {
    set: ExecutionPlanMetricsSet,
    partition: usize,
}

impl TamisMetrics {
    fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> TamisMetrics {
        TamisMetrics {
            set: set.clone(),
            partition,
        }
    }

    fn record(&self, m: &tamis::ScanMetrics, output_rows: u64, runtime_filters: usize) {
        let count = |name: &'static str, v: u64| {
            MetricBuilder::new(&self.set)
                .counter(name, self.partition)
                .add(v as usize);
        };
        MetricBuilder::new(&self.set)
            .output_rows(self.partition)
            .add(output_rows as usize);
        count("files", m.files);
        count("files_pruned_partition", m.files_pruned_partition);
        count("row_groups", m.row_groups_total);
        count(
            "row_groups_pruned",
            m.row_groups_pruned_statistics
                + m.row_groups_pruned_bloom
                + m.row_groups_pruned_dictionary,
        );
        count("pages", m.pages_total);
        count("pages_pruned", m.pages_pruned);
        count("rows_scanned", m.rows_total);
        count("rows_pruned", m.rows_total.saturating_sub(m.rows_candidate));
        count("rows_selected", m.rows_selected);
        count("bytes_read", m.bytes_read);
        count("requests", m.requests);
        count("pages_decompressed", m.pages_read);
        count("pages_cache_hits", m.pages_cache_hits);
        count("runtime_filters", runtime_filters as u64);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_dynamic_filter_is_converted_once_per_generation() {
        use datafusion::physical_expr::expressions::{lit, Column, DynamicFilterPhysicalExpr};
        use datafusion::physical_expr::PhysicalExpr;
        use std::sync::Arc;

        let k: Arc<dyn PhysicalExpr> = Arc::new(Column::new("k", 0));
        let filter = Arc::new(DynamicFilterPhysicalExpr::new(vec![k], lit(true)));
        let dynamic: Arc<dyn PhysicalExpr> = filter.clone();
        let other: Arc<dyn PhysicalExpr> =
            Arc::new(DynamicFilterPhysicalExpr::new(vec![], lit(true)));
        let converted = super::Converted::default();
        let calls = std::cell::Cell::new(0);
        let convert = || {
            calls.set(calls.get() + 1);
            Ok(Some(tamis::expr::col("k").is_null()))
        };
        let tree = converted.get_or_convert(&dynamic, convert).unwrap();
        assert_eq!(tree.unwrap().to_string(), "k IS NULL");
        converted.get_or_convert(&dynamic, convert).unwrap();
        assert_eq!(
            calls.get(),
            1,
            "same filter, same generation: converted once"
        );
        converted.get_or_convert(&other, convert).unwrap();
        assert_eq!(calls.get(), 2, "another filter is converted on its own");
        filter.update(lit(false)).unwrap();
        converted.get_or_convert(&dynamic, convert).unwrap();
        assert_eq!(calls.get(), 3, "a new generation is converted again");
        converted.get_or_convert(&dynamic, convert).unwrap();
        assert_eq!(calls.get(), 3);
    }
}
