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

pub mod adapt;
pub mod filter;
pub mod project;
pub mod repeated;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use parquet::basic::Encoding;
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::page_index::offset_index::OffsetIndexMetaData;
use parquet::file::serialized_reader::SerializedPageReader;

use crate::encoding;
use crate::error::{Error, Result};
use crate::io::{FetchedRanges, FileSource};
use crate::levels;
use crate::metrics::{add, MetricsCollector};
use crate::schema::LeafColumn;
use crate::selection::{Bitmap, Selection};
use crate::values::Values;

/// Rows a page must be loaded for: a filter's alive bitmap or the final [`Selection`].
pub trait RowSet {
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
pub struct PageFrame {
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

impl PageFrame {
    pub fn is_dictionary_encoded(&self) -> bool {
        matches!(
            self.encoding,
            Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY
        )
    }
}

/// The offset index if it describes the chunk sensibly — pages start at increasing rows inside
/// the row group, the first at row 0 — else `None` (fail open: read the chunk in order).
pub(crate) fn usable_offset_index(
    offset_index: Option<&OffsetIndexMetaData>,
    rg_rows: usize,
) -> Option<&OffsetIndexMetaData> {
    offset_index.filter(|oi| {
        let locs = oi.page_locations();
        !locs.is_empty()
            && locs[0].first_row_index == 0
            && locs
                .windows(2)
                .all(|w| w[0].first_row_index < w[1].first_row_index)
            && locs
                .last()
                .is_some_and(|l| (l.first_row_index as usize) < rg_rows.max(1))
    })
}

/// The chunk's byte range `(start, end)`, checked against the file length.
pub(crate) fn chunk_range(meta: &ColumnChunkMetaData, source: &FileSource) -> Result<(u64, u64)> {
    let (start, len) = meta.byte_range();
    match start.checked_add(len).filter(|&e| e <= source_len(source)) {
        Some(end) => Ok((start, end)),
        None => Err(Error::corrupt(format!(
            "column chunk byte range {start}+{len} lies beyond the end of the file"
        ))),
    }
}

pub(crate) fn source_len(source: &FileSource) -> u64 {
    parquet::file::reader::Length::len(source)
}

/// Pages of one column chunk, loaded on demand.
pub struct ColumnChunk<'a> {
    pub leaf: &'a LeafColumn,
    meta: &'a ColumnChunkMetaData,
    source: &'a FileSource,
    offset_index: Option<&'a OffsetIndexMetaData>,
    rg_rows: usize,
    /// Decoded dictionary page, if the chunk has one and it was needed.
    pub dictionary: Option<Arc<Values>>,
    /// Loaded pages by page number.
    pub pages: BTreeMap<usize, PageFrame>,
    /// Raw bytes of the dictionary page, once fetched.
    dict_bytes: Option<(u64, Bytes)>,
    /// Raw bytes of the whole chunk (no offset index), once fetched.
    chunk_bytes: Option<(u64, Bytes)>,
    /// Without an offset index: (first_row, rows) of every page, once known.
    layout: Option<Vec<(usize, usize)>>,
}

impl<'a> ColumnChunk<'a> {
    pub fn new(
        leaf: &'a LeafColumn,
        meta: &'a ColumnChunkMetaData,
        source: &'a FileSource,
        offset_index: Option<&'a OffsetIndexMetaData>,
        rg_rows: usize,
    ) -> Self {
        let offset_index = usable_offset_index(offset_index, rg_rows);
        ColumnChunk {
            leaf,
            meta,
            source,
            offset_index,
            rg_rows,
            dictionary: None,
            pages: BTreeMap::new(),
            dict_bytes: None,
            chunk_bytes: None,
            layout: None,
        }
    }

