//! Pruning one row group: what statistics, the sidecar index, Bloom filters, dictionaries and
//! the page index decide before any data page is read, as a plan that the sequencer
//! ([`super::row_group`]) carries out.
//!
//! ```text
//! predicate ─ statistics ─ rows index ─┬─ one coalesced read ─┬─ Bloom ─ dictionary ─► conjuncts left
//!           (False, or no row, at any level ⇒ Skipped, counted under that level)
//!           ─ page index ─ sidecar page Blooms ─ ∩ rows index ─► candidate rows
//! ```
//!
//! Every level implements [`crate::prune::level::Level`]. The row-group levels run as two
//! lists, before and after the one read of the metadata regions they need (page indexes, Bloom
//! filters, dictionary pages; what else rides on that read is the I/O plan's decision,
//! [`super::io_plan`]); the page levels run as a third list on the conjuncts left.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use crate::column::ColumnChunk;
use crate::error::Result;
use crate::expr::{CmpOp, LeafOp, Predicate};
use crate::index::levels::{PageBloomLevel, RowsIndex, Sidecars};
use crate::io::Reader;
use crate::metrics::{add, add_elapsed};
use crate::prune;
use crate::prune::bloom::Bloom;
use crate::prune::dictionary::Dictionaries;
use crate::prune::level::{self, Level, Outcome, RowGroupView};
use crate::prune::page_index::PageIndex;
use crate::prune::statistics::Statistics;
use crate::selection::Bitmap;
use crate::values::Values;

use super::io_plan::IoPlan;
use super::row_group::RowGroupJob;

/// What pruning decided for one row group.
pub(crate) enum Pruned<'a> {
    /// No row can match: the row group is skipped (the metrics count which level decided).
    Skipped,
    Plan(Box<RowGroupPlan<'a>>),
}

/// A row group to read: which conjuncts remain, on which rows.
pub(crate) struct RowGroupPlan<'a> {
    /// The conjuncts left to evaluate (`True`: every candidate row matches). Statistics,
    /// the rows index and dictionaries replaced what they decided.
    pub predicate: Predicate,
    /// The rows the remaining conjuncts are evaluated on: the page index's, narrowed by the
    /// sidecar's page Bloom filters and the rows its rows index decided.
    pub candidates: Bitmap,
    /// The candidates by the page index alone, when the sidecar narrowed them (for counts).
    pub by_page_index: Option<Bitmap>,
    /// Column chunks opened while pruning, holding the bytes read for it (dictionary pages,
    /// prefetched pages on remote sources).
    pub chunks: HashMap<usize, ColumnChunk<'a>>,
    /// Dictionaries of the filter columns dictionary-encoded throughout (for estimates).
    pub dicts: HashMap<usize, Arc<Values>>,
}

