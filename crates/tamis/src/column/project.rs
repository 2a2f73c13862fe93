//! Late materialization: decoding only the selected rows of a column chunk.

use std::sync::Arc;

use crate::encoding;
use crate::error::{Error, Result};
use crate::metrics::{add, MetricsCollector};
use crate::selection::Bitmap;
use crate::values::Values;

use super::ColumnChunk;

/// Selected rows of a flat column: dense non-null values plus one validity flag per row.
pub struct Projected {
    pub values: Option<Values>,
    pub validity: Vec<bool>,
}

/// Decodes the rows set in `selection` (pages without a selected row are never read).
pub fn project(
    chunk: &mut ColumnChunk<'_>,
    selection: &Bitmap,
    metrics: &MetricsCollector,
) -> Result<Projected> {
    chunk.ensure(selection, metrics)?;
    let path = chunk.leaf.path.clone();
    let mut out = Projected {
        values: None,
        validity: Vec::with_capacity(selection.count_ones()),
    };
    for frame in chunk.pages.values() {
        let (start, end) = (frame.first_row, frame.first_row + frame.num_rows);
        if !selection.any_in(start, end) {
            continue;
        }
        // Dense indices of the selected non-null values.
        let mut dense_idx: Vec<u32> = Vec::new();
        match &frame.validity {
            // No nulls: the selected rows are the dense indices.
            None => {
                let mut page_sel = Bitmap::new_zeroed(frame.num_rows);
                page_sel.or_range_from(selection, start);
                dense_idx.extend(page_sel.iter_ones().map(|r| r as u32));
                out.validity
                    .extend(std::iter::repeat_n(true, dense_idx.len()));
            }
            Some(validity) => {
                let mut j = 0u32;
                for r in 0..frame.num_rows {
                    let valid = validity.get(r);
                    if selection.get(start + r) {
                        out.validity.push(valid);
                        if valid {
                            dense_idx.push(j);
                        }
                    }
                    j += valid as u32;
                }
                if (j as usize) != frame.non_null {
                    return Err(Error::internal("validity count mismatch").in_column(&path));
                }
            }
        }
        let values = if frame.is_dictionary_encoded() {
            let dict = chunk.dictionary_for(frame)?;
            let codes = chunk.page_codes(frame).map_err(|e| e.in_column(&path))?;
            let picked: Vec<u32> = dense_idx.iter().map(|&i| codes[i as usize]).collect();
            add(&metrics.values_decoded, frame.non_null as u64);
            encoding::dictionary::gather(dict, &picked)
        } else {
            let (all, fresh) = chunk.decode_page(frame).map_err(|e| e.in_column(&path))?;
            add(&metrics.values_decoded, fresh as u64);
            if dense_idx.len() == all.len() {
                Arc::unwrap_or_clone(all)
            } else {
                all.take(&dense_idx)
            }
        };
        match &mut out.values {
            None => out.values = Some(values),
            Some(acc) => {
                if !acc.append(values) {
                    return Err(
                        Error::corrupt("pages of one column decode to different types")
                            .in_column(&path),
                    );
                }
            }
        }
    }
    Ok(out)
}
