//! The one interface of every pruning level. In: the predicate left so far, the row group's
//! metadata and the candidate rows so far (a level holds its own way to the bytes it reads:
//! fetched ranges, a sidecar, a dictionary loader, the page index). Out: the predicate with
//! what the level proved folded in, and the rows it proved are the only candidates. The scan's
//! sequencer (`scan/pruning.rs`) runs the levels as lists: a row group a row-group level proves
//! empty is skipped, counted under that level; page levels narrow the candidate rows.
//!
//! Runtime (join) filters are not a level of their own: they arrive as leaves of the predicate
//! (bounds, `IN` lists, key filters: `tamis-datafusion`'s `dynamic.rs`), which every level
//! prunes with as far as it can. Pinned columns prune no rows but the reads of a column, so the
//! I/O plan (`scan/io_plan.rs`) asks them.

use parquet::basic::ColumnOrder;
use parquet::file::metadata::RowGroupMetaData;

use crate::error::Result;
use crate::expr::Predicate;
use crate::metrics::{add, MetricsCollector};
use crate::schema::LeafColumn;
use crate::selection::Bitmap;

/// One row group as every level sees it.
pub(crate) struct RowGroupView<'a> {
    /// The file's leaf columns (the predicate's leaves index them).
    pub(crate) leaves: &'a [LeafColumn],
    pub(crate) metadata: &'a RowGroupMetaData,
    /// The footer's column orders (`None`: a legacy file), for trusting statistics.
    pub(crate) column_orders: Option<&'a [ColumnOrder]>,
}

/// What a level proved about a row group.
pub(crate) struct Narrowed {
    /// The predicate with the leaves the level decided folded in (`False`: no row can match,
    /// `True`: every candidate row matches).
    pub(crate) predicate: Predicate,
    /// The only rows that can match, from a level that proves it row by row (`None`: the level
    /// says nothing of rows).
    pub(crate) rows: Option<Bitmap>,
}

impl Narrowed {
    /// A verdict on the predicate alone.
    pub(crate) fn to(predicate: Predicate) -> Narrowed {
        Narrowed {
            predicate,
            rows: None,
        }
    }
}

/// The structures that prune a row group whole, in the order it meets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LevelKind {
    /// Footer statistics.
    Statistics,
    /// The sidecar's rows index.
    RowsIndex,
    /// Bloom filters in the file.
    Bloom,
    /// Dictionary pages of chunks dictionary-encoded throughout.
    Dictionary,
    /// The page index (ColumnIndex / OffsetIndex): narrows rows, page by page.
    PageIndex,
    /// The sidecar's page Bloom filters: narrows rows, page by page.
    PageBlooms,
}

impl LevelKind {
    /// Counts a row group this level skipped (page levels count the pages they prune, not
    /// row groups).
    pub(crate) fn count_skipped(self, m: &MetricsCollector) {
        let counter = match self {
            LevelKind::Statistics => &m.row_groups_pruned_statistics,
            LevelKind::RowsIndex => &m.row_groups_pruned_index,
            LevelKind::Bloom => &m.row_groups_pruned_bloom,
            LevelKind::Dictionary => &m.row_groups_pruned_dictionary,
            LevelKind::PageIndex | LevelKind::PageBlooms => return,
        };
        add(counter, 1);
    }
}

/// A pruning level.
pub(crate) trait Level {
    /// Which structure this is.
    fn kind(&self) -> LevelKind;
    /// Narrows `p` for the row group, whose candidate rows so far are `rows` (`None`: all).
    fn narrow(
        &mut self,
        rg: &RowGroupView<'_>,
        p: &Predicate,
        rows: Option<&Bitmap>,
    ) -> Result<Narrowed>;
}

/// What a list of levels left: the predicate and the candidate rows, or the level that proved
/// no row of the row group can match.
pub(crate) enum Outcome {
    Left(Predicate),
    Skipped(LevelKind),
}

/// Runs `levels` in order on `p`, intersecting the rows they prove into `rows`; stops at the
/// first that leaves `False` or no row.
pub(crate) fn run(
    levels: &mut [&mut dyn Level],
    rg: &RowGroupView<'_>,
    p: &Predicate,
    rows: &mut Option<Bitmap>,
) -> Result<Outcome> {
    let mut left: Option<Predicate> = None;
    for level in levels.iter_mut() {
        let narrowed = level.narrow(rg, left.as_ref().unwrap_or(p), rows.as_ref())?;
        if let Some(proved) = narrowed.rows {
            match rows {
                Some(acc) => acc.and_inplace(&proved),
                None => *rows = Some(proved),
            }
        }
        if narrowed.predicate == Predicate::False
            || rows.as_ref().is_some_and(|r| r.count_ones() == 0)
        {
            return Ok(Outcome::Skipped(level.kind()));
        }
        left = Some(narrowed.predicate);
    }
    Ok(Outcome::Left(left.unwrap_or_else(|| p.clone())))
}
