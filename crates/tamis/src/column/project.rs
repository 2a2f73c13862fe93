//! Late materialization: decoding only the selected rows of a column chunk (selection pushdown
//! for projections: select, then decode).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::metrics::{add, MetricsCollector};
use crate::selection::{Bitmap, Selection};
use crate::values::Values;

use super::sparse::{self, PagePart};
use super::{ColumnChunk, PageFrame};

/// Selected rows of a flat column: dense non-null values plus one validity flag per row.
pub struct Projected {
    pub values: Option<Values>,
    pub validity: Vec<bool>,
}

/// Decodes the rows set in `selection` (pages without a selected row are never read). With
/// `sub_page`, pages that qualify are read by the blocks holding the selected values
/// ([`sparse`]).
pub fn project(
    chunk: &mut ColumnChunk<'_>,
    selection: &Selection,
    sub_page: bool,
    metrics: &MetricsCollector,
) -> Result<Projected> {
    let path = chunk.leaf.path.clone();
    let mut parts = BTreeMap::new();
    if sub_page {
        let plan = sparse::plan(chunk, selection);
        if !plan.is_empty() {
            let (read, _whole) =
                sparse::read(chunk, &plan, selection, metrics).map_err(|e| e.in_column(&path))?;
            parts = read;
        }
    }
    chunk.ensure_except(selection, |i| parts.contains_key(&i), metrics)?;
    let total = selection.count_ones();
    let mut out = Projected {
        values: None,
        validity: Vec::with_capacity(total),
    };
    let mut parts = parts.into_iter().peekable();
    for frame in chunk.pages.values() {
        let (start, end) = (frame.first_row, frame.first_row + frame.num_rows);
        while let Some((_, part)) = parts.next_if(|(i, _)| *i < frame.page) {
            out.push(part, total, &path)?;
        }
        if !selection.any_in(start, end) {
            continue;
        }
        // Algorithm 4 without repetition: the selected rows of the page, then (through the
        // validity, PEXT) the selected non-null values and the validity of the selected rows.
        let rows = selection.window(start, frame.num_rows);
        let selected = match &frame.validity {
            None => {
                out.validity
                    .extend(std::iter::repeat_n(true, rows.count_ones()));
                rows
            }
            Some(validity) => {
                if validity.count_ones() != frame.non_null {
                    return Err(Error::internal("validity count mismatch").in_column(&path));
                }
                let valid = validity.compress(&rows);
                out.validity.extend((0..valid.len()).map(|i| valid.get(i)));
                rows.compress(validity)
            }
        };
        select_values(chunk, frame, &selected, metrics, &mut out, total)
            .map_err(|e| e.in_column(&path))?;
    }
    for (_, part) in parts {
        out.push(part, total, &path)?;
    }
    Ok(out)
}

impl Projected {
    /// Appends a page's selected values (the first page's values reserve room for `total`).
    fn append(&mut self, values: Values, total: usize, path: &str) -> Result<()> {
        match &mut self.values {
            None => {
                let mut first = values;
                first.reserve(total.saturating_sub(first.len()));
                self.values = Some(first);
            }
            Some(acc) => {
                if !acc.append(values) {
                    return Err(
                        Error::corrupt("pages of one column decode to different types")
                            .in_column(path),
                    );
                }
            }
        }
        Ok(())
    }

    /// Appends the selected rows of a page read by blocks.
    fn push(&mut self, part: PagePart, total: usize, path: &str) -> Result<()> {
        match part.validity {
            None => self
                .validity
                .extend(std::iter::repeat_n(true, part.values.len())),
            Some(valid) => self.validity.extend(valid),
        }
        self.append(part.values, total, path)
    }
}

/// Appends to `out` the page's values whose bit is set in `selected` (one bit per non-null
/// value), decoding only those where the encoding can select them (dictionary codes through the
/// select kernel, PLAIN values by a gather) — straight into the column's buffer where the
/// encoding writes there; otherwise the page is decoded whole (once) and the selected values
/// taken.
fn select_values(
    chunk: &ColumnChunk<'_>,
    frame: &PageFrame,
    selected: &Bitmap,
    metrics: &MetricsCollector,
    out: &mut Projected,
    total: usize,
) -> Result<()> {
    if frame.decoded.get().is_none() {
        let (page, ops) = chunk.encoded(frame)?;
        let count = selected.count_ones();
        let appended = match &mut out.values {
            Some(acc) => ops.select_into(&page, selected, acc),
            None => ops.select(&page, selected).map(|values| {
                let mut first = values?;
                first.reserve(total.saturating_sub(first.len()));
                out.values = Some(first);
                Ok(())
            }),
        };
        if let Some(appended) = appended {
            appended.map_err(|e| e.in_page(frame.page))?;
            add(&metrics.values_decoded, count as u64);
            return Ok(());
        }
    }
    let (values, fresh) = chunk.decode_page(frame)?;
    add(&metrics.values_decoded, fresh as u64);
    let values = if selected.all_set() {
        Arc::unwrap_or_clone(values)
    } else {
        let idx: Vec<u32> = selected.iter_ones().map(|i| i as u32).collect();
        values.take(&idx)
    };
    out.append(values, total, &chunk.leaf.path)
}