/// Prunes the job's row group; `chunk` opens a column chunk of it.
pub(super) fn plan<'a, 'b>(
    job: &RowGroupJob<'a>,
    io: &IoPlan<'_, 'a>,
    chunk: &impl Fn(usize) -> ColumnChunk<'b>,
) -> Result<Pruned<'b>>
where
    'a: 'b,
{
    let file = job.file;
    let m = job.metrics;
    let rg_meta = file.metadata.row_group(job.rg);
    let rows = rg_meta.num_rows() as usize;
    let leaves = &file.leaves;
    let mut chunks: HashMap<usize, ColumnChunk<'b>> = HashMap::new();
    let t = Instant::now();
    let sidecars = Sidecars {
        file,
        reader: job.reader,
        rg: job.rg,
        enabled: job.pruning.sidecar_index,
        dir: job.index_dir,
        broken: job.broken_index,
        verify: job.verify_index,
        metrics: m,
    };
    let column_orders = file
        .metadata
        .file_metadata()
        .column_orders()
        .map(|o| o.as_slice());
    // Dictionaries of columns that are provably dictionary-encoded throughout.
    let mut dicts: HashMap<usize, Arc<Values>> = HashMap::new();
    // Rows the sidecar's rows index decided (its leaves are then `True` in the predicate).
    let mut by_rows_index: Option<Bitmap> = None;
    let predicate = match job.predicate {
        None => Predicate::True,
        Some(p) => {
            let view = RowGroupView {
                leaves,
                metadata: rg_meta,
                column_orders,
            };
            // Levels that need no read of the file's metadata regions: statistics, and the
            // sidecar's rows index, which answers its leaves exactly (their columns are then
            // not read at all).
            let mut statistics = Statistics {
                recorded: job.statistics,
            };
            let mut rows_index = RowsIndex { cx: &sidecars };
            let mut levels: Vec<&mut dyn Level> = Vec::with_capacity(2);
            if job.pruning.statistics {
                levels.push(&mut statistics);
            }
            levels.push(&mut rows_index);
            let p = match level::run(&mut levels, &view, p, &mut by_rows_index)? {
                Outcome::Left(p) => p,
                Outcome::Skipped(kind) => {
                    if job.counts_row_group() {
                        kind.count_skipped(m);
                    }
                    add_elapsed(&m.time_prune_ns, t);
                    return Ok(Pruned::Skipped);
                }
            };
            // One read for what this row group's pruning and pages need from the file's
            // metadata regions: page indexes of the needed columns, Bloom filters of the
            // columns probed by = / IN, dictionary pages of all-dictionary filter columns.
            let probed = if job.pruning.bloom_filters {
                probed_columns(&p)
            } else {
                Vec::new()
            };
            let dict_columns: Vec<usize> = p
                .columns()
                .into_iter()
                .filter(|&c| prune::dictionary::chunk_is_all_dictionary(rg_meta.column(c)))
                .collect();
            for &c in &dict_columns {
                chunks.entry(c).or_insert_with(|| chunk(c));
            }
            let mut metadata: Vec<std::ops::Range<u64>> = probed
                .iter()
                .filter_map(|&c| bloom_range(rg_meta.column(c)))
                .collect();
            metadata.extend(
                dict_columns
                    .iter()
                    .filter_map(|c| chunks.get(c).and_then(|ch| ch.dictionary_range())),
            );
            let page_rows = || Ok(page_levels(job, &sidecars, &view, &p)?.rows);
            let fetched = io.metadata(&p, &metadata, page_rows, chunk)?;
            io.keep(&fetched, &p, chunk, &mut chunks)?;
            // Levels that read those regions: Bloom filters, then dictionaries of the columns
            // whose conjuncts the filters left.
            let blooms = PrefetchedOr {
                fetched: &fetched,
                reader: job.reader,
            };
            let mut bloom = Bloom { reader: &blooms };
            let mut load =
                |c: usize| (chunks.get_mut(&c).expect("created above")).load_dictionary();
            let mut dictionaries = Dictionaries {
                columns: &dict_columns,
                load: &mut load,
                loaded: HashMap::new(),
                all_matched: 0,
            };
            let mut levels: Vec<&mut dyn Level> = Vec::with_capacity(2);
            if job.pruning.bloom_filters {
                levels.push(&mut bloom);
            }
            levels.push(&mut dictionaries);
            let outcome = level::run(&mut levels, &view, &p, &mut None)?;
            add(
                &m.conjuncts_skipped_dictionary,
                dictionaries.all_matched as u64,
            );
            dicts = dictionaries.loaded;
            match outcome {
                Outcome::Left(p) => p,
                Outcome::Skipped(kind) => {
                    if job.counts_row_group() {
                        kind.count_skipped(m);
                    }
                    add_elapsed(&m.time_prune_ns, t);
                    return Ok(Pruned::Skipped);
                }
            }
        }
    };
    // Page levels: the page index, then the sidecar's page Bloom filters (which also keep the
    // page index's rows alone, for the pages-pruned counts).
    let mut by_page_index = None;
    let candidates = match &predicate {
        Predicate::True => {
            if job.predicate.is_some() && by_rows_index.is_none() && job.counts_row_group() {
                add(&m.row_groups_fully_matched, 1);
            }
            Bitmap::new_set(rows)
        }
        p => {
            let view = RowGroupView {
                leaves,
                metadata: rg_meta,
                column_orders,
            };
            let pages = page_levels(job, &sidecars, &view, p)?;
            add(&m.pages_pruned_index, pages.pruned_by_blooms);
            by_page_index = pages.by_page_index;
            pages.rows
        }
    };
    let mut candidates = match by_rows_index {
        Some(mut decided) => {
            decided.and_inplace(&candidates);
            decided
        }
        None => candidates,
    };
    // Rows the table deleted are no candidates: no filter evaluates them, no payload is
    // decoded for them.
    for &row in job.deleted {
        candidates.unset((row - job.first_row) as usize);
    }
    // Rows outside the scan's part of the row group are no candidates either.
    if let Some(ranges) = job.rows {
        candidates.and_inplace(&Bitmap::from_ranges(rows, ranges));
    }
    add_elapsed(&m.time_prune_ns, t);
    add(&m.rows_candidate, candidates.count_ones() as u64);
    Ok(Pruned::Plan(Box::new(RowGroupPlan {
        predicate,
        candidates,
        by_page_index,
        chunks,
        dicts,
    })))
}

