//! An opened Parquet file: its byte source, footer metadata, leaf columns and Arrow schema, and
//! its page indexes, loaded lazily per row group and column.
//!
//! Opening is one read of the file's end (the footer, and usually the page index, which writers
//! put just before it); a second only when the footer is larger. Page indexes are decoded only
//! for the chunks a query still needs after statistics pruning, from that tail when it holds
//! them, else in one coalesced read per row group together with the Bloom filters and
//! dictionaries the row group's pruning needs.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef, TimeUnit};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::basic::Type as PhysicalType;
use parquet::errors::ParquetError;
use parquet::file::metadata::{
    ColumnChunkMetaData, FileMetaData, PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader,
};
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::page_index::index_reader::{decode_column_index, decode_offset_index};
use parquet::file::page_index::offset_index::OffsetIndexMetaData;

use crate::error::{Error, Result};
use crate::io::location::FileRef;
use crate::io::{ByteSource, FetchedRanges, Reader};
use crate::schema::{leaf_columns, LeafColumn};
use thrift_guard::{check_footer_in_tail, check_page_index, footer_in_tail};

pub mod page_header;
pub mod thrift_guard;

/// Largest row group tamis scans: selections are bitmaps over a row group's rows (256 MiB at
/// this size), and page value counts are checked against it before buffers are sized.
pub const MAX_ROW_GROUP_ROWS: i64 = 1 << 31;

/// Checks the footer's counts and byte ranges before anything uses them: every row group has a
/// chunk per leaf column and a row count in `0..=MAX_ROW_GROUP_ROWS`, and every column chunk's
/// offsets and sizes are non-negative and do not overflow. (The `parquet` crate asserts on
/// negative ones inside `ColumnChunkMetaData::byte_range`, which its page reader calls: a panic
/// from data. Whether a range lies inside the file is checked where it is read.)
pub fn validate_footer(metadata: &ParquetMetaData, leaves: usize) -> Result<()> {
    for (i, rg) in metadata.row_groups().iter().enumerate() {
        if rg.num_columns() != leaves {
            return Err(Error::corrupt(format!(
                "row group {i} has {} column chunks, the schema {leaves} leaf columns",
                rg.num_columns(),
            )));
        }
        if rg.num_rows() < 0 {
            return Err(Error::corrupt(format!(
                "row group {i} has a negative row count"
            )));
        }
        if rg.num_rows() > MAX_ROW_GROUP_ROWS {
            return Err(Error::resource(format!(
                "row group {i} has {} rows; tamis handles at most {MAX_ROW_GROUP_ROWS} per row group",
                rg.num_rows()
            )));
        }
        for (c, cc) in rg.columns().iter().enumerate() {
            let bad = |what: &str, v: i64| {
                Err(
                    Error::corrupt(format!("column chunk {c} of row group {i} has {what} {v}"))
                        .in_column(cc.column_path().string()),
                )
            };
            if cc.data_page_offset() < 0 {
                return bad("a negative data page offset", cc.data_page_offset());
            }
            if let Some(d) = cc.dictionary_page_offset().filter(|&d| d < 0) {
                return bad("a negative dictionary page offset", d);
            }
            if cc.compressed_size() < 0 {
                return bad("a negative compressed size", cc.compressed_size());
            }
            if cc.num_values() < 0 {
                return bad("a negative value count", cc.num_values());
            }
            let start = cc.dictionary_page_offset().unwrap_or(cc.data_page_offset());
            if start.checked_add(cc.compressed_size()).is_none() {
                return bad("a byte range overflowing at offset", start);
            }
        }
    }
    Ok(())
}

/// Decodes the footer at the end of `tail` (the last bytes of a file of `len` bytes), or
/// `fixed`: the footer without the fields whose Thrift type is not parquet.thrift's (from
/// [`check_footer_in_tail`], see [`thrift_guard::drop_mistyped_fields`]); `NeedMoreData`
/// when `tail` does not hold all of it.
fn decode_footer(
    tail: &bytes::Bytes,
    len: u64,
    fixed: Option<Vec<u8>>,
) -> parquet::errors::Result<ParquetMetaData> {
    if let Some(footer) = fixed {
        return ParquetMetaDataReader::decode_metadata(&footer);
    }
    let mut reader = ParquetMetaDataReader::new().with_page_index_policy(PageIndexPolicy::Skip);
    reader.try_parse_sized(tail, len)?;
    reader.finish()
}

