//! The native half of tamis's Spark connector.
//!
//! The Java classes under `java/` (a DataSource V2 source, `format("tamis")`) call these JNI
//! entry points of `io.tamis.spark.Native`: the driver opens a dataset once, reads its schema
//! and plans input partitions from the footers; each executor task scans its row groups and
//! receives the batches through the Arrow C Data Interface (an `ArrowArrayStream` the Java
//! side allocates and this side fills), so no value is copied or converted on the way.
//!
//! Every entry point runs inside [`guarded`]: a tamis error becomes a Java exception naming
//! the file and column, and a Rust panic becomes an exception too; neither unwinds into the JVM.

pub mod aggregate;
pub mod plan;
pub mod types;

use std::alloc::{GlobalAlloc, Layout};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use arrow::array::{RecordBatch, RecordBatchReader};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::error::ArrowError;
use arrow::ffi::FFI_ArrowSchema;
use arrow::ffi_stream::FFI_ArrowArrayStream;
use jni::objects::{JClass, JString};
use jni::sys::{jboolean, jint, jlong, jstring, JNI_FALSE, JNI_TRUE};
use jni::JNIEnv;
use serde::{Deserialize, Serialize};
use tamis::expr::{Expr, KeyFilter};
use tamis::io::StorageOptions;
use tamis::table::{AsOf, TableFormat};
use tamis::{Canceller, Dataset, Error, ErrorKind, Scan, ScanMetrics, ScanStream};

/// Executor memory is the JVM's, but page buffers are large and short-lived: mimalloc reuses
/// them where glibc malloc unmaps and re-faults them (as in the Python extension). Live bytes
/// are counted so that a leak check can see native memory apart from the JVM's heap.
#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes the library holds now (allocated and not freed).
static LIVE: AtomicIsize = AtomicIsize::new(0);

/// mimalloc, counting live bytes (one relaxed atomic per allocation: pages, not values).
struct Counting;

// SAFETY: every call is forwarded to mimalloc unchanged; the counter has no effect on memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { mimalloc::MiMalloc.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(new_size as isize - layout.size() as isize, Relaxed);
        }
        p
    }
}

/// Bytes the native library holds now (a leak check: the JVM cannot see them).
#[no_mangle]
pub extern "system" fn Java_io_tamis_spark_Native_liveBytes(_env: JNIEnv, _class: JClass) -> jlong {
    LIVE.load(Relaxed) as jlong
}

/// What an entry point can fail with: a tamis error, or a Java exception already pending.
enum Failure {
    Tamis(Error),
    Java(jni::errors::Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Tamis(e)
    }
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Self {
        Failure::Java(e)
    }
}

type Outcome<T> = std::result::Result<T, Failure>;

/// Runs `body`, turning its error or panic into a pending Java exception and returning
/// `fallback` then (the JVM ignores the return value of a call that threw).
fn guarded<T>(env: &mut JNIEnv, fallback: T, body: impl FnOnce(&mut JNIEnv) -> Outcome<T>) -> T {
    let result = catch_unwind(AssertUnwindSafe(|| body(env)));
    let (class, message) = match result {
        Ok(Ok(value)) => return value,
        Ok(Err(Failure::Java(jni::errors::Error::JavaException))) => return fallback,
        Ok(Err(Failure::Java(e))) => (
            "io/tamis/spark/TamisException",
            format!("internal error: JNI: {e}"),
        ),
        Ok(Err(Failure::Tamis(e))) => (exception_class(e.kind), e.to_string()),
        Err(panic) => (
            "io/tamis/spark/TamisException",
            format!("internal error: tamis panicked: {}", panic_message(&*panic)),
        ),
    };
    if !env.exception_check().unwrap_or(false) {
        // If even this fails the JVM has an exception pending already.
        let _ = env.throw_new(class, message);
    }
    fallback
}

