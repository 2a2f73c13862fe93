//! One row group, start to finish: prune, filter, project. A sequencer — the logic lives in
//! `scan/pruning.rs` (pruning), `column/` and `encoding/`.
//!
//! ```text
//! plan (pruning.rs) ─► Skipped, or the conjuncts left and the candidate rows
//!           (every byte range fetched, local or remote: io_plan.rs)
//!           ─ filters in the cost model's order (order.rs), each only on rows still alive;
//!             OR through De Morgan with the negate flag ─► selection
//!           ─ payload columns: only pages holding a selected row ─► Arrow arrays
//! ```

use std::collections::HashMap;
use std::time::Instant;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::{DataType, SchemaRef};

use crate::budget::Budget;
use crate::column::arrays::{is_native, to_arrow, widens_to_i128};
use crate::column::filter::eval_conjunction;
use crate::column::project::{project, Projected, Projection};
use crate::column::repeated::{ListChunk, ListPlan};
use crate::column::ColumnChunk;
use crate::dataset::plan::{counts_row_group, rows_in};
use crate::dataset::FileOutput;
use crate::error::{Error, ErrorKind, Result};
use crate::expr::compare::{ColumnRows, Comparison};
use crate::expr::{Predicate, Scalar};
use crate::io::Reader;
use crate::metrics::{add, add_elapsed, MetricsCollector};
use crate::prune::statistics::LeafVerdicts;
use crate::schema::LeafColumn;
use crate::selection::{Bitmap, Selection};

use super::estimate::Estimates;
use super::fallback;
use super::io_plan::{payload_leaves, IoPlan};
use super::order::{and_filters, or_filters, Filter, FilterKind, Planner};
use super::pinned::{pinned_value, repeated};
use super::pruning::{plan, Pruned, RowGroupPlan};
use super::Pruning;
use crate::file::OpenedFile;
use crate::index::BrokenIndex;

/// What a row group task needs besides its file.
pub(crate) struct RowGroupJob<'a> {
    pub file: &'a OpenedFile,
    /// The scan's reader of this file (counts bytes and requests, honours cancellation).
    pub reader: &'a Reader,
    pub rg: usize,
    /// The row group of the same file the scan starts after this one, if any: on a local
    /// file, its filter pages start loading while this one decodes (see [`prefetch`]).
    pub next_rg: Option<usize>,
    /// Bound to this file's leaves.
    pub predicate: Option<&'a Predicate>,
    /// The footer statistics' verdicts on `predicate`, taken when the scan bound its files.
    pub statistics: Option<&'a LeafVerdicts>,
    /// The same for `next_rg` (its filter pages are advised ahead, see [`prefetch`]).
    pub next_statistics: Option<&'a LeafVerdicts>,
    /// The file columns to read and how they become the output batch (`schema`).
    pub output: &'a FileOutput,
    pub schema: &'a SchemaRef,
    pub metrics: &'a MetricsCollector,
    /// Filter ordering shared by the scan's row groups (measured selectivities, the report).
    pub planner: &'a Planner,
    /// Position of this row group in the scan (file order), for the report.
    pub ordinal: usize,
    /// Which pruning structures may be used.
    pub pruning: Pruning,
    /// Leaf columns the projection reads (their offset indexes skip payload pages).
    pub needed_leaves: &'a [usize],
    /// Bytes this row group's decoding may take (see [`crate::budget`]).
    pub memory_limit: usize,
    /// Rows of the payload decoded and handed on at a time.
    pub range_rows: usize,
    /// Where sidecar indexes are, when not beside the file.
    pub index_dir: Option<&'a std::path::Path>,
    /// What a sidecar that cannot be read does.
    pub broken_index: BrokenIndex,
    /// Check indexed column chunks against the sidecar's content hashes before using it.
    pub verify_index: bool,
    /// The position in its file of the row group's first row.
    pub first_row: u64,
    /// The rows of this row group a table deleted (positions in the file, ascending).
    pub deleted: &'a [u64],
    /// Only these rows of the row group are read (ascending, disjoint; see
    /// [`crate::ScanPart`]); `None`: all.
    pub rows: Option<&'a [std::ops::Range<usize>]>,
}

impl RowGroupJob<'_> {
    /// Whether this job counts its row group in the metrics (see [`counts_row_group`]).
    pub(crate) fn counts_row_group(&self) -> bool {
        counts_row_group(self.rows)
    }
}

