//! Filter ordering (paper §4.4) and the selectivities it runs on.
//!
//! A *filter* is one step of a sequence the scan evaluates on the rows still alive: the leaves of
//! an AND on one column (evaluated in one pass), or a nested AND / OR. The children of an AND
//! form a sequence; so do the children of an OR, evaluated through De Morgan with the negate flag
//! (`a ∨ b = ¬(¬a ∧ ¬b)`: each child keeps the rows where it is *not* true).
//!
//! ```text
//! cost(f1..fn) ∝ Σ_{i≥2} k_i/w + Σ_{i≥2} Π_{j<i} s_j        (Eq. 1, w = 64)
//! ```
//!
//! `k_i` is the bits per value the select operator reads for filter i and `s_i` the fraction of
//! rows passing it (for a negated filter, `1 − s_i`). The optimal order under the model tries
//! each filter first and sorts the rest by ascending selectivity ([`greedy_order`]).
//!
//! Extensions of the paper's model, which only considers bit-packed dictionary codes:
//! * `k` of a dictionary-encoded chunk is the code width `ceil(log2(entries))`; of any other
//!   chunk the physical value width (BOOLEAN 1, INT32/FLOAT 32, INT64/DOUBLE 64, INT96 96,
//!   FIXED_LEN_BYTE_ARRAY 8·length, BYTE_ARRAY the chunk's mean uncompressed bits per value);
//!   of a nested filter the sum over its distinct columns.
//! * Selectivities before any evaluation come from the row group: the fraction of dictionary
//!   entries matching (when the chunk is all dictionary-encoded), else min/max with a uniform
//!   distribution for ranges, `1/distinct` (or `1/(max−min+1)` on integers) for equality, null
//!   counts for `IS NULL`, else the `DEFAULT_*` constants below. Nested filters combine their
//!   children assuming independence.
//! * Runtime adaptation: the scan measures each filter's selectivity (rows in, rows passing) and
//!   later row groups order by the measured value. Filters are identified by their content (a
//!   hash of their leaves), since pruning rewrites the predicate differently in each row group.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::column::adapt::{Adaptive, Evaluation};

use parquet::basic::{ColumnOrder, Type as PhysicalType};
use parquet::file::metadata::RowGroupMetaData;

use crate::error::{Error, Result};
use crate::expr::{sql, CmpOp, Leaf, LeafOp, Predicate, Scalar};
use crate::metrics::FilterStep;
use crate::prune::bounds::Bounds;
use crate::prune::dictionary::matching_entries;
use crate::prune::row_group::{chunk_bounds, file_column_order};
use crate::schema::{Domain, LeafColumn};
use crate::values::Values;

/// How the scan orders the filters of each AND (and the children of each OR).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FilterOrder {
    /// The cost model's order, from estimated then measured selectivities.
    #[default]
    Auto,
    /// The order of the WHERE text (leaves on one column are still evaluated together, at the
    /// position of the column's first leaf).
    AsWritten,
    /// A pseudo-random order drawn from the seed, per sequence. For tests: every order must give
    /// the same rows.
    Seeded(u64),
}

impl FromStr for FilterOrder {
    type Err = Error;

    /// `auto` or `written`.
    fn from_str(s: &str) -> Result<FilterOrder> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(FilterOrder::Auto),
            "written" | "as-written" | "as_written" => Ok(FilterOrder::AsWritten),
            other => Err(Error::invalid(format!(
                "unknown filter order '{other}' (expected auto or written)"
            ))),
        }
    }
}

/// Word width of the bit-parallel select (`w` in Eq. 1).
pub const WORD_BITS: f64 = 64.0;
/// Selectivity of `IS NULL` when the null count is unknown (and the null fraction assumed for
/// other leaves).
pub const DEFAULT_NULL_FRACTION: f64 = 0.1;
/// Selectivity of `=` without statistics or dictionary.
pub const DEFAULT_EQ: f64 = 0.1;
/// Selectivity of one range comparison (`<`, `>=`, …) without usable min/max.
pub const DEFAULT_RANGE: f64 = 0.5;
/// Selectivity of a `LIKE` with a wildcard (`NOT LIKE`: the complement).
pub const DEFAULT_LIKE: f64 = 0.1;
/// Share of values a join-key filter is expected to pass before any scan has probed it.
pub const DEFAULT_IN_KEYS: f64 = 0.1;

/// What Eq. 1 knows about one filter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterCost {
    /// Bits per value the select reads (`k`).
    pub bits: f64,
    /// Fraction of the input rows the filter keeps (`s`).
    pub selectivity: f64,
}