/// The Java exception class of a tamis error kind: a bad request is Java's
/// `IllegalArgumentException`, an unsupported feature `UnsupportedOperationException`, the
/// rest tamis's own (`TamisException`, a `RuntimeException`).
fn exception_class(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidArgument => "java/lang/IllegalArgumentException",
        ErrorKind::Unsupported => "java/lang/UnsupportedOperationException",
        _ => "io/tamis/spark/TamisException",
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

fn string(env: &mut JNIEnv, s: &JString) -> Outcome<String> {
    Ok(env.get_string(s)?.into())
}

/// `None` for a Java `null`.
fn optional_string(env: &mut JNIEnv, s: &JString) -> Outcome<Option<String>> {
    if s.is_null() {
        return Ok(None);
    }
    string(env, s).map(Some)
}

fn json<T: for<'de> Deserialize<'de>>(text: &str, what: &str) -> tamis::Result<T> {
    serde_json::from_str(text).map_err(|e| Error::invalid(format!("{what}: {e}")))
}

fn to_json<T: Serialize>(value: &T) -> tamis::Result<String> {
    serde_json::to_string(value).map_err(|e| Error::internal(format!("serializing JSON: {e}")))
}

fn storage(options: BTreeMap<String, String>) -> StorageOptions {
    StorageOptions(options)
}

/// A dataset opened for the driver, and the path it was opened from (errors name it).
struct Opened {
    dataset: Dataset,
    path: String,
}

/// The dataset behind a handle [`Java_io_tamis_spark_Native_openDataset`] returned.
///
/// # Safety
/// `handle` must come from `openDataset` and not be closed yet (the Java side closes it once,
/// through a `Cleaner`, when nothing refers to it any more).
unsafe fn opened<'a>(handle: jlong) -> tamis::Result<&'a Opened> {
    if handle == 0 {
        return Err(Error::internal("a closed tamis dataset was used"));
    }
    // SAFETY: the caller's contract: a live pointer from `Box::into_raw` in `openDataset`.
    Ok(unsafe { &*(handle as *const Opened) })
}

/// Opens a dataset (file, directory, glob, object-store URL or table), reading its footers
/// once. `storage`: a JSON object of object-store options; `table`: which version of a table
/// to read ([`TableChoice`]). Returns a handle for the calls below.
#[no_mangle]
pub extern "system" fn Java_io_tamis_spark_Native_openDataset(
    mut env: JNIEnv,
    _class: JClass,
    path: JString,
    storage_json: JString,
    table_json: JString,
) -> jlong {
    guarded(&mut env, 0, |env| {
        let path = string(env, &path)?;
        let options = storage(json(&string(env, &storage_json)?, "storage options")?);
        let choice: TableChoice = json(&string(env, &table_json)?, "table options")?;
        let format = (choice.format.as_deref().map(str::parse)).transpose()?;
        let version = (choice.version.as_deref())
            .map(|v| {
                v.parse::<u64>().map_err(|_| {
                    Error::invalid(format!("versionAsOf must be a version number, not '{v}'"))
                })
            })
            .transpose()?;
        let at = AsOf::given(version, choice.timestamp.as_deref())?;
        let dataset = Dataset::open_as_of(&path, format, at, &options, None)?;
        Ok(Box::into_raw(Box::new(Opened { dataset, path })) as jlong)
    })
}

/// The source's options `versionAsOf`, `timestampAsOf` and `tableFormat` (see Options.java).
#[derive(Deserialize, Default)]
struct TableChoice {
    version: Option<String>,
    timestamp: Option<String>,
    format: Option<String>,
}

/// A table's snapshot as a task opens it again: its location, format and version.
#[derive(Serialize, Deserialize, Clone, Debug)]
struct TableVersion {
    location: String,
    format: String,
    version: u64,
}

/// Frees a dataset handle.
#[no_mangle]
pub extern "system" fn Java_io_tamis_spark_Native_closeDataset(
    mut env: JNIEnv,
    _class: JClass,
    handle: jlong,
) {
    guarded(&mut env, (), |_| {
        if handle != 0 {
            // SAFETY: the handle came from `Box::into_raw` in `openDataset`, and the Java side
            // closes each handle once.
            drop(unsafe { Box::from_raw(handle as *mut Opened) });
        }
        Ok(())
    })
}

/// What the driver needs besides the schema.
#[derive(Serialize)]
struct Description {
    root: Option<String>,
    /// A table's version, which every task opens again.
    table: Option<TableVersion>,
    /// Partition columns and their Arrow types (`DataType`'s display text).
    partition_types: Vec<(String, String)>,
    /// Columns stored as INT96 in some file (Spark's timestamps with time zone).
    int96: Vec<String>,
    /// Timestamp columns finer than Spark's microseconds: tamis would compare nanoseconds the
    /// values handed to Spark no longer hold, so only their null tests are pushed.
    nanosecond: Vec<String>,
    /// Columns every file has (partition columns included): a filter on several columns is
    /// pushed only where none of them can be missing from a task's files.
    everywhere: Vec<String>,
    /// The Spark-facing type of each atomic column, for the tasks ([`ScanRequest::targets`]).
    targets: BTreeMap<String, String>,
}

/// Exports the dataset's Spark-facing schema (see [`types`]) into the `ArrowSchema` at
/// `schema_address` and returns the [`Description`] as JSON.
#[no_mangle]
pub extern "system" fn Java_io_tamis_spark_Native_describe(
    mut env: JNIEnv,
    _class: JClass,
    handle: jlong,
    schema_address: jlong,
) -> jstring {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: the Java side passes a live handle (see `opened`).
        let Opened { dataset, path } = unsafe { opened(handle) }?;
        let plan = dataset.plan();
        let int96 = plan.int96_columns();
        let spark = types::spark_schema(&plan.schema, &int96).map_err(|e| e.in_file(path))?;
        let exported = FFI_ArrowSchema::try_from(spark.as_ref())
            .map_err(|e| Error::internal(format!("exporting the schema: {e}")))?;
        let nanosecond = (plan.schema.fields().iter())
            .filter(|f| {
                matches!(
                    f.data_type(),
                    DataType::Timestamp(arrow::datatypes::TimeUnit::Nanosecond, _)
                )
            })
            .map(|f| f.name().clone())
            .collect();
        let mut everywhere: Vec<String> = (plan.schema.fields().iter())
            .map(|f| f.name().clone())
            .collect();
        let partitions: Vec<&String> = plan.partitions.fields.iter().map(|(n, _)| n).collect();
        let held: Vec<Vec<String>> = (0..plan.files.len())
            .map(|fi| plan.file_columns(fi))
            .collect();
        everywhere
            .retain(|name| partitions.contains(&name) || held.iter().all(|c| c.contains(name)));
        let description = Description {
            root: dataset.root(),
            table: dataset
                .table()
                .map(|(location, format, version)| TableVersion {
                    location: location.to_string(),
                    format: format.to_string(),
                    version,
                }),
            partition_types: (plan.partitions.fields.iter())
                .map(|(name, t)| (name.clone(), t.to_string()))
                .collect(),
            targets: (spark.fields().iter())
                .filter_map(|f| Some((f.name().clone(), types::type_text(f)?)))
                .collect(),
            int96,
            nanosecond,
            everywhere,
        };
        let text = env.new_string(to_json(&description)?)?;
        write_struct(schema_address, exported)?;
        Ok(text.into_raw())
    })
}

