//! Projecting a list column under a row selection: Algorithm 4 of the paper (§5) on the encoded
//! levels, for a top-level list of a primitive element (one repeated level).
//!
//! ```text
//! rep levels ─ equal(0) ─► b_record ┐
//! selected rows of the page ────────┴ extend ─► b_level (one bit per level of a selected record)
//! def levels ─ equal(max_def) ─► b_valid ─ compress(b_level, b_valid) ─► b_value ─► values
//!            ─ equal(list_def), equal(list_def - 1) ─► empty lists, null lists
//! b_record, b_valid, … compressed by b_level ─► offsets, list and element validity
//! ```
//!
//! Levels never become integers. Pages holding no selected row are not read when the OffsetIndex
//! gives their first rows (or a v2 page header its row count); otherwise pages are read in order,
//! counting records, and a record continuing into the next page is joined to its list.
//! Deeper nesting, maps and structs stay with the `parquet` crate's reader (`scan::fallback`).

use std::sync::Arc;

use arrow::array::{ArrayRef, LargeListArray, ListArray};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, Field, FieldRef};
use bytes::Bytes;
use parquet::basic::{Encoding, Repetition};
use parquet::column::page::{Page, PageMetadata};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::page_index::offset_index::OffsetIndexMetaData;
use parquet::schema::types::Type;

use super::arrays::{is_native_element, to_arrow};
use crate::encoding;
use crate::error::{Error, Result};
use crate::io::Reader;
use crate::kernels::kernels;
use crate::levels;
use crate::metrics::{add, MetricsCollector};
use crate::schema::LeafColumn;
use crate::selection::Bitmap;
use crate::values::Values;

use super::pages::{ChunkPages, PageVisitor};
use super::project::Projected;

/// Most levels one page may announce: bitmaps over a page's levels are sized from the header.
const MAX_PAGE_LEVELS: usize = 1 << 31;

/// How the definition levels of a list column read: below `list_def` the list is null, at
/// `list_def` it is empty, above it the level is an element, present at `max_def`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListLevels {
    pub list_nullable: bool,
    pub element_nullable: bool,
    pub list_def: i16,
    pub max_def: i16,
}

/// A list column tamis projects itself: its one leaf, its levels and the Arrow list field the
/// `parquet` crate's reader gives it.
#[derive(Debug, Clone)]
pub(crate) struct ListPlan<'a> {
    pub leaf: &'a LeafColumn,
    pub levels: ListLevels,
    /// The element field of the target `List` / `LargeList`.
    pub item: FieldRef,
    pub large: bool,
}

impl<'a> ListPlan<'a> {
    /// The plan for top-level field `root` (Parquet type `root_type`, Arrow field `field`), if it
    /// is a list of a natively decoded primitive with one repeated level: a standard 3-level
    /// LIST, a 2-level LIST of a repeated primitive, or a bare repeated primitive.
    pub(crate) fn new(
        leaves: &'a [LeafColumn],
        root: usize,
        root_type: &Type,
        field: &Field,
    ) -> Option<Self> {
        let mut of_root = leaves.iter().filter(|l| l.root == root);
        let leaf = of_root.next()?;
        if of_root.next().is_some() || leaf.max_rep != 1 {
            return None;
        }
        let (item, large) = match field.data_type() {
            DataType::List(item) => (item.clone(), false),
            DataType::LargeList(item) => (item.clone(), true),
            _ => return None,
        };
        if !is_native_element(leaf, item.data_type()) {
            return None;
        }
        let list_nullable = root_type.get_basic_info().repetition() == Repetition::OPTIONAL;
        let list_def = list_nullable as i16;
        // One level for the repeated field, at most one for a nullable element.
        let element_nullable = match leaf.max_def - list_def - 1 {
            0 => false,
            1 => true,
            _ => return None,
        };
        // The Arrow fields must be able to hold the nulls the levels can express.
        if (list_nullable && !field.is_nullable()) || (element_nullable && !item.is_nullable()) {
            return None;
        }
        Some(ListPlan {
            leaf,
            levels: ListLevels {
                list_nullable,
                element_nullable,
                list_def,
                max_def: leaf.max_def,
            },
            item,
            large,
        })
    }
}

