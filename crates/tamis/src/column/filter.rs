//! Evaluating leaf predicates on a column chunk, page by page, for the rows still alive.
//!
//! The leaves given together are a conjunction on one column (`a >= 5 AND a < 9` — BETWEEN and
//! ranges become two leaves), evaluated in one pass. Dictionary pages: the conjunction runs once
//! per dictionary entry into a bitset over codes; the codes are then tested against the bitset
//! (an RLE run is one test). Selection pushdown: when only some of a page's rows are still alive,
//! only their codes (or PLAIN values) are selected, decoded and evaluated, and the result is
//! transformed back onto the page (paper §4). Nulls satisfy only `IS NULL`.

use parquet::basic::Encoding;

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
        // The page's rows still alive, then the same as a selection over its non-null values.
        let alive_rows = mask.window(start, frame.num_rows);
        let alive = match &frame.validity {
            None => alive_rows,
            Some(validity) => alive_rows.compress(validity),
        };
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
        } else {
            evaluate_page(chunk, frame, leaves, &alive, &mut dict_matches, metrics)?
        };
        scatter(frame, &dense, null_result, &mut out);
    }
    out.and_inplace(mask);
    Ok(out)
}

/// The conjunction over a page's non-null values, exact at least where `alive` is set.
///
/// Selection pushdown (paper §4): when only some values are alive, they alone are selected
/// (codes via the select kernel, PLAIN values by a gather), decoded and evaluated, and the
/// compact result is mapped back onto the page's values with `transform` (PDEP). When all are
/// alive, the page is evaluated whole (a dictionary page code by code, one test per RLE run).
fn evaluate_page(
    chunk: &ColumnChunk<'_>,
    frame: &PageFrame,
    leaves: &[&Leaf],
    alive: &Bitmap,
    dict_matches: &mut Option<Bitmap>,
    metrics: &MetricsCollector,
) -> Result<Bitmap> {
    let all_alive = alive.all_set();
    if frame.is_dictionary_encoded() {
        let dict = chunk.dictionary_for(frame)?;
        if dict_matches.is_none() {
            *dict_matches = Some(conjunction_on(chunk, leaves, dict)?);
        }
        let matches = dict_matches.as_ref().expect("just computed");
        return if all_alive {
            add(&metrics.values_decoded, frame.non_null as u64);
            encoding::dictionary::filter_codes(&frame.values, frame.non_null, dict.len(), matches)
        } else {
            add(&metrics.values_decoded, alive.count_ones() as u64);
            let compact = encoding::dictionary::filter_selected_codes(
                &frame.values,
                frame.non_null,
                dict.len(),
                matches,
                alive,
            )?;
            Ok(compact.transform(alive))
        };
    }
    if let Some(values) = frame.decoded.get() {
        return conjunction_on(chunk, leaves, values);
    }
    if frame.encoding == Encoding::PLAIN && !all_alive {
        let values = encoding::plain::decode_selected(
            chunk.leaf.physical,
            chunk.leaf.type_length,
            &frame.values,
            frame.non_null,
            alive,
        )?;
        add(&metrics.values_decoded, values.len() as u64);
        return Ok(conjunction_on(chunk, leaves, &values)?.transform(alive));
    }
    let (values, fresh) = chunk.decode_page(frame)?;
    add(&metrics.values_decoded, fresh as u64);
    conjunction_on(chunk, leaves, &values)
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

/// Spreads a result over the page's non-null values onto its rows in `out`: the values' bits
/// go to the valid rows (PDEP by the validity), null rows get `null_result`.
fn scatter(frame: &PageFrame, dense: &Bitmap, null_result: bool, out: &mut Bitmap) {
    let start = frame.first_row;
    match &frame.validity {
        None => out.or_at(dense, start),
        Some(validity) => {
            let mut rows = dense.transform(validity);
            if null_result {
                let mut nulls = validity.clone();
                nulls.not_inplace();
                rows.or_inplace(&nulls);
            }
            out.or_at(&rows, start);
        }
    }
}
