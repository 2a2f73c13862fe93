//! Page pruning with the page index (ColumnIndex + OffsetIndex).
//!
//! Each page of an indexed column gets [`Bounds`] from the column index (min / max, null page,
//! null count, NaN count when present); pages on which a leaf is `NoneMatch` drop their rows. Page
//! `i` covers rows `[first_row_index(i), first_row_index(i + 1))` (the last one up to the row
//! group's end). Leaves combine as the predicate does: AND intersects row ranges, OR unites them.
//! A column without both indexes (or with inconsistent ones) keeps every row.
//!
//! Column index values carry no exactness flags and writers truncate byte strings, so byte
//! bounds are treated as inexact (they still prune, but never prove `AllMatch`).

// Row sets are vectors of ranges; one-range vectors are meant.
#![allow(clippy::single_range_in_vec_init)]

use std::collections::HashMap;
use std::ops::Range;

use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::page_index::offset_index::OffsetIndexMetaData;

use super::bounds::{bound_scalar, leaf_verdict, min_max_trusted, Bounds};
use super::level::{Level, LevelKind, Narrowed, RowGroupView};
use crate::error::Result;
use crate::expr::{PhysicalRef, Predicate, Verdict};
use crate::file::OpenedFile;
use crate::schema::{Domain, LeafColumn};
use crate::selection::Bitmap;

/// Candidate rows of a row group after page pruning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PagePruning {
    /// Rows that may match: sorted, disjoint, non-adjacent, non-empty ranges.
    pub ranges: Vec<Range<usize>>,
    /// Pages of the indexed columns the predicate reads (each column counted once).
    pub pages_total: usize,
    /// Of those, pages sharing no row with `ranges` (need not be read for the filter columns).
    pub pages_pruned: usize,
}

/// Sorts, drops empty ranges and merges overlapping or adjacent ones.
pub(crate) fn ranges_normalize(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.retain(|r| r.start < r.end);
    ranges.sort_unstable_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// Rows in both `a` and `b` (each sorted and disjoint); normalised.
pub(crate) fn ranges_intersect(a: &[Range<usize>], b: &[Range<usize>]) -> Vec<Range<usize>> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        let start = a[i].start.max(b[j].start);
        let end = a[i].end.min(b[j].end);
        if start < end {
            out.push(start..end);
        }
        if a[i].end <= b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    ranges_normalize(out)
}

/// Rows in `a` or `b`; normalised.
pub(crate) fn ranges_union(a: &[Range<usize>], b: &[Range<usize>]) -> Vec<Range<usize>> {
    ranges_normalize(a.iter().chain(b).cloned().collect())
}

/// One indexed page: its rows and what is known about its values.
struct Page {
    rows: Range<usize>,
    bounds: Bounds,
}

/// Page row spans from the offset index, `None` if inconsistent.
fn page_rows(oi: &OffsetIndexMetaData, rg_rows: usize) -> Option<Vec<Range<usize>>> {
    let locs = oi.page_locations();
    let starts: Vec<usize> = locs
        .iter()
        .map(|l| usize::try_from(l.first_row_index).ok())
        .collect::<Option<_>>()?;
    if starts.first() != Some(&0) || starts.windows(2).any(|w| w[0] > w[1]) {
        return None;
    }
    if starts.last().is_some_and(|&s| s > rg_rows) {
        return None;
    }
    Some(
        starts
            .iter()
            .enumerate()
            .map(|(i, &s)| s..starts.get(i + 1).copied().unwrap_or(rg_rows))
            .collect(),
    )
}

