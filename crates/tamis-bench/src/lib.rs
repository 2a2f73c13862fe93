//! The parquet crate's own late-materializing reader, driven the way DataFusion drives it, as a
//! benchmark peer for tamis.
//!
//! `ParquetRecordBatchReader` with a `RowFilter` (one `ArrowPredicateFn` per top-level `AND`
//! conjunct, each decoding only its own columns) and the page index loaded is the fairest Rust
//! baseline for a filtered Parquet scan: it is what the upstream crate offers for pushing
//! predicates into the decoder and skipping pages of the later columns, without an SQL engine's
//! planning overhead on top. [`scan`] is that reader; the `rowfilter-scan` binary exposes it to
//! the Python benchmark harness (`--serve`, JSON lines) and to humans.
//!
//! Nothing beyond the RowFilter and the page index is done on purpose: no row-group statistics
//! pruning and no metadata caching across scans, so the numbers measure exactly that reader.

pub mod predicate;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use parquet::arrow::arrow_reader::{
    ArrowPredicate, ArrowPredicateFn, ArrowReaderMetadata, ArrowReaderOptions,
    ParquetRecordBatchReaderBuilder, RowFilter,
};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::PageIndexPolicy;
use parquet::schema::types::SchemaDescriptor;
use serde::Deserialize;
use serde_json::json;

use crate::predicate::{compile_where, resolve_column, Conjunct};

/// Any error, as text for the `{"error": …}` response.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The reader's own default (1024 rows), not DataFusion's 8192: measured on TPC-H SF1 Q6 it
/// made this reader ~1.8x faster, and cost under 10% on unselective scans, so it is the fairer
/// default for a baseline. `--batch-size` / `"batch_size"` override it.
pub const DEFAULT_BATCH_SIZE: usize = parquet::arrow::arrow_reader::DEFAULT_BATCH_SIZE;

/// One scan to run.
#[derive(Debug, Clone)]
pub struct ScanRequest {
    pub file: PathBuf,
    /// SQL boolean expression; `None` or blank = no filter.
    pub where_sql: Option<String>,
    /// Output columns in output order; `None` = all columns in file order.
    pub columns: Option<Vec<String>>,
    pub threads: usize,
    pub batch_size: usize,
    /// Keep the result batches (for `dump`); otherwise they are dropped as they arrive.
    pub keep_batches: bool,
}

impl ScanRequest {
    pub fn new(file: impl Into<PathBuf>) -> Self {
        Self {
            file: file.into(),
            where_sql: None,
            columns: None,
            threads: 1,
            batch_size: DEFAULT_BATCH_SIZE,
            keep_batches: false,
        }
    }
}

/// What a scan produced.
#[derive(Debug)]
pub struct ScanOutput {
    pub rows: u64,
    /// Whole scan: opening the file, footer + page index, predicate compilation, reading.
    pub elapsed: Duration,
    /// Delta of `read_bytes` in `/proc/self/io` (storage reads; 0 with a warm page cache).
    pub read_bytes: Option<u64>,
    /// Schema of the output (requested columns, requested order).
    pub schema: SchemaRef,
    /// Result batches in file order, when `keep_batches` was set.
    pub batches: Option<Vec<RecordBatch>>,
}

/// `read_bytes` of this process (all threads, including finished ones) from `/proc/self/io`.
pub fn proc_read_bytes() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|line| line.strip_prefix("read_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Splits `0..n` into at most `parts` contiguous, non-empty chunks of near-equal size.
fn split_row_groups(n: usize, parts: usize) -> Vec<Vec<usize>> {
    let parts = parts.clamp(1, n.max(1));
    let (base, extra) = (n / parts, n % parts);
    let mut start = 0;
    (0..parts)
        .map(|i| {
            let len = base + usize::from(i < extra);
            let chunk = (start..start + len).collect();
            start += len;
            chunk
        })
        .filter(|c: &Vec<usize>| !c.is_empty())
        .collect()
}

/// Everything a reader thread needs, shared by reference.
struct ReadPlan<'a> {
    parquet_schema: &'a SchemaDescriptor,
    conjuncts: &'a [Conjunct],
    output_mask: ProjectionMask,
    /// Reorders the file-ordered output batch into the requested order; `None` = identity.
    reorder: Option<Vec<usize>>,
    batch_size: usize,
    keep_batches: bool,
}

