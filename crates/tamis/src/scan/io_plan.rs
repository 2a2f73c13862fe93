//! The I/O plan of a row group: every decision about which byte ranges are fetched, and when.
//! Local files and object stores differ only here, below the sequencer: a remote source pays a
//! round trip per request, so each moment is one batched read (and pages the next moment
//! certainly needs ride along when they cost less than a round trip); a local file reads pages
//! as the decoders ask, and the plan advises the kernel ahead of those reads so that a cold
//! cache's device time overlaps decoding (`POSIX_FADV_WILLNEED`, see
//! [`crate::io::Reader::will_need`] and `docs/DESIGN.md`, "Local prefetch of planned ranges").
//!
//! ```text
//! metadata  ─► one coalesced read: page indexes, Bloom filters, dictionary pages
//!              (remote, page indexes already in memory: + the filter pages they leave,
//!               + the payload's when cheaper than a round trip)
//! filters   ─► remote: one read of the filter columns' candidate pages (+ cheap payload)
//!              local: advice for them (+ the payload's, when every payload page is expected
//!              to hold a survivor; + the next row group's filter pages, a row group ahead)
//! payload   ─► remote: one read of the survivors' payload pages
//!              local: advice for them, when the chunk is cold
//!              either: advice for the blocks read of the page cache's directory, when cold
//! ```
//!
//! Which columns' bytes are needed is decided here too: a projected column pinned to one value
//! by the predicate ([`super::pinned`]) reads no page. Within a page, which 4 KiB blocks hold
//! the selected values is the column's knowledge (`column/sparse.rs`); the plan switches
//! sub-page reads on and hands their first round to the payload's read.

use std::collections::HashMap;
use std::ops::Range;

use parquet::basic::Compression;

use crate::budget::Budget;
use crate::column::arrays::is_native;
use crate::column::ColumnChunk;
use crate::error::Result;
use crate::expr::Predicate;
use crate::io::FetchedRanges;
use crate::selection::{Bitmap, Selection};

use super::estimate::Estimates;
use super::order::and_filters;
use super::pinned::pinned_value;
use super::row_group::RowGroupJob;
use crate::prune::page_index::candidates as page_candidates;

/// The I/O plan of one row group job.
pub(super) struct IoPlan<'j, 'a> {
    job: &'j RowGroupJob<'a>,
    /// Whether the source pays a round trip per request (then reads are batched).
    remote: bool,
}

impl<'j, 'a> IoPlan<'j, 'a> {
    pub(super) fn new(job: &'j RowGroupJob<'a>) -> Self {
        IoPlan {
            job,
            remote: job.reader.source().is_remote(),
        }
    }