impl ListPlan<'_> {
    /// The Arrow list array of the assembled lists.
    fn build(&self, out: Assembly, selected: usize) -> Result<ArrayRef> {
        if out.starts.len() != selected {
            return Err(Error::internal(format!(
                "assembled {} lists for {selected} selected rows",
                out.starts.len()
            )));
        }
        let elements = to_arrow(
            self.leaf,
            Projected::new(out.values, out.elem_valid),
            self.item.data_type(),
        )?;
        let total = elements.len();
        let nulls = if out.list_valid.iter().all(|&v| v) {
            None
        } else {
            Some(NullBuffer::from(out.list_valid))
        };
        // Each list ends where the next starts; the first starts at 0 (a selected level that
        // is not a record start is refused before any list is open).
        let bounds = out.starts.iter().copied().chain([total]);
        let item = self.item.clone();
        let array: ArrayRef = if self.large {
            let offsets: Vec<i64> = bounds.map(|e| e as i64).collect();
            Arc::new(LargeListArray::try_new(
                item,
                OffsetBuffer::new(offsets.into()),
                elements,
                nulls,
            )?)
        } else {
            let offsets: Vec<i32> = bounds
                .map(|e| {
                    i32::try_from(e).map_err(|_| {
                        Error::resource("more than 2^31 list elements in one row group")
                    })
                })
                .collect::<Result<_>>()?;
            Arc::new(ListArray::try_new(
                item,
                OffsetBuffer::new(offsets.into()),
                elements,
                nulls,
            )?)
        };
        Ok(array)
    }

    /// The levels of a data page as bitmaps, and its encoded values. `chunk_values` (the column
    /// chunk's value count) bounds the page's level count before bitmaps are sized from it.
    fn page_levels(
        &self,
        page: Page,
        chunk_values: usize,
        budget: &crate::budget::Budget,
    ) -> Result<PageLevels> {
        let lv = self.levels;
        let max_rep = self.leaf.max_rep;
        let n = match &page {
            Page::DataPage { num_values, .. } | Page::DataPageV2 { num_values, .. } => {
                *num_values as usize
            }
            Page::DictionaryPage { .. } => {
                return Err(Error::corrupt("unexpected second dictionary page"))
            }
        };
        // Checked before any bitmap is sized from it.
        if n > chunk_values.min(MAX_PAGE_LEVELS) {
            return Err(Error::corrupt(format!(
                "page announces {n} levels, the column chunk {chunk_values}"
            )));
        }
        // Four or five level bitmaps of `n` bits, then the value bitmaps.
        budget.reserve(n.div_ceil(8).saturating_mul(8), || {
            format!("level bitmaps of a page of {n} levels")
        })?;
        let mut literals = vec![lv.max_def as u32, lv.list_def as u32];
        if lv.list_nullable {
            literals.push(lv.list_def as u32 - 1);
        }
        let (record_starts, mut defs, encoding, values) = match page {
            Page::DataPage {
                buf,
                encoding,
                def_level_encoding,
                rep_level_encoding,
                ..
            } => {
                let (starts, rep_len) =
                    levels::record_starts_v1(&buf, rep_level_encoding, max_rep, n)?;
                let rest = buf.get(rep_len..).unwrap_or_default();
                let (defs, def_len) =
                    levels::equal_v1(rest, def_level_encoding, lv.max_def, n, &literals)?;
                let start = (rep_len + def_len).min(buf.len());
                (starts, defs, encoding, buf.slice(start..))
            }
            Page::DataPageV2 {
                buf,
                encoding,
                def_levels_byte_len,
                rep_levels_byte_len,
                ..
            } => {
                let rep = rep_levels_byte_len as usize;
                let def_end = rep
                    .checked_add(def_levels_byte_len as usize)
                    .filter(|&e| e <= buf.len())
                    .ok_or_else(|| Error::corrupt("level lengths exceed the page size"))?;
                let starts = levels::record_starts_v2(&buf[..rep], max_rep, n)?;
                let defs = levels::equal_v2(&buf[rep..def_end], lv.max_def, n, &literals)?;
                (starts, defs, encoding, buf.slice(def_end..))
            }
            Page::DictionaryPage { .. } => unreachable!("rejected above"),
        };
        let null_list = lv
            .list_nullable
            .then(|| defs.pop().expect("three literals"));
        let empty = defs.pop().expect("two literals");
        let valid = defs.pop().expect("two literals");
        Ok(PageLevels {
            num_levels: n,
            record_starts,
            valid,
            empty,
            null_list,
            encoding,
            values,
        })
    }

    /// Algorithm 4 on one page whose first record start is row `first_row` of the row group:
    /// appends the selected lists (and the tail of a selected list the page continues) to `out`.
    #[allow(clippy::too_many_arguments)] // the page, its place, and where its output goes
    fn select_page(
        &self,
        p: &PageLevels,
        first_row: usize,
        selection: &Bitmap,
        dictionary: Option<&Values>,
        metrics: &MetricsCollector,
        out: &mut Assembly,
        budget: &crate::budget::Budget,
    ) -> Result<()> {
        let k = kernels();
        let n = p.num_levels;
        if n == 0 {
            return Ok(());
        }
        // A page starting inside a record: that record's select bit comes first, and its first
        // level counts as a record start for `extend` (not for the output: it continues a list).
        let continues = !p.record_starts.get(0) as usize;
        let records = p.record_starts.count_ones() + continues;
        let first = first_row
            .checked_sub(continues)
            .ok_or_else(|| Error::corrupt("the first page starts inside a record"))?;
        if first + records > selection.len() {
            return Err(Error::corrupt("page records run past the row group"));
        }
        let mut b_select = Bitmap::new_zeroed(records);
        b_select.or_range_from(selection, first);
        if b_select.count_ones() == 0 {
            return Ok(());
        }
        let mut mask = p.record_starts.clone();
        mask.set(0);
        let mut b_level = vec![0u64; n.div_ceil(64)];
        (k.extend)(b_select.words(), mask.words(), n, &mut b_level);
        let b_level = Bitmap::from_words(b_level, n);

        // Values: only those of selected, present elements are kept.
        let non_null = p.valid.count_ones();
        let mut words = Vec::new();
        let kept = (k.compress)(b_level.words(), p.valid.words(), n, &mut words);
        words.resize(kept.div_ceil(64), 0);
        let b_value = Bitmap::from_words(words, kept);
        if b_value.count_ones() > 0 {
            let values = self.page_values(p, non_null, &b_value, dictionary, metrics, budget)?;
            out.push_values(values)?;
        }

        // The selected levels, compacted: record starts, presence, empty and null lists.
        let compact = |bits: &Bitmap| {
            let mut words = Vec::new();
            let m = (k.compress)(bits.words(), b_level.words(), n, &mut words);
            words.resize(m.div_ceil(64), 0);
            Bitmap::from_words(words, m)
        };
        let starts = compact(&p.record_starts);
        let valid = compact(&p.valid);
        let empty = compact(&p.empty);
        let null_list = p.null_list.as_ref().map(compact);
        for j in 0..starts.len() {
            let is_null = null_list.as_ref().is_some_and(|b| b.get(j));
            if starts.get(j) {
                out.starts.push(out.elem_valid.len());
                out.list_valid.push(!is_null);
            } else if out.starts.is_empty() {
                return Err(Error::internal(
                    "a selected level continues a list that was not read",
                ));
            }
            if !is_null && !empty.get(j) {
                out.elem_valid.push(valid.get(j));
            } else if !starts.get(j) {
                return Err(Error::corrupt(
                    "an empty or null list continues over several levels",
                ));
            }
        }
        Ok(())
    }

    /// The values of the page at the set bits of `b_value` (one bit per non-null value).
    fn page_values(
        &self,
        p: &PageLevels,
        non_null: usize,
        b_value: &Bitmap,
        dictionary: Option<&Values>,
        metrics: &MetricsCollector,
        budget: &crate::budget::Budget,
    ) -> Result<Values> {
        let leaf = self.leaf;
        if b_value.len() != non_null {
            return Err(Error::internal(format!(
                "value bitmap of {} bits for {non_null} values",
                b_value.len()
            )));
        }
        // Selection pushdown where the encoding can select (dictionary codes through the select
        // kernel, PLAIN values by a gather): only the selected values are decoded.
        let page = encoding::EncodedPage {
            column: leaf,
            data: &p.values,
            num_values: non_null,
            budget,
        };
        let ops = encoding::for_page(p.encoding, dictionary)?;
        if let Some(values) = ops.select(&page, b_value) {
            let values = values?;
            add(&metrics.values_decoded, values.len() as u64);
            return Ok(values);
        }
        add(&metrics.values_decoded, non_null as u64);
        let all = ops.decode(&page)?;
        if all.len() != non_null {
            return Err(Error::corrupt(format!(
                "page decoded to {} values where its levels announce {non_null}",
                all.len()
            )));
        }
        if b_value.count_ones() == non_null {
            return Ok(all);
        }
        let idx: Vec<u32> = b_value.iter_ones().map(|i| i as u32).collect();
        Ok(all.take(&idx))
    }
}

