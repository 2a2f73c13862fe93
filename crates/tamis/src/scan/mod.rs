//! The scan: a builder over one or more files, and a stream of Arrow record batches.
//!
//! Row groups are the unit of parallelism. A bounded window of row-group tasks runs on a thread
//! pool; results are emitted in file order, so memory stays bounded by the window (each task
//! holds one row group's survivors) and `limit` stops the scan early.

pub(crate) mod cost;
pub(crate) mod estimate;
pub(crate) mod fallback;
mod fit;
mod io_plan;
pub(crate) mod order;
mod pinned;
mod pools;
pub(crate) mod pruning;
pub(crate) mod row_group;
mod stream;

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;
use std::time::Instant;

use arrow::datatypes::{DataType, SchemaRef};
use once_cell::sync::OnceCell;

use crate::column::adapt::Evaluation;
use crate::dataset::plan::KEEP_OPEN;
use crate::dataset::schema::with_short_decimals;
use crate::dataset::{
    discover_partitions, parse_hive_path, partition_leaves, partition_verdict, table_partitions,
    Partitions,
};
use crate::dataset::{DatasetPlan, ScanFile};
use crate::error::{Error, Result};
use crate::expr::{bind, parse, render::render, Expr, Predicate};
use crate::index::BrokenIndex;
use crate::io::location::{locate, Listing, Located};
use crate::io::{IoStats, StorageOptions};
use crate::metrics::{add, MetricsCollector};
use crate::table::{AsOf, TableSnapshot};

use order::{FilterOrder, Planner};
use stream::Shared;
pub use stream::{Canceller, ScanStream};

/// Every column of a plan, in a table's own order when it is a table's.
fn default_projection(plan: &DatasetPlan) -> Vec<usize> {
    let all = || (0..plan.schema.fields().len()).collect();
    match &plan.order {
        Some(order) => project(&plan.schema, order).unwrap_or_else(|_| all()),
        None => all(),
    }
}

/// Row groups in flight per thread on remote sources (see `Scan::workers`).
const REMOTE_OVERLAP: usize = 8;

/// Row groups of some files: `(file location, row-group range)` pairs (see [`Scan::row_groups`]).
pub type RowGroupParts = Vec<(String, Range<usize>)>;

pub use crate::dataset::ScanPart;

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
    /// The files whose footers were read, their schema and leaves; read on first need when the
    /// scan comes from a partitioned listing (see [`Scan::filter`]).
    dataset: OnceCell<DatasetPlan>,
    /// A hive-partitioned listing, kept so that a filter on partition columns prunes files
    /// before their footers are read (`None` for a single file or a [`crate::Dataset`]).
    listed: Option<Listed>,
    /// Bound to the dataset's leaves; each file binds the tree again to its own.
    predicate: Option<Predicate>,
    predicate_expr: Option<Expr>,
    /// Columns of the dataset schema (file columns, then partition columns).
    projection: Vec<usize>,
    /// The columns `select` named (else: every column of the plan), kept to project again
    /// when a partition filter opens other files.
    selected: Option<Vec<String>>,
    threads: usize,
    limit: Option<usize>,
    batch_size: usize,
    /// Rows a row-group task decodes and hands on at a time (see [`Scan::range_rows`]).
    range_rows: usize,
    /// Strings and binaries as views (see [`Scan::string_views`]).
    string_views: bool,
    short_decimals: bool,
    string_dictionaries: bool,
    filter_order: FilterOrder,
    evaluation: Evaluation,
    pruning: Pruning,
    memory_limit: usize,
    /// Where sidecar indexes are, when not beside the files (see [`Scan::index_dir`]).
    index_dir: Option<Arc<std::path::PathBuf>>,
    broken_index: BrokenIndex,
    verify_index: bool,
    /// See [`Scan::keep_pages_on_first_read`].
    first_reads_kept: Arc<[String]>,
    /// Only these parts of the files are read (see [`Scan::parts`]).
    only: Option<Arc<[ScanPart]>>,
    metrics: Arc<MetricsCollector>,
    io: Arc<IoStats>,
}

