//! One page plan and one fetch path for every column chunk, flat or list.
//!
//! ```text
//! OffsetIndex + wanted pages ──► byte ranges (dictionary + pages) ──► Reader (coalesced, counted)
//!                            ──► SerializedPageReader (headers, decompression) ──► visitor
//! no OffsetIndex             ──► the chunk once ──► headers walked in order; the visitor says
//!                                which pages to decompress, the others are skipped unread
//! ```
//!
//! The caller (a flat [`super::ColumnChunk`] or a [`super::repeated::ListChunk`]) decides which
//! pages it wants and what a page means; this module owns where the bytes are, fetching them
//! once, and counting the pages decompressed.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use parquet::column::page::{Page, PageMetadata, PageReader};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::page_index::offset_index::OffsetIndexMetaData;
use parquet::file::serialized_reader::SerializedPageReader;

use parquet::basic::Compression;

use super::inflate::{inflate, SnappyChoice};
use crate::budget::Budget;
use crate::cache::disk::{ByteArrays, EntryFile};
use crate::cache::{page_cache, Claim, FileKey, Lookup, PageCache};
use crate::error::{Error, Result};
use crate::file::thrift_guard::{page_sizes, PageSizes};
use crate::io::{FetchedRanges, Reader};
use crate::metrics::{add, MetricsCollector};

/// What a chunk reader does with the pages the fetcher yields.
pub(crate) trait PageVisitor {
    /// The chunk's dictionary page.
    fn dictionary(&mut self, page: Page) -> Result<()>;
    /// Sequential walks only: whether data page `i` (header `meta`) is to be decompressed.
    fn want(&mut self, i: usize, meta: &PageMetadata) -> Result<bool>;
    /// Data page `i`, decompressed.
    fn page(&mut self, i: usize, page: Page) -> Result<()>;
    /// Sequential walks only: data page `i` was skipped by its header.
    fn skipped(&mut self, _i: usize, _meta: &PageMetadata) -> Result<()> {
        Ok(())
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

/// Where one column chunk's pages are, and the bytes fetched so far.
pub(crate) struct ChunkPages<'a> {
    meta: &'a ColumnChunkMetaData,
    /// `meta` marked uncompressed, for the page readers when the chunk is compressed: they hand
    /// pages on as stored and [`inflate`] decompresses them with this thread's codec.
    stored: Option<ColumnChunkMetaData>,
    /// Sizes of every page header of the chunk, in order, once checked (sequential walks).
    chunk_headers: Vec<PageSizes>,
    reader: &'a Reader,
    offset_index: Option<&'a OffsetIndexMetaData>,
    rg_rows: usize,
    /// Bytes fetched so far (dictionary page, pages, or the whole chunk).
    fetched: FetchedRanges,
    dictionary_fetched: bool,
    whole_chunk: bool,
    /// Whether the whole chunk's page headers were checked (a chunk is walked more than once:
    /// filter, then projection).
    headers_checked: bool,
    /// The row group's budget: a page's decompression buffer must fit in what it has left.
    budget: &'a Budget,
    /// The chunk's Snappy decoder, chosen on its first pages.
    snappy: std::cell::Cell<SnappyChoice>,
    /// The page cache and this file's key in it, for a compressed chunk when the cache is on.
    cache: Option<(Arc<PageCache>, Arc<FileKey>)>,
    /// The scan keeps this chunk's pages in the page cache on their first read (its column is
    /// one the reader names).
    first_reads_kept: bool,
    /// What the last page decompressed took, in nanoseconds (kept with it in the cache: what a
    /// later hit saves).
    last_inflate_ns: std::cell::Cell<u64>,
    /// Whether the chunk's entries on the disk tier were found cold, once probed.
    disk_cold: std::cell::Cell<Option<Option<bool>>>,
}

impl<'a> ChunkPages<'a> {
    pub(crate) fn new(
        meta: &'a ColumnChunkMetaData,
        reader: &'a Reader,
        offset_index: Option<&'a OffsetIndexMetaData>,
        rg_rows: usize,
        budget: &'a Budget,
    ) -> Self {
        // Pages must also lie inside the chunk, in order: the `parquet` crate's page reader
        // subtracts the chunk start from the first page's offset (an overflow panic in a debug
        // build when the page is before it; found by `tamis-fuzz`).
        let (start, len) = meta.byte_range();
        let inside = |oi: &&OffsetIndexMetaData| {
            let mut at = start;
            oi.page_locations().iter().all(|l| {
                let (Ok(offset), Ok(size)) = (
                    u64::try_from(l.offset),
                    u64::try_from(l.compressed_page_size),
                ) else {
                    return false;
                };
                let ok = offset >= at
                    && offset
                        .checked_add(size)
                        .is_some_and(|e| e <= start.saturating_add(len));
                at = offset.saturating_add(size);
                ok
            })
        };
        let stored = (meta.compression() != Compression::UNCOMPRESSED)
            .then(|| {
                meta.clone()
                    .into_builder()
                    .set_compression(Compression::UNCOMPRESSED)
                    .build()
                    .ok()
            })
            .flatten();
        ChunkPages {
            meta,
            stored,
            chunk_headers: Vec::new(),
            reader,
            offset_index: usable_offset_index(offset_index, rg_rows).filter(inside),
            rg_rows,
            fetched: FetchedRanges::from_pieces(Vec::new(), reader.len()),
            dictionary_fetched: false,
            whole_chunk: false,
            headers_checked: false,
            budget,
            snappy: Default::default(),
            cache: None,
            first_reads_kept: false,
            last_inflate_ns: Default::default(),
            disk_cold: Default::default(),
        }
        .with_cache()
    }

