//! The scan: a builder over one or more files, and a stream of Arrow record batches.
//!
//! Row groups are the unit of parallelism. A bounded window of row-group tasks runs on a thread
//! pool; results are emitted in file order, so memory stays bounded by the window (each task
//! holds one row group's survivors) and `limit` stops the scan early.

pub mod fallback;
pub mod file;
pub mod order;
pub mod row_group;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, SchemaRef};

use crate::column::adapt::Evaluation;
use crate::dataset::{DatasetPlan, ScanFile};
use crate::error::{Error, Result};
use crate::expr::{sql, Predicate};
use crate::io::location::list;
use crate::io::{IoStats, Reader, StorageOptions};
use crate::metrics::{add, MetricsCollector, ScanMetrics};

use file::OpenedFile;
use order::{FilterOrder, Planner};
use row_group::{scan_row_group, RowGroupJob};

/// Row groups in flight per thread on remote sources (see `Scan::workers`).
const REMOTE_OVERLAP: usize = 8;

/// A scan over Parquet files, configured with a builder:
///
/// ```no_run
/// # fn main() -> tamis::Result<()> {
/// let mut stream = tamis::Scan::open("data/tpch-sf1/lineitem.parquet")?
///     .filter("l_shipdate >= DATE '1994-01-01' AND l_quantity < 24")?
///     .select(&["l_extendedprice", "l_discount"])?
///     .threads(2)
///     .batches()?;
/// for batch in &mut stream {
///     println!("{} rows", batch?.num_rows());
/// }
/// println!("{:?}", stream.metrics());
/// # Ok(()) }
/// ```
pub struct Scan {
    dataset: DatasetPlan,
    /// Bound to the dataset's leaves; each file binds the text again to its own.
    predicate: Option<Predicate>,
    predicate_text: Option<String>,
    /// Columns of the dataset schema (file columns, then partition columns).
    projection: Vec<usize>,
    threads: usize,
    limit: Option<usize>,
    batch_size: usize,
    filter_order: FilterOrder,
    evaluation: Evaluation,
    pruning: Pruning,
    metrics: Arc<MetricsCollector>,
    io: Arc<IoStats>,
}

/// Which file structures a scan may prune with (all by default). Turning one off makes the scan
/// behave as if the files did not have it — for experiments that measure what each one buys;
/// results never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pruning {
    /// Row-group min/max/null-count statistics.
    pub statistics: bool,
    /// Split-block Bloom filters.
    pub bloom_filters: bool,
    /// The page index: ColumnIndex (page min/max) and OffsetIndex (page locations, which also
    /// let payload columns fetch only the pages holding selected rows).
    pub page_index: bool,
}

impl Default for Pruning {
    fn default() -> Self {
        Pruning {
            statistics: true,
            bloom_filters: true,
            page_index: true,
        }
    }
}

impl Scan {
    /// Opens a file, every `*.parquet` below a directory, or the files matching a glob —
    /// local paths or object-store URLs (`s3://`, `gs://`, `az://`, `http(s)://`) with
    /// credentials from the environment.
    ///
    /// Several files form a dataset: their schemas are unified (a column missing from a file is
    /// NULL there; nullability may differ; a type conflict is an error naming both files), and
    /// `key=value` directories below the root become typed partition columns (see
    /// [`Scan::partition_types`]). Every footer is read here, for the schema; see
    /// [`crate::dataset::plan`] for which files stay open.
    pub fn open(path: impl AsRef<str>) -> Result<Scan> {
        Self::open_with(path, &StorageOptions::default())
    }

    /// [`Scan::open`] with explicit object-store options (endpoint, region, credentials…).
    pub fn open_with(path: impl AsRef<str>, options: &StorageOptions) -> Result<Scan> {
        let listing = list(path.as_ref(), options)?;
        let dataset = DatasetPlan::open(&listing)?;
        let scan = Self::over(dataset.clone());
        let (bytes, requests, ns) = dataset.open_cost;
        add(&scan.io.bytes, bytes);
        add(&scan.io.requests, requests);
        add(&scan.metrics.time_metadata_ns, ns);
        Ok(scan)
    }

