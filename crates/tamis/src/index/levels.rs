//! The sidecar index as pruning levels of one row group: its rows index decides leaves exactly
//! ([`RowsIndex`], a [`Level`]), and its page Bloom filters narrow the candidate rows
//! ([`narrow_by_page_blooms`]). A sidecar that is stale, refused or broken is read as absent, or
//! is an error, as the scan's [`BrokenIndex`] policy says.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};
use crate::expr::{CmpOp, LeafOp, Predicate};
use crate::file::OpenedFile;
use crate::io::Reader;
use crate::metrics::{add, MetricsCollector};
use crate::prune::level::{Level, LevelKind, Narrowed, RowGroupView};
use crate::selection::Bitmap;

use super::page_bloom::{self, PageBlooms};
use super::{Sidecar, SidecarState};

/// What a scan does with a sidecar index it cannot read (see [`crate::Scan::broken_index`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BrokenIndex {
    /// An error naming the sidecar.
    #[default]
    Fail,
    /// Read as if there were none; counted, with a warning in the metrics.
    Ignore,
}

impl std::str::FromStr for BrokenIndex {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "fail" => Ok(BrokenIndex::Fail),
            "ignore" => Ok(BrokenIndex::Ignore),
            other => Err(Error::invalid(format!(
                "unknown broken-index policy '{other}' (fail or ignore)"
            ))),
        }
    }
}

/// What the sidecar levels of one row group need from its scan.
pub(crate) struct Sidecars<'a> {
    pub(crate) file: &'a OpenedFile,
    /// The scan's reader of the file (counts bytes and requests).
    pub(crate) reader: &'a Reader,
    pub(crate) rg: usize,
    /// Whether the scan may use sidecars at all.
    pub(crate) enabled: bool,
    /// Where sidecars are, when not beside the file.
    pub(crate) dir: Option<&'a Path>,
    pub(crate) broken: BrokenIndex,
    /// Check indexed column chunks against the sidecar's content hashes before use.
    pub(crate) verify: bool,
    pub(crate) metrics: &'a MetricsCollector,
}

/// Narrows `rows` (candidate rows) by the page Bloom filters of the file's sidecar index, if it
/// has one for this row group and the predicate's `=` / `IN` columns; returns the filters used.
fn narrow_by_page_blooms(
    cx: &Sidecars<'_>,
    p: &Predicate,
    rows: &mut Bitmap,
) -> Result<Option<Vec<Arc<PageBlooms>>>> {
    let leaves = &cx.file.leaves;
    if !cx.enabled || !page_bloom::probes_anything(p, leaves) {
        return Ok(None);
    }
    let Some(sidecar) = usable_sidecar(cx, &p.columns(), true)? else {
        return Ok(None);
    };
    let Some(loaded) = readable(cx, sidecar.page_blooms(cx.reader, cx.rg, &p.columns()))? else {
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

/// The sidecar's page Bloom filters as a pruning level: narrows the candidate rows so far to
/// the pages whose filters may hold a probed value, and remembers what it pruned.
pub(crate) struct PageBloomLevel<'a> {
    pub(crate) cx: &'a Sidecars<'a>,
    /// The candidate rows it was given, when it narrowed them (for the pages-pruned counts).
    pub(crate) before: Option<Bitmap>,
    /// Pages of those candidates its filters ruled out.
    pub(crate) pages_pruned: u64,
}

impl<'a> PageBloomLevel<'a> {
    pub(crate) fn new(cx: &'a Sidecars<'a>) -> Self {
        PageBloomLevel {
            cx,
            before: None,
            pages_pruned: 0,
        }
    }
}

impl Level for PageBloomLevel<'_> {
    fn kind(&self) -> LevelKind {
        LevelKind::PageBlooms
    }

    fn narrow(
        &mut self,
        rg: &RowGroupView<'_>,
        p: &Predicate,
        rows: Option<&Bitmap>,
    ) -> Result<Narrowed> {
        let n = rg.metadata.num_rows() as usize;
        let before = rows.cloned().unwrap_or_else(|| Bitmap::new_set(n));
        let mut narrowed = before.clone();
        let Some(blooms) = narrow_by_page_blooms(self.cx, p, &mut narrowed)? else {
            return Ok(Narrowed::to(p.clone()));
        };
        let pruned = (blooms.iter())
            .flat_map(|b| page_spans(b, n))
            .filter(|r| before.any_in(r.start, r.end) && !narrowed.any_in(r.start, r.end))
            .count();
        self.pages_pruned += pruned as u64;
        self.before = Some(before);
        Ok(Narrowed {
            predicate: p.clone(),
            rows: Some(narrowed),
        })
    }
}

/// The sidecar's rows index as a pruning level (see [`decide_by_rows_index`]).
pub(crate) struct RowsIndex<'a> {
    pub(crate) cx: &'a Sidecars<'a>,
}