    /// Uses the page cache for a compressed chunk, when the cache is on.
    fn with_cache(mut self) -> Self {
        if self.stored.is_some() {
            self.cache = page_cache().and_then(|c| {
                let key =
                    FileKey::cacheable(self.reader.location(), self.reader.source().identity())?;
                Some((c, key))
            });
            let column = self.meta.column_path().parts().first();
            self.first_reads_kept = column.is_some_and(|c| self.reader.keeps_first_reads(c));
        }
        self
    }

    /// Looks the page stored at `range` up in `cache` (counted): the page, when the cache holds
    /// one of the kind asked for (a dictionary page or a data page; anything else, which only a
    /// corrupt file's two readings could leave there, is a miss); else the claim to keep it
    /// once decompressed, which makes concurrent scans of the page wait for this one.
    fn look_up<'c>(
        &self,
        (cache, file): &'c (Arc<PageCache>, Arc<FileKey>),
        range: Range<u64>,
        dictionary: bool,
    ) -> (Option<Page>, Option<Claim<'c>>) {
        let at = (range.start, range.end - range.start);
        match cache.claim(file, at, self.first_reads_kept) {
            Lookup::Hit(hit) if matches!(hit.page, Page::DictionaryPage { .. }) == dictionary => {
                let bytes = hit.page.buffer().len() as u64;
                (self.reader).count_cache_hit(hit.from_disk, bytes, hit.inflate_ns);
                (Some(hit.page), None)
            }
            Lookup::Hit(_) => {
                self.reader.count_cache_miss();
                (None, None)
            }
            Lookup::Miss(claim) => {
                self.reader.count_cache_miss();
                (None, Some(claim))
            }
        }
    }

    /// Whether the page cache holds the page at `offset` (not counted: for planning reads).
    fn holds(&self, offset: u64) -> bool {
        self.cache
            .as_ref()
            .is_some_and(|(cache, file)| cache.contains(file, offset))
    }

    /// Whether the page cache keeps pages on disk (for reading them there by blocks).
    pub(crate) fn has_disk_tier(&self) -> bool {
        self.cache
            .as_ref()
            .is_some_and(|(cache, _)| cache.has_disk())
    }

    /// Whether the page at `offset` is in the page cache's memory tier (not counted).
    pub(crate) fn in_memory(&self, offset: u64) -> bool {
        (self.cache.as_ref()).is_some_and(|(cache, file)| cache.in_memory(file, offset))
    }

    /// The disk tier's entries of the pages at `offsets`, to be read by blocks
    /// (`column/sparse.rs`); `None` for a page without one.
    pub(crate) fn disk_entries(&self, offsets: &[u64]) -> Vec<Option<EntryFile>> {
        let cold = offsets
            .first()
            .is_some_and(|&o| self.disk_entries_cold(o) == Some(true));
        match &self.cache {
            Some((cache, file)) => cache.open_entries(file, offsets, cold),
            None => offsets.iter().map(|_| None).collect(),
        }
    }

