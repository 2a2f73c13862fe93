//! One row group, start to finish: prune, filter, project. A sequencer — the logic lives in
//! `prune/`, `column/` and `encoding/`.
//!
//! ```text
//! predicate ─ statistics ─ Bloom ─ dictionary ─► simplified predicate (False ⇒ skip the group)
//!           ─ page index ─► candidate rows (Bitmap)
//!           ─ filters in the cost model's order (order.rs), each only on rows still alive;
//!             OR through De Morgan with the negate flag ─► selection
//!           ─ payload columns: only pages holding a selected row ─► Arrow arrays
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::SchemaRef;

use crate::arrow::{is_native, to_arrow};
use crate::budget::Budget;
use crate::column::filter::eval_conjunction;
use crate::column::project::project;
use crate::column::repeated::{ListChunk, ListPlan};
use crate::column::ColumnChunk;
use crate::dataset::FileOutput;
use crate::error::{Error, ErrorKind, Result};
use crate::expr::compare::{ColumnRows, Comparison};
use crate::expr::Predicate;
use crate::expr::{CmpOp, LeafOp};
use crate::index::page_bloom::{self, PageBlooms};
use crate::index::SidecarState;
use crate::io::Reader;
use crate::metrics::{add, add_elapsed, MetricsCollector};
use crate::prune;
use crate::selection::{Bitmap, Selection};
use crate::values::Values;

use super::estimate::Estimates;
use super::fallback;
use super::file::OpenedFile;
use super::order::{and_filters, or_filters, Filter, FilterKind, Planner};
use super::{BrokenIndex, Pruning};

/// What a row group task needs besides its file.
pub struct RowGroupJob<'a> {
    pub file: &'a OpenedFile,
    /// The scan's reader of this file (counts bytes and requests, honours cancellation).
    pub reader: &'a Reader,
    pub rg: usize,
    /// Bound to this file's leaves.
    pub predicate: Option<&'a Predicate>,
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
    /// Where sidecar indexes are, when not beside the file.
    pub index_dir: Option<&'a std::path::Path>,
    /// What a sidecar that cannot be read does.
    pub broken_index: BrokenIndex,
}

/// Runs the row group; returns the selected rows of the projected columns.
pub fn scan_row_group(job: &RowGroupJob<'_>) -> Result<Option<RecordBatch>> {
    run(job).map_err(|e| e.in_row_group(job.rg).in_file(job.file.name()))
}

