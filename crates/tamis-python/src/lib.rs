//! `tamis._tamis`: the native half of the Python package (`python/tamis/` is the other half).
//!
//! Results leave through the Arrow C stream interface (a PyCapsule named `arrow_array_stream`),
//! so pyarrow, Polars, DuckDB and pandas take them without copies. Scans run with the GIL
//! released; the calling thread wakes every few milliseconds to check for Ctrl-C and cancels the
//! scan when it sees one.

use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;

use arrow::array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::ffi_stream::FFI_ArrowArrayStream;
use pyo3::exceptions::{
    PyFileNotFoundError, PyOSError, PyPermissionError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};
use tamis::io::StorageOptions;
use tamis::{Error, ErrorKind, Evaluation, FilterOrder, Scan, ScanMetrics, ScanStream};

mod foreign_table;

/// Page buffers are large and short-lived: mimalloc reuses them where glibc malloc unmaps and
/// re-faults them on every page.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How often a waiting scan call looks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(20);

/// Turns a tamis error into the Python exception of its category, with the CLI's message.
fn to_py_err(py: Python<'_>, e: Error) -> PyErr {
    let message = e.to_string();
    let class = match e.kind {
        ErrorKind::Io => {
            return match e.io_kind {
                Some(std::io::ErrorKind::NotFound) => PyFileNotFoundError::new_err(message),
                Some(std::io::ErrorKind::PermissionDenied) => PyPermissionError::new_err(message),
                _ => PyOSError::new_err(message),
            }
        }
        ErrorKind::InvalidArgument => "InvalidArgumentError",
        ErrorKind::Unsupported => "UnsupportedError",
        ErrorKind::CorruptFile => "CorruptFileError",
        ErrorKind::ResourceLimit => "ResourceLimitError",
        ErrorKind::Internal => "InternalError",
        ErrorKind::Cancelled => "CancelledError",
    };
    let exception = py
        .import("tamis.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1((message.clone(),)));
    match exception {
        Ok(value) => PyErr::from_value(value),
        Err(import_failed) => import_failed,
    }
}

/// The keyword arguments of one Python wrapper, handed over as one dict keyed by parameter
/// name (`ScanOptions`'s fields; the keywords of `optimize`, `index`, `verify_index`, `sql`
/// and `Dataset`).
///
/// The wrapper in `python/tamis/__init__.py` is the only place their names, order, defaults
/// and documentation are written; this side reads each key once. A key the wrapper did not
/// pass, or one nothing here reads, is a `TypeError` at once, so the two sides cannot drift
/// apart silently.
struct Keywords<'py> {
    dict: Bound<'py, PyDict>,
    read: Vec<&'static str>,
}

impl<'py> Keywords<'py> {
    fn new(dict: Bound<'py, PyDict>) -> Self {
        Keywords {
            dict,
            read: Vec::new(),
        }
    }

    /// The value of `name`, which the wrapper must pass.
    fn get<T: FromPyObjectOwned<'py>>(&mut self, name: &'static str) -> PyResult<T> {
        match self.item(name)? {
            Some(value) => extract(&value, name),
            None => Err(PyTypeError::new_err(format!(
                "tamis: the native side expects the keyword '{name}', which was not passed"
            ))),
        }
    }

    /// The value of `name`; `None` when it is absent or `None` (keys only some callers pass).
    fn optional<T: FromPyObjectOwned<'py>>(&mut self, name: &'static str) -> PyResult<Option<T>> {
        match self.item(name)? {
            Some(value) => extract(&value, name),
            None => Ok(None),
        }
    }

    fn item(&mut self, name: &'static str) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.read.push(name);
        self.dict.get_item(name)
    }

    /// Fails on a key nothing read.
    fn finish(self) -> PyResult<()> {
        for key in self.dict.keys() {
            let key: String = key.extract()?;
            if !self.read.contains(&key.as_str()) {
                return Err(PyTypeError::new_err(format!(
                    "tamis: the native side does not know the keyword '{key}'"
                )));
            }
        }
        Ok(())
    }
}

/// `value` as a `T`; on failure, as pyo3 reports a bad argument of a native function: the
/// conversion's error with a note naming the argument (Python 3.11+ shows notes).
fn extract<'py, T: FromPyObjectOwned<'py>>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<T> {
    value.extract::<T>().map_err(|e| {
        let e: PyErr = e.into();
        let note = format!("while processing '{name}'");
        let _ = e.value(value.py()).call_method1("add_note", (note,));
        e
    })
}