    /// Reads, with at most one coalesced request, what pruning with `p` needs from the file's
    /// metadata regions: the page indexes of [`index_columns`] and the `metadata` ranges (Bloom
    /// filters, dictionary pages). On a remote source whose page indexes are already in memory,
    /// the filter pages that `page_rows` leaves (the page-level pruning of `p`) come in the
    /// same read, saving the round trip of the filters' read; if Bloom filters or dictionaries
    /// then prune the row group, those bytes were spent for nothing — cheaper than a round trip
    /// each time. Only when this read happens anyway (Bloom filters or dictionaries not in
    /// memory); otherwise the filters' read is the first round trip and fetches the same pages.
    pub(super) fn metadata<'b>(
        &self,
        p: &Predicate,
        metadata: &[Range<u64>],
        page_rows: impl FnOnce() -> Result<Bitmap>,
        chunk: &impl Fn(usize) -> ColumnChunk<'b>,
    ) -> Result<FetchedRanges> {
        let job = self.job;
        let file = job.file;
        let use_index = job.pruning.page_index;
        let index_columns = index_columns(job, p);
        let mut pages = Vec::new();
        if self.remote
            && use_index
            && !file.all_in_memory(metadata)
            && file.indexes_in_memory(job.rg, &index_columns)
        {
            file.prefetch(job.rg, &index_columns, &[], &[], job.reader)?;
            let rows_left = page_rows()?;
            let filter_columns = p.columns();
            for &c in &filter_columns {
                pages.extend(chunk(c).missing_ranges(&rows_left)?);
            }
            pages.extend(self.cheap_payload(&filter_columns, &rows_left, chunk)?);
        }
        file.prefetch(
            job.rg,
            if use_index { &index_columns } else { &[] },
            metadata,
            &pages,
            job.reader,
        )
    }

    /// Hands what the metadata read brought to the chunks that may use it: `p`'s columns, and
    /// on a remote source the payload's (pages that rode along).
    pub(super) fn keep<'b>(
        &self,
        fetched: &FetchedRanges,
        p: &Predicate,
        chunk: &impl Fn(usize) -> ColumnChunk<'b>,
        chunks: &mut HashMap<usize, ColumnChunk<'b>>,
    ) -> Result<()> {
        let mut offered = p.columns();
        if self.remote {
            offered.extend(payload_leaves(self.job));
        }
        // Chunks created before the page index was loaded are rebuilt with it.
        for c in offered {
            let mut ch = chunk(c);
            ch.offer(fetched)?;
            chunks.insert(c, ch);
        }
        Ok(())
    }

    /// When the filters start. Remote: one round trip for every filter column's candidate
    /// pages (later filters need a subset of them, and a request costs more than the bytes
    /// they might have saved), with the payload pages of all candidate rows when they cost
    /// less than a round trip (a point lookup the page index narrowed). Local: advice for the
    /// same pages ([`advise_filters`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn filters<'b, 'e>(
        &self,
        chunks: &mut HashMap<usize, ColumnChunk<'b>>,
        chunk: &impl Fn(usize) -> ColumnChunk<'b>,
        filter_columns: &[usize],
        payload: &[usize],
        predicate: &Predicate,
        candidates: &Bitmap,
        estimates: impl FnOnce() -> Estimates<'e>,
    ) -> Result<()> {
        if !self.remote {
            return advise_filters(
                self.job,
                chunks,
                filter_columns,
                payload,
                predicate,
                candidates,
                estimates(),
            );
        }
        let mut ranges = Vec::new();
        for c in filter_columns {
            if let Some(ch) = chunks.get(c) {
                ranges.extend(ch.missing_ranges(candidates)?);
            }
        }
        if !ranges.is_empty() {
            ranges.extend(self.cheap_payload(filter_columns, candidates, chunk)?);
        }
        fetch_into(
            self.job,
            chunks,
            filter_columns.iter().chain(payload),
            &ranges,
        )
    }

    /// When the payload starts: every payload column's pages holding a survivor (by 4 KiB
    /// blocks, the first round, for pages read by blocks). Remote: one round trip. Local:
    /// advice, when the chunks are cold ([`advise_payload`]).
    pub(super) fn payload<'b>(
        &self,
        chunks: &mut HashMap<usize, ColumnChunk<'b>>,
        chunk: &impl Fn(usize) -> ColumnChunk<'b>,
        payload: &[usize],
        filter_columns: &[usize],
        survivors: &Selection,
        sub_page: bool,
    ) -> Result<()> {
        // Pages read by blocks from the page cache's directory: every column's advised first.
        if sub_page {
            for &c in payload {
                chunks
                    .entry(c)
                    .or_insert_with(|| chunk(c))
                    .advise_cached(survivors);
            }
        }
        if !self.remote {
            return advise_payload(
                self.job,
                chunks,
                chunk,
                payload,
                filter_columns,
                survivors,
                sub_page,
            );
        }
        let mut ranges = Vec::new();
        for &c in payload {
            let ch = chunks.entry(c).or_insert_with(|| chunk(c));
            ranges.extend(ch.payload_ranges(survivors, sub_page)?);
        }
        fetch_into(self.job, chunks, payload, &ranges)
    }

    /// The payload pages holding any of `rows`, when together they cost less than a round trip
    /// (else none: the payload's own read fetches the survivors' pages).
    fn cheap_payload<'b>(
        &self,
        filter_columns: &[usize],
        rows: &Bitmap,
        chunk: &impl Fn(usize) -> ColumnChunk<'b>,
    ) -> Result<Vec<Range<u64>>> {
        let mut ranges = Vec::new();
        for c in payload_leaves(self.job) {
            if !filter_columns.contains(&c) {
                ranges.extend(chunk(c).missing_ranges(rows)?);
            }
        }
        let bytes: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        let affordable = bytes <= self.job.reader.source().profile().round_trip_bytes();
        Ok(if affordable { ranges } else { Vec::new() })
    }
}

