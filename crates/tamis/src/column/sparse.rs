//! Sub-page reads: a payload page stored uncompressed and PLAIN, of a fixed-width type, is read
//! by the 4 KiB blocks that hold its selected rows' values instead of whole.
//!
//! ```text
//! offset index ─► pages with a selected row ─► worth it? (the blocks under half the page)
//! round 1  each page's head (header, levels) and, when the chunk has no NULLs, the blocks its
//!          selected values lie in for any header up to HEAD bytes
//! header (polars-parquet-format) ─► levels ─► exact value ranges ─► what is still missing
//! round 2+ only what round 1 missed (a long header, the levels and values of a page with NULLs)
//! gather ─► the selected values, PLAIN-decoded
//! ```
//!
//! A page whose header says otherwise (compressed, another encoding, sizes that disagree with
//! the offset index) is read whole by the usual path, which also reports what is wrong with it.
//! On a remote source the first round rides on the payload's one batched read
//! ([`super::ColumnChunk::payload_ranges`]).
//!
//! A compressed chunk's pages are read the same way from their decompressed copies in the
//! page cache's directory ([`read_cached`]): the entry's head stands for the page header, and
//! every block read is checked against its checksum (`cache/disk.rs`). There, byte arrays are
//! read by blocks too: the entry's offset table (paper 000, section 5.1.6) says where each
//! value is, so a selected value costs a block of the table and the blocks it lies in.

use std::collections::BTreeMap;
use std::ops::Range;

use parquet::basic::{Compression, Encoding, Type as PhysicalType};

use crate::encoding;
use crate::error::Result;
use crate::io::FetchedRanges;
use crate::levels;
use crate::metrics::{add, MetricsCollector};
use crate::selection::{Bitmap, Selection};
use crate::values::Values;

use super::ColumnChunk;
use crate::cache::disk::{DataLevels, BLOCK};
use crate::file::page_header::{data_page_head, DataPageHead, LevelLayout};

/// The header and levels of a page without NULLs are assumed to fit in this many bytes when
/// guessing where its values are (a header with statistics takes under 100).
const HEAD: u64 = 256;

/// A header longer than the first guess is looked for in up to this many bytes.
const LONG_HEAD: u64 = 64 << 10;

/// How many rounds of reads a page of the file may take (head, levels' length, levels,
/// values).
const MAX_ROUNDS: usize = 4;

/// How many rounds of reads a page from the page cache's directory may take (levels' length,
/// levels, offset table, values: the head is read when the entry is opened).
const MAX_CACHED_ROUNDS: usize = 5;

/// Where a page's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Width {
    /// Every value takes this many bytes.
    Fixed(u64),
    /// Byte arrays, each found by the entry's offset table; about this many bytes each, length
    /// prefix included (for planning).
    Variable(u64),
}

/// One page to read by blocks.
#[derive(Debug, Clone)]
pub(crate) struct SparsePage {
    pub page: usize,
    /// The page's bytes in the file, header included.
    pub bytes: Range<u64>,
    pub first_row: usize,
    pub rows: usize,
}

/// The selected rows of one page: their validity (`None`: all present) and present values.
pub(crate) struct PagePart {
    pub validity: Option<Vec<bool>>,
    pub values: Values,
}

/// The byte width of a chunk's values if its pages may be read by blocks: uncompressed,
/// fixed-width, no dictionary page, an offset index to find the pages.
fn value_width(chunk: &ColumnChunk<'_>) -> Option<u64> {
    if chunk.source.meta().compression() != Compression::UNCOMPRESSED
        || chunk.source.offset_index().is_none()
        || chunk.dictionary_range().is_some()
    {
        return None;
    }
    fixed_width(chunk)
}

/// The byte width of a flat column's values when all are of one width.
fn fixed_width(chunk: &ColumnChunk<'_>) -> Option<u64> {
    let leaf = chunk.leaf;
    if leaf.max_rep != 0 {
        return None;
    }
    match leaf.physical {
        PhysicalType::INT32 | PhysicalType::FLOAT => Some(4),
        PhysicalType::INT64 | PhysicalType::DOUBLE => Some(8),
        PhysicalType::INT96 => Some(12),
        PhysicalType::FIXED_LEN_BYTE_ARRAY if leaf.type_length > 0 => Some(leaf.type_length as u64),
        _ => None,
    }
}

/// How a compressed chunk's values lie if its pages kept on the page cache's disk tier
/// (decompressed) may be read from there by blocks: fixed-width or flat byte arrays, an offset
/// index to find the pages, and not every data page dictionary-encoded (by the chunk's page
/// encoding statistics, when it has them).
fn cached_width(chunk: &ColumnChunk<'_>) -> Option<Width> {
    let meta = chunk.source.meta();
    if meta.compression() == Compression::UNCOMPRESSED
        || chunk.source.offset_index().is_none()
        || !chunk.source.has_disk_tier()
    {
        return None;
    }
    let all_dictionary = meta.page_encoding_stats().is_some_and(|stats| {
        stats.iter().all(|s| {
            s.page_type != parquet::basic::PageType::DATA_PAGE
                && s.page_type != parquet::basic::PageType::DATA_PAGE_V2
                || matches!(
                    s.encoding,
                    Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY
                )
        })
    });
    if all_dictionary {
        return None;
    }
    if let Some(width) = fixed_width(chunk) {
        return Some(Width::Fixed(width));
    }
    // Only PLAIN pages of byte arrays carry an offset table: none by the encoding statistics,
    // no plan (each page would cost its entry's head, then be read whole).
    let plain = meta.page_encoding_stats().is_none_or(|stats| {
        stats.iter().any(|s| {
            matches!(
                s.page_type,
                parquet::basic::PageType::DATA_PAGE | parquet::basic::PageType::DATA_PAGE_V2
            ) && s.encoding == Encoding::PLAIN
        })
    });
    let leaf = chunk.leaf;
    (plain && leaf.physical == PhysicalType::BYTE_ARRAY && leaf.max_rep == 0).then(|| {
        // The chunk's decompressed bytes a value: headers and levels count too, a little.
        let values = u64::try_from(meta.num_values()).unwrap_or(0).max(1);
        let bytes = u64::try_from(meta.uncompressed_size()).unwrap_or(0);
        Width::Variable((bytes / values).max(4))
    })
}

