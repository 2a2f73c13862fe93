//! Evaluating leaf predicates on a column chunk, page by page, for the rows still alive.
//!
//! The leaves given together are a conjunction on one column (`a >= 5 AND a < 9` — BETWEEN and
//! ranges become two leaves), evaluated in one pass. Dictionary pages: the conjunction runs once
//! per dictionary entry into a bitset over codes; the codes are then tested against the bitset
//! (an RLE run is one test). Selection pushdown: when only some of a page's rows are still alive,
//! only their codes (or PLAIN values) are selected, decoded and evaluated, and the result is
//! transformed back onto the page (paper §4). Nulls satisfy only `IS NULL`.

use std::time::Instant;

use parquet::basic::Encoding;

use crate::encoding;
use crate::error::{Error, Result};
use crate::expr::eval::eval_dense;
use crate::expr::{Leaf, LeafOp};
use crate::metrics::{add, MetricsCollector};
use crate::selection::Bitmap;
use crate::values::Values;

use super::adapt::{Adaptive, PageStrategy};
use super::{ColumnChunk, PageFrame};

/// Rows of the row group that are in `mask` and satisfy every leaf (all on this chunk's column).
/// `key` identifies the filter to the [`Adaptive`] policy (its measured page costs).
pub fn eval_conjunction(
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
    let mut cx = PageContext {
        metrics,
        adaptive,
        key,
        dict_matches: None,
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
            evaluate_page(chunk, frame, leaves, &alive, &mut cx)?
        };
        scatter(frame, &dense, null_result, &mut out);
    }
    out.and_inplace(mask);
    Ok(out)
}

/// The conjunction over a page's non-null values, exact at least where `alive` is set.
///
/// A page alive in full is evaluated whole. A partly alive page runs the strategy the
/// [`Adaptive`] policy picks from measured costs: whole (in place on PLAIN bytes, else decoded
/// once and kept for the projection), or selection pushdown (paper §4): only the alive values
/// are selected (codes via the select kernel, PLAIN values by a gather) and evaluated, and the
/// compact result is mapped back onto the page's values with `transform` (PDEP).
fn evaluate_page(
    chunk: &ColumnChunk<'_>,
    frame: &PageFrame,
    leaves: &[&Leaf],
    alive: &Bitmap,
    cx: &mut PageContext<'_>,
) -> Result<Bitmap> {
    let alive_count = alive.count_ones();
    let n = frame.non_null;
    // Only a partly alive page of an encoding with a selected path has a choice to make.
    let choice = alive_count < n && has_selected_path(frame);
    let strategy = if choice {
        cx.adaptive.choose(cx.key, n, alive_count)
    } else {
        PageStrategy::Whole
    };
    let start = Instant::now();
    let out = match strategy {
        PageStrategy::Whole => evaluate_whole(chunk, frame, leaves, cx)?,
        PageStrategy::Selected => evaluate_selected(chunk, frame, leaves, alive, cx)?,
    };
    if choice {
        cx.adaptive.record(cx.key, strategy, n, alive_count, start);
        if strategy == PageStrategy::Whole {
            add(&cx.metrics.pages_evaluated_whole, 1);
        }
    }
    Ok(out)
}

/// Whether the page's encoding can select alive values before evaluating them (dictionary codes
/// and PLAIN values; other encodings decode the page whole anyway).
fn has_selected_path(frame: &PageFrame) -> bool {
    frame.decoded.get().is_none()
        && (frame.is_dictionary_encoded() || frame.encoding == Encoding::PLAIN)
}

