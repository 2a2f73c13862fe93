//! Evaluating one leaf predicate on a column chunk, page by page, for the rows still alive.
//!
//! Dictionary pages: the predicate runs once per dictionary entry into a bitset over codes; the
//! codes are then tested against the bitset (an RLE run is one test). Other pages: the values are
//! decoded and compared. Nulls satisfy only `IS NULL`.

use crate::encoding;
use crate::error::Result;
use crate::expr::eval::eval_dense;
use crate::expr::{Leaf, LeafOp};
use crate::metrics::{add, MetricsCollector};
use crate::selection::Bitmap;

use super::{ColumnChunk, PageFrame};

/// Rows of the row group that are in `mask` and satisfy `leaf`.
pub fn eval_leaf(
    chunk: &mut ColumnChunk<'_>,
    leaf: &Leaf,
    mask: &Bitmap,
    metrics: &MetricsCollector,
) -> Result<Bitmap> {
    chunk.ensure(mask, metrics)?;
    let mut out = Bitmap::new_zeroed(mask.len());
    let mut dict_matches: Option<Bitmap> = None;
    for frame in chunk.pages.values() {
        let (start, end) = (frame.first_row, frame.first_row + frame.num_rows);
        if !mask.any_in(start, end) {
            continue;
        }
        if let LeafOp::IsNull { negated } = leaf.op {
            for r in 0..frame.num_rows {
                let valid = frame.validity.as_ref().is_none_or(|v| v.get(r));
                if valid == negated {
                    out.set(start + r);
                }
            }
            continue;
        }
        let dense = if frame.is_dictionary_encoded() {
            let dict = chunk.dictionary_for(frame)?;
            if dict_matches.is_none() {
                dict_matches = Some(
                    eval_dense(&leaf.op, chunk.leaf, dict)
                        .map_err(|e| e.in_column(&chunk.leaf.path))?,
                );
            }
            let matches = dict_matches.as_ref().expect("just computed");
            encoding::dictionary::filter_codes(&frame.values, frame.non_null, dict.len(), matches)
                .map_err(|e| e.in_column(&chunk.leaf.path))?
        } else {
            let values = chunk
                .decode_page(frame)
                .map_err(|e| e.in_column(&chunk.leaf.path))?;
            eval_dense(&leaf.op, chunk.leaf, &values).map_err(|e| e.in_column(&chunk.leaf.path))?
        };
        add(&metrics.values_decoded, frame.non_null as u64);
        scatter(frame, &dense, leaf.op.accepts_null(), &mut out);
    }
    out.and_inplace(mask);
    Ok(out)
}

/// Spreads a result over the page's non-null values onto its rows in `out`.
fn scatter(frame: &PageFrame, dense: &Bitmap, null_result: bool, out: &mut Bitmap) {
    let start = frame.first_row;
    match &frame.validity {
        None => out.or_at(dense, start),
        Some(validity) => {
            let mut j = 0;
            for r in 0..frame.num_rows {
                if validity.get(r) {
                    if j < dense.len() && dense.get(j) {
                        out.set(start + r);
                    }
                    j += 1;
                } else if null_result {
                    out.set(start + r);
                }
            }
        }
    }
}