/// Bounds of page `i` from the column index.
fn page_bounds(column: &LeafColumn, ci: &ColumnIndexMetaData, i: usize, rows: usize) -> Bounds {
    let rows = rows as u64;
    let domain = column.domain();
    let null_count = ci.null_count(i).and_then(|n| u64::try_from(n).ok());
    let mut b = Bounds {
        min: None,
        max: None,
        min_exact: false,
        max_exact: false,
        null_count,
        num_values: Some(rows),
        may_have_nan: domain == Domain::Float && ci.nan_count(i) != Some(0),
    };
    if ci.is_null_page(i) {
        b.null_count = Some(rows);
        return b;
    }
    if !min_max_trusted(column, None, false) {
        return b;
    }
    let (min, max) = match ci {
        ColumnIndexMetaData::BOOLEAN(x) => (
            x.min_value(i).map(|v| PhysicalRef::Bool(*v)),
            x.max_value(i).map(|v| PhysicalRef::Bool(*v)),
        ),
        ColumnIndexMetaData::INT32(x) => (
            x.min_value(i).map(|v| PhysicalRef::I32(*v)),
            x.max_value(i).map(|v| PhysicalRef::I32(*v)),
        ),
        ColumnIndexMetaData::INT64(x) => (
            x.min_value(i).map(|v| PhysicalRef::I64(*v)),
            x.max_value(i).map(|v| PhysicalRef::I64(*v)),
        ),
        ColumnIndexMetaData::FLOAT(x) => (
            x.min_value(i).map(|v| PhysicalRef::F32(*v)),
            x.max_value(i).map(|v| PhysicalRef::F32(*v)),
        ),
        ColumnIndexMetaData::DOUBLE(x) => (
            x.min_value(i).map(|v| PhysicalRef::F64(*v)),
            x.max_value(i).map(|v| PhysicalRef::F64(*v)),
        ),
        ColumnIndexMetaData::BYTE_ARRAY(x) | ColumnIndexMetaData::FIXED_LEN_BYTE_ARRAY(x) => (
            x.min_value(i).map(PhysicalRef::Bytes),
            x.max_value(i).map(PhysicalRef::Bytes),
        ),
        ColumnIndexMetaData::INT96(_) => return b,
    };
    b.min = min.and_then(|v| bound_scalar(column, v));
    b.max = max.and_then(|v| bound_scalar(column, v));
    let truncatable = domain == Domain::Bytes;
    b.min_exact = b.min.is_some() && !truncatable;
    b.max_exact = b.max.is_some() && !truncatable;
    b
}

fn index_physical_matches(column: &LeafColumn, ci: &ColumnIndexMetaData) -> bool {
    use parquet::basic::Type as T;
    matches!(
        (ci, column.physical),
        (ColumnIndexMetaData::BOOLEAN(_), T::BOOLEAN)
            | (ColumnIndexMetaData::INT32(_), T::INT32)
            | (ColumnIndexMetaData::INT64(_), T::INT64)
            | (ColumnIndexMetaData::FLOAT(_), T::FLOAT)
            | (ColumnIndexMetaData::DOUBLE(_), T::DOUBLE)
            | (ColumnIndexMetaData::BYTE_ARRAY(_), T::BYTE_ARRAY)
            | (
                ColumnIndexMetaData::FIXED_LEN_BYTE_ARRAY(_),
                T::FIXED_LEN_BYTE_ARRAY
            )
    )
}

/// The pages of column `c`, `None` if it has no usable page index.
fn column_pages(
    column: &LeafColumn,
    rg_rows: usize,
    ci: Option<&ColumnIndexMetaData>,
    oi: Option<&OffsetIndexMetaData>,
) -> Option<Vec<Page>> {
    let (ci, oi) = (ci?, oi?);
    if column.nested || !index_physical_matches(column, ci) {
        return None;
    }
    let rows = page_rows(oi, rg_rows)?;
    if ci.num_pages() != rows.len() as u64 {
        return None;
    }
    if let Some(nc) = ci.null_counts() {
        if nc.len() != rows.len() {
            return None;
        }
    }
    if let Some(nc) = ci.nan_counts() {
        if nc.len() != rows.len() {
            return None;
        }
    }
    Some(
        rows.into_iter()
            .enumerate()
            .map(|(i, r)| Page {
                bounds: page_bounds(column, ci, i, r.len()),
                rows: r,
            })
            .collect(),
    )
}

/// The page index as a pruning level: the rows of the row group its pages leave.
pub(crate) struct PageIndex<'a> {
    pub(crate) file: &'a OpenedFile,
    pub(crate) rg: usize,
    /// Whether the scan may use page indexes.
    pub(crate) enabled: bool,
}

impl Level for PageIndex<'_> {
    fn kind(&self) -> LevelKind {
        LevelKind::PageIndex
    }

    fn narrow(
        &mut self,
        _rg: &RowGroupView<'_>,
        p: &Predicate,
        _rows: Option<&Bitmap>,
    ) -> Result<Narrowed> {
        Ok(Narrowed {
            predicate: p.clone(),
            rows: Some(candidates(self.file, self.rg, p, self.enabled)),
        })
    }
}