/// Every value of the page: dictionary codes against the entries' match bitmap (none, one or
/// all entries matching need no lookup), PLAIN values in place on the page bytes, other
/// encodings decoded once (kept on the page for the projection) and then evaluated.
fn evaluate_whole(
    chunk: &ColumnChunk<'_>,
    frame: &PageFrame,
    leaves: &[&Leaf],
    cx: &mut PageContext<'_>,
) -> Result<Bitmap> {
    let n = frame.non_null;
    if frame.is_dictionary_encoded() {
        add(&cx.metrics.values_in_place, n as u64);
        let (entries, matches) = cx.dictionary_matches(chunk, frame, leaves)?;
        // No entry or every entry matching needs no code, but the codes are still checked
        // against the dictionary: a corrupt page is an error on every path.
        return match matches.count_ones() {
            0 => encoding::dictionary::check_codes(&frame.values, n, entries)
                .map(|()| Bitmap::new_zeroed(n)),
            m if m == entries => encoding::dictionary::check_codes(&frame.values, n, entries)
                .map(|()| Bitmap::new_set(n)),
            1 => {
                let needle = matches.iter_ones().next().expect("one match") as u32;
                encoding::dictionary::filter_single_code(&frame.values, n, entries, needle)
            }
            _ => encoding::dictionary::filter_codes(&frame.values, n, entries, matches),
        };
    }
    if let Some(values) = frame.decoded.get() {
        return conjunction_on(chunk, leaves, values);
    }
    if frame.encoding == Encoding::PLAIN
        && leaves
            .iter()
            .all(|l| encoding::plain::evaluates_in_place(&l.op, chunk.leaf))
    {
        let mut acc: Option<Bitmap> = None;
        for leaf in leaves {
            let bits = encoding::plain::eval(&leaf.op, chunk.leaf, &frame.values, n).ok_or_else(
                || Error::internal("in-place evaluation declined a supported leaf"),
            )??;
            match &mut acc {
                None => acc = Some(bits),
                Some(a) => a.and_inplace(&bits),
            }
        }
        add(&cx.metrics.values_in_place, n as u64);
        return acc.ok_or_else(|| Error::internal("empty conjunction"));
    }
    let (values, fresh) = chunk.decode_page(frame)?;
    add(&cx.metrics.values_decoded, fresh as u64);
    conjunction_on(chunk, leaves, &values)
}

/// Only the alive values: selected, evaluated, transformed back onto the page.
fn evaluate_selected(
    chunk: &ColumnChunk<'_>,
    frame: &PageFrame,
    leaves: &[&Leaf],
    alive: &Bitmap,
    cx: &mut PageContext<'_>,
) -> Result<Bitmap> {
    if frame.is_dictionary_encoded() {
        add(&cx.metrics.values_decoded, alive.count_ones() as u64);
        let (entries, matches) = cx.dictionary_matches(chunk, frame, leaves)?;
        let compact = encoding::dictionary::filter_selected_codes(
            &frame.values,
            frame.non_null,
            entries,
            matches,
            alive,
        )?;
        return Ok(compact.transform(alive));
    }
    let values = encoding::plain::decode_selected(
        chunk.leaf.physical,
        chunk.leaf.type_length,
        &frame.values,
        frame.non_null,
        alive,
    )?;
    add(&cx.metrics.values_decoded, values.len() as u64);
    Ok(conjunction_on(chunk, leaves, &values)?.transform(alive))
}

/// What the pages of one filter evaluation share.
struct PageContext<'m> {
    metrics: &'m MetricsCollector,
    adaptive: &'m Adaptive,
    /// The filter's identity for the adaptive policy.
    key: u64,
    /// The conjunction over the dictionary entries, once computed.
    dict_matches: Option<Bitmap>,
}

impl PageContext<'_> {
    /// The page's dictionary size and the conjunction over its entries (computed once).
    fn dictionary_matches(
        &mut self,
        chunk: &ColumnChunk<'_>,
        frame: &PageFrame,
        leaves: &[&Leaf],
    ) -> Result<(usize, &Bitmap)> {
        let dict = chunk.dictionary_for(frame)?;
        if self.dict_matches.is_none() {
            self.dict_matches = Some(conjunction_on(chunk, leaves, dict)?);
        }
        let matches = self.dict_matches.as_ref().expect("just computed");
        Ok((dict.len(), matches))
    }
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