    /// Whether the disk tier's entries of this chunk are outside the OS page cache, by the
    /// entry of the page at `offset` (probed once a chunk; `None`: no entry, or cannot tell).
    pub(crate) fn disk_entries_cold(&self, offset: u64) -> Option<bool> {
        if let Some(known) = self.disk_cold.get() {
            return known;
        }
        let cold = (self.cache.as_ref()).and_then(|(cache, file)| cache.entry_cold(file, offset));
        self.disk_cold.set(Some(cold));
        cold
    }

    /// Asks for the disk tier's entries of pages to be loaded in the background (see
    /// `DiskTier::advise_entries`), when they are cold.
    pub(crate) fn advise_disk_entries(&self, pages: &[(u64, u64, Vec<Range<u64>>)]) {
        let Some((first, ..)) = pages.first() else {
            return;
        };
        if self.disk_entries_cold(*first) != Some(true) {
            return;
        }
        if let Some((cache, file)) = &self.cache {
            cache.advise_entries(file, pages);
        }
    }

    /// Counts a page served by `bytes` read from its disk entry's blocks, whose decompression
    /// took `inflate_ns` when it was kept.
    pub(crate) fn count_cached_blocks(&self, bytes: u64, inflate_ns: u64) {
        if let Some((cache, _)) = &self.cache {
            cache.count_blocks_hit();
            self.reader.count_cache_hit(true, bytes, inflate_ns);
        }
    }

    /// A dictionary page at `offset` kept like [`Self::keep_claimed`] (anything else found
    /// where the dictionary should be is not kept: the visitor reports it).
    fn keep_dictionary(
        &self,
        claim: Option<Claim<'_>>,
        offset: u64,
        (page, own): (Page, bool),
    ) -> Page {
        match page {
            Page::DictionaryPage { .. } => self.keep_claimed(claim, offset, (page, own)),
            other => other,
        }
    }

    /// `page` (decompressed, at `offset`) kept in the page cache when it is on; the page to
    /// use in its place.
    fn keep(&self, offset: u64, page: Page) -> Page {
        match &self.cache {
            Some((cache, file)) => cache.keep(
                file,
                offset,
                page,
                self.last_inflate_ns.get(),
                self.byte_arrays(),
                self.first_reads_kept,
            ),
            None => page,
        }
    }

    /// `page` kept as [`Self::keep`] does, through `claim` when the lookup made one (`own`: its
    /// buffer is its own, exactly its size, kept as it is: [`Self::inflate_for`]).
    fn keep_claimed(
        &self,
        claim: Option<Claim<'_>>,
        offset: u64,
        (page, own): (Page, bool),
    ) -> Page {
        match claim {
            Some(claim) => claim.keep(page, own, self.last_inflate_ns.get(), self.byte_arrays()),
            None => self.keep(offset, page),
        }
    }

    /// The chunk's column when it is a flat one of variable-length byte arrays: its pages go
    /// to the disk tier with an offset table (`column/sparse.rs` reads their values by it).
    fn byte_arrays(&self) -> Option<ByteArrays> {
        let descr = self.meta.column_descr();
        (descr.physical_type() == parquet::basic::Type::BYTE_ARRAY && descr.max_rep_level() == 0)
            .then(|| ByteArrays {
                max_def: descr.max_def_level(),
            })
    }

    /// Checks the page header at `range.start` (see [`check_page_header`]) against what the
    /// row group's budget has left; `None` when the bytes are not fetched.
    fn check_page_header(&self, range: Range<u64>) -> Result<Option<PageSizes>> {
        let left = self.budget.limit().saturating_sub(self.budget.used());
        match self.fetched.slice(range) {
            Some(bytes) => check_page_header(&bytes, self.meta.compression(), left),
            None => Ok(None),
        }
    }

    /// Checks every page header of the chunk, held whole (see [`check_chunk_headers`]); returns
    /// their sizes in order.
    fn check_chunk_headers(&self, chunk: Range<u64>) -> Result<Vec<PageSizes>> {
        let left = self.budget.limit().saturating_sub(self.budget.used());
        match self.fetched.slice(chunk) {
            Some(bytes) => check_chunk_headers(&bytes, self.meta.compression(), left),
            None => Ok(Vec::new()),
        }
    }