/// The rows of row group `rg` that `p` leaves by its columns' page indexes (every row without
/// them, or with `use_index` false).
pub(crate) fn candidates(file: &OpenedFile, rg: usize, p: &Predicate, use_index: bool) -> Bitmap {
    let rows = file.metadata.row_group(rg).num_rows() as usize;
    let index = |c: usize| file.chunk_index(rg, c).filter(|_| use_index);
    let column_index = |c: usize| index(c).and_then(|i| i.column.as_ref());
    let offset_index = |c: usize| index(c).and_then(|i| i.offset.as_ref());
    match page_ranges(p, &file.leaves, rows, &column_index, &offset_index) {
        Some(ranges) => Bitmap::from_ranges(rows, &ranges),
        None => Bitmap::new_set(rows),
    }
}

/// Candidate row ranges of the row group (sorted, disjoint, merged), or `None` if no leaf's
/// column has a page index (nothing could be narrowed). See [`page_pruning`].
pub(crate) fn page_ranges<'a>(
    pred: &Predicate,
    leaves: &[LeafColumn],
    rg_rows: usize,
    column_index: &dyn Fn(usize) -> Option<&'a ColumnIndexMetaData>,
    offset_index: &dyn Fn(usize) -> Option<&'a OffsetIndexMetaData>,
) -> Option<Vec<Range<usize>>> {
    page_pruning(pred, leaves, rg_rows, column_index, offset_index).map(|p| p.ranges)
}

/// [`page_ranges`] with page counts: `None` if no leaf's column has a usable page index;
/// otherwise the candidate ranges (possibly all rows, possibly none) and, over the indexed
/// columns the predicate reads, how many pages there are and how many share no candidate row.
pub(crate) fn page_pruning<'a>(
    pred: &Predicate,
    leaves: &[LeafColumn],
    rg_rows: usize,
    column_index: &dyn Fn(usize) -> Option<&'a ColumnIndexMetaData>,
    offset_index: &dyn Fn(usize) -> Option<&'a OffsetIndexMetaData>,
) -> Option<PagePruning> {
    let mut pages: HashMap<usize, Option<Vec<Page>>> = HashMap::new();
    for c in pred.columns() {
        let p = leaves
            .get(c)
            .and_then(|col| column_pages(col, rg_rows, column_index(c), offset_index(c)));
        pages.insert(c, p);
    }
    if pages.values().all(Option::is_none) {
        return None;
    }
    let all: Vec<Range<usize>> = if rg_rows > 0 {
        vec![0..rg_rows]
    } else {
        Vec::new()
    };
    let ranges = eval(pred, leaves, &pages, &all);

    let mut pages_total = 0;
    let mut pages_pruned = 0;
    for p in pages.values().flatten() {
        pages_total += p.len();
        pages_pruned += p
            .iter()
            .filter(|page| ranges_intersect(std::slice::from_ref(&page.rows), &ranges).is_empty())
            .count();
    }
    Some(PagePruning {
        ranges,
        pages_total,
        pages_pruned,
    })
}