    /// Row ranges `(first_row, rows)` of the pages, if known without reading them.
    pub fn page_layout(&self) -> Option<Vec<(usize, usize)>> {
        if let Some(oi) = self.offset_index {
            let locs = oi.page_locations();
            return Some(
                locs.iter()
                    .enumerate()
                    .map(|(i, l)| {
                        let start = l.first_row_index as usize;
                        let end = locs
                            .get(i + 1)
                            .map_or(self.rg_rows, |n| n.first_row_index as usize);
                        (start, end.saturating_sub(start))
                    })
                    .collect(),
            );
        }
        self.layout.clone()
    }

    fn context(&self, e: impl Into<Error>) -> Error {
        e.into().in_column(&self.leaf.path)
    }

    /// Makes sure every page holding a row set in `needed` is loaded.
    pub fn ensure(&mut self, needed: &impl RowSet, metrics: &MetricsCollector) -> Result<()> {
        self.ensure_inner(needed, metrics)
            .map_err(|e| self.context(e))
    }

    fn ensure_inner(&mut self, needed: &impl RowSet, metrics: &MetricsCollector) -> Result<()> {
        if self.offset_index.is_some() {
            self.ensure_indexed(needed, metrics)
        } else {
            self.ensure_sequential(needed, metrics)
        }
    }

    fn chunk_range(&self) -> Result<(u64, u64)> {
        chunk_range(self.meta, self.source)
    }

    fn source_len(&self) -> u64 {
        source_len(self.source)
    }

    fn ensure_indexed(&mut self, needed: &impl RowSet, metrics: &MetricsCollector) -> Result<()> {
        let oi = self.offset_index.expect("indexed mode");
        let locs = oi.page_locations();
        let layout = self.page_layout().unwrap_or_default();
        let wanted: Vec<usize> = layout
            .iter()
            .enumerate()
            .filter(|(i, (s, n))| !self.pages.contains_key(i) && needed.any_in(*s, s + n))
            .map(|(i, _)| i)
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let (chunk_start, chunk_end) = self.chunk_range()?;
        // The dictionary page (if any) sits between the chunk start and the first data page.
        let first_page = locs[0].offset as u64;
        if first_page > chunk_start && self.dict_bytes.is_none() {
            if first_page > chunk_end {
                return Err(Error::corrupt(
                    "offset index points outside the column chunk",
                ));
            }
            let dict = self.source.read_range(chunk_start..first_page)?;
            self.dict_bytes = Some((chunk_start, dict));
        }
        let mut ranges = Vec::with_capacity(wanted.len());
        for &i in &wanted {
            let l = &locs[i];
            let start = l.offset as u64;
            let end = start.checked_add(l.compressed_page_size.max(0) as u64);
            match end {
                Some(end) if start >= chunk_start && end <= chunk_end => ranges.push(start..end),
                _ => {
                    return Err(Error::corrupt(format!(
                        "page {i} lies outside its column chunk"
                    )))
                }
            }
        }
        let fetched = self.source.read_ranges(&ranges, crate::io::COALESCE_GAP)?;
        let mut pieces: Vec<(u64, Bytes)> = self.dict_bytes.iter().cloned().collect();
        pieces.extend(fetched.into_pieces());
        let reader = Arc::new(FetchedRanges::from_pieces(pieces, self.source_len()));
        let mut pages =
            SerializedPageReader::new(reader, self.meta, self.rg_rows, Some(locs.clone()))?;
        if first_page > chunk_start {
            let page = pages.get_next_page()?;
            self.take_dictionary(page)?;
        }
        let last = *wanted.last().expect("non-empty");
        let mut want = wanted.iter().peekable();
        for (i, &(first_row, rows)) in layout.iter().enumerate().take(last + 1) {
            if want.peek() == Some(&&i) {
                want.next();
                let page = pages.get_next_page()?.ok_or_else(|| {
                    Error::corrupt(format!("page {i} announced by the offset index is missing"))
                })?;
                let frame = self
                    .frame(page, first_row, Some(rows))
                    .map_err(|e| e.in_page(i))?;
                add(&metrics.pages_read, 1);
                self.pages.insert(i, frame);
            } else {
                pages.skip_next_page()?;
            }
        }
        Ok(())
    }