/// The options of one scan, as `tamis.ScanOptions` hands them over (see [`Keywords`]).
#[derive(Clone)]
struct Request {
    filter: Option<String>,
    columns: Option<Vec<String>>,
    threads: Option<usize>,
    limit: Option<usize>,
    batch_size: Option<usize>,
    /// `"auto"` or `"written"`.
    filter_order: Option<String>,
    /// Structures not to prune with: `statistics`, `bloom_filters`, `page_index`,
    /// `sidecar_index`, `sub_page_reads`.
    disable_pruning: Option<Vec<String>>,
    /// `"auto"`, `"selected"` or `"whole"`.
    evaluation: Option<String>,
    /// Bytes one row group's decoding may take.
    memory_limit: Option<usize>,
    /// Directory of sidecar indexes, when not beside the files.
    index_dir: Option<String>,
    /// `"fail"` or `"ignore"`: what a sidecar index that cannot be read does.
    broken_index: Option<String>,
    /// Check indexed column chunks against the sidecar's content hashes before using it.
    verify_index: bool,
    /// Object-store options (endpoint, region, credentials, …).
    storage_options: Option<HashMap<String, String>>,
    /// Only these row groups: `(file location, first, end)` (see `Scan::row_groups`).
    row_groups: Option<Vec<(String, usize, usize)>>,
    /// Partition column types, as Arrow's `DataType` display text (`Int32`, `Utf8`, …).
    partition_types: Option<Vec<(String, String)>>,
    /// The version of the table at the path to read (time travel): a Delta version, an
    /// Iceberg snapshot id.
    table_version: Option<u64>,
    /// The time to read the table at the path as of (time travel).
    table_timestamp: Option<String>,
    /// `"delta"` or `"iceberg"`: the path read as a table of this format.
    table_format: Option<String>,
}

impl<'py> FromPyObject<'_, 'py> for Request {
    type Error = PyErr;

    fn extract(options: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        let mut kw = Keywords::new(options.cast::<PyDict>()?.to_owned());
        let request = Request {
            filter: kw.get("where")?,
            columns: kw.get("columns")?,
            threads: kw.get("threads")?,
            limit: kw.get("limit")?,
            batch_size: kw.get("batch_size")?,
            filter_order: kw.get("filter_order")?,
            disable_pruning: kw.get("disable_pruning")?,
            evaluation: kw.get("evaluation")?,
            memory_limit: kw.get("memory_limit")?,
            index_dir: kw.get("index_dir")?,
            broken_index: kw.get("broken_index")?,
            verify_index: kw.get("verify_index")?,
            storage_options: kw.get("storage_options")?,
            table_version: kw.get("table_version")?,
            table_timestamp: kw.get("table_timestamp")?,
            table_format: kw.get("table_format")?,
            // Not `ScanOptions` fields: the Spark source adds them for its partitions.
            row_groups: kw.optional("row_groups")?,
            partition_types: kw.optional("partition_types")?,
        };
        kw.finish()?;
        Ok(request)
    }
}

/// [`tamis::Pruning`] with the named structures switched off.
fn pruning(disabled: &[String]) -> tamis::Result<tamis::Pruning> {
    let mut p = tamis::Pruning::default();
    for name in disabled {
        match name.as_str() {
            "statistics" => p.statistics = false,
            "bloom_filters" => p.bloom_filters = false,
            "page_index" => p.page_index = false,
            "sidecar_index" => p.sidecar_index = false,
            "sub_page_reads" => p.sub_page_reads = false,
            other => {
                return Err(Error::invalid(format!(
                    "disable_pruning: unknown structure '{other}' \
                     (statistics, bloom_filters, page_index, sidecar_index, sub_page_reads)"
                )))
            }
        }
    }
    Ok(p)
}

