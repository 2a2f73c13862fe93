//! Column-chunk reader for flat columns: fetches only the pages that hold rows still needed,
//! decompresses them once (through the `parquet` crate's page reader), decodes their levels, and
//! keeps them for every filter and the projection of the same row group.
//!
//! ```text
//! needed rows ──► pages (OffsetIndex: first_row_index) ──► byte ranges ──► FetchedRanges
//!             ──► SerializedPageReader (headers, decompression) ──► PageFrame { validity, values }
//! ```
//!
//! Without an OffsetIndex the whole chunk is read once, and pages without needed rows are still
//! skipped by header (not decompressed).

pub(crate) mod adapt;
pub(crate) mod arrays;
pub(crate) mod filter;
mod inflate;
pub(crate) mod pages;
pub(crate) mod project;
pub(crate) mod repeated;
pub(crate) mod sparse;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use parquet::basic::Encoding;
use parquet::column::page::{Page, PageMetadata};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::page_index::offset_index::OffsetIndexMetaData;

use crate::budget::Budget;
use crate::encoding::{self, EncodedPage, PageEncoding};
use crate::error::{Error, Result};
use crate::io::{FetchedRanges, Reader};
use crate::levels;
use crate::metrics::MetricsCollector;
use crate::schema::LeafColumn;
use crate::selection::{Bitmap, Selection};
use crate::values::Values;

use pages::{ChunkPages, PageVisitor};

/// Rows a page must be loaded for: a filter's alive bitmap or the final [`Selection`].
pub(crate) trait RowSet {
    fn any_in(&self, start: usize, end: usize) -> bool;
}

impl RowSet for Bitmap {
    fn any_in(&self, start: usize, end: usize) -> bool {
        Bitmap::any_in(self, start, end)
    }
}

impl RowSet for Selection {
    fn any_in(&self, start: usize, end: usize) -> bool {
        Selection::any_in(self, start, end)
    }
}

/// One data page of a flat column: decompressed, levels decoded, values still encoded.
#[derive(Debug, Clone)]
pub(crate) struct PageFrame {
    /// The page's number in its column chunk (data pages only), for errors.
    pub page: usize,
    pub first_row: usize,
    pub num_rows: usize,
    /// `None` when every row of the page is non-null.
    pub validity: Option<Bitmap>,
    pub non_null: usize,
    pub encoding: Encoding,
    /// The encoded values, after the levels.
    pub values: Bytes,
    /// The decoded values of a non-dictionary page, kept once decoded so that every filter on
    /// the column and its projection decode the page once.
    pub decoded: OnceLock<Arc<Values>>,
}

/// Pages of one column chunk, loaded on demand.
pub(crate) struct ColumnChunk<'a> {
    pub leaf: &'a LeafColumn,
    /// The row group's memory budget: every decoded buffer is reserved here first.
    pub budget: &'a Budget,
    source: ChunkPages<'a>,
    rg_rows: usize,
    /// Decoded dictionary page, if the chunk has one and it was needed.
    pub dictionary: Option<Arc<Values>>,
    /// Loaded pages by page number.
    pub pages: BTreeMap<usize, PageFrame>,
    /// Without an offset index: (first_row, rows) of every page, once known.
    layout: Option<Vec<(usize, usize)>>,
}

impl<'a> ColumnChunk<'a> {
    pub(crate) fn new(
        leaf: &'a LeafColumn,
        meta: &'a ColumnChunkMetaData,
        reader: &'a Reader,
        offset_index: Option<&'a OffsetIndexMetaData>,
        rg_rows: usize,
        budget: &'a Budget,
    ) -> Self {
        ColumnChunk {
            leaf,
            budget,
            source: ChunkPages::new(meta, reader, offset_index, rg_rows, budget),
            rg_rows,
            dictionary: None,
            pages: BTreeMap::new(),
            layout: None,
        }
    }

    /// Bytes of this chunk fetched by a row group's batched reads.
    pub(crate) fn offer(&mut self, fetched: &FetchedRanges) -> Result<()> {
        self.source.offer(fetched).map_err(|e| self.context(e))
    }

    /// The dictionary page's byte range, if the chunk has one.
    pub(crate) fn dictionary_range(&self) -> Option<std::ops::Range<u64>> {
        self.source.dictionary_range().ok().flatten()
    }

    /// Frees the loaded pages, and their fetched bytes, that end at or before row `row` (a
    /// projection that has passed them, range by range, needs them no more).
    pub(crate) fn release_before(&mut self, row: usize) {
        self.pages.retain(|_, f| f.first_row + f.num_rows > row);
        self.source.forget_before(row);
    }

    /// Row ranges `(first_row, rows)` of the pages, if known without reading them.
    pub(crate) fn page_layout(&self) -> Option<Vec<(usize, usize)>> {
        self.source.indexed_layout().or_else(|| self.layout.clone())
    }