impl ReadPlan<'_> {
    /// Reads `row_groups` (all when `None`) of `file` with a fresh RowFilter.
    fn read(
        &self,
        file: File,
        metadata: ArrowReaderMetadata,
        row_groups: Option<Vec<usize>>,
    ) -> Result<(u64, Vec<RecordBatch>), BoxError> {
        let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata)
            .with_batch_size(self.batch_size)
            .with_projection(self.output_mask.clone());
        if let Some(row_groups) = row_groups {
            builder = builder.with_row_groups(row_groups);
        }
        if !self.conjuncts.is_empty() {
            let predicates = self
                .conjuncts
                .iter()
                .map(|c| {
                    let pred = c.pred.clone();
                    let mask = ProjectionMask::roots(self.parquet_schema, c.roots.iter().copied());
                    Box::new(ArrowPredicateFn::new(mask, move |batch: RecordBatch| {
                        pred.eval(&batch)
                    })) as Box<dyn ArrowPredicate>
                })
                .collect();
            builder = builder.with_row_filter(RowFilter::new(predicates));
        }
        let mut rows = 0u64;
        let mut batches = Vec::new();
        for batch in builder.build()? {
            let mut batch = batch?;
            rows += batch.num_rows() as u64;
            if let Some(order) = &self.reorder {
                batch = batch.project(order)?;
            }
            if self.keep_batches {
                batches.push(batch);
            }
        }
        Ok((rows, batches))
    }
}

/// Runs one scan: opens the file fresh, loads footer and page index, and reads it through the
/// RowFilter, on `threads` threads over contiguous row-group chunks.
pub fn scan(req: &ScanRequest) -> Result<ScanOutput, BoxError> {
    if req.threads == 0 {
        return Err("threads must be at least 1".into());
    }
    if req.batch_size == 0 {
        return Err("batch_size must be at least 1".into());
    }
    let io_before = proc_read_bytes();
    let start = Instant::now();

    let file = open(&req.file)?;
    let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
    let metadata = ArrowReaderMetadata::load(&file, options).map_err(|e| {
        format!(
            "cannot read parquet metadata of {}: {e}",
            req.file.display()
        )
    })?;
    let schema = metadata.schema().clone();
    let parquet_schema = metadata.metadata().file_metadata().schema_descr_ptr();

    let conjuncts = match req.where_sql.as_deref().map(str::trim) {
        Some(sql) if !sql.is_empty() => compile_where(sql, &schema)?,
        _ => Vec::new(),
    };

    let (output_mask, reorder, output_schema) = match &req.columns {
        None => (ProjectionMask::all(), None, schema.clone()),
        Some(names) => {
            let indices = names
                .iter()
                .map(|name| resolve_column(&schema, name, false))
                .collect::<Result<Vec<_>, _>>()?;
            let mut roots = indices.clone();
            roots.sort_unstable();
            roots.dedup();
            // The reader yields the projected columns in file order.
            let order: Vec<usize> = indices
                .iter()
                .map(|i| roots.partition_point(|r| r < i))
                .collect();
            let identity =
                order.iter().enumerate().all(|(i, &p)| i == p) && order.len() == roots.len();
            (
                ProjectionMask::roots(&parquet_schema, roots),
                (!identity).then_some(order),
                Arc::new(schema.project(&indices)?),
            )
        }
    };

    let plan = ReadPlan {
        parquet_schema: &parquet_schema,
        conjuncts: &conjuncts,
        output_mask,
        reorder,
        batch_size: req.batch_size,
        keep_batches: req.keep_batches,
    };

    let (rows, batches) = if req.threads == 1 {
        plan.read(file, metadata, None)?
    } else {
        let chunks = split_row_groups(metadata.metadata().num_row_groups(), req.threads);
        // One `File` per thread: `File`'s ChunkReader seeks a `try_clone`d handle, which shares
        // the file offset, so threads must not share a descriptor.
        let results: Vec<Result<(u64, Vec<RecordBatch>), BoxError>> = std::thread::scope(|s| {
            let handles: Vec<_> = chunks
                .into_iter()
                .map(|chunk| {
                    let (plan, metadata) = (&plan, metadata.clone());
                    s.spawn(move || plan.read(open(&req.file)?, metadata, Some(chunk)))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("reader thread panicked".into()))
                })
                .collect()
        });
        let mut rows = 0;
        let mut batches = Vec::new();
        for result in results {
            let (r, b) = result?;
            rows += r;
            batches.extend(b);
        }
        (rows, batches)
    };

    let elapsed = start.elapsed();
    let read_bytes = match (io_before, proc_read_bytes()) {
        (Some(before), Some(after)) => Some(after.saturating_sub(before)),
        _ => None,
    };
    Ok(ScanOutput {
        rows,
        elapsed,
        read_bytes,
        schema: output_schema,
        batches: req.keep_batches.then_some(batches),
    })
}

fn open(path: &Path) -> Result<File, BoxError> {
    File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()).into())
}