    /// A scan over files already opened (see [`crate::Dataset`]): no footer is read again.
    pub fn over(dataset: DatasetPlan) -> Scan {
        let metrics = Arc::new(MetricsCollector::default());
        let io = Arc::new(IoStats::default());
        let projection = (0..dataset.schema.fields().len()).collect();
        Scan {
            dataset,
            predicate: None,
            predicate_text: None,
            projection,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            limit: None,
            batch_size: 8192,
            filter_order: FilterOrder::Auto,
            evaluation: Evaluation::Auto,
            pruning: Pruning::default(),
            metrics,
            io,
        }
    }

    /// Keeps only rows satisfying a SQL boolean expression (a WHERE clause without `WHERE`).
    /// Partition columns may be used; a column some files lack is NULL in their rows.
    pub fn filter(mut self, sql_text: &str) -> Result<Scan> {
        let p = sql::parse_predicate(sql_text, &self.dataset.leaves)?;
        self.predicate = Some(p);
        self.predicate_text = Some(sql_text.to_string());
        Ok(self)
    }

    /// Gives partition columns types instead of inferring them (integer types, Utf8, Date32,
    /// Boolean); keys not named are still inferred.
    pub fn partition_types(mut self, types: &[(&str, DataType)]) -> Result<Scan> {
        let types: Vec<(String, DataType)> = types
            .iter()
            .map(|(n, t)| (n.to_string(), t.clone()))
            .collect();
        self.dataset.partition_types(&types)?;
        if let Some(text) = &self.predicate_text {
            self.predicate = Some(sql::parse_predicate(text, &self.dataset.leaves)?);
        }
        Ok(self)
    }

    /// Projects top-level columns (file or partition columns), in the given order.
    pub fn select<S: AsRef<str>>(mut self, columns: &[S]) -> Result<Scan> {
        let schema = self.dataset.schema.clone();
        let mut projection = Vec::with_capacity(columns.len());
        for c in columns {
            let name = c.as_ref().trim();
            let idx = schema.index_of(name).ok().or_else(|| {
                let m: Vec<usize> = schema
                    .fields()
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.name().eq_ignore_ascii_case(name))
                    .map(|(i, _)| i)
                    .collect();
                (m.len() == 1).then(|| m[0])
            });
            match idx {
                Some(i) => projection.push(i),
                None => {
                    let names: Vec<&str> =
                        schema.fields().iter().map(|f| f.name().as_str()).collect();
                    return Err(Error::invalid(format!(
                        "unknown column '{name}' in select (columns: {})",
                        names.join(", ")
                    )));
                }
            }
        }
        self.projection = projection;
        Ok(self)
    }

    /// Number of worker threads (default: all cores).
    pub fn threads(mut self, n: usize) -> Scan {
        self.threads = n.max(1);
        self
    }

    /// Stops after `n` rows.
    pub fn limit(mut self, n: Option<usize>) -> Scan {
        self.limit = n;
        self
    }

    /// Maximum rows per output batch (default 8192).
    pub fn batch_size(mut self, n: usize) -> Scan {
        self.batch_size = n.max(1);
        self
    }

    /// How filters are ordered (default [`FilterOrder::Auto`]: the cost model with measured
    /// selectivities). `AsWritten` lets benchmarks force an order; results never depend on it.
    pub fn filter_order(mut self, order: FilterOrder) -> Scan {
        self.filter_order = order;
        self
    }

    /// How filters evaluate pages whose rows are only partly alive (default
    /// [`Evaluation::Auto`]: whichever of whole-page and selected evaluation measures cheaper,
    /// per filter). The others force one strategy for benchmarks; results never depend on it.
    pub fn evaluation(mut self, evaluation: Evaluation) -> Scan {
        self.evaluation = evaluation;
        self
    }

    /// Which structures may be used for pruning (default: all); see [`Pruning`].
    pub fn pruning(mut self, pruning: Pruning) -> Scan {
        self.pruning = pruning;
        self
    }

    /// Row-group workers: the thread count, times [`REMOTE_OVERLAP`] when a file is remote —
    /// there a row group mostly waits for its round trips, and overlapping several row groups'
    /// waits is what hides the latency.
    fn workers(&self) -> usize {
        let remote = self
            .dataset
            .files
            .iter()
            .any(|f| matches!(f.file, crate::io::location::FileRef::Object { .. }));
        self.threads * if remote { REMOTE_OVERLAP } else { 1 }
    }

    /// The schema of the output batches.
    pub fn schema(&self) -> SchemaRef {
        Arc::new(
            self.dataset
                .schema
                .project(&self.projection)
                .expect("projection in range"),
        )
    }

    /// The files' paths or URLs (all listed, including those a predicate will prune).
    pub fn files(&self) -> Vec<String> {
        self.dataset
            .files
            .iter()
            .map(|f| f.location.clone())
            .collect()
    }

    /// The bound predicate, rendered (for explain output).
    pub fn predicate_text(&self) -> Option<String> {
        self.predicate
            .as_ref()
            .map(|p| sql::render(p, &self.dataset.leaves))
    }

    /// Starts the scan.
    pub fn batches(self) -> Result<ScanStream> {
        let schema = self.schema();
        let workers = self.workers();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .thread_name(|i| format!("tamis-{i}"))
            .build()
            .map_err(|e| Error::internal(format!("cannot start threads: {e}")))?;
        let predicate = self.predicate.as_ref().zip(self.predicate_text.as_deref());
        let mut files = self.dataset.bind(
            predicate,
            &self.projection,
            self.pruning.statistics,
            &self.metrics,
        )?;
        let kept = files.iter_mut().map(|f| f.opened.take()).collect();
        let tasks: VecDeque<(usize, usize)> = files
            .iter()
            .enumerate()
            .flat_map(|(fi, f)| f.row_groups.iter().map(move |&rg| (fi, rg)))
            .collect();
        let total = tasks.len();
        let cancelled = Arc::new(AtomicBool::new(false));
        Ok(ScanStream {
            shared: Arc::new(Shared {
                files,
                io: self.io,
                schema: schema.clone(),
                metrics: self.metrics,
                planner: Planner::new(self.filter_order).with_evaluation(self.evaluation),
                pruning: self.pruning,
                done: AtomicUsize::new(0),
                cancelled,
            }),
            pool,
            pending: tasks,
            kept,
            current: None,
            in_flight: VecDeque::new(),
            window: workers * 2,
            ready: VecDeque::new(),
            remaining: self.limit,
            batch_size: self.batch_size,
            total,
            started: Instant::now(),
            finished: false,
            schema,
        })
    }
}

