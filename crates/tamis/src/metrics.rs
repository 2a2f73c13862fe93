//! `ScanMetrics`: the pruning funnel and the cost of a scan.
//!
//! Counters are atomics shared by the row-group workers; [`MetricsCollector::snapshot`] turns them
//! into a plain, serializable [`ScanMetrics`].

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::Serialize;

/// What a scan skipped, read and produced. Every pruning level has its own counter.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ScanMetrics {
    /// Files scanned (not pruned by partition values).
    pub files: u64,
    /// Files skipped by their partition values (or by columns they lack, NULL throughout)
    /// before any of their row groups was read.
    pub files_pruned_partition: u64,
    /// Files of a table skipped by the statistics its metadata records per file (a Delta
    /// log's min, max and null counts), before their footers were read.
    pub files_pruned_table_stats: u64,
    /// Row groups of the scanned files that the scan reached, pruned or read (a limit or a
    /// cancellation can stop it before the last).
    pub row_groups_total: u64,
    /// Row groups skipped by their column chunks' statistics (min, max, null count).
    pub row_groups_pruned_statistics: u64,
    /// Row groups skipped by their column chunks' Bloom filters (`=`, `IN`).
    pub row_groups_pruned_bloom: u64,
    /// Row groups skipped because no entry of a fully dictionary-encoded chunk's dictionary
    /// matches.
    pub row_groups_pruned_dictionary: u64,
    /// Row groups where pruning proved every row matches (no predicate evaluated).
    pub row_groups_fully_matched: u64,
    /// Leaves (conjuncts) whose evaluation was skipped because every dictionary entry matched.
    pub conjuncts_skipped_dictionary: u64,
    /// Data pages of the scanned row groups' needed columns.
    pub pages_total: u64,
    /// Filter-column pages skipped by the page index (ColumnIndex / OffsetIndex).
    pub pages_pruned: u64,
    /// Of the candidate pages the page index left, filter-column pages ruled out by the
    /// sidecar index's page Bloom filters.
    pub pages_pruned_index: u64,
    /// Row groups the sidecar's rows index showed to hold no match.
    pub row_groups_pruned_index: u64,
    /// Conjuncts (leaves) the sidecar's rows index answered, so their column was not read.
    pub conjuncts_decided_index: u64,
    /// Row groups whose sidecar index could not be read and was ignored
    /// ([`crate::BrokenIndex::Ignore`]).
    pub row_groups_index_broken: u64,
    /// Row groups whose file had a sidecar index built for another version of the file
    /// (ignored: it costs time, never rows).
    pub row_groups_index_stale: u64,
    /// Payload pages skipped because no surviving row falls in them.
    pub pages_skipped_payload: u64,
    /// Data pages decompressed and decoded.
    pub pages_read: u64,
    /// Payload pages read by the 4 KiB blocks holding their selected rows, not whole: PLAIN
    /// pages of fixed-width columns, an uncompressed chunk's from the file, a compressed
    /// chunk's from their decompressed copies in the page cache's directory (counted in
    /// `pages_cache_hits` too).
    pub pages_read_partially: u64,
    /// Pages served by the page cache, decompressed already: neither read nor decompressed
    /// ([`crate::cache`]; not counted in `pages_read`).
    pub pages_cache_hits: u64,
    /// Pages of compressed chunks the page cache, when on, did not hold: read, decompressed
    /// and kept.
    pub pages_cache_misses: u64,
    /// Of `pages_cache_hits`, pages read from the cache directory (the disk tier), not found
    /// in memory.
    pub pages_cache_hits_disk: u64,
    /// Rows of the row groups counted in `row_groups_total`.
    pub rows_total: u64,
    /// Rows left after row-group and page pruning (evaluated by the filters).
    pub rows_candidate: u64,
    /// Rows that satisfy the filter (all candidates without one), before a limit cuts the
    /// output.
    pub rows_selected: u64,
    /// Values decoded by filters and payload columns (after skipping).
    pub values_decoded: u64,
    /// Values filters tested where they lie, never decoded: PLAIN page bytes, dictionary codes
    /// (and RLE runs) against the entries' match bitmap.
    pub values_in_place: u64,
    /// Partly alive filter pages the never-slower policy evaluated whole rather than selected.
    pub pages_evaluated_whole: u64,
    /// Total size of the scanned files, in bytes: what reading them whole would cost.
    pub bytes_file: u64,
    /// Bytes actually read from the files (footers, indexes, Bloom filters, pages).
    pub bytes_read: u64,
    /// Bytes of decompressed pages the page cache served: whole pages, and for pages read by
    /// blocks from its directory, the blocks read (not counted in `bytes_read`).
    pub bytes_cache: u64,
    /// Read requests issued (system calls on local files, GETs on object stores).
    pub requests: u64,
    /// Reading and decoding the files' footers, in nanoseconds.
    pub time_metadata_ns: u64,
    /// Pruning files by partition values, row groups and pages by every index, in
    /// nanoseconds summed over row groups (see `time_total_ns`).
    pub time_prune_ns: u64,
    /// Evaluating the filter on the candidate rows, in nanoseconds summed over row groups.
    pub time_filter_ns: u64,
    /// Reading and decoding the selected rows of the projected columns, in nanoseconds
    /// summed over row groups.
    pub time_payload_ns: u64,
    /// Of the row groups' time, waiting for reads (after the footers), in nanoseconds summed
    /// over threads.
    pub time_read_ns: u64,
    /// Of the row groups' time, decompressing pages, in nanoseconds summed over threads (pages
    /// read through the `parquet` crate's reader, for unusual columns, are not counted).
    pub time_decompress_ns: u64,
    /// What decompressing the pages the cache served took when they were first read, in
    /// nanoseconds summed over pages: the decompression the cache saved this scan.
    pub time_decompress_saved_ns: u64,
    /// Wall-clock time from the start of the scan's stream to its end, in nanoseconds. The
    /// other `time_*` counters add up row groups that run in parallel and can exceed it.
    pub time_total_ns: u64,
    /// The filter order chosen for the first row group that evaluated filters (its top-level
    /// sequence: an AND's filters, or an OR's children under the negate flag).
    pub filter_order: Vec<FilterStep>,
    /// What the scan ignored and the user should know (a broken sidecar index), first of each.
    pub warnings: Vec<String>,
}