    fn context(&self, e: impl Into<Error>) -> Error {
        e.into().in_column(&self.leaf.path)
    }

    /// The byte ranges [`ColumnChunk::ensure`] would read for `needed` (so a caller can batch
    /// several chunks' reads into one round trip, then [`ColumnChunk::offer`] the bytes).
    pub(crate) fn missing_ranges(&self, needed: &impl RowSet) -> Result<Vec<std::ops::Range<u64>>> {
        let wanted = self.wanted_pages(needed, |_| false);
        self.source
            .missing_ranges(&wanted, self.dictionary.is_none())
            .map_err(|e| self.context(e))
    }

    /// Asks for what reading the pages of `selection` by blocks from the page cache's
    /// directory will read to be loaded in the background (see [`sparse::advise_cached`]).
    pub(crate) fn advise_cached(&self, selection: &Selection) {
        sparse::advise_cached(self, selection);
    }

    /// The byte ranges a projection of `selection` reads first: whole pages, or for pages read
    /// by blocks (`sub_page`, see [`sparse`]) their first round (for a remote source's one
    /// batched read of every payload column).
    pub(crate) fn payload_ranges(
        &self,
        selection: &Selection,
        sub_page: bool,
    ) -> Result<Vec<std::ops::Range<u64>>> {
        if !sub_page {
            return self.missing_ranges(selection);
        }
        let sparse = sparse::plan(self, selection);
        let mut ranges = sparse::first_round(self, &sparse, selection);
        let by_blocks = |i: usize| sparse.iter().any(|p| p.page == i);
        let wanted = self.wanted_pages(selection, by_blocks);
        ranges.extend(
            self.source
                .missing_ranges(&wanted, self.dictionary.is_none())
                .map_err(|e| self.context(e))?,
        );
        Ok(ranges)
    }

    /// Pages holding a row of `needed`, not loaded and not `excluded`, by the offset index.
    fn wanted_pages(&self, needed: &impl RowSet, excluded: impl Fn(usize) -> bool) -> Vec<usize> {
        self.source
            .indexed_layout()
            .map_or_else(Vec::new, |layout| {
                layout
                    .iter()
                    .enumerate()
                    .filter(|(i, (s, n))| {
                        !self.pages.contains_key(i) && !excluded(*i) && needed.any_in(*s, s + n)
                    })
                    .map(|(i, _)| i)
                    .collect()
            })
    }

    /// Makes sure every page holding a row set in `needed` is loaded.
    pub(crate) fn ensure(
        &mut self,
        needed: &impl RowSet,
        metrics: &MetricsCollector,
    ) -> Result<()> {
        self.ensure_except(needed, |_| false, metrics)
    }

    /// [`ColumnChunk::ensure`] but for the pages `excluded` says (read by blocks instead).
    pub(crate) fn ensure_except(
        &mut self,
        needed: &impl RowSet,
        excluded: impl Fn(usize) -> bool,
        metrics: &MetricsCollector,
    ) -> Result<()> {
        self.ensure_inner(needed, excluded, metrics)
            .map_err(|e| self.context(e))
    }

    fn ensure_inner(
        &mut self,
        needed: &impl RowSet,
        excluded: impl Fn(usize) -> bool,
        metrics: &MetricsCollector,
    ) -> Result<()> {
        if let Some(layout) = self.source.indexed_layout() {
            let wanted = self.wanted_pages(needed, excluded);
            if wanted.is_empty() {
                return Ok(());
            }
            let (source, mut visitor) = self.split(needed, Some(&layout));
            let dictionary = visitor.dictionary.is_none();
            return source.fetch_indexed(&wanted, dictionary, &mut visitor, metrics);
        }
        if let Some(layout) = &self.layout {
            let missing = layout
                .iter()
                .enumerate()
                .any(|(i, (s, n))| !self.pages.contains_key(&i) && needed.any_in(*s, s + n));
            if !missing {
                return Ok(());
            }
        }
        let (source, mut visitor) = self.split(needed, None);
        source.walk(&mut visitor, metrics)?;
        let (row, walked) = (visitor.row, visitor.walked);
        if row != self.rg_rows {
            return Err(Error::corrupt(format!(
                "pages hold {row} rows but the row group has {}",
                self.rg_rows
            )));
        }
        self.layout = Some(walked);
        Ok(())
    }

