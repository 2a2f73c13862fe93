//! An opened Parquet file: its byte source, metadata (with page index when present), leaf
//! columns and the Arrow schema the `parquet` crate's reader would produce.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow::datatypes::SchemaRef;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};

use crate::error::{Error, Result};
use crate::io::FileSource;
use crate::schema::{leaf_columns, LeafColumn};

/// Largest row group tamis scans: selections are bitmaps over a row group's rows (256 MiB at
/// this size), and page value counts are checked against it before buffers are sized.
pub const MAX_ROW_GROUP_ROWS: i64 = 1 << 31;

pub struct OpenedFile {
    pub path: PathBuf,
    pub source: FileSource,
    pub metadata: Arc<ParquetMetaData>,
    pub arrow: ArrowReaderMetadata,
    pub leaves: Vec<LeafColumn>,
    /// Bytes read and time spent opening (footer, page index).
    pub open_bytes: u64,
    pub open_ns: u64,
}

impl OpenedFile {
    pub fn open(path: &Path) -> Result<Self> {
        let start = Instant::now();
        let ctx = |e: Error| e.in_file(path.display());
        let source = FileSource::open(path).map_err(ctx)?;
        let metadata = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Optional)
            .parse_and_finish(&source)
            .map_err(|e| ctx(Error::from(e)))?;
        let metadata = Arc::new(metadata);
        let arrow = ArrowReaderMetadata::try_new(metadata.clone(), ArrowReaderOptions::new())
            .map_err(|e| ctx(Error::from(e)))?;
        let leaves = leaf_columns(metadata.file_metadata().schema_descr());
        for (i, rg) in metadata.row_groups().iter().enumerate() {
            if rg.num_columns() != leaves.len() {
                return Err(ctx(Error::corrupt(format!(
                    "row group {i} has {} column chunks, the schema {} leaf columns",
                    rg.num_columns(),
                    leaves.len()
                ))));
            }
            if rg.num_rows() < 0 {
                return Err(ctx(Error::corrupt(format!(
                    "row group {i} has a negative row count"
                ))));
            }
            if rg.num_rows() > MAX_ROW_GROUP_ROWS {
                return Err(ctx(Error::resource(format!(
                    "row group {i} has {} rows; tamis handles at most {MAX_ROW_GROUP_ROWS} per row group",
                    rg.num_rows()
                ))));
            }
        }
        Ok(OpenedFile {
            path: path.to_path_buf(),
            open_bytes: source.bytes_read(),
            source,
            metadata,
            arrow,
            leaves,
            open_ns: start.elapsed().as_nanos() as u64,
        })
    }

    pub fn schema(&self) -> &SchemaRef {
        self.arrow.schema()
    }

    pub fn name(&self) -> String {
        self.path.display().to_string()
    }
}

/// Expands a path into Parquet files: a file, a directory (every `*.parquet` below it, sorted) or
/// a glob pattern.
pub fn resolve_paths(path: &str) -> Result<Vec<PathBuf>> {
    let p = Path::new(path);
    if p.is_file() {
        return Ok(vec![p.to_path_buf()]);
    }
    if p.is_dir() {
        let mut out = Vec::new();
        collect_dir(p, &mut out)?;
        out.sort();
        if out.is_empty() {
            return Err(Error::invalid(format!(
                "no *.parquet files below directory {path}"
            )));
        }
        return Ok(out);
    }
    if path.contains(['*', '?', '[']) {
        let paths =
            glob::glob(path).map_err(|e| Error::invalid(format!("bad glob {path}: {e}")))?;
        let mut out: Vec<PathBuf> = paths
            .filter_map(|r| r.ok())
            .filter(|p| p.is_file())
            .collect();
        out.sort();
        if out.is_empty() {
            return Err(Error::invalid(format!("no files match {path}")));
        }
        return Ok(out);
    }
    let mut err = Error::new(crate::ErrorKind::Io, "no such file or directory");
    err.io_kind = Some(std::io::ErrorKind::NotFound);
    Err(err.in_file(path))
}

fn collect_dir(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::from(e).in_file(dir.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| Error::from(e).in_file(dir.display()))?
            .path();
        if path.is_dir() {
            collect_dir(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "parquet") {
            out.push(path);
        }
    }
    Ok(())
}