fn run(job: &RowGroupJob<'_>) -> Result<Option<RecordBatch>> {
    let file = job.file;
    let m = job.metrics;
    let rg_meta = file.metadata.row_group(job.rg);
    let rows = rg_meta.num_rows() as usize;
    let budget = Budget::new(job.memory_limit);
    // The row group's selection bitmaps (candidates, alive rows, each filter's result).
    budget.reserve(rows.div_ceil(8).saturating_mul(4), || {
        format!("selection bitmaps of a row group of {rows} rows")
    })?;
    add(&m.row_groups_total, 1);
    add(&m.rows_total, rows as u64);
    let leaves = &file.leaves;
    let use_index = job.pruning.page_index;
    let chunk_index = |c: usize| file.chunk_index(job.rg, c).filter(|_| use_index);
    let offset_index = |c: usize| chunk_index(c).and_then(|i| i.offset.as_ref());
    let column_index = |c: usize| chunk_index(c).and_then(|i| i.column.as_ref());
    let mut chunks: HashMap<usize, ColumnChunk<'_>> = HashMap::new();
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

    // ── prune ────────────────────────────────────────────────────────────────────────────────
    let t = Instant::now();
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
            let p = if job.pruning.statistics {
                prune::row_group::statistics_verdict_with_orders(p, leaves, rg_meta, column_orders)
            } else {
                p.clone()
            };
            if p == Predicate::False {
                add(&m.row_groups_pruned_statistics, 1);
                add_elapsed(&m.time_prune_ns, t);
                return Ok(None);
            }
            // The sidecar's rows index answers its leaves exactly: their columns are not read.
            let (p, rows_by_index) = decide_by_rows_index(job, &p)?;
            if rows_by_index.as_ref().is_some_and(|r| r.count_ones() == 0) {
                add(&m.row_groups_pruned_index, 1);
                add_elapsed(&m.time_prune_ns, t);
                return Ok(None);
            }
            by_rows_index = rows_by_index;
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
            let mut index_columns = p.columns();
            index_columns.extend(job.needed_leaves.iter().copied());
            // Remote, with the page indexes already in memory (the footer read held them): the
            // filter columns' pages the page index leaves come in this same read, saving the
            // round trip of phase one; if Bloom filters or dictionaries then prune the row
            // group, those bytes were spent for nothing — cheaper than a round trip each time.
            // Only when this read happens anyway (Bloom filters or dictionaries not in
            // memory); otherwise phase one is the first round trip and fetches the same pages.
            let mut pages = Vec::new();
            if job.reader.source().is_remote()
                && use_index
                && !file.all_in_memory(&metadata)
                && file.indexes_in_memory(job.rg, &index_columns)
            {
                file.prefetch(job.rg, &index_columns, &[], &[], job.reader)?;
                let mut rows_left =
                    prune::page_index::page_ranges(&p, leaves, rows, &column_index, &offset_index)
                        .map_or_else(|| Bitmap::new_set(rows), |r| Bitmap::from_ranges(rows, &r));
                narrow_by_sidecar(job, &p, &mut rows_left)?;
                let filter_columns = p.columns();
                for &c in &filter_columns {
                    pages.extend(chunk(c).missing_ranges(&rows_left)?);
                }
                pages.extend(speculative_payload(
                    job,
                    &filter_columns,
                    &rows_left,
                    &chunk,
                )?);
            }
            let fetched = file.prefetch(
                job.rg,
                if use_index { &index_columns } else { &[] },
                &metadata,
                &pages,
                job.reader,
            )?;
            // Chunks created before the page index was loaded are rebuilt with it, and keep
            // what this read brought.
            let mut offered = p.columns();
            if job.reader.source().is_remote() {
                offered.extend(payload_leaves(job));
            }
            for c in offered {
                let mut ch = chunk(c);
                ch.offer(&fetched)?;
                chunks.insert(c, ch);
            }
            let p = if job.pruning.bloom_filters {
                let blooms = PrefetchedOr {
                    fetched: &fetched,
                    reader: job.reader,
                };
                prune::bloom::bloom_verdict(&p, leaves, rg_meta, &blooms)?
            } else {
                p
            };
            if p == Predicate::False {
                add(&m.row_groups_pruned_bloom, 1);
                add_elapsed(&m.time_prune_ns, t);
                return Ok(None);
            }
            for &c in &dict_columns {
                if p.columns().contains(&c) {
                    if let Some(d) = chunks
                        .get_mut(&c)
                        .expect("created above")
                        .load_dictionary()?
                    {
                        dicts.insert(c, d);
                    }
                }
            }
            let (p, skipped) = if dicts.is_empty() {
                (p, 0)
            } else {
                let dict_of = |c: usize| dicts.get(&c).map(|d| d.as_ref().clone());
                // A required column holds no nulls; otherwise trust the statistics' null count.
                let nulls = |c: usize| {
                    if !leaves[c].optional() {
                        return Some(0);
                    }
                    rg_meta
                        .column(c)
                        .statistics()
                        .and_then(|s| s.null_count_opt())
                };
                prune::dictionary::dictionary_verdict(&p, leaves, &dict_of, &nulls)?
            };
            add(&m.conjuncts_skipped_dictionary, skipped as u64);
            if p == Predicate::False {
                add(&m.row_groups_pruned_dictionary, 1);
                add_elapsed(&m.time_prune_ns, t);
                return Ok(None);
            }
            p
        }
    };
    // Candidate rows by the page index alone (for the pages-pruned counts).
    let mut by_page_index = None;
    let candidates = match &predicate {
        Predicate::True => {
            if job.predicate.is_some() && by_rows_index.is_none() {
                add(&m.row_groups_fully_matched, 1);
            }
            Bitmap::new_set(rows)
        }
        p => {
            let mut candidates =
                match prune::page_index::page_ranges(p, leaves, rows, &column_index, &offset_index)
                {
                    Some(ranges) => Bitmap::from_ranges(rows, &ranges),
                    None => Bitmap::new_set(rows),
                };
            let before = candidates.clone();
            let narrowed = narrow_by_sidecar(job, p, &mut candidates)?;
            if let Some(blooms) = narrowed {
                let pruned = blooms
                    .iter()
                    .flat_map(|b| page_spans(b, rows))
                    .filter(|r| before.any_in(r.start, r.end) && !candidates.any_in(r.start, r.end))
                    .count();
                add(&m.pages_pruned_index, pruned as u64);
                by_page_index = Some(before);
            }
            candidates
        }
    };
    let candidates = match by_rows_index {
        Some(mut decided) => {
            decided.and_inplace(&candidates);
            decided
        }
        None => candidates,
    };
    add_elapsed(&m.time_prune_ns, t);
    add(&m.rows_candidate, candidates.count_ones() as u64);

    // ── filter ───────────────────────────────────────────────────────────────────────────────
    let t = Instant::now();
    let filter_columns = predicate.columns();
    let selection = if candidates.count_ones() == 0 {
        candidates.clone()
    } else {
        for &c in &filter_columns {
            chunks.entry(c).or_insert_with(|| chunk(c));
        }
        // On a remote source, one round trip for every filter column's candidate pages (phase
        // one; the payload's pages are phase two): later filters need a subset of them, and a
        // request costs more than the bytes they might have saved.
        // When the payload pages of all candidate rows cost less than a round trip (a point
        // lookup the page index narrowed), they come in the same round trip, speculatively.
        if job.reader.source().is_remote() {
            let mut ranges = Vec::new();
            for c in &filter_columns {
                ranges.extend(chunks[c].missing_ranges(&candidates)?);
            }
            let payload = payload_leaves(job);
            for &c in payload.iter().filter(|c| !filter_columns.contains(c)) {
                chunks.entry(c).or_insert_with(|| chunk(c));
            }
            if !ranges.is_empty() {
                ranges.extend(speculative_payload(
                    job,
                    &filter_columns,
                    &candidates,
                    &chunk,
                )?);
            }
            fetch_into(
                job.reader,
                &mut chunks,
                filter_columns.iter().chain(&payload),
                &ranges,
            )?;
        }
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
        return Ok(None);
    }

    // ── payload ──────────────────────────────────────────────────────────────────────────────
    let t = Instant::now();
    // Page planning and page windows read the survivors as ranges when they are sparse.
    let survivors = Selection::from_bitmap(selection.clone());
    let fields = file.schema().fields();
    // A chunk's fetched and decompressed pages are freed once its column is built (below);
    // filter-only columns are freed now. The task then holds the finished columns and one
    // chunk's pages, not every chunk's pages beside the output.
    let payload = payload_leaves(job);
    chunks.retain(|c, _| payload.contains(c));
    let sub_page = job.pruning.sub_page_reads && use_index;
    // On a remote source, one round trip for every payload column's pages holding a survivor.
    if job.reader.source().is_remote() {
        let mut ranges = Vec::new();
        for &c in &payload {
            let ch = chunks.entry(c).or_insert_with(|| chunk(c));
            ranges.extend(ch.payload_ranges(&survivors, sub_page)?);
        }
        fetch_into(job.reader, &mut chunks, &payload, &ranges)?;
    }
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(job.output.read.len());
    for &root in &job.output.read {
        let field = &fields[root];
        let leaf = leaves.iter().find(|l| l.root == root && !l.nested);
        let array = match leaf {
            Some(leaf) if is_native(leaf, field.data_type()) => {
                let c = leaf.index;
                let is_filter = filter_columns.contains(&c);
                let mut ch = chunks.remove(&c).unwrap_or_else(|| chunk(c));
                let projected = project(&mut ch, &survivors, sub_page, m)?;
                if !is_filter {
                    if let Some(layout) = ch.page_layout() {
                        add(&m.pages_total, layout.len() as u64);
                        let skipped = layout
                            .iter()
                            .filter(|(s, n)| !survivors.any_in(*s, s + n))
                            .count();
                        add(&m.pages_skipped_payload, skipped as u64);
                    }
                }
                drop(ch);
                to_arrow(leaf, projected, field.data_type()).map_err(|e| e.in_column(&leaf.path))?
            }
            _ => {
                let root_type = file.metadata.file_metadata().schema_descr().root_schema();
                let plan = root_type
                    .get_fields()
                    .get(root)
                    .and_then(|t| ListPlan::new(leaves, root, t, field));
                match plan {
                    // Lists of a primitive: Algorithm 4 on the levels. A page tamis cannot
                    // decode (an unsupported encoding) leaves the column to the fallback.
                    Some(plan) => {
                        let c = plan.leaf.index;
                        let list = ListChunk {
                            plan,
                            meta: rg_meta.column(c),
                            reader: job.reader,
                            offset_index: offset_index(c),
                            rg_rows: rows,
                            budget: &budget,
                        };
                        match list.project(&selection, m) {
                            Err(e) if e.kind == ErrorKind::Unsupported => {
                                fallback::read_root(file, job.reader, job.rg, root, &selection)
                                    .map_err(|e| e.in_column(field.name()))?
                            }
                            other => other?,
                        }
                    }
                    None => fallback::read_root(file, job.reader, job.rg, root, &selection)
                        .map_err(|e| e.in_column(field.name()))?,
                }
            }
        };
        columns.push(array);
    }
    let batch = job.output.assemble(job.schema, columns, selected)?;
    add_elapsed(&m.time_payload_ns, t);
    Ok(Some(batch))
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
        let projected = project(ch, &selection, false, cx.metrics)?;
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