fn storage(options: &Option<HashMap<String, String>>) -> StorageOptions {
    options
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

impl Request {
    fn open(&self, path: &str) -> tamis::Result<ScanStream> {
        let options = storage(&self.storage_options);
        let at = tamis::table::AsOf::given(self.table_version, self.table_timestamp.as_deref())?;
        let format = (self.table_format.as_deref())
            .map(str::parse::<tamis::table::TableFormat>)
            .transpose()?;
        let scan = Scan::open_as_of(path, format, at, &options)?;
        self.configure_opened(scan)
    }

    /// Configures a scan of files opened before (a `Dataset`'s, a Spark part's).
    fn configure(&self, scan: Scan) -> tamis::Result<ScanStream> {
        if self.table_version.is_some()
            || self.table_timestamp.is_some()
            || self.table_format.is_some()
        {
            return Err(Error::invalid(
                "table_version, table_timestamp and table_format are for a table opened by its \
                 path (tamis.scan, tamis.explain, tamis.Dataset); a Dataset's scans read the \
                 version it was opened at",
            ));
        }
        self.configure_opened(scan)
    }

    fn configure_opened(&self, mut scan: Scan) -> tamis::Result<ScanStream> {
        if let Some(types) = &self.partition_types {
            scan = scan.partition_types_text(types)?;
        }
        if let Some(sql) = &self.filter {
            scan = scan.filter(sql)?;
        }
        if let Some(columns) = &self.columns {
            scan = scan.select(columns)?;
        }
        if let Some(n) = self.threads {
            if n == 0 {
                return Err(Error::invalid("threads must be at least 1"));
            }
            scan = scan.threads(n);
        }
        if let Some(n) = self.batch_size {
            if n == 0 {
                return Err(Error::invalid("batch_size must be at least 1"));
            }
            scan = scan.batch_size(n);
        }
        if let Some(order) = &self.filter_order {
            scan = scan.filter_order(order.parse::<FilterOrder>()?);
        }
        if let Some(disabled) = &self.disable_pruning {
            scan = scan.pruning(pruning(disabled)?);
        }
        if let Some(evaluation) = &self.evaluation {
            scan = scan.evaluation(evaluation.parse::<Evaluation>()?);
        }
        if let Some(bytes) = self.memory_limit {
            scan = scan.memory_limit(bytes);
        }
        if let Some(dir) = &self.index_dir {
            scan = scan.index_dir(dir);
        }
        if let Some(policy) = &self.broken_index {
            scan = scan.broken_index(policy.parse::<tamis::BrokenIndex>()?);
        }
        scan = scan.verify_index(self.verify_index);
        if let Some(parts) = &self.row_groups {
            let parts = parts
                .iter()
                .map(|(file, first, end)| (file.clone(), *first..(*end).max(*first)))
                .collect();
            scan = scan.row_groups(parts);
        }
        scan.limit(self.limit).batches()
    }
}

/// Runs a scan to the end on a helper thread, which keeps its batches (`keep`) or drops them,
/// while this thread waits without the GIL; returns the metrics and the batches. Ctrl-C cancels the scan and
/// raises `KeyboardInterrupt` here. The batches stay on the helper thread: handing each one
/// to this thread (a wake-up and the GIL per batch) cost 2–4 ms on a 2 M-row result, more
/// with 2 scan threads busy on 2 cores.
fn drive(
    py: Python<'_>,
    stream: ScanStream,
    keep: bool,
) -> PyResult<(ScanMetrics, Vec<RecordBatch>)> {
    let canceller = stream.canceller();
    let (tx, rx) = sync_channel::<tamis::Result<(ScanMetrics, Vec<RecordBatch>)>>(1);
    std::thread::Builder::new()
        .name("tamis-scan".to_string())
        .spawn(move || {
            let mut stream = stream;
            let (mut result, mut batches) = (Ok(()), Vec::new());
            for item in &mut stream {
                match item {
                    Ok(batch) if keep => batches.push(batch),
                    Ok(_) => {}
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
            let _ = tx.send(result.map(|()| (stream.metrics(), batches)));
        })
        .map_err(|e| PyOSError::new_err(format!("cannot start the scan thread: {e}")))?;
    let mut rx: Option<Receiver<_>> = Some(rx);
    loop {
        let waiting = rx.take().expect("receiver is put back after each wait");
        let (waiting, received) = py.detach(move || {
            let received = waiting.recv_timeout(SIGNAL_POLL);
            (waiting, received)
        });
        rx = Some(waiting);
        match received {
            Ok(Ok(done)) => return Ok(done),
            Ok(Err(e)) => return Err(to_py_err(py, e)),
            Err(RecvTimeoutError::Disconnected) => {
                return Err(to_py_err(py, Error::internal("the scan thread panicked")))
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Err(interrupt) = py.check_signals() {
            // The worker stops after the row groups already running; it is not waited for.
            canceller.cancel();
            return Err(interrupt);
        }
    }
}

/// A `ScanStream` as an Arrow `RecordBatchReader` (for the C stream export), pulled lazily.
///
/// pyarrow calls `next` without the GIL and Python runs no signal handler until it returns,
/// which for a selective filter can be the whole scan. So the stream runs on a helper thread,
/// one batch ahead, and `next` waits in [`SIGNAL_POLL`] slices, checking for Ctrl-C between
/// them (with the GIL, on the calling thread). On a signal the scan is cancelled, the Python
/// exception is kept in `interrupt` for the Python wrapper to raise (`ArrowStream.interrupt`),
/// and the stream ends with a cancelled error. Dropping the reader cancels the scan too.
struct ScanReader {
    rx: Receiver<tamis::Result<RecordBatch>>,
    canceller: tamis::Canceller,
    interrupt: std::sync::Arc<Mutex<Option<PyErr>>>,
    schema: SchemaRef,
    done: bool,
}

impl ScanReader {
    fn new(stream: ScanStream, interrupt: std::sync::Arc<Mutex<Option<PyErr>>>) -> PyResult<Self> {
        let schema = stream.schema();
        let canceller = stream.canceller();
        let (tx, rx) = sync_channel::<tamis::Result<RecordBatch>>(1);
        std::thread::Builder::new()
            .name("tamis-stream".to_string())
            .spawn(move || {
                for item in stream {
                    let failed = item.is_err();
                    if tx.send(item).is_err() || failed {
                        break;
                    }
                }
            })
            .map_err(|e| PyOSError::new_err(format!("cannot start the scan thread: {e}")))?;
        Ok(ScanReader {
            rx,
            canceller,
            interrupt,
            schema,
            done: false,
        })
    }
}

impl Drop for ScanReader {
    fn drop(&mut self) {
        self.canceller.cancel();
    }
}

impl Iterator for ScanReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            match self.rx.recv_timeout(SIGNAL_POLL) {
                Ok(item) => {
                    self.done = item.is_err();
                    return Some(item.map_err(|e| ArrowError::ExternalError(Box::new(e))));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.done = true;
                    return None;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            // Only the main thread runs Python's signal handlers; elsewhere this is a no-op.
            if let Err(interrupt) = Python::attach(|py| py.check_signals()) {
                self.canceller.cancel();
                if let Ok(mut slot) = self.interrupt.lock() {
                    *slot = Some(interrupt);
                }
                self.done = true;
                return Some(Err(ArrowError::ExternalError(Box::new(
                    tamis::io::cancelled(),
                ))));
            }
        }
    }
}

impl RecordBatchReader for ScanReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Record batches behind the Arrow PyCapsule stream interface; consumed once.
#[pyclass(module = "tamis._tamis", name = "ArrowStream")]
struct ArrowStream {
    reader: Mutex<Option<Box<dyn RecordBatchReader + Send>>>,
    /// The exception a signal handler raised while the stream was read (see [`ScanReader`]).
    interrupt: std::sync::Arc<Mutex<Option<PyErr>>>,
}

impl ArrowStream {
    fn new(reader: Box<dyn RecordBatchReader + Send>) -> Self {
        ArrowStream {
            reader: Mutex::new(Some(reader)),
            interrupt: Default::default(),
        }
    }

    /// A lazy stream over a scan that stops on Ctrl-C.
    fn scanning(stream: ScanStream) -> PyResult<Self> {
        let interrupt = std::sync::Arc::default();
        let reader = ScanReader::new(stream, std::sync::Arc::clone(&interrupt))?;
        Ok(ArrowStream {
            reader: Mutex::new(Some(Box::new(reader))),
            interrupt,
        })
    }
}

#[pymethods]
impl ArrowStream {
    /// Exports the stream (the Arrow PyCapsule interface). The requested schema is ignored:
    /// the stream already has the columns the scan asked for.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = self
            .reader
            .lock()
            .map_err(|_| PyValueError::new_err("the stream is poisoned"))?
            .take()
            .ok_or_else(|| PyValueError::new_err("this tamis stream was already consumed"))?;
        PyCapsule::new_with_value(py, FFI_ArrowArrayStream::new(reader), c"arrow_array_stream")
    }

    /// Raises the exception (usually `KeyboardInterrupt`) that stopped the stream, if one did.
    fn raise_interrupt(&self) -> PyResult<()> {
        match self.interrupt.lock().ok().and_then(|mut slot| slot.take()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Sets the process-wide page cache's budget in bytes (`0`: off); see `tamis::cache`.
#[pyfunction]
fn set_page_cache_bytes(bytes: u64) {
    tamis::cache::set_page_cache_bytes(bytes);
}

/// Has the memory tier keep pages on their first read (`true`) or their second (`false`); see
/// `tamis::cache::set_page_cache_keeps_first_reads`.
#[pyfunction]
fn set_page_cache_keeps_first_reads(keep: bool) {
    tamis::cache::set_page_cache_keeps_first_reads(keep);
}

/// Sets the page cache's disk tier: a cache directory and its budget (`None`: a quarter of the
/// free space), or off when `dir` is `None`; see `tamis::cache::set_disk_cache`.
#[pyfunction]
#[pyo3(signature = (dir, bytes=None))]
fn set_disk_cache(
    py: Python<'_>,
    dir: Option<std::path::PathBuf>,
    bytes: Option<u64>,
) -> PyResult<()> {
    tamis::cache::set_disk_cache(dir.as_deref(), bytes).map_err(|e| to_py_err(py, e))
}

/// Waits until the pages queued for the disk tier are written (at most `seconds`).
#[pyfunction]
fn flush_disk_cache(py: Python<'_>, seconds: f64) {
    py.detach(|| {
        let limit = std::time::Duration::try_from_secs_f64(seconds.max(0.0))
            .unwrap_or(std::time::Duration::MAX);
        tamis::cache::flush_disk_cache(limit)
    });
}

/// The page cache's budget, contents and counts, as JSON.
#[pyfunction]
fn page_cache_stats_json(py: Python<'_>) -> PyResult<String> {
    serde_json::to_string(&tamis::cache::page_cache_stats()).map_err(|e| {
        to_py_err(
            py,
            Error::internal(format!("cannot serialize the page cache's stats: {e}")),
        )
    })
}

/// Scans to the end and returns the batches as one stream (the Python side makes a Table).
#[pyfunction]
fn scan_all(py: Python<'_>, path: String, options: Request) -> PyResult<ArrowStream> {
    let stream = py
        .detach(|| options.open(&path))
        .map_err(|e| to_py_err(py, e))?;
    collect(py, stream)
}

/// Drives a scan to its end and returns its batches as one stream.
fn collect(py: Python<'_>, stream: ScanStream) -> PyResult<ArrowStream> {
    let schema = stream.schema();
    let (_, batches) = drive(py, stream, true)?;
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    Ok(ArrowStream::new(Box::new(reader)))
}

/// Starts a scan and returns it as a lazy stream; batches are produced as the consumer pulls.
#[pyfunction]
fn scan_stream(py: Python<'_>, path: String, options: Request) -> PyResult<ArrowStream> {
    let stream = py
        .detach(|| options.open(&path))
        .map_err(|e| to_py_err(py, e))?;
    ArrowStream::scanning(stream)
}

/// Runs the scan, discards the rows and returns the metrics as JSON: the same object as
/// `tamis explain --json`.
#[pyfunction]
fn explain_json(py: Python<'_>, path: String, options: Request) -> PyResult<String> {
    let stream = py
        .detach(|| options.open(&path))
        .map_err(|e| to_py_err(py, e))?;
    metrics_json(py, stream, &options)
}

/// Drives a scan to its end, discarding the rows; its metrics as `tamis explain --json` prints.
fn metrics_json(py: Python<'_>, stream: ScanStream, options: &Request) -> PyResult<String> {
    let (metrics, _) = drive(py, stream, false)?;
    let mut value = serde_json::to_value(&metrics).map_err(|e| {
        to_py_err(
            py,
            Error::internal(format!("cannot serialize metrics: {e}")),
        )
    })?;
    if let Some(object) = value.as_object_mut() {
        object.insert("predicate".to_string(), options.filter.clone().into());
    }
    Ok(value.to_string())
}

/// Scans some files of a dataset planned elsewhere (a Spark driver): `files` are
/// `(location, size)` pairs, `root` the dataset's root (for hive partition values), `table` a
/// table's `(location, format, version)` when the files are its (their deletes, column names
/// and partition values come from that snapshot). Only these files' footers are read.
#[pyfunction]
#[pyo3(signature = (root, files, options, table=None))]
fn scan_files(
    py: Python<'_>,
    root: Option<String>,
    files: Vec<(String, Option<u64>)>,
    options: Request,
    table: Option<(String, String, u64)>,
) -> PyResult<ArrowStream> {
    let stream = py
        .detach(|| {
            let storage = storage(&options.storage_options);
            let scan = match &table {
                Some((location, format, version)) => {
                    let locations: Vec<String> = files.iter().map(|(l, _)| l.clone()).collect();
                    let format = format.parse()?;
                    Scan::open_table_files(location, format, *version, &locations, &storage)?
                }
                None => Scan::open_listing(tamis::io::named(root.as_deref(), &files, &storage)?)?,
            };
            options.configure(scan)
        })
        .map_err(|e| to_py_err(py, e))?;
    ArrowStream::scanning(stream)
}

/// `tamis.Dataset`: files opened once, their metadata cached across scans.
#[pyclass(module = "tamis._tamis", name = "Dataset", frozen)]
struct PyDataset {
    inner: std::sync::Arc<tamis::Dataset>,
    /// What it was opened from, to name it in DataFusion plans.
    path: String,
}

#[pymethods]
impl PyDataset {
    /// `options`: `tamis.Dataset`'s keywords (see [`Keywords`]).
    #[new]
    fn new(py: Python<'_>, path: String, options: Bound<'_, PyDict>) -> PyResult<Self> {
        let mut kw = Keywords::new(options);
        let storage_options: Option<HashMap<String, String>> = kw.get("storage_options")?;
        let metadata_budget: Option<u64> = kw.get("metadata_budget")?;
        let version: Option<u64> = kw.get("table_version")?;
        let timestamp: Option<String> = kw.get("table_timestamp")?;
        let format: Option<String> = kw.get("table_format")?;
        kw.finish()?;
        let options = storage(&storage_options);
        let inner = py
            .detach(|| {
                let at = tamis::table::AsOf::given(version, timestamp.as_deref())?;
                let format = format.as_deref().map(str::parse).transpose()?;
                tamis::Dataset::open_as_of(&path, format, at, &options, metadata_budget)
            })
            .map_err(|e| to_py_err(py, e))?;
        Ok(PyDataset {
            inner: std::sync::Arc::new(inner),
            path,
        })
    }

    /// This dataset as a DataFusion table in a PyCapsule (DataFusion's foreign table
    /// protocol); `session` is what the `datafusion` package passes to
    /// `__datafusion_table_provider__`.
    fn datafusion_table_provider<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
        runtime_filters: bool,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        foreign_table::capsule(py, &self.inner, &self.path, session, runtime_filters)
    }

    fn files(&self) -> Vec<String> {
        self.inner.files()
    }

    /// What a planner splitting the dataset needs, from the footers already read: the root,
    /// the partition columns with their types, per file its location, size, top-level
    /// column names, and per row group its rows and compressed bytes; and the top-level
    /// columns stored as INT96 (Spark's timestamps) in any file.
    #[allow(clippy::type_complexity)]
    fn layout(
        &self,
    ) -> PyResult<(
        Option<String>,
        Vec<(String, String)>,
        Vec<(String, u64, Vec<String>, Vec<(i64, i64)>)>,
        Vec<String>,
    )> {
        let plan = self.inner.plan();
        let partitions = (plan.partitions.fields.iter())
            .map(|(name, t)| (name.clone(), t.to_string()))
            .collect();
        let files = (plan.files.iter().enumerate())
            .map(|(fi, f)| {
                let columns = plan.file_columns(fi);
                let groups = (f.metadata.row_groups().iter())
                    .map(|g| (g.num_rows(), g.compressed_size()))
                    .collect();
                (f.location.clone(), f.len, columns, groups)
            })
            .collect();
        Ok((self.inner.root(), partitions, files, plan.int96_columns()))
    }

    /// A table's `(location, format, version)`: what a worker opens again to scan some of its
    /// files (see `scan_files`); `None` for files.
    fn table(&self) -> Option<(String, String, u64)> {
        (self.inner.table())
            .map(|(location, format, version)| (location.to_string(), format.to_string(), version))
    }

    /// The row groups a scan with this filter would read after pruning by partition values
    /// and footer statistics: `(file location, row-group indexes)` per file left.
    #[pyo3(signature = (filter=None))]
    fn row_groups_left(
        &self,
        py: Python<'_>,
        filter: Option<String>,
    ) -> PyResult<Vec<(String, Vec<usize>)>> {
        py.detach(|| {
            let mut scan = self.inner.scan();
            if let Some(sql) = &filter {
                scan = scan.filter(sql)?;
            }
            scan.row_groups_left()
        })
        .map_err(|e| to_py_err(py, e))
    }

    fn scan_all(&self, py: Python<'_>, options: Request) -> PyResult<ArrowStream> {
        let stream = py
            .detach(|| options.configure(self.inner.scan()))
            .map_err(|e| to_py_err(py, e))?;
        collect(py, stream)
    }

    fn scan_stream(&self, py: Python<'_>, options: Request) -> PyResult<ArrowStream> {
        let stream = py
            .detach(|| options.configure(self.inner.scan()))
            .map_err(|e| to_py_err(py, e))?;
        ArrowStream::scanning(stream)
    }

    fn explain_json(&self, py: Python<'_>, options: Request) -> PyResult<String> {
        let stream = py
            .detach(|| options.configure(self.inner.scan()))
            .map_err(|e| to_py_err(py, e))?;
        metrics_json(py, stream, &options)
    }
}

/// Runs `tamis::optimize::optimize` without the GIL; returns the report as JSON. `options`
/// holds `tamis.optimize`'s keywords (see [`Keywords`]).
#[pyfunction]
fn optimize_json(
    py: Python<'_>,
    inputs: Vec<String>,
    output: String,
    options: Bound<'_, PyDict>,
) -> PyResult<String> {
    let mut kw = Keywords::new(options);
    let sort_by: Option<Vec<String>> = kw.get("sort_by")?;
    let bloom_filters: Option<Vec<String>> = kw.get("bloom_filters")?;
    let page_rows: Option<usize> = kw.get("page_rows")?;
    let page_bytes: Option<usize> = kw.get("page_bytes")?;
    let row_group_rows: Option<usize> = kw.get("row_group_rows")?;
    let compression: Option<String> = kw.get("compression")?;
    let dictionary: bool = kw.get("dictionary")?;
    let memory_limit: Option<usize> = kw.get("memory_limit")?;
    let temp_dir: Option<String> = kw.get("temp_dir")?;
    let dictionary_page_bytes: Option<usize> = kw.get("dictionary_page_bytes")?;
    kw.finish()?;
    use tamis::optimize::{self, BloomRequest, OptimizeOptions};
    let run = || -> tamis::Result<String> {
        let sort_by = sort_by.unwrap_or_default();
        // A sorted rewrite is laid out for lookups on its key unless told otherwise.
        let d = if sort_by.is_empty() {
            OptimizeOptions::default()
        } else {
            OptimizeOptions::sorted(sort_by.clone())
        };
        let options = OptimizeOptions {
            sort_by,
            bloom_filters: bloom_filters
                .unwrap_or_default()
                .iter()
                .map(|b| BloomRequest::parse(b))
                .collect::<tamis::Result<_>>()?,
            page_rows: page_rows.unwrap_or(d.page_rows),
            page_bytes: page_bytes.unwrap_or(d.page_bytes),
            dictionary_page_bytes: dictionary_page_bytes.unwrap_or(d.dictionary_page_bytes),
            row_group_rows: row_group_rows.unwrap_or(d.row_group_rows),
            compression: compression
                .as_deref()
                .map(optimize::parse_compression)
                .transpose()?,
            dictionary,
            memory_limit: memory_limit.unwrap_or(d.memory_limit),
            temp_dir: temp_dir.map(Into::into),
        };
        let inputs: Vec<std::path::PathBuf> = inputs.iter().map(Into::into).collect();
        let report = optimize::optimize(
            &inputs,
            std::path::Path::new(&output),
            &options,
            &mut |_, _, _| {},
        )?;
        serde_json::to_string(&report)
            .map_err(|e| Error::internal(format!("cannot serialize the report: {e}")))
    };
    py.detach(run).map_err(|e| to_py_err(py, e))
}

/// Runs `tamis::index::index_files` without the GIL; returns the reports as JSON. `options`
/// holds `tamis.index`'s keywords (see [`Keywords`]).
#[pyfunction]
fn index_json(
    py: Python<'_>,
    path: String,
    columns: Vec<String>,
    options: Bound<'_, PyDict>,
) -> PyResult<String> {
    let mut kw = Keywords::new(options);
    let fpp: f64 = kw.get("fpp")?;
    let output: Option<String> = kw.get("output")?;
    let storage_options: Option<HashMap<String, String>> = kw.get("storage_options")?;
    let kind: String = kw.get("kind")?;
    kw.finish()?;
    let options = storage(&storage_options);
    let run = || -> tamis::Result<String> {
        let out = output.as_deref().map(std::path::Path::new);
        let index = tamis::index::IndexOptions {
            kind: kind.parse()?,
            fpp,
        };
        let reports = tamis::index::index_files(&path, &options, &columns, index, out)?;
        serde_json::to_string(&reports)
            .map_err(|e| Error::internal(format!("cannot serialize the report: {e}")))
    };
    py.detach(run).map_err(|e| to_py_err(py, e))
}

/// Runs `tamis::index::verify_files` without the GIL; returns the reports as JSON. `options`
/// holds `tamis.verify_index`'s keywords (see [`Keywords`]).
#[pyfunction]
fn verify_index_json(py: Python<'_>, path: String, options: Bound<'_, PyDict>) -> PyResult<String> {
    let mut kw = Keywords::new(options);
    let output: Option<String> = kw.get("output")?;
    let storage_options: Option<HashMap<String, String>> = kw.get("storage_options")?;
    kw.finish()?;
    let options = storage(&storage_options);
    let run = || -> tamis::Result<String> {
        let out = output.as_deref().map(std::path::Path::new);
        let reports = tamis::index::verify_files(&path, &options, out)?;
        serde_json::to_string(&reports)
            .map_err(|e| Error::internal(format!("cannot serialize the report: {e}")))
    };
    py.detach(run).map_err(|e| to_py_err(py, e))
}

/// Runs a SQL query over named tables (DataFusion on tamis scans) and returns the result as one
/// stream; statements other than queries only with `allow_statements`. `options` holds
/// `tamis.sql`'s keywords (see [`Keywords`]). Errors: `tamis.errors.SqlError` with
/// DataFusion's message on one line; a tamis error (missing file, corrupt file…) as its own
/// class.
#[pyfunction]
fn sql(
    py: Python<'_>,
    query: String,
    tables: Vec<(String, String)>,
    options: Bound<'_, PyDict>,
) -> PyResult<ArrowStream> {
    let mut kw = Keywords::new(options);
    let storage_options: Option<HashMap<String, String>> = kw.get("storage_options")?;
    let threads: Option<usize> = kw.get("threads")?;
    let runtime_filters: bool = kw.get("runtime_filters")?;
    let allow_statements: bool = kw.get("allow_statements")?;
    kw.finish()?;
    let options = storage(&storage_options);
    let mut run = tamis_datafusion::sql::RunOptions {
        runtime_filters,
        allow_statements,
        ..Default::default()
    };
    if let Some(threads) = threads {
        run.threads = threads;
    }
    let result = py.detach(|| tamis_datafusion::sql::run(&query, &tables, &options, &run));
    match result {
        Ok((schema, batches)) => {
            let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
            Ok(ArrowStream::new(Box::new(reader)))
        }
        Err(message) => {
            let exception = py
                .import("tamis.errors")
                .and_then(|m| m.getattr("SqlError"))
                .and_then(|c| c.call1((message,)));
            Err(match exception {
                Ok(value) => PyErr::from_value(value),
                Err(import_failed) => import_failed,
            })
        }
    }
}

#[pymodule]
fn _tamis(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DATAFUSION_FFI_MAJOR", foreign_table::ffi_major())?;
    m.add_class::<ArrowStream>()?;
    m.add_class::<PyDataset>()?;
    m.add_function(wrap_pyfunction!(set_page_cache_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(set_page_cache_keeps_first_reads, m)?)?;
    m.add_function(wrap_pyfunction!(page_cache_stats_json, m)?)?;
    m.add_function(wrap_pyfunction!(set_disk_cache, m)?)?;
    m.add_function(wrap_pyfunction!(flush_disk_cache, m)?)?;
    m.add_function(wrap_pyfunction!(scan_all, m)?)?;
    m.add_function(wrap_pyfunction!(scan_stream, m)?)?;
    m.add_function(wrap_pyfunction!(scan_files, m)?)?;
    m.add_function(wrap_pyfunction!(explain_json, m)?)?;
    m.add_function(wrap_pyfunction!(optimize_json, m)?)?;
    m.add_function(wrap_pyfunction!(index_json, m)?)?;
    m.add_function(wrap_pyfunction!(verify_index_json, m)?)?;
    m.add_function(wrap_pyfunction!(sql, m)?)?;
    Ok(())
}