    /// The metadata the page readers are given (see `stored`).
    fn reader_meta(&self) -> &ColumnChunkMetaData {
        self.stored.as_ref().unwrap_or(self.meta)
    }

    /// `page`, as a page reader handed it on, decompressed (see [`inflate`]).
    fn inflate(&self, page: Page, sizes: Option<&PageSizes>) -> Result<Page> {
        self.inflate_for(page, sizes, None).map(|(page, _)| page)
    }

    /// [`Self::inflate`] for a page `claim` may keep: one the memory tier will keep is
    /// decompressed into a buffer of its own, which the tier keeps without a copy (the flag).
    fn inflate_for(
        &self,
        page: Page,
        sizes: Option<&PageSizes>,
        claim: Option<&Claim<'_>>,
    ) -> Result<(Page, bool)> {
        if self.stored.is_none() {
            return Ok((page, false));
        }
        let exact = claim.is_some_and(|c| c.keeps_in_memory());
        let mut snappy = self.snappy.get();
        let t = std::time::Instant::now();
        let page = inflate(page, self.meta.compression(), sizes, &mut snappy, exact);
        self.last_inflate_ns.set(self.reader.count_inflate(t));
        self.snappy.set(snappy);
        page
    }

    pub(crate) fn meta(&self) -> &'a ColumnChunkMetaData {
        self.meta
    }

    /// The gap below which neighbouring ranges are read as one (the source's).
    pub(crate) fn coalesce_gap(&self) -> u64 {
        self.reader.coalesce_gap()
    }

    /// Bytes that arrive while the source serves one request's first byte (its cost model).
    pub(crate) fn round_trip_bytes(&self) -> u64 {
        self.reader.source().profile().round_trip_bytes()
    }

    /// Whether the byte at `offset` is in the page cache (`None`: cannot tell).
    pub(crate) fn resident(&self, offset: u64) -> Option<bool> {
        self.reader.resident(offset)
    }

    /// The bytes fetched so far.
    pub(crate) fn fetched(&self) -> &FetchedRanges {
        &self.fetched
    }

    /// Reads those of `ranges` not fetched yet, in one batched read.
    pub(crate) fn fetch(&mut self, ranges: &[Range<u64>]) -> Result<()> {
        let chunk = self.chunk_range()?;
        let missing: Vec<Range<u64>> = ranges
            .iter()
            .filter(|r| r.start >= chunk.start && r.end <= chunk.end)
            .filter(|r| self.fetched.slice((*r).clone()).is_none())
            .cloned()
            .collect();
        if !missing.is_empty() {
            let fetched = self.reader.read_ranges(&missing)?;
            self.fetched.extend(fetched.into_pieces());
        }
        Ok(())
    }

    pub(crate) fn offset_index(&self) -> Option<&'a OffsetIndexMetaData> {
        self.offset_index
    }

    /// Forgets the fetched bytes of the data pages that end at or before row `row` (with an
    /// offset index; without one the chunk is walked whole and keeps its bytes). The dictionary
    /// page, once decoded, is not read again.
    pub(crate) fn forget_before(&mut self, row: usize) {
        let (Some(oi), Some(layout)) = (self.offset_index, self.indexed_layout()) else {
            return;
        };
        let first_kept = layout.iter().position(|(s, n)| s + n > row);
        let offset = match first_kept {
            Some(i) => oi.page_locations()[i].offset.max(0) as u64,
            None => u64::MAX,
        };
        self.fetched.forget_before(offset);
    }

    /// Row ranges `(first_row, rows)` of the pages, from the offset index.
    pub(crate) fn indexed_layout(&self) -> Option<Vec<(usize, usize)>> {
        let locs = self.offset_index?.page_locations();
        Some(
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
        )
    }

    /// The chunk's byte range, checked against the file length.
    pub(crate) fn chunk_range(&self) -> Result<Range<u64>> {
        let (start, len) = self.meta.byte_range();
        match start.checked_add(len).filter(|&e| e <= self.reader.len()) {
            Some(end) => Ok(start..end),
            None => Err(Error::corrupt(format!(
                "column chunk byte range {start}+{len} lies beyond the end of the file"
            ))),
        }
    }

    /// Where the dictionary page is, if the chunk has one: before the first data page (the
    /// offset index's, else the footer's `data_page_offset`).
    pub(crate) fn dictionary_range(&self) -> Result<Option<Range<u64>>> {
        let chunk = self.chunk_range()?;
        let first_data = match self.offset_index {
            Some(oi) => oi.page_locations()[0].offset as u64,
            None => {
                if self.meta.dictionary_page_offset().is_none() {
                    return Ok(None);
                }
                self.meta.data_page_offset() as u64
            }
        };
        if first_data <= chunk.start {
            return Ok(None);
        }
        if first_data > chunk.end {
            return Err(Error::corrupt(
                "the first data page lies outside the column chunk",
            ));
        }
        Ok(Some(chunk.start..first_data))
    }

    /// Bytes fetched elsewhere — a row group's batched reads of several chunks' dictionary and
    /// data pages: the parts inside this chunk are kept.
    pub(crate) fn offer(&mut self, fetched: &FetchedRanges) -> Result<()> {
        let chunk = self.chunk_range()?;
        let mine: Vec<(u64, Bytes)> = fetched
            .pieces()
            .iter()
            .filter(|(s, b)| *s < chunk.end && s + b.len() as u64 > chunk.start)
            .cloned()
            .collect();
        if mine.is_empty() {
            return Ok(());
        }
        self.fetched.extend(mine);
        if let Some(r) = self.dictionary_range()? {
            self.dictionary_fetched |= self.fetched.slice(r).is_some();
        }
        self.whole_chunk |= self.fetched.slice(chunk).is_some();
        Ok(())
    }

    /// The byte ranges a fetch of the `wanted` pages (and the dictionary page, when
    /// `dictionary`) would still read; without an offset index, the whole chunk.
    pub(crate) fn missing_ranges(
        &self,
        wanted: &[usize],
        dictionary: bool,
    ) -> Result<Vec<Range<u64>>> {
        let chunk = self.chunk_range()?;
        let Some(oi) = self.offset_index else {
            return Ok(if self.whole_chunk {
                Vec::new()
            } else {
                vec![chunk]
            });
        };
        let mut out = Vec::new();
        if dictionary && !self.dictionary_fetched {
            out.extend(self.dictionary_range()?.filter(|r| !self.holds(r.start)));
        }
        for &i in wanted {
            if let Some(l) = oi.page_locations().get(i) {
                let start = l.offset as u64;
                if let Some(end) = start.checked_add(l.compressed_page_size.max(0) as u64) {
                    if start >= chunk.start
                        && end <= chunk.end
                        && self.fetched.slice(start..end).is_none()
                        && !self.holds(start)
                    {
                        out.push(start..end);
                    }
                }
            }
        }
        Ok(out)
    }

    fn page_reader(&self) -> Result<SerializedPageReader<FetchedRanges>> {
        let locations = self.offset_index.map(|oi| oi.page_locations().clone());
        Ok(SerializedPageReader::new(
            Arc::new(self.fetched.clone()),
            self.reader_meta(),
            self.rg_rows,
            locations,
        )?)
    }

    /// Reads only the dictionary page; `false` if the chunk has none where expected.
    pub(crate) fn fetch_dictionary(&mut self, visitor: &mut impl PageVisitor) -> Result<bool> {
        let Some(range) = self.dictionary_range()? else {
            return Ok(false);
        };
        // A miss claims the page, as `fetch_indexed` does: concurrent scans wanting the
        // dictionary wait for this one's instead of each reading it.
        let cache = self.cache.clone();
        let (hit, claim) = match &cache {
            Some(cache) => self.look_up(cache, range.clone(), true),
            None => (None, None),
        };
        if let Some(page) = hit {
            visitor.dictionary(page)?;
            return Ok(true);
        }
        if !self.dictionary_fetched {
            let bytes = self.reader.read_range(range.clone())?;
            self.fetched.extend([(range.start, bytes)]);
            self.dictionary_fetched = true;
        }
        let sizes = self.check_page_header(range.clone())?;
        // Read it without the offset index: the page reader then starts at the chunk start.
        let reader = Arc::new(self.fetched.clone());
        let mut pages = SerializedPageReader::new(reader, self.reader_meta(), self.rg_rows, None)?;
        match guard(|| pages.peek_next_page()) {
            Ok(Some(m)) if m.is_dict => {}
            _ => return Ok(false),
        }
        match guard(|| pages.get_next_page())? {
            Some(page) => {
                let page = self.inflate_for(page, sizes.as_ref(), claim.as_ref())?;
                visitor.dictionary(self.keep_dictionary(claim, range.start, page))?
            }
            None => return Ok(false),
        }
        Ok(true)
    }

    /// With an offset index: fetches the `wanted` pages (ascending), and the dictionary page
    /// when `dictionary` asks for it and it was not fetched yet, in one coalesced read; hands
    /// them to the visitor in order.
    pub(crate) fn fetch_indexed(
        &mut self,
        wanted: &[usize],
        dictionary: bool,
        visitor: &mut impl PageVisitor,
        metrics: &MetricsCollector,
    ) -> Result<()> {
        let oi = self
            .offset_index
            .ok_or_else(|| Error::internal("indexed fetch without an offset index"))?;
        let Some(&last) = wanted.last() else {
            return Ok(());
        };
        let locs = oi.page_locations();
        let chunk = self.chunk_range()?;
        let dict_range = if dictionary {
            self.dictionary_range()?
        } else {
            None
        };
        // Pages the page cache holds need neither their bytes nor decompression; those on disk
        // are asked for all at once first.
        if let Some((cache, file)) = &self.cache {
            let offsets: Vec<u64> = (dict_range.iter().map(|r| r.start))
                .chain(
                    wanted
                        .iter()
                        .filter_map(|&i| locs.get(i))
                        .map(|l| l.offset as u64),
                )
                .collect();
            cache.will_need(file, &offsets);
        }
        // A missed page is claimed until it is decompressed and kept: another scan of the same
        // page meanwhile waits for it rather than decompressing it again. Claims are taken in
        // offset order and released within this call, so two scans never wait on each other.
        let cache = self.cache.clone();
        let (dict_hit, mut dict_claim) = match (&dict_range, &cache) {
            (Some(r), Some(c)) => self.look_up(c, r.clone(), true),
            _ => (None, None),
        };
        let mut hits: Vec<Option<Page>> = Vec::with_capacity(wanted.len());
        let mut claims: Vec<Option<Claim<'_>>> = Vec::with_capacity(wanted.len());
        // The last offset looked up: a page at or before it (an offset index of zero-size or
        // repeated pages, which only a crafted file has) skips the cache rather than wait for
        // its own claim.
        let mut looked = dict_range.as_ref().map(|r| r.start);
        let mut ranges = Vec::with_capacity(wanted.len() + 1);
        if let Some(r) =
            (dict_range.clone()).filter(|_| !self.dictionary_fetched && dict_hit.is_none())
        {
            ranges.push(r);
        }
        for &i in wanted {
            let l = locs
                .get(i)
                .ok_or_else(|| Error::internal(format!("page {i} is not in the offset index")))?;
            let start = l.offset as u64;
            match start.checked_add(l.compressed_page_size.max(0) as u64) {
                Some(end) if start >= chunk.start && end <= chunk.end => {
                    let (hit, claim) = match &cache {
                        Some(c) if looked.is_none_or(|l| start > l) => {
                            looked = Some(start);
                            self.look_up(c, start..end, false)
                        }
                        _ => (None, None),
                    };
                    if hit.is_none() && self.fetched.slice(start..end).is_none() {
                        ranges.push(start..end)
                    }
                    hits.push(hit);
                    claims.push(claim);
                }
                _ => {
                    return Err(Error::corrupt(format!(
                        "page {i} lies outside its column chunk"
                    )))
                }
            }
        }
        if !ranges.is_empty() {
            let fetched = self.reader.read_ranges(&ranges)?;
            self.fetched.extend(fetched.into_pieces());
        }
        let mut dict_sizes = None;
        if let Some(r) = dict_range.as_ref().filter(|_| dict_hit.is_none()) {
            self.dictionary_fetched = true;
            dict_sizes = self.check_page_header(r.clone())?;
        }
        let mut sizes = Vec::with_capacity(wanted.len());
        for (&i, hit) in wanted.iter().zip(&hits) {
            let l = &locs[i];
            let start = l.offset as u64;
            sizes.push(match hit {
                Some(_) => None,
                None => self
                    .check_page_header(start..start + l.compressed_page_size.max(0) as u64)
                    .map_err(|e| e.in_page(i))?,
            });
        }
        let mut pages = self.page_reader()?;
        if let Some(r) = self.dictionary_range()? {
            // The page reader starts at the chunk start, with the dictionary page; skipping it
            // reads nothing.
            match (&dict_range, dict_hit) {
                (Some(_), Some(page)) => {
                    guard(|| pages.skip_next_page())?;
                    visitor.dictionary(page)?;
                }
                (Some(_), None) => {
                    if let Some(page) = guard(|| pages.get_next_page())? {
                        let claim = dict_claim.take();
                        let page = self.inflate_for(page, dict_sizes.as_ref(), claim.as_ref())?;
                        let page = self.keep_dictionary(claim, r.start, page);
                        visitor.dictionary(page)?;
                    }
                }
                (None, _) => guard(|| pages.skip_next_page())?,
            }
        }
        drop(dict_claim);
        let mut want = (wanted.iter())
            .zip(sizes.iter().zip(hits.into_iter().zip(claims)))
            .peekable();
        for (i, location) in locs.iter().enumerate().take(last + 1) {
            if let Some((_, (page_sizes, (hit, claim)))) = want.next_if(|(&w, _)| w == i) {
                let page = match hit {
                    Some(page) => {
                        guard(|| pages.skip_next_page())?;
                        page
                    }
                    None => {
                        let page = guard(|| pages.get_next_page())?.ok_or_else(|| {
                            Error::corrupt(format!(
                                "page {i} announced by the offset index is missing"
                            ))
                        })?;
                        let page = self
                            .inflate_for(page, page_sizes.as_ref(), claim.as_ref())
                            .map_err(|e| e.in_page(i))?;
                        add(&metrics.pages_read, 1);
                        self.keep_claimed(claim, location.offset as u64, page)
                    }
                };
                visitor.page(i, page).map_err(|e| e.in_page(i))?;
            } else {
                guard(|| pages.skip_next_page())?;
            }
        }
        Ok(())
    }

    /// Without an offset index: reads the whole chunk once and walks its pages in order; the
    /// visitor decides per header which to decompress.
    pub(crate) fn walk(
        &mut self,
        visitor: &mut impl PageVisitor,
        metrics: &MetricsCollector,
    ) -> Result<()> {
        if !self.whole_chunk {
            let range = self.chunk_range()?;
            let bytes = self.reader.read_range(range.clone())?;
            self.fetched =
                FetchedRanges::from_pieces(vec![(range.start, bytes)], self.reader.len());
            self.whole_chunk = true;
            self.dictionary_fetched = true;
        }
        if !self.headers_checked {
            self.chunk_headers = self.check_chunk_headers(self.chunk_range()?)?;
            self.headers_checked = true;
        }
        let reader = Arc::new(self.fetched.clone());
        let mut pages = SerializedPageReader::new(reader, self.reader_meta(), self.rg_rows, None)?;
        // Data pages counted by `i`; every page (dictionary included), in chunk order, by `at`:
        // the page reader yields them in the order their headers were checked.
        let mut i = 0usize;
        let mut at = 0usize;
        while let Some(meta) = guard(|| pages.peek_next_page())? {
            let sizes = self.chunk_headers.get(at);
            at += 1;
            if meta.is_dict {
                if let Some(page) = guard(|| pages.get_next_page())? {
                    visitor.dictionary(self.inflate(page, sizes)?)?;
                }
                continue;
            }
            if visitor.want(i, &meta).map_err(|e| e.in_page(i))? {
                let page = guard(|| pages.get_next_page())?
                    .ok_or_else(|| Error::corrupt("page vanished"))?;
                let page = self.inflate(page, sizes).map_err(|e| e.in_page(i))?;
                add(&metrics.pages_read, 1);
                visitor.page(i, page).map_err(|e| e.in_page(i))?;
            } else {
                guard(|| pages.skip_next_page())?;
                visitor.skipped(i, &meta).map_err(|e| e.in_page(i))?;
            }
            i += 1;
        }
        Ok(())
    }
}