/// Whether no value of the chunk is NULL (a required column, or statistics saying so): then a
/// value's place follows from its row alone.
fn no_nulls(chunk: &ColumnChunk<'_>) -> bool {
    chunk.leaf.max_def == 0
        || chunk
            .source
            .meta()
            .statistics()
            .and_then(|s| s.null_count_opt())
            == Some(0)
}

fn align_down(x: u64) -> u64 {
    x / BLOCK * BLOCK
}

fn align_up(x: u64) -> u64 {
    x.div_ceil(BLOCK).saturating_mul(BLOCK)
}

/// Adds `r`, widened to whole blocks and clipped to `within`, to `out` (merging with the last
/// range when they touch: ranges are pushed in ascending order per page).
fn push_blocks(out: &mut Vec<Range<u64>>, r: Range<u64>, within: &Range<u64>) {
    if r.is_empty() {
        return;
    }
    let r = align_down(r.start).max(within.start)..align_up(r.end).min(within.end);
    if r.is_empty() {
        return;
    }
    match out.last_mut() {
        Some(last) if r.start <= last.end && r.start >= last.start => {
            last.end = last.end.max(r.end)
        }
        _ => out.push(r),
    }
}

/// The pages of `chunk` holding a row of `selection` and not loaded yet, by the offset index
/// (none without one).
fn unloaded_pages(chunk: &ColumnChunk<'_>, selection: &Selection) -> Vec<SparsePage> {
    let (Some(oi), Some(layout)) = (chunk.source.offset_index(), chunk.source.indexed_layout())
    else {
        return Vec::new();
    };
    let locations = oi.page_locations().iter().zip(layout).enumerate();
    locations
        .filter(|(i, (_, (first_row, rows)))| {
            !chunk.pages.contains_key(i) && selection.any_in(*first_row, first_row + rows)
        })
        .filter_map(|(i, (loc, (first_row, rows)))| {
            let start = u64::try_from(loc.offset).ok()?;
            let size = u64::try_from(loc.compressed_page_size).ok()?;
            Some(SparsePage {
                page: i,
                bytes: start..start.saturating_add(size),
                first_row,
                rows,
            })
        })
        .collect()
}

/// The pages of `chunk` holding a row of `selection` that are worth reading by blocks: not
/// loaded yet, and their blocks (for a header up to [`HEAD`] bytes), as the source will read
/// them (ranges closer than its coalescing gap read as one), under half the page.
pub(crate) fn plan(chunk: &ColumnChunk<'_>, selection: &Selection) -> Vec<SparsePage> {
    let Some(width) = value_width(chunk) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for page in unloaded_pages(chunk, selection) {
        let (first_row, rows) = (page.first_row, page.rows);
        let (start, size) = (page.bytes.start, page.bytes.end - page.bytes.start);
        // The values alone take at least this: no need to look further (a dense page would
        // otherwise cost a walk over all its rows).
        let selected = selection.window(first_row, rows).count_ones() as u64;
        if selected.saturating_mul(width).saturating_mul(2) >= size {
            continue;
        }
        let Some(guessed) = guessed_ranges(&page, width, selection, size / 2) else {
            continue;
        };
        let reads = crate::io::coalesce(&guessed, chunk.source.coalesce_gap());
        let blocks: u64 = reads.iter().map(|r| r.end - r.start).sum();
        // A local page not in the page cache costs a device round trip per read: blocks are
        // worth it only when those round trips, counted as the bytes that would arrive
        // meanwhile, and the blocks stay under the page (cold, payload suite, 0.01 %: 13
        // reads a page, 203 ms by blocks, 112 ms whole; 0.001 %: one read a page).
        let cold = chunk.source.resident(start) == Some(false);
        let cost = if cold {
            let waits = (reads.len() as u64).saturating_mul(chunk.source.round_trip_bytes());
            blocks.saturating_add(waits)
        } else {
            blocks.saturating_mul(2)
        };
        if size >= 2 * BLOCK && cost < size {
            out.push(page);
        }
    }
    out
}