/// The footer with what pyarrow (Arrow C++) and DuckDB correct for corrected the same way,
/// before anything reads pages by it (the footer was validated; the footer itself starts at
/// `footer_start`):
///
/// - The file's row count is the sum of its row groups': those are what readers read
///   (`repeated_no_annotation.parquet` says 0 rows with 6 in its row group).
/// - A `dictionary_page_offset` inside the leading magic or after the first data page cannot
///   be where the dictionary is (Dremio writes 0): the chunk starts at its first data page,
///   where the page reader meets the dictionary page if there is one (Arrow C++ reads from
///   there too).
/// - parquet-mr before 1.2.9 left the dictionary page header out of a chunk's size
///   (PARQUET-816, IMPALA-694): as Arrow C++ does, such a chunk gets up to 100 more bytes, here
///   only up to where the next chunk (or the footer) starts, so a chunk without a dictionary
///   page, already ending there, is unchanged.
pub fn normalize_footer(metadata: ParquetMetaData, footer_start: u64) -> Result<ParquetMetaData> {
    let fm = metadata.file_metadata();
    let rows = (metadata.row_groups().iter()).try_fold(0i64, |n, g| n.checked_add(g.num_rows()));
    let fix_rows = rows.filter(|&r| r != fm.num_rows());
    let short_dictionary = parquet_mr_before_1_2_9(fm.created_by());
    let misplaced = |c: &ColumnChunkMetaData| {
        (c.dictionary_page_offset()).is_some_and(|d| d < 4 || d > c.data_page_offset())
    };
    let any_misplaced = (metadata.row_groups().iter()).any(|g| g.columns().iter().any(misplaced));
    if fix_rows.is_none() && !short_dictionary && !any_misplaced {
        return Ok(metadata);
    }
    // Where a chunk may end at most: the next chunk's start, else the footer's.
    let mut starts: Vec<u64> = (metadata.row_groups().iter())
        .flat_map(|g| g.columns().iter().map(|c| c.byte_range().0))
        .collect();
    starts.sort_unstable();
    let limit = |start: u64| {
        let next = starts.partition_point(|&s| s <= start);
        starts
            .get(next)
            .map_or(footer_start, |&s| s.min(footer_start))
    };
    let fix_chunk = |mut chunk: ColumnChunkMetaData| -> Result<ColumnChunkMetaData> {
        if misplaced(&chunk) {
            chunk = chunk
                .into_builder()
                .set_dictionary_page_offset(None)
                .build()?;
        }
        if short_dictionary {
            let (start, len) = chunk.byte_range();
            let end = start.saturating_add(len);
            let padded = end.saturating_add(100).min(limit(start));
            if padded > end {
                let size = chunk.compressed_size() + (padded - end) as i64;
                chunk = chunk
                    .into_builder()
                    .set_total_compressed_size(size)
                    .build()?;
            }
        }
        Ok(chunk)
    };
    let file_metadata = FileMetaData::new(
        fm.version(),
        fix_rows.unwrap_or(fm.num_rows()),
        fm.created_by().map(str::to_string),
        fm.key_value_metadata().cloned(),
        fm.schema_descr_ptr(),
        fm.column_orders().cloned(),
    );
    let mut groups = Vec::with_capacity(metadata.num_row_groups());
    for group in metadata.into_builder().take_row_groups() {
        let mut g = group.into_builder();
        let columns = (g.take_columns().into_iter())
            .map(fix_chunk)
            .collect::<Result<Vec<_>>>()?;
        groups.push(g.set_column_metadata(columns).build()?);
    }
    Ok(ParquetMetaData::new(file_metadata, groups))
}

/// Whether `created_by` names parquet-mr older than 1.2.9 (no version counts as older, as
/// Arrow C++ reads it), whose chunk sizes leave out the dictionary page header.
fn parquet_mr_before_1_2_9(created_by: Option<&str>) -> bool {
    let Some(rest) = created_by.and_then(|c| c.strip_prefix("parquet-mr")) else {
        return false;
    };
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return false;
    }
    let Some(version) = rest.trim_start().strip_prefix("version ") else {
        return true;
    };
    let numbers: Vec<u64> = (version.split(|c: char| !c.is_ascii_digit() && c != '.'))
        .next()
        .unwrap_or("")
        .split('.')
        .take(3)
        .map(|n| n.parse().unwrap_or(0))
        .collect();
    let v = |i: usize| numbers.get(i).copied().unwrap_or(0);
    (v(0), v(1), v(2)) < (1, 2, 9)
}