/// A listing whose footers are read only for the files a partition filter leaves.
#[derive(Clone)]
struct Listed {
    listing: Listing,
    /// Partition types given by [`Scan::partition_types`] (the others are inferred).
    types: Vec<(String, DataType)>,
    /// Files pruned by partition values before their footers were read.
    pruned: u64,
    /// A table's files pruned by the statistics of its metadata, before their footers.
    pruned_by_table_stats: u64,
    /// The filter the open files were chosen by: `None` not opened yet, `Some(None)` all files.
    opened_for: Option<Option<Expr>>,
    /// The table whose files these are (its partition values, deleted rows and columns come
    /// from its metadata, not from the paths).
    table: Option<Arc<TableSnapshot>>,
}

impl Listed {
    /// The partitions the paths say, typed as given or inferred (no file is read); a table's
    /// from its metadata.
    fn partitions(&self) -> Result<Partitions> {
        if let Some(table) = &self.table {
            return table_partitions(table);
        }
        let relative: Vec<String> = (self.listing.files.iter())
            .map(|f| self.listing.relative(f).unwrap_or_default())
            .collect();
        let refs: Vec<&str> = relative.iter().map(String::as_str).collect();
        discover_partitions(&refs, &self.types)
    }
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
    /// A sidecar index beside the file (`tamis index`): page-level Bloom filters.
    pub sidecar_index: bool,
    /// Sub-page reads: a payload page stored uncompressed and PLAIN with a fixed width is read
    /// by the 4 KiB blocks that hold its selected rows, from the file or, for a compressed
    /// page, from its decompressed copy in the page cache's directory (needs the OffsetIndex).
    pub sub_page_reads: bool,
}

impl Default for Pruning {
    fn default() -> Self {
        Pruning {
            statistics: true,
            bloom_filters: true,
            page_index: true,
            sidecar_index: true,
            sub_page_reads: true,
        }
    }
}