    /// The page fetcher and a visitor filling this chunk's dictionary and pages (disjoint
    /// borrows of the chunk).
    fn split<'s, R: RowSet>(
        &'s mut self,
        needed: &'s R,
        indexed: Option<&'s [(usize, usize)]>,
    ) -> (&'s mut ChunkPages<'a>, FlatPages<'s, R>) {
        let visitor = FlatPages {
            leaf: self.leaf,
            budget: self.budget,
            rg_rows: self.rg_rows,
            dictionary: &mut self.dictionary,
            pages: &mut self.pages,
            needed,
            indexed,
            row: 0,
            walked: Vec::new(),
        };
        (&mut self.source, visitor)
    }

    /// Reads and decodes only the dictionary page (for dictionary pruning); `None` if the chunk
    /// has none.
    pub(crate) fn load_dictionary(&mut self) -> Result<Option<Arc<Values>>> {
        if self.dictionary.is_some() {
            return Ok(self.dictionary.clone());
        }
        let (source, mut visitor) = self.split(&NoRows, None);
        match source.fetch_dictionary(&mut visitor) {
            Ok(_) => Ok(self.dictionary.clone()),
            Err(e) => Err(self.context(e)),
        }
    }

    /// The page's encoded values and the operations its encoding offers on them.
    pub(crate) fn encoded<'f>(
        &'f self,
        frame: &'f PageFrame,
    ) -> Result<(EncodedPage<'f>, Box<dyn PageEncoding + 'f>)> {
        let page = EncodedPage {
            column: self.leaf,
            data: &frame.values,
            num_values: frame.non_null,
            budget: self.budget,
        };
        let ops = encoding::for_page(frame.encoding, self.dictionary.as_deref())
            .map_err(|e| e.in_page(frame.page))?;
        Ok((page, ops))
    }

    /// The dense decoded values of a page, and how many values this call decoded (0 when they
    /// were already decoded). They are kept on the page for every later filter and the
    /// projection.
    pub(crate) fn decode_page(&self, frame: &PageFrame) -> Result<(Arc<Values>, usize)> {
        if let Some(v) = frame.decoded.get() {
            return Ok((v.clone(), 0));
        }
        let (page, ops) = self.encoded(frame)?;
        let values = ops.decode(&page).map_err(|e| e.in_page(frame.page))?;
        if values.len() != frame.non_null {
            return Err(Error::corrupt(format!(
                "page decoded to {} values where its levels announce {}",
                values.len(),
                frame.non_null
            ))
            .in_page(frame.page));
        }
        let values = Arc::new(values);
        let _ = frame.decoded.set(values.clone());
        Ok((values, frame.non_null))
    }
}

/// No rows (for fetches that want only the dictionary).
struct NoRows;

impl RowSet for NoRows {
    fn any_in(&self, _: usize, _: usize) -> bool {
        false
    }
}

/// Turns a flat chunk's pages into [`PageFrame`]s: with an offset index, at the rows it gives;
/// in a sequential walk, counting rows and skipping pages without a needed row by header.
struct FlatPages<'v, R: RowSet> {
    leaf: &'v LeafColumn,
    budget: &'v Budget,
    rg_rows: usize,
    dictionary: &'v mut Option<Arc<Values>>,
    pages: &'v mut BTreeMap<usize, PageFrame>,
    needed: &'v R,
    indexed: Option<&'v [(usize, usize)]>,
    /// Sequential walks: the next page's first row, and the layout so far.
    row: usize,
    walked: Vec<(usize, usize)>,
}

impl<R: RowSet> FlatPages<'_, R> {
    fn advance(&mut self, rows: usize) -> Result<()> {
        self.walked.push((self.row, rows));
        // A header's count is an i32 cast to usize: a negative one is near usize::MAX.
        self.row = self.row.saturating_add(rows);
        if self.row > self.rg_rows {
            return Err(Error::corrupt(format!(
                "pages hold more rows than the row group ({})",
                self.rg_rows
            )));
        }
        Ok(())
    }
}

impl<R: RowSet> PageVisitor for FlatPages<'_, R> {
    fn dictionary(&mut self, page: Page) -> Result<()> {
        if self.dictionary.is_none() {
            *self.dictionary = Some(Arc::new(decode_dictionary(self.leaf, page, self.budget)?));
        }
        Ok(())
    }

    fn want(&mut self, i: usize, meta: &PageMetadata) -> Result<bool> {
        // Flat columns: one level per row.
        let rows = meta.num_rows.or(meta.num_levels);
        Ok(!self.pages.contains_key(&i)
            && match rows {
                // Saturating: a negative count in the header (found by `tamis-fuzz`) is huge.
                Some(n) => self.needed.any_in(self.row, self.row.saturating_add(n)),
                None => true,
            })
    }

    fn page(&mut self, i: usize, page: Page) -> Result<()> {
        let frame = match self.indexed {
            Some(layout) => {
                let (first_row, rows) = layout[i];
                frame(self.leaf, self.rg_rows, page, i, first_row, Some(rows))?
            }
            None => {
                let f = frame(self.leaf, self.rg_rows, page, i, self.row, None)?;
                self.advance(f.num_rows)?;
                f
            }
        };
        self.pages.insert(i, frame);
        Ok(())
    }

    fn skipped(&mut self, _i: usize, meta: &PageMetadata) -> Result<()> {
        self.advance(meta.num_rows.or(meta.num_levels).unwrap_or(0))
    }
}