/// Reads `ranges` in one batch (no request when empty) and hands the bytes to the chunks of
/// `columns`.
fn fetch_into<'c, 'a: 'c>(
    reader: &Reader,
    chunks: &mut HashMap<usize, ColumnChunk<'a>>,
    columns: impl IntoIterator<Item = &'c usize>,
    ranges: &[std::ops::Range<u64>],
) -> Result<()> {
    if ranges.is_empty() {
        return Ok(());
    }
    let fetched = reader.read_ranges(ranges)?;
    for c in columns {
        if let Some(ch) = chunks.get_mut(c) {
            ch.offer(&fetched)?;
        }
    }
    Ok(())
}

/// The payload pages holding any of `rows`, when together they cost less than a round trip
/// (else none: phase two fetches the survivors' pages).
fn speculative_payload<'a>(
    job: &RowGroupJob<'a>,
    filter_columns: &[usize],
    rows: &Bitmap,
    chunk: &impl Fn(usize) -> ColumnChunk<'a>,
) -> Result<Vec<std::ops::Range<u64>>> {
    let mut ranges = Vec::new();
    for c in payload_leaves(job) {
        if !filter_columns.contains(&c) {
            ranges.extend(chunk(c).missing_ranges(rows)?);
        }
    }
    let bytes: u64 = ranges.iter().map(|r| r.end - r.start).sum();
    let affordable = bytes <= job.reader.source().profile().round_trip_bytes();
    Ok(if affordable { ranges } else { Vec::new() })
}