impl crate::dataset::Dataset {
    /// A scan over the dataset (the same builder as [`Scan::open`] returns), reading no footer.
    pub fn scan(&self) -> Scan {
        Scan::over(self.plan_for_scan())
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
    /// [`Scan::partition_types`]). Without partitions every footer is read here, for the
    /// schema; with them, footers wait for [`Scan::filter`], so files its partition conjuncts
    /// rule out are never opened (see `plan` for which files stay open).
    pub fn open(path: impl AsRef<str>) -> Result<Scan> {
        Self::open_with(path, &StorageOptions::default())
    }

    /// [`Scan::open`] with explicit object-store options (endpoint, region, credentials…).
    ///
    /// A Delta Lake table's root (a directory or prefix holding `_delta_log/`) or an Apache
    /// Iceberg table (its metadata file, or a root holding `metadata/`) is read as the table's
    /// latest version (see [`Scan::open_table`], [`crate::table::open`]).
    pub fn open_with(path: impl AsRef<str>, options: &StorageOptions) -> Result<Scan> {
        match locate(path.as_ref(), options)? {
            Located::Files(listing) => Self::open_listing(listing),
            Located::Table(location, format) => Self::open_table(crate::table::open(
                &location,
                Some(format),
                AsOf::Latest,
                options,
            )?),
        }
    }

    /// [`Scan::open_with`], with the table at `path` read at `at` and, given `format`, as
    /// that format (needed only where a root holds both): the CLI's and Python's entry.
    pub fn open_as_of(
        path: impl AsRef<str>,
        format: Option<crate::table::TableFormat>,
        at: AsOf,
        options: &StorageOptions,
    ) -> Result<Scan> {
        match (format, at) {
            (None, AsOf::Latest) => Self::open_with(path, options),
            (format, at) => {
                Self::open_table(crate::table::open(path.as_ref(), format, at, options)?)
            }
        }
    }

    /// The files at `locations` of one version of a table: a worker's share of a scan planned
    /// elsewhere (a Spark task). The snapshot is opened once per process
    /// ([`crate::table::open_version`]); the files' deletes, column names and partition values
    /// are the table's.
    pub fn open_table_files(
        location: &str,
        format: crate::table::TableFormat,
        version: u64,
        locations: &[String],
        options: &StorageOptions,
    ) -> Result<Scan> {
        let snapshot = crate::table::open_version(location, format, version, options)?;
        Self::open_table(snapshot.with_files(locations))
    }

    /// A scan over one version of a table (see [`crate::table`]): its columns in the table's
    /// order and names, its partition values from its metadata, its deleted rows never read.
    /// No footer is read before [`Scan::filter`], so that files its partition conjuncts rule out
    /// are never opened.
    pub fn open_table(table: TableSnapshot) -> Result<Scan> {
        let mut scan = Self::unopened();
        if table.files.is_empty() {
            let plan = DatasetPlan::open_table(&table, &[], KEEP_OPEN)?;
            scan.opened(plan, None)?;
            return Ok(scan);
        }
        scan.listed = Some(Listed {
            listing: Listing {
                files: table.files.iter().map(|f| f.file.clone()).collect(),
                root: None,
            },
            types: Vec::new(),
            pruned: 0,
            pruned_by_table_stats: 0,
            opened_for: None,
            table: Some(Arc::new(table)),
        });
        Ok(scan)
    }

    /// Opens the files a [`Listing`] names — for instance [`crate::io::location::named`]:
    /// the files of one part of a dataset planned elsewhere, with the dataset's root so that
    /// their hive partition values are the same (give the partition types with
    /// [`Scan::partition_types`], as they were inferred over the whole dataset). Only these
    /// files' footers are read.
    pub fn open_listing(listing: Listing) -> Result<Scan> {
        let partitioned = listing.files.len() > 1
            && listing.files.iter().any(|f| {
                listing
                    .relative(f)
                    .is_some_and(|r| !parse_hive_path(&r).is_empty())
            });
        let mut scan = Self::unopened();
        if partitioned {
            scan.listed = Some(Listed {
                listing,
                types: Vec::new(),
                pruned: 0,
                pruned_by_table_stats: 0,
                opened_for: None,
                table: None,
            });
        } else {
            let plan = DatasetPlan::open(&listing)?;
            scan.opened(plan, None)?;
        }
        Ok(scan)
    }

    /// A scan over files already opened (see [`crate::Dataset`]): no footer is read again.
    pub fn over(dataset: DatasetPlan) -> Scan {
        let mut scan = Self::unopened();
        scan.projection = default_projection(&dataset);
        let _ = scan.dataset.set(dataset);
        scan
    }

    fn unopened() -> Scan {
        Scan {
            dataset: OnceCell::new(),
            listed: None,
            predicate: None,
            predicate_expr: None,
            projection: Vec::new(),
            selected: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            limit: None,
            batch_size: 8192,
            range_rows: row_group::RANGE_ROWS,
            string_views: false,
            short_decimals: false,
            string_dictionaries: false,
            filter_order: FilterOrder::Auto,
            evaluation: Evaluation::Auto,
            pruning: Pruning::default(),
            memory_limit: crate::budget::DEFAULT_MEMORY_LIMIT,
            index_dir: None,
            broken_index: BrokenIndex::Fail,
            verify_index: false,
            first_reads_kept: Arc::new([]),
            only: None,
            metrics: Arc::new(MetricsCollector::default()),
            io: Arc::new(IoStats::default()),
        }
    }

    /// Takes `plan`, just opened (for the files `filter` leaves, or all of them), counting its
    /// footer reads and projecting its schema again.
    fn opened(&mut self, plan: DatasetPlan, filter: Option<&Expr>) -> Result<()> {
        let (bytes, requests, ns) = plan.open_cost;
        add(&self.io.bytes, bytes);
        add(&self.io.requests, requests);
        add(&self.metrics.time_metadata_ns, ns);
        self.projection = match &self.selected {
            Some(names) => project(&plan.schema, names)?,
            None => default_projection(&plan),
        };
        if let Some(listed) = &mut self.listed {
            listed.opened_for = Some(filter.cloned());
        }
        self.dataset = OnceCell::new();
        let _ = self.dataset.set(plan);
        Ok(())
    }

    /// The opened files, opening the listed ones (all of them) if not done yet.
    fn plan(&mut self) -> Result<&DatasetPlan> {
        if self.dataset.get().is_none() {
            let plan = self.open_listed(None)?;
            self.opened(plan, None)?;
        }
        self.dataset
            .get()
            .ok_or_else(|| Error::internal("no files opened"))
    }

    /// Opens the listed files that `filter`'s partition conjuncts leave (all of them without a
    /// filter; the first one when none is left, for the schema), with the partition types
    /// discovered over the whole listing so that pruning does not change them.
    fn open_listed(&mut self, filter: Option<&Expr>) -> Result<DatasetPlan> {
        let listed = self
            .listed
            .as_mut()
            .ok_or_else(|| Error::internal("a scan with neither files nor a listing"))?;
        let partitions = listed.partitions()?;
        let listing = &listed.listing;
        let leaves = partition_leaves(&partitions.schema, 0, 0)?;
        let implied = filter.and_then(|e| bind::bind_implied(e, &leaves));
        let mut keep = Vec::with_capacity(listing.files.len());
        for (i, (f, values)) in listing.files.iter().zip(&partitions.values).enumerate() {
            let pruned = match &implied {
                None => false,
                Some(p) => {
                    partition_verdict(p, 0, &leaves, values).map_err(|e| e.in_file(f.location()))?
                        == Predicate::False
                }
            };
            if !pruned {
                keep.push(i);
            }
        }
        if keep.is_empty() && listed.table.is_none() {
            // No row will be read, but the schema comes from a footer (`bind` prunes the file).
            keep.push(0);
        }
        listed.pruned = (listing.files.len() - keep.len()) as u64;
        if let Some(table) = &listed.table {
            let by_stats = match (&table.pruner, filter) {
                (Some(pruner), Some(e)) => pruner.files_for(e)?,
                _ => None,
            };
            if let Some(may_match) = by_stats {
                let before = keep.len();
                keep.retain(|&i| may_match.get(i).copied().unwrap_or(true));
                listed.pruned_by_table_stats = (before - keep.len()) as u64;
            }
            return DatasetPlan::open_table(table, &keep, KEEP_OPEN);
        }
        let kept = Listing {
            files: keep.iter().map(|&i| listing.files[i].clone()).collect(),
            root: listing.root.clone(),
        };
        DatasetPlan::open_typed(&kept, KEEP_OPEN, &partitions.schema.fields)
    }

    /// Keeps only rows satisfying a SQL boolean expression (a WHERE clause without `WHERE`).
    /// Partition columns may be used; a column some files lack is NULL in their rows.
    ///
    /// Over a partitioned listing this is where footers are read: first the conjuncts that
    /// name only partition columns prune files by their paths, then the footers of the files
    /// left are read, and the schema is theirs (the first file's when none is left). Call it
    /// before [`Scan::select`], which would read every footer.
    pub fn filter(self, sql_text: &str) -> Result<Scan> {
        let e = parse::parse(sql_text)?;
        self.filter_expr(e)
    }

    /// [`Scan::filter`] with a built expression instead of SQL text:
    ///
    /// ```no_run
    /// use tamis::expr::{col, lit};
    /// # fn main() -> tamis::Result<()> {
    /// let scan = tamis::Scan::open("lineitem.parquet")?
    ///     .filter_expr(col("l_quantity").lt(lit(24i64)).and(col("l_returnflag").eq(lit("R"))))?;
    /// # Ok(()) }
    /// ```
    pub fn filter_expr(mut self, e: Expr) -> Result<Scan> {
        // Files opened for another filter may lack some this one needs; all files do not.
        let reopen = self
            .listed
            .as_ref()
            .is_some_and(|l| !matches!(l.opened_for, Some(None)));
        if reopen {
            let plan = self.open_listed(Some(&e))?;
            self.opened(plan, Some(&e))?;
        }
        let p = bind::bind(&e, &self.plan()?.leaves)?;
        self.predicate = Some(p);
        self.predicate_expr = Some(e);
        Ok(self)
    }

    /// [`Scan::partition_types`] with each type as Arrow's `DataType` display text (`Int32`,
    /// `Utf8`, …): how an engine that planned the dataset elsewhere hands the inferred types to
    /// the scans of its parts.
    pub fn partition_types_text(self, types: &[(String, String)]) -> Result<Scan> {
        let parsed = (types.iter())
            .map(|(name, t)| {
                let t = t.parse::<DataType>().map_err(|e| {
                    Error::invalid(format!("partition column '{name}': type '{t}': {e}"))
                })?;
                Ok((name.as_str(), t))
            })
            .collect::<Result<Vec<_>>>()?;
        self.partition_types(&parsed)
    }

    /// Gives partition columns types instead of inferring them (integer types, Utf8, Date32,
    /// Boolean); keys not named are still inferred.
    pub fn partition_types(mut self, types: &[(&str, DataType)]) -> Result<Scan> {
        let types: Vec<(String, DataType)> = types
            .iter()
            .map(|(n, t)| (n.to_string(), t.clone()))
            .collect();
        if self.listed.as_ref().is_some_and(|l| l.table.is_some()) {
            return Err(Error::invalid(
                "a table's partition columns have the types its schema gives them",
            ));
        }
        if let Some(listed) = &mut self.listed {
            // Types change what a partition filter prunes: choose the files again.
            listed.types = types;
            listed.partitions()?;
            listed.opened_for = None;
            self.dataset = OnceCell::new();
            if let Some(e) = self.predicate_expr.clone() {
                return self.filter_expr(e);
            }
            return Ok(self);
        }
        let mut plan = self
            .dataset
            .take()
            .ok_or_else(|| Error::internal("a scan with neither files nor a listing"))?;
        plan.partition_types(&types)?;
        plan.open_cost = (0, 0, 0);
        self.opened(plan, None)?;
        if let Some(e) = self.predicate_expr.clone() {
            self.predicate = Some(bind::bind(&e, &self.plan()?.leaves)?);
        }
        Ok(self)
    }

    /// Projects top-level columns (file or partition columns), in the given order.
    pub fn select<S: AsRef<str>>(mut self, columns: &[S]) -> Result<Scan> {
        let names: Vec<String> = columns
            .iter()
            .map(|c| c.as_ref().trim().to_string())
            .collect();
        self.projection = project(&self.plan()?.schema, &names)?;
        self.selected = Some(names);
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

    /// Selected rows of a row group decoded and handed on at a time (default 131 072): a
    /// consumer reads a range's arrays while they are still in cache. A consumer that works
    /// on each batch as it comes ([`ScanStream::drive`], a query engine's operators) is best
    /// served by ranges of about one batch, so that they are still in L2. Results never
    /// depend on it.
    pub fn range_rows(mut self, n: usize) -> Scan {
        self.range_rows = n.max(1);
        self
    }

    /// Outputs the files' top-level dictionary-encoded string and binary columns as
    /// `Utf8View` / `BinaryView` (default off: `Utf8` / `Binary`, or the types the files' Arrow
    /// schema gives). Their rows then share the dictionary's entries (16 bytes a row, values of
    /// up to 12 bytes inside the view) instead of copying them; query engines hash and compare
    /// such views faster (DataFusion's own reader declares every string a view). Columns
    /// with PLAIN pages keep their types: their views would point into buffers of mostly other
    /// rows' values, which engines compact by copying after a selective join.
    pub fn string_views(mut self, on: bool) -> Scan {
        self.string_views = on;
        self
    }

    /// Outputs the files' top-level dictionary-encoded string and binary columns as Arrow
    /// dictionaries, `Dictionary(Int32, Utf8 | Binary)`: each batch holds its row group's
    /// entries once and a 4-byte code a row, nothing copied per row (default off). For
    /// consumers that read dictionaries as they are (Spark's column vectors through the
    /// connector). Takes precedence over [`Scan::string_views`].
    pub fn string_dictionaries(mut self, on: bool) -> Scan {
        self.string_dictionaries = on;
        self
    }

    /// Outputs top-level decimal columns of at most 18 digits as `Decimal64` (default off:
    /// `Decimal128`, as Parquet readers do). Those stored as INT32 or INT64 are then built from
    /// their integers directly, 8 bytes a value, never widened to 16: for consumers whose own
    /// decimals of that precision are 64-bit (Spark, DuckDB).
    pub fn short_decimals(mut self, on: bool) -> Scan {
        self.short_decimals = on;
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

    /// The most memory one row group's decoding may take, in bytes (default
    /// [`DEFAULT_MEMORY_LIMIT`](crate::budget::DEFAULT_MEMORY_LIMIT), 4 GiB): decoded pages,
    /// dictionaries, codes and selection bitmaps, all reserved before they are allocated (see
    /// [`crate::budget`]). A file whose headers ask for more — a crafted page announcing 2^31
    /// values from a few bytes, or a legitimately huge row group — fails with a
    /// [`ResourceLimit`](crate::ErrorKind::ResourceLimit) error naming the file, row group,
    /// column and page. At most the worker count of row groups decode at once.
    pub fn memory_limit(mut self, bytes: usize) -> Scan {
        self.memory_limit = bytes;
        self
    }

    /// Looks for sidecar indexes (`tamis index --output DIR`) in `dir`, by data file name,
    /// instead of beside the files (for read-only data).
    pub fn index_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Scan {
        self.index_dir = Some(Arc::new(dir.into()));
        self
    }

    /// What a sidecar index that cannot be read (truncated, a checksum mismatch, an unknown
    /// version) does: fail the scan naming it (default), or be ignored — the scan reads as if
    /// there were none, counts it in [`crate::ScanMetrics::row_groups_index_broken`] and keeps the
    /// first error in [`crate::ScanMetrics::warnings`]. Rows never change either way.
    pub fn broken_index(mut self, policy: BrokenIndex) -> Scan {
        self.broken_index = policy;
        self
    }

    /// Before a sidecar index answers for a column chunk, read the chunk and check it against
    /// the content hash the sidecar recorded (off by default: it reads what the index saves).
    /// A sidecar always has to match the file's length, footer and mtime or ETag; this also
    /// catches a rewrite of data pages that kept all three. A mismatch reads as a stale index:
    /// counted in [`crate::ScanMetrics::row_groups_index_stale`], warned about, rows unchanged.
    pub fn verify_index(mut self, verify: bool) -> Scan {
        self.verify_index = verify;
        self
    }

    /// Keeps the pages of `columns` (top-level names) that this scan decompresses in the page
    /// cache's memory tier on their first read. By default a page is kept when it is read a
    /// second time, so that a page read once — most of a one-off scan — costs no new memory
    /// (see `crate::cache`); for columns another scan reads soon after (a query's other scan
    /// of the same table, or filling the cache on purpose) the pages are kept at once, and the
    /// other scan finds them decompressed.
    pub fn keep_pages_on_first_read<S: Into<String>>(
        mut self,
        columns: impl IntoIterator<Item = S>,
    ) -> Scan {
        self.first_reads_kept = columns.into_iter().map(Into::into).collect();
        self
    }

    /// Reads only the given row groups: `(file, range)` pairs, the file as [`Scan::files`]
    /// names it. Files not named are skipped. For engines that split one scan into partitions
    /// (each partition a scan of its own row groups); pruning and filters apply as usual.
    pub fn row_groups(self, parts: RowGroupParts) -> Scan {
        let parts = parts.into_iter().map(|(f, r)| ScanPart::row_groups(f, r));
        self.parts(parts.collect())
    }

    /// Reads only the given parts of the files: row groups, or some rows of row groups (their
    /// union, where parts overlap). For engines that split one scan into partitions of about
    /// equal bytes: a table of fewer row groups than partitions (one row group holding a whole
    /// dimension table) is split inside its row groups, so that every partition has rows. The
    /// rows outside a part are no candidates: no filter evaluates them and no page holding
    /// only such rows is read; pruning and filters apply as usual. A row range past the end of
    /// its row group is an error when the scan starts.
    pub fn parts(mut self, parts: Vec<ScanPart>) -> Scan {
        self.only = Some(parts.into());
        self
    }

    /// Row-group workers: the thread count, times [`REMOTE_OVERLAP`] when a file is remote —
    /// there a row group mostly waits for its round trips, and overlapping several row groups'
    /// waits is what hides the latency.
    fn workers(&self, plan: &DatasetPlan) -> usize {
        let remote = plan.files.iter().any(|f| f.file.is_remote());
        self.threads * if remote { REMOTE_OVERLAP } else { 1 }
    }

    /// The schema of the output batches (over a partitioned listing not filtered yet, this
    /// reads the footers).
    pub fn schema(&mut self) -> Result<SchemaRef> {
        let views = self.string_views;
        let short_decimals = self.short_decimals;
        let dictionaries = self.string_dictionaries;
        let plan = self.plan()?;
        let mut schema = if dictionaries {
            plan.schema_with_dictionaries()
        } else if views {
            plan.schema_with_views()
        } else {
            plan.schema.clone()
        };
        if short_decimals {
            schema = Arc::new(with_short_decimals(&schema));
        }
        schema
            .project(&self.projection)
            .map(Arc::new)
            .map_err(|e| Error::internal(format!("projecting the schema: {e}")))
    }

    /// The files' paths or URLs (all listed, including those a predicate will prune).
    pub fn files(&self) -> Vec<String> {
        match &self.listed {
            Some(l) => l.listing.files.iter().map(|f| f.location()).collect(),
            None => self
                .dataset
                .get()
                .map(|d| d.files.iter().map(|f| f.location.clone()).collect())
                .unwrap_or_default(),
        }
    }

    /// The bound predicate, rendered (for explain output).
    pub fn predicate_text(&self) -> Option<String> {
        let p = self.predicate.as_ref()?;
        Some(render(p, &self.dataset.get()?.leaves))
    }

    /// The row groups the scan would read after pruning by partition values and footer
    /// statistics, reading no data: `(file location, row-group indexes)` per file left. For
    /// engines that plan partitions elsewhere (a Spark driver), so that no task is started for
    /// row groups the filter rules out; the scan itself prunes the same way, and further.
    pub fn row_groups_left(mut self) -> Result<Vec<(String, Vec<usize>)>> {
        self.plan()?;
        let plan = self
            .dataset
            .take()
            .ok_or_else(|| Error::internal("no files opened"))?;
        Ok(self
            .bind(plan)?
            .into_iter()
            .map(|f| (f.location, f.row_groups))
            .collect())
    }

    /// The files left after partition values and footer statistics, each with its predicate,
    /// projection and row groups (see [`DatasetPlan::bind`]).
    fn bind(&self, plan: DatasetPlan) -> Result<Vec<ScanFile>> {
        let predicate = self.predicate.as_ref().zip(self.predicate_expr.as_ref());
        plan.bind(
            predicate,
            self.only.as_deref(),
            &self.projection,
            self.pruning.statistics,
            &self.metrics,
        )
    }

    /// Starts the scan.
    pub fn batches(mut self) -> Result<ScanStream> {
        let schema = self.schema()?;
        if let Some(listed) = &self.listed {
            add(&self.metrics.files_pruned_partition, listed.pruned);
            add(
                &self.metrics.files_pruned_table_stats,
                listed.pruned_by_table_stats,
            );
        }
        let plan = self
            .dataset
            .take()
            .ok_or_else(|| Error::internal("no files opened"))?;
        let workers = self.workers(&plan);
        let pool = pools::Lease::take(workers)?;
        let mut files = self.bind(plan)?;
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
                memory_limit: self.memory_limit,
                range_rows: self.range_rows,
                index_dir: self.index_dir,
                broken_index: self.broken_index,
                verify_index: self.verify_index,
                done: AtomicUsize::new(0),
                cancelled,
                first_reads_kept: self.first_reads_kept,
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

/// Indexes in `schema` of the columns `names` (exact names first, then a unique
/// case-insensitive match).
fn project(schema: &SchemaRef, names: &[String]) -> Result<Vec<usize>> {
    names
        .iter()
        .map(|name| {
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
            idx.ok_or_else(|| {
                let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                Error::invalid(format!(
                    "unknown column '{name}' in select (columns: {})",
                    names.join(", ")
                ))
            })
        })
        .collect()
}