/// Checks the page header at the start of `page` before the `parquet` crate reads the page: it
/// allocates the header's uncompressed size for the decompressed page without a check (up to
/// 2 GiB from a few bytes). A size beyond what `codec` can expand the compressed bytes to is a
/// corrupt file; one over `left` (what the memory budget has left) a resource-limit error.
/// Returns the header's sizes; `None` when the bytes are not a well-formed header (the page
/// reader then says why).
pub(crate) fn check_page_header(
    page: &[u8],
    codec: parquet::basic::Compression,
    left: usize,
) -> Result<Option<PageSizes>> {
    let Some(sizes) = page_sizes(page) else {
        return Ok(None);
    };
    if let Some(ratio) = max_compression_ratio(codec) {
        if sizes.uncompressed > sizes.compressed.saturating_mul(ratio).saturating_add(64) {
            return Err(Error::corrupt(format!(
                "the page header announces {} bytes uncompressed from {} compressed, more than \
                 {codec:?} can expand to",
                sizes.uncompressed, sizes.compressed
            )));
        }
    }
    if sizes.uncompressed > left as i64 {
        return Err(Error::resource(format!(
            "the page header announces {} bytes uncompressed, over the {left} bytes left of the \
             memory limit (raise it with Scan::memory_limit, --memory-limit or memory_limit=)",
            sizes.uncompressed
        )));
    }
    Ok(Some(sizes))
}