fn eval(
    pred: &Predicate,
    leaves: &[LeafColumn],
    pages: &HashMap<usize, Option<Vec<Page>>>,
    all: &[Range<usize>],
) -> Vec<Range<usize>> {
    match pred {
        Predicate::True | Predicate::Compare(_) => all.to_vec(),
        Predicate::False => Vec::new(),
        Predicate::Leaf(leaf) => {
            let (Some(Some(col_pages)), Some(_)) =
                (pages.get(&leaf.column), leaves.get(leaf.column))
            else {
                return all.to_vec();
            };
            let kept = col_pages
                .iter()
                .filter(|p| leaf_verdict(&leaf.op, &p.bounds) != Verdict::NoneMatch)
                .map(|p| p.rows.clone())
                .collect();
            ranges_intersect(&ranges_normalize(kept), all)
        }
        Predicate::And(children) => {
            let mut acc = all.to_vec();
            for c in children {
                if acc.is_empty() {
                    break;
                }
                acc = ranges_intersect(&acc, &eval(c, leaves, pages, all));
            }
            acc
        }
        Predicate::Or(children) => {
            let mut acc = Vec::new();
            for c in children {
                acc = ranges_union(&acc, &eval(c, leaves, pages, all));
                if acc.as_slice() == all {
                    break;
                }
            }
            acc
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parquet::basic::Type as T;
    use parquet::file::metadata::{ColumnIndexBuilder, OffsetIndexBuilder};
    use parquet::file::properties::WriterProperties;
    use parquet::schema::parser::parse_message_type;
    use parquet::schema::types::SchemaDescriptor;

    use super::*;
    use crate::expr::{CmpOp, Leaf, LeafOp, Scalar};
    use crate::prune::test_util::{col, open, sample_file};
    use crate::schema::leaf_columns;

    #[test]
    fn range_algebra() {
        assert_eq!(
            ranges_normalize(vec![5..7, 0..2, 2..3, 6..9, 4..4]),
            vec![0..3, 5..9]
        );
        assert_eq!(
            ranges_intersect(&[0..10, 20..30], &[5..25]),
            vec![5..10, 20..25]
        );
        assert_eq!(
            ranges_intersect(&[0..10], &[10..20]),
            Vec::<Range<usize>>::new()
        );
        assert_eq!(
            ranges_intersect(&[0..3, 4..6, 8..12], &[2..9, 11..20]),
            vec![2..3, 4..6, 8..9, 11..12]
        );
        assert_eq!(ranges_union(&[0..10, 20..30], &[5..25]), vec![0..30]);
        assert_eq!(ranges_union(&[0..10], &[10..20]), vec![0..20]);
        assert_eq!(ranges_union(&[], &[3..4]), vec![3..4]);
    }

    /// Rows, (min, max) unless a null page, null count.
    type TestPage = (i64, Option<(i32, i32)>, i64);

    /// Column index + offset index of an INT32 column: pages (rows, min, max, nulls).
    fn int_index(pages: &[TestPage]) -> (ColumnIndexMetaData, OffsetIndexMetaData) {
        let mut ci = ColumnIndexBuilder::new(T::INT32);
        let mut oi = OffsetIndexBuilder::new();
        for (i, &(rows, mm, nulls)) in pages.iter().enumerate() {
            match mm {
                Some((min, max)) => ci.append(
                    false,
                    min.to_le_bytes().to_vec(),
                    max.to_le_bytes().to_vec(),
                    nulls,
                    None,
                ),
                None => ci.append(true, vec![], vec![], nulls, None),
            }
            oi.append_row_count(rows);
            oi.append_offset_and_size(100 * i as i64, 100);
        }
        (ci.build().unwrap(), oi.build())
    }

    fn cmp(column: usize, op: CmpOp, v: i64) -> Predicate {
        Predicate::Leaf(Leaf {
            column,
            op: LeafOp::Cmp(op, Scalar::Int(v)),
        })
    }

    #[test]
    fn and_or_over_pages() {
        let t = parse_message_type(
            "message m { optional int32 a; optional int32 b; optional int32 c; }",
        )
        .unwrap();
        let leaves = leaf_columns(&SchemaDescriptor::new(Arc::new(t)));
        // a: 4 pages of 10 rows, [0,9] [10,19] [20,29] [30,39]; b: 2 pages of 20 rows.
        let a = int_index(&[
            (10, Some((0, 9)), 0),
            (10, Some((10, 19)), 0),
            (10, Some((20, 29)), 0),
            (10, Some((30, 39)), 0),
        ]);
        let b = int_index(&[
            (20, Some((0, 5)), 0),
            (15, Some((100, 200)), 2),
            (5, None, 5),
        ]);
        let ci = |c: usize| match c {
            0 => Some(&a.0),
            1 => Some(&b.0),
            _ => None,
        };
        let oi = |c: usize| match c {
            0 => Some(&a.1),
            1 => Some(&b.1),
            _ => None,
        };
        let r = |p: &Predicate| page_ranges(p, &leaves, 40, &ci, &oi);
        use CmpOp::*;
        assert_eq!(
            r(&Predicate::And(vec![cmp(0, GtEq, 15), cmp(0, Lt, 25)])),
            Some(vec![10..30])
        );
        assert_eq!(
            r(&Predicate::Or(vec![cmp(0, Lt, 5), cmp(0, GtEq, 35)])),
            Some(vec![0..10, 30..40])
        );
        assert_eq!(
            r(&Predicate::Or(vec![cmp(0, Lt, 5), cmp(1, Gt, 150)])),
            Some(vec![0..10, 20..35])
        );
        assert_eq!(
            r(&Predicate::And(vec![cmp(0, Lt, 5), cmp(1, Gt, 150)])),
            Some(vec![])
        );
        assert_eq!(
            r(&Predicate::And(vec![cmp(0, Lt, 25), cmp(2, Gt, 150)])),
            Some(vec![0..30])
        );
        assert_eq!(
            r(&Predicate::Or(vec![cmp(0, Lt, 5), cmp(2, Gt, 150)])),
            Some(vec![0..40])
        );
        assert_eq!(r(&cmp(2, Gt, 150)), None, "no index for any leaf");
        assert_eq!(r(&Predicate::True), None);
        // Null pages: only IS NULL keeps them.
        let is_null = Predicate::Leaf(Leaf {
            column: 1,
            op: LeafOp::IsNull { negated: false },
        });
        assert_eq!(r(&is_null), Some(vec![20..40]));
        let not_null = Predicate::Leaf(Leaf {
            column: 1,
            op: LeafOp::IsNull { negated: true },
        });
        assert_eq!(r(&not_null), Some(vec![0..35]));

        let p = page_pruning(
            &Predicate::And(vec![cmp(0, GtEq, 15), cmp(1, Lt, 50)]),
            &leaves,
            40,
            &ci,
            &oi,
        )
        .unwrap();
        assert_eq!(p.ranges, vec![10..20]);
        assert_eq!(p.pages_total, 7);
        assert_eq!(p.pages_pruned, 5);
    }

    #[test]
    fn inconsistent_index_is_ignored() {
        let t = parse_message_type("message m { optional int32 a; }").unwrap();
        let leaves = leaf_columns(&SchemaDescriptor::new(Arc::new(t)));
        let a = int_index(&[(10, Some((0, 9)), 0), (10, Some((10, 19)), 0)]);
        let short = int_index(&[(10, Some((0, 9)), 0)]);
        let ci = |_| Some(&a.0);
        let oi = |_| Some(&short.1);
        use CmpOp::*;
        assert_eq!(page_ranges(&cmp(0, Gt, 15), &leaves, 20, &ci, &oi), None);
        // Page starts past the row group.
        let oi = |_| Some(&a.1);
        assert_eq!(page_ranges(&cmp(0, Gt, 15), &leaves, 5, &ci, &oi), None);
        assert_eq!(
            page_ranges(&cmp(0, Gt, 15), &leaves, 20, &ci, &oi),
            Some(vec![10..20])
        );
    }

    #[test]
    fn real_page_index() {
        let props = WriterProperties::builder()
            .set_data_page_row_count_limit(50)
            .set_write_batch_size(50)
            .set_dictionary_enabled(false)
            .build();
        let bytes = sample_file(400, props);
        let (md, leaves) = open(&bytes);
        let idx = md.page_index_for_row_group(0);
        let col_i = |c: usize| idx.column_index(c);
        let off_i = |c: usize| idx.offset_index(c);
        let i = col(&leaves, "i32");
        assert_eq!(off_i(i).unwrap().page_locations().len(), 8);
        let p = cmp(i, CmpOp::Lt, 100);
        assert_eq!(
            page_ranges(&p, &leaves, 400, &col_i, &off_i),
            Some(vec![0..50])
        );
        let f = col(&leaves, "f64");
        let gt = Predicate::Leaf(Leaf {
            column: f,
            op: LeafOp::Cmp(CmpOp::Gt, Scalar::Float(700.0)),
        });
        assert_eq!(
            page_ranges(&gt, &leaves, 400, &col_i, &off_i),
            Some(vec![350..400])
        );
        let s = col(&leaves, "s");
        let eq = Predicate::Leaf(Leaf {
            column: s,
            op: LeafOp::Cmp(CmpOp::Eq, Scalar::Bytes(b"s00300".to_vec())),
        });
        assert_eq!(
            page_ranges(&eq, &leaves, 400, &col_i, &off_i),
            Some(vec![150..200])
        );
    }
}