    fn ensure_sequential(
        &mut self,
        needed: &impl RowSet,
        metrics: &MetricsCollector,
    ) -> Result<()> {
        if let Some(layout) = &self.layout {
            let missing = layout
                .iter()
                .enumerate()
                .any(|(i, (s, n))| !self.pages.contains_key(&i) && needed.any_in(*s, s + n));
            if !missing {
                return Ok(());
            }
        }
        if self.chunk_bytes.is_none() {
            let (start, end) = self.chunk_range()?;
            let bytes = self.source.read_range(start..end)?;
            self.chunk_bytes = Some((start, bytes));
        }
        let pieces = self.chunk_bytes.iter().cloned().collect();
        let reader = Arc::new(FetchedRanges::from_pieces(pieces, self.source_len()));
        let mut pages = SerializedPageReader::new(reader, self.meta, self.rg_rows, None)?;
        let mut layout = Vec::new();
        let mut row = 0usize;
        while let Some(meta) = pages.peek_next_page()? {
            if meta.is_dict {
                let page = pages.get_next_page()?;
                if self.dictionary.is_none() {
                    self.take_dictionary(page)?;
                }
                continue;
            }
            let i = layout.len();
            // Flat columns: one level per row.
            let rows = meta.num_rows.or(meta.num_levels);
            let wanted = !self.pages.contains_key(&i)
                && match rows {
                    Some(n) => needed.any_in(row, row + n),
                    None => true,
                };
            let rows = if wanted {
                let page = pages
                    .get_next_page()?
                    .ok_or_else(|| Error::corrupt("page vanished"))?;
                let frame = self.frame(page, row, None).map_err(|e| e.in_page(i))?;
                add(&metrics.pages_read, 1);
                let n = frame.num_rows;
                self.pages.insert(i, frame);
                n
            } else {
                pages.skip_next_page()?;
                rows.unwrap_or(0)
            };
            layout.push((row, rows));
            row += rows;
            if row > self.rg_rows {
                return Err(Error::corrupt(format!(
                    "pages hold more rows than the row group ({})",
                    self.rg_rows
                )));
            }
        }
        if row != self.rg_rows {
            return Err(Error::corrupt(format!(
                "pages hold {row} rows but the row group has {}",
                self.rg_rows
            )));
        }
        self.layout = Some(layout);
        Ok(())
    }

    fn take_dictionary(&mut self, page: Option<Page>) -> Result<()> {
        match page {
            Some(Page::DictionaryPage {
                buf,
                num_values,
                encoding,
                ..
            }) => {
                if self.dictionary.is_none() {
                    let enc = match encoding {
                        Encoding::PLAIN_DICTIONARY | Encoding::PLAIN => Encoding::PLAIN,
                        other => other,
                    };
                    let values = encoding::decode_values(
                        enc,
                        self.leaf.physical,
                        self.leaf.type_length,
                        &buf,
                        num_values as usize,
                    )?;
                    self.dictionary = Some(Arc::new(values));
                }
                Ok(())
            }
            _ => Err(Error::corrupt(
                "expected a dictionary page at the start of the column chunk",
            )),
        }
    }