/// Narrows `rows` (candidate rows) by the page Bloom filters of the file's sidecar index, if it
/// has one for this row group and the predicate's `=` / `IN` columns; returns the filters used.
fn narrow_by_sidecar(
    job: &RowGroupJob<'_>,
    p: &Predicate,
    rows: &mut Bitmap,
) -> Result<Option<Vec<Arc<PageBlooms>>>> {
    let leaves = &job.file.leaves;
    if !job.pruning.sidecar_index || !page_bloom::probes_anything(p, leaves) {
        return Ok(None);
    }
    let sidecar = match readable(job, job.file.sidecar(job.reader, job.index_dir))? {
        None | Some(SidecarState::Absent) => return Ok(None),
        Some(SidecarState::Stale(_)) => {
            add(&job.metrics.row_groups_index_stale, 1);
            return Ok(None);
        }
        Some(SidecarState::Usable(s)) => s,
    };
    let Some(loaded) = readable(job, sidecar.page_blooms(job.reader, job.rg, &p.columns()))? else {
        return Ok(None);
    };
    let blooms: HashMap<usize, &PageBlooms> =
        loaded.iter().map(|(&c, b)| (c, b.as_ref())).collect();
    let n = rows.len();
    let Some(ranges) = page_bloom::page_ranges(p, leaves, n, &blooms) else {
        return Ok(None);
    };
    rows.and_inplace(&Bitmap::from_ranges(n, &ranges));
    Ok(Some(loaded.into_values().collect()))
}

/// Index bytes a leaf may always read from the rows index, whatever the column's size.
const INDEX_READ_FLOOR: u64 = 64 * 1024;

