//! Columns tamis does not decode itself (nested lists, structs and maps; INTERVAL;
//! unusual Arrow hints) are projected through the `parquet` crate's reader, restricted to the
//! surviving rows of the row group with a `RowSelection` so its page index skips pages too.

use arrow::array::ArrayRef;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection};
use parquet::arrow::ProjectionMask;

use crate::error::{Error, Result};
use crate::io::Reader;
use crate::selection::Bitmap;

use crate::file::OpenedFile;

/// The selected rows of top-level field `root` in row group `rg`.
pub(crate) fn read_root(
    file: &OpenedFile,
    reader: &Reader,
    rg: usize,
    root: usize,
    selection: &Bitmap,
) -> Result<ArrayRef> {
    let schema = file.metadata.file_metadata().schema_descr();
    let mask = ProjectionMask::roots(schema, [root]);
    let rows = selection.len();
    let ranges = selection.ranges();
    // The root's column chunks in one read; the crate's reader then works from memory.
    let rg_meta = file.metadata.row_group(rg);
    let mut chunk_ranges = Vec::new();
    for leaf in file.leaves.iter().filter(|l| l.root == root) {
        let (start, len) = rg_meta.column(leaf.index).byte_range();
        let end = start
            .checked_add(len)
            .ok_or_else(|| Error::corrupt("column chunk byte range overflows"))?;
        chunk_ranges.push(start..end);
    }
    let fetched = reader.read_ranges(&chunk_ranges)?;
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(fetched, file.arrow.clone())
        .with_row_groups(vec![rg])
        .with_projection(mask)
        .with_batch_size(rows.clamp(1, 1 << 20));
    // A full selection is left implicit: the reader then needs no row-count bookkeeping.
    let builder = if ranges.len() == 1 && ranges[0] == (0..rows) {
        builder
    } else {
        builder.with_row_selection(RowSelection::from_consecutive_ranges(
            ranges.into_iter(),
            rows,
        ))
    };
    let mut parts = Vec::new();
    for batch in builder.build()? {
        parts.push(batch?.column(0).clone());
    }
    let field = &file.schema().fields()[root];
    let out = if parts.is_empty() {
        arrow::array::new_empty_array(field.data_type())
    } else {
        let refs: Vec<&dyn arrow::array::Array> = parts.iter().map(|a| a.as_ref()).collect();
        arrow::compute::concat(&refs)?
    };
    if out.len() != selection.count_ones() {
        // Seen on files whose footer row count disagrees with the row groups': the nested
        // reader follows the footer. tamis will not return a batch with misaligned columns.
        return Err(Error::unsupported(format!(
            "nested column read returned {} of the {} selected rows the row group announces \
             (the footer says the file has {} rows)",
            out.len(),
            selection.count_ones(),
            file.metadata.file_metadata().num_rows()
        )));
    }
    Ok(out)
}