/// Moves `value` into the C struct at `address`, which the Java side allocated empty
/// (`ArrowSchema.allocateNew`, `ArrowArrayStream.allocateNew`) and owns.
fn write_struct<T>(address: jlong, value: T) -> tamis::Result<()> {
    if address == 0 {
        return Err(Error::internal("no C Data struct to export into"));
    }
    // SAFETY: the Java side allocated a zeroed struct of this C Data type at `address`; it has
    // no release callback yet, so overwriting it leaks nothing. Unaligned writes are allowed.
    unsafe { std::ptr::write_unaligned(address as *mut T, value) };
    Ok(())
}

/// Whether tamis takes `filter` (SQL) on this dataset: it names known columns with
/// comparable types and tamis evaluates it (an INT96 column, say, it refuses). Reads no data.
#[no_mangle]
pub extern "system" fn Java_io_tamis_spark_Native_binds(
    mut env: JNIEnv,
    _class: JClass,
    handle: jlong,
    filter: JString,
) -> jboolean {
    guarded(&mut env, JNI_FALSE, |env| {
        // SAFETY: the Java side passes a live handle (see `opened`).
        let dataset = &unsafe { opened(handle) }?.dataset;
        let sql = string(env, &filter)?;
        match dataset.scan().filter(&sql) {
            Ok(_) => Ok(JNI_TRUE),
            Err(e) if matches!(e.kind, ErrorKind::InvalidArgument | ErrorKind::Unsupported) => {
                Ok(JNI_FALSE)
            }
            Err(e) => Err(e.into()),
        }
    })
}