/// What the page levels left of a row group.
struct PageLevels {
    /// The candidate rows.
    rows: Bitmap,
    /// The page index's rows alone, when the sidecar's page Bloom filters narrowed them.
    by_page_index: Option<Bitmap>,
    /// Pages of the page index's rows that the page Bloom filters ruled out.
    pruned_by_blooms: u64,
}

/// Runs the page levels on `p`: the page index, then the sidecar's page Bloom filters.
fn page_levels(
    job: &RowGroupJob<'_>,
    sidecars: &Sidecars<'_>,
    view: &RowGroupView<'_>,
    p: &Predicate,
) -> Result<PageLevels> {
    let mut page_index = PageIndex {
        file: job.file,
        rg: job.rg,
        enabled: job.pruning.page_index,
    };
    let mut page_blooms = PageBloomLevel::new(sidecars);
    let mut rows = None;
    let mut levels: [&mut dyn Level; 2] = [&mut page_index, &mut page_blooms];
    level::run(&mut levels, view, p, &mut rows)?;
    Ok(PageLevels {
        rows: rows.unwrap_or_else(|| Bitmap::new_set(view.metadata.num_rows() as usize)),
        by_page_index: page_blooms.before,
        pruned_by_blooms: page_blooms.pages_pruned,
    })
}

/// Columns an `=` or `IN` leaf could prune with a Bloom filter.
fn probed_columns(p: &Predicate) -> Vec<usize> {
    let mut out = Vec::new();
    p.visit_leaves(&mut |leaf| {
        let probes = matches!(
            leaf.op,
            LeafOp::Cmp(CmpOp::Eq, _) | LeafOp::In { negated: false, .. }
        );
        if probes && !out.contains(&leaf.column) {
            out.push(leaf.column);
        }
    });
    out
}

/// A chunk's Bloom filter bytes, when the footer says where and how long.
fn bloom_range(cc: &parquet::file::metadata::ColumnChunkMetaData) -> Option<std::ops::Range<u64>> {
    let start = u64::try_from(cc.bloom_filter_offset()?).ok()?;
    let len = u64::try_from(cc.bloom_filter_length()?).ok()?;
    Some(start..start.checked_add(len)?)
}

/// Serves reads from a row group's prefetched bytes, else from the file.
struct PrefetchedOr<'a> {
    fetched: &'a crate::io::FetchedRanges,
    reader: &'a Reader,
}

impl parquet::file::reader::Length for PrefetchedOr<'_> {
    fn len(&self) -> u64 {
        self.reader.len()
    }
}

impl parquet::file::reader::ChunkReader for PrefetchedOr<'_> {
    type T = bytes::buf::Reader<bytes::Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        self.reader.get_read(start)
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        match self
            .fetched
            .slice(start..start.saturating_add(length as u64))
        {
            Some(b) => Ok(b),
            None => self.reader.get_bytes(start, length),
        }
    }
}