struct Shared {
    /// The files left after partition pruning, each bound to its own columns.
    files: Vec<ScanFile>,
    io: Arc<IoStats>,
    schema: SchemaRef,
    metrics: Arc<MetricsCollector>,
    planner: Planner,
    pruning: Pruning,
    done: AtomicUsize,
    cancelled: Arc<AtomicBool>,
}

/// Record batches of a running scan, in file order. Metrics are complete once it is exhausted.
pub struct ScanStream {
    shared: Arc<Shared>,
    pool: rayon::ThreadPool,
    /// (file, row group) tasks not started yet, in file order.
    pending: VecDeque<(usize, usize)>,
    /// The file whose row groups are being started, open, with a reader counting into the
    /// scan's I/O stats. Earlier files are held only by their running tasks, so at most
    /// `window + 1` files are open at once (besides those kept from the footer reads).
    current: Option<(usize, Arc<OpenedFile>, Reader)>,
    /// Files still open from the footer reads, by file; taken when the scan reaches them.
    kept: Vec<Option<Arc<OpenedFile>>>,
    in_flight: VecDeque<Receiver<Result<Option<RecordBatch>>>>,
    window: usize,
    ready: VecDeque<RecordBatch>,
    remaining: Option<usize>,
    batch_size: usize,
    total: usize,
    started: Instant,
    finished: bool,
    schema: SchemaRef,
}

impl ScanStream {
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// A handle that stops this scan from another thread: row groups not yet started are skipped
    /// and the stream ends (returns `None`) at its next step.
    pub fn canceller(&self) -> Canceller {
        Canceller {
            shared: self.shared.clone(),
        }
    }

    /// (row groups done, row groups total).
    pub fn progress(&self) -> (usize, usize) {
        (self.shared.done.load(Relaxed), self.total)
    }

    /// A snapshot of the metrics; complete after the last batch.
    pub fn metrics(&self) -> ScanMetrics {
        let mut s = self.shared.metrics.snapshot();
        s.bytes_read = self.shared.io.bytes.load(Relaxed);
        s.requests = self.shared.io.requests.load(Relaxed);
        s.filter_order = self.shared.planner.report();
        s
    }