/// Plans input partitions: the row groups left after pruning under `filter` (SQL, or null),
/// split into runs of about `max_bytes` compressed bytes, at least `min_splits` of them where
/// there are enough row groups. Returns `{"splits": [`[`plan::Split`]`…], "row_groups": n,
/// "row_groups_left": n}` as JSON.
#[no_mangle]
pub extern "system" fn Java_io_tamis_spark_Native_plan(
    mut env: JNIEnv,
    _class: JClass,
    handle: jlong,
    filter: JString,
    max_bytes: jlong,
    min_splits: jint,
) -> jstring {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: the Java side passes a live handle (see `opened`).
        let dataset = &unsafe { opened(handle) }?.dataset;
        let filter = optional_string(env, &filter)?;
        let groups = plan::groups_left(dataset, filter.as_deref())?;
        let splits = plan::split(&groups, max_bytes.max(1) as u64, min_splits.max(1) as usize);
        let total: usize = (dataset.plan().files.iter())
            .map(|f| f.metadata.num_row_groups())
            .sum();
        let planned = serde_json::json!({
            "splits": splits,
            "row_groups": total,
            "row_groups_left": groups.len(),
        });
        Ok(env.new_string(planned.to_string())?.into_raw())
    })
}

/// Spark's estimate of a scan: `{"rows": n, "bytes": n}` of the row groups left under
/// `filter` (SQL, or null), bytes counting the uncompressed chunks of `columns` (a JSON list).
#[no_mangle]
pub extern "system" fn Java_io_tamis_spark_Native_estimate(
    mut env: JNIEnv,
    _class: JClass,
    handle: jlong,
    filter: JString,
    columns: JString,
) -> jstring {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: the Java side passes a live handle (see `opened`).
        let dataset = &unsafe { opened(handle) }?.dataset;
        let filter = optional_string(env, &filter)?;
        let columns: Vec<String> = json(&string(env, &columns)?, "columns")?;
        let (rows, bytes) = plan::estimate(dataset, filter.as_deref(), &columns)?;
        let text = serde_json::json!({ "rows": rows, "bytes": bytes }).to_string();
        Ok(env.new_string(text)?.into_raw())
    })
}

/// Aggregates answered from the footers (`request`: a JSON list of [`aggregate::Aggregate`]):
/// their values as a JSON list, or `null` when the footers cannot answer them exactly.
#[no_mangle]
pub extern "system" fn Java_io_tamis_spark_Native_aggregate(
    mut env: JNIEnv,
    _class: JClass,
    handle: jlong,
    request: JString,
) -> jstring {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: the Java side passes a live handle (see `opened`).
        let dataset = &unsafe { opened(handle) }?.dataset;
        let aggregates: Vec<aggregate::Aggregate> = json(&string(env, &request)?, "aggregates")?;
        let values = aggregate::from_footers(dataset, &aggregates)?;
        Ok(env.new_string(to_json(&values)?)?.into_raw())
    })
}