/// The first round's ranges of a page: its head, and the blocks holding its selected values if
/// the header and levels take at most [`HEAD`] bytes and no value is NULL. `None` once they
/// pass `limit` bytes.
fn guessed_ranges(
    page: &SparsePage,
    width: u64,
    selection: &Selection,
    limit: u64,
) -> Option<Vec<Range<u64>>> {
    let mut out = Vec::new();
    let start = page.bytes.start;
    push_blocks(&mut out, start..start + HEAD, &page.bytes);
    let len = |r: Option<&Range<u64>>| r.map_or(0, |r| r.end - r.start);
    let mut total = len(out.last());
    for row in selection.window(page.first_row, page.rows).iter_ones() {
        let at = start + row as u64 * width;
        let (ranges, last) = (out.len(), len(out.last()));
        push_blocks(&mut out, at..at + HEAD + width, &page.bytes);
        // Rows ascend: a push either grows the last range or adds one after it.
        total += len(out.last()) - if out.len() == ranges { last } else { 0 };
        if total > limit {
            return None;
        }
    }
    Some(out)
}

/// The byte ranges of the first round for `pages` (for a remote source's batched read).
pub(crate) fn first_round(
    chunk: &ColumnChunk<'_>,
    pages: &[SparsePage],
    selection: &Selection,
) -> Vec<Range<u64>> {
    let Some(width) = value_width(chunk) else {
        return Vec::new();
    };
    let guess = no_nulls(chunk);
    pages
        .iter()
        .flat_map(|p| {
            if guess {
                guessed_ranges(p, width, selection, u64::MAX).unwrap_or_default()
            } else {
                let mut head = Vec::new();
                push_blocks(&mut head, p.bytes.start..p.bytes.start + HEAD, &p.bytes);
                head
            }
        })
        .collect()
}

/// Reads the selected rows of `pages` by blocks. Pages that turn out not to qualify (their
/// header says compressed, not PLAIN, or disagrees with the offset index) are returned for the
/// whole-page path.
pub(crate) fn read(
    chunk: &mut ColumnChunk<'_>,
    pages: &[SparsePage],
    selection: &Selection,
    metrics: &MetricsCollector,
) -> Result<(BTreeMap<usize, PagePart>, Vec<usize>)> {
    let mut parts = BTreeMap::new();
    let mut whole = Vec::new();
    let Some(width) = value_width(chunk) else {
        whole.extend(pages.iter().map(|p| p.page));
        return Ok((parts, whole));
    };
    let mut pending: Vec<&SparsePage> = pages.iter().collect();
    chunk.source.fetch(&first_round(chunk, pages, selection))?;
    for round in 0..MAX_ROUNDS {
        let mut needs = Vec::new();
        let mut still = Vec::new();
        for &p in &pending {
            let rows = selection.window(p.first_row, p.rows);
            let step = step(chunk, p, width, &rows).map_err(|e| e.in_page(p.page))?;
            match step {
                Step::Done(part) => {
                    add(&metrics.pages_read_partially, 1);
                    parts.insert(p.page, part);
                }
                Step::Whole => whole.push(p.page),
                Step::Need(ranges) if round + 1 < MAX_ROUNDS => {
                    needs.extend(ranges);
                    still.push(p);
                }
                Step::Need(_) => whole.push(p.page),
            }
        }
        if still.is_empty() {
            break;
        }
        chunk.source.fetch(&needs)?;
        pending = still;
    }
    Ok((parts, whole))
}

/// The pages of a compressed `chunk` holding a row of `selection` that are worth reading by
/// blocks from the page cache's disk tier ([`read_cached`]): not loaded, not in memory, and the
/// blocks of their selected values (one more for the entry's head; for byte arrays, the offset
/// table's blocks too) under half of what the page's values take. Whether a page has an entry
/// is found when it is read.
///
/// Cold or warm, the same rule: the runs of blocks are asked of the device together (see
/// [`advise_cached`] and [`read_cached`]), so a run costs about a block more (bench/disk_cache.py,
/// OS cache dropped, `strings` suite at 0.1 %: 24 000 runs of blocks in 0.16 s, 3.1x faster than
/// the source file, where reading those pages' entries whole took 0.56 s).
pub(crate) fn plan_cached(chunk: &ColumnChunk<'_>, selection: &Selection) -> Vec<SparsePage> {
    let Some(width) = cached_width(chunk) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for page in unloaded_pages(chunk, selection) {
        let (first_row, rows) = (page.first_row, page.rows);
        let window = selection.window(first_row, rows);
        if (window.count_ones() as u64).saturating_mul(2) >= rows as u64 {
            continue;
        }
        // Blocks of the values, as if they started the payload (levels shift them a little),
        // and of their offsets (two each: where the value starts and where it ends); the
        // entry's head is one more.
        let (w, table) = match width {
            Width::Fixed(w) => (w, 0),
            Width::Variable(w) => (w, blocks_covering(&window, 4, 8)),
        };
        let blocks = 1 + table + blocks_covering(&window, w, w);
        if blocks * BLOCK * 2 < rows as u64 * w && !chunk.source.in_memory(page.bytes.start) {
            out.push(page);
        }
    }
    out
}

/// How many blocks hold `len` bytes at `row * stride` for the rows set in `rows`.
fn blocks_covering(rows: &Bitmap, stride: u64, len: u64) -> u64 {
    let mut blocks = 0;
    let mut last: Option<u64> = None;
    for row in rows.iter_ones() {
        let at = row as u64 * stride;
        let (a, b) = (at / BLOCK, (at + len - 1) / BLOCK);
        blocks += match last {
            Some(l) if a <= l => b - l,
            _ => b - a + 1,
        };
        last = Some(b);
    }
    blocks
}

