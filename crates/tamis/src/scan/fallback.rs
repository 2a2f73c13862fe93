//! Columns tamis does not decode itself (nested lists, structs and maps; INT96; INTERVAL;
//! unusual Arrow hints) are projected through the `parquet` crate's reader, restricted to the
//! surviving rows of the row group with a `RowSelection` so its page index skips pages too.

use arrow::array::ArrayRef;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection};
use parquet::arrow::ProjectionMask;

use crate::error::{Error, Result};
use crate::selection::Bitmap;

use super::file::OpenedFile;

/// The selected rows of top-level field `root` in row group `rg`.
pub fn read_root(
    file: &OpenedFile,
    rg: usize,
    root: usize,
    selection: &Bitmap,
) -> Result<ArrayRef> {
    let schema = file.metadata.file_metadata().schema_descr();
    let mask = ProjectionMask::roots(schema, [root]);
    let rows = selection.len();
    let ranges = selection.ranges();
    let builder =
        ParquetRecordBatchReaderBuilder::new_with_metadata(file.source.clone(), file.arrow.clone())
            .with_row_groups(vec![rg])
            .with_projection(mask)
            .with_batch_size(rows.clamp(1, 1 << 20))
            .with_row_selection(RowSelection::from_consecutive_ranges(
                ranges.into_iter(),
                rows,
            ));
    let reader = builder.build()?;
    let mut parts = Vec::new();
    for batch in reader {
        let batch = batch?;
        parts.push(batch.column(0).clone());
    }
    let field = &file.schema().fields()[root];
    if parts.is_empty() {
        return Ok(arrow::array::new_empty_array(field.data_type()));
    }
    let refs: Vec<&dyn arrow::array::Array> = parts.iter().map(|a| a.as_ref()).collect();
    let out = arrow::compute::concat(&refs)?;
    if out.len() != selection.count_ones() {
        return Err(Error::internal(
            "fallback reader returned the wrong number of rows",
        ));
    }
    Ok(out)
}
