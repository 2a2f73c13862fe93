//! Late materialization: decoding only the selected rows of a column chunk (selection pushdown
//! for projections: select, then decode).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::budget::Budget;
use crate::encoding::dictionary;
use crate::error::{Error, Result};
use crate::metrics::{add, MetricsCollector};
use crate::selection::{Bitmap, Selection};
use crate::values::Values;

use super::sparse::{self, PagePart};
use super::{ColumnChunk, PageFrame};

/// Selected rows of a flat column: dense non-null values plus one validity flag per row.
///
/// With [`Projection::dictionary_codes`], a column whose pages are all dictionary-encoded is
/// kept as the dictionary and the selected values' codes instead of `values`
/// ([`take_codes`](Self::take_codes)); the Arrow array is then one `take` from the dictionary.
pub(crate) struct Projected {
    pub values: Option<Values>,
    pub validity: Vec<bool>,
    /// The dictionary `codes` index, while the column is kept as codes.
    codes_of: Option<Arc<Values>>,
    codes: Vec<u32>,
    /// Whether the column may still be kept as codes (no page has been appended as values).
    keep_codes: bool,
    /// Integer values widened to `i128` page by page ([`Projection::decimal128`]), in place of
    /// `values`.
    wide: Option<Vec<i128>>,
    /// Selected values of the whole column, for reserving room once.
    total: usize,
}

/// How a column is projected.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Projection {
    /// Pages that qualify are read by the blocks holding the selected values ([`sparse`]).
    pub sub_page: bool,
    /// The caller builds an Arrow array: a column of dictionary pages may stay codes (when it
    /// selects at least as many values as the dictionary has entries).
    pub dictionary_codes: bool,
    /// The values become a `Decimal128` array: INT32 and INT64 values are widened to `i128` a
    /// page at a time, while the page's values are still in cache, not in a pass over the
    /// column afterwards.
    pub decimal128: bool,
}