/// Asks the kernel to load, in the background, what [`read_cached`] will read of `chunk`'s
/// pages for `selection`: each entry's head and, when the values are of a fixed width and none
/// of the chunk is NULL, the blocks its selected values lie in for levels up to [`HEAD`] bytes
/// (byte arrays are found by their offset table, read first). A scan advises every
/// payload column before reading any, so a cold directory makes it wait for the device about
/// once, not once per column and round.
pub(crate) fn advise_cached(chunk: &ColumnChunk<'_>, selection: &Selection) {
    let pages = plan_cached(chunk, selection);
    let Some(width) = cached_width(chunk).filter(|_| !pages.is_empty()) else {
        return;
    };
    // Where byte arrays lie is known only from their offset table: their heads alone.
    let (width, guess) = match width {
        Width::Fixed(w) => (w, no_nulls(chunk)),
        Width::Variable(w) => (w, false),
    };
    let wanted: Vec<(u64, u64, Vec<Range<u64>>)> = pages
        .iter()
        .map(|p| {
            let rows = selection.window(p.first_row, p.rows);
            let ranges = (rows.iter_ones())
                .filter(|_| guess)
                .map(|r| r as u64 * width..(r as u64 + 1) * width + HEAD)
                .collect();
            (p.bytes.start, p.rows as u64 * width, ranges)
        })
        .collect();
    chunk.source.advise_disk_entries(&wanted);
}

/// Reads the selected rows of `pages` by blocks from their entries in the page cache's disk
/// tier: the entries' heads first, then the levels, offset tables and values they place, all
/// the pages' reads of a round asked of the device together. Pages without a whole entry, or
/// whose entry says otherwise (not PLAIN, rows that disagree with the offset index, byte
/// arrays without an offset table), are returned for the whole-page path; so is a page whose
/// entry fails a block's checksum (its pack is removed, and the page is read from the file).
pub(crate) fn read_cached(
    chunk: &ColumnChunk<'_>,
    pages: &[SparsePage],
    selection: &Selection,
    metrics: &MetricsCollector,
) -> Result<(BTreeMap<usize, PagePart>, Vec<usize>)> {
    let mut parts = BTreeMap::new();
    let mut whole = Vec::new();
    let Some(width) = cached_width(chunk) else {
        whole.extend(pages.iter().map(|p| p.page));
        return Ok((parts, whole));
    };
    // A batch's entries stay open through its rounds: batches bound the files held open.
    for batch in pages.chunks(OPEN_ENTRIES) {
        read_cached_batch(
            chunk, batch, selection, metrics, width, &mut parts, &mut whole,
        )?;
    }
    Ok((parts, whole))
}

/// Entries a scan's thread holds open at once ([`read_cached`]).
const OPEN_ENTRIES: usize = 64;

/// [`read_cached`] for a batch of pages, their values laid out as `width` says.
fn read_cached_batch(
    chunk: &ColumnChunk<'_>,
    pages: &[SparsePage],
    selection: &Selection,
    metrics: &MetricsCollector,
    width: Width,
    parts: &mut BTreeMap<usize, PagePart>,
    whole: &mut Vec<usize>,
) -> Result<()> {
    // What [`advise_cached`] did not ask for in advance is asked for round by round, when cold.
    let advised = matches!(width, Width::Fixed(_)) && no_nulls(chunk);
    let offsets: Vec<u64> = pages.iter().map(|p| p.bytes.start).collect();
    let mut pending = Vec::new();
    for (p, entry) in pages.iter().zip(chunk.source.disk_entries(&offsets)) {
        let Some(entry) = entry else {
            whole.push(p.page);
            continue;
        };
        let Some(shape) = entry.data_shape() else {
            whole.push(p.page);
            continue;
        };
        let payload = entry.payload();
        let h = DataPageHead {
            header_len: 0,
            body_len: (payload.end - payload.start) as usize,
            num_values: shape.num_values,
            plain: shape.encoding == Encoding::PLAIN,
            levels: match shape.levels {
                DataLevels::V1 { def_level_encoding } => LevelLayout::V1 {
                    rle: def_level_encoding == Encoding::RLE,
                },
                DataLevels::V2 { rep_len, def_len } => LevelLayout::V2 { rep_len, def_len },
            },
        };
        let values = match (width, entry.offset_table()) {
            (Width::Fixed(w), _) => Located::Fixed(w),
            (Width::Variable(_), Some(table)) => Located::Table(table),
            (Width::Variable(_), None) => {
                whole.push(p.page);
                continue;
            }
        };
        if !h.plain || h.num_values != p.rows {
            whole.push(p.page);
            continue;
        }
        let end = match &values {
            Located::Table(t) => t.end,
            Located::Fixed(_) => payload.end,
        };
        let fetched = FetchedRanges::from_pieces(Vec::new(), end);
        // Bytes read so far: the head, read whole.
        pending.push((p, entry, h, values, fetched, payload.start));
    }
    for round in 0..MAX_CACHED_ROUNDS {
        let mut needs = Vec::new();
        let mut still = Vec::new();
        for (p, entry, h, values, fetched, read) in pending {
            let rows = selection.window(p.first_row, p.rows);
            let payload = entry.payload();
            let step = gather(chunk, &h, payload.start, &payload, &values, &rows, &fetched)
                .map_err(|e| e.in_page(p.page))?;
            match step {
                Step::Done(part) => {
                    add(&metrics.pages_read_partially, 1);
                    chunk.source.count_cached_blocks(read, entry.inflate_ns());
                    parts.insert(p.page, part);
                }
                Step::Need(ranges) if round + 1 < MAX_CACHED_ROUNDS => {
                    if entry.cold() && !advised {
                        entry.advise(&ranges);
                    }
                    needs.push(ranges);
                    still.push((p, entry, h, values, fetched, read));
                }
                Step::Whole | Step::Need(_) => whole.push(p.page),
            }
        }
        pending = Vec::with_capacity(still.len());
        for ((p, entry, h, values, mut fetched, read), ranges) in still.into_iter().zip(needs) {
            match entry.read(&ranges) {
                Some(pieces) => {
                    let n: u64 = pieces.iter().map(|(_, b)| b.len() as u64).sum();
                    fetched.extend(pieces);
                    pending.push((p, entry, h, values, fetched, read + n));
                }
                None => whole.push(p.page),
            }
        }
        if pending.is_empty() {
            break;
        }
    }
    whole.extend(pending.iter().map(|(p, ..)| p.page));
    Ok(())
}