/// Eq. 1 without the constant first-filter term: `Σ_{i≥2} k_i/w + Σ_{i≥2} Π_{j<i} s_j`.
pub fn cost(sequence: &[FilterCost]) -> f64 {
    let mut total = 0.0;
    let mut passing = 1.0;
    for (i, f) in sequence.iter().enumerate() {
        if i > 0 {
            total += f.bits / WORD_BITS + passing;
        }
        passing *= f.selectivity;
    }
    total
}

/// The order minimising [`cost`]: for each candidate first filter, the rest by ascending
/// selectivity; the cheapest wins (ties: the earlier candidate, so equal filters keep their
/// written order). Returns indices into `filters`.
pub fn greedy_order(filters: &[FilterCost]) -> Vec<usize> {
    let n = filters.len();
    let mut rest: Vec<usize> = (0..n).collect();
    rest.sort_by(|&a, &b| filters[a].selectivity.total_cmp(&filters[b].selectivity));
    let mut best: Option<(f64, Vec<usize>)> = None;
    for first in 0..n {
        let order: Vec<usize> = std::iter::once(first)
            .chain(rest.iter().copied().filter(|&i| i != first))
            .collect();
        let seq: Vec<FilterCost> = order.iter().map(|&i| filters[i]).collect();
        let c = cost(&seq);
        if best.as_ref().is_none_or(|(b, _)| c < *b) {
            best = Some((c, order));
        }
    }
    best.map(|(_, o)| o).unwrap_or_default()
}

/// One step of a filter sequence.
#[derive(Debug, Clone)]
pub struct Filter<'p> {
    /// Stable identity across row groups (a hash of the content).
    pub key: u64,
    pub kind: FilterKind<'p>,
}

#[derive(Debug, Clone)]
pub enum FilterKind<'p> {
    /// Leaves on one column, evaluated together in one pass.
    Column {
        column: usize,
        leaves: Vec<&'p Leaf>,
    },
    /// A nested AND / OR.
    Node(&'p Predicate),
}

impl<'p> Filter<'p> {
    fn column(column: usize, leaves: Vec<&'p Leaf>) -> Filter<'p> {
        let mut h = DefaultHasher::new();
        (0u8, column).hash(&mut h);
        for l in &leaves {
            hash_debug(&mut h, &l.op);
        }
        Filter {
            key: h.finish(),
            kind: FilterKind::Column { column, leaves },
        }
    }

    fn node(p: &'p Predicate) -> Filter<'p> {
        match p {
            Predicate::Leaf(l) => Filter::column(l.column, vec![l]),
            _ => {
                let mut h = DefaultHasher::new();
                1u8.hash(&mut h);
                hash_debug(&mut h, p);
                Filter {
                    key: h.finish(),
                    kind: FilterKind::Node(p),
                }
            }
        }
    }

    /// The filter as a predicate (for display).
    pub fn predicate(&self) -> Predicate {
        match &self.kind {
            FilterKind::Column { leaves, .. } if leaves.len() == 1 => {
                Predicate::Leaf(leaves[0].clone())
            }
            FilterKind::Column { leaves, .. } => Predicate::And(
                leaves
                    .iter()
                    .map(|l| Predicate::Leaf((*l).clone()))
                    .collect(),
            ),
            FilterKind::Node(p) => (*p).clone(),
        }
    }

    fn columns(&self) -> Vec<usize> {
        match &self.kind {
            FilterKind::Column { column, .. } => vec![*column],
            FilterKind::Node(p) => p.columns(),
        }
    }
}

/// Hashes a value's `Debug` text without building the string (NaN literals hash alike).
fn hash_debug(h: &mut DefaultHasher, v: &impl std::fmt::Debug) {
    struct W<'a>(&'a mut DefaultHasher);
    impl std::fmt::Write for W<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.write(s.as_bytes());
            Ok(())
        }
    }
    let _ = std::fmt::write(&mut W(h), format_args!("{v:?}"));
}