/// One executor task's scan.
#[derive(Deserialize)]
struct ScanRequest {
    /// The dataset's root, for hive partition values.
    root: Option<String>,
    /// The table whose files `parts` names, if the dataset is one.
    #[serde(default)]
    table: Option<TableVersion>,
    /// `(file location, file size, first row group, end row group)`.
    parts: Vec<(String, u64, usize, usize)>,
    #[serde(rename = "where")]
    filter: Option<String>,
    /// Join key lists too long for `IN` text, probed as Bloom filters (the filter holds their
    /// range for pruning).
    #[serde(default)]
    keys: Vec<KeyList>,
    /// Columns to return (at least one).
    columns: Vec<String>,
    #[serde(default)]
    int96: Vec<String>,
    /// The driver's Spark-facing type of each atomic column ([`types::type_text`]): a task's
    /// files may hold a narrower type (a column widened across files), which is converted to
    /// what the driver told Spark.
    #[serde(default)]
    targets: BTreeMap<String, String>,
    #[serde(default)]
    partition_types: Vec<(String, String)>,
    #[serde(default)]
    storage: BTreeMap<String, String>,
    threads: Option<usize>,
    batch_size: Option<usize>,
    /// At most this many rows (Spark's pushed LIMIT; Spark still limits the whole result).
    limit: Option<usize>,
    /// The executor's page cache, from the session's `spark.tamis.*` settings.
    #[serde(default)]
    cache: Option<CacheSettings>,
}

/// `spark.tamis.pageCache` (the memory tier's size; `0`: off), `spark.tamis.cacheDir` and
/// `spark.tamis.cacheDirBytes` (the disk tier), as the driver read them: applied to the
/// executor's process-wide cache before a task's scan, when they differ from what it has.
#[derive(Deserialize, Clone, Debug, PartialEq, Default)]
struct CacheSettings {
    page_cache: Option<String>,
    dir: Option<String>,
    dir_bytes: Option<String>,
}

impl CacheSettings {
    /// Sets the executor's cache as these settings say, each tier only when its settings
    /// differ from what it has (setting a tier empties it: the tasks of one scan, and the next
    /// scans, keep what the first filled). A setting not given leaves its tier as it is.
    fn apply(&self) -> tamis::Result<()> {
        static APPLIED: Mutex<CacheSettings> = Mutex::new(CacheSettings {
            page_cache: None,
            dir: None,
            dir_bytes: None,
        });
        let mut applied = APPLIED.lock().unwrap_or_else(|e| e.into_inner());
        let size = |key: &str, text: &str| -> tamis::Result<u64> {
            if text.trim() == "0" {
                return Ok(0);
            }
            tamis::budget::parse_size(text)
                .map_err(|e| Error::invalid(format!("spark.tamis.{key}: {e}")))
        };
        if self.page_cache.is_some() && self.page_cache != applied.page_cache {
            let text = self.page_cache.as_deref().unwrap_or_default();
            tamis::cache::set_page_cache_bytes(size("pageCache", text)?);
            applied.page_cache = self.page_cache.clone();
        }
        let disk = (self.dir.clone(), self.dir_bytes.clone());
        if self.dir.is_some() && disk != (applied.dir.clone(), applied.dir_bytes.clone()) {
            let dir_bytes = match &self.dir_bytes {
                Some(text) => Some(size("cacheDirBytes", text)?),
                None => None,
            };
            let dir = self.dir.as_deref().filter(|d| !d.trim().is_empty());
            tamis::cache::set_disk_cache(dir.map(std::path::Path::new), dir_bytes)?;
            (applied.dir, applied.dir_bytes) = disk;
        }
        Ok(())
    }
}

/// A runtime filter's keys on one column: integers (dates as days) or strings.
#[derive(Deserialize)]
struct KeyList {
    column: String,
    ints: Option<Vec<i64>>,
    strings: Option<Vec<String>>,
}