/// Decides the leaves of `p` that the sidecar's rows index answers: each becomes `True` in the
/// returned predicate, and its rows narrow the returned bitmap (so its column is not read at
/// all). `None` when no leaf was decided. A leaf under OR is decided only when every branch
/// of that OR is (their rows are then the union).
fn decide_by_rows_index(
    job: &RowGroupJob<'_>,
    p: &Predicate,
) -> Result<(Predicate, Option<Bitmap>)> {
    if !job.pruning.sidecar_index {
        return Ok((p.clone(), None));
    }
    let rg_meta = job.file.metadata.row_group(job.rg);
    let decidable = |l: &crate::expr::Leaf| {
        matches!(
            l.op,
            LeafOp::Cmp(op, _) if op != CmpOp::NotEq
        ) || matches!(l.op, LeafOp::In { negated: false, .. })
    };
    let mut any = false;
    p.visit_leaves(&mut |l| any |= decidable(l));
    if !any {
        return Ok((p.clone(), None));
    }
    let sidecar = match readable(job, job.file.sidecar(job.reader, job.index_dir))? {
        Some(SidecarState::Usable(s)) => s,
        _ => return Ok((p.clone(), None)),
    };
    let mut decide_leaf = |l: &crate::expr::Leaf| -> Result<Option<Bitmap>> {
        let column = &job.file.leaves[l.column];
        if !decidable(l) || !sidecar.has_rows(job.rg, l.column) {
            return Ok(None);
        }
        // Targeted reads while they cost less than a quarter of the column itself (or a few
        // pages' worth, for small chunks); beyond, reading and evaluating the column is the
        // cheaper plan (seed 004's switch between targeted and clustered reads).
        let chunk_bytes = rg_meta.column(l.column).compressed_size().max(0) as u64;
        let budget = (chunk_bytes / 4).max(INDEX_READ_FLOOR);
        let rows = readable(
            job,
            sidecar.rows_matching(job.reader, job.rg, column, l, budget),
        )?;
        let rows = rows.flatten();
        if rows.is_some() {
            add(&job.metrics.conjuncts_decided_index, 1);
        }
        Ok(rows)
    };
    decide(p, &mut decide_leaf)
}

/// `p` ≡ `rest ∧ (row ∈ rows)`, with the leaves `leaf` answers folded into `rows`.
fn decide(
    p: &Predicate,
    leaf: &mut impl FnMut(&crate::expr::Leaf) -> Result<Option<Bitmap>>,
) -> Result<(Predicate, Option<Bitmap>)> {
    Ok(match p {
        Predicate::Compare(_) => (p.clone(), None),
        Predicate::Leaf(l) => match leaf(l)? {
            Some(rows) => (Predicate::True, Some(rows)),
            None => (p.clone(), None),
        },
        Predicate::And(children) => {
            let mut rest = Vec::with_capacity(children.len());
            let mut rows: Option<Bitmap> = None;
            for c in children {
                let (r, b) = decide(c, leaf)?;
                if r != Predicate::True {
                    rest.push(r);
                }
                if let Some(b) = b {
                    match &mut rows {
                        Some(acc) => acc.and_inplace(&b),
                        None => rows = Some(b),
                    }
                }
            }
            let rest = match rest.len() {
                0 => Predicate::True,
                1 => rest.pop().expect("one element"),
                _ => Predicate::And(rest),
            };
            (rest, rows)
        }
        Predicate::Or(children) => {
            let mut union: Option<Bitmap> = None;
            for c in children {
                match decide(c, leaf)? {
                    (Predicate::True, Some(b)) => match &mut union {
                        Some(acc) => acc.or_inplace(&b),
                        None => union = Some(b),
                    },
                    _ => return Ok((p.clone(), None)),
                }
            }
            match union {
                Some(rows) => (Predicate::True, Some(rows)),
                None => (p.clone(), None),
            }
        }
        Predicate::True | Predicate::False => (p.clone(), None),
    })
}

/// A sidecar read's result under the scan's [`BrokenIndex`] policy: a sidecar that cannot be
/// read (corrupt, or of an unsupported version) is an error, or — ignored — `None`, counted
/// and warned about. Other errors (I/O, cancellation) are errors either way.
fn readable<T>(job: &RowGroupJob<'_>, read: Result<T>) -> Result<Option<T>> {
    match read {
        Ok(x) => Ok(Some(x)),
        Err(e)
            if job.broken_index == BrokenIndex::Ignore
                && matches!(e.kind, ErrorKind::CorruptFile | ErrorKind::Unsupported) =>
        {
            add(&job.metrics.row_groups_index_broken, 1);
            job.metrics
                .warn(format!("ignored a broken sidecar index: {e}"));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Row spans of the pages a page-filter blob describes.
fn page_spans(b: &PageBlooms, rows: usize) -> Vec<std::ops::Range<usize>> {
    (0..b.first_rows.len())
        .map(|p| {
            let end = b.first_rows.get(p + 1).map_or(rows, |&r| r as usize);
            b.first_rows[p] as usize..end.min(rows)
        })
        .collect()
}

/// Leaf columns the projection reads with tamis's own decoders (flat, native types).
fn payload_leaves(job: &RowGroupJob<'_>) -> Vec<usize> {
    let leaves = &job.file.leaves;
    let fields = job.file.schema().fields();
    job.output
        .read
        .iter()
        .filter_map(|&root| leaves.iter().find(|l| l.root == root && !l.nested))
        .filter(|l| is_native(l, fields[l.root].data_type()))
        .map(|l| l.index)
        .collect()
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