/// The Arrow view of the file: the `parquet` crate's (with the hints of an embedded Arrow
/// schema), except that every INT96 leaf, at any depth, is `Timestamp(Microsecond)` (keeping a
/// hinted time zone): the unit Spark reads, which holds the years 1 to 9999 Spark writes (the
/// nanosecond default ends in 2262). The rule depends on the schema alone, so the files of a
/// dataset agree; the crate's nested reader converts to the same unit (`scan::fallback`).
fn arrow_metadata(metadata: &Arc<ParquetMetaData>) -> Result<ArrowReaderMetadata> {
    let plain = ArrowReaderMetadata::try_new(metadata.clone(), ArrowReaderOptions::new())?;
    let descr = metadata.file_metadata().schema_descr();
    let int96: Vec<bool> = (descr.columns().iter())
        .map(|c| c.physical_type() == PhysicalType::INT96)
        .collect();
    if !int96.contains(&true) {
        return Ok(plain);
    }
    // Arrow leaves are the Parquet leaves, in the same depth-first order.
    let mut leaf = 0;
    let fields: Vec<FieldRef> = (plain.schema().fields().iter())
        .map(|f| int96_as_micros(f, &int96, &mut leaf))
        .collect();
    if leaf != int96.len() {
        return Err(Error::internal(format!(
            "the Arrow schema has {leaf} leaves, the Parquet schema {}",
            int96.len()
        )));
    }
    let schema = Schema::new_with_metadata(fields, plain.schema().metadata().clone());
    let options = ArrowReaderOptions::new().with_schema(Arc::new(schema));
    Ok(ArrowReaderMetadata::try_new(metadata.clone(), options)?)
}

/// `field` with the type of its leaves that are INT96 (`int96[leaf]`, counted from `leaf`)
/// made `Timestamp(Microsecond)`.
fn int96_as_micros(field: &FieldRef, int96: &[bool], leaf: &mut usize) -> FieldRef {
    use DataType as D;
    let mut inner = |f: &FieldRef| int96_as_micros(f, int96, leaf);
    let data_type = match field.data_type() {
        D::Struct(children) => D::Struct(children.iter().map(&mut inner).collect()),
        D::List(f) => D::List(inner(f)),
        D::LargeList(f) => D::LargeList(inner(f)),
        D::ListView(f) => D::ListView(inner(f)),
        D::LargeListView(f) => D::LargeListView(inner(f)),
        D::FixedSizeList(f, n) => D::FixedSizeList(inner(f), *n),
        D::Map(f, sorted) => D::Map(inner(f), *sorted),
        other => {
            let is_int96 = int96.get(*leaf).copied().unwrap_or(false);
            *leaf += 1;
            match other {
                D::Timestamp(_, tz) if is_int96 => D::Timestamp(TimeUnit::Microsecond, tz.clone()),
                _ => return field.clone(),
            }
        }
    };
    Arc::new(Field::clone(field).with_data_type(data_type))
}

/// The page index of one column chunk (either part may be absent).
#[derive(Debug, Default)]
pub struct ChunkIndex {
    pub column: Option<ColumnIndexMetaData>,
    pub offset: Option<OffsetIndexMetaData>,
}

pub struct OpenedFile {
    pub location: String,
    /// Where the file is (its sidecar index is beside it).
    pub file: FileRef,
    /// What the sidecar index lookup found for this file, kept with it by `index/` (which sits
    /// above this layer, hence the erased type): see `index::sidecar_of`.
    pub(crate) sidecar: OnceLock<Box<dyn std::any::Any + Send + Sync>>,
    /// Held while the sidecar is looked for, so that row groups prefetched at once wait for
    /// one lookup rather than each sending their own (two requests each on an object store).
    pub(crate) sidecar_lookup: std::sync::Mutex<()>,
    /// The sidecar's opens, sent beside the file's own open (an object's: one round trip for
    /// both), taken by the first lookup: see `index::prefetch_sidecar`.
    pub(crate) sidecar_opens: Mutex<Option<Box<dyn std::any::Any + Send + Sync>>>,
    pub source: Arc<dyn ByteSource>,
    /// The footer (without page index: see [`OpenedFile::chunk_index`]).
    pub metadata: Arc<ParquetMetaData>,
    pub arrow: ArrowReaderMetadata,
    pub leaves: Vec<LeafColumn>,
    /// The end of the file as read when opening; later reads inside it cost nothing.
    tail: Arc<FetchedRanges>,
    /// Page indexes by `row group × leaves + column`, decoded on first use.
    indexes: Vec<OnceLock<ChunkIndex>>,
    /// Bytes and requests spent opening (footer reads) and time taken.
    pub open_bytes: u64,
    pub open_requests: u64,
    pub open_ns: u64,
    /// Bytes of metadata held (footer tail and decoded index bytes), for cache budgets.
    held_bytes: AtomicU64,
    /// Bloom filters and dictionary pages read so far, when [`OpenedFile::keep_metadata`] was
    /// called (a file a `Dataset` caches); a one-off scan does not hold them.
    kept: Mutex<Option<FetchedRanges>>,
}