/// The filters of an AND's children, in written order: leaves grouped by column (at the
/// position of the column's first leaf), every other child one filter.
pub fn and_filters(children: &[Predicate]) -> Vec<Filter<'_>> {
    let mut groups: Vec<(usize, Vec<&Leaf>)> = Vec::new();
    let mut slots: Vec<std::result::Result<usize, &Predicate>> = Vec::new();
    for c in children {
        match c {
            Predicate::Leaf(l) => match groups.iter_mut().find(|(col, _)| *col == l.column) {
                Some((_, g)) => g.push(l),
                None => {
                    slots.push(Ok(groups.len()));
                    groups.push((l.column, vec![l]));
                }
            },
            other => slots.push(Err(other)),
        }
    }
    let mut groups: Vec<Option<(usize, Vec<&Leaf>)>> = groups.into_iter().map(Some).collect();
    slots
        .into_iter()
        .map(|s| match s {
            Ok(g) => {
                let (column, leaves) = groups[g].take().expect("each group has one slot");
                Filter::column(column, leaves)
            }
            Err(p) => Filter::node(p),
        })
        .collect()
}

/// The filters of an OR's children: one each (they are evaluated negated, so leaves on one
/// column cannot share a pass).
pub fn or_filters(children: &[Predicate]) -> Vec<Filter<'_>> {
    children.iter().map(Filter::node).collect()
}

/// What one row group's metadata says about a column, for the estimates.
#[derive(Debug)]
struct ColumnInfo {
    bits: u32,
    bounds: Bounds,
    /// Null rows / rows, when known.
    null_fraction: Option<f64>,
    distinct: Option<u64>,
}

/// Selectivity and bit-width estimates for one row group, before evaluating anything.
pub struct Estimates<'a> {
    leaves: &'a [LeafColumn],
    rg: &'a RowGroupMetaData,
    column_orders: Option<&'a [ColumnOrder]>,
    /// Dictionaries of the all-dictionary-encoded chunks (loaded by pruning).
    dictionaries: &'a HashMap<usize, Arc<Values>>,
    columns: HashMap<usize, ColumnInfo>,
    column_filters: HashMap<u64, f64>,
}

impl<'a> Estimates<'a> {
    pub fn new(
        leaves: &'a [LeafColumn],
        rg: &'a RowGroupMetaData,
        column_orders: Option<&'a [ColumnOrder]>,
        dictionaries: &'a HashMap<usize, Arc<Values>>,
    ) -> Self {
        Estimates {
            leaves,
            rg,
            column_orders,
            dictionaries,
            columns: HashMap::new(),
            column_filters: HashMap::new(),
        }
    }

    fn info(&mut self, c: usize) -> &ColumnInfo {
        let (leaves, rg, orders, dicts) =
            (self.leaves, self.rg, self.column_orders, self.dictionaries);
        self.columns.entry(c).or_insert_with(|| {
            let column = &leaves[c];
            let cc = rg.column(c);
            let bounds = chunk_bounds(column, rg, c, Some(file_column_order(orders, c)));
            let null_fraction = if !column.optional() {
                Some(0.0)
            } else {
                match (bounds.null_count, bounds.num_values) {
                    (Some(n), Some(v)) if v > 0 => Some((n as f64 / v as f64).min(1.0)),
                    _ => None,
                }
            };
            let bits = match dicts.get(&c) {
                Some(d) => code_width(d.len()),
                None => physical_width(column, cc.uncompressed_size(), cc.num_values()),
            };
            ColumnInfo {
                bits,
                distinct: cc
                    .statistics()
                    .and_then(|s| s.distinct_count_opt())
                    .filter(|&d| d > 0),
                bounds,
                null_fraction,
            }
        })
    }

    /// Bits per value the select reads for this filter (`k`).
    pub fn bits(&mut self, f: &Filter<'_>) -> u32 {
        f.columns().into_iter().map(|c| self.info(c).bits).sum()
    }

    /// The estimate before any evaluation (no measurements).
    pub fn estimate(&mut self, f: &Filter<'_>) -> f64 {
        self.selectivity(f, &|_| None)
    }

    /// `measured(key)` where known, else the estimate; nested filters combine their children's
    /// selectivities assuming independence.
    pub fn selectivity(&mut self, f: &Filter<'_>, measured: &dyn Fn(u64) -> Option<f64>) -> f64 {
        if let Some(s) = measured(f.key) {
            return s;
        }
        let s = match &f.kind {
            FilterKind::Column { column, leaves } => {
                if let Some(&s) = self.column_filters.get(&f.key) {
                    return s;
                }
                let s = self.column_selectivity(*column, leaves);
                self.column_filters.insert(f.key, s);
                s
            }
            FilterKind::Node(Predicate::And(c)) => and_filters(c)
                .iter()
                .map(|g| self.selectivity(g, measured))
                .product(),
            FilterKind::Node(Predicate::Or(c)) => {
                1.0 - or_filters(c)
                    .iter()
                    .map(|g| 1.0 - self.selectivity(g, measured))
                    .product::<f64>()
            }
            FilterKind::Node(Predicate::True) => 1.0,
            FilterKind::Node(Predicate::False) => 0.0,
            FilterKind::Node(Predicate::Leaf(l)) => self.column_selectivity(l.column, &[l]),
            FilterKind::Node(Predicate::Compare(c)) => match c.op {
                CmpOp::Eq => DEFAULT_EQ,
                CmpOp::NotEq => 1.0 - DEFAULT_EQ,
                _ => DEFAULT_RANGE,
            },
        };
        s.clamp(0.0, 1.0)
    }