/// Decodes the rows set in `selection` (pages without a selected row are never read).
pub(crate) fn project(
    chunk: &mut ColumnChunk<'_>,
    selection: &Selection,
    how: Projection,
    metrics: &MetricsCollector,
) -> Result<Projected> {
    let path = chunk.leaf.path.clone();
    let mut parts = BTreeMap::new();
    if how.sub_page {
        let plan = sparse::plan(chunk, selection);
        if !plan.is_empty() {
            let (read, _whole) =
                sparse::read(chunk, &plan, selection, metrics).map_err(|e| e.in_column(&path))?;
            parts = read;
        }
        // A compressed chunk's pages, from their decompressed copies in the cache directory.
        let cached = sparse::plan_cached(chunk, selection);
        if !cached.is_empty() {
            let (read, _whole) = sparse::read_cached(chunk, &cached, selection, metrics)
                .map_err(|e| e.in_column(&path))?;
            parts.extend(read);
        }
    }
    chunk.ensure_except(selection, |i| parts.contains_key(&i), metrics)?;
    let total = selection.count_ones();
    let mut out = Projected {
        values: None,
        validity: Vec::with_capacity(total),
        codes_of: None,
        codes: Vec::new(),
        keep_codes: how.dictionary_codes,
        wide: how.decimal128.then(Vec::new),
        total,
    };
    let mut parts = parts.into_iter().peekable();
    for frame in chunk.pages.values() {
        let (start, end) = (frame.first_row, frame.first_row + frame.num_rows);
        while let Some((_, part)) = parts.next_if(|(i, _)| *i < frame.page) {
            out.push(part, chunk.budget, &path)?;
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
        select_values(chunk, frame, &selected, metrics, &mut out)
            .map_err(|e| e.in_column(&path))?;
    }
    for (_, part) in parts {
        out.push(part, chunk.budget, &path)?;
    }
    Ok(out)
}

impl Projected {
    /// Dense values and the validity of their rows.
    pub(crate) fn new(values: Option<Values>, validity: Vec<bool>) -> Projected {
        let total = validity.len();
        Projected {
            values,
            validity,
            codes_of: None,
            codes: Vec::new(),
            keep_codes: false,
            wide: None,
            total,
        }
    }

    /// The values widened to `i128`, when the projection asked for [`Projection::decimal128`];
    /// `values` is then `None`.
    pub(crate) fn take_wide(&mut self) -> Option<Vec<i128>> {
        self.wide.take()
    }

    /// The dictionary and the selected values' codes into it (one per valid row), when the
    /// column was kept as codes; `values` is then `None`.
    pub(crate) fn take_codes(&mut self) -> Option<(Arc<Values>, Vec<u32>)> {
        let dictionary = self.codes_of.take()?;
        Some((dictionary, std::mem::take(&mut self.codes)))
    }

    /// Stops keeping codes: the codes so far become values (their room was reserved in the
    /// budget as they were appended).
    fn leave_codes(&mut self, budget: &Budget) -> Result<()> {
        self.keep_codes = false;
        match self.take_codes() {
            Some((dictionary, codes)) => self.accept_codes(&dictionary, &codes, budget),
            None => Ok(()),
        }
    }

    /// Appends the values of `codes` (taken with [`take_codes`](Self::take_codes)) looked up in
    /// `dictionary`. The looked-up values were reserved in a budget as the codes were appended;
    /// `budget` takes what widening adds.
    pub(crate) fn accept_codes(
        &mut self,
        dictionary: &Values,
        codes: &[u32],
        budget: &Budget,
    ) -> Result<()> {
        let mut values = dictionary.empty_like();
        values.reserve(codes.len());
        dictionary::gather_into(dictionary, codes, &Budget::new(usize::MAX), &mut values)?;
        self.accept(values, budget)
    }

    /// Appends a page's selected values (the first page's values reserve room for the column).
    fn append(&mut self, values: Values, budget: &Budget, path: &str) -> Result<()> {
        self.leave_codes(budget)?;
        self.accept(values, budget).map_err(|e| e.in_column(path))
    }

    /// [`append`](Self::append) once no codes are kept.
    fn accept(&mut self, values: Values, budget: &Budget) -> Result<()> {
        if let Some(wide) = &mut self.wide {
            if wide.capacity() == 0 {
                let n = self.total;
                budget.reserve_items(n, 16, || format!("{n} decimals"))?;
                wide.reserve(n);
            }
            match values {
                Values::I32(v) => wide.extend(v.into_iter().map(i128::from)),
                Values::I64(v) => crate::kernels::narrow::widen_into(&v, wide),
                _ => return Err(Error::internal("decimal values of an unexpected type")),
            }
            return Ok(());
        }
        match &mut self.values {
            None => {
                let mut first = values;
                first.reserve(self.total.saturating_sub(first.len()));
                self.values = Some(first);
            }
            Some(acc) => {
                if !acc.append(values) {
                    return Err(Error::corrupt(
                        "pages of one column decode to different types",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Appends the selected rows of a page read by blocks.
    fn push(&mut self, part: PagePart, budget: &Budget, path: &str) -> Result<()> {
        match part.validity {
            None => self
                .validity
                .extend(std::iter::repeat_n(true, part.values.len())),
            Some(valid) => self.validity.extend(valid),
        }
        self.append(part.values, budget, path)
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
) -> Result<()> {
    if frame.decoded.get().is_none() {
        let (page, ops) = chunk.encoded(frame)?;
        let count = selected.count_ones();
        // Kept as codes while every page is a dictionary page, if the column selects at least
        // as many values as the dictionary has entries (building the dictionary's array then
        // costs no more than the values it saves converting).
        let dictionary = chunk.dictionary.as_ref().filter(|d| out.total >= d.len());
        if let Some(dictionary) = dictionary.filter(|_| out.keep_codes) {
            if out.codes.capacity() == 0 {
                let n = out.total;
                chunk
                    .budget
                    .reserve_items(n, 4, || format!("{n} dictionary codes"))?;
                out.codes.reserve(n);
            }
            if let Some(appended) = ops.select_codes_into(&page, selected, &mut out.codes) {
                appended.map_err(|e| e.in_page(frame.page))?;
                out.codes_of = Some(dictionary.clone());
                add(&metrics.values_decoded, count as u64);
                return Ok(());
            }
        }
        out.leave_codes(chunk.budget)?;
        let total = out.total;
        let appended = match &mut out.values {
            _ if out.wide.is_some() => ops
                .select(&page, selected)
                .map(|values| out.accept(values?, chunk.budget)),
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
    out.append(values, chunk.budget, &chunk.leaf.path)
}