/// One filter of the reported order (see [`ScanMetrics::filter_order`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FilterStep {
    /// The filter as SQL; leaves on one column are evaluated together.
    pub filter: String,
    /// Evaluated with the negate flag (an OR's child: it keeps the rows where it is not true).
    pub negated: bool,
    /// Bits per value its select reads: dictionary code width, else the physical width.
    pub bit_width: u32,
    /// Fraction of rows passing, estimated from that row group's statistics or dictionary.
    pub estimated_selectivity: f64,
    /// Fraction of rows passing, measured over the whole scan (`None` if it never ran).
    pub measured_selectivity: Option<f64>,
}

macro_rules! collector {
    ($($field:ident),* $(,)?) => {
        /// Shared, thread-safe counters behind [`ScanMetrics`].
        #[derive(Debug, Default)]
        pub struct MetricsCollector {
            $(pub $field: AtomicU64,)*
            warnings: std::sync::Mutex<Vec<String>>,
        }

        impl MetricsCollector {
            /// Records a warning once (the same text from every row group is one warning).
            pub fn warn(&self, text: String) {
                let mut w = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
                if !w.contains(&text) {
                    w.push(text);
                }
            }

            pub fn warnings(&self) -> Vec<String> {
                self.warnings.lock().unwrap_or_else(|e| e.into_inner()).clone()
            }

            pub fn snapshot(&self) -> ScanMetrics {
                ScanMetrics { $($field: self.$field.load(Relaxed),)* ..ScanMetrics::default() }
            }
        }
    };
}

collector!(
    files,
    files_pruned_partition,
    files_pruned_table_stats,
    row_groups_total,
    row_groups_pruned_statistics,
    row_groups_pruned_bloom,
    row_groups_pruned_dictionary,
    row_groups_fully_matched,
    conjuncts_skipped_dictionary,
    pages_total,
    pages_pruned,
    pages_pruned_index,
    row_groups_pruned_index,
    conjuncts_decided_index,
    row_groups_index_broken,
    row_groups_index_stale,
    pages_skipped_payload,
    pages_read,
    pages_read_partially,
    pages_cache_hits,
    pages_cache_misses,
    rows_total,
    rows_candidate,
    rows_selected,
    values_decoded,
    values_in_place,
    pages_evaluated_whole,
    bytes_file,
    bytes_read,
    requests,
    time_metadata_ns,
    time_prune_ns,
    time_filter_ns,
    time_payload_ns,
    time_read_ns,
    time_decompress_ns,
    time_total_ns,
);

/// Adds `n` to a counter.
#[inline]
pub(crate) fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Relaxed);
}

/// Adds the time elapsed since `start` to a nanosecond counter.
pub(crate) fn add_elapsed(counter: &AtomicU64, start: std::time::Instant) {
    add(counter, start.elapsed().as_nanos() as u64);
}