/// Writes `batches` as an Arrow IPC file with `schema` (the batches are re-labelled with it, so
/// reader-side schema metadata differences cannot make the writer reject them).
pub fn write_ipc(path: &Path, schema: &SchemaRef, batches: &[RecordBatch]) -> Result<(), BoxError> {
    let file = File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let mut writer =
        arrow::ipc::writer::FileWriter::try_new(std::io::BufWriter::new(file), schema)?;
    for batch in batches {
        writer.write(&RecordBatch::try_new(
            schema.clone(),
            batch.columns().to_vec(),
        )?)?;
    }
    writer.finish()?;
    Ok(())
}

/// One `--serve` request line.
#[derive(Debug, Deserialize)]
struct Request {
    file: PathBuf,
    #[serde(rename = "where", default)]
    where_sql: Option<String>,
    #[serde(default)]
    columns: Option<Vec<String>>,
    #[serde(default)]
    threads: Option<usize>,
    /// Not part of the harness protocol; lets a human try other batch sizes.
    #[serde(default)]
    batch_size: Option<usize>,
    #[serde(default)]
    dump: Option<PathBuf>,
    /// Hold every result batch until the scan ends, as the other engines of the harness do
    /// when they return a table (without it, each batch is dropped once counted).
    #[serde(default)]
    keep: bool,
    /// Measure the floor of `columns` (see [`floor`]) instead of scanning.
    #[serde(default)]
    floor: bool,
}

/// What [`floor`] read.
#[derive(Debug)]
pub struct FloorOutput {
    pub elapsed: Duration,
    pub pages: u64,
    /// Decompressed bytes of the pages (dictionary pages included).
    pub bytes: u64,
}

/// The physical floor of a scan that does not skip pages: reads and decompresses every page of
/// the named columns (top-level names: all their leaves) in every row group, decoding nothing,
/// on one thread. A scan of these columns cannot be faster without skipping pages.
pub fn floor(file: &Path, columns: &[String]) -> Result<FloorOutput, BoxError> {
    use parquet::file::reader::{FileReader, SerializedFileReader};

    let start = Instant::now();
    let reader = SerializedFileReader::new(open(file)?)?;
    let schema = reader.metadata().file_metadata().schema_descr_ptr();
    let leaves: Vec<usize> = (0..schema.num_columns())
        .filter(|&i| {
            let root = schema.get_column_root(i).name();
            columns.iter().any(|c| c == root)
        })
        .collect();
    if leaves.len() < columns.len() {
        return Err(format!("floor: not every column of {columns:?} is in the file").into());
    }
    let (mut pages, mut bytes) = (0u64, 0u64);
    for rg in 0..reader.num_row_groups() {
        let row_group = reader.get_row_group(rg)?;
        for &leaf in &leaves {
            let mut page_reader = row_group.get_column_page_reader(leaf)?;
            while let Some(page) = page_reader.get_next_page()? {
                pages += 1;
                bytes += page.buffer().len() as u64;
            }
        }
    }
    Ok(FloorOutput {
        elapsed: start.elapsed(),
        pages,
        bytes,
    })
}

fn respond(line: &str) -> Result<serde_json::Value, BoxError> {
    let request: Request =
        serde_json::from_str(line).map_err(|e| format!("invalid request: {e}"))?;
    if request.floor {
        let columns = request.columns.unwrap_or_default();
        let output = floor(&request.file, &columns)?;
        return Ok(json!({
            "rows": 0,
            "ns": u64::try_from(output.elapsed.as_nanos()).unwrap_or(u64::MAX),
            "read_bytes": null,
            "pages": output.pages,
            "bytes": output.bytes,
        }));
    }
    let scan_request = ScanRequest {
        file: request.file,
        where_sql: request.where_sql,
        columns: request.columns,
        threads: request.threads.unwrap_or(1),
        batch_size: request.batch_size.unwrap_or(DEFAULT_BATCH_SIZE),
        keep_batches: request.keep || request.dump.is_some(),
    };
    let output = scan(&scan_request)?;
    if let (Some(path), Some(batches)) = (&request.dump, &output.batches) {
        write_ipc(path, &output.schema, batches)?;
    }
    Ok(json!({
        "rows": output.rows,
        "ns": u64::try_from(output.elapsed.as_nanos()).unwrap_or(u64::MAX),
        "read_bytes": output.read_bytes,
    }))
}

/// Answers one JSON request line with one JSON response; never panics (a panic inside the
/// parquet or arrow crates becomes an `{"error": …}` so the server keeps serving).
pub fn handle_request_line(line: &str) -> serde_json::Value {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| respond(line)));
    match result {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => json!({ "error": e.to_string() }),
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            json!({ "error": format!("internal panic: {message}") })
        }
    }
}

#[cfg(test)]
mod tests;
