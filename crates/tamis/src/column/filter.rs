//! Evaluating leaf predicates on a column chunk, page by page, for the rows still alive.
//!
//! The leaves given together are a conjunction on one column (`a >= 5 AND a < 9` — BETWEEN and
//! ranges become two leaves), evaluated in one pass. Dictionary pages: the conjunction runs once
//! per dictionary entry into a bitset over codes; the codes are then tested against the bitset
//! (an RLE run is one test). Other pages: the values are decoded once (kept on the page for
//! later filters and the projection) and compared. Nulls satisfy only `IS NULL`.

use crate::encoding;
use crate::error::{Error, Result};
use crate::expr::eval::eval_dense;
use crate::expr::{Leaf, LeafOp};
use crate::metrics::{add, MetricsCollector};
use crate::selection::Bitmap;
use crate::values::Values;

use super::{ColumnChunk, PageFrame};

/// Rows of the row group that are in `mask` and satisfy `leaf`.
pub fn eval_leaf(
    chunk: &mut ColumnChunk<'_>,
    leaf: &Leaf,
    mask: &Bitmap,
    metrics: &MetricsCollector,
) -> Result<Bitmap> {
    eval_conjunction(chunk, &[leaf], mask, metrics)
}

/// Rows of the row group that are in `mask` and satisfy every leaf (all on this chunk's column).
pub fn eval_conjunction(
    chunk: &mut ColumnChunk<'_>,
    leaves: &[&Leaf],
    mask: &Bitmap,
    metrics: &MetricsCollector,
) -> Result<Bitmap> {
    let path = chunk.leaf.path.clone();
    eval_inner(chunk, leaves, mask, metrics).map_err(|e| e.in_column(path))
}

fn eval_inner(
    chunk: &mut ColumnChunk<'_>,
    leaves: &[&Leaf],
    mask: &Bitmap,
    metrics: &MetricsCollector,
) -> Result<Bitmap> {
    chunk.ensure(mask, metrics)?;
    let null_result = leaves.iter().all(|l| l.op.accepts_null());
    let needs_values = leaves
        .iter()
        .any(|l| !matches!(l.op, LeafOp::IsNull { .. }));
    let mut out = Bitmap::new_zeroed(mask.len());
    let mut dict_matches: Option<Bitmap> = None;
    for frame in chunk.pages.values() {
        let (start, end) = (frame.first_row, frame.first_row + frame.num_rows);
        if !mask.any_in(start, end) {
            continue;
        }
        let dense = if !needs_values {
            // Only IS [NOT] NULL: non-null values satisfy exactly the IS NOT NULL leaves.
            let all_not_null = leaves
                .iter()
                .all(|l| l.op == LeafOp::IsNull { negated: true });
            if all_not_null {
                Bitmap::new_set(frame.non_null)
            } else {
                Bitmap::new_zeroed(frame.non_null)
            }
        } else if frame.is_dictionary_encoded() {
            let dict = chunk.dictionary_for(frame)?;
            if dict_matches.is_none() {
                dict_matches = Some(conjunction_on(chunk, leaves, dict)?);
            }
            let matches = dict_matches.as_ref().expect("just computed");
            add(&metrics.values_decoded, frame.non_null as u64);
            encoding::dictionary::filter_codes(&frame.values, frame.non_null, dict.len(), matches)?
        } else {
            let (values, fresh) = chunk.decode_page(frame)?;
            add(&metrics.values_decoded, fresh as u64);
            conjunction_on(chunk, leaves, &values)?
        };
        scatter(frame, &dense, null_result, &mut out);
    }
    out.and_inplace(mask);
    Ok(out)
}

/// Bit i set iff dense value i satisfies every leaf.
fn conjunction_on(chunk: &ColumnChunk<'_>, leaves: &[&Leaf], values: &Values) -> Result<Bitmap> {
    let mut acc: Option<Bitmap> = None;
    for leaf in leaves {
        let bits = eval_dense(&leaf.op, chunk.leaf, values)?;
        match &mut acc {
            None => acc = Some(bits),
            Some(a) => a.and_inplace(&bits),
        }
    }
    acc.ok_or_else(|| Error::internal("empty conjunction"))
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