/// Decodes a dictionary page's entries.
///
/// The format allows PLAIN (PLAIN_DICTIONARY in old writers) only, and PLAIN values take at
/// least a known number of bytes each, so the header's value count is checked against the
/// page's bytes before anything is sized from it.
pub(crate) fn decode_dictionary(leaf: &LeafColumn, page: Page, budget: &Budget) -> Result<Values> {
    use parquet::basic::Type as T;
    let (buf, num_values, encoding) = pages::dictionary_parts(page)?;
    if !matches!(encoding, Encoding::PLAIN_DICTIONARY | Encoding::PLAIN) {
        return Err(Error::corrupt(format!(
            "dictionary page is {encoding}-encoded; dictionary pages are PLAIN"
        )));
    }
    // Least bits per PLAIN value: booleans are bit-packed, byte arrays have a 4-byte length.
    let min_bits: usize = match leaf.physical {
        T::BOOLEAN => 1,
        T::INT32 | T::FLOAT | T::BYTE_ARRAY => 32,
        T::INT64 | T::DOUBLE => 64,
        T::INT96 => 96,
        T::FIXED_LEN_BYTE_ARRAY => leaf.type_length.max(1).saturating_mul(8),
    };
    if num_values.saturating_mul(min_bits) > buf.len().saturating_mul(8) {
        return Err(Error::corrupt(format!(
            "dictionary page announces {num_values} entries but its {} bytes hold at most {}",
            buf.len(),
            buf.len().saturating_mul(8) / min_bits
        )));
    }
    encoding::decode_values(
        Encoding::PLAIN,
        leaf.physical,
        leaf.type_length,
        &buf,
        num_values,
        budget,
    )
}

/// Decodes the levels of a data page of a flat column.
fn frame(
    leaf: &LeafColumn,
    rg_rows: usize,
    page: Page,
    page_number: usize,
    first_row: usize,
    rows: Option<usize>,
) -> Result<PageFrame> {
    let max_def = leaf.max_def;
    // Checked before any level or value is decoded: a page header's count sizes buffers.
    let announced = match &page {
        Page::DataPage { num_values, .. } | Page::DataPageV2 { num_values, .. } => {
            *num_values as usize
        }
        Page::DictionaryPage { .. } => 0,
    };
    if announced > rg_rows.saturating_sub(first_row) {
        return Err(Error::corrupt(format!(
            "page announces {announced} values but only {} rows of the row group remain",
            rg_rows.saturating_sub(first_row)
        )));
    }
    // Definition levels straight to a validity bitmap (def == max_def), bit-parallel on the
    // packed levels (paper §5.3).
    let mut validity: Option<Bitmap> = None;
    let (num_rows, encoding, values) = match page {
        Page::DataPage {
            buf,
            num_values,
            encoding,
            def_level_encoding,
            ..
        } => {
            let n = num_values as usize;
            let (valid, used) = levels::validity_v1(&buf, def_level_encoding, max_def, n)?;
            validity = Some(valid);
            (n, encoding, buf.slice(used.min(buf.len())..))
        }
        Page::DataPageV2 {
            buf,
            num_values,
            encoding,
            def_levels_byte_len,
            rep_levels_byte_len,
            ..
        } => {
            let n = num_values as usize;
            let rep = rep_levels_byte_len as usize;
            let def_end = rep
                .checked_add(def_levels_byte_len as usize)
                .filter(|&e| e <= buf.len())
                .ok_or_else(|| Error::corrupt("level lengths exceed the page size"))?;
            if max_def > 0 {
                validity = Some(levels::validity_v2(&buf[rep..def_end], max_def, n)?);
            }
            (n, encoding, buf.slice(def_end..))
        }
        Page::DictionaryPage { .. } => {
            return Err(Error::corrupt("unexpected second dictionary page"));
        }
    };
    if let Some(expected) = rows {
        if expected != num_rows {
            return Err(Error::corrupt(format!(
                "page holds {num_rows} rows, the offset index says {expected}"
            )));
        }
    }
    if first_row.checked_add(num_rows).is_none_or(|e| e > rg_rows) {
        return Err(Error::corrupt(
            "page rows run past the end of the row group",
        ));
    }
    let validity = validity.filter(|_| max_def > 0);
    let non_null = validity.as_ref().map_or(num_rows, |v| v.count_ones());
    let validity = validity.filter(|v| non_null != v.len());
    Ok(PageFrame {
        page: page_number,
        first_row,
        num_rows,
        validity,
        non_null,
        encoding,
        values,
        decoded: OnceLock::new(),
    })
}
