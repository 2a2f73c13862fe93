//! Writing the optimized file through the parquet crate's `ArrowWriter`: page statistics (so a
//! ColumnIndex and an OffsetIndex for every column chunk), the chosen page and row-group sizes,
//! Bloom filters sized per column, the inputs' key-value metadata — into a temporary file next to
//! the output, renamed over it only once it is complete.

use std::io::BufWriter;
use std::path::Path;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use crate::error::{Error, Result};

/// Layout settings of the output file.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub page_rows: usize,
    pub page_bytes: usize,
    pub dictionary_page_bytes: usize,
    pub row_group_rows: usize,
    pub compression: Compression,
    pub dictionary: bool,
}

/// A Bloom filter to write: column, target fpp and the distinct values it is sized for.
#[derive(Debug, Clone)]
pub(crate) struct FilterSpec {
    pub column: String,
    pub fpp: f64,
    pub ndv: u64,
}

/// The writer properties for `layout`, `filters` and `key_value_metadata`.
pub(crate) fn writer_properties(
    layout: &Layout,
    filters: &[FilterSpec],
    key_value_metadata: Vec<KeyValue>,
) -> WriterProperties {
    let mut b = WriterProperties::builder()
        // Page-level statistics: the writer then always emits ColumnIndex and OffsetIndex.
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_offset_index_disabled(false)
        .set_data_page_row_count_limit(layout.page_rows)
        // The row-count limit is checked once per write batch.
        .set_write_batch_size(layout.page_rows.clamp(1, 1024))
        .set_data_page_size_limit(layout.page_bytes)
        .set_dictionary_page_size_limit(layout.dictionary_page_bytes)
        .set_max_row_group_row_count(Some(layout.row_group_rows))
        .set_compression(layout.compression)
        .set_dictionary_enabled(layout.dictionary)
        .set_key_value_metadata((!key_value_metadata.is_empty()).then_some(key_value_metadata));
    for f in filters {
        let path = ColumnPath::from(f.column.as_str());
        b = b
            .set_column_bloom_filter_enabled(path.clone(), true)
            .set_column_bloom_filter_fpp(path.clone(), f.fpp)
            .set_column_bloom_filter_max_ndv(path, f.ndv.max(1));
    }
    b.build()
}

/// Writes `batches` to `output` through a temporary file in the same directory; on any error
/// the temporary file is removed and `output` is untouched.
pub(crate) fn write_atomically(
    output: &Path,
    schema: &SchemaRef,
    props: WriterProperties,
    batches: impl Iterator<Item = Result<RecordBatch>>,
    mut progress: impl FnMut(u64),
) -> Result<()> {
    let out_name = output.display().to_string();
    let dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let file_name = output
        .file_name()
        .ok_or_else(|| Error::invalid("the output path has no file name").in_file(&out_name))?;
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", file_name.to_string_lossy()))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| Error::from(e).in_file(&out_name))?;
    let handle = tmp
        .as_file()
        .try_clone()
        .map_err(|e| Error::from(e).in_file(&out_name))?;
    let mut writer = ArrowWriter::try_new(BufWriter::new(handle), schema.clone(), Some(props))
        .map_err(|e| Error::from(e).in_file(&out_name))?;
    for batch in batches {
        let batch = batch?;
        writer
            .write(&batch)
            .map_err(|e| Error::from(e).in_file(&out_name))?;
        progress(batch.num_rows() as u64);
    }
    writer
        .into_inner()
        .map_err(|e| Error::from(e).in_file(&out_name))?
        .into_inner()
        .map_err(|e| Error::from(e.into_error()).in_file(&out_name))?
        .sync_all()
        .map_err(|e| Error::from(e).in_file(&out_name))?;
    tmp.persist(output)
        .map_err(|e| Error::from(e.error).in_file(&out_name))?;
    Ok(())
}