    /// File `fi`, open (opened when the scan reaches it, unless kept from the footer reads).
    fn file(&mut self, fi: usize) -> Result<(Arc<OpenedFile>, Reader)> {
        if let Some((i, f, r)) = &self.current {
            if *i == fi {
                return Ok((f.clone(), r.clone()));
            }
        }
        self.current = None;
        let f = match self.kept[fi].take() {
            Some(f) => f,
            None => {
                let f = self.shared.files[fi].reopen()?;
                add(&self.shared.io.bytes, f.open_bytes);
                add(&self.shared.io.requests, f.open_requests);
                add(&self.shared.metrics.time_metadata_ns, f.open_ns);
                f
            }
        };
        let reader = f.scan_reader(self.shared.io.clone(), self.shared.cancelled.clone());
        self.current = Some((fi, f.clone(), reader.clone()));
        Ok((f, reader))
    }

    fn spawn_more(&mut self) {
        while self.in_flight.len() < self.window {
            let Some((fi, rg)) = self.pending.pop_front() else {
                break;
            };
            let ordinal = self.total - self.pending.len() - 1;
            let (tx, rx) = sync_channel(1);
            let (file, reader) = match self.file(fi) {
                Ok(x) => x,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    self.in_flight.push_back(rx);
                    break;
                }
            };
            let shared = self.shared.clone();
            self.pool.spawn(move || {
                if shared.cancelled.load(Relaxed) {
                    let _ = tx.send(Ok(None));
                    return;
                }
                let plan = &shared.files[fi];
                let file = file.as_ref();
                let job = RowGroupJob {
                    file,
                    reader: &reader,
                    needed_leaves: &plan.needed_leaves,
                    rg,
                    predicate: plan.predicate.as_ref(),
                    output: &plan.output,
                    schema: &shared.schema,
                    metrics: &shared.metrics,
                    planner: &shared.planner,
                    ordinal,
                    pruning: shared.pruning,
                };
                let result =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| scan_row_group(&job)))
                        .unwrap_or_else(|_| {
                            Err(Error::internal("a row-group task panicked")
                                .in_row_group(rg)
                                .in_file(file.name()))
                        });
                shared.done.fetch_add(1, Relaxed);
                let _ = tx.send(result);
            });
            self.in_flight.push_back(rx);
        }
    }

    fn finish(&mut self) {
        if !self.finished {
            self.finished = true;
            self.shared.cancelled.store(true, Relaxed);
            self.pending.clear();
            self.current = None;
            self.kept.clear();
            add(
                &self.shared.metrics.time_total_ns,
                self.started.elapsed().as_nanos() as u64,
            );
        }
    }
}

impl Iterator for ScanStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.remaining == Some(0) || self.shared.cancelled.load(Relaxed) {
                self.finish();
                return None;
            }
            if let Some(batch) = self.ready.pop_front() {
                let batch = match &mut self.remaining {
                    Some(r) if batch.num_rows() > *r => {
                        let b = batch.slice(0, *r);
                        *r = 0;
                        b
                    }
                    Some(r) => {
                        *r -= batch.num_rows();
                        batch
                    }
                    None => batch,
                };
                return Some(Ok(batch));
            }
            if self.finished {
                return None;
            }
            self.spawn_more();
            let Some(rx) = self.in_flight.pop_front() else {
                self.finish();
                return None;
            };
            match rx.recv() {
                Ok(Ok(Some(batch))) => {
                    let mut offset = 0;
                    while offset < batch.num_rows() {
                        let n = self.batch_size.min(batch.num_rows() - offset);
                        self.ready.push_back(batch.slice(offset, n));
                        offset += n;
                    }
                }
                Ok(Ok(None)) => {}
                Ok(Err(e)) => {
                    self.finish();
                    return Some(Err(e));
                }
                Err(_) => {
                    self.finish();
                    return Some(Err(Error::internal("a row-group task vanished")));
                }
            }
        }
    }
}

/// Stops a running [`ScanStream`] from any thread (e.g. on Ctrl-C in a binding).
#[derive(Clone)]
pub struct Canceller {
    shared: Arc<Shared>,
}

impl Canceller {
    pub fn cancel(&self) {
        self.shared.cancelled.store(true, Relaxed);
    }
}

impl Drop for ScanStream {
    fn drop(&mut self) {
        self.shared.cancelled.store(true, Relaxed);
    }
}