    /// The fraction of rows satisfying every leaf (all on `c`).
    fn column_selectivity(&mut self, c: usize, leaves: &[&Leaf]) -> f64 {
        let null_fraction = self.info(c).null_fraction;
        if leaves.iter().any(|l| l.op.accepts_null()) {
            // Only nulls can pass, and only if every leaf accepts them.
            return if leaves.iter().all(|l| l.op.accepts_null()) {
                null_fraction.unwrap_or(DEFAULT_NULL_FRACTION)
            } else {
                0.0
            };
        }
        let non_null = 1.0 - null_fraction.unwrap_or(DEFAULT_NULL_FRACTION);
        let values: Vec<&Leaf> = leaves
            .iter()
            .copied()
            .filter(|l| !matches!(l.op, LeafOp::IsNull { .. }))
            .collect();
        if values.is_empty() {
            return non_null;
        }
        let leaves_of_file = self.leaves;
        let column = &leaves_of_file[c];
        let from_dictionary = self.dictionaries.get(&c).and_then(|d| {
            let matching = matching_entries(&values, column, d).ok()?;
            (!d.is_empty()).then(|| matching.count_ones() as f64 / d.len() as f64)
        });
        let s = match from_dictionary {
            Some(s) => s,
            None => {
                let domain = column.domain();
                values_selectivity(self.info(c), domain, &values)
            }
        };
        non_null * s
    }

    /// The report line of a filter.
    pub fn step(&mut self, f: &Filter<'_>, negated: bool) -> (u64, FilterStep) {
        let step = FilterStep {
            filter: sql::render(&f.predicate(), self.leaves),
            negated,
            bit_width: self.bits(f),
            estimated_selectivity: self.estimate(f),
            measured_selectivity: None,
        };
        (f.key, step)
    }
}

/// `ceil(log2(entries))`: the bit width of dictionary codes.
pub fn code_width(entries: usize) -> u32 {
    if entries <= 1 {
        0
    } else {
        usize::BITS - (entries - 1).leading_zeros()
    }
}

fn physical_width(column: &LeafColumn, uncompressed: i64, values: i64) -> u32 {
    match column.physical {
        PhysicalType::BOOLEAN => 1,
        PhysicalType::INT32 | PhysicalType::FLOAT => 32,
        PhysicalType::INT64 | PhysicalType::DOUBLE => 64,
        PhysicalType::INT96 => 96,
        PhysicalType::FIXED_LEN_BYTE_ARRAY => {
            (8 * column.type_length).min(u32::MAX as usize) as u32
        }
        PhysicalType::BYTE_ARRAY => {
            if values > 0 && uncompressed > 0 {
                ((uncompressed as f64 * 8.0 / values as f64).ceil() as u32).max(8)
            } else {
                32
            }
        }
    }
}

/// A numeric domain value as `f64` (for the uniform-distribution estimates).
fn numeric(s: &Scalar) -> Option<f64> {
    let x = match s {
        Scalar::Int(i) => *i as f64,
        Scalar::UInt(u) => *u as f64,
        Scalar::Float(f) => *f,
        Scalar::Decimal(d) => *d as f64,
        Scalar::Bool(_) | Scalar::Bytes(_) => return None,
    };
    (!x.is_nan()).then_some(x)
}