impl KeyList {
    /// `column IN (keys)` as a Bloom filter probe (a superset of the rows: the join above
    /// removes the rest), which switches itself off where it keeps most rows.
    fn expr(&self) -> Expr {
        let label = format!("runtime keys of {}", self.column);
        let filter = match (&self.ints, &self.strings) {
            (Some(ints), _) => KeyFilter::from_ints(ints, label),
            (None, Some(strings)) => {
                KeyFilter::from_bytes(strings.iter().map(|s| s.as_bytes()), label)
            }
            (None, None) => KeyFilter::from_ints(&[], label),
        };
        tamis::expr::col(&self.column).in_keys(Arc::new(filter))
    }
}

impl ScanRequest {
    fn open(self) -> tamis::Result<ScanStream> {
        if let Some(cache) = &self.cache {
            cache.apply()?;
        }
        let files: Vec<(String, Option<u64>)> = (self.parts.iter())
            .map(|(l, size, _, _)| (l.clone(), Some(*size)))
            .collect();
        let mut files_once = Vec::with_capacity(files.len());
        for f in files {
            if !files_once.contains(&f) {
                files_once.push(f);
            }
        }
        let options = storage(self.storage);
        let mut scan = match &self.table {
            // The table's files of this task: their deletes, column names and partition
            // values from the snapshot (the driver already pruned by its statistics).
            Some(t) => {
                let locations: Vec<String> = files_once.iter().map(|(l, _)| l.clone()).collect();
                let format: TableFormat = t.format.parse()?;
                Scan::open_table_files(&t.location, format, t.version, &locations, &options)?
            }
            None => {
                let listing = tamis::io::named(self.root.as_deref(), &files_once, &options)?;
                Scan::open_listing(listing)?
            }
        };
        if !self.partition_types.is_empty() && self.table.is_none() {
            scan = scan.partition_types_text(&self.partition_types)?;
        }
        let mut filter = self.filter.as_deref().map(tamis::expr::parse).transpose()?;
        for keys in &self.keys {
            let probe = keys.expr();
            filter = Some(match filter {
                Some(e) => e.and(probe),
                None => probe,
            });
        }
        if let Some(e) = filter {
            scan = scan.filter_expr(e)?;
        }
        scan = scan.select(&self.columns)?;
        if let Some(n) = self.threads {
            scan = scan.threads(n.max(1));
        }
        if let Some(n) = self.batch_size {
            scan = scan.batch_size(n.max(1));
        }
        let parts = (self.parts.iter())
            .map(|(file, _, first, end)| (file.clone(), *first..(*end).max(*first)))
            .collect();
        // Spark's decimals of up to 18 digits are 64-bit: built as such, never widened.
        (scan.row_groups(parts).limit(self.limit))
            .short_decimals(true)
            .string_dictionaries(true)
            .batches()
    }
}

/// Batches of a scan, converted to the types Spark reads ([`types::conform`]); a panic while
/// scanning is the stream's error (the C stream's callers are in the JVM: nothing may unwind
/// into them).
struct SparkBatches {
    stream: ScanStream,
    schema: SchemaRef,
    failed: bool,
    /// The scan's metrics after the last batch, read by the task for Spark's UI.
    metrics: Arc<Mutex<ScanMetrics>>,
}