    /// Decodes the levels of a data page of a flat column.
    fn frame(&self, page: Page, first_row: usize, rows: Option<usize>) -> Result<PageFrame> {
        let max_def = self.leaf.max_def;
        // Checked before any level or value is decoded: a page header's count sizes buffers.
        let announced = match &page {
            Page::DataPage { num_values, .. } | Page::DataPageV2 { num_values, .. } => {
                *num_values as usize
            }
            Page::DictionaryPage { .. } => 0,
        };
        if announced > self.rg_rows.saturating_sub(first_row) {
            return Err(Error::corrupt(format!(
                "page announces {announced} values but only {} rows of the row group remain",
                self.rg_rows.saturating_sub(first_row)
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
        if first_row
            .checked_add(num_rows)
            .is_none_or(|e| e > self.rg_rows)
        {
            return Err(Error::corrupt(
                "page rows run past the end of the row group",
            ));
        }
        let validity = validity.filter(|_| max_def > 0);
        let non_null = validity.as_ref().map_or(num_rows, |v| v.count_ones());
        let validity = validity.filter(|v| non_null != v.len());
        Ok(PageFrame {
            first_row,
            num_rows,
            validity,
            non_null,
            encoding,
            values,
            decoded: OnceLock::new(),
        })
    }

    /// Reads and decodes only the dictionary page (for dictionary pruning); `None` if the chunk
    /// has none.
    pub fn load_dictionary(&mut self) -> Result<Option<Arc<Values>>> {
        if self.dictionary.is_some() {
            return Ok(self.dictionary.clone());
        }
        let Some(dict_offset) = self.meta.dictionary_page_offset() else {
            return Ok(None);
        };
        let (chunk_start, chunk_end) = self.chunk_range().map_err(|e| self.context(e))?;
        let data_start = self.meta.data_page_offset() as u64;
        let dict_offset = dict_offset as u64;
        if dict_offset < chunk_start || data_start <= dict_offset || data_start > chunk_end {
            return Ok(None); // odd metadata: no dictionary pruning (fail open)
        }
        let bytes = self
            .source
            .read_range(chunk_start..data_start)
            .map_err(|e| self.context(e))?;
        self.dict_bytes = Some((chunk_start, bytes.clone()));
        let reader = Arc::new(FetchedRanges::from_pieces(
            vec![(chunk_start, bytes)],
            self.source_len(),
        ));
        let mut pages = SerializedPageReader::new(reader, self.meta, self.rg_rows, None)
            .map_err(|e| self.context(e))?;
        match pages.peek_next_page() {
            Ok(Some(m)) if m.is_dict => {}
            _ => return Ok(None),
        }
        let page = pages.get_next_page().map_err(|e| self.context(e))?;
        self.take_dictionary(page).map_err(|e| self.context(e))?;
        Ok(self.dictionary.clone())
    }

    /// The dense decoded values of a page (dictionary pages are looked up), and how many values
    /// this call decoded (0 when they were already decoded).
    pub fn decode_page(&self, frame: &PageFrame) -> Result<(Arc<Values>, usize)> {
        if let Some(v) = frame.decoded.get() {
            return Ok((v.clone(), 0));
        }
        let values = if frame.is_dictionary_encoded() {
            encoding::dictionary::gather(self.dictionary_for(frame)?, &self.page_codes(frame)?)
        } else {
            encoding::decode_values(
                frame.encoding,
                self.leaf.physical,
                self.leaf.type_length,
                &frame.values,
                frame.non_null,
            )?
        };
        if values.len() != frame.non_null {
            return Err(Error::corrupt(format!(
                "page decoded to {} values where its levels announce {}",
                values.len(),
                frame.non_null
            )));
        }
        let values = Arc::new(values);
        let _ = frame.decoded.set(values.clone());
        Ok((values, frame.non_null))
    }

    /// The dictionary codes of a dictionary-encoded page, checked against the dictionary's size.
    pub fn page_codes(&self, frame: &PageFrame) -> Result<Vec<u32>> {
        let dict = self.dictionary_for(frame)?;
        let mut codes = Vec::with_capacity(frame.non_null);
        encoding::dictionary::decode_codes(&frame.values, frame.non_null, dict.len(), &mut codes)?;
        Ok(codes)
    }

    pub fn dictionary_for(&self, _frame: &PageFrame) -> Result<&Values> {
        self.dictionary
            .as_deref()
            .ok_or_else(|| Error::corrupt("dictionary-encoded page without a dictionary page"))
    }
}