/// Fraction of the non-null values satisfying every leaf (no `IS NULL` among them), from the
/// statistics: range leaves intersect into one interval over `[min, max]` (uniform), the others
/// multiply (independence).
fn values_selectivity(info: &ColumnInfo, domain: Domain, leaves: &[&Leaf]) -> f64 {
    let range = match (&info.bounds.min, &info.bounds.max) {
        (Some(lo), Some(hi)) => match (numeric(lo), numeric(hi)) {
            (Some(lo), Some(hi)) if lo.is_finite() && hi.is_finite() && lo <= hi => Some((lo, hi)),
            _ => None,
        },
        _ => None,
    };
    let integral = matches!(domain, Domain::Int | Domain::UInt);
    let eq = |lit: &Scalar| -> f64 {
        if let (Some((lo, hi)), Some(x)) = (range, numeric(lit)) {
            if x < lo || x > hi {
                return 0.0;
            }
        }
        if let Some(d) = info.distinct {
            return 1.0 / d as f64;
        }
        match (domain, range) {
            (Domain::Bool, _) => 0.5,
            (_, Some((lo, hi))) if integral => 1.0 / (hi - lo + 1.0),
            _ => DEFAULT_EQ,
        }
    };
    let (mut a, mut b) = range.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
    let mut ranged = false;
    let mut point_range = 1.0; // min == max: each range leaf holds or not
    let mut s = 1.0;
    for leaf in leaves {
        match &leaf.op {
            LeafOp::Cmp(op @ (CmpOp::Lt | CmpOp::LtEq | CmpOp::Gt | CmpOp::GtEq), lit) => {
                match (range, numeric(lit)) {
                    (Some((lo, hi)), Some(x)) => {
                        ranged = true;
                        if lo == hi {
                            let holds = op.holds(lo.total_cmp(&x));
                            point_range *= if holds { 1.0 } else { 0.0 };
                        } else if matches!(op, CmpOp::Lt | CmpOp::LtEq) {
                            b = b.min(x);
                        } else {
                            a = a.max(x);
                        }
                    }
                    _ => s *= DEFAULT_RANGE,
                }
            }
            LeafOp::Cmp(CmpOp::Eq, lit) => s *= eq(lit),
            LeafOp::Cmp(CmpOp::NotEq, lit) => s *= 1.0 - eq(lit),
            LeafOp::In { values, negated } => {
                let any = values.iter().map(eq).sum::<f64>().min(1.0);
                s *= if *negated { 1.0 - any } else { any };
            }
            LeafOp::Like { pattern, negated } => {
                let m = if pattern.is_exact() {
                    eq(&Scalar::Bytes(pattern.prefix().to_vec()))
                } else {
                    DEFAULT_LIKE
                };
                s *= if *negated { 1.0 - m } else { m };
            }
            LeafOp::IsNull { .. } => {}
            // What the join's filter has passed so far, over every scan probing it.
            LeafOp::InKeys(f) => {
                let (probed, passed) = f.counts();
                s *= if probed == 0 {
                    DEFAULT_IN_KEYS
                } else {
                    passed as f64 / probed as f64
                };
            }
        }
    }
    if ranged {
        match range {
            Some((lo, hi)) if lo < hi => s *= ((b - a) / (hi - lo)).clamp(0.0, 1.0),
            _ => s *= point_range,
        }
    }
    s.clamp(0.0, 1.0)
}

/// Rows evaluated by a filter and rows passing it, summed over the row groups so far.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    rows_in: u64,
    rows_passed: u64,
}

/// The scan-wide side of filter ordering, shared by the row-group tasks: the order mode, the
/// selectivities measured so far, and the order chosen for the first row group (for explain).
#[derive(Debug, Default)]
pub struct Planner {
    mode: FilterOrder,
    measured: Mutex<HashMap<u64, Counts>>,
    /// The lowest ordinal's report.
    first: Mutex<Option<Report>>,
    /// Per filter, the measured page costs of whole vs selected evaluation (never slower).
    pub adaptive: Adaptive,
}