enum Step {
    Done(PagePart),
    /// Read whole by the usual path.
    Whole,
    Need(Vec<Range<u64>>),
}

/// How far the page can go with the bytes fetched so far.
fn step(chunk: &ColumnChunk<'_>, p: &SparsePage, width: u64, rows: &Bitmap) -> Result<Step> {
    let fetched = chunk.source.fetched();
    let start = p.bytes.start;
    // The header: in the first block(s), or in up to LONG_HEAD bytes.
    let short = start..(start + HEAD).min(p.bytes.end);
    let long = start..(start + LONG_HEAD).min(p.bytes.end);
    let head = match fetched
        .slice(long.clone())
        .or_else(|| fetched.slice(short.clone()))
    {
        Some(bytes) => bytes,
        None => return Ok(Step::Need(blocks(short, &p.bytes))),
    };
    let Some(h) = data_page_head(&head) else {
        return Ok(if (head.len() as u64) < long.end - long.start {
            Step::Need(blocks(long, &p.bytes))
        } else {
            Step::Whole
        });
    };
    let body = start + h.header_len as u64;
    if !h.plain || h.num_values != p.rows || body + h.body_len as u64 != p.bytes.end {
        return Ok(Step::Whole);
    }
    gather(
        chunk,
        &h,
        body,
        &p.bytes,
        &Located::Fixed(width),
        rows,
        fetched,
    )
}

/// How [`gather`] finds a page's values.
enum Located {
    /// Every value takes this many bytes.
    Fixed(u64),
    /// Byte arrays, by the offset table at this range of the entry ([`crate::cache::disk`]).
    Table(Range<u64>),
}

/// How far a page can go with the bytes fetched so far, once its header `h` is known: its body
/// starts at `body` and the page's bytes are `within` (in the file, or in a cache entry); its
/// values are found as `located` says.
fn gather(
    chunk: &ColumnChunk<'_>,
    h: &DataPageHead,
    body: u64,
    within: &Range<u64>,
    located: &Located,
    rows: &Bitmap,
    fetched: &FetchedRanges,
) -> Result<Step> {
    // The validity of the page's rows, from its levels (none for a required column).
    let max_def = chunk.leaf.max_def;
    let (validity, values_start) = match levels_of(h, body, max_def, fetched)? {
        Levels::Need(r) => return Ok(Step::Need(blocks(r, within))),
        Levels::Unsupported => return Ok(Step::Whole),
        Levels::Read { validity, end } => (validity, end),
    };
    let present = validity.as_ref().map_or(h.num_values, |v| v.count_ones());
    // The selected rows' value numbers (ranks among present values) and validity.
    let (valid, indexes): (Option<Vec<bool>>, Vec<u64>) = match &validity {
        None => (None, rows.iter_ones().map(|r| r as u64).collect()),
        Some(v) => {
            let mut valid = Vec::with_capacity(rows.count_ones());
            let mut indexes = Vec::new();
            let mut rank = 0u64;
            let mut at = 0usize;
            for r in rows.iter_ones() {
                rank += v.count_range(at, r) as u64;
                at = r;
                let present = v.get(r);
                valid.push(present);
                if present {
                    indexes.push(rank);
                }
            }
            (Some(valid), indexes)
        }
    };
    let values = Placed {
        start: values_start,
        within,
        fetched,
    };
    let gathered = match located {
        Located::Fixed(width) => gather_fixed(*width, present, &indexes, &values),
        Located::Table(table) => gather_by_table(table, present, &indexes, &values),
    };
    let gathered = match gathered {
        Gathered::Bytes(b) => b,
        Gathered::Need(ranges) => return Ok(Step::Need(ranges)),
        Gathered::Whole => return Ok(Step::Whole),
    };
    let values = encoding::decode_values(
        Encoding::PLAIN,
        chunk.leaf.physical,
        chunk.leaf.type_length,
        &gathered,
        indexes.len(),
        chunk.budget,
    )?;
    Ok(Step::Done(PagePart {
        validity: valid,
        values,
    }))
}

/// The selected values' PLAIN bytes, or what is missing to have them.
enum Gathered {
    Bytes(Vec<u8>),
    Need(Vec<Range<u64>>),
    /// The page is not as expected: read it whole.
    Whole,
}

/// Where a page's values are: from `start`, inside the page's bytes `within`, what of them
/// is `fetched` so far.
struct Placed<'a> {
    start: u64,
    within: &'a Range<u64>,
    fetched: &'a FetchedRanges,
}