impl Iterator for SparkBatches {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let schema = &self.schema;
        let stream = &mut self.stream;
        let metrics = &self.metrics;
        let item = catch_unwind(AssertUnwindSafe(|| {
            let item = stream
                .next()
                .map(|r| r.and_then(|batch| types::conform(&batch, schema)));
            if let Ok(mut m) = metrics.lock() {
                *m = stream.metrics();
            }
            item
        }));
        let item = match item {
            Ok(item) => item,
            Err(panic) => Some(Err(Error::internal(format!(
                "tamis panicked: {}",
                panic_message(&*panic)
            )))),
        };
        if matches!(item, Some(Err(_))) {
            self.failed = true;
        }
        item.map(|r| r.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for SparkBatches {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// What a task holds of its running scan besides the stream: the metrics for Spark's UI and a
/// way to stop the scan from another thread (Spark kills a task while its thread may be inside
/// a batch read).
struct TaskScan {
    metrics: Arc<Mutex<ScanMetrics>>,
    canceller: Canceller,
}

/// The [`TaskScan`] behind a handle from `scan`.
fn task_scan<'a>(handle: jlong) -> Outcome<&'a TaskScan> {
    if handle == 0 {
        return Err(Error::internal("a closed scan handle was used").into());
    }
    // SAFETY: a live handle from `scan`, freed only by `closeMetrics`, which the Java reader
    // calls once, under the same lock as its calls here.
    Ok(unsafe { &*(handle as *const TaskScan) })
}

/// Starts one task's scan (`request`: a [`ScanRequest`] as JSON) and exports its batches
/// into the `ArrowArrayStream` at `stream_address`. Releasing the stream (closing the Java
/// reader) stops the scan. Returns a handle to the scan's metrics ([`Java_io_tamis_spark_Native_metrics`])
/// and canceller ([`Java_io_tamis_spark_Native_cancel`]), which the caller frees with
/// `closeMetrics`.
#[no_mangle]
pub extern "system" fn Java_io_tamis_spark_Native_scan(
    mut env: JNIEnv,
    _class: JClass,
    request: JString,
    stream_address: jlong,
) -> jlong {
    guarded(&mut env, 0, |env| {
        let request: ScanRequest = json(&string(env, &request)?, "scan request")?;
        if request.columns.is_empty() {
            return Err(Error::invalid("a scan for Spark needs at least one column").into());
        }
        let int96 = request.int96.clone();
        let targets = request.targets.clone();
        let stream = request.open()?;
        let schema = types::with_targets(types::spark_schema(&stream.schema(), &int96)?, &targets)?;
        let metrics = Arc::new(Mutex::new(stream.metrics()));
        let canceller = stream.canceller();
        let batches = SparkBatches {
            stream,
            schema,
            failed: false,
            metrics: metrics.clone(),
        };
        write_struct(stream_address, FFI_ArrowArrayStream::new(Box::new(batches)))?;
        let task = TaskScan { metrics, canceller };
        Ok(Box::into_raw(Box::new(task)) as jlong)
    })
}

/// The counters of a task's scan so far, as JSON (the fields of [`ScanMetrics`]).
#[no_mangle]
pub extern "system" fn Java_io_tamis_spark_Native_metrics(
    mut env: JNIEnv,
    _class: JClass,
    handle: jlong,
) -> jstring {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let snapshot = (task_scan(handle)?.metrics)
            .lock()
            .map_err(|_| Error::internal("scan metrics poisoned"))?
            .clone();
        Ok(env.new_string(to_json(&snapshot)?)?.into_raw())
    })
}

/// Stops a task's scan from any thread: row groups in flight stop at their next read, and the
/// stream's next batch is a "cancelled" error.
#[no_mangle]
pub extern "system" fn Java_io_tamis_spark_Native_cancel(
    mut env: JNIEnv,
    _class: JClass,
    handle: jlong,
) {
    guarded(&mut env, (), |_| {
        task_scan(handle)?.canceller.cancel();
        Ok(())
    })
}

/// Frees a handle from `scan`.
#[no_mangle]
pub extern "system" fn Java_io_tamis_spark_Native_closeMetrics(
    mut env: JNIEnv,
    _class: JClass,
    handle: jlong,
) {
    guarded(&mut env, (), |_| {
        if handle != 0 {
            // SAFETY: the handle came from `Box::into_raw` in `scan`; the reader frees it once.
            drop(unsafe { Box::from_raw(handle as *mut TaskScan) });
        }
        Ok(())
    })
}