/// Reads `ranges` in one batch (no request when empty) and hands the bytes to the chunks of
/// `columns`.
fn fetch_into<'c, 'b: 'c>(
    job: &RowGroupJob<'_>,
    chunks: &mut HashMap<usize, ColumnChunk<'b>>,
    columns: impl IntoIterator<Item = &'c usize>,
    ranges: &[Range<u64>],
) -> Result<()> {
    if ranges.is_empty() {
        return Ok(());
    }
    let fetched = job.reader.read_ranges(ranges)?;
    for c in columns {
        if let Some(ch) = chunks.get_mut(c) {
            ch.offer(&fetched)?;
        }
    }
    Ok(())
}

/// Leaf columns whose page indexes row group pruning with `p` loads: `p`'s columns and the
/// projected leaves (pinned ones are projected without reading a page).
pub(super) fn index_columns(job: &RowGroupJob<'_>, p: &Predicate) -> Vec<usize> {
    let leaves = &job.file.leaves;
    let mut columns = p.columns();
    columns.extend(
        (job.needed_leaves.iter().copied())
            .filter(|&c| pinned_value(job.predicate, &leaves[c]).is_none()),
    );
    columns
}

/// Leaf columns the projection reads with tamis's own decoders (flat, native types, not pinned
/// by the predicate).
pub(super) fn payload_leaves(job: &RowGroupJob<'_>) -> Vec<usize> {
    let leaves = &job.file.leaves;
    let fields = job.file.schema().fields();
    job.output
        .read
        .iter()
        .filter_map(|&root| leaves.iter().find(|l| l.root == root && !l.nested))
        .filter(|l| {
            is_native(
                l,
                job.output
                    .read_type(l.root, fields[l.root].data_type(), job.schema),
            )
        })
        .filter(|l| pinned_value(job.predicate, l).is_none())
        .map(|l| l.index)
        .collect()
}

/// Local files, when a row group's filters start: advice for every filter column's candidate
/// pages, the payload's when nearly all of them will hold a survivor, and the next row group's
/// filter pages, in one. Advice only: no result depends on it, and a warm scan skips it after
/// one probe. `chunks` holds the filter and payload columns' chunks.
fn advise_filters(
    job: &RowGroupJob<'_>,
    chunks: &HashMap<usize, ColumnChunk<'_>>,
    filter_columns: &[usize],
    payload: &[usize],
    predicate: &Predicate,
    candidates: &Bitmap,
    estimates: Estimates<'_>,
) -> Result<()> {
    let mut ranges = Vec::new();
    for c in filter_columns {
        if let Some(ch) = chunks.get(c) {
            ranges.extend(ch.missing_ranges(candidates)?);
        }
    }
    if payload_pages_all_wanted(job, payload, predicate, estimates, candidates) {
        // (Not the pages a sub-page read would read by blocks: uncompressed ones.)
        let rg_meta = job.file.metadata.row_group(job.rg);
        let by_blocks = |c: usize| {
            job.pruning.sub_page_reads
                && job.pruning.page_index
                && rg_meta.column(c).compression() == Compression::UNCOMPRESSED
        };
        for c in payload {
            if let Some(ch) = chunks
                .get(c)
                .filter(|_| !filter_columns.contains(c) && !by_blocks(*c))
            {
                ranges.extend(ch.missing_ranges(candidates)?);
            }
        }
    }
    // Then the next row group's filter pages, a row group ahead of their reads.
    ranges.extend(next_row_group(job));
    job.reader.will_need(&ranges);
    Ok(())
}

/// Local files, when the payload starts: advice for every payload column's pages holding a
/// survivor (the first round of blocks, for pages read by blocks), before the first is read.
fn advise_payload<'b>(
    job: &RowGroupJob<'_>,
    chunks: &mut HashMap<usize, ColumnChunk<'b>>,
    chunk: &impl Fn(usize) -> ColumnChunk<'b>,
    payload: &[usize],
    filter_columns: &[usize],
    survivors: &Selection,
    sub_page: bool,
) -> Result<()> {
    // Probed before the ranges are planned: planning probes the first byte of each page it
    // may read by blocks, and a probe loads the page it misses, so a probe of the planned
    // ranges could land on one of those (with pages of one size, the middle of an even number
    // of them is a page's first byte) and find cold pages "cached" (suite `payload`, uniform,
    // 0.1 %: 96 MB read cold without advice). The probe is of the largest chunk the filters
    // have not read.
    let rg_meta = job.file.metadata.row_group(job.rg);
    let largest = (payload.iter())
        .filter(|&&c| c < rg_meta.num_columns() && !filter_columns.contains(&c))
        .map(|&c| rg_meta.column(c).byte_range())
        .max_by_key(|&(_, len)| len);
    let cold = largest.is_some_and(|range| chunk_cold(job, range));
    let mut ranges = Vec::new();
    for &c in payload {
        let ch = chunks.entry(c).or_insert_with(|| chunk(c));
        ranges.extend(ch.payload_ranges(survivors, sub_page)?);
    }
    if cold {
        job.reader.advise(&ranges);
    }
    Ok(())
}