/// The PLAIN bytes of the values numbered `indexes` of `present` values of `width` bytes
/// each.
fn gather_fixed(width: u64, present: usize, indexes: &[u64], values: &Placed<'_>) -> Gathered {
    let Placed {
        start,
        within,
        fetched,
    } = *values;
    let values_end = start.saturating_add(present as u64 * width);
    if values_end > within.end {
        return Gathered::Whole;
    }
    let mut missing = Vec::new();
    let mut gathered = Vec::with_capacity(indexes.len() * width as usize);
    // By runs of consecutive values: a selection dense in places (a scan's batch ending inside
    // the page selects a run of its values) is copied a run at a time, not a value at a time.
    let mut k = 0;
    while k < indexes.len() {
        let first = indexes[k];
        let run = indexes[k..]
            .iter()
            .enumerate()
            .take_while(|&(n, &i)| i == first + n as u64)
            .count();
        let at = start + first * width;
        match fetched.slice(at..at + run as u64 * width) {
            Some(b) if missing.is_empty() => gathered.extend_from_slice(&b),
            Some(_) => {}
            // Not in one fetched piece: value by value, each found or its blocks asked for.
            None => {
                for a in (0..run as u64).map(|n| at + n * width) {
                    match fetched.slice(a..a + width) {
                        Some(b) if missing.is_empty() => gathered.extend_from_slice(&b),
                        Some(_) => {}
                        None => push_blocks(&mut missing, a..a + width, within),
                    }
                }
            }
        }
        k += run;
    }
    match missing.is_empty() {
        true => Gathered::Bytes(gathered),
        false => Gathered::Need(missing),
    }
}

/// The PLAIN bytes (length prefixes included) of the byte arrays numbered `indexes` of
/// `present`, found by the offset `table` (`present + 1` u32 offsets from the values' start):
/// first the table's blocks holding their offsets, then the values' blocks. A table that
/// disagrees with the page (its length, offsets out of order or outside the values, a length
/// prefix that is not the gap to the next offset) has the page read whole.
fn gather_by_table(
    table: &Range<u64>,
    present: usize,
    indexes: &[u64],
    values: &Placed<'_>,
) -> Gathered {
    let Placed {
        start,
        within,
        fetched,
    } = *values;
    if table.end - table.start != 4 * (present as u64 + 1) {
        return Gathered::Whole;
    }
    let mut missing = Vec::new();
    let mut spans = Vec::with_capacity(indexes.len());
    for &i in indexes {
        let at = table.start + 4 * i;
        match fetched.slice(at..at + 8) {
            Some(b) if missing.is_empty() => {
                let offset =
                    |k: usize| u64::from(u32::from_le_bytes([b[k], b[k + 1], b[k + 2], b[k + 3]]));
                spans.push(start + offset(0)..start + offset(4));
            }
            Some(_) => {}
            None => push_blocks(&mut missing, at..at + 8, table),
        }
    }
    if !missing.is_empty() {
        return Gathered::Need(missing);
    }
    // Ascending, apart, inside the values: what they sum to is bounded by the page.
    let mut end = start;
    for s in &spans {
        if s.start < end || s.end < s.start + 4 || s.end > within.end {
            return Gathered::Whole;
        }
        end = s.end;
    }
    let mut gathered = Vec::with_capacity(spans.iter().map(|s| (s.end - s.start) as usize).sum());
    for span in spans {
        match fetched.slice(span.clone()) {
            Some(b) if missing.is_empty() => {
                let len = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                if u64::from(len) != span.end - span.start - 4 {
                    return Gathered::Whole;
                }
                gathered.extend_from_slice(&b);
            }
            Some(_) => {}
            None => push_blocks(&mut missing, span, within),
        }
    }
    match missing.is_empty() {
        true => Gathered::Bytes(gathered),
        false => Gathered::Need(missing),
    }
}

fn blocks(r: Range<u64>, within: &Range<u64>) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    push_blocks(&mut out, r, within);
    out
}

enum Levels {
    /// `validity`: `None` when the column stores no levels; `end`: where the values start.
    Read {
        validity: Option<Bitmap>,
        end: u64,
    },
    Need(Range<u64>),
    Unsupported,
}