impl std::fmt::Debug for OpenedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedFile")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl OpenedFile {
    /// Opens a local path (for tools and tests).
    pub fn open(path: &std::path::Path) -> Result<Self> {
        Self::open_ref(&FileRef::Local(path.to_path_buf()))
    }

    pub fn open_ref(file: &FileRef) -> Result<Self> {
        let start = Instant::now();
        let location = file.location();
        let ctx = |e: Error| e.in_file(&location);
        let (source, tail_bytes) = file.open().map_err(ctx)?;
        let len = source.identity().len;
        let mut open_bytes = tail_bytes.len() as u64;
        let mut open_requests = 1;
        let mut tail_bytes = tail_bytes;
        let fixed = check_footer_in_tail(&tail_bytes).map_err(ctx)?;
        // The first read was a guess; a larger footer needs exactly one more.
        let metadata = match decode_footer(&tail_bytes, len, fixed) {
            Err(ParquetError::NeedMoreData(needed)) => {
                let needed = (needed as u64).min(len);
                let never = std::sync::atomic::AtomicBool::new(false);
                let range = len - needed..len;
                let (mut read, requests) =
                    crate::io::read_metadata(&*source, std::slice::from_ref(&range), &never)
                        .map_err(ctx)?;
                tail_bytes = read.pop().unwrap_or_default();
                if requests > 0 {
                    open_bytes += needed;
                    open_requests += 1;
                }
                let fixed = check_footer_in_tail(&tail_bytes).map_err(ctx)?;
                decode_footer(&tail_bytes, len, fixed)
            }
            other => other,
        }
        .map_err(|e| ctx(Error::from(e)))?;
        let leaves = leaf_columns(metadata.file_metadata().schema_descr());
        validate_footer(&metadata, leaves.len()).map_err(ctx)?;
        let footer_start = (len.saturating_sub(8))
            .saturating_sub(footer_in_tail(&tail_bytes).map_or(0, |f| f.len() as u64));
        let metadata = Arc::new(normalize_footer(metadata, footer_start).map_err(ctx)?);
        let arrow = arrow_metadata(&metadata).map_err(ctx)?;
        let chunks = metadata.num_row_groups() * leaves.len();
        let held = tail_bytes.len() as u64;
        let tail_start = len - tail_bytes.len() as u64;
        Ok(OpenedFile {
            location,
            file: file.clone(),
            sidecar: OnceLock::new(),
            sidecar_lookup: Default::default(),
            sidecar_opens: Mutex::new(None),
            source,
            metadata,
            arrow,
            leaves,
            tail: Arc::new(FetchedRanges::from_pieces(
                vec![(tail_start, tail_bytes)],
                len,
            )),
            indexes: (0..chunks).map(|_| OnceLock::new()).collect(),
            open_bytes,
            open_requests,
            open_ns: start.elapsed().as_nanos() as u64,
            held_bytes: AtomicU64::new(held),
            kept: Mutex::new(None),
        })
    }

    /// The file opened again from a footer read before (no I/O for objects, an `open` and a
    /// `stat` for local files): nothing is cached from its tail, so page indexes are read with
    /// each row group's first read.
    pub fn reopen(
        file: &FileRef,
        identity: &crate::io::Identity,
        metadata: Arc<ParquetMetaData>,
    ) -> Result<Self> {
        let location = file.location();
        let ctx = |e: Error| e.in_file(&location);
        let source = file.reopen(identity).map_err(ctx)?;
        let arrow = arrow_metadata(&metadata).map_err(ctx)?;
        let leaves = leaf_columns(metadata.file_metadata().schema_descr());
        let chunks = metadata.num_row_groups() * leaves.len();
        Ok(OpenedFile {
            location,
            file: file.clone(),
            sidecar: OnceLock::new(),
            sidecar_lookup: Default::default(),
            sidecar_opens: Mutex::new(None),
            tail: Arc::new(FetchedRanges::from_pieces(Vec::new(), identity.len)),
            source,
            metadata,
            arrow,
            leaves,
            indexes: (0..chunks).map(|_| OnceLock::new()).collect(),
            open_bytes: 0,
            open_requests: 0,
            open_ns: 0,
            held_bytes: AtomicU64::new(0),
            kept: Mutex::new(None),
        })
    }

    pub fn schema(&self) -> &SchemaRef {
        self.arrow.schema()
    }

    pub fn name(&self) -> String {
        self.location.clone()
    }

    pub fn len(&self) -> u64 {
        self.source.identity().len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A reader of this file with its own counters, never cancelled (for tools and tests).
    pub fn reader(&self) -> Reader {
        self.scan_reader(Default::default(), Default::default())
    }

    /// A reader for one scan: counts into `stats`, stops when `cancel` is set, and serves what
    /// the open already read from memory.
    pub fn scan_reader(
        &self,
        stats: Arc<crate::io::IoStats>,
        cancel: Arc<std::sync::atomic::AtomicBool>,
    ) -> Reader {
        Reader::new(self.source.clone(), stats, cancel).with_cached(self.tail.clone())
    }

    /// From now on, keeps the Bloom filters and dictionary pages that scans read (for a file a
    /// `Dataset` caches: repeated lookups then read only data pages).
    pub fn keep_metadata(&self) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.get_or_insert_with(|| FetchedRanges::from_pieces(Vec::new(), self.len()));
    }

    /// `range` from the tail read at open or the kept metadata, without I/O.
    fn in_memory(&self, range: &Range<u64>) -> Option<bytes::Bytes> {
        self.tail.slice(range.clone()).or_else(|| {
            let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            kept.as_ref()?.slice(range.clone())
        })
    }

    /// Bytes of metadata this file holds in memory.
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes.load(Relaxed)
    }

    /// The page index of a chunk, if loaded (see [`OpenedFile::prefetch`]).
    pub fn chunk_index(&self, rg: usize, column: usize) -> Option<&ChunkIndex> {
        self.indexes
            .get(rg * self.leaves.len() + column)
            .and_then(|c| c.get())
    }

    /// Whether every range is in memory (the tail read at open, or kept metadata).
    pub fn all_in_memory(&self, ranges: &[Range<u64>]) -> bool {
        ranges.iter().all(|r| self.in_memory(r).is_some())
    }

    /// Whether the page indexes of these chunks are decoded or inside the tail read at open
    /// (loading them costs no request).
    pub fn indexes_in_memory(&self, rg: usize, columns: &[usize]) -> bool {
        let rg_meta = self.metadata.row_group(rg);
        columns.iter().all(|&c| {
            if self.chunk_index(rg, c).is_some() {
                return true;
            }
            if c >= rg_meta.num_columns() {
                return false;
            }
            let cc = rg_meta.column(c);
            [cc.column_index_range(), cc.offset_index_range()]
                .into_iter()
                .flatten()
                .all(|r| self.tail.slice(r).is_some())
        })
    }

    /// Loads, with at most one coalesced read, the page indexes of `index_columns`, the
    /// `metadata` ranges (Bloom filters, dictionary pages: kept after [`Self::keep_metadata`])
    /// and the `pages` of row group `rg`; returns the bytes of both. Ranges in memory (the tail
    /// read at open, kept metadata) cost nothing.
    pub fn prefetch(
        &self,
        rg: usize,
        index_columns: &[usize],
        metadata: &[Range<u64>],
        pages: &[Range<u64>],
        reader: &Reader,
    ) -> Result<FetchedRanges> {
        let rg_meta = self.metadata.row_group(rg);
        // (column, column index range, offset index range)
        type Wanted = (usize, Option<Range<u64>>, Option<Range<u64>>);
        let mut wanted: Vec<Wanted> = Vec::new();
        for &c in index_columns {
            let slot = rg * self.leaves.len() + c;
            if c >= rg_meta.num_columns()
                || self.indexes.get(slot).is_none_or(|s| s.get().is_some())
            {
                continue;
            }
            let cc = rg_meta.column(c);
            let valid =
                |r: Option<Range<u64>>| r.filter(|r| r.start < r.end && r.end <= self.len());
            wanted.push((
                c,
                valid(cc.column_index_range()),
                valid(cc.offset_index_range()),
            ));
        }
        // Metadata in memory is served from there; the rest is read.
        let mut from_memory = Vec::new();
        let mut ranges: Vec<Range<u64>> = Vec::new();
        for r in metadata {
            match self.in_memory(r) {
                Some(bytes) => from_memory.push((r.start, bytes)),
                None => ranges.push(r.clone()),
            }
        }
        for (_, ci, oi) in &wanted {
            for r in [ci, oi].into_iter().flatten() {
                if self.tail.slice(r.clone()).is_none() {
                    ranges.push(r.clone());
                }
            }
        }
        let page_ranges: Vec<Range<u64>> = (pages.iter())
            .filter(|r| self.tail.slice((*r).clone()).is_none())
            .cloned()
            .collect();
        // Metadata of a remote file may come from the cache directory (`io::MetadataStore`).
        let mut fetched = if ranges.is_empty() && page_ranges.is_empty() {
            FetchedRanges::default()
        } else {
            reader.read_metadata_ranges(&ranges, &page_ranges)?
        };
        let get = |r: &Range<u64>| {
            self.tail
                .slice(r.clone())
                .or_else(|| fetched.slice(r.clone()))
        };
        for (c, ci, oi) in wanted {
            let leaf = &self.leaves[c];
            let mut index = ChunkIndex::default();
            let context = |what| move |e: Error| e.with_context_column(&leaf.path, what);
            if let Some(bytes) = ci.as_ref().and_then(get) {
                check_page_index(&bytes).map_err(context("column index"))?;
                let decoded = decode_column_index(&bytes, leaf.physical).map_err(Error::from);
                index.column = Some(decoded.map_err(context("column index"))?);
            }
            if let Some(bytes) = oi.as_ref().and_then(get) {
                check_page_index(&bytes).map_err(context("offset index"))?;
                let decoded = decode_offset_index(&bytes).map_err(Error::from);
                index.offset = Some(decoded.map_err(context("offset index"))?);
            }
            let held = ci.map_or(0, |r| r.end - r.start) + oi.map_or(0, |r| r.end - r.start);
            if self.indexes[rg * self.leaves.len() + c].set(index).is_ok() {
                self.held_bytes.fetch_add(held, Relaxed);
            }
        }
        self.keep(metadata, &fetched);
        // Ranges inside the tail are served from it (a later piece never starts inside it).
        fetched.extend(self.tail.pieces().iter().cloned());
        fetched.extend(from_memory);
        Ok(fetched)
    }

    /// Keeps the `metadata` ranges of `fetched` (copied: a slice would pin the whole coalesced
    /// read) when this file keeps metadata.
    fn keep(&self, metadata: &[Range<u64>], fetched: &FetchedRanges) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let Some(kept) = kept.as_mut() else {
            return;
        };
        let mut added = 0;
        let new: Vec<(u64, bytes::Bytes)> = metadata
            .iter()
            .filter(|r| kept.slice((*r).clone()).is_none())
            .filter_map(|r| {
                let bytes = fetched.slice(r.clone())?;
                added += bytes.len() as u64;
                Some((r.start, bytes::Bytes::copy_from_slice(&bytes)))
            })
            .collect();
        kept.extend(new);
        self.held_bytes.fetch_add(added, Relaxed);
    }
}

trait ColumnContext {
    fn with_context_column(self, column: &str, what: &str) -> Self;
}

impl ColumnContext for Error {
    fn with_context_column(mut self, column: &str, what: &str) -> Self {
        self.message = format!("reading the {what}: {}", self.message);
        self.in_column(column)
    }
}

#[cfg(test)]
mod tests {
    use super::parquet_mr_before_1_2_9 as old;

    #[test]
    fn parquet_mr_versions_without_the_dictionary_header_in_chunk_sizes() {
        assert!(old(Some("parquet-mr")));
        assert!(old(Some("parquet-mr version 1.2.8")));
        assert!(old(Some("parquet-mr version 1.2.8-SNAPSHOT (build abc)")));
        assert!(!old(Some("parquet-mr version 1.2.9")));
        assert!(!old(Some(
            "parquet-mr version 1.12.0-201812210311360288-a86293f (build c)"
        )));
        assert!(!old(Some("parquet-mr version 1.10")));
        assert!(!old(Some("parquet-cpp version 1.0.0")));
        assert!(!old(Some("parquet-mrx")));
        assert!(!old(None));
    }
}