/// Runs the row group; hands the selected rows of the projected columns to `emit`, a range of
/// rows at a time, in order, while `emit` returns true (false: the consumer is gone).
pub(crate) fn scan_row_group(
    job: &RowGroupJob<'_>,
    emit: &mut dyn FnMut(RecordBatch) -> bool,
) -> Result<()> {
    run(job, emit).map_err(|e| e.in_row_group(job.rg).in_file(job.file.name()))
}

fn run(job: &RowGroupJob<'_>, emit: &mut dyn FnMut(RecordBatch) -> bool) -> Result<()> {
    let file = job.file;
    let m = job.metrics;
    let rg_meta = file.metadata.row_group(job.rg);
    let rows = rg_meta.num_rows() as usize;
    let budget = Budget::new(job.memory_limit);
    // The row group's selection bitmaps (candidates, alive rows, each filter's result).
    budget.reserve(rows.div_ceil(8).saturating_mul(4), || {
        format!("selection bitmaps of a row group of {rows} rows")
    })?;
    if job.counts_row_group() {
        add(&m.row_groups_total, 1);
    }
    add(&m.rows_total, job.rows.map_or(rows as u64, rows_in));
    let leaves = &file.leaves;
    let use_index = job.pruning.page_index;
    let chunk_index = |c: usize| file.chunk_index(job.rg, c).filter(|_| use_index);
    let offset_index = |c: usize| chunk_index(c).and_then(|i| i.offset.as_ref());
    let chunk = |c: usize| {
        ColumnChunk::new(
            &leaves[c],
            rg_meta.column(c),
            job.reader,
            offset_index(c),
            rows,
            &budget,
        )
    };

    // Every byte range this row group fetches is decided by its I/O plan.
    let io = IoPlan::new(job);
    // The page cache keys pages by their offsets, which the offset index gives: with the cache
    // on, payload columns load it too, so that their pages are served from the cache and kept
    // there (a chunk without it is read whole and walked). Only a help: a page index that
    // cannot be loaded here leaves the scan as it would be with the cache off.
    if use_index && crate::cache::page_cache().is_some() {
        let _ = file.prefetch(job.rg, &payload_leaves(job), &[], &[], job.reader);
    }

    // ── prune ────────────────────────────────────────────────────────────────────────────────
    let column_orders = file
        .metadata
        .file_metadata()
        .column_orders()
        .map(|o| o.as_slice());
    let RowGroupPlan {
        predicate,
        candidates,
        by_page_index,
        mut chunks,
        dicts,
    } = match plan(job, &io, &chunk)? {
        Pruned::Skipped => return Ok(()),
        Pruned::Plan(plan) => *plan,
    };

    // ── filter ───────────────────────────────────────────────────────────────────────────────
    let t = Instant::now();
    let filter_columns = predicate.columns();
    let payload = payload_leaves(job);
    let selection = if candidates.count_ones() == 0 {
        candidates.clone()
    } else {
        for &c in filter_columns.iter().chain(&payload) {
            chunks.entry(c).or_insert_with(|| chunk(c));
        }
        io.filters(
            &mut chunks,
            &chunk,
            &filter_columns,
            &payload,
            &predicate,
            &candidates,
            || Estimates::new(leaves, rg_meta, column_orders, &dicts),
        )?;
        let mut cx = Filtering {
            chunks: &mut chunks,
            metrics: m,
            planner: job.planner,
            estimates: Estimates::new(leaves, rg_meta, column_orders, &dicts),
            report: job.planner.wants_report(job.ordinal).then_some(job.ordinal),
        };
        eval(&predicate, &candidates, false, &mut cx)?
    };
    let page_index_candidates = by_page_index.as_ref().unwrap_or(&candidates);
    for &c in &filter_columns {
        if let Some(layout) = chunks.get(&c).and_then(|ch| ch.page_layout()) {
            add(&m.pages_total, layout.len() as u64);
            let pruned = layout
                .iter()
                .filter(|(s, n)| !page_index_candidates.any_in(*s, s + n))
                .count();
            add(&m.pages_pruned, pruned as u64);
        }
    }
    add_elapsed(&m.time_filter_ns, t);
    let selected = selection.count_ones();
    add(&m.rows_selected, selected as u64);
    if selected == 0 {
        return Ok(());
    }

    // ── payload ──────────────────────────────────────────────────────────────────────────────
    let t = Instant::now();
    // Page planning and page windows read the survivors as ranges when they are sparse.
    let survivors = Selection::from_bitmap(selection.clone());
    // Filter-only columns are freed now; payload chunks free their pages as the ranges below
    // pass them.
    chunks.retain(|c, _| payload.contains(c));
    let sub_page = job.pruning.sub_page_reads && use_index;
    io.payload(
        &mut chunks,
        &chunk,
        &payload,
        &filter_columns,
        &survivors,
        sub_page,
    )?;
    let fields = file.schema().fields();
    // The type each read column is decoded to (its file's, or the view the output asks for).
    let targets: Vec<&DataType> = (job.output.read.iter())
        .map(|&root| (job.output).read_type(root, fields[root].data_type(), job.schema))
        .collect();
    // Each output column: a flat native leaf tamis decodes range by range, or an array built
    // once for the row group (lists, the parquet crate's reader), sliced per range.
    let mut outputs = Vec::with_capacity(job.output.read.len());
    for (&root, &target) in job.output.read.iter().zip(&targets) {
        let leaf = leaves.iter().find(|l| l.root == root && !l.nested);
        let pinned = leaf
            .filter(|l| is_native(l, target))
            .and_then(|l| Some((l, pinned_value(job.predicate, l)?)));
        outputs.push(match (leaf, pinned) {
            (_, Some((leaf, value))) => Column::Pinned(leaf, value),
            (Some(leaf), None) if is_native(leaf, target) => {
                let c = leaf.index;
                let ch = chunks.entry(c).or_insert_with(|| chunk(c));
                if !filter_columns.contains(&c) {
                    if let Some(layout) = ch.page_layout() {
                        add(&m.pages_total, layout.len() as u64);
                        let skipped = layout
                            .iter()
                            .filter(|(s, n)| !survivors.any_in(*s, s + n))
                            .count();
                        add(&m.pages_skipped_payload, skipped as u64);
                    }
                }
                Column::Native(leaf)
            }
            _ => Column::Whole(whole_column(job, root, &selection, &budget)?),
        });
    }
    // Ranges of rows holding about `range_rows` selected rows each, each read, assembled and
    // handed on before the next is decoded, so that its arrays are still in cache when the
    // consumer reads them and the task holds one range's pages. A sparse selection stays one
    // range: small ranges cost more (a page reader opened per chunk and range, a batch handed
    // over) than they save. So does a row group with a column built whole, or a payload chunk
    // without an offset index (its pages are found by walking the chunk, which a range would
    // repeat).
    let whole = outputs.iter().any(|o| match o {
        Column::Whole(_) => true,
        Column::Native(leaf) => chunks[&leaf.index].page_layout().is_none(),
        Column::Pinned(..) => false,
    });
    let ends = if whole {
        vec![rows]
    } else {
        range_ends(&selection, job.range_rows.max(1))
    };
    add_elapsed(&m.time_payload_ns, t);
    let mut emitted = 0;
    let mut start = 0;
    for &end in &ends {
        let t = Instant::now();
        let in_range = selection.count_range(start, end);
        let range = if ends.len() == 1 {
            survivors.clone()
        } else {
            survivors.within(start, end)
        };
        start = end;
        if in_range == 0 {
            continue;
        }
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(outputs.len());
        for (o, &target) in outputs.iter().zip(&targets) {
            columns.push(match o {
                Column::Native(leaf) => {
                    // (A column selected twice reads its chunk again: the first freed it.)
                    let c = leaf.index;
                    let ch = chunks.entry(c).or_insert_with(|| chunk(c));
                    let how = Projection {
                        sub_page,
                        dictionary_codes: true,
                        decimal128: widens_to_i128(leaf)
                            && matches!(target, DataType::Decimal128(..)),
                    };
                    let projected = project(ch, &range, how, m)?;
                    // The last range frees the whole chunk before the next column is read.
                    if end == rows {
                        chunks.remove(&leaf.index);
                    } else {
                        ch.release_before(end);
                    }
                    to_arrow(leaf, projected, target).map_err(|e| e.in_column(&leaf.path))?
                }
                Column::Whole(array) => array.slice(emitted, in_range),
                Column::Pinned(leaf, value) => {
                    // Copies of a long byte string can outgrow the chunk they replace.
                    let width = match value {
                        crate::expr::Scalar::Bytes(b) => b.len() + 8,
                        _ => 8,
                    };
                    budget
                        .reserve_items(in_range, width, || {
                            format!("{in_range} copies of the value pinned by the predicate")
                        })
                        .map_err(|e| e.in_column(&leaf.path))?;
                    let values = repeated(leaf, value, in_range).ok_or_else(|| {
                        Error::internal("a pinned value no longer fits its column")
                    })?;
                    let projected = Projected::new(Some(values), vec![true; in_range]);
                    to_arrow(leaf, projected, target).map_err(|e| e.in_column(&leaf.path))?
                }
            });
        }
        let batch = job.output.assemble(job.schema, columns, in_range)?;
        emitted += in_range;
        add_elapsed(&m.time_payload_ns, t);
        if !emit(batch) {
            break;
        }
    }
    Ok(())
}