/// One list column chunk of a row group, read for a selection.
pub(crate) struct ListChunk<'a> {
    pub plan: ListPlan<'a>,
    pub meta: &'a ColumnChunkMetaData,
    pub reader: &'a Reader,
    pub offset_index: Option<&'a OffsetIndexMetaData>,
    pub rg_rows: usize,
    /// The row group's memory budget.
    pub budget: &'a crate::budget::Budget,
}

/// The selected lists, assembled page by page.
#[derive(Default)]
struct Assembly {
    /// First element of each selected list.
    starts: Vec<usize>,
    list_valid: Vec<bool>,
    /// One flag per element slot (null elements included).
    elem_valid: Vec<bool>,
    values: Option<Values>,
}

impl Assembly {
    fn push_values(&mut self, values: Values) -> Result<()> {
        match &mut self.values {
            None => self.values = Some(values),
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
}

/// What one data page holds, levels as bitmaps, values still encoded.
struct PageLevels {
    num_levels: usize,
    /// Levels with repetition level 0.
    record_starts: Bitmap,
    /// Definition level `max_def`, `list_def` and (nullable lists) `list_def - 1`.
    valid: Bitmap,
    empty: Bitmap,
    null_list: Option<Bitmap>,
    encoding: Encoding,
    values: Bytes,
}

impl<'a> ListChunk<'a> {
    /// The selected rows of the column as the Arrow list array the `parquet` crate's reader
    /// would return.
    pub(crate) fn project(
        &self,
        selection: &Bitmap,
        metrics: &MetricsCollector,
    ) -> Result<ArrayRef> {
        self.project_inner(selection, metrics)
            .map_err(|e| e.in_column(&self.plan.leaf.path))
    }

    fn project_inner(&self, selection: &Bitmap, metrics: &MetricsCollector) -> Result<ArrayRef> {
        if selection.len() != self.rg_rows {
            return Err(Error::internal("selection does not cover the row group"));
        }
        let mut source = ChunkPages::new(
            self.meta,
            self.reader,
            self.offset_index,
            self.rg_rows,
            self.budget,
        );
        let layout = source.indexed_layout();
        let mut pages = ListPages {
            plan: &self.plan,
            budget: self.budget,
            chunk_values: usize::try_from(self.meta.num_values()).unwrap_or(0),
            rg_rows: self.rg_rows,
            selection,
            metrics,
            out: Assembly::default(),
            dictionary: None,
            indexed: layout.as_deref(),
            row: 0,
            previous_decoded: false,
            header_rows: None,
        };
        match &layout {
            // With an OffsetIndex: only the pages holding a selected row, and the dictionary.
            Some(layout) => {
                let wanted: Vec<usize> = (0..layout.len())
                    .filter(|&i| selection.any_in(layout[i].0, layout[i].0 + layout[i].1))
                    .collect();
                add(&metrics.pages_total, layout.len() as u64);
                add(
                    &metrics.pages_skipped_payload,
                    (layout.len() - wanted.len()) as u64,
                );
                source.fetch_indexed(&wanted, true, &mut pages, metrics)?;
            }
            // Without: the chunk once, pages in order, counting records. A v2 page without a
            // selected row is skipped by its header's row count (v2 pages start on a record
            // boundary); a v1 page is decompressed to count its records.
            None => {
                source.walk(&mut pages, metrics)?;
                if pages.row != self.rg_rows {
                    return Err(Error::corrupt(format!(
                        "pages hold {} rows but the row group has {}",
                        pages.row, self.rg_rows
                    )));
                }
            }
        }
        self.plan.build(pages.out, selection.count_ones())
    }
}

/// Selects the lists of a chunk's pages as the fetcher yields them.
struct ListPages<'v, 'a> {
    plan: &'v ListPlan<'a>,
    budget: &'v crate::budget::Budget,
    chunk_values: usize,
    rg_rows: usize,
    selection: &'v Bitmap,
    metrics: &'v MetricsCollector,
    out: Assembly,
    dictionary: Option<Values>,
    /// With an offset index: each page's (first row, rows).
    indexed: Option<&'v [(usize, usize)]>,
    /// Sequential walks: the next page's first record, and whether the page before was
    /// decoded (so a record it left open can continue).
    row: usize,
    previous_decoded: bool,
    /// The row count of the page header last seen (v2 pages have one).
    header_rows: Option<usize>,
}

impl ListPages<'_, '_> {
    fn too_many_rows(&self) -> Error {
        Error::corrupt(format!(
            "pages hold more rows than the row group ({})",
            self.rg_rows
        ))
    }
}

impl PageVisitor for ListPages<'_, '_> {
    fn dictionary(&mut self, page: Page) -> Result<()> {
        if self.dictionary.is_none() {
            self.dictionary = Some(super::decode_dictionary(self.plan.leaf, page, self.budget)?);
        }
        Ok(())
    }

    fn want(&mut self, _i: usize, meta: &PageMetadata) -> Result<bool> {
        add(&self.metrics.pages_total, 1);
        self.header_rows = meta.num_rows;
        if let Some(rows) = meta.num_rows {
            if self.row.checked_add(rows).is_none_or(|e| e > self.rg_rows) {
                return Err(self.too_many_rows());
            }
            return Ok(self.selection.any_in(self.row, self.row + rows));
        }
        Ok(true)
    }

    fn skipped(&mut self, _i: usize, meta: &PageMetadata) -> Result<()> {
        add(&self.metrics.pages_skipped_payload, 1);
        self.row += meta.num_rows.unwrap_or(0);
        self.previous_decoded = false;
        Ok(())
    }

    fn page(&mut self, i: usize, page: Page) -> Result<()> {
        let p = self
            .plan
            .page_levels(page, self.chunk_values, self.budget)?;
        let records = p.record_starts.count_ones();
        let continues = p.num_levels > 0 && !p.record_starts.get(0);
        let first_row = match self.indexed {
            Some(layout) => {
                let (first_row, rows) = layout[i];
                if continues {
                    return Err(Error::corrupt(
                        "page starts inside a record, though the offset index gives its first row",
                    ));
                }
                if records != rows {
                    return Err(Error::corrupt(format!(
                        "page holds {records} records, the offset index says {rows}"
                    )));
                }
                first_row
            }
            None => {
                if continues && !self.previous_decoded {
                    return Err(Error::corrupt(if self.row == 0 {
                        "the first page starts inside a record"
                    } else {
                        "a data page v2 starts inside a record"
                    }));
                }
                if let Some(rows) = self.header_rows.filter(|&r| r != records) {
                    return Err(Error::corrupt(format!(
                        "page holds {records} records, its header says {rows}"
                    )));
                }
                if self
                    .row
                    .checked_add(records)
                    .is_none_or(|e| e > self.rg_rows)
                {
                    return Err(self.too_many_rows());
                }
                self.row
            }
        };
        self.plan.select_page(
            &p,
            first_row,
            self.selection,
            self.dictionary.as_ref(),
            self.metrics,
            &mut self.out,
            self.budget,
        )?;
        if self.indexed.is_none() {
            self.row += records;
            self.previous_decoded = true;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::leaf_columns;
    use arrow::array::{Array, Int32Builder, ListBuilder};
    use parquet::arrow::parquet_to_arrow_schema;
    use parquet::encodings::levels::LevelEncoder;
    use parquet::schema::parser::parse_message_type;
    use parquet::schema::types::SchemaDescriptor;
    use proptest::prelude::*;

    /// The list shapes of one repeated level: (schema, list nullable, element nullable).
    const SHAPES: [(&str, bool, bool); 6] = [
        (
            "optional group l (LIST) { repeated group list { optional int32 element; } }",
            true,
            true,
        ),
        (
            "optional group l (LIST) { repeated group list { required int32 element; } }",
            true,
            false,
        ),
        (
            "required group l (LIST) { repeated group list { optional int32 element; } }",
            false,
            true,
        ),
        (
            "required group l (LIST) { repeated group list { required int32 element; } }",
            false,
            false,
        ),
        (
            "optional group l (LIST) { repeated int32 element; }",
            true,
            false,
        ),
        ("repeated int32 l;", false, false),
    ];

    type Record = Option<Vec<Option<i32>>>;

    fn schema(shape: usize) -> SchemaDescriptor {
        let text = format!("message m {{ {} }}", SHAPES[shape].0);
        SchemaDescriptor::new(Arc::new(parse_message_type(&text).unwrap()))
    }

    /// Dremel encoding of one list level: (rep, def) per level and the present values.
    fn levels_of(records: &[Record], lv: ListLevels) -> (Vec<i16>, Vec<i16>, Vec<i32>) {
        let (mut reps, mut defs, mut values) = (Vec::new(), Vec::new(), Vec::new());
        for r in records {
            match r {
                None => {
                    reps.push(0);
                    defs.push(lv.list_def - 1);
                }
                Some(v) if v.is_empty() => {
                    reps.push(0);
                    defs.push(lv.list_def);
                }
                Some(v) => {
                    for (i, e) in v.iter().enumerate() {
                        reps.push((i > 0) as i16);
                        match e {
                            Some(x) => {
                                defs.push(lv.max_def);
                                values.push(*x);
                            }
                            None => defs.push(lv.max_def - 1),
                        }
                    }
                }
            }
        }
        (reps, defs, values)
    }

    fn hybrid(levels: &[i16], max: i16, v1: bool) -> Vec<u8> {
        let mut enc = if v1 {
            LevelEncoder::v1_streaming(max)
        } else {
            LevelEncoder::v2_streaming(max)
        };
        enc.put_with_observer(levels, |_, _| {});
        enc.consume()
    }

    /// A PLAIN data page (v1 or v2) of levels `range`.
    fn page(reps: &[i16], defs: &[i16], values: &[i32], max_def: i16, v1: bool) -> Page {
        let plain: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let (r, d) = (hybrid(reps, 1, v1), hybrid(defs, max_def, v1));
        let mut buf = r.clone();
        buf.extend(&d);
        buf.extend(&plain);
        if v1 {
            Page::DataPage {
                buf: buf.into(),
                num_values: reps.len() as u32,
                encoding: Encoding::PLAIN,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            }
        } else {
            Page::DataPageV2 {
                buf: buf.into(),
                num_values: reps.len() as u32,
                encoding: Encoding::PLAIN,
                num_nulls: 0,
                num_rows: reps.iter().filter(|&&r| r == 0).count() as u32,
                def_levels_byte_len: d.len() as u32,
                rep_levels_byte_len: r.len() as u32,
                is_compressed: false,
                statistics: None,
            }
        }
    }

    fn arb_records(
        list_nullable: bool,
        element_nullable: bool,
    ) -> impl Strategy<Value = Vec<Record>> {
        let element: BoxedStrategy<Option<i32>> = if element_nullable {
            prop_oneof![4 => any::<i32>().prop_map(Some), 1 => Just(None)].boxed()
        } else {
            any::<i32>().prop_map(Some).boxed()
        };
        let len = prop_oneof![6 => 0usize..4, 2 => 0usize..70, 1 => 60usize..300];
        let list =
            len.prop_flat_map(move |n| prop::collection::vec(element.clone(), n).prop_map(Some));
        let record: BoxedStrategy<Record> = if list_nullable {
            prop_oneof![6 => list, 1 => Just(None)].boxed()
        } else {
            list.boxed()
        };
        prop::collection::vec(record, 0..120)
    }

    fn expected(records: &[Record], selection: &Bitmap, item: FieldRef) -> ArrayRef {
        let mut b = ListBuilder::new(Int32Builder::new()).with_field(item);
        for (i, r) in records.iter().enumerate() {
            if !selection.get(i) {
                continue;
            }
            match r {
                None => b.append(false),
                Some(v) => {
                    for e in v {
                        b.values().append_option(*e);
                    }
                    b.append(true);
                }
            }
        }
        Arc::new(b.finish())
    }

    /// (shape, records, page cuts, v1 or v2 per page, selection seed, dense selection)
    type Case = (usize, Vec<Record>, Vec<usize>, Vec<bool>, u64, bool);

    fn case() -> impl Strategy<Value = Case> {
        (0..SHAPES.len()).prop_flat_map(|shape| {
            let (_, ln, en) = SHAPES[shape];
            (
                Just(shape),
                arb_records(ln, en),
                prop::collection::vec(any::<usize>(), 0..6),
                prop::collection::vec(any::<bool>(), 0..6),
                any::<u64>(),
                any::<bool>(),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Algorithm 4 page by page, with pages cut anywhere (records continuing into the next
        /// page included), v1 and v2 levels, random selections: exactly the selected lists.
        #[test]
        fn pages_cut_anywhere_select_the_right_lists(
            (shape, records, cuts, v1s, seed, dense) in case()
        ) {
            let descr = schema(shape);
            let leaves = leaf_columns(&descr);
            let arrow = parquet_to_arrow_schema(&descr, None).unwrap();
            let field = arrow.field(0);
            let root = descr.root_schema().get_fields()[0].clone();
            let plan = ListPlan::new(&leaves, 0, &root, field).expect("a list of one level");
            prop_assert_eq!(
                (plan.levels.list_nullable, plan.levels.element_nullable),
                (SHAPES[shape].1, SHAPES[shape].2)
            );
            let (reps, defs, values) = levels_of(&records, plan.levels);
            // Random selection: sparse or dense, from a seeded xorshift.
            let mut x = seed | 1;
            let bools: Vec<bool> = records
                .iter()
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if dense { x % 4 != 0 } else { x % 5 == 0 }
                })
                .collect();
            let selection = Bitmap::from_bools(&bools);
            // Page boundaries at arbitrary levels.
            let n = reps.len();
            let mut bounds: Vec<usize> = cuts.iter().map(|c| if n == 0 { 0 } else { c % n }).collect();
            bounds.push(0);
            bounds.push(n);
            bounds.sort();
            bounds.dedup();
            let metrics = MetricsCollector::default();
            let mut out = Assembly::default();
            let mut row = 0usize;
            let mut value = 0usize;
            for (p, w) in bounds.windows(2).enumerate() {
                let (a, b) = (w[0], w[1]);
                let present = defs[a..b].iter().filter(|&&d| d == plan.levels.max_def).count();
                let v1 = v1s.get(p).copied().unwrap_or(true);
                let pg = page(&reps[a..b], &defs[a..b], &values[value..value + present], plan.levels.max_def, v1);
                value += present;
                let budget = crate::budget::Budget::default();
                let lv = plan.page_levels(pg, n, &budget).unwrap();
                plan.select_page(&lv, row, &selection, None, &metrics, &mut out, &budget).unwrap();
                row += lv.record_starts.count_ones();
            }
            prop_assert_eq!(row, records.len());
            let got = plan.build(out, selection.count_ones()).unwrap();
            let want = expected(&records, &selection, plan.item.clone());
            prop_assert_eq!(got.data_type(), field.data_type());
            prop_assert_eq!(got.as_ref(), want.as_ref());
        }
    }

    #[test]
    fn shapes_outside_the_scope_are_refused() {
        for text in [
            // Two repeated levels.
            "optional group l (LIST) { repeated group list { optional group element (LIST) { repeated group list { optional int32 element; } } } }",
            // A list of structs.
            "optional group l (LIST) { repeated group list { optional group element { optional int32 a; } } }",
            // A map.
            "optional group m (MAP) { repeated group key_value { required int32 key; optional int32 value; } }",
            // A struct holding a list.
            "optional group s { optional group l (LIST) { repeated group list { optional int32 element; } } }",
            // A flat column.
            "optional int32 x;",
        ] {
            let descr = SchemaDescriptor::new(Arc::new(
                parse_message_type(&format!("message m {{ {text} }}")).unwrap(),
            ));
            let leaves = leaf_columns(&descr);
            let arrow = parquet_to_arrow_schema(&descr, None).unwrap();
            let root = descr.root_schema().get_fields()[0].clone();
            assert!(ListPlan::new(&leaves, 0, &root, arrow.field(0)).is_none(), "{text}");
        }
    }

    #[test]
    fn first_page_inside_a_record_is_an_error() {
        let descr = schema(3);
        let leaves = leaf_columns(&descr);
        let arrow = parquet_to_arrow_schema(&descr, None).unwrap();
        let root = descr.root_schema().get_fields()[0].clone();
        let plan = ListPlan::new(&leaves, 0, &root, arrow.field(0)).unwrap();
        let lv = plan
            .page_levels(
                page(&[1, 0], &[1, 1], &[1, 2], 1, true),
                2,
                &Default::default(),
            )
            .unwrap();
        let mut out = Assembly::default();
        let e = plan
            .select_page(
                &lv,
                0,
                &Bitmap::new_set(1),
                None,
                &MetricsCollector::default(),
                &mut out,
                &Default::default(),
            )
            .unwrap_err();
        assert!(e.message.contains("inside a record"), "{}", e.message);
        // More levels than the column chunk announces: refused before sizing anything.
        assert!(plan
            .page_levels(
                page(&[0, 1], &[1, 1], &[1, 2], 1, true),
                1,
                &Default::default()
            )
            .is_err());
    }
}