/// A row group's ordinal in file order and its top-level sequence (filter key, report line).
type Report = (usize, Vec<(u64, FilterStep)>);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking task is reported as an error; its counts are still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Planner {
    pub fn new(mode: FilterOrder) -> Planner {
        Planner {
            mode,
            ..Planner::default()
        }
    }

    /// The same planner with partly alive pages evaluated as `evaluation` says.
    pub fn with_evaluation(mut self, evaluation: Evaluation) -> Planner {
        self.adaptive = Adaptive::new(evaluation);
        self
    }

    pub fn mode(&self) -> FilterOrder {
        self.mode
    }

    /// The selectivity measured so far (rows passing / rows in), if the filter ran on any row.
    pub fn measured(&self, key: u64) -> Option<f64> {
        lock(&self.measured)
            .get(&key)
            .filter(|c| c.rows_in > 0)
            .map(|c| c.rows_passed as f64 / c.rows_in as f64)
    }

    /// Adds one evaluation: `rows_passed` of `rows_in` rows satisfied the filter (un-negated).
    pub fn record(&self, key: u64, rows_in: usize, rows_passed: usize) {
        let mut m = lock(&self.measured);
        let c = m.entry(key).or_default();
        c.rows_in += rows_in as u64;
        c.rows_passed += rows_passed as u64;
    }

    /// The evaluation order of a sequence (indices into `filters`); `negated` when each filter
    /// keeps the rows where it is not true (an OR's children), so it keeps `1 − s`.
    pub fn order(
        &self,
        filters: &[Filter<'_>],
        est: &mut Estimates<'_>,
        negated: bool,
    ) -> Vec<usize> {
        let n = filters.len();
        match self.mode {
            _ if n <= 1 => (0..n).collect(),
            FilterOrder::AsWritten => (0..n).collect(),
            FilterOrder::Seeded(seed) => {
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by_cached_key(|&i| {
                    let mut h = DefaultHasher::new();
                    (seed, filters[i].key, i).hash(&mut h);
                    h.finish()
                });
                order
            }
            FilterOrder::Auto => {
                let measured = |k| self.measured(k);
                let costs: Vec<FilterCost> = filters
                    .iter()
                    .map(|f| {
                        let s = est.selectivity(f, &measured);
                        FilterCost {
                            bits: est.bits(f) as f64,
                            selectivity: if negated { 1.0 - s } else { s },
                        }
                    })
                    .collect();
                greedy_order(&costs)
            }
        }
    }

    /// Whether the row group with this ordinal should report its order (none lower has).
    pub fn wants_report(&self, ordinal: usize) -> bool {
        lock(&self.first).as_ref().is_none_or(|(o, _)| ordinal < *o)
    }

    /// Keeps `steps` as the reported order if no lower ordinal reported one.
    pub fn offer_report(&self, ordinal: usize, steps: Vec<(u64, FilterStep)>) {
        let mut first = lock(&self.first);
        if first.as_ref().is_none_or(|(o, _)| ordinal < *o) {
            *first = Some((ordinal, steps));
        }
    }

    /// The order chosen for the first row group that evaluated filters, with each filter's
    /// selectivity measured over the whole scan so far.
    pub fn report(&self) -> Vec<FilterStep> {
        let first = lock(&self.first).clone();
        first
            .map(|(_, steps)| {
                steps
                    .into_iter()
                    .map(|(key, mut step)| {
                        step.measured_selectivity = self.measured(key);
                        step
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Forgets the reported order (tests look at the order of each row group).
    #[cfg(test)]
    pub(crate) fn take_report(&self) -> Vec<FilterStep> {
        let r = self.report();
        *lock(&self.first) = None;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TPC-H Q6: shipdate, discount, quantity (notes §2.4).
    const Q6: [(&str, FilterCost); 3] = [
        (
            "shipdate",
            FilterCost {
                bits: 12.0,
                selectivity: 0.152,
            },
        ),
        (
            "discount",
            FilterCost {
                bits: 4.0,
                selectivity: 0.273,
            },
        ),
        (
            "quantity",
            FilterCost {
                bits: 6.0,
                selectivity: 0.46,
            },
        ),
    ];

    fn permutations(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for p in permutations(n - 1) {
            for at in 0..=p.len() {
                let mut q = p.clone();
                q.insert(at, n - 1);
                out.push(q);
            }
        }
        out
    }

    #[test]
    fn q6_orders_rank_as_in_the_notes() {
        let mut ranked: Vec<(f64, String)> = permutations(3)
            .into_iter()
            .map(|p| {
                let seq: Vec<FilterCost> = p.iter().map(|&i| Q6[i].1).collect();
                let names: Vec<&str> = p.iter().map(|&i| Q6[i].0).collect();
                (cost(&seq), names.join(","))
            })
            .collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
        let expected = [
            ("shipdate,discount,quantity", 0.3497),
            ("shipdate,quantity,discount", 0.3782),
            ("discount,shipdate,quantity", 0.5957),
            ("discount,quantity,shipdate", 0.6798),
            ("quantity,shipdate,discount", 0.7799),
            ("quantity,discount,shipdate", 0.8356),
        ];
        for ((c, names), (want_names, want_cost)) in ranked.iter().zip(expected) {
            assert_eq!(names, want_names);
            assert!((c - want_cost).abs() < 5e-5, "{names}: {c} vs {want_cost}");
        }
        let costs: Vec<FilterCost> = Q6.iter().map(|x| x.1).collect();
        assert_eq!(greedy_order(&costs), vec![0, 1, 2]);
        // Whatever the written order, the same order is picked.
        for p in permutations(3) {
            let written: Vec<FilterCost> = p.iter().map(|&i| costs[i]).collect();
            let picked: Vec<usize> = greedy_order(&written).iter().map(|&i| p[i]).collect();
            assert_eq!(picked, vec![0, 1, 2], "written as {p:?}");
        }
    }

    /// The greedy algorithm is optimal under the model: it matches exhaustive search.
    #[test]
    fn greedy_matches_exhaustive_search() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..500 {
            let n = 1 + round % 6;
            let filters: Vec<FilterCost> = (0..n)
                .map(|_| FilterCost {
                    bits: (next() % 65) as f64,
                    selectivity: (next() % 1001) as f64 / 1000.0,
                })
                .collect();
            let best = permutations(n)
                .into_iter()
                .map(|p| cost(&p.iter().map(|&i| filters[i]).collect::<Vec<_>>()))
                .fold(f64::INFINITY, f64::min);
            let order = greedy_order(&filters);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>());
            let got = cost(&order.iter().map(|&i| filters[i]).collect::<Vec<_>>());
            assert!((got - best).abs() < 1e-12, "{filters:?}: {got} vs {best}");
        }
        assert!(greedy_order(&[]).is_empty());
    }

    #[test]
    fn code_widths() {
        assert_eq!(code_width(0), 0);
        assert_eq!(code_width(1), 0);
        assert_eq!(code_width(2), 1);
        assert_eq!(code_width(3), 2);
        assert_eq!(code_width(4096), 12);
        assert_eq!(code_width(4097), 13);
    }

    #[test]
    fn filter_order_parses() {
        assert_eq!("auto".parse::<FilterOrder>().unwrap(), FilterOrder::Auto);
        assert_eq!(
            " Written".parse::<FilterOrder>().unwrap(),
            FilterOrder::AsWritten
        );
        let e = "fast".parse::<FilterOrder>().unwrap_err();
        assert!(e.to_string().contains("auto or written"), "{e}");
    }

    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::{EnabledStatistics, WriterProperties};
    use parquet::schema::types::ColumnPath;

    use crate::dataset::FileOutput;
    use crate::metrics::MetricsCollector;
    use crate::scan::file::OpenedFile;
    use crate::scan::row_group::{scan_row_group, RowGroupJob};
    use crate::Scan;

    fn write(path: &std::path::Path, columns: Vec<(&str, ArrayRef)>, props: WriterProperties) {
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let file = std::fs::File::create(path).unwrap();
        let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    fn steps(path: &std::path::Path, sql: &str) -> Vec<FilterStep> {
        let mut stream = Scan::open(path.to_str().unwrap())
            .unwrap()
            .filter(sql)
            .unwrap()
            .threads(1)
            .filter_order(FilterOrder::AsWritten)
            .batches()
            .unwrap();
        for b in &mut stream {
            b.unwrap();
        }
        stream.metrics().filter_order
    }

    /// Estimates from min/max (uniform), null counts, integer ranges, dictionaries; bit widths
    /// from dictionary sizes and physical types.
    #[test]
    fn estimates_from_statistics_and_dictionaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("est.parquet");
        let n = 4000;
        let x = Int64Array::from_iter_values((0..n).map(|i| (i * 7919) % 1000));
        let d = Int64Array::from_iter_values((0..n).map(|i| (i * 7919) % 1000));
        let n_col = Int64Array::from_iter((0..n).map(|i| (i % 10 >= 3).then_some(i)));
        let s = StringArray::from_iter_values(
            (0..n).map(|i| ["a", "b", "c", "d", "e"][i as usize % 5]),
        );
        let props = WriterProperties::builder()
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_column_dictionary_enabled(ColumnPath::from("x"), false)
            .set_column_dictionary_enabled(ColumnPath::from("n"), false)
            .build();
        write(
            &path,
            vec![
                ("x", Arc::new(x) as ArrayRef),
                ("d", Arc::new(d)),
                ("n", Arc::new(n_col)),
                ("s", Arc::new(s)),
            ],
            props,
        );
        let got = steps(
            &path,
            "x < 250 AND d < 250 AND n IS NULL AND s IN ('a', 'c') AND x <> 3 AND (x = 5 OR s = 'b')",
        );
        let names: Vec<&str> = got.iter().map(|s| s.filter.as_str()).collect();
        assert_eq!(
            names,
            [
                "x < 250 AND x <> 3",
                "d < 250",
                "n IS NULL",
                "s IN ('a', 'c')",
                "x = 5 OR s = 'b'"
            ]
        );
        let close = |a: f64, b: f64| (a - b).abs() < 1e-3;
        // x: PLAIN int64, min 0 max 999 → 250/999 · (1 − 1/1000).
        assert_eq!(got[0].bit_width, 64);
        assert!(
            close(got[0].estimated_selectivity, 250.0 / 999.0 * 0.999),
            "{got:?}"
        );
        // d: dictionary of 1000 entries, 250 match.
        assert_eq!(got[1].bit_width, 10);
        assert!(close(got[1].estimated_selectivity, 0.25), "{got:?}");
        // n: 30% nulls.
        assert!(close(got[2].estimated_selectivity, 0.3), "{got:?}");
        // s: 2 of 5 dictionary entries, 3-bit codes.
        assert_eq!(got[3].bit_width, 3);
        assert!(close(got[3].estimated_selectivity, 0.4), "{got:?}");
        // OR by independence: 1 − (1 − 1/1000)(1 − 1/5); bit widths add up.
        assert_eq!(got[4].bit_width, 64 + 3);
        assert!(
            close(got[4].estimated_selectivity, 1.0 - 0.999 * 0.8),
            "{got:?}"
        );
        // Everything ran on the first row group: measured values exist.
        assert!(
            close(got[0].measured_selectivity.unwrap(), 0.249),
            "{got:?}"
        );
    }

    /// A misleading estimate is corrected by the selectivity measured on the first row group.
    #[test]
    fn measured_selectivity_reorders_later_row_groups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("adapt.parquet");
        let n = 2000;
        // No statistics, no dictionary: `a < 10` is guessed 0.5 and `b = 7` 0.1, but b is
        // always 7 and a < 10 holds for 10 rows of the first row group.
        let props = WriterProperties::builder()
            .set_statistics_enabled(EnabledStatistics::None)
            .set_dictionary_enabled(false)
            .set_max_row_group_row_count(Some(1000))
            .build();
        write(
            &path,
            vec![
                (
                    "a",
                    Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
                ),
                (
                    "b",
                    Arc::new(Int64Array::from_iter_values((0..n).map(|_| 7))),
                ),
            ],
            props,
        );
        let file = OpenedFile::open(&path).unwrap();
        assert_eq!(file.metadata.num_row_groups(), 2);
        let predicate = sql::parse_predicate("a < 10 AND b = 7", &file.leaves).unwrap();
        let schema = Arc::new(file.schema().project(&[0]).unwrap());
        let metrics = MetricsCollector::default();
        let reader = file.reader();
        let run = |planner: &Planner, rg: usize| {
            let job = RowGroupJob {
                file: &file,
                reader: &reader,
                needed_leaves: &[0],
                rg,
                predicate: Some(&predicate),
                output: &FileOutput::read(vec![0]),
                schema: &schema,
                metrics: &metrics,
                planner,
                ordinal: rg,
                pruning: Default::default(),
                memory_limit: crate::budget::DEFAULT_MEMORY_LIMIT,
                index_dir: None,
                broken_index: Default::default(),
            };
            let rows = scan_row_group(&job).unwrap().map_or(0, |b| b.num_rows());
            let order: Vec<String> = planner
                .take_report()
                .into_iter()
                .map(|s| s.filter)
                .collect();
            (rows, order)
        };
        let auto = Planner::new(FilterOrder::Auto);
        assert_eq!(run(&auto, 0), (10, vec!["b = 7".into(), "a < 10".into()]));
        assert_eq!(
            auto.measured(
                and_filters(match &predicate {
                    Predicate::And(c) => c,
                    _ => unreachable!(),
                })[1]
                    .key
            ),
            Some(1.0)
        );
        assert_eq!(run(&auto, 1), (0, vec!["a < 10".into(), "b = 7".into()]));
        let written = Planner::new(FilterOrder::AsWritten);
        for rg in 0..2 {
            assert_eq!(run(&written, rg).1, ["a < 10", "b = 7"]);
        }
    }

    #[test]
    fn measurements_override_estimates() {
        let p = Planner::new(FilterOrder::Auto);
        assert_eq!(p.measured(7), None);
        p.record(7, 0, 0);
        assert_eq!(p.measured(7), None, "no rows in, nothing measured");
        p.record(7, 100, 10);
        p.record(7, 300, 90);
        assert_eq!(p.measured(7), Some(0.25));
    }
}