impl Level for RowsIndex<'_> {
    fn kind(&self) -> LevelKind {
        LevelKind::RowsIndex
    }

    fn narrow(
        &mut self,
        _rg: &RowGroupView<'_>,
        p: &Predicate,
        _rows: Option<&Bitmap>,
    ) -> Result<Narrowed> {
        let (predicate, rows) = decide_by_rows_index(self.cx, p)?;
        Ok(Narrowed { predicate, rows })
    }
}

/// Index bytes a leaf may always read from the rows index, whatever the column's size.
const INDEX_READ_FLOOR: u64 = 64 * 1024;

/// Decides the leaves of `p` that the sidecar's rows index answers: each becomes `True` in the
/// returned predicate, and its rows narrow the returned bitmap (so its column is not read at
/// all). `None` when no leaf was decided. A leaf under OR is decided only when every branch
/// of that OR is (their rows are then the union).
fn decide_by_rows_index(cx: &Sidecars<'_>, p: &Predicate) -> Result<(Predicate, Option<Bitmap>)> {
    if !cx.enabled {
        return Ok((p.clone(), None));
    }
    let rg_meta = cx.file.metadata.row_group(cx.rg);
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
    let Some(sidecar) = usable_sidecar(cx, &p.columns(), false)? else {
        return Ok((p.clone(), None));
    };
    let mut decide_leaf = |l: &crate::expr::Leaf| -> Result<Option<Bitmap>> {
        let column = &cx.file.leaves[l.column];
        if !decidable(l) || !sidecar.has_rows(cx.rg, l.column) {
            return Ok(None);
        }
        // Targeted reads while they cost less than a quarter of the column itself (or a few
        // pages' worth, for small chunks); beyond, reading and evaluating the column is the
        // cheaper plan (seed 004's switch between targeted and clustered reads).
        let chunk_bytes = rg_meta.column(l.column).compressed_size().max(0) as u64;
        let budget = (chunk_bytes / 4).max(INDEX_READ_FLOOR);
        let rows = readable(
            cx,
            sidecar.rows_matching(cx.reader, cx.rg, column, l, budget),
        )?;
        let rows = rows.flatten();
        if rows.is_some() {
            add(&cx.metrics.conjuncts_decided_index, 1);
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

/// The file's sidecar, if this row group may use it for `columns`: none when it is absent,
/// refused by the store (warned once), stale (counted when `count_stale`: the rows index and the
/// page filters of one row group ask both) or, under [`crate::Scan::verify_index`], built from
/// other bytes of those column chunks than the file holds now (counted and warned).
fn usable_sidecar(
    cx: &Sidecars<'_>,
    columns: &[usize],
    count_stale: bool,
) -> Result<Option<Arc<Sidecar>>> {
    let sidecar = match readable(cx, crate::index::sidecar_of(cx.file, cx.reader, cx.dir))? {
        None | Some(SidecarState::Absent) => return Ok(None),
        Some(SidecarState::Denied) => {
            cx.metrics.warn(
                "a sidecar index lookup was refused by the store (access denied): read as if \
                 there were none (a reader without s3:ListBucket gets 403 for a missing key)"
                    .into(),
            );
            return Ok(None);
        }
        Some(SidecarState::Stale) => {
            if count_stale {
                add(&cx.metrics.row_groups_index_stale, 1);
            }
            return Ok(None);
        }
        Some(SidecarState::Usable(s)) => s,
    };
    if cx.verify {
        let data = (cx.file.metadata.as_ref(), cx.file.len());
        let verified = readable(cx, sidecar.chunks_verified(cx.reader, data, cx.rg, columns))?;
        if verified != Some(true) {
            if count_stale {
                add(&cx.metrics.row_groups_index_stale, 1);
            }
            cx.metrics.warn(format!(
                "ignored the sidecar index {}: the column chunks it indexes changed since it \
                 was built (or it records no content hash); rebuild it with `tamis index`",
                sidecar.location
            ));
            return Ok(None);
        }
    }
    Ok(Some(sidecar))
}

/// A sidecar read's result under the scan's [`BrokenIndex`] policy: a sidecar that cannot be
/// read (corrupt, or of an unsupported version) is an error, or — ignored — `None`, counted
/// and warned about. Other errors (I/O, cancellation) are errors either way.
fn readable<T>(cx: &Sidecars<'_>, read: Result<T>) -> Result<Option<T>> {
    match read {
        Ok(x) => Ok(Some(x)),
        Err(e)
            if cx.broken == BrokenIndex::Ignore
                && matches!(e.kind, ErrorKind::CorruptFile | ErrorKind::Unsupported) =>
        {
            add(&cx.metrics.row_groups_index_broken, 1);
            cx.metrics
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
