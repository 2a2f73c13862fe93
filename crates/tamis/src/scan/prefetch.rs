//! Local files: what a scan asks the kernel to load ahead of its reads, so that a cold
//! cache's device time overlaps decoding (`POSIX_FADV_WILLNEED`, see
//! [`crate::io::Reader::will_need`] and `docs/DESIGN.md`, "Local prefetch of planned ranges").
//! Advice only: no result depends on it, and a warm scan skips it after one probe.
//!
//! ```text
//! filters start ─► the filter columns' candidate pages
//!                  (+ the payload's, when every payload page is expected to hold a survivor)
//!                  (+ the next row group's filter pages, a row group ahead)
//! payload starts ─► the survivors' payload pages
//! ```

use std::collections::HashMap;
use std::ops::Range;

use parquet::basic::Compression;

use crate::budget::Budget;
use crate::column::ColumnChunk;
use crate::error::Result;
use crate::expr::Predicate;
use crate::selection::{Bitmap, Selection};

use super::estimate::Estimates;
use super::order::and_filters;
use super::pruning::index_columns;
use super::row_group::RowGroupJob;
use crate::prune::page_index::candidates as page_candidates;

/// When a row group's filters start: every filter column's candidate pages, the payload's when
/// nearly all of them will hold a survivor, and the next row group's filter pages, in one
/// advice. `chunks` holds the filter and payload columns' chunks.
pub(super) fn filters(
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

/// When the payload starts: every payload column's pages holding a survivor (the first round
/// of blocks, for pages read by blocks), before the first is read.
pub(super) fn payload<'a>(
    job: &RowGroupJob<'a>,
    chunks: &mut HashMap<usize, ColumnChunk<'a>>,
    chunk: &impl Fn(usize) -> ColumnChunk<'a>,
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