/// Selected rows a row group decodes and hands on at a time by default (see the payload stage
/// of [`run`]).
pub(crate) const RANGE_ROWS: usize = 1 << 17;

/// Where ranges holding about `target` selected rows each end (the last at the row group's
/// end), cut at multiples of 4 096 rows (or of `target`, when smaller).
fn range_ends(selection: &Bitmap, target: usize) -> Vec<usize> {
    let rows = selection.len();
    let step = target.min(4096);
    let mut ends = Vec::new();
    let mut selected = 0;
    for start in (0..rows).step_by(step) {
        let end = (start + step).min(rows);
        selected += selection.count_range(start, end);
        if selected >= target && end < rows {
            ends.push(end);
            selected = 0;
        }
    }
    ends.push(rows);
    ends
}

/// An output column of a row group.
enum Column<'l> {
    /// Decoded by tamis, a range at a time.
    Native(&'l LeafColumn),
    /// Built for the whole row group.
    Whole(ArrayRef),
    /// One value in every selected row ([`super::pinned`]): no page is read.
    Pinned(&'l LeafColumn, Scalar),
}

/// The selected rows of output column `root` that tamis does not decode as a flat column:
/// lists of a primitive through the levels (Algorithm 4), the rest (and lists with a page
/// tamis cannot decode) through the `parquet` crate's reader.
fn whole_column(
    job: &RowGroupJob<'_>,
    root: usize,
    selection: &Bitmap,
    budget: &Budget,
) -> Result<ArrayRef> {
    let file = job.file;
    let field = &file.schema().fields()[root];
    let rg_meta = file.metadata.row_group(job.rg);
    let root_type = file.metadata.file_metadata().schema_descr().root_schema();
    let plan = root_type
        .get_fields()
        .get(root)
        .and_then(|t| ListPlan::new(&file.leaves, root, t, field));
    let fallback = || {
        fallback::read_root(file, job.reader, job.rg, root, selection)
            .map_err(|e| e.in_column(field.name()))
    };
    let Some(plan) = plan else {
        return fallback();
    };
    let c = plan.leaf.index;
    let offset_index = file
        .chunk_index(job.rg, c)
        .filter(|_| job.pruning.page_index)
        .and_then(|i| i.offset.as_ref());
    let list = ListChunk {
        plan,
        meta: rg_meta.column(c),
        reader: job.reader,
        offset_index,
        rg_rows: rg_meta.num_rows() as usize,
        budget,
    };
    match list.project(selection, job.metrics) {
        Err(e) if e.kind == ErrorKind::Unsupported => fallback(),
        other => other,
    }
}

/// The filter stage of one row group.
struct Filtering<'c, 'a> {
    chunks: &'c mut HashMap<usize, ColumnChunk<'a>>,
    metrics: &'c MetricsCollector,
    planner: &'c Planner,
    estimates: Estimates<'c>,
    /// This row group's ordinal while its top-level order is still to be reported.
    report: Option<usize>,
}

/// Rows in `mask` where `p` is TRUE; with `negate`, the rows in `mask` where `p` is not TRUE.
///
/// The tree is in negation normal form (NOT only inside leaves, a NULL satisfies no leaf but
/// `IS NULL`), so "not TRUE" is exactly the complement within `mask`, and "OR is not TRUE" means
/// "no child is TRUE": `a ∨ b` is evaluated as `mask ∖ (¬a ∧ ¬b)` (De Morgan, paper §4.5).
fn eval(p: &Predicate, mask: &Bitmap, negate: bool, cx: &mut Filtering<'_, '_>) -> Result<Bitmap> {
    Ok(match p {
        Predicate::True | Predicate::False => {
            if matches!(p, Predicate::True) != negate {
                mask.clone()
            } else {
                Bitmap::new_zeroed(mask.len())
            }
        }
        Predicate::Leaf(_) => {
            eval_sequence(&or_filters(std::slice::from_ref(p)), mask, negate, cx)?
        }
        Predicate::Compare(c) => {
            let passed = compare_rows(c, mask, cx)?;
            if negate {
                complement(mask, &passed)
            } else {
                passed
            }
        }
        Predicate::And(children) => {
            let all = eval_sequence(&and_filters(children), mask, false, cx)?;
            if negate {
                complement(mask, &all)
            } else {
                all
            }
        }
        Predicate::Or(children) => {
            // The children, negated, narrow the rows no child has accepted yet.
            let none = eval_sequence(&or_filters(children), mask, true, cx)?;
            if negate {
                none
            } else {
                complement(mask, &none)
            }
        }
    })
}

/// Applies the filters one after another in the planner's order, each on the rows the previous
/// ones kept (with `negate`, each keeps the rows where it is not TRUE); returns the rows kept.
/// Records every filter's selectivity for the following row groups.
fn eval_sequence(
    filters: &[Filter<'_>],
    mask: &Bitmap,
    negate: bool,
    cx: &mut Filtering<'_, '_>,
) -> Result<Bitmap> {
    let order = cx.planner.order(filters, &mut cx.estimates, negate);
    if let Some(ordinal) = cx.report.take() {
        let steps = order
            .iter()
            .map(|&i| cx.estimates.step(&filters[i], negate))
            .collect();
        cx.planner.offer_report(ordinal, steps);
    }
    let mut alive = mask.clone();
    for i in order {
        let rows_in = alive.count_ones();
        if rows_in == 0 {
            break;
        }
        let filter = &filters[i];
        let kept = match &filter.kind {
            FilterKind::Column { column, leaves } => {
                let ch = cx
                    .chunks
                    .get_mut(column)
                    .ok_or_else(|| Error::internal("filter column not prepared"))?;
                let passed = eval_conjunction(
                    ch,
                    leaves,
                    &alive,
                    cx.metrics,
                    &cx.planner.adaptive,
                    filter.key,
                )?;
                if negate {
                    complement(&alive, &passed)
                } else {
                    passed
                }
            }
            FilterKind::Node(p) => eval(p, &alive, negate, cx)?,
        };
        let rows_kept = kept.count_ones();
        let rows_passed = if negate {
            rows_in - rows_kept
        } else {
            rows_kept
        };
        cx.planner.record(filter.key, rows_in, rows_passed);
        alive = kept;
    }
    Ok(alive)
}

/// Rows in `mask` where a comparison between columns is TRUE: its columns are decoded for
/// those rows only, then compared row by row.
fn compare_rows(c: &Comparison, mask: &Bitmap, cx: &mut Filtering<'_, '_>) -> Result<Bitmap> {
    let n = mask.count_ones();
    if n == 0 {
        return Ok(Bitmap::new_zeroed(mask.len()));
    }
    let selection = Selection::from_bitmap(mask.clone());
    let mut decoded = Vec::new();
    for column in c.columns() {
        let ch = cx
            .chunks
            .get_mut(&column)
            .ok_or_else(|| Error::internal("comparison column not prepared"))?;
        let projected = project(ch, &selection, Projection::default(), cx.metrics)?;
        let values = projected
            .values
            .ok_or_else(|| Error::internal("no values decoded for a comparison"))?;
        decoded.push((ch.leaf, values, projected.validity));
    }
    let rows: Vec<ColumnRows<'_>> = decoded
        .into_iter()
        .map(|(column, values, validity)| ColumnRows {
            column,
            values,
            validity,
        })
        .collect();
    let holds = c.evaluate(&rows, n)?;
    // One bit per alive row, spread onto the rows (PDEP by the mask).
    Ok(Bitmap::from_bools(&holds).transform(mask))
}

/// The rows of `within` not in `rows`.
fn complement(within: &Bitmap, rows: &Bitmap) -> Bitmap {
    let mut out = within.clone();
    out.and_not_inplace(rows);
    out
}