/// Expected survivors per payload page at or above which every payload page is taken to hold
/// one (a page without one then has a chance of e^-3 ≈ 5 % under independence).
const SURVIVORS_PER_PAGE: f64 = 3.0;

/// Whether the predicate is expected to leave a survivor in every payload page of the
/// candidate rows (by the estimates, before evaluating anything): then those pages are worth
/// loading while the filters run.
fn payload_pages_all_wanted(
    job: &RowGroupJob<'_>,
    payload: &[usize],
    predicate: &Predicate,
    mut estimates: Estimates<'_>,
    candidates: &Bitmap,
) -> bool {
    let pages = (payload.iter())
        .filter_map(|&c| job.file.chunk_index(job.rg, c)?.offset.as_ref())
        .map(|oi| oi.page_locations().len())
        .max();
    let Some(pages) = pages.filter(|&n| n > 0) else {
        return false;
    };
    let filters = and_filters(std::slice::from_ref(predicate));
    let selectivity: f64 = filters.iter().map(|f| estimates.estimate(f)).product();
    selectivity * candidates.count_ones() as f64 / pages as f64 >= SURVIVORS_PER_PAGE
}

/// On a local file whose next row group (in this scan) is not cached, that row group's filter
/// pages that its statistics and page index leave, so that a cold scan's next reads overlap
/// this row group's work. Advice only: whatever fails here is left to the next row group to
/// report, and gives no ranges.
fn next_row_group(job: &RowGroupJob<'_>) -> Vec<Range<u64>> {
    let (Some(next), Some(predicate)) = (job.next_rg, job.predicate) else {
        return Vec::new();
    };
    let file = job.file;
    let rg_meta = file.metadata.row_group(next);
    let Some(&first) = predicate.columns().first() else {
        return Vec::new();
    };
    if first >= rg_meta.num_columns() || !chunk_cold(job, rg_meta.column(first).byte_range()) {
        return Vec::new();
    }
    let orders = file.metadata.file_metadata().column_orders();
    let orders = orders.map(|o| o.as_slice());
    let p = match (job.pruning.statistics, job.next_statistics) {
        (true, Some(verdicts)) => verdicts.replay(predicate),
        (true, None) => crate::prune::statistics::statistics_verdict_with_orders(
            predicate,
            &file.leaves,
            rg_meta,
            orders,
        ),
        (false, _) => predicate.clone(),
    };
    if p == Predicate::False || !job.pruning.page_index {
        return Vec::new();
    }
    // The page indexes the next row group's pruning loads, read now when they are not in
    // memory if this scan has one worker: then the next row group waits for this one, and
    // would read them itself in its turn (so nothing more is read).
    let index_columns = index_columns(job, &p);
    let loaded = file.indexes_in_memory(next, &index_columns) || rayon::current_num_threads() == 1;
    if !loaded
        || file
            .prefetch(next, &index_columns, &[], &[], job.reader)
            .is_err()
    {
        return Vec::new();
    }
    let rows = rg_meta.num_rows() as usize;
    let candidates = page_candidates(file, next, &p, true);
    let budget = Budget::new(job.memory_limit);
    let mut ranges = Vec::new();
    for c in p.columns() {
        let index = file.chunk_index(next, c).and_then(|i| i.offset.as_ref());
        let ch = ColumnChunk::new(
            &file.leaves[c],
            rg_meta.column(c),
            job.reader,
            index,
            rows,
            &budget,
        );
        match ch.missing_ranges(&candidates) {
            Ok(r) => ranges.extend(r),
            Err(_) => return Vec::new(),
        }
    }
    ranges
}

/// Whether the column chunk at `(start, len)` is known not to be in the page cache, by a probe
/// of its middle (its ends may share a page with bytes already read).
fn chunk_cold(job: &RowGroupJob<'_>, (start, len): (u64, u64)) -> bool {
    job.reader.resident(start + len / 2) == Some(false)
}
