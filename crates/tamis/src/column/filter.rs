//! Evaluating leaf predicates on a column chunk, page by page, for the rows still alive.
//!
//! The leaves given together are a conjunction on one column (`a >= 5 AND a < 9` — BETWEEN and
//! ranges become two leaves), evaluated in one pass. Dictionary pages: the conjunction runs once
//! per dictionary entry into a bitset over codes; the codes are then tested against the bitset
//! (an RLE run is one test). Selection pushdown: when only some of a page's rows are still alive,
//! only their codes (or PLAIN values) are selected, decoded and evaluated, and the result is
//! transformed back onto the page (paper §4). Nulls satisfy only `IS NULL`.

use std::time::Instant;

use crate::error::Result;
use crate::expr::eval::Conjunction;
use crate::expr::{Leaf, LeafOp};
use crate::metrics::{add, MetricsCollector};
use crate::selection::Bitmap;

use super::adapt::{Adaptive, PageStrategy};
use super::{ColumnChunk, PageFrame};

/// Rows of the row group that are in `mask` and satisfy every leaf (all on this chunk's column).
/// `key` identifies the filter to the [`Adaptive`] policy (its measured page costs).
pub(crate) fn eval_conjunction(
    chunk: &mut ColumnChunk<'_>,
    leaves: &[&Leaf],
    mask: &Bitmap,
    metrics: &MetricsCollector,
    adaptive: &Adaptive,
    key: u64,
) -> Result<Bitmap> {
    let path = chunk.leaf.path.clone();
    eval_inner(chunk, leaves, mask, metrics, adaptive, key).map_err(|e| e.in_column(path))
}

fn eval_inner(
    chunk: &mut ColumnChunk<'_>,
    leaves: &[&Leaf],
    mask: &Bitmap,
    metrics: &MetricsCollector,
    adaptive: &Adaptive,
    key: u64,
) -> Result<Bitmap> {
    chunk.ensure(mask, metrics)?;
    let null_result = leaves.iter().all(|l| l.op.accepts_null());
    let needs_values = leaves
        .iter()
        .any(|l| !matches!(l.op, LeafOp::IsNull { .. }));
    let mut out = Bitmap::new_zeroed(mask.len());
    let cx = PageContext {
        conj: Conjunction::new(leaves, chunk.leaf),
        metrics,
        adaptive,
        key,
    };
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
            evaluate_page(chunk, frame, &alive, &cx).map_err(|e| e.in_page(frame.page))?
        };
        scatter(frame, &dense, null_result, &mut out);
    }
    out.and_inplace(mask);
    Ok(out)
}

/// What the pages of one filter evaluation share.
struct PageContext<'a> {
    /// The leaves, and their result over the chunk's dictionary once computed.
    conj: Conjunction<'a>,
    metrics: &'a MetricsCollector,
    adaptive: &'a Adaptive,
    /// The filter's identity for the adaptive policy.
    key: u64,
}

/// The conjunction over a page's non-null values, exact at least where `alive` is set.
///
/// A page alive in full is evaluated whole. A partly alive page whose encoding can select runs
/// the strategy the [`Adaptive`] policy picks from measured costs: whole, or selection pushdown
/// (paper §4): only the alive values are selected and evaluated, and the compact result is
/// mapped back onto the page's values with `transform` (PDEP).
fn evaluate_page(
    chunk: &ColumnChunk<'_>,
    frame: &PageFrame,
    alive: &Bitmap,
    cx: &PageContext<'_>,
) -> Result<Bitmap> {
    if let Some(values) = frame.decoded.get() {
        return cx.conj.on_values(values);
    }
    let (page, ops) = chunk.encoded(frame)?;
    let alive_count = alive.count_ones();
    let n = frame.non_null;
    let choice = alive_count < n && ops.selects();
    let strategy = if choice {
        cx.adaptive.choose(cx.key, n, alive_count)
    } else {
        PageStrategy::Whole
    };
    let start = Instant::now();
    let selected = match strategy {
        PageStrategy::Selected => ops.evaluate_selected(&page, &cx.conj, alive),
        PageStrategy::Whole => None,
    };
    let out = match selected {
        Some(compact) => {
            add(&cx.metrics.values_decoded, alive_count as u64);
            compact?.transform(alive)
        }
        None => match ops.evaluate(&page, &cx.conj) {
            Some(bits) => {
                add(&cx.metrics.values_in_place, n as u64);
                bits?
            }
            None => {
                let (values, fresh) = chunk.decode_page(frame)?;
                add(&cx.metrics.values_decoded, fresh as u64);
                cx.conj.on_values(&values)?
            }
        },
    };
    if choice {
        cx.adaptive.record(cx.key, strategy, n, alive_count, start);
        if strategy == PageStrategy::Whole {
            add(&cx.metrics.pages_evaluated_whole, 1);
        }
    }
    Ok(out)
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