/// Checks every page header of a whole column chunk (see [`check_page_header`]), following the
/// headers' compressed sizes; stops where they stop making sense (the page reader then reports
/// it).
pub(crate) fn check_chunk_headers(
    chunk: &[u8],
    codec: parquet::basic::Compression,
    left: usize,
) -> Result<Vec<PageSizes>> {
    let mut at = 0usize;
    let mut all = Vec::new();
    while at < chunk.len() {
        let Some(sizes) =
            check_page_header(&chunk[at..], codec, left).map_err(|e| e.in_page(all.len()))?
        else {
            break;
        };
        let Ok(compressed) = usize::try_from(sizes.compressed) else {
            break;
        };
        at = at.saturating_add(sizes.header).saturating_add(compressed);
        all.push(sizes);
    }
    Ok(all)
}

/// The most a codec's output can exceed its input, with headroom: Snappy's densest element (a
/// 64-byte copy in 3 bytes) gives 21.3, LZ4's (a match length byte adding 255) about 255,
/// Deflate's (258 bytes per 2 bits at best) about 1032. Zstandard and Brotli encode whole runs
/// in a few bytes, so only the memory limit bounds them.
fn max_compression_ratio(codec: parquet::basic::Compression) -> Option<i64> {
    use parquet::basic::Compression as C;
    match codec {
        C::SNAPPY => Some(32),
        C::LZ4 | C::LZ4_RAW => Some(300),
        C::GZIP(_) => Some(1100),
        _ => None,
    }
}

/// Runs one call of the `parquet` crate's page reader, turning a panic into a corrupt-file error.
///
/// Its `peek_next_page` unwraps a page header's `data_page_header` (v1 or v2) when the header's
/// type says there is one: a flipped page type panics inside the crate; its page decoding adds a
/// v2 header's two level lengths as `i32` and overflows on large ones (both found by
/// `tamis-fuzz`). The scan gets an error carrying the crate's panic message, which is not
/// printed.
fn guard<T>(call: impl FnOnce() -> parquet::errors::Result<T>) -> Result<T> {
    match crate::error::quiet::catch(call) {
        Ok(r) => Ok(r?),
        Err(panic) => Err(Error::corrupt(format!(
            "malformed page header (the parquet crate's page reader cannot read it: {panic})"
        ))),
    }
}

/// A decoded dictionary page's bytes and value count, for the caller to decode.
pub(crate) fn dictionary_parts(page: Page) -> Result<(Bytes, usize, parquet::basic::Encoding)> {
    match page {
        Page::DictionaryPage {
            buf,
            num_values,
            encoding,
            ..
        } => Ok((buf, num_values as usize, encoding)),
        _ => Err(Error::corrupt(
            "expected a dictionary page at the start of the column chunk",
        )),
    }
}