/// The page's definition levels as a validity bitmap, from the bytes fetched so far.
fn levels_of(h: &DataPageHead, body: u64, max_def: i16, fetched: &FetchedRanges) -> Result<Levels> {
    let n = h.num_values;
    let body_end = body + h.body_len as u64;
    match h.levels {
        LevelLayout::V1 { .. } if max_def == 0 => Ok(Levels::Read {
            validity: None,
            end: body,
        }),
        LevelLayout::V1 { rle: false } => Ok(Levels::Unsupported),
        LevelLayout::V1 { rle: true } => {
            let Some(len) = fetched.slice(body..body + 4) else {
                return Ok(Levels::Need(body..body + 4));
            };
            let len = u64::from(u32::from_le_bytes(len[..].try_into().expect("4 bytes")));
            let end = body.saturating_add(4).saturating_add(len);
            if end > body_end {
                return Ok(Levels::Unsupported);
            }
            let Some(section) = fetched.slice(body..end) else {
                return Ok(Levels::Need(body..end));
            };
            let (validity, used) = levels::validity_v1(&section, Encoding::RLE, max_def, n)?;
            Ok(Levels::Read {
                validity: Some(validity),
                end: body + used as u64,
            })
        }
        LevelLayout::V2 { rep_len, def_len } => {
            let def_start = body.saturating_add(rep_len as u64);
            let end = def_start.saturating_add(def_len as u64);
            if rep_len != 0 || end > body_end || (max_def == 0 && def_len != 0) {
                return Ok(Levels::Unsupported);
            }
            if max_def == 0 {
                return Ok(Levels::Read {
                    validity: None,
                    end,
                });
            }
            let Some(section) = fetched.slice(def_start..end) else {
                return Ok(Levels::Need(def_start..end));
            };
            Ok(Levels::Read {
                validity: Some(levels::validity_v2(&section, max_def, n)?),
                end,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// PLAIN byte arrays of `lens` bytes (value `i` filled with `i as u8`) and their offset
    /// table, as the disk tier writes them.
    fn byte_arrays(lens: &[usize]) -> (Vec<u8>, Vec<u8>) {
        let (mut values, mut table) = (Vec::new(), Vec::new());
        for (i, &len) in lens.iter().enumerate() {
            table.extend_from_slice(&(values.len() as u32).to_le_bytes());
            values.extend_from_slice(&(len as u32).to_le_bytes());
            values.extend(std::iter::repeat_n(i as u8, len));
        }
        table.extend_from_slice(&(values.len() as u32).to_le_bytes());
        (values, table)
    }

    /// The bytes of `buf` at `ranges`, as a read of them returns them.
    fn pieces_of(buf: &[u8], ranges: &[Range<u64>]) -> Vec<(u64, Bytes)> {
        ranges
            .iter()
            .map(|r| {
                (
                    r.start,
                    Bytes::copy_from_slice(&buf[r.start as usize..r.end as usize]),
                )
            })
            .collect()
    }

    /// Runs [`gather_by_table`] to the end, fetching what it asks for, over `present` values at
    /// `values_at` and the table at `table_at` of a buffer; the rounds it took.
    fn gather_all(
        values: &[u8],
        table: &[u8],
        present: usize,
        indexes: &[u64],
        values_at: u64,
        table_at: u64,
    ) -> (Gathered, usize) {
        let mut buf = vec![0u8; table_at as usize + table.len()];
        buf[values_at as usize..][..values.len()].copy_from_slice(values);
        buf[table_at as usize..].copy_from_slice(table);
        let within = 0..values_at + values.len() as u64;
        let table_range = table_at..table_at + table.len() as u64;
        let mut fetched = FetchedRanges::from_pieces(Vec::new(), buf.len() as u64);
        for round in 1..=3 {
            let placed = Placed {
                start: values_at,
                within: &within,
                fetched: &fetched,
            };
            match gather_by_table(&table_range, present, indexes, &placed) {
                Gathered::Need(ranges) => fetched.extend(pieces_of(&buf, &ranges)),
                done => return (done, round),
            }
        }
        panic!("more than two rounds of reads");
    }

    /// The bytes of the values `indexes` of `width` bytes at `start`, one by one (the
    /// reference for [`gather_fixed`]'s copies by runs).
    fn fixed_reference(buf: &[u8], start: u64, width: u64, indexes: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        for &i in indexes {
            let at = (start + i * width) as usize;
            out.extend_from_slice(&buf[at..at + width as usize]);
        }
        out
    }

    #[test]
    fn fixed_width_values_are_gathered_by_runs_as_one_by_one() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(41);
        for _ in 0..300 {
            let width = [1u64, 2, 4, 8, 12, 16][rng.random_range(0..6)];
            let present = rng.random_range(1..5000usize);
            let start = rng.random_range(0..300u64);
            let end = start + present as u64 * width;
            let buf: Vec<u8> = (0..end + 17).map(|i| (i * 31 % 251) as u8).collect();
            // Runs of consecutive values, isolated ones, all, none.
            let mut indexes = Vec::new();
            let mut i = 0u64;
            let dense = rng.random_range(0..4);
            while i < present as u64 {
                if dense == 0 || rng.random_range(0..4) == 0 {
                    let run = rng.random_range(1..200u64).min(present as u64 - i);
                    indexes.extend(i..i + run);
                    i += run;
                }
                i += rng.random_range(1..300);
            }
            if dense == 3 {
                indexes.clear();
            }
            let within = 0..end;
            // Fetched in pieces of random lengths (runs cross piece edges), or block by block
            // as asked (up to three rounds).
            let mut fetched = FetchedRanges::from_pieces(Vec::new(), buf.len() as u64);
            if rng.random_range(0..2) == 0 {
                let mut at = 0;
                while at < end {
                    let len = rng.random_range(1..3 * BLOCK).min(end - at);
                    let piece = Bytes::copy_from_slice(&buf[at as usize..(at + len) as usize]);
                    fetched.extend([(at, piece)]);
                    at += len;
                }
            }
            let want = fixed_reference(&buf, start, width, &indexes);
            let mut rounds = 0;
            loop {
                let placed = Placed {
                    start,
                    within: &within,
                    fetched: &fetched,
                };
                match gather_fixed(width, present, &indexes, &placed) {
                    Gathered::Bytes(got) => {
                        assert_eq!(got, want, "width {width}, {} values", indexes.len());
                        break;
                    }
                    Gathered::Need(ranges) => {
                        rounds += 1;
                        assert!(rounds < 3, "asked twice for blocks");
                        fetched.extend(pieces_of(&buf, &ranges));
                    }
                    Gathered::Whole => panic!("values inside the page read whole"),
                }
            }
        }
    }

    #[test]
    fn byte_arrays_are_gathered_by_their_offset_table() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(40);
        for _ in 0..200 {
            let n = rng.random_range(1..3000);
            // Empty values, short ones, some longer than a block.
            let lens: Vec<usize> = (0..n)
                .map(|_| match rng.random_range(0..20) {
                    0 => 0,
                    1 => rng.random_range(4000..9000),
                    _ => rng.random_range(1..40),
                })
                .collect();
            let (values, table) = byte_arrays(&lens);
            let values_at = rng.random_range(0..300);
            let table_at = (values_at + values.len() as u64).div_ceil(BLOCK) * BLOCK;
            // None, one, all, or a random set of the values.
            let indexes: Vec<u64> = match rng.random_range(0..4) {
                0 => vec![],
                1 => vec![rng.random_range(0..n as u64)],
                2 => (0..n as u64).collect(),
                _ => (0..n as u64).filter(|_| rng.random_bool(0.01)).collect(),
            };
            let (got, rounds) = gather_all(&values, &table, n, &indexes, values_at, table_at);
            let Gathered::Bytes(got) = got else {
                panic!("not gathered");
            };
            let want = byte_arrays(
                &indexes
                    .iter()
                    .map(|&i| lens[i as usize])
                    .collect::<Vec<_>>(),
            )
            .0;
            // Value bytes are their number: compare lengths and contents value by value.
            let mut at = 0;
            for &i in &indexes {
                let len = u32::from_le_bytes(got[at..at + 4].try_into().unwrap()) as usize;
                assert_eq!(len, lens[i as usize]);
                assert!(got[at + 4..at + 4 + len].iter().all(|&b| b == i as u8));
                at += 4 + len;
            }
            assert_eq!(got.len(), want.len());
            assert!(rounds <= 3);
        }
    }

    #[test]
    fn an_offset_table_that_disagrees_with_its_page_is_read_whole() {
        let (values, table) = byte_arrays(&[5, 0, 3000, 7, 12]);
        let at = |t: &[u8], i: usize| u32::from_le_bytes(t[4 * i..4 * i + 4].try_into().unwrap());
        let with = |i: usize, v: u32| {
            let mut t = table.clone();
            t[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
            t
        };
        let whole = |t: &[u8], indexes: &[u64]| {
            matches!(
                gather_all(&values, t, 5, indexes, 10, 8192).0,
                Gathered::Whole
            )
        };
        assert!(!whole(&table, &[0, 2, 4]));
        // Offsets out of order, overlapping, past the values, a span shorter than its prefix,
        // a prefix that is not the gap: each makes the page read whole.
        assert!(whole(&with(2, at(&table, 1) - 1), &[1, 2]));
        assert!(whole(&with(3, at(&table, 2)), &[2, 3]));
        assert!(whole(&with(5, values.len() as u32 + 1), &[4]));
        assert!(whole(&with(1, at(&table, 0) + 2), &[0]));
        assert!(whole(&with(3, at(&table, 3) + 1), &[2]));
        // A forged table naming one value twice (same length prefix): overlapping spans.
        let twice = {
            let mut t = with(2, 0);
            t[12..16].copy_from_slice(&at(&table, 1).to_le_bytes());
            t
        };
        assert!(whole(&twice, &[0, 2]));
        // A table of another length than the page's values.
        assert!(whole(&table[..table.len() - 4], &[0]));
    }

    #[test]
    fn the_blocks_of_selected_values_are_counted_once() {
        let rows = |set: &[usize]| {
            let mut b = Bitmap::new_zeroed(10_000);
            set.iter().for_each(|&i| b.set(i));
            b
        };
        let count = |set: &[usize], stride, len| blocks_covering(&rows(set), stride, len);
        // Values in one block, then in the next two, then far away.
        assert_eq!(count(&[0, 1, 600, 1500], 8, 8), 3);
        assert_eq!(count(&[0, 1, 600, 1500, 5000], 8, 8), 4);
        // Values that straddle blocks count each block once.
        assert_eq!(count(&[0, 1], 5000, 5000), 3);
        assert_eq!(count(&[0, 3], 5000, 5000), 4);
        // Two offsets a value: the last of a block takes the next block too.
        assert_eq!(count(&[1023], 4, 8), 2);
        assert_eq!(count(&[], 8, 8), 0);
    }

    #[test]
    fn blocks_are_aligned_clipped_and_merged() {
        let page = 1000..20_000;
        let mut out = Vec::new();
        push_blocks(&mut out, 1000..1100, &page);
        assert_eq!(out, vec![1000..4096]);
        push_blocks(&mut out, 4000..4200, &page);
        assert_eq!(out, vec![1000..8192]);
        push_blocks(&mut out, 12_300..12_310, &page);
        assert_eq!(out, vec![1000..8192, 12_288..16_384]);
        push_blocks(&mut out, 19_990..20_000, &page);
        assert_eq!(out, vec![1000..8192, 12_288..20_000]);
        push_blocks(&mut out, 16_390..16_400, &page);
        assert_eq!(out, vec![1000..8192, 12_288..20_000]);
        push_blocks(&mut out, 5..5, &page);
        assert_eq!(out.len(), 2);
    }
}
